"""Cluster CRBA kernel (algorithms/crba.py): H_y = G^T H G from composite inertias carried as 10
rigid-body parameters."""

from numba import njit

from .cache import key_on_helpers
from .kinematics import kinematics, OK
from .spatial import add_rigid, dot6, rigid_congruence, rigid_force, transform_force

key_on_helpers(__file__)


@njit(error_model='numpy')
def composite_inertias(m, d):
    """Ic_i = I_i + sum of ^jX_i^T Ic_j ^jX_i over the bodies j of the clusters hanging from body
    i, as 10 parameters into d.Ic (Featherstone & Orin 2000, eq. 9), tips to base, at the output
    transforms d.Xo."""
    rigid, output, body_range = m.rigid_inertia, m.output, m.body_range
    Xo_E, Xo_r, Ic = d.Xo_E, d.Xo_r, d.Ic
    for i in range(1, len(rigid)):
        for e in range(10):
            Ic[i, e] = rigid[i, e]
    for k in range(len(output) - 1, -1, -1):
        o = output[k]
        if o > 0:
            for i in range(body_range[k, 0], body_range[k, 1]):
                add_rigid(rigid_congruence(Xo_E[i], Xo_r[i], Ic[i]), Ic[o])


@njit(cache=True, nogil=True, error_model='numpy')
def crba(m, d, q):
    """H_y = G^T H G into d.H: composite rigid-body inertias Ic_o += ^iX_o^T Ic_i ^iX_o (as 10
    parameters), then each block column F = sum_i ^iX_o^T Ic_i S_i
    (Featherstone & Orin 2000, eq. 10) walked up the ancestors: H_jk = S_j^T F, F <- ^bX_o^T F."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status != OK:
        return status
    composite_inertias(m, d)
    output, cluster, body_range, y_range = m.output, m.cluster, m.body_range, m.y_range
    Xo_E, Xo_r, S, U, Ic, F, H = d.Xo_E, d.Xo_r, d.S, d.U, d.Ic, d.F, d.H
    nc = len(output)
    for r in range(H.shape[0]):
        for c in range(H.shape[1]):
            H[r, c] = 0.0
    for k in range(nc):
        b0, b1, y0, mk = (body_range[k, 0], body_range[k, 1], y_range[k, 0],
                          y_range[k, 1] - y_range[k, 0])
        body = output[k]
        for j in range(mk):
            for e in range(6):
                F[j, e] = 0.0
            for i in range(b0, b1):
                f, u = rigid_force(Ic[i], S[i, j]), U[i, j]
                for e in range(6):
                    u[e] = f[e]
                if body > 0:                                         # F only goes up to ancestors
                    transform_force(Xo_E[i], Xo_r[i], u, F[j], True)
        for r in range(mk):
            for c in range(r, mk):                                   # H_k symmetric
                t = 0.0
                for i in range(b0, b1):
                    t += dot6(S[i, r], U[i, c])
                H[y0 + r, y0 + c] = H[y0 + c, y0 + r] = t
        while body > 0:
            j = cluster[body]
            z0 = y_range[j, 0]
            for r in range(y_range[j, 1] - z0):
                for c in range(mk):
                    H[z0 + r, y0 + c] = dot6(S[body, r], F[c])
                    H[y0 + c, z0 + r] = H[z0 + r, y0 + c]
            if output[j] > 0:
                for c in range(mk):
                    transform_force(Xo_E[body], Xo_r[body], F[c], F[c], False)
            body = output[j]
    return OK
