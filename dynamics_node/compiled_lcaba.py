"""Numba kernel of the proximal LCABA (seed 004, Algs. 1-3) on a FlatModel ``m``, FlatData ``d`` and an
LcabaPlan ``p`` with its LcabaData ``w`` (flat_lcaba.py).

Same algorithm, same order of operations per body as lcaba.py, which stays the readable reference;
what differs:
- H is one 6x6 block per coupled pair of bodies, stored as H[min, max] (flat_lcaba.py);
- D_i^-1 enters through its Cholesky factor L_i: with Z_i = L_i^-1 U_i^T, Y_ij = L_i^-1 (H_ij^T S_i)^T
  and ubar_i = L_i^-1 u_i, the eliminations of eqs. 30a-30e are H_pp += X^T (H_ii - Z^T Z) X,
  H_jk -= Y_j^T Y_k, ..., and the rollout is qdd_i = L_i^-T (ubar_i - Z_i a'_i - sum_j Y_ij a_j);
- transforms are (E, r) pairs (compiled.py); X^T H^a X and X^T P_i H_ij run on 3x3 blocks held as
  9-tuples, and products of K rows accumulate in 6-tuples: both stay in registers, where array elements
  would be reloaded after every store into H (the compiler cannot rule out that H aliases them).
No kernel allocates. ``lcaba`` returns OK or NOT_POSITIVE (w.info: the body) instead of raising.

The kernels reuse compiled.py's helpers, so numba's cache of this file is keyed on both files
(kernel_cache.py): a change of compiled.py recompiles these kernels too.
"""

import math

from numba import njit

from .compiled import (backward_solve, chain, cholesky, cross_force, cross_motion, dot6,
                       forward_solve, forward_solve_rows, joint_column, joint_motion, joint_nv, mat6_vec,
                       transform_force, transform_motion, update_transforms)
from .kernel_cache import key_on_helpers

OK, NOT_POSITIVE = 0, 1


key_on_helpers(__file__)


# ---- blocks of the cost-to-go H (one per unordered pair, stored as H[min, max]) ----

@njit(inline='always')
def row_times(s, B, transposed, out):
    """out = s^T B (or s^T B^T with transposed) for a 6-tuple s."""
    for c in range(6):
        if transposed:
            out[c] = dot6(s, B[c])
        else:
            out[c] = s[0] * B[0, c] + s[1] * B[1, c] + s[2] * B[2, c] + s[3] * B[3, c] + s[4] * B[4, c] + s[5] * B[5, c]


@njit(inline='always')
def row_of_product(K1, K2, rows, r):
    """Row r of K1^T K2 for the first rows rows of K1 and K2, as a 6-tuple."""
    t0 = t1 = t2 = t3 = t4 = t5 = 0.0
    for row in range(rows):
        k = K1[row, r]
        t0, t1, t2 = t0 + k * K2[row, 0], t1 + k * K2[row, 1], t2 + k * K2[row, 2]
        t3, t4, t5 = t3 + k * K2[row, 3], t4 + k * K2[row, 4], t5 + k * K2[row, 5]
    return t0, t1, t2, t3, t4, t5


# ---- 6x6 matrices as four 3x3 blocks [11, 12, 21, 22], each a row-major 9-tuple ----

@njit(inline='always')
def block3(M, r0, c0):
    return (M[r0, c0], M[r0, c0 + 1], M[r0, c0 + 2], M[r0 + 1, c0], M[r0 + 1, c0 + 1], M[r0 + 1, c0 + 2],
            M[r0 + 2, c0], M[r0 + 2, c0 + 1], M[r0 + 2, c0 + 2])


@njit(inline='always')
def blocks(M, transposed):
    """The 3x3 blocks [11, 12, 21, 22] of M (or of M^T)."""
    if transposed:
        return (transpose3(block3(M, 0, 0)), transpose3(block3(M, 3, 0)), transpose3(block3(M, 0, 3)),
                transpose3(block3(M, 3, 3)))
    return block3(M, 0, 0), block3(M, 0, 3), block3(M, 3, 0), block3(M, 3, 3)


@njit(inline='always')
def add_block3(M, r0, c0, A, transposed):
    """M[r0:r0 + 3, c0:c0 + 3] += A (or A^T)."""
    for a in range(3):
        for b in range(3):
            M[r0 + a, c0 + b] += A[3 * b + a] if transposed else A[3 * a + b]


@njit(inline='always')
def add_blocks(M, N11, N12, N21, N22, transposed):
    """M += N (or N^T) for N = [N11 N12; N21 N22]."""
    add_block3(M, 0, 0, N11, transposed)
    add_block3(M, 0, 3, N21 if transposed else N12, transposed)
    add_block3(M, 3, 0, N12 if transposed else N21, transposed)
    add_block3(M, 3, 3, N22, transposed)


@njit(inline='always')
def transpose3(A):
    return A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8]


@njit(inline='always')
def add3(A, B):
    return (A[0] + B[0], A[1] + B[1], A[2] + B[2], A[3] + B[3], A[4] + B[4], A[5] + B[5], A[6] + B[6], A[7] + B[7],
            A[8] + B[8])


@njit(inline='always')
def sub3(A, B):
    return (A[0] - B[0], A[1] - B[1], A[2] - B[2], A[3] - B[3], A[4] - B[4], A[5] - B[5], A[6] - B[6], A[7] - B[7],
            A[8] - B[8])


@njit(inline='always')
def sub_outer3(A, u, v):
    """A - u v^T."""
    return (A[0] - u[0] * v[0], A[1] - u[0] * v[1], A[2] - u[0] * v[2], A[3] - u[1] * v[0], A[4] - u[1] * v[1],
            A[5] - u[1] * v[2], A[6] - u[2] * v[0], A[7] - u[2] * v[1], A[8] - u[2] * v[2])


@njit(inline='always')
def mul3(A, B):
    """A B."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8], A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
            A[3] * B[1] + A[4] * B[4] + A[5] * B[7], A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@njit(inline='always')
def tmul3(A, B):
    """A^T B."""
    return (A[0] * B[0] + A[3] * B[3] + A[6] * B[6], A[0] * B[1] + A[3] * B[4] + A[6] * B[7],
            A[0] * B[2] + A[3] * B[5] + A[6] * B[8], A[1] * B[0] + A[4] * B[3] + A[7] * B[6],
            A[1] * B[1] + A[4] * B[4] + A[7] * B[7], A[1] * B[2] + A[4] * B[5] + A[7] * B[8],
            A[2] * B[0] + A[5] * B[3] + A[8] * B[6], A[2] * B[1] + A[5] * B[4] + A[8] * B[7],
            A[2] * B[2] + A[5] * B[5] + A[8] * B[8])


@njit(inline='always')
def cross3(r, A):
    """rx A: r x every column of A."""
    return (r[1] * A[6] - r[2] * A[3], r[1] * A[7] - r[2] * A[4], r[1] * A[8] - r[2] * A[5],
            r[2] * A[0] - r[0] * A[6], r[2] * A[1] - r[0] * A[7], r[2] * A[2] - r[0] * A[8],
            r[0] * A[3] - r[1] * A[0], r[0] * A[4] - r[1] * A[1], r[0] * A[5] - r[1] * A[2])


@njit(inline='always')
def mul_cross3(A, r):
    """A rx: every row of A times rx (row x r)."""
    return (A[1] * r[2] - A[2] * r[1], A[2] * r[0] - A[0] * r[2], A[0] * r[1] - A[1] * r[0],
            A[4] * r[2] - A[5] * r[1], A[5] * r[0] - A[3] * r[2], A[3] * r[1] - A[4] * r[0],
            A[7] * r[2] - A[8] * r[1], A[8] * r[0] - A[6] * r[2], A[6] * r[1] - A[7] * r[0])


@njit(inline='always')
def congruence_blocks(E, r, A, B, C):
    """X^T M X of a symmetric M = [A B; B^T C] as blocks [11, 12, 22]: X = diag(E, E) [1 0; -rx 1] turns M
    into [A' B'; B'^T C'] = [E^T A E, E^T B E; ., E^T C E], then with F = rx C', G = rx B'^T into
    [A' + G + G^T - F rx, B' + F; ., C'] (E a 9-tuple, r a 3-tuple)."""
    A, B, C = tmul3(E, mul3(A, E)), tmul3(E, mul3(B, E)), tmul3(E, mul3(C, E))
    F, G = cross3(r, C), cross3(r, transpose3(B))
    return add3(add3(A, G), sub3(transpose3(G), mul_cross3(F, r))), add3(B, F), C


@njit(inline='always')
def force_blocks(E, r, P, Q, R, S):
    """X^T [P Q; R S] = [E^T P + rx E^T R, E^T Q + rx E^T S; E^T R, E^T S] (transform_force on every column)."""
    R, S = tmul3(E, R), tmul3(E, S)
    return add3(tmul3(E, P), cross3(r, R)), add3(tmul3(E, Q), cross3(r, S)), R, S


# ---- sweeps ----

@njit
def first_forward_sweep(m, d, p, w, qd, f_ext):
    """v_i, c_i = v_i x S_i qd_i, H_ii = I_i, f_i = f_ext - v_i x* I_i v_i (seed 004 Sec. IV-C1)."""
    H, v, x, nb = w.H, d.v, w.x[0], len(m.parent)
    for s in range(nb - 1, H.shape[0]):                   # the couplings H[j, k], j < k, start at zero
        for r in range(6):
            for c in range(6):
                H[s, r, c] = 0.0
    for e in range(6):
        v[0, e] = 0.0
    for i in range(1, nb):
        E, r, inertia, Hii = d.Xup_E[i], d.Xup_r[i], m.inertia[i], H[p.slot[i, i]]
        vJ = joint_motion(m.joint[i], m.axes[i], qd, p.idx_v[i])
        transform_motion(E, r, v[m.parent[i]], v[i])
        for e in range(6):
            v[i, e] += vJ[e]
        c = cross_motion(v[i], vJ)
        mat6_vec(inertia, v[i], x)
        b = cross_force(v[i], x)
        for e in range(6):
            w.c[i, e] = c[e]
            w.f[i, e] = w.f_tree[i, e] = f_ext[i, e] - b[e]
            for col in range(6):
                Hii[e, col] = inertia[e, col]


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
    x, a2, n = w.x[3], w.x[4], w.x[5]
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
    """Ground entries folded into k (eq. 35), then (mu/2) |sum_l K^l a_l - k|^2 (eqs. 20, 25): f_b += mu K_b^T k
    and H[b, b2] += mu K_b^T K_b2 for every pair of entries (the diagonal blocks symmetric)."""
    rows, e0, e1, K, k = p.con_rows[con], p.con_entries[con, 0], p.con_entries[con, 1], w.K, w.k[con]
    f, H, slot = w.f, w.H, p.slot
    for e in range(e0, e1):
        if p.entry_body[e] == 0:
            for row in range(rows):
                k[row] -= dot6(K[e, row], a0)
    for e in range(e0, e1):
        b = p.entry_body[e]
        if b == 0:
            continue
        for c in range(6):
            t = 0.0
            for row in range(rows):
                t += K[e, row, c] * k[row]
            f[b, c] += mu * t
        for e2 in range(e, e1):                          # the entries of a constraint are distinct bodies
            b2 = p.entry_body[e2]
            if b2 == 0:
                continue
            B = H[slot[b, b2]]
            for r in range(6):
                M = row_of_product(K[e], K[e2], rows, r)
                for c in range(6):
                    if b <= b2:
                        B[r, c] += mu * M[c]
                    else:
                        B[c, r] += mu * M[c]


@njit
def backward_sweep(m, d, p, w, tau, a0):
    """Eliminate the bodies in S^E (seed 004 Alg. 1 lines 11-23, eqs. 29-30, 34-35): Z_i, Y_ij, ubar_i stored."""
    joint, axes, parent, Xup_E, Xup_r = m.joint, m.axes, m.parent, d.Xup_E, d.Xup_r
    slot, neighbours, H, f, c, x = p.slot, p.neighbours, w.H, w.f, w.c, w.x[0]
    for s in range(len(p.order)):
        i = p.order[s]
        n, pa, E, r = joint_nv(joint[i]), parent[i], block3(Xup_E[i], 0, 0), Xup_r[i]
        r = r[0], r[1], r[2]
        Hii, L, Z, Y, ub = H[slot[i, i]], w.L[i], w.Z[i], w.Y[i], w.ubar[i]
        for a in range(n):                                   # Z rows: U^T = S^T H_ii; D = S^T U; u = tau_i + S^T f_i
            s_a = joint_column(joint[i], axes[i], a)
            row_times(s_a, Hii, False, Z[a])
            for b in range(a + 1):
                L[a, b] = dot6(Z[b], s_a)
            ub[a] = tau[p.idx_v[i] + a] + dot6(s_a, f[i])
        if not cholesky(L, n):
            w.info[0] = i
            return NOT_POSITIVE
        forward_solve_rows(L, n, Z)
        forward_solve(L, n, ub)
        nN = p.n_neighbours[i]
        for q in range(nN):                                  # Y_j rows: L^-1 S^T H_ij
            j = neighbours[i, q]
            for a in range(n):
                row_times(joint_column(joint[i], axes[i], a), H[slot[i, j]], i > j, Y[q, a])
            forward_solve_rows(L, n, Y[q])
        ct, cb = (c[i, 0], c[i, 1], c[i, 2]), (c[i, 3], c[i, 4], c[i, 5])
        if pa > 0:
            Ha11, Ha12, _, Ha22 = blocks(Hii, False)         # H^a_i = H_ii - Z^T Z
            for a in range(n):
                zt, zb = (Z[a, 0], Z[a, 1], Z[a, 2]), (Z[a, 3], Z[a, 4], Z[a, 5])
                Ha11, Ha12, Ha22 = sub_outer3(Ha11, zt, zt), sub_outer3(Ha12, zt, zb), sub_outer3(Ha22, zb, zb)
            N11, N12, N22 = congruence_blocks(E, r, Ha11, Ha12, Ha22)
            add_blocks(H[slot[pa, pa]], N11, N12, transpose3(N12), N22, False)      # eq. 30a
            for e in range(3):                               # eq. 30b: f_i - Ha c_i - U D^-1 u
                x[e] = f[i, e] - (Ha11[3 * e] * ct[0] + Ha11[3 * e + 1] * ct[1] + Ha11[3 * e + 2] * ct[2]
                                  + Ha12[3 * e] * cb[0] + Ha12[3 * e + 1] * cb[1] + Ha12[3 * e + 2] * cb[2])
                x[3 + e] = f[i, 3 + e] - (Ha12[e] * ct[0] + Ha12[3 + e] * ct[1] + Ha12[6 + e] * ct[2]
                                          + Ha22[3 * e] * cb[0] + Ha22[3 * e + 1] * cb[1] + Ha22[3 * e + 2] * cb[2])
            for e in range(6):
                for a in range(n):
                    x[e] -= Z[a, e] * ub[a]
            transform_force(Xup_E[i], Xup_r[i], x, f[pa], True)
        for q in range(nN):
            j = neighbours[i, q]
            C11, C12, C21, C22 = blocks(H[slot[i, j]], i > j)    # C = P_i H_ij = H_ij - Z^T Y_j
            for a in range(n):
                zt, zb = (Z[a, 0], Z[a, 1], Z[a, 2]), (Z[a, 3], Z[a, 4], Z[a, 5])
                yt, yb = (Y[q, a, 0], Y[q, a, 1], Y[q, a, 2]), (Y[q, a, 3], Y[q, a, 4], Y[q, a, 5])
                C11, C12 = sub_outer3(C11, zt, yt), sub_outer3(C12, zt, yb)
                C21, C22 = sub_outer3(C21, zb, yt), sub_outer3(C22, zb, yb)
            if pa > 0:                                       # eq. 30c; with j = parent eq. 34
                N11, N12, N21, N22 = force_blocks(E, r, C11, C12, C21, C22)
                add_blocks(H[slot[pa, j]], N11, N12, N21, N22, pa > j)
                if j == pa:
                    add_blocks(H[slot[pa, j]], N11, N12, N21, N22, True)
                xt, xb = ct, cb                              # eq. 30e: f_j -= Y_j^T ubar + C^T c_i
            else:                                            # eqs. 30e and 35: f_j -= Y_j^T ubar + C^T (c_i + X a_0)
                transform_motion(Xup_E[i], Xup_r[i], a0, x)
                xt, xb = (ct[0] + x[0], ct[1] + x[1], ct[2] + x[2]), (cb[0] + x[3], cb[1] + x[4], cb[2] + x[5])
            for e in range(3):
                f[j, e] -= (C11[e] * xt[0] + C11[3 + e] * xt[1] + C11[6 + e] * xt[2] + C21[e] * xb[0]
                            + C21[3 + e] * xb[1] + C21[6 + e] * xb[2])
                f[j, 3 + e] -= (C12[e] * xt[0] + C12[3 + e] * xt[1] + C12[6 + e] * xt[2] + C22[e] * xb[0]
                                + C22[3 + e] * xb[1] + C22[6 + e] * xb[2])
            for e in range(6):
                for a in range(n):
                    f[j, e] -= Y[q, a, e] * ub[a]
            for q2 in range(q, nN):                          # eq. 30d (fill-in)
                k = neighbours[i, q2]
                B = H[slot[j, k]]
                for row in range(6):
                    for col in range(6):
                        t = 0.0
                        for a in range(n):
                            t += Y[q, a, row] * Y[q2, a, col]
                        if j <= k:
                            B[row, col] -= t
                        else:
                            B[col, row] -= t
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
    status = backward_sweep(m, d, p, w, tau, a0)
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
