"""Numba kernels of the state checks of every public call (validation.py), on a FlatModel ``m``,
its FlatData ``d`` and a CheckPlan ``c`` (flat/checks.py).

``accept_positions`` accepts or refers: True where q certainly passes validation.positions (unit
quaternions, normalized in place; couplings, loops and implicit constraints closed within
tolerance, with LoopConstraint.residual's phi), False otherwise, where validation.py's NumPy
check runs and raises
the error naming the constraint. ``velocity_violation`` is validation.independent_velocities'
measure max |K v| over the coupling rows and the LOOP clusters' active rows (K of
kinematics.constraint_rows); ``constraint_violation`` measures it with the K that an algorithm's
kinematics left in d.K.
"""

import math

from numba import njit, types

from .cache import key_on_helpers
from .expressions import implicit_phi, violation
from .kinematics import (constraint_rows, LOOP, loop_ends_at_outputs, loop_output_transforms,
                         update_transforms)
from .spatial import product, relative, rotated_back, transform_at

QUATERNION_TOLERANCE = 1e-5       # |norm - 1| accepted, as validation.positions
# status of a compiled public call whose input the checks do not accept
REFER = -1
# c.limits: the bounds of bounds.py and the tolerances of validation.py (flat/checks.py fills them)
(POSITION_BOUND, VELOCITY_BOUND, ACCELERATION_BOUND, FORCE_BOUND, POSITION_TOLERANCE,
 VELOCITY_TOLERANCE) = range(6)
NONE, TURNED_AXIS, LOG, AXES_PERPENDICULAR = 0, 1, 2, 3    # rotation rows of a loop residual
ALL, ACROSS_AXIS, ALONG_AXIS = 0, 1, 2                     # its position rows (e1 e2, or the axis)

key_on_helpers(__file__)


@njit([types.boolean(types.Array(types.float64, 1, 'A', readonly=True), types.float64)],
      cache=True, nogil=True, error_model='numpy')
def all_within(x, bound):
    """Every |x_i| <= bound, so no NaN or infinity (validation.vector)."""
    for value in x:
        if not abs(value) <= bound:
            return False
    return True


@njit(error_model='numpy')
def beyond(x, bound):
    """The first entry i with not |x_i| <= bound (NaN included), -1 where none: the entry
    validation.vector names."""
    for i in range(len(x)):
        if not abs(x[i]) <= bound:
            return i
    return -1


@njit(error_model='numpy')
def rotation_log_component(E, e):
    """e . log(R_rel) for R_rel = E^T, E a row-major 9-tuple (spatial.rotation_log, angles below
    pi)."""
    cos_angle = min(1.0, max(-1.0, 0.5 * (E[0] + E[4] + E[8] - 1.0)))
    angle = math.acos(cos_angle)
    w0, w1, w2 = 0.5 * (E[5] - E[7]), 0.5 * (E[6] - E[2]), 0.5 * (E[1] - E[3])
    scale = 1.0 if angle < 1e-8 else angle / math.sin(angle)
    return scale * (e[0] * w0 + e[1] * w1 + e[2] * w2)


@njit(inline='always', error_model='numpy')
def coupling_residual(b, q_rows, q_index, q_coefficient, row, q):
    """phi = sum_j c_j q_j + offset of coupling row (CouplingConstraint.residual, sparse rows of
    flat.checks)."""
    t = b[row]
    for e in range(q_rows[row], q_rows[row + 1]):
        t += q_coefficient[e] * q[q_index[e]]
    return t


@njit(error_model='numpy')
def loop_residuals(m, d, c, l0, l1, rows):
    """phi of the loops l0..l1-1 into rows, each loop's at its rows of its cluster (loop_row) in
    the order of K (LoopConstraint.residual, flat.checks.ROTATION_MODE and POSITION_MODE), at the
    transforms to the ends of each loop from one frame (d.end_E, d.end_r: the loop frames relative
    to one another, whatever that frame): the cluster's output frame where constraint_rows or
    loop_ends_at_outputs left them, the NCA's where LCABA's rows did; returns max |phi| (loops of
    different clusters overwrite each other's rows: only the maximum counts there)."""
    loop_row, end_E, end_r = m.loop_row, d.end_E, d.end_r
    pred_E, pred_r, succ_E, succ_r, frames, axis2 = (
        m.loop_E, m.loop_r, c.succ_E, c.succ_r, c.frame, c.axis2)
    rotation_mode, position_mode = c.rotation_mode, c.position_mode
    worst = 0.0
    for lp in range(l0, l1):
        E_A, r_A = transform_at(end_E[lp], end_r[lp], 0)                   # ^AX_f
        E_B, r_B = transform_at(end_E[lp], end_r[lp], 1)                   # ^BX_f
        E, r = transform_at(pred_E, pred_r, lp)
        E_P, r_P = product(E, r, E_A, r_A)                                 # ^PX_f
        E, r = transform_at(succ_E, succ_r, lp)
        E_S, r_S = product(E, r, E_B, r_B)                                 # ^SX_f
        ES, p = relative(E_S, r_S, E_P, r_P)                               # ^SX_P: R_rel = ES^T, p
        frame, mode, row0 = frames[lp], rotation_mode[lp], loop_row[lp]
        row = row0
        if mode == TURNED_AXIS:               # the axis turned by R_rel = ES^T: (-e2, e1) . turned
            turned = rotated_back(ES, (frame[0, 2], frame[1, 2], frame[2, 2]))
            rows[row] = -(frame[0, 1] * turned[0] + frame[1, 1] * turned[1]
                          + frame[2, 1] * turned[2])
            rows[row + 1] = (frame[0, 0] * turned[0] + frame[1, 0] * turned[1]
                             + frame[2, 0] * turned[2])
            row += 2
        elif mode == LOG:                        # every component of log(R_rel)
            for a in range(3):
                rows[row + a] = rotation_log_component(ES, (1.0 if a == 0 else 0.0,
                                                            1.0 if a == 1 else 0.0,
                                                            1.0 if a == 2 else 0.0))
            row += 3
        elif mode == AXES_PERPENDICULAR:         # universal: -a1 . R_rel a2
            turned = rotated_back(ES, axis2[lp])
            rows[row] = -(frame[0, 2] * turned[0] + frame[1, 2] * turned[1]
                          + frame[2, 2] * turned[2])
            row += 1
        mode = position_mode[lp]
        for j in range(3):
            if mode == ALL:
                rows[row] = p[j]
            elif mode == ACROSS_AXIS and j < 2 or mode == ALONG_AXIS and j == 2:
                rows[row] = frame[0, j] * p[0] + frame[1, j] * p[1] + frame[2, j] * p[2]
            else:
                continue
            row += 1
        for j in range(row0, row):
            worst = max(worst, abs(rows[j]))
    return worst


@njit(cache=True, nogil=True, error_model='numpy')
def accept_positions(m, d, c, q, closure, tolerance, bound):
    """Every |q_i| <= bound (so finite), unit quaternions normalized in place; with closure, every
    coupling and loop within tolerance and, with loops, d.Xup left at q (for velocity_violation).
    True where validation.positions would accept q."""
    for value in q:
        if not abs(value) <= bound:
            return False
    unit = normalize_quaternions(m, q)
    if not closure:
        return unit
    if len(c.rotation_mode) or len(m.implicit_of):    # before any refusal: the NumPy check may
        update_transforms(m, d, q)                       # still accept q
    return unit and couplings_closed(c, q, tolerance) and loops_closed(m, d, c, tolerance, True)


@njit(error_model='numpy')
def normalize_quaternions(m, q):
    """Unit quaternions of q normalized in place (validation.positions does the same); False where
    one is farther from unit norm than QUATERNION_TOLERANCE."""
    quaternion_at = m.quaternion_at
    unit = True
    for i in range(1, len(quaternion_at)):
        i0 = quaternion_at[i]
        if i0 >= 0:
            norm = math.sqrt(q[i0] ** 2 + q[i0 + 1] ** 2 + q[i0 + 2] ** 2 + q[i0 + 3] ** 2)
            if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
                unit = False
            else:
                for j in range(4):
                    q[i0 + j] /= norm
    return unit


@njit(error_model='numpy')
def unit_quaternions(m, q):
    """(body, norm) of the first joint whose quaternion is farther from unit norm than
    QUATERNION_TOLERANCE ((-1, 1.0) where none), those before normalized in place
    (validation.positions, in the same body order)."""
    quaternion_at = m.quaternion_at
    for i in range(1, len(quaternion_at)):
        i0 = quaternion_at[i]
        if i0 >= 0:
            norm = math.sqrt(q[i0] ** 2 + q[i0 + 1] ** 2 + q[i0 + 2] ** 2 + q[i0 + 3] ** 2)
            if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
                return i, norm
            for j in range(4):
                q[i0 + j] /= norm
    return -1, 1.0


@njit(error_model='numpy')
def worst_constraint(m, d, c, q):
    """(constraint, violation) of the constraint farthest from closed at q and d.Xup: constraints
    numbered loops first (l), then couplings (nl + r), then implicit constraints (nl + nr + i), as
    Model.checked_constraints lists them; the residuals of validation.positions."""
    loops, worst, which = len(c.rotation_mode), 0.0, -1
    if loops:
        loop_output_transforms(m, d)
        loop_ends_at_outputs(m, d, 0, loops)
    for lp in range(loops):
        phi = loop_residuals(m, d, c, lp, lp + 1, c.rows)
        if phi > worst or which < 0:
            worst, which = phi, lp
    b, q_rows, q_index, q_coefficient = c.b, c.q_rows, c.q_index, c.q_coefficient
    for row in range(len(b)):
        phi = abs(coupling_residual(b, q_rows, q_index, q_coefficient, row, q))
        if phi > worst or which < 0:
            worst, which = phi, loops + row
    for row in range(len(m.implicit_of)):
        phi = violation(implicit_phi(m, d, row))
        if phi > worst or which < 0:
            worst, which = phi, loops + len(b) + m.implicit_of[row]
    return which, worst


@njit(error_model='numpy')
def couplings_closed(c, q, tolerance):
    """Every coupling within tolerance at q (CouplingConstraint.residual)."""
    b, q_rows, q_index, q_coefficient = c.b, c.q_rows, c.q_index, c.q_coefficient
    for row in range(len(b)):
        if not abs(coupling_residual(b, q_rows, q_index, q_coefficient, row, q)) <= tolerance:
            return False
    return True


@njit(error_model='numpy')
def loops_closed(m, d, c, tolerance, transforms):
    """Every loop within tolerance at d.Xup (loop_residuals): with transforms, at the Xo of the
    LOOP clusters' bodies; without, at the loop ends an algorithm left (constraint_rows, LCABA's
    loop_rows: kernels/calls.py). Every implicit constraint within tolerance at d.q_body."""
    for row in range(len(m.implicit_of)):
        if not violation(implicit_phi(m, d, row)) <= tolerance:
            return False
    loops = len(c.rotation_mode)
    if loops == 0:
        return True
    if transforms:
        loop_output_transforms(m, d)
        loop_ends_at_outputs(m, d, 0, loops)
    return loop_residuals(m, d, c, 0, loops, c.rows) <= tolerance


@njit(cache=True, nogil=True, error_model='numpy')
def velocity_violation(m, d, c, v):
    """constraint_violation at the transforms of the last accept_positions: K of every LOOP cluster
    first."""
    loop_output_transforms(m, d)
    for k in range(len(m.kind)):
        if m.kind[k] == LOOP:
            constraint_rows(m, d, k)
    constraint_violation(m, d, c, v, True)


@njit(error_model='numpy')
def constraint_violation(m, d, c, v, loops):
    """max |K v| over the coupling rows and, with loops, the active rows of every LOOP cluster
    (their K in d.K) into c.worst[0], its cluster into c.worst[1] and max |v| into c.worst[2]."""
    v_rows, v_index, v_coefficient, v_cluster = c.v_rows, c.v_index, c.v_coefficient, c.v_cluster
    kind, v_range, n_active, K = m.kind, m.v_range, m.n_active, d.K
    worst, cluster, scale = 0.0, -1.0, 0.0
    for j in range(len(v)):
        scale = max(scale, abs(v[j]))
    for row in range(len(v_cluster)):
        t = 0.0
        for e in range(v_rows[row], v_rows[row + 1]):
            t += v_coefficient[e] * v[v_index[e]]
        if abs(t) > worst:
            worst, cluster = abs(t), v_cluster[row]
    for k in range(len(kind) if loops else 0):
        if kind[k] != LOOP:
            continue
        v0 = v_range[k, 0]
        for a in range(n_active[k]):
            t = 0.0
            for j in range(v_range[k, 1] - v0):
                t += K[k, a, j] * v[v0 + j]
            if abs(t) > worst:
                worst, cluster = abs(t), k
    c.worst[0], c.worst[1], c.worst[2] = worst, cluster, scale
