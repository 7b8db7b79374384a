"""Cluster RNEA kernel (algorithms/rnea.py; Chignoli et al. 2023 Sec. VI): tau_y = S_k^T f_k."""

from numba import njit

from .cache import key_on_helpers
from .kinematics import kinematics, OK
from .spatial import cross_force, dot6, rigid_force, transform_force, transform_motion

key_on_helpers(__file__)


@njit(inline='always', error_model='numpy')
def set_base_acceleration(m, d):
    """a_0 = -a_g: gravity enters as a fictitious base acceleration."""
    for e in range(3):
        d.a[0, e] = 0.0
        d.a[0, 3 + e] = -m.gravity[e]


@njit(inline='always', error_model='numpy')
def bias_force(I, v, f_ext, f):
    """f = v x* I v - f_ext (the velocity-product part of eq. 34), I as 10 parameters."""
    x = cross_force(v, rigid_force(I, v))
    for e in range(6):
        f[e] = x[e] - f_ext[e]


@njit(inline='always', error_model='numpy')
def bias_acceleration(Xo_E, Xo_r, a, c, i, o):
    """a_i = ^iX_o a_o + c_i: eq. (33) without S_k ydd_k."""
    transform_motion(Xo_E[i], Xo_r[i], a[o], a[i])
    for e in range(6):
        a[i, e] += c[i, e]


@njit(inline='always', error_model='numpy')
def body_acceleration(m, d, i, ydd):
    """a_i = ^iX_o a_o + c_i + S_k ydd_k: eq. (33), body i's step of the forward pass."""
    k = m.cluster[i]
    y0, a, S = m.y_range[k, 0], d.a, d.S
    bias_acceleration(d.Xo_E, d.Xo_r, a, d.c, i, m.output[k])
    for e in range(6):
        for j in range(m.y_range[k, 1] - y0):
            a[i, e] += S[i, j, e] * ydd[y0 + j]


@njit(cache=True, nogil=True, error_model='numpy')
def rnea(m, d, q, yd, ydd, f_ext):
    """Independent forces tau_y = S_k^T f_k into d.tau (rnea.py)."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    rigid, output, body_range, y_range = m.rigid_inertia, m.output, m.body_range, m.y_range
    Xo_E, Xo_r, S, v, a, f, tau = d.Xo_E, d.Xo_r, d.S, d.v, d.a, d.f, d.tau
    set_base_acceleration(m, d)
    for i in range(1, len(rigid)):                               # forward pass, cluster by cluster
        body_acceleration(m, d, i, ydd)
        bias_force(rigid[i], v[i], f_ext[i], f[i])
        x = rigid_force(rigid[i], a[i])
        for e in range(6):
            f[i, e] += x[e]                                          # eq. (34)
    for k in range(len(output) - 1, -1, -1):                         # backward pass
        o, b0, b1, y0 = output[k], body_range[k, 0], body_range[k, 1], y_range[k, 0]
        for j in range(y_range[k, 1] - y0):
            tau[y0 + j] = 0.0
            for i in range(b0, b1):
                tau[y0 + j] += dot6(S[i, j], f[i])                   # eq. (31)
        if o > 0:
            for i in range(b0, b1):
                transform_force(Xo_E[i], Xo_r[i], f[i], f[o], True)  # eq. (35)
    return OK
