"""Contact derivative kernels, the twins of the contact part of algorithms/derivatives.py: the
derivatives of the contacts' accelerations (contact_derivatives) and the turning of the
reactions held on a second body (reaction_turning) become rows nv... of the spanning partials
w.dq, w.dqd, w.H of a DerivativeWorkspace made with the contacts' rows (derivatives.py), which
chain_rule maps to the independent coordinates with the tree's; then the constrained KKT system of
the exact route (constrained_forward_dynamics_derivatives) or the optimality conditions of the
projected inverse dynamics (projected_inverse_dynamics_derivatives). The contacts are those of
an LcabaPlan p built with them (flat/lcaba.py): contact n of constraint con has the entries e0
(its body1) and e0 + 1 (body2, 0 for the world), the frames ^c1X_body1 and ^c2X_body2
(contact_E1, contact_r1, contact_E2, contact_r2) and the rows con_row0[con] - b.sizes[0]... of
ContactBuffers b.

Vectors are root-frame, [angular; linear] (world_motion); a transform (E, r) = ^cX_0 puts c's
origin at the world point r."""

from numba import njit

from .aba import spanning_accelerations
from .cache import key_on_helpers
from .contact_dynamics import contact_wrenches, SINGULAR_DELASSUS
from .dense import (apply_q, cholesky_pivots, cholesky_solve_rows, dot, FASTMATH,
                    householder_qr, rank, solve_upper, subtract_scaled)
from .derivatives import (add3, chain_rule, cross3, dependent_solve, first_column, free_inverse,
                          free_solve, spanning_derivatives, world_composites, world_motion)
from .frames import link_transforms
from .joints import joint_nv
from .kinematics import constraint_bias, LOOP, loop_constraint, OK
from .spatial import (add_scaled, combination, cross_force, cross_motion, dot6, product,
                      rotated_back, transform_at, transformed_motion, transposed_force)
from .tuples import block3, mul_vector3, row3, row6, scale6, sub6

key_on_helpers(__file__)

EPSILON = 2.220446049250313e-16             # the float64 machine epsilon


@njit(inline='always', error_model='numpy')
def moves(m, k, body):
    """Joint k is body's or an ancestor's: it moves body (never the world's, body 0)."""
    while body > 0:
        if body == k:
            return True
        body = m.parent[body]
    return False


@njit(inline='always', error_model='numpy')
def at_point(p, x):
    """The linear part at world point p of motion x: x_lin - p x x_ang (algorithms at_point)."""
    return (x[3] - (p[1] * x[2] - p[2] * x[1]), x[4] - (p[2] * x[0] - p[0] * x[2]),
            x[5] - (p[0] * x[1] - p[1] * x[0]))


@njit(inline='always', error_model='numpy')
def scale3(s, a):
    return (s * a[0], s * a[1], s * a[2])


@njit(inline='always', error_model='numpy')
def frames_of(m, d, p, con):
    """(body1, body2, ^c1X_0, ^c2X_0) of the contact of constraint con (c2 = c1 for the world)."""
    n, e0 = p.con_contact[con], p.con_entries[con, 0]
    body1, body2 = p.entry_body[e0], p.entry_body[e0 + 1]
    E, r = transform_at(d.root_E, d.root_r, body1)
    W1 = product(block3(p.contact_E1, n, 0, 0), row3(p.contact_r1, n), E, r)
    W2 = W1
    if p.contact_world[n] == 0:
        E, r = transform_at(d.root_E, d.root_r, body2)
        W2 = product(block3(p.contact_E2, n, 0, 0), row3(p.contact_r2, n), E, r)
    return body1, body2, W1, W2


@njit(inline='always', error_model='numpy')
def end_rates(on, S, Psid, Psidd, Phi, v, a):
    """The rates of one end body (velocity v, acceleration a) as joint k moves along S (on: 1.0
    where it moves that body): dv/dq, da/dq, da/dqd and dv/dqd (algorithms contact_derivatives)."""
    dv = scale6(on, add_scaled(Psid, -1.0, cross_motion(v, S)))
    da = scale6(on, combination(1.0, Psidd, -1.0, cross_motion(a, S), -1.0, cross_motion(v, Psid)))
    da_qd = scale6(on, add_scaled(Phi, -1.0, cross_motion(v, S)))
    return dv, da, da_qd, scale6(on, S)


@njit(inline='always', error_model='numpy')
def point_rates(on, point, S, v, a, dv, da, da_qd, dv_qd):
    """The rates of the classical acceleration pdd = a at p + w x (v at p) of a point fixed on an
    end body: d/dq (the point moving with the body by S at p), d/dqd, d/dqdd."""
    w, nu = (v[0], v[1], v[2]), at_point(point, v)
    dp = scale3(on, at_point(point, S))
    d_q = add3(add3(add3(at_point(point, da), cross3((a[0], a[1], a[2]), dp)),
                    cross3(nu, (dv[0], dv[1], dv[2])), -1.0),
               cross3(w, add3(at_point(point, dv), cross3(w, dp))))
    d_qd = add3(add3(at_point(point, da_qd), cross3(nu, (dv_qd[0], dv_qd[1], dv_qd[2])), -1.0),
                cross3(w, at_point(point, dv_qd)))
    return d_q, d_qd, at_point(point, dv_qd)


@njit(inline='always', error_model='numpy')
def classical(point, v, a):
    """The classical acceleration a at p + w x (v at p) of a point."""
    return add3(at_point(point, a), cross3((v[0], v[1], v[2]), at_point(point, v)))


@njit(error_model='numpy')
def contact_derivatives(m, d, p, w, b):
    """Rows nv + i of w.dq, w.dqd, w.H (i the contacts' rows of b): dalpha/dq, dalpha/dqd and
    dalpha/dqdd of the contacts' accelerations alpha in the root-frame motion of world_motion,
    gravity removed (a_i - a_0; algorithms/derivatives.contact_derivatives): 6D Psi^T ^c1X_0
    (a_1 - a_2 + v_1 x v_2), 3D E_c1 (pdd_1 - pdd_2); the frame c1 turns with body1's joints."""
    nv, row0, vw, aw, parent, joint = w.Sw.shape[0], b.sizes[0], w.vw, w.aw, m.parent, m.joint
    a0 = row6(aw, 0)
    for con in range(len(p.con_rows)):
        if p.con_contact[con] < 0:
            continue
        rows, top = p.con_rows[con], nv + p.con_row0[con] - row0
        body1, body2, W1, W2 = frames_of(m, d, p, con)
        E1, r1 = W1
        r2 = W2[1]
        v1, v2 = row6(vw, body1), row6(vw, body2)
        a1, a2 = add_scaled(row6(aw, body1), -1.0, a0), add_scaled(row6(aw, body2), -1.0, a0)
        relative6 = add_scaled(sub6(a1, a2), 1.0, cross_motion(v1, v2))
        relative3 = add3(classical(r1, v1, a1), classical(r2, v2, a2), -1.0)
        for r in range(rows):
            for c in range(nv):
                w.dq[top + r, c] = w.dqd[top + r, c] = w.H[top + r, c] = 0.0
        for end in range(2):
            k = body1 if end == 0 else body2
            while k > 0 and not (end == 1 and moves(m, k, body1)):   # body2's above: body1's
                on1, on2 = 1.0 if end == 0 else 0.0, 1.0 if moves(m, k, body2) else 0.0
                for j in range(joint_nv(joint[k])):
                    K = first_column(m, k) + j
                    S, Psid, Phi = row6(w.Sw, K), row6(w.Psid, K), row6(w.Phi, K)
                    Psidd = add_scaled(row6(w.Psidd, K), -1.0, cross_motion(a0, S))
                    dv1, da1, da_qd1, dv_qd1 = end_rates(on1, S, Psid, Psidd, Phi, v1, a1)
                    dv2, da2, da_qd2, dv_qd2 = end_rates(on2, S, Psid, Psidd, Phi, v2, a2)
                    if rows == 6:               # d(W1 x) = W1 (dx - S x x) as c1 turns
                        x_q = add_scaled(add_scaled(add_scaled(sub6(da1, da2), -1.0,
                                                               cross_motion(v2, dv1)),
                                                    1.0, cross_motion(v1, dv2)),
                                         on1, cross_motion(relative6, S))
                        x_qd = add_scaled(add_scaled(sub6(da_qd1, da_qd2), -1.0,
                                                     cross_motion(v2, dv_qd1)),
                                          1.0, cross_motion(v1, dv_qd2))
                        y_q, y_qd = transformed_motion(E1, r1, x_q), transformed_motion(
                            E1, r1, x_qd)
                        y_qdd = transformed_motion(E1, r1, sub6(dv_qd1, dv_qd2))
                        for row in range(6):    # Psi^T: [linear; angular]
                            e = (row + 3) % 6
                            w.dq[top + row, K], w.dqd[top + row, K] = y_q[e], y_qd[e]
                            w.H[top + row, K] = y_qdd[e]
                        continue
                    q1, qd1, qdd1 = point_rates(on1, r1, S, v1, a1, dv1, da1, da_qd1, dv_qd1)
                    q2, qd2, qdd2 = point_rates(on2, r2, S, v2, a2, dv2, da2, da_qd2, dv_qd2)
                    y_q = mul_vector3(E1, add3(add3(q1, q2, -1.0),
                                               scale3(on1, cross3(relative3, (S[0], S[1], S[2])))))
                    y_qd = mul_vector3(E1, add3(qd1, qd2, -1.0))
                    y_qdd = mul_vector3(E1, add3(qdd1, qdd2, -1.0))
                    for row in range(3):
                        w.dq[top + row, K], w.dqd[top + row, K] = y_q[row], y_qd[row]
                        w.H[top + row, K] = y_qdd[row]
                k = parent[k]


@njit(error_model='numpy')
def reaction_turning(m, d, p, w, b):
    """w.dq (the tree's rows) += what holding the contact forces b.lam in their bodies' coordinates
    misses (algorithms/derivatives.reaction_turning): the reaction phi_2 on a contact's second
    body is held in c1's frame, so it turns with body 1 (a 3D contact's point of application, c2's
    origin, moves with body 2): -S_j^T (dphi_2 - S_k x* phi_2) for j above body 2."""
    row0, parent, joint, Sw = b.sizes[0], m.parent, m.joint, w.Sw
    for con in range(len(p.con_rows)):
        if p.con_contact[con] < 0:
            continue
        body1, body2, W1, W2 = frames_of(m, d, p, con)
        E1, r1, p2 = W1[0], W1[1], W2[1]
        if body2 == 0:
            continue
        rows, l0 = p.con_rows[con], p.con_row0[con] - row0
        lam = b.lam
        if rows == 6:                           # Psi lambda: [angular; linear]
            phi = scale6(-1.0, transposed_force(E1, r1, (lam[l0 + 3], lam[l0 + 4], lam[l0 + 5],
                                                         lam[l0], lam[l0 + 1], lam[l0 + 2])))
            g = (phi[3], phi[4], phi[5])
        else:
            g = scale3(-1.0, rotated_back(E1, (lam[l0], lam[l0 + 1], lam[l0 + 2])))
            n = cross3(p2, g)
            phi = (n[0], n[1], n[2], g[0], g[1], g[2])
        for end in range(2):
            k = body1 if end == 0 else body2
            while k > 0 and not (end == 1 and moves(m, k, body1)):
                on1, on2 = 1.0 if end == 0 else 0.0, 1.0 if moves(m, k, body2) else 0.0
                for i in range(joint_nv(joint[k])):
                    K = first_column(m, k) + i
                    S = row6(Sw, K)
                    if rows == 6:
                        d_phi = scale6(on1, cross_force(S, phi))
                    else:
                        dg = scale3(-on1, cross3(g, (S[0], S[1], S[2])))
                        dp = scale3(on2, at_point(p2, S))
                        dn = add3(cross3(p2, dg), cross3(g, dp), -1.0)
                        d_phi = (dn[0], dn[1], dn[2], dg[0], dg[1], dg[2])
                    missed = add_scaled(d_phi, -on2, cross_force(S, phi))
                    j = body2
                    while j > 0:
                        for c in range(joint_nv(joint[j])):
                            J = first_column(m, j) + c
                            w.dq[J, K] -= dot6(row6(Sw, J), missed)
                        j = parent[j]
                k = parent[k]


@njit(error_model='numpy')
def forces_held(m, d, p, w, b, yd, ydd):
    """The inverse dynamics derivatives at (yd, ydd) with the contact forces held on their bodies
    (b.f) into w.d_y, w.d_yd, w.d_ydd, and the contacts' rows below the tree's in w.T_y, w.T_yd,
    w.T_ydd (J) (algorithms/derivatives.forces_held): d.qdd = G ydd + g, the root-frame motion,
    the spanning partials with the contact rows and the reactions' turning, the chain rule."""
    spanning_accelerations(m, d, ydd)
    link_transforms(m, d)
    world_motion(m, d, w)
    world_composites(m, d, w, b.f)
    spanning_derivatives(m, w)
    contact_derivatives(m, d, p, w, b)
    reaction_turning(m, d, p, w, b)
    return chain_rule(m, d, w, yd, ydd)


@njit(error_model='numpy', fastmath=FASTMATH)
def kkt_rates(m, w, b, dtau, dalpha, out):
    """out (ny x ny) <- H^-1 (J^T D^-1 (J H^-1 dtau - dalpha) - dtau): the accelerations' rates
    from the differentiated KKT system, dalpha the contact rows of a T matrix (rows nv...), J those
    of w.T_ydd, J H^-1 in b.JM, D's factor in b.L, H's in w.Hf (free_solve); by whole rows (1-d
    views), through b.Z_rates (m x ny)."""
    nv, ny, nc, J, JM, Z = w.Sw.shape[0], m.ny, b.sizes[1], w.T_ydd, b.JM, b.Z_rates
    for i in range(nc):
        row = Z[i]
        for c in range(ny):
            row[c] = -dalpha[nv + i, c]
        for a in range(ny):
            subtract_scaled(row, -JM[i, a], dtau[a])
    cholesky_solve_rows(b.L, nc, Z)
    for a in range(ny):
        row = out[a]
        for c in range(ny):
            row[c] = -dtau[a, c]
        for i in range(nc):
            subtract_scaled(row, -J[nv + i, a], Z[i])
    free_solve(m, w, out)


@njit(error_model='numpy')
def constrained_forward_dynamics_derivatives(m, d, p, w, b, yd):
    """After the exact route (contact_dynamics.exact_forward_dynamics: d.qdd, the contact forces
    b.lam and b.f, the external forces with them on their bodies): its ydd into d.ydd, dydd/dy,
    dydd/dyd and dydd/dtau_y = H^-1 - H^-1 J^T D^-1 J H^-1 into w.fd_y, w.fd_yd, w.H_inv, D = J
    H^-1 J^T (algorithms/derivatives.constrained_forward_dynamics_derivatives: the KKT system
    differentiated with the forces held on their bodies). SINGULAR_DELASSUS where D's Cholesky
    fails; NaN where H_y's does (free_inverse)."""
    nv, ny, nc = w.Sw.shape[0], m.ny, b.sizes[1]
    for j in range(ny):
        d.ydd[j] = d.qdd[m.independent_v[j]]
    status = forces_held(m, d, p, w, b, yd, d.ydd)
    if status != OK:
        return status
    free_inverse(m, w)
    M, J, JM, D, Z = w.H_inv, w.T_ydd, b.JM, b.D, b.Z_rates
    for i in range(nc):                                          # J H^-1
        row = JM[i]
        row[:] = 0.0
        for a in range(ny):
            subtract_scaled(row, -J[nv + i, a], M[a])
    for i in range(nc):                                          # D's lower triangle
        for j in range(i + 1):
            D[i, j] = dot(JM[i], J[nv + j, :ny])
    if not cholesky_pivots(D, b.L, nc) > 0.0:
        return SINGULAR_DELASSUS
    kkt_rates(m, w, b, w.d_y, w.T_y, w.fd_y)
    kkt_rates(m, w, b, w.d_yd, w.T_yd, w.fd_yd)
    Z[:, :] = JM                                                 # H^-1 - JM^T D^-1 JM
    cholesky_solve_rows(b.L, nc, Z)
    for i in range(nc):
        for a in range(ny):
            subtract_scaled(M[a], JM[i, a], Z[i])
    return OK


@njit(error_model='numpy')
def projected_kkt(m, w, b, weights):
    """The optimality conditions of the projected inverse dynamics (algorithms/derivatives
    .projected_inverse_dynamics_derivatives), A = [[W, 0, -S], [0, 0, -J_k], [S^T, J_k^T, 0]] on
    [tau_a; lambda; mu_k] (W = diag(weights_a), S the actuated rows, J_k the free columns of J,
    the rows of w.T_ydd below the tree's), into b.kkt by columns, factored by a pivoted QR: its
    size n, or -1 where A is numerically singular (its rank, as numpy's matrix_rank judges,
    below n)."""
    nv, na, nc, nk = w.Sw.shape[0], len(b.actuated), b.sizes[1], 0
    free, J, At = m.free_y, w.T_ydd, b.kkt
    for y in range(m.ny):
        if free[y] != 0.0:
            b.kept[nk] = y
            nk += 1
    n = na + nc + nk
    At[:n, :n] = 0.0
    for i in range(na):                       # tau_a's columns: W and S^T
        At[i, i] = weights[b.actuated[i]]
        for k in range(nk):
            if b.kept[k] == b.actuated[i]:
                At[i, na + nc + k] = 1.0
    for r in range(nc):                       # lambda's: J_k^T
        for k in range(nk):
            At[na + r, na + nc + k] = J[nv + r, b.kept[k]]
    for k in range(nk):                       # mu's: -S and -J_k
        for i in range(na):
            if b.kept[k] == b.actuated[i]:
                At[na + nc + k, i] = -1.0
        for r in range(nc):
            At[na + nc + k, na + r] = -J[nv + r, b.kept[k]]
    householder_qr(At, n, n, b.beta_k, b.perm_k, True)
    if n and rank(At, n, n, n * EPSILON * abs(At[0, 0])) < n:
        return -1
    return n


@njit(error_model='numpy')
def kkt_solve(b, n, u, x):
    """x (n) <- A^-1 u of the factored projected_kkt (u overwritten)."""
    apply_q(b.kkt, n, n, b.beta_k, u, True)
    solve_upper(b.kkt, n, u, False)
    for j in range(n):
        x[b.perm_k[j]] = u[j]


@njit(error_model='numpy', fastmath=FASTMATH)
def effort_rows(b, n, na):
    """b.kkt_rows[i] <- A^-T e_i of the factored projected_kkt for the efforts' rows i < na, each
    effort's row of A^-1: with A P = Q R, A^-T = Q R^-T P^T."""
    for i in range(na):
        y = b.kkt_rows[i, :n]
        for j in range(n):
            y[j] = 1.0 if b.perm_k[j] == i else 0.0
        solve_upper(b.kkt, n, y, True)
        apply_q(b.kkt, n, n, b.beta_k, y, False)


@njit(error_model='numpy')
def forces_turning(m, d, p, w, b, mu):
    """b.dJ_mu (nc x ny) <- d(J mu)/dy, mu held (projected_inverse_dynamics_derivatives): the
    contact rows' dalpha/dq at G mu + g less that at g (alpha is affine in the accelerations),
    mapped by G, plus J_k dG mu on each LOOP cluster, dG mu = K_d^-1 k(G e_l, G mu) along each of
    its independent directions l (loop_terms' dG, bilinear in its second argument)."""
    nv, nc, T, dJ, rhs, x = w.Sw.shape[0], b.sizes[1], b.turning, b.dJ_mu, w.rhs, w.rate_qd
    spanning_accelerations(m, d, mu)
    world_motion(m, d, w)
    contact_derivatives(m, d, p, w, b)
    for i in range(nc):
        T[i, :] = w.dq[nv + i, :]
    spanning_accelerations(m, d, d.zero_y)
    world_motion(m, d, w)
    contact_derivatives(m, d, p, w, b)
    for i in range(nc):
        for c in range(nv):
            T[i, c] -= w.dq[nv + i, c]
    for k in range(len(m.kind)):
        v0, y0, mk, n = m.v_range[k, 0], m.y_range[k, 0], m.y_range[k, 1] - m.y_range[k, 0], \
            m.v_range[k, 1] - m.v_range[k, 0]
        for i in range(nc):
            for j in range(mk):
                s = 0.0
                for r in range(n):
                    s += T[i, v0 + r] * d.G[k, j, r]
                dJ[i, y0 + j] = s
        if m.kind[k] != LOOP or mk == 0:
            continue
        status = loop_constraint(m, d, k, d.zero_y, False)      # K_d's QR into d.QR
        if status != OK:
            return status
        G, Gmu = d.G[k], w.rate_qdd
        for r in range(n):
            s = 0.0
            for j in range(mk):
                s += G[j, r] * mu[y0 + j]
            Gmu[r] = s
        for l in range(mk):
            constraint_bias(m, d, k, G[l], Gmu, rhs)
            dependent_solve(m, d, k, rhs, x)
            for i in range(nc):
                s = 0.0
                for r in range(n):
                    s += w.H[nv + i, v0 + r] * x[r]
                dJ[i, y0 + l] += s
    return OK


@njit(error_model='numpy')
def projected_inverse_dynamics_derivatives(m, d, p, pw, w, b, yd, ydd, weights):
    """After projected inverse dynamics (contact_dynamics.inverse_dynamics: b.efforts, b.lam) at
    (yd, ydd): d tau/dy, dtau/dyd and dtau/dydd of its efforts into b.dtau_y, b.dtau_yd,
    b.dtau_ydd (algorithms/derivatives.projected_inverse_dynamics_derivatives): the inverse
    dynamics' derivatives with the contact forces held on their bodies (b.f), the contacts' rows
    and their turning (forces_turning), solved through the optimality conditions (projected_kkt).
    SINGULAR_DELASSUS where those are singular (redundant contacts, or rows no effort nor force
    reaches): the NumPy algorithm then names it."""
    nv, na, nc = w.Sw.shape[0], len(b.actuated), b.sizes[1]
    contact_wrenches(p, pw, b, d.f_ext)
    status = forces_held(m, d, p, w, b, yd, ydd)
    if status != OK:
        return status
    n = projected_kkt(m, w, b, weights)
    if n < 0:
        return SINGULAR_DELASSUS
    nk, J, u, x, mu = n - na - nc, w.T_ydd, b.kkt_u, b.kkt_x, b.mu
    for j in range(n):
        u[j] = 0.0
    for k in range(nk):                      # tau_id = efforts + J^T lambda on the free rows
        y = b.kept[k]
        s = b.efforts[y]
        for i in range(nc):
            s += J[nv + i, y] * b.lam[i]
        u[na + nc + k] = s
    kkt_solve(b, n, u, x)
    mu[:] = 0.0
    for k in range(nk):
        mu[b.kept[k]] = x[na + nc + k]
    status = forces_turning(m, d, p, w, b, mu)
    if status != OK:
        return status
    effort_rows(b, n, na)
    for D, out in ((w.d_y, b.dtau_y), (w.d_yd, b.dtau_yd), (w.d_ydd, b.dtau_ydd)):
        out[:, :] = 0.0
        for i in range(na):                  # e_i^T A^-1 [0; E; D_k] = y_i . [0; E; D_k]
            row, y = out[b.actuated[i]], b.kkt_rows[i]
            for k in range(nk):
                subtract_scaled(row, -y[na + nc + k], D[b.kept[k]])
    for i in range(na):                      # E = d(J mu)/dy on the position rates alone
        row, y = b.dtau_y[b.actuated[i]], b.kkt_rows[i]
        for r in range(nc):
            subtract_scaled(row, -y[na + r], b.dJ_mu[r])
    return OK
