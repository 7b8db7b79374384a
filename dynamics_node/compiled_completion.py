"""Numba kernel of state completion (completion.py) on a FlatModel ``m``, its FlatData ``d`` and a CheckPlan
``c`` (flat_checks.py; the entry point takes them as one CallContext): spanning positions from the independent
ones.

The same steps as completion.py: the couplings solved explicitly (q_d = D q + d, seed 003 eq. 3), then each
loop cluster closed by predictor-corrector continuation, tracked in one step from the last completion where
it is that near, else from the reference configuration: each step predicts the dependent joints with G_k
(compiled.loop_constraint, which also measures the amplification) and corrects them by the damped Newton
iteration of completion._newton: dq_d = -K_d^+ phi (Householder least squares, compiled.py), halved while it
does not reduce |phi|, retracted onto each joint's manifold (a spherical joint turns by the step in its child
frame, joints.retract). ``complete`` returns OK; FAILED with the cluster, the reason (a FAILURE code), the
fraction of the way and the residual or amplification in c.failure; or REFER where the model has joints it
does not retract (planar, split joints, multi-DoF independent joints in loops): completion.py then runs.
"""

import math

from numba import njit

from .borrowed import borrowed
from .compiled import (AMPLIFIED, body_transforms, constraint_rows, dependent_least_squares, LOOP, loop_constraint,
                       loop_ends_at_outputs, OK, output_transforms, SPHERICAL)
from .compiled_checks import accept_positions, coupling_residual, loop_residuals, POSITION_BOUND, REFER
from .kernel_cache import key_on_helpers

INDEPENDENT, DEPENDENT, SPLIT = 1, 2, 3                   # c.role of a body's joint (0: the ground)
# c.completion: completion.py's constants
TOLERANCE_AT, MAX_ITERATIONS_AT, CONTINUATION_STEP_AT, MAX_CONTINUATION_STEPS_AT, HALVINGS_AT = range(5)
FAILED = -2                                               # complete(): a cluster does not close (c.failure)
# c.failure[1]: why a continuation failed (completion.FAILURES names them)
START_SINGULAR, TOO_MANY_STEPS, SINGULAR, NOT_CLOSED = 1, 2, 3, 4

key_on_helpers(__file__)


@njit(error_model='numpy')
def residual(m, d, c, k, q, phi):
    """The active rows of phi(q) of cluster k into phi (completion._residual); returns |phi|^2 and
    max |phi|."""
    body_transforms(m, d, q, m.body_range[k, 0], m.body_range[k, 1])    # all the loops need
    output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])
    loop_ends_at_outputs(m, d, m.loop_range[k, 0], m.loop_range[k, 1])
    rows, b, coupling_cluster, coupling_row = c.rows, c.b, c.coupling_cluster, c.coupling_row
    q_rows, q_index, q_coefficient, active = c.q_rows, c.q_index, c.q_coefficient, m.active[k]
    loop_residuals(m, d, c, m.loop_range[k, 0], m.loop_range[k, 1], rows)
    for e in range(len(b)):
        if coupling_cluster[e] == k:
            rows[coupling_row[e]] = coupling_residual(b, q_rows, q_index, q_coefficient, e, q)
    squares, worst = 0.0, 0.0
    for a in range(m.n_active[k]):
        phi[a] = rows[active[a]]
        squares, worst = squares + phi[a] * phi[a], max(worst, abs(phi[a]))
    return squares, worst


@njit(error_model='numpy')
def newton(m, d, c, k, q):
    """Close cluster k by damped Newton steps on its dependent joints (completion._newton, patient);
    returns the final max |phi|, or inf where K_d is singular."""
    tolerance, iterations = c.completion[TOLERANCE_AT], int(c.completion[MAX_ITERATIONS_AT])
    v0, v1 = m.v_range[k, 0], m.v_range[k, 1]
    na, nd = m.n_active[k], v1 - v0 - (m.y_range[k, 1] - m.y_range[k, 0])
    phi, trial, step, start, A, beta = c.phi, c.trial, c.step, c.start, d.QR, d.beta
    K, dependent, pivot, threshold = d.K[k], m.dependent[k], m.qr_rows[k, :, 0], m.singularity_threshold
    squares, worst = residual(m, d, c, k, q, phi)
    for _ in range(iterations):
        if worst <= tolerance:
            break
        constraint_rows(m, d, k)                             # K at q (Xup, Xo current since residual)
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
        squares, worst = trial_squares, trial_worst
        for a in range(na):
            phi[a] = trial[a]
    return worst


@njit(error_model='numpy')
def retract_dependent(m, c, k, q, start, step, scale):
    """q = start (+) (-scale step) on the dependent joints of cluster k (joints.retract): a spherical
    joint's quaternion times exp(-scale step / 2), its child-frame rotation; others take q - scale step."""
    role, idx_q, col, joint = c.role, m.idx_q, m.col, m.joint
    for i in range(m.body_range[k, 0], m.body_range[k, 1]):
        if role[i] != DEPENDENT:
            continue
        j, column = idx_q[i], col[i]
        if joint[i] != SPHERICAL:
            q[j] = start[j] - scale * step[column]
            continue
        w0, w1, w2 = -scale * step[column], -scale * step[column + 1], -scale * step[column + 2]
        angle = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        s = 0.5 if angle == 0.0 else math.sin(0.5 * angle) / angle
        x, y, z, w = s * w0, s * w1, s * w2, math.cos(0.5 * angle)
        qx, qy, qz, qw = start[j], start[j + 1], start[j + 2], start[j + 3]
        t0, t1 = qw * x + qx * w + qy * z - qz * y, qw * y - qx * z + qy * w + qz * x
        t2, t3 = qw * z + qx * y - qy * x + qz * w, qw * w - qx * x - qy * y - qz * z
        norm = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2 + t3 * t3)
        q[j], q[j + 1], q[j + 2], q[j + 3] = t0 / norm, t1 / norm, t2 / norm, t3 / norm


@njit(error_model='numpy')
def irregularity(m, d, k):
    """0 where cluster k is regular at its transforms (left current by residual), with G_k in d.G[k]; else its
    amplification, inf where K_d is singular (compiled.loop_constraint)."""
    output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])
    status = loop_constraint(m, d, k, d.zero_y, False)
    return 0.0 if status == OK else d.info[1] if status == AMPLIFIED else math.inf


@njit(error_model='numpy')
def continuation(m, d, c, k, q, start, limit):
    """Close cluster k in q, whose independent joints hold their targets, by continuation from the closed
    configuration start in at most limit steps (completion.continuation); OK, or a FAILURE code with q as it
    was and c.failure[2:] the fraction of the way and the residual or amplification."""
    b0, b1 = m.body_range[k, 0], m.body_range[k, 1]
    v0, v1 = m.v_range[k, 0], m.v_range[k, 1]
    n, mk = v1 - v0, m.y_range[k, 1] - m.y_range[k, 0]
    role, idx_q, col, independent = c.role, m.idx_q, m.col, m.independent[k]
    target, origin, entry, saved, predicted, dy, G = c.target, c.origin, c.entry, c.saved, c.predicted, c.dy, d.G[k]
    tolerance, halvings = c.completion[TOLERANCE_AT], int(c.completion[HALVINGS_AT])
    step_size = c.completion[CONTINUATION_STEP_AT]
    for j in range(len(q)):
        entry[j] = q[j]
    for i in range(b0, b1):
        j = idx_q[i]
        if role[i] == INDEPENDENT:
            target[j], origin[j] = q[j], start[j]
        for e in range(4 if m.joint[i] == SPHERICAL else 1):
            q[j + e] = start[j + e]
    for a in range(mk):                          # independent displacement per unit of the way (1-DoF joints)
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
def fail(c, q, entry, reason, t, value):
    """Restore q and record why a continuation failed (c.failure[1:])."""
    for j in range(len(q)):
        q[j] = entry[j]
    c.failure[1], c.failure[2], c.failure[3] = reason, t, value
    return reason


@njit(cache=True, nogil=True, error_model='numpy')
def complete(x, q_independent, previous, tracked, q):
    """Spanning positions into q (nq): the reference configuration (previous where tracked) with the
    independent positions, the couplings solved and every loop cluster closed by continuation, tracked in one
    step from previous, else from the reference (completion.complete_positions), then
    state.positions(check=False): every |q_i| within bounds.POSITION, unit quaternions normalized."""
    m, d, c = x.m, x.d, x.c
    (q,) = borrowed((q,))
    if c.completion_compiled[0] == 0 or len(q_independent) != len(c.independent_q):
        return REFER
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
    limit = int(c.completion[MAX_CONTINUATION_STEPS_AT])
    for k in range(len(m.kind)):
        if m.kind[k] != LOOP:
            continue
        if tracked and continuation(m, d, c, k, q, previous, 1) == OK:
            continue
        if continuation(m, d, c, k, q, c.reference, limit) != OK:
            c.failure[0] = k
            return FAILED
    return OK if accept_positions(m, d, c, q, False, 0.0, c.limits[POSITION_BOUND]) else REFER
