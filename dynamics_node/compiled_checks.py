"""Numba kernels of the state checks of every public call (state.py), on a FlatModel ``m``, its FlatData
``d`` and a CheckPlan ``c`` (flat_checks.py).

``accept_positions`` accepts or refers: True where q certainly passes state.positions (unit
quaternions, normalized in place; couplings and loops closed within tolerance, with
LoopConstraint.residual's phi), False otherwise, where state.py's NumPy check runs and raises the
error naming the constraint. ``velocity_violation`` is state.independent_velocities' measure
max |K v| over the coupling rows and the LOOP clusters' active rows (K of compiled.py).
"""

import math

from numba import njit, types

from .compiled import chain, compose, constraint_rows, FLOATING, LOOP, SPHERICAL, update_transforms
from .kernel_cache import key_on_helpers

QUATERNION_TOLERANCE = 1e-5       # |norm - 1| accepted, as state.positions
NONE, TURNED_AXIS, LOG, AXES_PERPENDICULAR = 0, 1, 2, 3         # rotation rows of a loop residual
ALL, ACROSS_AXIS, ALONG_AXIS = 0, 1, 2                          # its position rows (e1 e2, or the axis)

key_on_helpers(__file__)


@njit([types.boolean(types.Array(types.float64, 1, 'A', readonly=True), types.float64)], cache=True, nogil=True)
def all_within(x, bound):
    """Every |x_i| <= bound, so no NaN or infinity (state.vector)."""
    for value in x:
        if not abs(value) <= bound:
            return False
    return True


@njit
def rotation_log_component(E, e):
    """e . log(R_rel) for R_rel = E^T (spatial.rotation_log, angles below pi)."""
    cos_angle = min(1.0, max(-1.0, 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)))
    angle = math.acos(cos_angle)
    w0, w1, w2 = 0.5 * (E[1, 2] - E[2, 1]), 0.5 * (E[2, 0] - E[0, 2]), 0.5 * (E[0, 1] - E[1, 0])
    scale = 1.0 if angle < 1e-8 else angle / math.sin(angle)
    return scale * (e[0] * w0 + e[1] * w1 + e[2] * w2)


@njit
def loop_residual(m, d, c, lp, phi):
    """phi of loop lp into phi[0:rows] in the order of its rows of K (LoopConstraint.residual,
    flat_checks.ROTATION_MODE and POSITION_MODE); returns max |phi|."""
    E, r = c.E, c.r
    chain(d, m.loop_path[lp, 0], m.loop_path_len[lp, 0], E[0], r[0], E[2], r[2])     # ^AX_nca
    chain(d, m.loop_path[lp, 1], m.loop_path_len[lp, 1], E[1], r[1], E[2], r[2])     # ^BX_nca
    compose(c.pred_E[lp], c.pred_r[lp], E[0], r[0], E[2], r[2])                       # ^PX_nca
    compose(c.succ_E[lp], c.succ_r[lp], E[1], r[1], E[3], r[3])                       # ^SX_nca
    for a in range(3):                           # ^SX_P = ^SX_nca ^PX_nca^-1: E_S E_P^T, E_P (r_S - r_P)
        for b in range(3):
            E[0, a, b] = E[3, a, 0] * E[2, b, 0] + E[3, a, 1] * E[2, b, 1] + E[3, a, 2] * E[2, b, 2]
        r[0, a] = 0.0
        for b in range(3):
            r[0, a] += E[2, a, b] * (r[3, b] - r[2, b])
    ES, p, frame, mode = E[0], r[0], c.frame[lp], c.rotation_mode[lp]
    row = 0
    if mode == TURNED_AXIS:                      # the axis turned by R_rel = E^T: (-e2, e1) . turned
        turned = (ES[0, 0] * frame[0, 2] + ES[1, 0] * frame[1, 2] + ES[2, 0] * frame[2, 2],
                  ES[0, 1] * frame[0, 2] + ES[1, 1] * frame[1, 2] + ES[2, 1] * frame[2, 2],
                  ES[0, 2] * frame[0, 2] + ES[1, 2] * frame[1, 2] + ES[2, 2] * frame[2, 2])
        phi[0] = -(frame[0, 1] * turned[0] + frame[1, 1] * turned[1] + frame[2, 1] * turned[2])
        phi[1] = frame[0, 0] * turned[0] + frame[1, 0] * turned[1] + frame[2, 0] * turned[2]
        row = 2
    elif mode == LOG:                            # every component of log(R_rel)
        for a in range(3):
            phi[a] = rotation_log_component(ES, (1.0 if a == 0 else 0.0, 1.0 if a == 1 else 0.0,
                                                 1.0 if a == 2 else 0.0))
        row = 3
    elif mode == AXES_PERPENDICULAR:             # universal: -a1 . R_rel a2
        a2 = c.axis2[lp]
        phi[0] = 0.0
        for a in range(3):
            phi[0] -= frame[a, 2] * (ES[0, a] * a2[0] + ES[1, a] * a2[1] + ES[2, a] * a2[2])
        row = 1
    mode = c.position_mode[lp]
    for j in range(3):
        if mode == ALL:
            phi[row] = p[j]
        elif mode == ACROSS_AXIS and j < 2 or mode == ALONG_AXIS and j == 2:
            phi[row] = frame[0, j] * p[0] + frame[1, j] * p[1] + frame[2, j] * p[2]
        else:
            continue
        row += 1
    worst = 0.0
    for j in range(row):
        worst = max(worst, abs(phi[j]))
    return worst


@njit(cache=True, nogil=True)
def accept_positions(m, d, c, q, closure, tolerance, bound):
    """Every |q_i| <= bound (so finite), unit quaternions normalized in place; with closure, every
    coupling and loop within tolerance and, with loops, d.Xup left at q (for velocity_violation).
    True where state.positions would accept q."""
    for value in q:
        if not abs(value) <= bound:
            return False
    unit = True
    for i in range(1, len(m.joint)):
        if m.joint[i] == FLOATING or m.joint[i] == SPHERICAL:
            i0 = m.idx_q[i] + (3 if m.joint[i] == FLOATING else 0)
            norm = math.sqrt(q[i0] ** 2 + q[i0 + 1] ** 2 + q[i0 + 2] ** 2 + q[i0 + 3] ** 2)
            if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
                unit = False
            else:
                for j in range(4):
                    q[i0 + j] /= norm
    if not closure:
        return unit
    if len(c.rotation_mode):               # before any refusal: the NumPy check may still accept q
        update_transforms(m, d, q)
    if not unit:
        return False
    for row in range(len(c.b)):
        t = c.b[row]
        for e in range(c.q_rows[row], c.q_rows[row + 1]):
            t += c.q_coefficient[e] * q[c.q_index[e]]
        if not abs(t) <= tolerance:
            return False
    for lp in range(len(c.rotation_mode)):
        if not loop_residual(m, d, c, lp, c.phi) <= tolerance:
            return False
    return True


@njit(cache=True, nogil=True)
def velocity_violation(m, d, c, v):
    """max |K v| over the coupling rows and the active rows of every LOOP cluster into c.worst[0], its
    cluster into c.worst[1] and max |v| into c.worst[2], at the transforms of the last accept_positions."""
    worst, cluster, scale = 0.0, -1.0, 0.0
    for j in range(len(v)):
        scale = max(scale, abs(v[j]))
    for row in range(len(c.v_cluster)):
        t = 0.0
        for e in range(c.v_rows[row], c.v_rows[row + 1]):
            t += c.v_coefficient[e] * v[c.v_index[e]]
        if abs(t) > worst:
            worst, cluster = abs(t), c.v_cluster[row]
    for k in range(len(m.kind)):
        if m.kind[k] != LOOP:
            continue
        constraint_rows(m, d, k)
        v0 = m.v_range[k, 0]
        for a in range(m.n_active[k]):
            row = m.active[k, a]
            t = 0.0
            for j in range(m.v_range[k, 1] - v0):
                t += d.K[row, j] * v[v0 + j]
            if abs(t) > worst:
                worst, cluster = abs(t), k
    c.worst[0], c.worst[1], c.worst[2] = worst, cluster, scale
