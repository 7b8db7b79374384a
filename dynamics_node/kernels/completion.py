"""Numba kernel of state completion (completion.py) on a FlatModel ``m``, its FlatData ``d`` and a
CheckPlan ``c`` (flat/checks.py; the entry point takes them as one CallContext): spanning positions
from the independent ones.

The same steps as completion.py: the couplings solved explicitly (q_d = D q + d, Chignoli et al.
2023 eq. 3), then each loop cluster closed by predictor-corrector continuation, tracked in one step
from the last completion where it is that near, else from the reference configuration: each step
predicts the dependent joints with G_k (kinematics.loop_constraint, which also measures the
amplification) and corrects them by the damped Newton iteration of completion._newton:
dq_d = -K_d^+ phi (Householder least squares, the kernels), halved while it does not reduce |phi|,
retracted onto each joint's manifold (a spherical joint turns by the step in its child frame,
joints.retract), and a split joint's idle spin turned to its canonical value (canonical_spins).
``complete`` returns OK; FAILED with the cluster, the reason (a FAILURE code), the fraction of the
way and the residual or amplification in c.failure; PARTIAL where a continuation from the reference
has taken CHUNK_STEPS steps (the caller checks its time budget, then resumes); or REFER where the
model has joints it does not retract (planar joints, multi-DoF independent joints in loops):
completion.py then runs.
"""

import math

from numba import njit

from .borrowed import borrowed
from .cache import key_on_helpers
from .checks import accept_positions, coupling_residual, loop_residuals, POSITION_BOUND, REFER
from .expressions import implicit_phi
from .joints import retract
from .kinematics import (AMPLIFIED, body_transforms, constraint_rows, LOOP, loop_constraint,
                         loop_ends_at_outputs, OK, output_transforms)
from .linalg import dependent_least_squares

INDEPENDENT, DEPENDENT, SPLIT = 1, 2, 3                  # c.role of a body's joint (0: the ground)
# c.completion: completion.py's constants
(TOLERANCE_AT, MAX_ITERATIONS_AT, CONTINUATION_STEP_AT, CHUNK_STEPS_AT, HALVINGS_AT, SLOW_RATIO_AT,
 SLOW_STEPS_AT) = range(7)
FAILED, PARTIAL = -2, -3        # complete(): a cluster does not close (c.failure); resume to go on
# c.failure[1]: why a continuation failed (completion.FAILURES names them)
START_SINGULAR, TOO_MANY_STEPS, SINGULAR, NOT_CLOSED = 1, 2, 3, 4

key_on_helpers(__file__)


@njit(error_model='numpy')
def residual(m, d, c, k, q, phi):
    """The active rows of phi(q) of cluster k into phi (completion._residual); returns |phi|^2 and
    max |phi|, both inf where phi is not finite (an implicit constraint outside its domain)."""
    body_transforms(m, d, q, m.body_range[k, 0], m.body_range[k, 1])    # all the loops need
    output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])
    loop_ends_at_outputs(m, d, m.loop_range[k, 0], m.loop_range[k, 1])
    rows, b, coupling_cluster, coupling_row = c.rows, c.b, c.coupling_cluster, c.coupling_row
    q_rows, q_index, q_coefficient, active = c.q_rows, c.q_index, c.q_coefficient, m.active[k]
    loop_residuals(m, d, c, m.loop_range[k, 0], m.loop_range[k, 1], rows)
    for e in range(len(b)):
        if coupling_cluster[e] == k:
            rows[coupling_row[e]] = coupling_residual(b, q_rows, q_index, q_coefficient, e, q)
    for row in range(m.implicit_range[k, 0], m.implicit_range[k, 1]):
        rows[m.implicit_phi_row[row]] = implicit_phi(m, d, row)
    squares, worst = 0.0, 0.0
    for a in range(m.n_active[k]):
        phi[a] = rows[active[a]]
        squares, worst = squares + phi[a] * phi[a], max(worst, abs(phi[a]))
    if not squares < math.inf:
        return math.inf, math.inf
    return squares, worst


@njit(error_model='numpy')
def newton(m, d, c, k, q):
    """Close cluster k by damped Newton steps on its dependent joints (completion._newton); returns
    the final max |phi|, or inf where K_d is singular."""
    tolerance, iterations = c.completion[TOLERANCE_AT], int(c.completion[MAX_ITERATIONS_AT])
    slow_ratio, slow_steps, slow = c.completion[SLOW_RATIO_AT], int(c.completion[SLOW_STEPS_AT]), 0
    v0, v1 = m.v_range[k, 0], m.v_range[k, 1]
    na, nd = m.n_active[k], v1 - v0 - (m.y_range[k, 1] - m.y_range[k, 0])
    phi, trial, step, start, A, beta = c.phi, c.trial, c.step, c.start, d.QR, d.beta
    K, dependent, pivot, threshold = (
        d.K[k], m.dependent[k], m.qr_rows[k, :, 0], m.singularity_threshold)
    squares, worst = residual(m, d, c, k, q, phi)
    for _ in range(iterations):
        if worst <= tolerance or slow == slow_steps:
            break
        constraint_rows(m, d, k)                          # K at q (Xup, Xo current since residual)
        for r in range(na):
            for j in range(nd):
                A[r, j] = K[r, dependent[j]]
            A[r, nd] = phi[r]
        if dependent_least_squares(m, k, A, nd, nd + 1, beta, threshold) >= 0.0:       # K_d^+ phi
            return math.inf
        for j in range(v1 - v0):
            step[j] = 0.0
        for j in range(nd):
            step[dependent[j]] = A[pivot[j], nd]
        for j in range(len(q)):
            start[j] = q[j]
        scale = 1.0
        while True:
            retract_dependent(m, c, k, q, start, step, scale)
            trial_squares, trial_worst = residual(m, d, c, k, q, trial)
            if trial_squares < squares:
                break
            if scale < 1e-3:
                for j in range(len(q)):
                    q[j] = start[j]
                return worst
            scale *= 0.5
        slow = slow + 1 if trial_squares > slow_ratio * slow_ratio * squares else 0
        squares, worst = trial_squares, trial_worst
        for a in range(na):
            phi[a] = trial[a]
    return worst


@njit(error_model='numpy')
def retract_dependent(m, c, k, q, start, step, scale):
    """q = start (+) (-scale step) on the dependent and split joints of cluster k (joints.retract;
    a split joint's free column steps by zero)."""
    role, idx_q, col, joint = c.role, m.idx_q, m.col, m.joint
    for i in range(m.body_range[k, 0], m.body_range[k, 1]):
        if role[i] == DEPENDENT or role[i] == SPLIT:
            retract(joint[i], q, start, idx_q[i], step, col[i], -scale)


@njit(error_model='numpy')
def irregularity(m, d, k):
    """0 where cluster k is regular at its transforms (left current by residual), with G_k in
    d.G[k]; else its amplification, inf where K_d is singular (kinematics.loop_constraint)."""
    output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])
    status = loop_constraint(m, d, k, d.zero_y, False)
    return 0.0 if status == OK else d.info[1] if status == AMPLIFIED else math.inf


@njit(error_model='numpy')
def continuation(m, d, c, k, q, start, limit):
    """Close cluster k in q, whose independent joints hold their targets, by continuation from the
    closed configuration start in at most limit steps (completion.continuation); OK, or a FAILURE
    code with q as it was and c.failure[2:] the fraction of the way and the residual or
    amplification."""
    b0, b1 = m.body_range[k, 0], m.body_range[k, 1]
    v0, v1 = m.v_range[k, 0], m.v_range[k, 1]
    n, mk = v1 - v0, m.y_range[k, 1] - m.y_range[k, 0]
    role, idx_q, col, independent = c.role, m.idx_q, m.col, m.independent[k]
    target, origin, entry, saved, predicted, dy, G = (
        c.target, c.origin, c.entry, c.saved, c.predicted, c.dy, d.G[k])
    tolerance, halvings = c.completion[TOLERANCE_AT], int(c.completion[HALVINGS_AT])
    step_size = c.completion[CONTINUATION_STEP_AT]
    for j in range(len(q)):
        entry[j] = q[j]
    for i in range(b0, b1):
        j = idx_q[i]
        if role[i] == INDEPENDENT:
            target[j], origin[j] = q[j], start[j]
        for e in range(m.joint_nq[i]):
            q[j + e] = start[j + e]
    for a in range(mk):               # independent displacement per unit of the way (1-DoF joints)
        dy[a] = 0.0
        for i in range(b0, b1):
            if role[i] == INDEPENDENT and col[i] == independent[a]:
                dy[a] = target[idx_q[i]] - origin[idx_q[i]]
    worst = newton(m, d, c, k, q)
    if not (worst <= tolerance and irregularity(m, d, k) == 0.0):
        return fail(c, q, entry, START_SINGULAR, 0.0, worst)
    t, steps = 0.0, 0
    while t < 1.0:
        if steps == limit:
            return fail(c, q, entry, TOO_MANY_STEPS, t, steps)
        largest = 1e-300
        for a in range(mk):
            largest = max(largest, abs(dy[a]))
        for r in range(n):
            x = 0.0
            for a in range(mk):
                x += G[a, r] * dy[a]
            predicted[r] = x
            largest = max(largest, abs(x))
        dt = min(1.0 - t, step_size / largest)
        for j in range(len(q)):
            saved[j] = q[j]
        closed, amplification = False, 0.0
        for _ in range(halvings + 1):
            for i in range(b0, b1):
                if role[i] == INDEPENDENT:
                    j = idx_q[i]
                    q[j] = (1.0 - (t + dt)) * origin[j] + (t + dt) * target[j]
            retract_dependent(m, c, k, q, saved, predicted, -dt)
            worst = newton(m, d, c, k, q)
            if worst <= tolerance:
                amplification = irregularity(m, d, k)
                if amplification == 0.0:
                    closed = True
                    break
            for j in range(len(q)):
                q[j] = saved[j]
            dt *= 0.5
        if not closed:
            if worst <= tolerance:
                return fail(c, q, entry, SINGULAR, t, amplification)
            return fail(c, q, entry, NOT_CLOSED, t, worst)
        t, steps = t + dt, steps + 1
    return OK


@njit(error_model='numpy')
def canonical_spins(m, d, c, k, q):
    """Turn each split joint of cluster k whose free direction is idle (c.spin) to the rotation
    nearest the reference configuration's (completion.canonical_spins): R exp(theta d^), d the unit
    direction of its column of G_k (d.G[k], at q), theta maximizing
    trace(R_ref^T R exp(theta d^))."""
    G, reference, idx_q, col = d.G[k], c.reference, m.idx_q, m.col
    for i in range(m.body_range[k, 0], m.body_range[k, 1]):
        a = c.spin[i]
        if a < 0:
            continue
        j, g = idx_q[i], (G[a, col[i]], G[a, col[i] + 1], G[a, col[i] + 2])
        norm = math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
        d0, d1, d2 = g[0] / norm, g[1] / norm, g[2] / norm
        R, Q = quaternion_tuple(q, j), quaternion_tuple(reference, j)
        M = (Q[0] * R[0] + Q[3] * R[3] + Q[6] * R[6], Q[0] * R[1] + Q[3] * R[4] + Q[6] * R[7],
             Q[0] * R[2] + Q[3] * R[5] + Q[6] * R[8], Q[1] * R[0] + Q[4] * R[3] + Q[7] * R[6],
             Q[1] * R[1] + Q[4] * R[4] + Q[7] * R[7], Q[1] * R[2] + Q[4] * R[5] + Q[7] * R[8],
             Q[2] * R[0] + Q[5] * R[3] + Q[8] * R[6], Q[2] * R[1] + Q[5] * R[4] + Q[8] * R[7],
             Q[2] * R[2] + Q[5] * R[5] + Q[8] * R[8])                   # R_ref^T R, row-major
        dMd = (d0 * (M[0] * d0 + M[1] * d1 + M[2] * d2)
               + d1 * (M[3] * d0 + M[4] * d1 + M[5] * d2)
               + d2 * (M[6] * d0 + M[7] * d1 + M[8] * d2))
        theta = math.atan2(d0 * (M[5] - M[7]) + d1 * (M[6] - M[2]) + d2 * (M[1] - M[3]),
                           M[0] + M[4] + M[8] - dMd)
        s, w = math.sin(0.5 * theta), math.cos(0.5 * theta)
        x, y, z = s * d0, s * d1, s * d2
        qx, qy, qz, qw = q[j], q[j + 1], q[j + 2], q[j + 3]
        t0, t1 = qw * x + qx * w + qy * z - qz * y, qw * y - qx * z + qy * w + qz * x
        t2, t3 = qw * z + qx * y - qy * x + qz * w, qw * w - qx * x - qy * y - qz * z
        # q's side of the double cover
        side = 1.0 if t0 * qx + t1 * qy + t2 * qz + t3 * qw >= 0.0 else -1.0
        q[j], q[j + 1], q[j + 2], q[j + 3] = side * t0, side * t1, side * t2, side * t3


@njit(inline='always', error_model='numpy')
def quaternion_tuple(q, j):
    """The rotation matrix of the unit quaternion q[j:j + 4] (qx qy qz qw) as a row-major
    9-tuple."""
    x, y, z, w = q[j], q[j + 1], q[j + 2], q[j + 3]
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


@njit(error_model='numpy')
def fail(c, q, entry, reason, t, value):
    """Record why a continuation failed (c.failure[1:]), the positions it reached in c.partial, and
    restore q."""
    for j in range(len(q)):
        c.partial[j] = q[j]
        q[j] = entry[j]
    c.failure[1], c.failure[2], c.failure[3] = reason, t, value
    return reason


@njit(cache=True, nogil=True, error_model='numpy')
def complete(x, q_independent, previous, tracked, q, resume):
    """Spanning positions into q (nq): the reference configuration (previous where tracked) with
    the independent positions, the couplings solved and every loop cluster closed by continuation,
    tracked in one step from previous, else from the reference (completion.complete_positions),
    then validation.positions(check=False): every |q_i| within bounds.POSITION, unit quaternions
    normalized. A continuation from the reference takes at most CHUNK_STEPS steps per call: after
    that PARTIAL, and a call with resume goes on from where it stopped (c.partial, cluster
    c.failure[0]), q as that call left it."""
    m, d, c = x.m, x.d, x.c
    (q,) = borrowed((q,))
    if c.completion_compiled[0] == 0 or len(q_independent) != len(c.independent_q):
        return REFER
    first = int(c.failure[0]) if resume else 0
    if not resume:
        start = previous if tracked else c.reference
        for j in range(len(q)):
            q[j] = start[j]
        for j in range(len(q_independent)):
            q[c.independent_q[j]] = q_independent[j]
        for r in range(len(c.coupled_q)):           # D has no column on the joints it solves
            t = c.coupled_d[r]
            for j in range(len(q)):
                t += c.coupled_D[r, j] * q[j]
            q[c.coupled_q[r]] = t
    chunk = int(c.completion[CHUNK_STEPS_AT])
    for k in range(first, len(m.kind)):
        if m.kind[k] != LOOP:
            continue
        if resume and k == first:
            status = continuation(m, d, c, k, q, c.partial, chunk)   # read before fail() writes it
        elif tracked and continuation(m, d, c, k, q, previous, 1) == OK:
            status = OK
        else:
            status = continuation(m, d, c, k, q, c.reference, chunk)
        if status != OK:
            c.failure[0] = k
            return PARTIAL if status == TOO_MANY_STEPS else FAILED
        canonical_spins(m, d, c, k, q)
    return OK if accept_positions(m, d, c, q, False, 0.0, c.limits[POSITION_BOUND]) else REFER
