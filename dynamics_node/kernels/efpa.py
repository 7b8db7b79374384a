"""Cluster EFPA kernels (algorithms/efpa.py; Chignoli et al. 2023 Sec. VIII): Lambda^-1 = T T^T
(eqs. 63-67), each frame's T packed on the clusters supporting it (flat.model's y_support), so that
two frames share the leading rows of their common ancestors."""

from numba import njit

from .aba import articulated_inertias
from .cache import key_on_helpers
from .kinematics import kinematics, OK
from .linalg import forward_solve_rows
from .spatial import add_scaled, right_transform

key_on_helpers(__file__)


@njit(error_model='numpy')
def frame_propagators(m, d, frame_body, frame_X, T):
    """T[e] (ny x 6) of each frame e: T_k^T, T_k = Chi S_k L_k^-T, on each cluster k supporting the
    frame, at the rows [y_support[k] - m_k, y_support[k]) (root first), with the propagator Chi (a
    single 6x6 block, at one body, held by columns; rows in the public [linear; angular] order)
    moved up by Chi <- Chi ^bX_o - T_k V_k, which is eq. (62) with L_k = 1 - S_k D_k^-1 U_k^T. Then
    Lambda^-1 = T T^T (eqs. 63-67 unrolled)."""
    cluster, output, y_range, y_support, free = (
        m.cluster, m.output, m.y_range, m.y_support, m.free_y)
    Xo_E, Xo_r, S, V, L, SL = d.Xo_E, d.Xo_r, d.S, d.V, d.L, d.SL
    for e in range(len(frame_body)):
        body, Te, X = frame_body[e], T[e], frame_X[e]
        chi = ((X[3, 0], X[4, 0], X[5, 0], X[0, 0], X[1, 0], X[2, 0]),
               (X[3, 1], X[4, 1], X[5, 1], X[0, 1], X[1, 1], X[2, 1]),
               (X[3, 2], X[4, 2], X[5, 2], X[0, 2], X[1, 2], X[2, 2]),
               (X[3, 3], X[4, 3], X[5, 3], X[0, 3], X[1, 3], X[2, 3]),
               (X[3, 4], X[4, 4], X[5, 4], X[0, 4], X[1, 4], X[2, 4]),
               (X[3, 5], X[4, 5], X[5, 5], X[0, 5], X[1, 5], X[2, 5]))
        while body > 0:
            k = cluster[body]
            mk = y_range[k, 1] - y_range[k, 0]
            t0 = y_support[k] - mk
            for j in range(mk):
                for c in range(6):
                    SL[j, c] = S[body, j, c] * free[y_range[k, 0] + j]          # held: no column
            forward_solve_rows(L[k], mk, SL)
            for j in range(mk):
                t = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for c in range(6):
                    t = add_scaled(t, SL[j, c], chi[c])
                for r in range(6):
                    Te[t0 + j, r] = t[r]
            if output[k] == 0:
                break
            chi = right_transform(chi, Xo_E[body], Xo_r[body])
            for j in range(mk):
                t, v = Te[t0 + j], V[k, j]
                chi = (add_scaled(chi[0], -v[0], t), add_scaled(chi[1], -v[1], t),
                       add_scaled(chi[2], -v[2], t), add_scaled(chi[3], -v[3], t),
                       add_scaled(chi[4], -v[4], t), add_scaled(chi[5], -v[5], t))
            body = output[k]


@njit(inline='always', error_model='numpy')
def common_support(output, cluster, y_support, body1, body2):
    """The number of independent velocities of the clusters supporting both bodies: y_support of
    their nearest common cluster (a parent precedes its children), 0 if none."""
    k1, k2 = cluster[body1], cluster[body2]
    while k1 != k2:
        if k1 > k2:
            k1 = cluster[output[k1]]
        else:
            k2 = cluster[output[k2]]
    return y_support[k1] if k1 >= 0 else 0


@njit(cache=True, nogil=True, error_model='numpy')
def efpa(m, d, q, frame_body, frame_X, T, Omega):
    """Lambda^-1 (6 nf x 6 nf) of frames (body, ^frameX_body) into Omega, in the public layout:
    [linear; angular] rows and columns per frame, each in its own frame; T: (nf, ny, 6) scratch."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status == OK:
        status = articulated_inertias(m, d)
    if status == OK:
        inverse_inertia(m, d, frame_body, frame_X, T, Omega)
    return status


@njit(error_model='numpy')
def inverse_inertia(m, d, frame_body, frame_X, T, Omega):
    """efpa's Lambda^-1 = T T^T from the factors L_k, V_k of the articulated inertias at the
    positions that d holds (any velocities)."""
    frame_propagators(m, d, frame_body, frame_X, T)
    output, cluster, y_support, nf = m.output, m.cluster, m.y_support, len(frame_body)
    for e1 in range(nf):
        for e2 in range(e1, nf):
            n = common_support(output, cluster, y_support, frame_body[e1], frame_body[e2])
            T1, T2 = T[e1], T[e2]
            for r in range(0, 6, 2):                         # two rows at a time: independent sums
                a = b = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for y in range(n):
                    a, b = add_scaled(a, T1[y, r], T2[y]), add_scaled(b, T1[y, r + 1], T2[y])
                for c in range(6):
                    Omega[6 * e1 + r, 6 * e2 + c] = Omega[6 * e2 + c, 6 * e1 + r] = a[c]
                    Omega[6 * e1 + r + 1, 6 * e2 + c] = Omega[6 * e2 + c, 6 * e1 + r + 1] = b[c]
