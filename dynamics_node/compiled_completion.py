"""Numba kernel of state completion (completion.py) on a FlatModel ``m``, its FlatData ``d`` and a CheckPlan
``c`` (flat_checks.py; the entry point takes them as one CallContext): spanning positions from the independent
ones.

The same steps as completion.py without its restarts: the couplings solved explicitly (q_d = D q + d,
seed 003 eq. 3), then each loop cluster closed by continuation from the previous solution (steps of
at most CONTINUATION_STEP of its independent joints) with the damped Newton iteration of
completion._newton after each step: dq_d = -K_d^+ phi (Householder least squares, compiled.py), halved
while it does not reduce |phi|, retracted onto each joint's manifold (a spherical joint turns by the
step in its child frame, joints.retract). ``complete`` returns OK, or REFER where a cluster does not
close this way or the model has joints it does not retract (planar, split joints, multi-DoF
independent joints in loops): completion.py then starts over with its restarts and time budget.
"""

import math

from numba import njit

from .borrowed import borrowed
from .compiled import (body_transforms, constraint_rows, dependent_least_squares, LOOP, loop_ends_at_outputs, OK,
                       output_transforms, SPHERICAL)
from .compiled_checks import accept_positions, coupling_residual, loop_residuals, POSITION_BOUND, REFER
from .kernel_cache import key_on_helpers

INDEPENDENT, DEPENDENT, SPLIT = 1, 2, 3                   # c.role of a body's joint (0: the ground)
# c.completion: completion.py's constants
TOLERANCE_AT, MAX_ITERATIONS_AT, CONTINUATION_STEP_AT, MAX_CONTINUATION_STEPS_AT = range(4)

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
def continuation(m, d, c, k, q, previous):
    """Move the independent joints of cluster k from previous to their targets in q in equal steps of at
    most CONTINUATION_STEP, closing the loops after each (completion._continuation); OK or REFER."""
    target = c.target
    jump = 0.0
    for i in range(m.body_range[k, 0], m.body_range[k, 1]):
        if c.role[i] == INDEPENDENT:
            j = m.idx_q[i]
            target[j] = q[j]
            jump = max(jump, abs(q[j] - previous[j]))
    steps = max(1, int(math.ceil(jump / c.completion[CONTINUATION_STEP_AT])))
    if steps > c.completion[MAX_CONTINUATION_STEPS_AT]:
        return REFER
    for n in range(1, steps + 1):
        t = n / steps
        for i in range(m.body_range[k, 0], m.body_range[k, 1]):
            if c.role[i] == INDEPENDENT:
                j = m.idx_q[i]
                q[j] = (1.0 - t) * previous[j] + t * target[j]
        if not newton(m, d, c, k, q) <= c.completion[TOLERANCE_AT]:
            return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def complete(x, q_independent, previous, q):
    """Spanning positions into q (nq): previous with the independent positions, the couplings solved and
    every loop cluster closed from previous (completion.complete_positions without restarts), then
    state.positions(check=False): every |q_i| within bounds.POSITION, unit quaternions normalized."""
    m, d, c = x.m, x.d, x.c
    (q,) = borrowed((q,))
    if c.completion_compiled[0] == 0 or len(q_independent) != len(c.independent_q):
        return REFER
    for j in range(len(q)):
        q[j] = previous[j]
    for j in range(len(q_independent)):
        q[c.independent_q[j]] = q_independent[j]
    for r in range(len(c.coupled_q)):           # D has no column on the joints it solves
        t = c.coupled_d[r]
        for j in range(len(q)):
            t += c.coupled_D[r, j] * q[j]
        q[c.coupled_q[r]] = t
    for k in range(len(m.kind)):
        if m.kind[k] == LOOP and continuation(m, d, c, k, q, previous) != OK:
            return REFER
    return OK if accept_positions(m, d, c, q, False, 0.0, c.limits[POSITION_BOUND]) else REFER
