"""Cluster kinematics kernels (algorithms/kinematics.py; Chignoli et al. 2023, Alg. 1 lines 1-19):
body transforms, each cluster's output transforms, the loop constraints' rows K and bias k in the
cluster's output frame, the explicit constraint G_k, g_k from the sparse QR of K_d (with its
conditioning and amplification checks), and the forward pass (S_k, v, c). The fused public calls
pass q = None: their position check left d.Xup at q."""

import math

from numba import njit

from .cache import key_on_helpers
from .codes import AMPLIFIED, D_ILL_CONDITIONED, D_NOT_POSITIVE, OK, SINGULAR_SPLIT  # noqa: F401
from .expressions import implicit_mixed, implicit_rows
from .joints import joint_column, joint_motion, joint_nv, joint_transform
from .linalg import dependent_least_squares, qr_solve
from .spatial import (add_scaled, compose, cross_motion, dot6, IDENTITY, inverse_motion, product,
                      rotated_back, transform_at, transformed_motion, transposed_force, ZERO6)

key_on_helpers(__file__)

SINGLE, COUPLED, LOOP = 0, 1, 2          # cluster kinds: one body (G = 1); constant G, g = 0; G(q)


@njit(error_model='numpy')
def update_transforms(m, d, q):
    """Xup of every body (body_transforms)."""
    body_transforms(m, d, q, 1, len(m.joint))


@njit(error_model='numpy')
def body_transforms(m, d, q, b0, b1):
    """Xup[i] = X_J(q_i) X_tree(i) of bodies b0..b1-1: E = E_J E_T, r = r_T + E_T^T r_J
    (kinematics.py). A revolute joint about +-e_a turns by the angle t = +-q; E_J = R(e_a, t)^T
    then only mixes the rows b, c (a, b, c cyclic): E[b] = cos t E_T[b] + sin t E_T[c],
    E[c] = cos t E_T[c] - sin t E_T[b], r = r_T."""
    joint, axes, coordinate_axis, idx_q, tree_E, tree_r = m.joint, m.axes, m.coordinate_axis, \
        m.idx_q, m.tree_E, m.tree_r
    Xup_E, Xup_r, EJ, q_body = d.Xup_E, d.Xup_r, d.E3, d.q_body
    for i in range(b0, b1):
        q_body[i] = q[idx_q[i]]                   # read by the implicit constraints
        a = coordinate_axis[i]
        if a < 0:
            rJ = joint_transform(joint[i], axes[i], q, idx_q[i], EJ)
            compose(EJ, rJ, tree_E[i], tree_r[i], Xup_E[i], Xup_r[i])
            continue
        angle = q[idx_q[i]] * axes[i, 2, a]
        sin, cos, b, c = math.sin(angle), math.cos(angle), (a + 1) % 3, (a + 2) % 3
        for col in range(3):
            tb, tc = tree_E[i, b, col], tree_E[i, c, col]
            Xup_E[i, a, col] = tree_E[i, a, col]
            Xup_E[i, b, col] = cos * tb + sin * tc
            Xup_E[i, c, col] = cos * tc - sin * tb
            Xup_r[i, col] = tree_r[i, col]


# ---- cluster kinematics (kinematics.py; Chignoli et al. 2023, Alg. 1 lines 1-19) ----

@njit(inline='always', error_model='numpy')
def set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r):
    """Xo[i] = ^iX_output(i) from Xup[i] = (E, r): Xup[i] Xo[parent(i)] where the parent is in the
    cluster, else Xup[i] (kinematics.py cluster_motion; parents first)."""
    p = parent[i]
    if p >= body_range[cluster[i], 0]:
        E_o, r_o = transform_at(Xo_E, Xo_r, p)
        E, r = product(E, r, E_o, r_o)
    for a in range(3):
        for b in range(3):
            Xo_E[i, a, b] = E[3 * a + b]
        Xo_r[i, a] = r[a]


@njit(error_model='numpy')
def output_transforms(m, d, b0, b1):
    """Xo of the bodies b0..b1-1 (whole clusters)."""
    parent, cluster, body_range, Xup_E, Xup_r, Xo_E, Xo_r = m.parent, m.cluster, m.body_range, \
        d.Xup_E, d.Xup_r, d.Xo_E, d.Xo_r
    for i in range(b0, b1):
        E, r = transform_at(Xup_E, Xup_r, i)
        set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r)


@njit(error_model='numpy')
def loop_output_transforms(m, d):
    """Xo of the bodies of every LOOP cluster, which their constraint rows and closure checks
    read."""
    for k in range(len(m.kind)):
        if m.kind[k] == LOOP:
            output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])


@njit(inline='always', error_model='numpy')
def output_frame(m, d, k, body):
    """^bodyX_output of a body of cluster k or of its output body (the identity) as tuples."""
    return transform_at(d.Xo_E, d.Xo_r, body) if m.cluster[body] == k else IDENTITY


@njit(inline='always', error_model='numpy')
def set_loop_ends(d, lp, E_A, r_A, E_B, r_B):
    """The transforms to the predecessor (A) and successor (B) bodies of loop lp from one frame
    fixed to both (d.end_E, d.end_r), which the closure check reads (checks.loop_residuals)."""
    end_E, end_r = d.end_E[lp], d.end_r[lp]
    for a in range(3):
        for b in range(3):
            end_E[0, a, b], end_E[1, a, b] = E_A[3 * a + b], E_B[3 * a + b]
        end_r[0, a], end_r[1, a] = r_A[a], r_B[a]


@njit(error_model='numpy')
def loop_ends_at_outputs(m, d, l0, l1):
    """set_loop_ends of the loops l0..l1-1 at the output transforms Xo of their clusters."""
    for lp in range(l0, l1):
        k = m.loop_cluster[lp]
        E_A, r_A = output_frame(m, d, k, m.loop_ends[lp, 0])
        E_B, r_B = output_frame(m, d, k, m.loop_ends[lp, 1])
        set_loop_ends(d, lp, E_A, r_A, E_B, r_B)


@njit(error_model='numpy')
def constraint_rows(m, d, k):
    """K_k of the LOOP cluster k over its active rows into d.K[k], at the transforms Xo of its
    bodies (output_transforms): its constant coupling rows and, for each loop, Psi^T (J_S - J_P)
    (constraints.py LoopConstraint.evaluate) in the cluster's output frame o, where every loop
    finds its joint columns (d.joint_o, one transform per body for all the loops) and its Psi
    (d.Psi_o), which constraint_bias reads too. LoopConstraint works in NCA coordinates; a change
    of coordinates at the instant leaves Psi^T J and k as they are (Psi maps as a force, the
    columns as motions). A universal loop's first row n = a1 x a2 turns with both bodies: a1 fixed
    in the predecessor, a2 in the successor (into d.loop_a; LoopConstraint.directions). Then the
    rows of its implicit constraints (kernels/expressions.py)."""
    joint, axes, col, loop_path, loop_path_len, loop_active = m.joint, m.axes, m.col, \
        m.loop_path, m.loop_path_len, m.loop_active
    loop_E, loop_r, loop_Psi, universal, loop_axes, loop_ends = m.loop_E, m.loop_r, m.loop_Psi, \
        m.loop_universal, m.loop_axes, m.loop_ends
    Xo_E, Xo_r, joint_o, Psi_o, loop_a = d.Xo_E, d.Xo_r, d.joint_o, d.Psi_o, d.loop_a
    K, K_const, columns = d.K[k], m.K_const[k], m.v_range[k, 1] - m.v_range[k, 0]
    for a in range(m.n_active[k]):
        for j in range(columns):
            K[a, j] = K_const[a, j]
    for i in range(m.body_range[k, 0], m.body_range[k, 1]):
        E, r = transform_at(Xo_E, Xo_r, i)
        code = joint[i]
        for j in range(joint_nv(code)):
            s = inverse_motion(E, r, joint_column(code, axes[i], j))
            for e in range(6):
                joint_o[i, j, e] = s[e]
    for lp in range(m.loop_range[k, 0], m.loop_range[k, 1]):
        path, length, a0, rows = loop_path[lp], loop_path_len[lp], loop_active[lp, 0], \
            loop_active[lp, 1] - loop_active[lp, 0]
        E_A, r_A = output_frame(m, d, k, loop_ends[lp, 0])              # ^predX_o
        E_B, r_B = output_frame(m, d, k, loop_ends[lp, 1])              # ^succX_o
        set_loop_ends(d, lp, E_A, r_A, E_B, r_B)
        E, r = transform_at(loop_E, loop_r, lp)
        E, r = product(E, r, E_A, r_A)                                  # ^PX_o = ^PX_pred ^predX_o
        for row in range(universal[lp], rows):
            psi = transposed_force(E, r, loop_Psi[lp, row])             # force-like: ^PX_o^T Psi
            for e in range(6):
                Psi_o[lp, row, e] = psi[e]
        if universal[lp]:
            a1, a2 = rotated_back(E_A, loop_axes[lp, 0]), rotated_back(E_B, loop_axes[lp, 1])
            n = (a1[1] * a2[2] - a1[2] * a2[1], a1[2] * a2[0] - a1[0] * a2[2],
                 a1[0] * a2[1] - a1[1] * a2[0])
            for e in range(3):
                loop_a[lp, 0, e], loop_a[lp, 1, e], Psi_o[lp, 0, e], Psi_o[lp, 0, 3 + e] = (
                    a1[e], a2[e], n[e], 0.0)
        for side in range(2):
            sign = -1.0 if side == 0 else 1.0
            for p in range(length[side]):
                body = path[side, p]
                for j in range(joint_nv(joint[body])):
                    c = col[body] + j
                    for row in range(rows):
                        K[a0 + row, c] += sign * dot6(Psi_o[lp, row], joint_o[body, j])
    implicit_rows(m, d, k, K)


@njit(inline='always', error_model='numpy')
def branch_motion(joint, col, path, length, joint_o, along, qd):
    """Velocities v(qd) and v(along) relative to the NCA and bias acceleration a(along, qd) at the
    end of one path of a loop, in the columns' frame: v = sum s qd and a = sum v(along) x (s qd)
    down the path (d/dt (s qd) = v x (s qd), s fixed in the body; constraints.py)."""
    v = u = a = ZERO6
    for p in range(length):
        body = path[p]
        vJ = uJ = ZERO6
        for j in range(joint_nv(joint[body])):
            vJ = add_scaled(vJ, qd[col[body] + j], joint_o[body, j])
            uJ = add_scaled(uJ, along[col[body] + j], joint_o[body, j])
        v = add_scaled(vJ, 1.0, v)
        u = add_scaled(uJ, 1.0, u)
        a = add_scaled(cross_motion(u, vJ), 1.0, a)
    return v, u, a


@njit(error_model='numpy')
def constraint_bias(m, d, k, along, qd, bias):
    """-Kdot(along) qd of the LOOP cluster k over its active rows into bias, at its spanning
    velocities along and qd (k_k where along is qd): zero on the coupling rows and, on the rows of
    each loop, Psi^T (v_P(along) x (v_S - v_P) - (a_S - a_P)) with the paths' velocities and bias
    accelerations (branch_motion), from the columns and Psi of constraint_rows; a universal loop's
    first row adds (a1.w_r(along))(a2.w_r) - (a1.a2)(w_r(along).w_r), w_r = w_S - w_P
    (constraints.py); an implicit constraint's rows -d^2 phi[along, qd]
    (kernels/expressions.py)."""
    joint, col, loop_path, loop_path_len, loop_active, universal = m.joint, m.col, m.loop_path, \
        m.loop_path_len, m.loop_active, m.loop_universal
    joint_o, Psi_o, loop_a = d.joint_o, d.Psi_o, d.loop_a
    for a in range(m.n_active[k]):
        bias[a] = 0.0
    for lp in range(m.loop_range[k, 0], m.loop_range[k, 1]):
        path, length, Psi = loop_path[lp], loop_path_len[lp], Psi_o[lp]
        vP, uP, aP = branch_motion(joint, col, path[0], length[0], joint_o, along, qd)
        vS, uS, aS = branch_motion(joint, col, path[1], length[1], joint_o, along, qd)
        x, y = cross_motion(uP, vS), cross_motion(uP, vP)          # y = 0 where along is qd
        w = (x[0] - y[0] - aS[0] + aP[0], x[1] - y[1] - aS[1] + aP[1],
             x[2] - y[2] - aS[2] + aP[2], x[3] - y[3] - aS[3] + aP[3],
             x[4] - y[4] - aS[4] + aP[4], x[5] - y[5] - aS[5] + aP[5])
        a0 = loop_active[lp, 0]
        for row in range(loop_active[lp, 1] - a0):
            bias[a0 + row] = dot6(Psi[row], w)
        if universal[lp]:
            a1, a2 = loop_a[lp, 0], loop_a[lp, 1]
            w0, w1, w2 = vS[0] - vP[0], vS[1] - vP[1], vS[2] - vP[2]
            u0, u1, u2 = uS[0] - uP[0], uS[1] - uP[1], uS[2] - uP[2]
            bias[a0] += ((a1[0] * u0 + a1[1] * u1 + a1[2] * u2)
                         * (a2[0] * w0 + a2[1] * w1 + a2[2] * w2)
                         - (a1[0] * a2[0] + a1[1] * a2[1] + a1[2] * a2[2])
                         * (u0 * w0 + u1 * w1 + u2 * w2))
    implicit_mixed(m, d, k, along, qd, qd, 2, bias)


@njit(error_model='numpy')
def loop_constraint(m, d, k, yd, velocities):
    """G_k = P [1; -K_d^+ K_i] and, with velocities, g_k = P [0; K_d^+ k] and qd_k = G_k yd_k from
    the sparse QR of the dependent columns of K_k that carries its independent ones, then k in its
    last column (kinematics.py explicit_constraint, Chignoli et al. 2024 Sec. 1.1)."""
    v0, v1, y0, y1 = m.v_range[k, 0], m.v_range[k, 1], m.y_range[k, 0], m.y_range[k, 1]
    n, mk, na = v1 - v0, y1 - y0, m.n_active[k]
    nd = n - mk
    dependent, independent, pivot = m.dependent[k], m.independent[k], m.qr_rows[k, :, 0]
    K, A, beta, G, qd, g = d.K[k], d.QR, d.beta, d.G[k], d.qd, d.g
    constraint_rows(m, d, k)
    for r in range(na):
        for j in range(nd):
            A[r, j] = K[r, dependent[j]]
        for j in range(mk):
            A[r, nd + j] = K[r, independent[j]]
    # K_d^+ K_i
    conditioning = dependent_least_squares(m, k, A, nd, n, beta, m.singularity_threshold)
    if conditioning >= 0.0:
        d.info[0], d.info[1] = k, conditioning
        return SINGULAR_SPLIT
    for j in range(mk):
        for r in range(n):
            G[j, r] = 0.0
        G[j, independent[j]] = 1.0
        for p in range(nd):
            G[j, dependent[p]] = -A[pivot[p], nd + j]
    amplification = 1.0             # the largest row sum of |G_k| (kinematics.check_amplification)
    for p in range(nd):
        t = 0.0
        for j in range(mk):
            t += abs(A[pivot[p], nd + j])
        amplification = max(amplification, t)
    if not amplification <= m.amplification_bound[k]:
        d.info[0], d.info[1] = k, amplification
        return AMPLIFIED
    if not velocities:
        return OK
    for r in range(n):
        t = 0.0
        for j in range(mk):
            t += G[j, r] * yd[y0 + j]
        qd[v0 + r] = t
    constraint_bias(m, d, k, qd[v0:v1], qd[v0:v1], A[:, n])
    qr_solve(m, k, A, nd, beta, n)
    for p in range(nd):
        g[v0 + dependent[p]] = A[pivot[p], n]
    return OK


@njit(error_model='numpy')
def explicit_constraints(m, d, yd, velocities=True):
    """G_k and, with velocities, g_k and qd_k = G_k yd_k of every cluster (G constant and g = 0
    unless LOOP; a LOOP cluster's Xo first, which its constraint rows take)."""
    kind, v_range, y_range, G, qd = m.kind, m.v_range, m.y_range, d.G, d.qd
    for k in range(len(kind)):
        if kind[k] == LOOP:
            output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])
            status = loop_constraint(m, d, k, yd, velocities)
            if status != OK:
                return status
            continue
        if not velocities:
            continue
        v0, y0 = v_range[k, 0], y_range[k, 0]
        for r in range(v_range[k, 1] - v0):
            if kind[k] == SINGLE:                                    # G_k = 1
                qd[v0 + r] = yd[y0 + r]
            else:
                qd[v0 + r] = 0.0
                for j in range(y_range[k, 1] - y0):
                    qd[v0 + r] += G[k, j, r] * yd[y0 + j]
    return OK


@njit(error_model='numpy')
def kinematics(m, d, q, yd, velocities=True):
    """Transforms (q None: d.Xup is at the positions already, computed by the position check of a
    fused call, kernels/calls.py) and constraints, then base to tips for each body i of each
    cluster k: Xo (of a LOOP cluster's bodies already with its constraints), its rows of
    S_k = Omega blkdiag(S_i) G_k (eq. 24) and, with velocities (CRBA and EFPA do without: yd = 0),
    v (eq. 33) and its rows of c_k = Omega (blkdiag(S_i) g_k + stack(v_i x S_i qd_i)) (digest 1.8);
    Omega is applied recursively along the in-cluster parents. Bodies are numbered cluster by
    cluster."""
    if q is not None:
        update_transforms(m, d, q)
    status = explicit_constraints(m, d, yd, velocities)
    if status != OK:
        return status
    parent, joint, axes, col, cluster, kind = m.parent, m.joint, m.axes, m.col, m.cluster, m.kind
    body_range, v_range, y_range = m.body_range, m.v_range, m.y_range
    Xup_E, Xup_r, Xo_E, Xo_r, S, G = d.Xup_E, d.Xup_r, d.Xo_E, d.Xo_r, d.S, d.G
    v, c, qd, g = d.v, d.c, d.qd, d.g
    for i in range(1, len(parent)):
        k, p = cluster[i], parent[i]
        v0, mk, single = v_range[k, 0], y_range[k, 1] - y_range[k, 0], kind[k] == SINGLE
        inside = p >= body_range[k, 0]
        E, r = transform_at(Xup_E, Xup_r, i)                # in registers (header)
        if kind[k] != LOOP:                                 # a LOOP cluster's with its constraints
            set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r)
        for j in range(mk):                                 # S_i G_k, G_k = 1 for one body
            x = (joint_column(joint[i], axes[i], j) if single
                 else joint_motion(joint[i], axes[i], G[k, j], col[i]))
            y = transformed_motion(E, r, S[p, j]) if inside else ZERO6
            for e in range(6):
                S[i, j, e] = x[e] + y[e] if inside else x[e]
        if not velocities:
            continue
        vJ = joint_motion(joint[i], axes[i], qd, v0 + col[i])
        vi = add_scaled(transformed_motion(E, r, v[p]), 1.0, vJ)
        x = cross_motion(vi, vJ)
        gJ = joint_motion(joint[i], axes[i], g, v0 + col[i])
        y = transformed_motion(E, r, c[p]) if inside else ZERO6
        for e in range(6):
            v[i, e] = vi[e]
            c[i, e] = x[e] + gJ[e] + y[e] if inside else x[e] + gJ[e]
    return OK
