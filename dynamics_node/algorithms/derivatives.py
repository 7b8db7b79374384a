"""First-order derivatives of cluster inverse and forward dynamics, with and without contacts,
with respect to the independent coordinates (the closing section of Chignoli et al. 2023 names
them as the cluster framework's next algorithm).

Spanning tree (world coordinates, after Carpentier & Mansard 2018 and Singh, Russell & Wensing
2022). A joint's columns S_j are fixed in its body, so moving joint k along its column S_k turns
everything below it: dS_j/dq_k = S_k x S_j for k an ancestor of j or j itself (a right
perturbation of a multi-DoF joint, as pinocchio.integrate). With
  Psid_k = v_lambda(k) x S_k,  Psidd_k = a_lambda(k) x S_k + v_lambda(k) x Psid_k,
  Phi_k = Psid_k + v_k x S_k,
every body i below k moves as dv_i/dq_k = S_k x v_i + Psid_k, da_i/dq_k = S_k x a_i + Psidd_k +
Psid_k x v_i, dv_i/dqd_k = S_k, da_i/dqd_k = S_k x v_i + Phi_k, so its force f_i = I_i a_i +
v_i x* I_i v_i - f_ext,i changes by S_k x* f_i + 2 B_i Psid_k + I_i Psidd_k and by
2 B_i S_k + I_i Phi_k, B_i the body's Coriolis inertia (coriolis.py). Summed over a subtree
(composites I^C_j, B^C_j, F_j), tau_j = S_j^T F_j gives, with k an ancestor of j or j itself,
  dtau_j/dq_k  = S_j^T (2 B^C_j Psid_k + I^C_j Psidd_k),
  dtau_k/dq_j  = S_k^T (S_j x* F_j + 2 B^C_j Psid_j + I^C_j Psidd_j)      (k above j),
  dtau_j/dqd_k = S_j^T (2 B^C_j S_k + I^C_j Phi_k),
  dtau_k/dqd_j = S_k^T (2 B^C_j S_j + I^C_j Phi_j),
and dtau/dqdd = H. The rigid term S_k x* F_j of the first line cancels against dS_j/dq_k.

Clusters. tau_y = G^T tau(q, G yd, G ydd + g) with the dependent joints following the
independent ones (dq/dy = G, Chignoli et al. 2023 eq. 3). A loop's G and g move with its own
joints only: along delta = G e_l, K dG = k(delta, G) (K G = 0 differentiated; k(u, w) =
-Kdot(u) w, the bilinear bias of constraints.py), and from K g = k(qd, qd)
  K dg = dk(delta; qd, qd) + k(dqd, qd) + k(qd, dqd) + k(delta, g),   dqd = dG yd,
dk the third-order bias_rate of constraints.py; dg/dyd from K dg = k(G e_l, qd) + k(qd, G e_l).
Then (Chain)
  dtau_y/dy_l = G^T (dtau/dq G e_l + dtau/dqd dqd + H (dG ydd + dg)) + dG^T tau,
  dtau_y/dyd  = G^T (dtau/dqd G + H dg/dyd),   H_y = G^T H G.
Forward dynamics: ydd = H_y^-1 (tau_y - C): dydd/dx = -H_y^-1 dtau_y/dx at ydd,
dydd/dtau = H_y^-1. Contacts: the rows' accelerations differentiated the same way
(contact_derivatives), then the constrained KKT system (constrained_forward_dynamics_derivatives)
or the optimality conditions of the projected inverse dynamics
(projected_inverse_dynamics_derivatives).
"""

from collections import namedtuple

import numpy as np

from ..errors import quote, SingularConfigurationError
from .contacts import add_contact_forces, contact_rows
from ..multibody.constraints import bias_rate, joint_positions, rows_at, translation_of
from ..spatial import cross_force, crm, inverse_transform, skew, SWAP_LINEAR_ANGULAR
from .coriolis import coriolis_inertia, force_cross
from .kinematics import forward_pass


class WorldMotion:
    """The spanning tree's columns and motion in world coordinates at the transforms and velocities
    of the last forward pass and spanning accelerations qdd: X0[i] = ^iX_0, S[i], v[i], a[i] (a_0 =
    -a_g, the gravity trick), Psid[i], Psidd[i], Phi[i] (module docstring)."""

    def __init__(self, model, data, qdd):
        nb = model.nb
        X0, v, a = np.zeros((nb, 6, 6)), np.zeros((nb, 6)), np.zeros((nb, 6))
        X0[0] = np.eye(6)
        a[0, 3:] = -model.gravity
        S, Psid, Psidd, Phi = ([None] * nb for _ in range(4))
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
        self.X0, self.S, self.v, self.a, self.Psid, self.Psidd, self.Phi = (X0, S, v, a, Psid,
                                                                            Psidd, Phi)


def spanning_derivatives(model, motion, f_ext):
    """(dtau/dq, dtau/dqd, H, tau) of the spanning tree's RNEA (nv x nv, nv) in the WorldMotion,
    with the external forces f_ext (nb x 6, body coordinates: they turn with their bodies)
    (module docstring)."""
    nb, nv = model.nb, model.nv
    X0, S, v, a = motion.X0, motion.S, motion.v, motion.a
    Psid, Psidd, Phi = motion.Psid, motion.Psidd, motion.Phi
    IC, BC, F = np.zeros((nb, 6, 6)), np.zeros((nb, 6, 6)), np.zeros((nb, 6))
    for i in range(1, nb):
        I = X0[i].T @ model.inertia[i] @ X0[i]
        IC[i], BC[i] = I, coriolis_inertia(I, v[i])
        F[i] = I @ a[i] + cross_force(v[i], I @ v[i]) - X0[i].T @ f_ext[i]
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
        K, _ = rows_at(model, data, c)
        self.Q, self.R = np.linalg.qr(K[c.active_rows][:, c.dependent])

    def __call__(self, rhs):
        c = self.cluster
        x = np.zeros((c.n,) + rhs.shape[1:])
        x[c.dependent] = np.linalg.solve(self.R, self.Q.T @ rhs[c.active_rows])
        return x


class Chain:
    """The chain rule from the spanning tree to the independent coordinates at the last forward
    pass: G (nv x ny), the spanning accelerations qdd = G ydd + g, and each loop cluster's
    LoopRates and dg/dyd (module docstring)."""

    def __init__(self, model, data, yd, ydd):
        self.G, self.qdd = np.zeros((model.nv, model.ny)), np.zeros(model.nv)
        self.loops = []
        for k, ((v0, v1), (y0, y1)) in enumerate(zip(model.v_range, model.y_range)):
            self.G[v0:v1, y0:y1] = data.G[k]
            self.qdd[v0:v1] = data.G[k] @ ydd[y0:y1] + data.g[k]
            cluster = model.cluster_list[k]
            if not (cluster.linear or cluster.m == 0):
                rates, dg_dyd = loop_terms(model, data, k, yd[y0:y1], ydd[y0:y1])
                self.loops.append((slice(v0, v1), slice(y0, y1), rates, dg_dyd))

    def __call__(self, dq, dqd, dqdd):
        """(dx/dy, dx/dyd, dx/dydd) of x(q(y), G yd, G ydd + g) from its spanning partials."""
        G = self.G
        d_y, d_yd = dq @ G, dqd @ G
        for V, Y, rates, dg_dyd in self.loops:
            d_y[:, Y] += dqd[:, V] @ rates.qd + dqdd[:, V] @ rates.qdd
            d_yd[:, Y] += dqdd[:, V] @ dg_dyd
        return d_y, d_yd, dqdd @ G


def inverse_dynamics_derivatives(model, data, q, yd, ydd):
    """(dtau_y/dy, dtau_y/dyd, H_y), each ny x ny, at closed q with data.f_ext (module
    docstring)."""
    forward_pass(model, data, q, yd)
    chain = Chain(model, data, yd, ydd)
    return independent_derivatives(model, chain, WorldMotion(model, data, chain.qdd), data.f_ext)


def independent_derivatives(model, chain, motion, f_ext, turning=None):
    """(dtau_y/dy, dtau_y/dyd, H_y) from the spanning tree's derivatives in the WorldMotion
    (turning: added to dtau/dq)."""
    dq, dqd, H, tau = spanning_derivatives(model, motion, f_ext)
    if turning is not None:
        dq += turning
    G = chain.G
    d_y, d_yd, d_ydd = (G.T @ d for d in chain(dq, dqd, H))
    for V, Y, rates, _ in chain.loops:              # tau_y = G^T tau: G turns with the loop
        d_y[Y, Y] += np.einsum('nml,n->ml', rates.G, tau[V])
    return d_y, d_yd, d_ydd


LoopRates = namedtuple('LoopRates', 'G qd qdd')
LoopRates.__doc__ = """Along each independent direction l of a loop cluster: dG (n x m x l), and
the changes of its spanning velocities (dG yd) and accelerations (dG ydd + dg), n x l each."""


def loop_terms(model, data, k, yd, ydd):
    """(LoopRates along the cluster's independent positions, dg/dyd (n x m)) of loop cluster k at
    the last forward pass (module docstring)."""
    c = model.cluster_list[k]
    v0, v1 = model.v_range[k]
    G, g, qd = data.G[k], data.g[k], data.qd[v0:v1]
    solve = LoopSolve(model, data, k)

    def bias(u, w):                                    # k(u, w) = -Kdot(u) w
        return rows_at(model, data, c, w, u)[1]

    dG = np.zeros((c.n, c.m, c.m))
    rates = LoopRates(dG, np.zeros((c.n, c.m)), np.zeros((c.n, c.m)))
    dg_dyd = np.zeros((c.n, c.m))
    for l in range(c.m):
        delta = G[:, l]
        dG[:, :, l] = solve(np.column_stack([bias(delta, G[:, m]) for m in range(c.m)]))
        dqd = dG[:, :, l] @ yd
        dg = solve(bias_rate(c, data.Xup, model.S, delta, qd, qd, joint_positions(model, data))
                   + bias(dqd, qd)
                   + bias(qd, dqd) + bias(delta, g))
        rates.qd[:, l] = dqd
        rates.qdd[:, l] = dG[:, :, l] @ ydd + dg
        dg_dyd[:, l] = solve(bias(delta, qd) + bias(qd, delta))
    return rates, dg_dyd


def ancestors(model, body):
    """The moving bodies from body up to the root."""
    out = []
    while body > 0:
        out.append(body)
        body = model.parent[body]
    return out


def at_point(p, m):
    """The linear part at world point p of motion vectors m (columns; [angular; linear] at the
    world origin)."""
    return m[3:] - skew(p) @ m[:3]


def contact_derivatives(model, motion, frames):
    """(dalpha/dq, dalpha/dqd, dalpha/dqdd), rows x nv each, of the contacts' accelerations
    alpha (algorithms/contacts.py: 6D Psi^T ^c1X_0 (a_1 - a_2 + v_1 x v_2), 3D E_c1 (pdd_1 -
    pdd_2) with pdd the classical acceleration of a point) in the WorldMotion, without gravity.
    Moving joint k turns what is below it: da_i/dq_k = S_k x a_i + Psidd_k + Psid_k x v_i and
    dv_i/dq_k = S_k x v_i + Psid_k for k above i; the frame c1 turns by S_k x as well."""
    a = motion.a - motion.a[0]                          # true accelerations: a_0 = 0
    blocks = []
    for c in frames:
        W1 = c.X1 @ motion.X0[c.body1]
        ends = [(c.body1, c.X1 @ motion.X0[c.body1])]
        ends.append((c.body2, W1 if c.X2 is None else c.X2 @ motion.X0[c.body2]))
        below = [set(ancestors(model, b)) for b, _ in ends]
        points = [translation_of(W) for _, W in ends]
        v1, v2 = motion.v[c.body1], motion.v[c.body2]
        dq, dqd, dqdd = (np.zeros((c.rows, model.nv)) for _ in range(3))
        for k in sorted(below[0] | below[1]):
            K = slice(model.idx_v[k], model.idx_v[k] + model.nv_body[k])
            S, Psid = motion.S[k], motion.Psid[k]
            Psidd = motion.Psidd[k] - crm(motion.a[0]) @ S
            moves = [float(k in b) for b in below]
            vb = [motion.v[b] for b, _ in ends]
            dv = [m * (Psid - crm(v) @ S) for m, v in zip(moves, vb)]
            da = [m * (Psidd - crm(a[b]) @ S - crm(v) @ Psid)
                  for m, v, (b, _) in zip(moves, vb, ends)]
            da_qd = [m * (motion.Phi[k] - crm(v) @ S) for m, v in zip(moves, vb)]
            dv_qd = [m * S for m in moves]
            turn = moves[0]
            if c.rows == 6:                     # d(W1 x) = W1 (dx - S_k x x) when c1 turns
                r = a[c.body1] - a[c.body2] + crm(v1) @ v2
                dq[:, K] = SWAP_LINEAR_ANGULAR @ W1 @ (
                    da[0] - da[1] - crm(v2) @ dv[0] + crm(v1) @ dv[1] + turn * crm(r) @ S)
                dqd[:, K] = SWAP_LINEAR_ANGULAR @ W1 @ (
                    da_qd[0] - da_qd[1] - crm(v2) @ dv_qd[0] + crm(v1) @ dv_qd[1])
                dqdd[:, K] = SWAP_LINEAR_ANGULAR @ W1 @ (dv_qd[0] - dv_qd[1])
                continue
            R1 = W1[:3, :3]
            pdd, dpdd_q, dpdd_qd, dpdd_qdd = [], [], [], []
            for end, (b, _) in enumerate(ends):    # pdd = a at p + omega x (v at p)
                p, w, ab = points[end], vb[end][:3], a[b]
                nu = at_point(p, vb[end][:, None])[:, 0]
                pdd.append(at_point(p, ab[:, None])[:, 0] + np.cross(w, nu))
                dp = moves[end] * at_point(p, S)
                dpdd_q.append(at_point(p, da[end]) + skew(ab[:3]) @ dp - skew(nu) @ dv[end][:3]
                              + skew(w) @ (at_point(p, dv[end]) + skew(w) @ dp))
                dpdd_qd.append(at_point(p, da_qd[end]) - skew(nu) @ dv_qd[end][:3]
                               + skew(w) @ at_point(p, dv_qd[end]))
                dpdd_qdd.append(at_point(p, dv_qd[end]))
            relative = pdd[0] - pdd[1]
            dq[:, K] = R1 @ (dpdd_q[0] - dpdd_q[1] + turn * skew(relative) @ S[:3])
            dqd[:, K] = R1 @ (dpdd_qd[0] - dpdd_qd[1])
            dqdd[:, K] = R1 @ (dpdd_qdd[0] - dpdd_qdd[1])
        blocks.append((dq, dqd, dqdd))
    return tuple(np.vstack([b[i] for b in blocks]) for i in range(3))


def forward_dynamics_derivatives(model, data, q, yd, ydd):
    """(dydd/dy, dydd/dyd, dydd/dtau_y = H_y^-1) at closed q and the forward dynamics' ydd, with
    data.f_ext. The held coordinates (idle spins, roles.py) keep zero acceleration: their rows are
    zero and H_y^-1 is that of the free ones (aba.py)."""
    d_y, d_yd, H = inverse_dynamics_derivatives(model, data, q, yd, ydd)
    M = free_inverse(model, H)
    return -M @ d_y, -M @ d_yd, M


def free_coordinates(model):
    """The independent coordinates that are not held (model.held_y)."""
    return np.setdiff1d(np.arange(model.ny), model.held_y)


def free_inverse(model, H):
    """H_y^-1 on the free coordinates, zero on the held ones (symmetric)."""
    free = free_coordinates(model)
    M = np.zeros_like(H)
    M[np.ix_(free, free)] = np.linalg.inv(H[np.ix_(free, free)])
    return 0.5 * (M + M.T)


def forces_held(model, data, q, yd, ydd, frames, forces):
    """(Chain, WorldMotion, (dtau_y/dy, dtau_y/dyd, H_y)) at (q, yd, ydd) with the contacts'
    forces held on their bodies (reaction_turning), data.f_ext the other wrenches."""
    forward_pass(model, data, q, yd)
    chain = Chain(model, data, yd, ydd)
    motion = WorldMotion(model, data, chain.qdd)
    f_ext = data.f_ext.copy()
    add_contact_forces(model, f_ext, contact_rows(model, data, frames), forces)
    return chain, motion, independent_derivatives(
        model, chain, motion, f_ext, reaction_turning(model, motion, frames, forces))


def reaction_turning(model, motion, frames, forces):
    """The part of dtau/dq (nv x nv) that holding the contact forces in their bodies' coordinates
    misses: the reaction phi_2 on a contact's second body is held in c1's frame, so it turns with
    body 1 (a 3D contact's point of application, c2's origin, moves with body 2). With
    tau_j = -S_j^T phi_2 for j above body 2, the correction is -S_j^T (dphi_2 - S_k x* phi_2)
    where spanning_derivatives took dphi_2 = S_k x* phi_2 for k above body 2."""
    turning = np.zeros((model.nv, model.nv))
    for c, lam in zip(frames, forces):
        if c.body2 == 0:
            continue
        W1 = c.X1 @ motion.X0[c.body1]
        above1, above2 = set(ancestors(model, c.body1)), ancestors(model, c.body2)
        if c.rows == 6:
            phi = -W1.T @ SWAP_LINEAR_ANGULAR @ lam
        else:
            p2, g = translation_of(c.X2 @ motion.X0[c.body2]), -W1[:3, :3].T @ lam
            phi = np.concatenate((np.cross(p2, g), g))
        for k in above1 | set(above2):
            K = slice(model.idx_v[k], model.idx_v[k] + model.nv_body[k])
            S = motion.S[k]
            if c.rows == 6:
                d_phi = float(k in above1) * force_cross(phi) @ S
            else:
                dg = float(k in above1) * -skew(g) @ S[:3]
                dp = float(k in above2) * at_point(p2, S)
                d_phi = np.vstack((skew(p2) @ dg - skew(g) @ dp, dg))
            missed = d_phi - float(k in above2) * force_cross(phi) @ S
            for j in above2:
                turning[model.idx_v[j]:model.idx_v[j] + model.nv_body[j], K] -= \
                    motion.S[j].T @ missed
    return turning


def constrained_forward_dynamics_derivatives(model, data, q, yd, ydd, frames, forces):
    """(dydd/dy, dydd/dyd, dydd/dtau_y) of the exact contact route's accelerations ydd with the
    contact forces (per contact, as the route gives them), data.f_ext the other wrenches.
    Differentiating H_y ydd + C - J^T lambda = tau_y (lambda held: forces on their bodies) and
    alpha(q, yd, ydd) = 0 gives [[H_y, -J^T], [J, 0]] [dydd; dlambda] = -[dtau_y; dalpha]:
    dlambda = D^-1 (J H_y^-1 dtau_y - dalpha), dydd = H_y^-1 (J^T dlambda - dtau_y), D the
    Delassus matrix J H_y^-1 J^T (computeConstraintDynamicsDerivatives on trees)."""
    chain, motion, (d_y, d_yd, H) = forces_held(model, data, q, yd, ydd, frames, forces)
    alpha_y, alpha_yd, J = chain(*contact_derivatives(model, motion, frames))
    M = free_inverse(model, H)
    JM = J @ M
    D = JM @ J.T

    def solved(dtau, dalpha):
        return M @ (J.T @ np.linalg.solve(D, JM @ dtau - dalpha) - dtau)
    return solved(d_y, alpha_y), solved(d_yd, alpha_yd), M - JM.T @ np.linalg.solve(D, JM)


def projected_inverse_dynamics_derivatives(model, data, q, yd, ydd, frames, efforts, forces,
                                           weights):
    """(dtau/dy, dtau/dyd, dtau/dydd) of the projected inverse dynamics' efforts tau (ny, zero
    off the actuated rows a) and contact forces lambda (per contact) at (q, yd, ydd), data.f_ext
    the other wrenches.

    The efforts minimize 1/2 tau_a^T W tau_a subject to S^T tau_a + J^T lambda = tau_id (W =
    diag(weights_a), S the actuated rows; contacts.inverse_dynamics). Its optimality conditions
    [[W, 0, -S], [0, 0, -J], [S^T, J^T, 0]] [tau_a; lambda; mu] = [0; 0; tau_id], differentiated
    with lambda and mu held in the products, give the same matrix on [dtau_a; dlambda; dmu] with
    the right side [0; dJ mu; dtau_id - dJ^T lambda]: the last from the inverse dynamics with the
    contact forces on the bodies, dJ mu = d(alpha_y)/dy at ydd = mu minus at ydd = 0 (alpha is
    affine in ydd). Raises SingularConfigurationError where the matrix is singular: redundant
    contacts, whose forces are not determined, or rows no effort nor force reaches."""
    chain, motion, (D_y, D_yd, D_ydd) = forces_held(model, data, q, yd, ydd, frames, forces)
    J_spanning = contact_derivatives(model, motion, frames)[2]
    J = J_spanning @ chain.G
    actuated, kept = model.actuated_y, free_coordinates(model)     # held rows carry nothing
    na, m, ny, nk = actuated.size, J.shape[0], model.ny, kept.size
    S = np.eye(ny)[actuated][:, kept]
    A = np.block([[np.diag(weights[actuated]), np.zeros((na, m)), -S],
                  [np.zeros((m, na + m)), -J[:, kept]],
                  [S.T, J[:, kept].T, np.zeros((nk, nk))]])
    if np.linalg.matrix_rank(A) < A.shape[0]:
        raise SingularConfigurationError(
            f'contacts {quote([c.name for c in frames])}: the projected inverse dynamics is not '
            'differentiable here (redundant contacts, whose forces are not determined, or rows '
            'that no effort nor contact force reaches)')
    tau_id = efforts + J.T @ np.concatenate(forces)
    mu = np.zeros(ny)
    mu[kept] = np.linalg.solve(A, np.concatenate((np.zeros(na + m), tau_id[kept])))[na + m:]
    g = chain.qdd - chain.G @ ydd
    turning_mu = (contact_derivatives(model, WorldMotion(model, data, g + chain.G @ mu), frames)[0]
                  - contact_derivatives(model, WorldMotion(model, data, g), frames)[0])
    dJ_mu = turning_mu @ chain.G
    for V, Y, rates, _ in chain.loops:
        dJ_mu[:, Y] += J_spanning[:, V] @ np.einsum('nml,m->nl', rates.G, mu[Y])
    out = []
    for E, D in ((dJ_mu, D_y), (np.zeros((m, ny)), D_yd), (np.zeros((m, ny)), D_ydd)):
        d_tau = np.zeros((ny, ny))
        d_tau[actuated] = np.linalg.solve(A, np.vstack((np.zeros((na, ny)), E, D[kept])))[:na]
        out.append(d_tau)
    return tuple(out)
