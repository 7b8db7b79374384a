"""Inertial-parameter regressor kernel (algorithms/regressor.py): Y_y (ny x 10 (nb - 1)) with
Y_y pi = tau_y. The cluster RNEA's forward pass gives every body's a_i and v_i (rnea.py); the
block of body i, Y_i = [f(e_p)] the forces of unit parameters, then walks up as the RNEA's
backward pass carries f_i: rows S_k^T Y_i at each cluster k on the path, Y_i <- ^iX_o^T Y_i."""

import numpy as np
from numba import njit

from .cache import key_on_helpers
from .kinematics import kinematics, OK
from .rnea import body_acceleration, set_base_acceleration
from .spatial import cross_force, dot6, rigid_force, transform_force

key_on_helpers(__file__)

# Pinocchio's parameter p (m, h, Ixx, Ixy, Iyy, Ixz, Iyz, Izz) at its place among the kernels'
# 10 rigid-body parameters (m, h, xx, xy, xz, yy, yz, zz; spatial.py)
RIGID_INDEX = (0, 1, 2, 3, 4, 5, 7, 6, 8, 9)


class RegressorWorkspace:
    """The buffers of the regressor kernel for one FlatData: Y (ny x 10 (nb - 1)), the result;
    F (10 x 6), the forces of one body's parameters; unit (10), one parameter set to 1."""

    def __init__(self, flat):
        self.Y, self.F = np.zeros((flat.ny, 10 * (flat.nb - 1))), np.zeros((10, 6))
        self.unit = np.zeros(10)


@njit(inline='always', error_model='numpy')
def parameter_force(unit, a, v):
    """f = I a + v x* I v of the inertia of the 10 parameters unit (one of them 1)."""
    x, y = rigid_force(unit, a), cross_force(v, rigid_force(unit, v))
    return (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])


@njit(cache=True, nogil=True, error_model='numpy')
def regressor(m, d, q, yd, ydd, w_Y, w_F, w_unit):
    """Y_y into w_Y (module docstring)."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    cluster, output, y_range, Xo_E, Xo_r = m.cluster, m.output, m.y_range, d.Xo_E, d.Xo_r
    S, v, a = d.S, d.v, d.a
    set_base_acceleration(m, d)
    for p in range(10):
        w_unit[p] = 0.0
    for r in range(w_Y.shape[0]):
        for col in range(w_Y.shape[1]):
            w_Y[r, col] = 0.0
    for i in range(1, len(cluster)):                               # forward pass (rnea.py)
        body_acceleration(m, d, i, ydd)
    for i in range(1, len(cluster)):
        for p in range(10):
            w_unit[RIGID_INDEX[p]] = 1.0
            f = parameter_force(w_unit, a[i], v[i])
            w_unit[RIGID_INDEX[p]] = 0.0
            for e in range(6):
                w_F[p, e] = f[e]
        col0, body = 10 * (i - 1), i
        while body > 0:
            k = cluster[body]
            y0 = y_range[k, 0]
            for j in range(y_range[k, 1] - y0):
                for p in range(10):
                    w_Y[y0 + j, col0 + p] = dot6(S[body, j], w_F[p])    # eq. (31)
            if output[k] > 0:
                for p in range(10):
                    transform_force(Xo_E[body], Xo_r[body], w_F[p], w_F[p], False)   # eq. (35)
            body = output[k]
    return OK
