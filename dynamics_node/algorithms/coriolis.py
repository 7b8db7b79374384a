"""Coriolis matrix in independent coordinates, C_y (ny x ny): C_y yd + gravity forces = bias
forces, and Hdot_y - 2 C_y is skew-symmetric, loops included.

Derivation. The spanning velocities and accelerations are qd = G yd, qdd = G ydd + g (Chignoli et
al. 2023, eq. 3), with g = Gdot yd (differentiate qd = G yd). Projecting the spanning tree's
H qdd + C qd + tau_g (Chignoli et al. 2023, Sec. II, the projection method) gives
  tau_y = G^T H G ydd + G^T (C G + H Gdot) yd + G^T tau_g,
so H_y = G^T H G and C_y = G^T C G + G^T H Gdot, C the tree's Christoffel-consistent Coriolis
matrix (Hdot - 2 C skew). Then
  Hdot_y - 2 C_y = G^T (Hdot - 2 C) G + (Gdot^T H G - G^T H Gdot),
skew-symmetric: the first term by the tree's property, the second as a matrix minus its transpose.
(C_y holds the Christoffel symbols of the metric H_y in y: the columns of Gdot are the second
derivatives of q(y) along yd.) Without the G^T H Gdot term neither property holds on a loop.

Per body (Echeandia & Wensing 2021, "Numerical methods to compute the Coriolis matrix and
Christoffel symbols for rigid-body systems", J. Comput. Nonlinear Dyn. 16(9), cited by Chignoli et
al. 2023 as the next algorithm to cluster), with J_i the Jacobian of body i and Jdot_i the rate of
its columns as seen from the root, both in body i's coordinates:
  C = sum_i J_i^T (I_i Jdot_i + B_i J_i),  B_i = 1/2 [(v_i x*) I_i - I_i (v_i x) + (I_i v_i) xbar],
f xbar v = v x* f: B_i v_i = v_i x* I_i v_i (Featherstone & Orin 2000, eq. 5) and the symmetric
part of B_i is half the rate of I_i seen from the root. With the independent-coordinate Jacobians
J_i = J_i^tree G, whose rate is Jdot_i^tree G + J_i^tree Gdot, the sum is G^T C G + G^T H Gdot at
once. Their columns come from the cluster subspaces S_k = Omega blkdiag(S_i) G_k (eq. 24) and their
rates Sdot_k = Omega (blkdiag(S_i) Gdot_k + stack(v_i x S_i G_k)), of which c_k = Sdot_k yd_k
(kinematics.py), walked up the tree as frames.body_jacobian does.

Gdot_k: differentiating K G = 0 (G's independent rows constant) gives K Gdot = -Kdot(qd) G, solved
on the dependent rows as g is (kinematics.explicit_constraint); constraints.py gives the bilinear
-Kdot(u) w. Constant G (couplings, single bodies): Gdot = 0.
"""

import numpy as np

from ..multibody.constraints import rows_at
from ..spatial import crf, crm, skew
from .frames import body_jacobian
from .kinematics import forward_pass


def explicit_constraint_rate(model, data, k):
    """Gdot_k (n_k x m_k) at the state of the last forward pass: K Gdot = -Kdot(qd) G, zero on
    the independent rows."""
    c = model.cluster_list[k]
    G = data.G[k]
    Gdot = np.zeros_like(G)
    if c.linear or c.m == 0:                # a cluster its loops lock has no columns
        return Gdot
    v0, v1 = model.v_range[k]
    K, _ = rows_at(model, data, c)
    rates = np.column_stack([rows_at(model, data, c, G[:, j], data.qd[v0:v1])[1]
                             for j in range(c.m)])
    rows = c.active_rows
    Gdot[c.dependent] = np.linalg.lstsq(K[rows][:, c.dependent], rates[rows], rcond=None)[0]
    return Gdot


def subspace_rate(model, data, k):
    """Sdot_k (6 nb_k x m_k) = Omega (blkdiag(S_i) Gdot_k + stack(v_i x S_i G_k)), Omega applied
    along the in-cluster parents."""
    b0, b1 = model.body_range[k]
    v0 = model.v_range[k][0]
    G, Gdot = data.G[k], explicit_constraint_rate(model, data, k)
    rate = np.zeros((b1 - b0, 6, G.shape[1]))
    for i in range(b0, b1):
        s, rows = model.S[i], slice(model.idx_v[i] - v0, model.idx_v[i] - v0 + model.nv_body[i])
        rate[i - b0] = crm(data.v[i]) @ s @ G[rows] + s @ Gdot[rows]
        if model.parent[i] >= b0:
            rate[i - b0] += data.Xup[i] @ rate[model.parent[i] - b0]
    return rate.reshape(6 * (b1 - b0), G.shape[1])


def force_cross(f):
    """The matrix of v -> v x* f (f xbar), [[-n x, -f x], [-f x, 0]] for f = [n; f]: skew."""
    M = np.zeros((6, 6))
    M[:3, :3], M[:3, 3:], M[3:, :3] = -skew(f[:3]), -skew(f[3:]), -skew(f[3:])
    return M


def coriolis_inertia(I, v):
    """B(v) = 1/2 [(v x*) I - I (v x) + (I v) xbar], so that B(v) v = v x* I v."""
    return 0.5 * (crf(v) @ I - I @ crm(v) + force_cross(I @ v))


def coriolis_matrix(model, data, q, yd):
    """C_y (ny x ny) = sum_i J_i^T (I_i Jdot_i + B_i J_i), loops included."""
    forward_pass(model, data, q, yd)
    rates = [subspace_rate(model, data, k) for k in range(len(model.cluster_list))]
    C = np.zeros((model.ny, model.ny))
    for i in range(1, model.nb):
        J = body_jacobian(model, data, i, np.eye(6))
        Jdot = body_jacobian(model, data, i, np.eye(6), rates)
        C += J.T @ (model.inertia[i] @ Jdot + coriolis_inertia(model.inertia[i], data.v[i]) @ J)
    return C
