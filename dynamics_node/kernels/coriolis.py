"""Coriolis matrix kernel (algorithms/coriolis.py): C_y = sum_i J_i^T (I_i Jdot_i + B_i J_i),
gathered cluster by cluster with composite quantities, as the CRBA gathers H_y (Echeandia &
Wensing 2021; Pinocchio's computeCoriolisMatrix on trees).

Exchanging the sums over bodies and over the clusters on their paths, for clusters a (an ancestor
of r, or r) and r, with Ic_i the composite inertia of body i (crba.composite_inertias) and
Bc_i = 1/2 Idot_i + 1/2 (hc_i xbar) its composite B: Idot_i = sum X^T ((v x*) I - I (v x)) X
(symmetric, carried as a congruence) and hc_i = sum X^T I v (the composite momentum; xbar moves
with X as a force: X^T (f xbar) X = (X^T f) xbar):
  C_ar = S_a^T F_r,   F_r = sum_{i in r} X^T (Ic_i Sdot_r + Bc_i S_r)   (walked up as the CRBA F)
  C_ra = F1_r^T Sdot_a + F2_r^T S_a,   F1_r = sum X^T Ic_i S_r, F2_r = sum X^T Bc_i^T S_r
(a != r), X the transforms from body i of r to the body of a on its path. Sdot_k are the rates of
the cluster subspaces, which need Gdot_k of the LOOP clusters: K Gdot = -Kdot(qd) G, on the
cluster's sparse QR of K_d (kinematics.loop_constraint, redone per LOOP cluster as d.QR is shared),
with the bilinear constraint bias kinematics.constraint_bias.
"""

import numpy as np
from numba import njit

from .cache import key_on_helpers
from .crba import composite_inertias
from .joints import joint_column, joint_motion
from .kinematics import constraint_bias, kinematics, LOOP, loop_constraint, OK, SINGLE
from .linalg import qr_solve
from .spatial import (add_scaled, congruence_add, cross_force, cross_motion, dot6, rigid_force,
                      transform_at, transform_force, transformed_motion, ZERO6)

key_on_helpers(__file__)


class CoriolisWorkspace:
    """The buffers of the Coriolis kernel for one FlatData: C (ny x ny), the result; Gdot
    (nc, M, N) and Sdot (nb, M, 6), laid out as d.G and d.S; Idot (nb, 6, 6) and hc (nb, 6), the
    composites; U (nb, M, 6), F, F1, F2 (M, 6), the forces of one cluster's columns."""

    def __init__(self, flat):
        nb, nc, M, N = flat.nb, flat.nc, flat.M, flat.N
        self.C = np.zeros((flat.ny, flat.ny))
        self.Gdot, self.Sdot = np.zeros((nc, M, N)), np.zeros((nb, M, 6))
        self.Idot, self.hc = np.zeros((nb, 6, 6)), np.zeros((nb, 6))
        self.U, self.F, self.F1, self.F2 = (np.zeros((nb, M, 6)), np.zeros((M, 6)),
                                            np.zeros((M, 6)), np.zeros((M, 6)))


@njit(error_model='numpy')
def explicit_constraint_rates(m, d, Gdot):
    """Gdot_k of every cluster into Gdot (row j: column j of Gdot_k), at the state kinematics
    left: zero but on the dependent joints of LOOP clusters, K_d Gdot_d = -Kdot(qd) G."""
    kind, v_range, y_range, G, qd, A, beta = m.kind, m.v_range, m.y_range, d.G, d.qd, d.QR, d.beta
    for k in range(len(kind)):
        for j in range(Gdot.shape[1]):
            for r in range(Gdot.shape[2]):
                Gdot[k, j, r] = 0.0
        if kind[k] != LOOP:
            continue
        v0, v1 = v_range[k, 0], v_range[k, 1]
        n, mk = v1 - v0, y_range[k, 1] - y_range[k, 0]
        nd = n - mk
        status = loop_constraint(m, d, k, d.zero_y, False)       # K_d's QR into d.QR, at Xo
        if status != OK:
            return status
        dependent, pivot = m.dependent[k], m.qr_rows[k, :, 0]
        for j in range(mk):
            constraint_bias(m, d, k, qd[v0:v1], G[k, j], A[:, n])
            qr_solve(m, k, A, nd, beta, n)
            for p in range(nd):
                Gdot[k, j, dependent[p]] = A[pivot[p], n]
    return OK


@njit(error_model='numpy')
def subspace_rates(m, d, Gdot, Sdot):
    """Sdot_k = Omega (blkdiag(S_i) Gdot_k + stack(v_i x S_i G_k)) of every cluster into Sdot
    (coriolis.subspace_rate), Omega applied along the in-cluster parents."""
    parent, joint, axes, col, cluster, kind = m.parent, m.joint, m.axes, m.col, m.cluster, m.kind
    body_range, y_range, Xup_E, Xup_r, G, v = m.body_range, m.y_range, d.Xup_E, d.Xup_r, d.G, d.v
    for i in range(1, len(parent)):
        k, p = cluster[i], parent[i]
        inside, single = p >= body_range[k, 0], kind[k] == SINGLE
        E, r = transform_at(Xup_E, Xup_r, i)
        for j in range(y_range[k, 1] - y_range[k, 0]):
            s = (joint_column(joint[i], axes[i], j) if single
                 else joint_motion(joint[i], axes[i], G[k, j], col[i]))
            x = cross_motion(v[i], s)
            if kind[k] == LOOP:
                x = add_scaled(x, 1.0, joint_motion(joint[i], axes[i], Gdot[k, j], col[i]))
            if inside:
                x = add_scaled(x, 1.0, transformed_motion(E, r, Sdot[p, j]))
            for e in range(6):
                Sdot[i, j, e] = x[e]


@njit(error_model='numpy')
def coriolis_composites(m, d, Idot, hc):
    """Idot_i = (v_i x*) I_i - I_i (v_i x) and hc_i = I_i v_i of every body, then gathered tips to
    base as composites (Idot_o += X^T Idot_i X, hc_o += X^T hc_i)."""
    inertia, rigid, output, body_range, v = m.inertia, m.rigid_inertia, m.output, m.body_range, d.v
    for i in range(1, len(rigid)):
        for c in range(6):
            x = cross_force(v[i], inertia[i, c])           # column c of (v x*) I (I symmetric)
            for e in range(6):
                Idot[i, e, c] = x[e]
        for a in range(6):
            for b in range(a, 6):
                Idot[i, a, b] = Idot[i, b, a] = Idot[i, a, b] + Idot[i, b, a]
        h = rigid_force(rigid[i], v[i])
        for e in range(6):
            hc[i, e] = h[e]
    for k in range(len(output) - 1, -1, -1):
        o = output[k]
        if o > 0:
            for i in range(body_range[k, 0], body_range[k, 1]):
                congruence_add(d.Xo_E[i], d.Xo_r[i], Idot[i], Idot[o])
                transform_force(d.Xo_E[i], d.Xo_r[i], hc[i], hc[o], True)


@njit(inline='always', error_model='numpy')
def composite_b(Idot, hc, x, sign):
    """Bc x (sign 1) or Bc^T x (sign -1) = 1/2 Idot x + sign 1/2 x x* hc."""
    y = ZERO6
    for c in range(6):
        y = add_scaled(y, 0.5 * x[c], Idot[c])
    return add_scaled(y, 0.5 * sign, cross_force(x, hc))


@njit(cache=True, nogil=True, error_model='numpy')
def coriolis_matrix(m, d, q, yd, w_C, w_Gdot, w_Sdot, w_Idot, w_hc, w_U, w_F, w_F1, w_F2):
    """C_y into w_C (module docstring)."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    status = explicit_constraint_rates(m, d, w_Gdot)
    if status != OK:
        return status
    subspace_rates(m, d, w_Gdot, w_Sdot)
    composite_inertias(m, d)
    coriolis_composites(m, d, w_Idot, w_hc)
    output, cluster, body_range, y_range = m.output, m.cluster, m.body_range, m.y_range
    Xo_E, Xo_r, S, Ic = d.Xo_E, d.Xo_r, d.S, d.Ic
    for r in range(w_C.shape[0]):
        for c in range(w_C.shape[1]):
            w_C[r, c] = 0.0                     # clusters on no common path stay uncoupled
    for k in range(len(output)):
        b0, b1, y0 = body_range[k, 0], body_range[k, 1], y_range[k, 0]
        mk, body = y_range[k, 1] - y0, output[k]
        for j in range(mk):
            for e in range(6):
                w_F[j, e] = w_F1[j, e] = w_F2[j, e] = 0.0
            for i in range(b0, b1):
                u = add_scaled(composite_b(w_Idot[i], w_hc[i], S[i, j], 1.0), 1.0,
                               rigid_force(Ic[i], w_Sdot[i, j]))
                for e in range(6):
                    w_U[i, j, e] = u[e]
                if body > 0:
                    transform_force(Xo_E[i], Xo_r[i], w_U[i, j], w_F[j], True)
                    transform_force(Xo_E[i], Xo_r[i], rigid_force(Ic[i], S[i, j]), w_F1[j], True)
                    transform_force(Xo_E[i], Xo_r[i],
                                    composite_b(w_Idot[i], w_hc[i], S[i, j], -1.0), w_F2[j], True)
        for r in range(mk):
            for c in range(mk):
                t = 0.0
                for i in range(b0, b1):
                    t += dot6(S[i, r], w_U[i, c])
                w_C[y0 + r, y0 + c] = t
        while body > 0:
            a = cluster[body]
            z0 = y_range[a, 0]
            for r in range(y_range[a, 1] - z0):
                for c in range(mk):
                    w_C[z0 + r, y0 + c] = dot6(S[body, r], w_F[c])
                    w_C[y0 + c, z0 + r] = (dot6(w_F1[c], w_Sdot[body, r])
                                           + dot6(w_F2[c], S[body, r]))
            if output[a] > 0:
                for c in range(mk):
                    transform_force(Xo_E[body], Xo_r[body], w_F[c], w_F[c], False)
                    transform_force(Xo_E[body], Xo_r[body], w_F1[c], w_F1[c], False)
                    transform_force(Xo_E[body], Xo_r[body], w_F2[c], w_F2[c], False)
            body = output[a]
    return OK
