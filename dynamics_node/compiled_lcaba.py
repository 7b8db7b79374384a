"""Numba kernel of the proximal LCABA (seed 004, Algs. 1-3) on a FlatModel ``m``, FlatData ``d`` and an
LcabaPlan ``p`` with its LcabaData ``w`` (flat_lcaba.py).

Same algorithm, same order of operations per body as lcaba.py, which stays the readable reference;
what differs:
- H is one 6x6 block per coupled pair of bodies, stored as H[min, max] (flat_lcaba.py);
- D_i^-1 enters through its Cholesky factor L_i: with Z_i = L_i^-1 U_i^T, Y_ij = L_i^-1 (H_ij^T S_i)^T
  and ubar_i = L_i^-1 u_i, the eliminations of eqs. 30a-30e are H_pp += X^T (H_ii - Z^T Z) X,
  H_jk -= Y_j^T Y_k, ..., and the rollout is qdd_i = L_i^-T (ubar_i - Z_i a'_i - sum_j Y_ij a_j);
- transforms are (E, r) pairs (compiled.py).
No kernel allocates. ``lcaba`` returns OK or NOT_POSITIVE (w.info: the body) instead of raising.

The kernels reuse compiled.py's helpers, so numba's cache of this file is keyed on both files
(kernel_cache.py): a change of compiled.py recompiles these kernels too.
"""

import math

from numba import njit

from .compiled import (backward_solve, chain, cholesky, congruence_add, cross_force, cross_motion, dot6,
                       forward_solve, forward_solve_rows, joint_column, joint_motion, joint_nv, mat6_vec,
                       transform_force, transform_motion, update_transforms)
from .kernel_cache import key_on_helpers

OK, NOT_POSITIVE = 0, 1


key_on_helpers(__file__)


# ---- blocks of the cost-to-go H (one per unordered pair, stored as H[min, max]) ----

@njit
def get_block(H, slot, j, k, out):
    """out = H[j, k] (blocks H, their slots)."""
    B = H[slot[j, k]]
    for r in range(6):
        for c in range(6):
            out[r, c] = B[r, c] if j <= k else B[c, r]


@njit
def add_block(H, slot, j, k, M, scale, transpose):
    """H[j, k] += scale M (or scale M^T); on the diagonal the caller keeps the block symmetric."""
    B = H[slot[j, k]]
    flip = (j > k) != transpose
    for r in range(6):
        for c in range(6):
            if flip:
                B[c, r] += scale * M[r, c]
            else:
                B[r, c] += scale * M[r, c]


@njit
def force_columns(E, r, M, out):
    """out = X^T M for a 6x6 M, column by column."""
    for c in range(6):
        transform_force(E, r, M[:, c], out[:, c], False)


# ---- sweeps ----

@njit
def first_forward_sweep(m, d, p, w, qd, f_ext):
    """v_i, c_i = v_i x S_i qd_i, H_ii = I_i, f_i = f_ext - v_i x* I_i v_i (seed 004 Sec. IV-C1)."""
    H, v, x = w.H, d.v, w.x[0]
    for s in range(H.shape[0]):
        for r in range(6):
            for c in range(6):
                H[s, r, c] = 0.0
    for e in range(6):
        v[0, e] = 0.0
    for i in range(1, len(m.parent)):
        E, r = d.Xup_E[i], d.Xup_r[i]
        vJ = joint_motion(m.joint[i], m.axes[i], qd, p.idx_v[i])
        transform_motion(E, r, v[m.parent[i]], v[i])
        for e in range(6):
            v[i, e] += vJ[e]
        c = cross_motion(v[i], vJ)
        mat6_vec(m.inertia[i], v[i], x)
        b = cross_force(v[i], x)
        for e in range(6):
            w.c[i, e] = c[e]
            w.f[i, e] = w.f_tree[i, e] = f_ext[i, e] - b[e]
        add_block(w.H, p.slot, i, i, m.inertia[i], 1.0, False)


@njit
def cut_rows(m, d, p, w, con):
    """Entries K (rows on each body's acceleration) and k of constraint con (lcaba.cut_rows)."""
    rows, e0, e1, K, k = p.con_rows[con], p.con_entries[con, 0], p.con_entries[con, 1], w.K, w.k[con]
    for e in range(e0, e1):
        for row in range(rows):
            for c in range(6):
                K[e, row, c] = 0.0
    for row in range(rows):
        k[row] = 0.0
    lp = p.con_loop[con]
    if lp < 0:                     # sum_j c_j (S_j^T a_j - S_j^T Xup_j a_parent) = 0 (seed 004 Remark 1)
        x = w.x[0]
        for t in range(p.con_terms[con, 0], p.con_terms[con, 1]):
            j, coefficient = p.term_body[t], p.term_coefficient[t]
            s = joint_column(m.joint[j], m.axes[j], 0)
            transform_force(d.Xup_E[j], d.Xup_r[j], s, x, False)
            for c in range(6):
                K[p.term_entry[t, 0], 0, c] += coefficient * s[c]
                K[p.term_entry[t, 1], 0, c] -= coefficient * x[c]
        return
    EA, rA, EB, rB, E, r = w.E[0], w.p[0], w.E[1], w.p[1], w.E[2], w.p[2]
    chain(d, p.loop_path[lp, 0], p.loop_path_len[lp, 0], EA, rA, E, r)
    chain(d, p.loop_path[lp, 1], p.loop_path_len[lp, 1], EB, rB, E, r)
    for a in range(3):                        # X_A_B = X_A_nca X_B_nca^-1: E_A E_B^T, E_B (r_A - r_B)
        for b in range(3):
            E[a, b] = EA[a, 0] * EB[b, 0] + EA[a, 1] * EB[b, 1] + EA[a, 2] * EB[b, 2]
        r[a] = 0.0
        for b in range(3):
            r[a] += EB[a, b] * (rA[b] - rB[b])
    A, B, PsiT, vB = p.entry_body[e0], p.entry_body[e0 + 1], w.PsiT, w.x[0]
    transform_motion(E, r, d.v[B], vB)
    for row in range(rows):
        for c in range(6):
            PsiT[row, c] = p.loop_PsiT[lp, row, c]
    if p.loop_universal[lp]:
        universal_row(d, p, w, lp, A, vB, k)
    vAxvB = cross_motion(d.v[A], vB)
    for row in range(rows):
        transform_force(E, r, PsiT[row], K[e0 + 1, row], False)      # Psi^T X_P_A X_A_B
        for c in range(6):
            K[e0, row, c] = -PsiT[row, c]
        k[row] += dot6(PsiT[row], vAxvB)


@njit
def universal_row(d, p, w, lp, A, vB, k):
    """A universal loop's first row turns with both frames (LoopConstraint.directions, turning_bias):
    with a2 = R_rel axis2 (R_rel = E_P X_A_B's rotation E_S^T, in P), PsiT[0] = ^PX_A^T [a1 x a2; 0] and
    k[0] += (a1 . w_r)(a2 . w_r) - (a1 . a2)|w_r|^2, w_r = E_P (w_B - w_A) in P (vB: v_B in A)."""
    EP, EAB, ES, a1 = p.loop_pred_E[lp], w.E[2], p.loop_succ_E[lp], p.loop_a1[lp]
    x, a2, n = w.M[1, 0], w.M[1, 1], w.M[1, 2]
    for a in range(3):                                       # E_S^T axis2, then X_A_B's rotation, then E_P
        x[a] = ES[0, a] * p.loop_a2[lp, 0] + ES[1, a] * p.loop_a2[lp, 1] + ES[2, a] * p.loop_a2[lp, 2]
    for a in range(3):
        n[a] = EAB[a, 0] * x[0] + EAB[a, 1] * x[1] + EAB[a, 2] * x[2]
    for a in range(3):
        a2[a] = EP[a, 0] * n[0] + EP[a, 1] * n[1] + EP[a, 2] * n[2]
    for a in range(3):                                       # w_r = E_P (w_B - w_A), P coordinates
        x[a] = vB[a] - d.v[A, a]
    wr = (EP[0, 0] * x[0] + EP[0, 1] * x[1] + EP[0, 2] * x[2], EP[1, 0] * x[0] + EP[1, 1] * x[1] + EP[1, 2] * x[2],
          EP[2, 0] * x[0] + EP[2, 1] * x[1] + EP[2, 2] * x[2])
    n[0], n[1], n[2] = a1[1] * a2[2] - a1[2] * a2[1], a1[2] * a2[0] - a1[0] * a2[2], a1[0] * a2[1] - a1[1] * a2[0]
    n[3] = n[4] = n[5] = 0.0
    transform_force(EP, p.loop_pred_r[lp], n, w.PsiT[0], False)
    a1w = a1[0] * wr[0] + a1[1] * wr[1] + a1[2] * wr[2]
    a2w = a2[0] * wr[0] + a2[1] * wr[1] + a2[2] * wr[2]
    k[0] += a1w * a2w - (a1[0] * a2[0] + a1[1] * a2[1] + a1[2] * a2[2]) * (
        wr[0] * wr[0] + wr[1] * wr[1] + wr[2] * wr[2])


@njit
def add_penalty(p, w, con, mu, a0):
    """Ground entries folded into k (eq. 35), then (mu/2) |sum_l K^l a_l - k|^2 (eqs. 20, 25)."""
    rows, e0, e1, K, k = p.con_rows[con], p.con_entries[con, 0], p.con_entries[con, 1], w.K, w.k[con]
    M = w.M[0]
    for e in range(e0, e1):
        if p.entry_body[e] == 0:
            for row in range(rows):
                k[row] -= dot6(K[e, row], a0)
    for e in range(e0, e1):
        b = p.entry_body[e]
        if b == 0:
            continue
        for c in range(6):
            for row in range(rows):
                w.f[b, c] += mu * K[e, row, c] * k[row]
        for e2 in range(e0, e1):
            b2 = p.entry_body[e2]
            if b2 == 0 or b2 < b:
                continue
            for r in range(6):
                for c in range(6):
                    M[r, c] = 0.0
                    for row in range(rows):
                        M[r, c] += K[e, row, r] * K[e2, row, c]
            add_block(w.H, p.slot, b, b2, M, mu, False)


@njit
def eliminate(m, d, p, w, i, tau, a0):
    """Eliminate body i (seed 004 Alg. 1 lines 11-23, eqs. 29-30, 34-35): Z_i, Y_ij, ubar_i stored."""
    joint, axes, slot = m.joint, m.axes, p.slot
    n, parent, E, r = joint_nv(joint[i]), m.parent[i], d.Xup_E[i], d.Xup_r[i]
    Hii, L, Z, Y, ub, Ha, C, M, x = w.H[slot[i, i]], w.L[i], w.Z[i], w.Y[i], w.ubar[i], w.Ha, w.C, w.M[0], w.x[0]
    for j in range(n):                                               # Z rows: U^T = S^T H_ii
        s = joint_column(joint[i], axes[i], j)
        for c in range(6):
            Z[j, c] = 0.0
            for e in range(6):
                Z[j, c] += s[e] * Hii[e, c]
    for a in range(n):                                               # D = S^T H_ii S
        sa = joint_column(joint[i], axes[i], a)
        for b in range(a + 1):
            L[a, b] = dot6(Z[b], sa)
        ub[a] = tau[p.idx_v[i] + a] + dot6(sa, w.f[i])              # u = tau_i + S^T f_i
    if not cholesky(L, n):
        w.info[0] = i
        return NOT_POSITIVE
    forward_solve_rows(L, n, Z)
    forward_solve(L, n, ub)
    nN = p.n_neighbours[i]
    for q in range(nN):                                              # Y_j rows: L^-1 S^T H_ij
        get_block(w.H, p.slot, i, p.neighbours[i, q], C)
        for a in range(n):
            s = joint_column(joint[i], axes[i], a)
            for c in range(6):
                Y[q, a, c] = 0.0
                for e in range(6):
                    Y[q, a, c] += s[e] * C[e, c]
        forward_solve_rows(L, n, Y[q])
    for r_ in range(6):                                              # H^a_i = H_ii - Z^T Z
        for c in range(6):
            Ha[r_, c] = Hii[r_, c]
            for a in range(n):
                Ha[r_, c] -= Z[a, r_] * Z[a, c]
    if parent > 0:
        congruence_add(E, r, Ha, w.H[slot[parent, parent]])          # eq. 30a
        mat6_vec(Ha, w.c[i], x)
        for e in range(6):                                           # eq. 30b: f_i - Ha c_i - U D^-1 u
            x[e] = w.f[i, e] - x[e]
            for a in range(n):
                x[e] -= Z[a, e] * ub[a]
        transform_force(E, r, x, w.f[parent], True)
    for q in range(nN):
        j = p.neighbours[i, q]
        get_block(w.H, p.slot, i, j, C)
        for r_ in range(6):                                          # C = P_i H_ij = H_ij - Z^T Y_j
            for c in range(6):
                for a in range(n):
                    C[r_, c] -= Z[a, r_] * Y[q, a, c]
        for c in range(6):                                           # eq. 30e
            t = 0.0
            for a in range(n):
                t += Y[q, a, c] * ub[a]
            for e in range(6):
                t += C[e, c] * w.c[i, e]
            w.f[j, c] -= t
        if parent > 0:
            force_columns(E, r, C, M)                                # eq. 30c; with j = parent eq. 34
            add_block(w.H, p.slot, parent, j, M, 1.0, False)
            if j == parent:
                add_block(w.H, p.slot, parent, j, M, 1.0, True)
        else:
            transform_motion(E, r, a0, x)                            # eq. 35
            for c in range(6):
                for e in range(6):
                    w.f[j, c] -= C[e, c] * x[e]
        for q2 in range(q, nN):                                      # eq. 30d (fill-in)
            k = p.neighbours[i, q2]
            for r_ in range(6):
                for c in range(6):
                    M[r_, c] = 0.0
                    for a in range(n):
                        M[r_, c] += Y[q, a, r_] * Y[q2, a, c]
            add_block(w.H, p.slot, j, k, M, -1.0, False)
    return OK


@njit
def rollout(m, d, p, w, c, a, qdd):
    """Accelerations in reverse elimination order (Alg. 1 lines 24-26): qdd_i = L_i^-T (ubar_i - Z_i a'_i
    - sum_j Y_ij a_j), a'_i = Xup_i a_parent + c_i and a_i = a'_i + S_i qdd_i (a[0] set by the caller)."""
    z = w.x[1]
    for s in range(len(p.order) - 1, -1, -1):
        i = p.order[s]
        n = joint_nv(m.joint[i])
        transform_motion(d.Xup_E[i], d.Xup_r[i], a[m.parent[i]], a[i])
        for e in range(6):
            a[i, e] += c[i, e]
        for j in range(n):
            z[j] = w.ubar[i, j] - dot6(w.Z[i, j], a[i])
            for q in range(p.n_neighbours[i]):
                z[j] -= dot6(w.Y[i, q, j], a[p.neighbours[i, q]])
        backward_solve(w.L[i], n, z)
        for j in range(n):
            qdd[p.idx_v[i] + j] = z[j]
            s_j = joint_column(m.joint[i], m.axes[i], j)
            for e in range(6):
                a[i, e] += s_j[e] * z[j]


@njit
def reduced_sweeps(m, d, p, w, df, dtau):
    """Change of qdd (into w.dqdd) and of the body accelerations (w.da) caused by body forces df and
    joint forces dtau, reusing the elimination (seed 004 Alg. 2: H does not depend on lambda)."""
    x = w.x[0]
    for s in range(len(p.order)):
        i = p.order[s]
        n, parent = joint_nv(m.joint[i]), m.parent[i]
        for j in range(n):
            w.ubar[i, j] = dtau[p.idx_v[i] + j] + dot6(joint_column(m.joint[i], m.axes[i], j), df[i])
        forward_solve(w.L[i], n, w.ubar[i])
        if parent > 0:
            for e in range(6):
                x[e] = df[i, e]
                for j in range(n):
                    x[e] -= w.Z[i, j, e] * w.ubar[i, j]
            transform_force(d.Xup_E[i], d.Xup_r[i], x, df[parent], True)
        for q in range(p.n_neighbours[i]):
            nb = p.neighbours[i, q]
            for e in range(6):
                for j in range(n):
                    df[nb, e] -= w.Y[i, q, j, e] * w.ubar[i, j]
    for e in range(6):
        w.da[0, e] = 0.0
    rollout(m, d, p, w, w.zero_c, w.da, w.dqdd)


@njit
def constraint_residuals(p, w, a):
    """r_c = sum_l K^l a_l - k on every constraint; returns ||r||_inf."""
    worst = 0.0
    for con in range(len(p.con_rows)):
        for row in range(p.con_rows[con]):
            t = -w.k[con, row]
            for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
                if p.entry_body[e] > 0:
                    t += dot6(w.K[e, row], a[p.entry_body[e]])
            w.r[con, row] = t
            worst = max(worst, abs(t))
    return worst


@njit
def gradient_forces(m, p, w, df, mu):
    """df = f_tree - I a - sum K^T (lambda + mu r): the body forces of the augmented Lagrangian's
    gradient at the current accelerations (lcaba._gradient_forces)."""
    x = w.x[0]
    for i in range(1, len(m.parent)):
        mat6_vec(m.inertia[i], w.a[i], x)
        for e in range(6):
            df[i, e] = w.f_tree[i, e] - x[e]
    for con in range(len(p.con_rows)):
        row0 = p.con_row0[con]
        for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
            b = p.entry_body[e]
            if b == 0:
                continue
            for row in range(p.con_rows[con]):
                weight = w.lam[row0 + row] + mu * w.r[con, row]
                for c in range(6):
                    df[b, c] -= w.K[e, row, c] * weight


@njit(cache=True, nogil=True)
def lcaba(m, d, p, w, q, qd, tau, f_ext, mu, tolerance, max_iterations):
    """Spanning accelerations of the closed-loop system into w.qdd by the proximal LCABA (seed 004,
    Alg. 3; lcaba.lcaba); multipliers into w.lam, [iterations, residual, converged] into w.result.
    qd, tau spanning (nv); f_ext (nb x 6) in body coordinates."""
    update_transforms(m, d, q)
    first_forward_sweep(m, d, p, w, qd, f_ext)
    a0 = w.x[2]
    for e in range(3):
        a0[e], a0[3 + e] = 0.0, -m.gravity[e]
    for con in range(len(p.con_rows)):
        cut_rows(m, d, p, w, con)
        add_penalty(p, w, con, mu, a0)
    for s in range(len(p.order)):
        status = eliminate(m, d, p, w, p.order[s], tau, a0)
        if status != OK:
            return status
    for e in range(6):
        w.a[0, e] = a0[e]
    rollout(m, d, p, w, w.c, w.a, w.qdd)
    for row in range(len(w.lam)):
        w.lam[row] = 0.0
    iterations, step, df = 1, math.inf, d.f
    while True:
        residual = constraint_residuals(p, w, w.a)
        for con in range(len(p.con_rows)):
            for row in range(p.con_rows[con]):
                w.lam[p.con_row0[con] + row] += mu * w.r[con, row]      # eq. 33
        converged = min(step, residual) < tolerance
        if converged or iterations == max_iterations:
            break
        gradient_forces(m, p, w, df, mu)
        reduced_sweeps(m, d, p, w, df, tau)
        step = 0.0
        for j in range(len(w.qdd)):
            w.qdd[j] += w.dqdd[j]
            step = max(step, abs(w.dqdd[j]))
        for i in range(len(m.parent)):
            for e in range(6):
                w.a[i, e] += w.da[i, e]
        iterations += 1
    w.result[0], w.result[1], w.result[2] = iterations, residual, 1.0 if converged else 0.0
    return OK
