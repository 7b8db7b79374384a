"""First-order derivatives of cluster inverse and forward dynamics with respect to the independent
coordinates (the closing section of Chignoli et al. 2023 names them as the cluster framework's next
algorithm).

Spanning tree (world coordinates, after Carpentier & Mansard 2018 and Singh, Russell & Wensing 2022).
A joint's columns S_j are fixed in its body, so moving joint k along its column S_k turns everything
below it: dS_j/dq_k = S_k x S_j for k an ancestor of j or j itself (a right perturbation of a
multi-DoF joint, as pinocchio.integrate). With
  Psid_k = v_lambda(k) x S_k,  Psidd_k = a_lambda(k) x S_k + v_lambda(k) x Psid_k,
  Phi_k = Psid_k + v_k x S_k,
every body i below k moves as dv_i/dq_k = S_k x v_i + Psid_k, da_i/dq_k = S_k x a_i + Psidd_k +
Psid_k x v_i, dv_i/dqd_k = S_k, da_i/dqd_k = S_k x v_i + Phi_k, so its force f_i = I_i a_i +
v_i x* I_i v_i - f_ext,i changes by S_k x* f_i + 2 B_i Psid_k + I_i Psidd_k and 2 B_i S_k + I_i Phi_k,
B_i the body's Coriolis inertia (coriolis.py). Summed over a subtree (composites I^C_j, B^C_j, F_j),
tau_j = S_j^T F_j gives, with k an ancestor of j or j itself,
  dtau_j/dq_k  = S_j^T (2 B^C_j Psid_k + I^C_j Psidd_k),
  dtau_k/dq_j  = S_k^T (S_j x* F_j + 2 B^C_j Psid_j + I^C_j Psidd_j)      (k above j),
  dtau_j/dqd_k = S_j^T (2 B^C_j S_k + I^C_j Phi_k),   dtau_k/dqd_j = S_k^T (2 B^C_j S_j + I^C_j Phi_j),
and dtau/dqdd = H. The rigid term S_k x* F_j of the first line cancels against dS_j/dq_k.

Clusters. tau_y = G^T tau(q, G yd, G ydd + g) with the dependent joints following the independent
ones (dq/dy = G, Chignoli et al. 2023 eq. 3). A loop's G and g move with its own joints only:
along delta = G e_l, K dG = k(delta, G) (K G = 0 differentiated; k(u, w) = -Kdot(u) w, the bilinear
bias of constraints.py), and from K g = k(qd, qd)
  K dg = dk(delta; qd, qd) + k(dqd, qd) + k(qd, dqd) + k(delta, g),   dqd = dG yd,
dk the third-order bias_rate of constraints.py; dg/dyd from K dg = k(G e_l, qd) + k(qd, G e_l).
Then
  dtau_y/dy_l  = G^T (dtau/dq G e_l + dtau/dqd dqd + H (dG ydd + dg)) + dG^T tau,
  dtau_y/dyd   = G^T (dtau/dqd G + H dg/dyd),   H_y = G^T H G.
Forward dynamics: ydd = H_y^-1 (tau_y - C), so dydd/dx = -H_y^-1 dtau_y/dx at ydd, dydd/dtau = H_y^-1.
"""

import numpy as np

from ..multibody.constraints import bias_rate, constraint_jacobian
from ..spatial import cross_force, crm, inverse_transform
from .coriolis import coriolis_inertia, force_cross
from .kinematics import forward_pass


def spanning_derivatives(model, data, qdd):
    """(dtau/dq, dtau/dqd, H, tau) of the spanning tree's RNEA (nv x nv, nv) at the transforms
    and velocities of the last forward pass, spanning accelerations qdd and data.f_ext (module
    docstring)."""
    nb, nv = model.nb, model.nv
    X0 = np.zeros((nb, 6, 6))                    # ^iX_0
    X0[0] = np.eye(6)
    v, a = np.zeros((nb, 6)), np.zeros((nb, 6))
    a[0, 3:] = -model.gravity                    # a_0 = -a_g (gravity trick)
    S, Psid, Psidd, Phi = ([None] * nb for _ in range(4))
    IC, BC, F = np.zeros((nb, 6, 6)), np.zeros((nb, 6, 6)), np.zeros((nb, 6))
    for i in range(1, nb):
        p = model.parent[i]
        cols = slice(model.idx_v[i], model.idx_v[i] + model.nv_body[i])
        X0[i] = data.Xup[i] @ X0[p]
        S[i] = inverse_transform(X0[i]) @ model.S[i]
        Psid[i] = crm(v[p]) @ S[i]
        Psidd[i] = crm(a[p]) @ S[i] + crm(v[p]) @ Psid[i]
        v[i] = v[p] + S[i] @ data.qd[cols]
        a[i] = a[p] + S[i] @ qdd[cols] + Psid[i] @ data.qd[cols]
        Phi[i] = Psid[i] + crm(v[i]) @ S[i]
        I = X0[i].T @ model.inertia[i] @ X0[i]
        IC[i], BC[i] = I, coriolis_inertia(I, v[i])
        F[i] = I @ a[i] + cross_force(v[i], I @ v[i]) - X0[i].T @ data.f_ext[i]
    for i in range(nb - 1, 0, -1):
        p = model.parent[i]
        if p > 0:
            IC[p] += IC[i]
            BC[p] += BC[i]
            F[p] += F[i]
    dq, dqd, H, tau = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv)
    for j in range(1, nb):
        J = slice(model.idx_v[j], model.idx_v[j] + model.nv_body[j])
        tau[J] = S[j].T @ F[j]
        SB, SI = 2.0 * S[j].T @ BC[j], S[j].T @ IC[j]
        below_q = force_cross(F[j]) @ S[j] + 2.0 * BC[j] @ Psid[j] + IC[j] @ Psidd[j]
        below_qd = 2.0 * BC[j] @ S[j] + IC[j] @ Phi[j]
        below_qdd = IC[j] @ S[j]
        k = j
        while k > 0:
            K = slice(model.idx_v[k], model.idx_v[k] + model.nv_body[k])
            dq[J, K] = SB @ Psid[k] + SI @ Psidd[k]
            dqd[J, K] = SB @ S[k] + SI @ Phi[k]
            H[J, K] = SI @ S[k]
            if k != j:
                dq[K, J] = S[k].T @ below_q
                dqd[K, J] = S[k].T @ below_qd
                H[K, J] = S[k].T @ below_qdd
            k = model.parent[k]
    return dq, dqd, H, tau


class LoopSolve:
    """x (n_k) with K x = rhs on a loop cluster's active rows, zero on its independent rows: the
    dependent rows from a QR of K_d (kinematics.explicit_constraint)."""

    def __init__(self, model, data, k):
        c = self.cluster = model.cluster_list[k]
        K, _ = constraint_jacobian(c, data.Xup, model.S)
        self.Q, self.R = np.linalg.qr(K[c.active_rows][:, c.dependent])

    def __call__(self, rhs):
        c = self.cluster
        x = np.zeros((c.n,) + rhs.shape[1:])
        x[c.dependent] = np.linalg.solve(self.R, self.Q.T @ rhs[c.active_rows])
        return x


def inverse_dynamics_derivatives(model, data, q, yd, ydd):
    """(dtau_y/dy, dtau_y/dyd, H_y), each ny x ny, at closed q with data.f_ext (module
    docstring)."""
    forward_pass(model, data, q, yd)
    G = np.zeros((model.nv, model.ny))
    qdd = np.zeros(model.nv)
    for k, ((v0, v1), (y0, y1)) in enumerate(zip(model.v_range, model.y_range)):
        G[v0:v1, y0:y1] = data.G[k]
        qdd[v0:v1] = data.G[k] @ ydd[y0:y1] + data.g[k]
    dq, dqd, H, tau = spanning_derivatives(model, data, qdd)
    d_y, d_yd = G.T @ dq @ G, G.T @ dqd @ G
    for k, cluster in enumerate(model.cluster_list):
        if cluster.linear or cluster.m == 0:
            continue
        (v0, v1), (y0, y1) = model.v_range[k], model.y_range[k]
        dq_y, dyd_y = loop_terms(model, data, k, yd[y0:y1], ydd[y0:y1])
        d_y[:, y0:y1] += G.T @ (dqd[:, v0:v1] @ dq_y.qd + H[:, v0:v1] @ dq_y.qdd)
        d_y[y0:y1, y0:y1] += np.einsum('nml,n->ml', dq_y.G, tau[v0:v1])
        d_yd[:, y0:y1] += G.T @ H[:, v0:v1] @ dyd_y
    return d_y, d_yd, G.T @ H @ G


class LoopRates:
    """Along each independent direction l of a loop cluster: dG (n x m x l), and the changes of
    its spanning velocities (dG yd) and accelerations (dG ydd + dg), n x l each."""

    def __init__(self, G, qd, qdd):
        self.G, self.qd, self.qdd = G, qd, qdd


def loop_terms(model, data, k, yd, ydd):
    """(LoopRates along the cluster's independent positions, dg/dyd (n x m)) of loop cluster k at
    the last forward pass (module docstring)."""
    c = model.cluster_list[k]
    v0, v1 = model.v_range[k]
    G, g, qd = data.G[k], data.g[k], data.qd[v0:v1]
    solve = LoopSolve(model, data, k)

    def bias(u, w):                                    # k(u, w) = -Kdot(u) w
        return constraint_jacobian(c, data.Xup, model.S, w, u)[1]

    dG = np.zeros((c.n, c.m, c.m))
    rates = LoopRates(dG, np.zeros((c.n, c.m)), np.zeros((c.n, c.m)))
    dg_dyd = np.zeros((c.n, c.m))
    for l in range(c.m):
        delta = G[:, l]
        dG[:, :, l] = solve(np.column_stack([bias(delta, G[:, m]) for m in range(c.m)]))
        dqd = dG[:, :, l] @ yd
        dg = solve(bias_rate(c, data.Xup, model.S, delta, qd, qd) + bias(dqd, qd)
                   + bias(qd, dqd) + bias(delta, g))
        rates.qd[:, l] = dqd
        rates.qdd[:, l] = dG[:, :, l] @ ydd + dg
        dg_dyd[:, l] = solve(bias(delta, qd) + bias(qd, delta))
    return rates, dg_dyd


def forward_dynamics_derivatives(model, data, q, yd, ydd):
    """(dydd/dy, dydd/dyd, dydd/dtau_y = H_y^-1) at closed q and the forward dynamics' ydd, with
    data.f_ext."""
    d_y, d_yd, H = inverse_dynamics_derivatives(model, data, q, yd, ydd)
    H_inv = np.linalg.inv(H)
    H_inv = 0.5 * (H_inv + H_inv.T)
    return -H_inv @ d_y, -H_inv @ d_yd, H_inv
