"""Cluster kinematics: the forward pass shared by every algorithm (Chignoli et al. 2023, Alg. 1
lines 1-19).

For cluster k with bodies i and output bodies o(i):
  Xo[i] = ^iX_o(i)                        (block row of the cluster transform ^kX_parent, eq. 17)
  Omega = X_rm, unit lower block triangular, blocks ^iX_j for in-cluster ancestors j   (eq. 20)
  S_k = Omega blkdiag(S_i) G_k                                                          (eq. 24)
  v_k = ^kX_parent v_parent + S_k yd_k                                                  (eq. 33)
  c_k = Omega (blkdiag(S_i) g_k + stack(v_i x S_i qd_i))       (Chignoli et al. 2024; includes
                                                               v x S yd, digest 1.8)
"""

import numpy as np

from ..faults import Fault, message
from ..kernels.codes import AMPLIFIED, SINGULAR_SPLIT
from ..multibody.clusters import SINGULARITY_THRESHOLD
from ..multibody.constraints import rows_at
from ..multibody.joints import joint_transform
from ..spatial import cross_motion


def update_transforms(model, data, q, bodies=None):
    """Xup[i] = X_J(q_i) X_T(i) for every body, or for the given ones (Featherstone & Orin
    2000). The positions are kept for the constraints that read them (constraints.rows_at)."""
    data.q = q
    for i in range(1, model.nb) if bodies is None else bodies:
        qi = q[model.idx_q[i]:model.idx_q[i] + model.nq_body[i]]
        data.Xup[i] = joint_transform(model.joint_type[i], model.axis[i], qi) @ model.X_tree[i]


def explicit_constraint(model, data, k, yd):
    """G_k, g_k and qd_k = G_k yd_k of cluster k from its implicit constraint K qdd = k:
    G = P [1; -K_d^+ K_i], g = P [0; K_d^+ k] (Chignoli et al. 2024 Sec. 1.1), K_d^+ from a QR of
    the dependent columns (rank-revealing: redundant rows are harmless, a singular split
    raises)."""
    c = model.cluster_list[k]
    if c.linear:
        G = model.G_constant[k]
        return G, np.zeros(c.n), G @ yd
    K, _ = rows_at(model, data, c)
    K = K[c.active_rows]
    Q, R = np.linalg.qr(K[:, c.dependent])
    diagonal = np.abs(np.diag(R))
    if diagonal.min() <= SINGULARITY_THRESHOLD * max(diagonal.max(), 1.0):
        raise message(model, SINGULAR_SPLIT,
                      Fault(index=k, value=diagonal.min() / diagonal.max()))
    G = np.zeros((c.n, c.m))
    G[c.independent] = np.eye(c.m)
    G[c.dependent] = -np.linalg.solve(R, Q.T @ K[:, c.independent])
    check_amplification(model, c, np.abs(G[c.dependent]).sum(axis=1).max(initial=1.0))
    qd = G @ yd
    _, bias = rows_at(model, data, c, qd)
    g = np.zeros(c.n)
    g[c.dependent] = np.linalg.solve(R, Q.T @ bias[c.active_rows])
    return G, g, qd


def check_amplification(model, cluster, amplification):
    """AMPLIFIED where a loop cluster's amplification (the largest row sum of |G_k|) exceeds its
    bound (Model.amplification_limit times its amplification at the reference configuration)."""
    if amplification > model.amplification_bound[cluster.index]:
        raise message(model, AMPLIFIED, Fault(index=cluster.index, value=amplification))


def cluster_motion(model, data, k, yd):
    """S_k, G_k, g_k, qd_k, the body velocities and c_k of cluster k, into data."""
    b0, b1 = model.body_range[k]
    nb = b1 - b0
    Omega = np.eye(6 * nb)
    for i in range(b0, b1):
        parent = model.parent[i]
        data.Xo[i] = data.Xup[i] @ data.Xo[parent] if parent >= b0 else data.Xup[i]
        X, j = data.Xup[i], parent
        while j >= b0:
            Omega[6 * (i - b0):6 * (i - b0 + 1), 6 * (j - b0):6 * (j - b0 + 1)] = X
            X = X @ data.Xup[j]
            j = model.parent[j]
    G, g, qd = explicit_constraint(model, data, k, yd)
    v0, v1 = model.v_range[k]
    data.qd[v0:v1] = qd
    S = Omega @ model.Sbar[k] @ G
    vJ = (S @ yd).reshape(nb, 6)
    output = model.cluster_list[k].output
    product = np.zeros((nb, 6))
    for i in range(b0, b1):
        data.v[i] = data.Xo[i] @ data.v[output[i]] + vJ[i - b0]
        s = model.S[i]
        product[i - b0] = cross_motion(
            data.v[i], s @ qd[model.idx_v[i] - v0:model.idx_v[i] - v0 + s.shape[1]])
    data.S[k], data.G[k], data.g[k] = S, G, g
    data.c[k] = Omega @ (model.Sbar[k] @ g + product.reshape(-1))


def forward_pass(model, data, q, yd):
    """Cluster kinematics for all clusters, base to tips; yd are the independent velocities."""
    update_transforms(model, data, q)
    data.v[0] = 0.0
    for k in range(len(model.cluster_list)):
        y0, y1 = model.y_range[k]
        cluster_motion(model, data, k, yd[y0:y1])


def parent_transform(model, data, k):
    """The dense cluster transform ^kX_parent(k) (6 nb_k x 6 nb_parent), one nonzero block per row
    (Chignoli et al. 2023, eq. 17)."""
    b0, b1 = model.body_range[k]
    p = model.cluster_list[k].parent
    p0, p1 = model.body_range[p] if p >= 0 else (0, 1)
    X = np.zeros((6 * (b1 - b0), 6 * (p1 - p0)))
    output = model.cluster_list[k].output
    for i in range(b0, b1):
        o = output[i] - p0
        X[6 * (i - b0):6 * (i - b0 + 1), 6 * o:6 * o + 6] = data.Xo[i]
    return X


def add_to_parent(model, k, M_child, M_parent, Xo):
    """M_parent += ^kX_parent^T M_child ^kX_parent, blockwise over the output bodies (Chignoli
    et al. 2023 eq. 55)."""
    b0, b1 = model.body_range[k]
    p = model.cluster_list[k].parent
    p0 = model.body_range[p][0]
    output = model.cluster_list[k].output
    for i in range(b0, b1):
        oi = 6 * (output[i] - p0)
        XiT = Xo[i].T
        for j in range(b0, b1):
            oj = 6 * (output[j] - p0)
            block = M_child[6 * (i - b0):6 * (i - b0 + 1), 6 * (j - b0):6 * (j - b0 + 1)]
            M_parent[oi:oi + 6, oj:oj + 6] += XiT @ block @ Xo[j]


def body_inertias(model, k):
    """I_k = blkdiag(I_i) of cluster k (Chignoli et al. 2023 Sec. 1.4)."""
    b0, b1 = model.body_range[k]
    I = np.zeros((6 * (b1 - b0), 6 * (b1 - b0)))
    for i in range(b0, b1):
        I[6 * (i - b0):6 * (i - b0 + 1), 6 * (i - b0):6 * (i - b0 + 1)] = model.inertia[i]
    return I
