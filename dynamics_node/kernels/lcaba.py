"""Numba kernel of the proximal LCABA (Sathya & Carpentier 2025, Algs. 1-3) on a FlatModel ``m``,
FlatData ``d`` and an LcabaPlan ``p`` with its LcabaData ``w`` (flat/lcaba.py).

Same algorithm, same elimination order as lcaba.py, which stays the readable reference;
what differs:
- every body quantity of the sweeps (S_i, v x S qd, inertias, forces, accelerations, the cut rows
  K) is in the ground frame, as Pinocchio's lcaba has them: a body's elimination then adds its
  blocks to its parent's as they are, where lcaba.py moves them with X^T . X, about half of a
  body's work. The first sweep moves S_i, c_i, f_i and I_i there with ^iX_0 (w.X0), and
  rows_to_ground the rows the row kernels build in body coordinates;
- H is one 6x6 block per coupled pair of bodies, stored as H[min, max] (flat/lcaba.py);
- D_i^-1 enters through its Cholesky factor L_i: with Z_i = L_i^-1 U_i^T,
  Y_ij = L_i^-1 (H_ij^T S_i)^T and ubar_i = L_i^-1 u_i, the eliminations of eqs. 30a-30e are
  H_pp += H_ii - Z^T Z, H_jk -= Y_j^T Y_k, ..., and the rollout is
  qdd_i = L_i^-T (ubar_i - Z_i a'_i - sum_j Y_ij a_j) (L_i is stored with 1/L_jj on its diagonal,
  so that the solves multiply);
- a loop keeps its rows that are not identically zero (flat.lcaba._kept_rows: K = 0 and k = 0 on
  the others at every state), lcaba.py all of them;
- transforms are (E, r) pairs (the kernels).
The sweeps hold 6-vectors, transforms and 3x3 blocks of H as tuples (tuples.py), read from and
written to the buffers with full indices. A tuple stays in registers, where an array element would
be reloaded after every store into H (the compiler cannot rule out aliasing). Each kernel reads the
fields it uses into locals first: numba emits no alias information, so a field read after a store
into any buffer would be loaded again through the struct (the fields are BorrowedArrays,
borrowed.py: nothing is reference counted). The sweeps call no other kernel (but
constraint_penalties its row kernels; the implicit constraints' rows evaluate their tapes) and
divide without checks (error_model='numpy': inf or nan, never an exception).
fastmath={'contract'} fuses a * b + c into one rounding (FMA). No kernel allocates. ``lcaba``
returns OK or NOT_POSITIVE (w.info: the body) instead of raising.

The kernels reuse the kernels's helpers, so numba's cache of this file is keyed on every kernel
module (kernels/cache.py): a change of the kernels recompiles these kernels too.
"""

import math

from numba import njit

from .cache import key_on_helpers
from .expressions import implicit_cut_rows
from .joints import joint_nv
from .kinematics import set_loop_ends, update_transforms
from .spatial import (add_rigid_matrix, cross_force, cross_motion, dot6, inverse_motion,
                      path_transform, product, relative, rigid_congruence, rigid_force,
                      rotated_back, transform_at, transformed_motion, transposed_force)
from .tuples import (row3, row6, row6_of, set_row6, set_row6_of, add_row6, add6, sub6,
                     add_scaled6, scale6, block3, blocks, add_blocks, transpose3, sub_outer3,
                     mul_vector3, mul_blocks, tmul_blocks, rows_of_product, cholesky_of,
                     solve_rows, solve, solve_transposed)

OK, NOT_POSITIVE = 0, 1


key_on_helpers(__file__)


# ---- sweeps ----

@njit(error_model='numpy', fastmath={'contract'})
def first_forward_sweep(m, d, p, w, qd, f_ext):
    """v_i, c_i = v_i x S_i qd_i, H_ii = I_i, f_i = f_ext - v_i x* I_i v_i
    (Sathya & Carpentier 2025 Sec. IV-C1), in the ground frame: ^iX_0 into w.X0, S_i, c_i, f_i and
    I_i (w.rigid_o) moved there; body velocities (body coordinates) into d.v for the rows."""
    joint, parent, rigid, Xup_E, Xup_r, v = m.joint, m.parent, m.rigid_inertia, d.Xup_E, \
        d.Xup_r, d.v
    S, So, slot, idx_v, H, c, f, f_tree, X0_E, X0_r, rigid_o, nb = (
        p.S, w.So, p.slot, p.idx_v, w.H, w.c, w.f, w.f_tree, w.X0_E, w.X0_r, w.rigid_o,
        len(parent))
    for jk in range(nb - 1, H.shape[0]):              # the couplings H[j, k], j < k, start at zero
        for row in range(6):
            for col in range(6):
                H[jk, row, col] = 0.0
    set_row6(v, 0, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    for i in range(1, nb):
        Eu, ru = transform_at(Xup_E, Xup_r, i)
        E, r = Eu, ru
        if parent[i] > 0:                                       # ^iX_0 = ^iX_p ^pX_0
            Ep, rp = transform_at(X0_E, X0_r, parent[i])
            E, r = product(Eu, ru, Ep, rp)
        X0_r[i, 0], X0_r[i, 1], X0_r[i, 2] = r
        for a in range(3):
            for b in range(3):
                X0_E[i, a, b] = E[3 * a + b]
        vJ = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for a in range(joint_nv(joint[i])):
            s_a = row6_of(S, i, a)
            vJ = add_scaled6(vJ, qd[idx_v[i] + a], s_a)
            set_row6_of(So, i, a, inverse_motion(E, r, s_a))
        vi = add6(transformed_motion(Eu, ru, row6(v, parent[i])), vJ)
        set_row6(v, i, vi)
        set_row6(c, i, inverse_motion(E, r, cross_motion(vi, vJ)))
        fi = sub6(row6(f_ext, i), cross_force(vi, rigid_force(rigid[i], vi)))
        fi = transposed_force(E, r, fi)
        set_row6(f, i, fi)
        set_row6(f_tree, i, fi)
        Io = rigid_congruence(X0_E[i], r, rigid[i])
        for e in range(10):
            rigid_o[i, e] = Io[e]
        ii = slot[i, i]
        for row in range(6):
            for col in range(6):
                H[ii, row, col] = 0.0
        add_rigid_matrix(Io, H[ii])


@njit(error_model='numpy', fastmath={'contract'})
def constraint_penalties(m, d, p, w, mu, a0):
    """Cut rows K, k of every constraint (lcaba.cut_rows; the kept ones, p.con_rows) and contact
    (contacts.ContactFrames.cut_rows) and their penalty in H and f (eqs. 20, 25, 35); the velocity
    violation max |K qd| of the loops, couplings and implicit constraints into w.violation."""
    w.violation[0] = 0.0
    for con in range(len(p.con_rows)):
        if p.con_contact[con] >= 0:
            contact_rows(d, p, w, con)
        elif p.con_implicit[con] >= 0:
            implicit_cut_rows(m, d, p, w, con)
        elif p.con_loop[con] < 0:
            coupling_rows(d, p, w, con)
        else:
            loop_rows(d, p, w, con)
        rows_to_ground(p, w, con)
        add_penalty(p, w, con, mu, a0)


@njit(inline='always')
def rows_to_ground(p, w, con):
    """The rows K^b of constraint con (on body b's acceleration in body coordinates) on its
    acceleration in ground coordinates: K^b ^bX_0 (the ground's entries are there already)."""
    K, X0_E, X0_r = w.K, w.X0_E, w.X0_r
    for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
        b = p.entry_body[e]
        if b > 0:
            E, r = transform_at(X0_E, X0_r, b)
            for row in range(p.con_rows[con]):
                set_row6_of(K, e, row, transposed_force(E, r, row6_of(K, e, row)))


@njit(error_model='numpy', fastmath={'contract'})
def coupling_rows(d, p, w, con):
    """Entries K (rows on each body's acceleration) and k of coupling con (lcaba.cut_rows):
    sum_j c_j (S_j^T a_j - S_j^T Xup_j a_parent) = 0 (Sathya & Carpentier 2025 Remark 1); its
    |K qd| (the same rows on the velocities) into w.violation."""
    K, k, Xup_E, Xup_r, S, v, entry_body = w.K, w.k, d.Xup_E, d.Xup_r, p.S, d.v, p.entry_body
    term_body, term_coefficient, term_entry = p.term_body, p.term_coefficient, p.term_entry
    for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
        set_row6_of(K, e, 0, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    k[con, 0] = 0.0
    violation = 0.0
    for t in range(p.con_terms[con, 0], p.con_terms[con, 1]):
        j, coefficient, e_j, e_parent = (
            term_body[t], term_coefficient[t], term_entry[t, 0], term_entry[t, 1])
        E, r = transform_at(Xup_E, Xup_r, j)
        s = row6_of(S, j, 0)
        x = transposed_force(E, r, s)
        for c in range(6):
            K[e_j, 0, c] += coefficient * s[c]
            K[e_parent, 0, c] -= coefficient * x[c]
        violation += coefficient * (dot6(s, row6(v, j)) - dot6(x, row6(v, entry_body[e_parent])))
    w.violation[0] = max(w.violation[0], abs(violation))


@njit(error_model='numpy', fastmath={'contract'})
def loop_rows(d, p, w, con):
    """Entries K (rows on each body's acceleration) and k of loop constraint con (lcaba.cut_rows);
    the largest |K qd| = |Psi^T (v_B - v_A)| of its rows into w.violation."""
    rows, e0, lp, K, k = p.con_rows[con], p.con_entries[con, 0], p.con_loop[con], w.K, w.k
    Xup_E, Xup_r, loop_PsiT, universal = d.Xup_E, d.Xup_r, p.loop_PsiT, p.loop_universal[lp]
    EA, rA = path_transform(Xup_E, Xup_r, p.loop_path[lp, 0], p.loop_path_len[lp, 0])
    EB, rB = path_transform(Xup_E, Xup_r, p.loop_path[lp, 1], p.loop_path_len[lp, 1])
    # for the closure check (loops in the order of flat/model.py's)
    set_loop_ends(d, lp, EA, rA, EB, rB)
    E, r = relative(EA, rA, EB, rB)           # X_A_B = X_A_nca X_B_nca^-1
    A, B = p.entry_body[e0], p.entry_body[e0 + 1]
    vA, vB = row6(d.v, A), transformed_motion(E, r, row6(d.v, B))
    vAxvB = cross_motion(vA, vB)
    for row in range(rows):
        PsiT, bias = row6_of(loop_PsiT, lp, row), 0.0
        if row == 0 and universal:
            PsiT, bias = universal_row(p, lp, E, vA, vB)
        set_row6_of(K, e0 + 1, row, transposed_force(E, r, PsiT))               # Psi^T X_P_A X_A_B
        set_row6_of(K, e0, row, scale6(-1.0, PsiT))
        k[con, row] = dot6(PsiT, vAxvB) + bias
        w.violation[0] = max(w.violation[0], abs(dot6(PsiT, sub6(vB, vA))))


@njit(error_model='numpy', fastmath={'contract'})
def contact_rows(d, p, w, con):
    """Entries K and k of a contact (contacts.ContactFrames.cut_rows), c1 = ^c1X_1 on body 1,
    c2 = ^c2X_2 on body 2 (c1 itself for the world) and ^c1X_2 = ^c1X_1 ^1X_2:
    6D: K_1 = Psi^T ^c1X_1, K_2 = -Psi^T ^c1X_2, k = -Psi^T (v_c1 x ^c1X_2 v_2) with Psi^T the
    [linear; angular] reorder; 3D: K_1 = [0 1] ^c1X_1, K_2 = -E [0 1] ^c2X_2 with E the rotation
    of ^c1X_c2, k = E (w_c2 x nu_c2) - w_c1 x nu_c1 (classical point accelerations)."""
    rows, e0, n, K, k = p.con_rows[con], p.con_entries[con, 0], p.con_contact[con], w.K, w.k
    Xup_E, Xup_r, path, path_len = d.Xup_E, d.Xup_r, p.contact_path, p.contact_path_len
    E1, r1 = block3(p.contact_E1, n, 0, 0), row3(p.contact_r1, n)
    EA, rA = path_transform(Xup_E, Xup_r, path[n, 0], path_len[n, 0])
    EB, rB = path_transform(Xup_E, Xup_r, path[n, 1], path_len[n, 1])
    EA, rA = relative(EA, rA, EB, rB)                       # ^1X_2
    E, r = product(E1, r1, EA, rA)                          # ^c1X_2
    v1 = transformed_motion(E1, r1, row6(d.v, p.entry_body[e0]))
    v2_body = row6(d.v, p.entry_body[e0 + 1])
    if rows == 6:
        x = cross_motion(v1, transformed_motion(E, r, v2_body))
        for row in range(6):
            psi = unit6((row + 3) % 6)
            set_row6_of(K, e0, row, transposed_force(E1, r1, psi))
            set_row6_of(K, e0 + 1, row, scale6(-1.0, transposed_force(E, r, psi)))
            k[con, row] = -x[(row + 3) % 6]
        return
    E2, r2 = E, r                                           # the world: c2 = c1
    if p.contact_world[n] == 0:
        E2, r2 = block3(p.contact_E2, n, 0, 0), row3(p.contact_r2, n)
    E12 = relative(E, r, E2, r2)[0]                         # rotation of ^c1X_c2
    v2 = transformed_motion(E2, r2, v2_body)
    w2v2 = mul_vector3(E12, (v2[1] * v2[5] - v2[2] * v2[4], v2[2] * v2[3] - v2[0] * v2[5],
                             v2[0] * v2[4] - v2[1] * v2[3]))
    w1v1 = (v1[1] * v1[5] - v1[2] * v1[4], v1[2] * v1[3] - v1[0] * v1[5],
            v1[0] * v1[4] - v1[1] * v1[3])
    for row in range(3):
        set_row6_of(K, e0, row, transposed_force(E1, r1, unit6(row + 3)))
        psi = (0.0, 0.0, 0.0, E12[3 * row], E12[3 * row + 1], E12[3 * row + 2])
        set_row6_of(K, e0 + 1, row, scale6(-1.0, transposed_force(E2, r2, psi)))
        k[con, row] = w2v2[row] - w1v1[row]


@njit(inline='always')
def unit6(j):
    """The unit 6-tuple e_j."""
    return (1.0 if j == 0 else 0.0, 1.0 if j == 1 else 0.0, 1.0 if j == 2 else 0.0,
            1.0 if j == 3 else 0.0, 1.0 if j == 4 else 0.0, 1.0 if j == 5 else 0.0)


@njit(inline='always')
def universal_row(p, lp, E_AB, vA, vB):
    """A universal loop's first row, which turns with both frames (LoopConstraint.directions,
    turning_bias), and its bias: with a2 = R_rel axis2 (R_rel = E_P X_A_B's rotation E_S^T, in P),
    ^PX_A^T [a1 x a2; 0] = [E_P^T (a1 x a2); 0] (a pure moment: the offset of P does not enter) and
    (a1 . w_r)(a2 . w_r) - (a1 . a2)|w_r|^2, w_r = E_P (w_B - w_A) in P (vB: v_B in A)."""
    EP, a1 = block3(p.loop_pred_E, lp, 0, 0), row3(p.loop_a1, lp)
    a2 = mul_vector3(EP, mul_vector3(E_AB, rotated_back(block3(p.loop_succ_E, lp, 0, 0),
                                                        row3(p.loop_a2, lp))))
    wr = mul_vector3(EP, (vB[0] - vA[0], vB[1] - vA[1], vB[2] - vA[2]))
    n = rotated_back(EP, (a1[1] * a2[2] - a1[2] * a2[1], a1[2] * a2[0] - a1[0] * a2[2],
                          a1[0] * a2[1] - a1[1] * a2[0]))
    a1w = a1[0] * wr[0] + a1[1] * wr[1] + a1[2] * wr[2]
    a2w = a2[0] * wr[0] + a2[1] * wr[1] + a2[2] * wr[2]
    bias = (a1w * a2w - (a1[0] * a2[0] + a1[1] * a2[1] + a1[2] * a2[2])
            * (wr[0] * wr[0] + wr[1] * wr[1] + wr[2] * wr[2]))
    return (n[0], n[1], n[2], 0.0, 0.0, 0.0), bias


@njit(error_model='numpy', fastmath={'contract'})
def add_penalty(p, w, con, mu, a0):
    """Ground entries folded into k (eq. 35), then (mu/2) |sum_l K^l a_l - k|^2 (eqs. 20, 25):
    f_b += mu K_b^T k and H[b, b2] += mu K_b^T K_b2 for every pair of entries."""
    rows, e0, e1, entry_body = (
        p.con_rows[con], p.con_entries[con, 0], p.con_entries[con, 1], p.entry_body)
    K, k, f, H, slot = w.K, w.k, w.f, w.H, p.slot
    for e in range(e0, e1):
        if entry_body[e] == 0:
            for row in range(rows):
                k[con, row] -= dot6(row6_of(K, e, row), a0)
    for e in range(e0, e1):
        b = entry_body[e]
        if b == 0:
            continue
        Kk = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for row in range(rows):
            Kk = add_scaled6(Kk, k[con, row], row6_of(K, e, row))
        add_row6(f, b, scale6(mu, Kk))
        for e2 in range(e, e1):                   # the entries of a constraint are distinct bodies
            b2 = entry_body[e2]
            if b2 == 0:
                continue
            s = slot[b, b2]
            for r in range(0, 6, 2):
                M = rows_of_product(K, e, 0, e2, 0, rows, r)
                for h in range(2):
                    for c in range(6):
                        if b <= b2:
                            H[s, r + h, c] += mu * M[h][c]
                        else:
                            H[s, c, r + h] += mu * M[h][c]


@njit(error_model='numpy', fastmath={'contract'})
def backward_sweep(m, d, p, w, tau, a0):
    """Eliminate the bodies in S^E (Sathya & Carpentier 2025 Alg. 1 lines 11-23, eqs. 29-30,
    34-35), in the ground frame: Z_i, Y_ij, ubar_i stored. NOT_POSITIVE with the first body
    whose D_i is not positive definite in w.info."""
    parent, S, slot, neighbours = m.parent, w.So, p.slot, p.neighbours
    joint, order, n_neighbours, idx_v, free = m.joint, p.order, p.n_neighbours, p.idx_v, p.free
    H, f, c, L, Z, Y, ubar, info, status = w.H, w.f, w.c, w.L, w.Z, w.Y, w.ubar, w.info, OK
    for s in range(len(order)):
        i = order[s]
        n, pa, nN = joint_nv(joint[i]), parent[i], n_neighbours[i]
        Hii = blocks(H, slot[i, i], False)
        # Z rows: U^T = S^T H_ii; D = S^T U; u = tau_i + S^T f_i
        for a in range(n):
            # a locked column: D's row of the identity, u = 0
            s_a = scale6(free[i, a], row6_of(S, i, a))
            set_row6_of(Z, i, a, tmul_blocks(Hii, s_a))
            for b in range(a + 1):
                L[i, a, b] = dot6(row6_of(Z, i, b), s_a)
            L[i, a, a] += 1.0 - free[i, a]
            ubar[i, a] = (tau[idx_v[i] + a] + dot6(s_a, row6(f, i))) * free[i, a]
        # the first such body; the sweep goes on, into nan
        if not cholesky_of(L, i, n) and status == OK:
            status, info[0] = NOT_POSITIVE, i
        solve_rows(L, i, n, Z, 0)
        solve(L, i, n, ubar)
        for q in range(nN):                                  # Y_j rows: L^-1 S^T H_ij
            Hij = blocks(H, slot[i, neighbours[i, q]], i > neighbours[i, q])
            for a in range(n):
                set_row6_of(Y, i, 6 * q + a,
                            tmul_blocks(Hij, scale6(free[i, a], row6_of(S, i, a))))
            solve_rows(L, i, n, Y, 6 * q)
        c_i, ub = row6(c, i), row6(ubar, i)
        if pa > 0:
            Ha11, Ha12, _, Ha22 = Hii                        # H^a_i = H_ii - Z^T Z
            for a in range(n):
                z = row6_of(Z, i, a)
                zt, zb = (z[0], z[1], z[2]), (z[3], z[4], z[5])
                Ha11, Ha12, Ha22 = (sub_outer3(Ha11, zt, zt), sub_outer3(Ha12, zt, zb),
                                    sub_outer3(Ha22, zb, zb))
            add_blocks(H, slot[pa, pa], Ha11, Ha12, transpose3(Ha12), Ha22, False)  # eq. 30a
            # eq. 30b: f_i - Ha c_i - U D^-1 u
            x = sub6(row6(f, i), mul_blocks((Ha11, Ha12, transpose3(Ha12), Ha22), c_i))
            for a in range(n):
                x = add_scaled6(x, -ub[a], row6_of(Z, i, a))
            add_row6(f, pa, x)
        for q in range(nN):
            j = neighbours[i, q]
            C11, C12, C21, C22 = blocks(H, slot[i, j], i > j)    # C = P_i H_ij = H_ij - Z^T Y_j
            for a in range(n):
                z, y = row6_of(Z, i, a), row6_of(Y, i, 6 * q + a)
                zt, zb, yt, yb = ((z[0], z[1], z[2]), (z[3], z[4], z[5]),
                                  (y[0], y[1], y[2]), (y[3], y[4], y[5]))
                C11, C12 = sub_outer3(C11, zt, yt), sub_outer3(C12, zt, yb)
                C21, C22 = sub_outer3(C21, zb, yt), sub_outer3(C22, zb, yb)
            if pa > 0:                                       # eq. 30c; with j = parent eq. 34
                add_blocks(H, slot[pa, j], C11, C12, C21, C22, pa > j)
                if j == pa:
                    add_blocks(H, slot[pa, j], C11, C12, C21, C22, True)
                x = c_i                                      # eq. 30e: f_j -= Y_j^T ubar + C^T c_i
            else:
                x = add6(c_i, a0)            # eqs. 30e and 35: f_j -= Y_j^T ubar + C^T (c_i + a_0)
            x = tmul_blocks((C11, C12, C21, C22), x)
            for a in range(n):
                x = add_scaled6(x, ub[a], row6_of(Y, i, 6 * q + a))
            add_row6(f, j, (-x[0], -x[1], -x[2], -x[3], -x[4], -x[5]))
            for q2 in range(q, nN):                          # eq. 30d (fill-in)
                k = neighbours[i, q2]
                jk = slot[j, k]
                for row in range(0, 6, 2):
                    M = rows_of_product(Y, i, 6 * q, i, 6 * q2, n, row)
                    for h in range(2):
                        for col in range(6):
                            if j <= k:
                                H[jk, row + h, col] -= M[h][col]
                            else:
                                H[jk, col, row + h] -= M[h][col]
    return status


@njit(error_model='numpy', fastmath={'contract'})
def rollout(m, d, p, w, a0, reduced):
    """Accelerations in reverse elimination order (Alg. 1 lines 24-26):
    qdd_i = L_i^-T (ubar_i - Z_i a'_i - sum_j Y_ij a_j), a'_i = a_parent + c_i and
    a_i = a'_i + S_i qdd_i (ground frame) from a_0, into w.qdd and w.a; reduced (Alg. 2): their
    changes dqdd, da from Delta a_0 = a0 with c = 0 (into w.da), added to w.qdd and w.a as they
    come (Alg. 3 line 12). Returns ||dqdd||_inf (reduced), else 0."""
    c, a = (w.zero_c, w.da) if reduced else (w.c, w.a)
    qdd, a_total, step = w.qdd, w.a, 0.0
    set_row6(a, 0, a0)
    joint, parent, S, order, idx_v = m.joint, m.parent, w.So, p.order, p.idx_v
    n_neighbours, neighbours, Z, Y, L, ubar, z = (
        p.n_neighbours, p.neighbours, w.Z, w.Y, w.L, w.ubar, w.z)
    for s in range(len(order) - 1, -1, -1):
        i = order[s]
        n = joint_nv(joint[i])
        ai = add6(row6(a, parent[i]), row6(c, i))
        for j in range(n):
            t = ubar[i, j] - dot6(row6_of(Z, i, j), ai)
            for q in range(n_neighbours[i]):
                t -= dot6(row6_of(Y, i, 6 * q + j), row6(a, neighbours[i, q]))
            z[j] = t
        solve_transposed(L, i, n, z)
        for j in range(n):
            if reduced:
                qdd[idx_v[i] + j] += z[j]
                step = max(step, abs(z[j]))
            else:
                qdd[idx_v[i] + j] = z[j]
            ai = add_scaled6(ai, z[j], row6_of(S, i, j))
        set_row6(a, i, ai)
        if reduced:
            add_row6(a_total, i, ai)
    return step


@njit(error_model='numpy', fastmath={'contract'})
def reduced_backward_sweep(m, d, p, w, dtau):
    """ubar_i of the body forces df = d.f and joint forces dtau, reusing the elimination
    (Sathya & Carpentier 2025 Alg. 2: H does not depend on lambda); the reduced rollout then gives
    the changes of qdd and of a."""
    joint, parent, df, S, order, idx_v = m.joint, m.parent, d.f, w.So, p.order, p.idx_v
    n_neighbours, neighbours, Z, Y, L, ubar, free = (
        p.n_neighbours, p.neighbours, w.Z, w.Y, w.L, w.ubar, p.free)
    for s in range(len(order)):
        i = order[s]
        n, pa, df_i = joint_nv(joint[i]), parent[i], row6(df, i)
        for j in range(n):
            ubar[i, j] = (dtau[idx_v[i] + j] + dot6(row6_of(S, i, j), df_i)) * free[i, j]
        solve(L, i, n, ubar)
        if pa > 0:
            x = df_i
            for j in range(n):
                x = add_scaled6(x, -ubar[i, j], row6_of(Z, i, j))
            add_row6(df, pa, x)
        for q in range(n_neighbours[i]):
            x = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            for j in range(n):
                x = add_scaled6(x, -ubar[i, j], row6_of(Y, i, 6 * q + j))
            add_row6(df, neighbours[i, q], x)


@njit(error_model='numpy', fastmath={'contract'})
def update_multipliers(p, w, mu, first):
    """r_c = sum_l K^l a_l - k on every constraint and lambda += mu r (eq. 33; lambda^0 = 0 with
    first); returns ||r||_inf."""
    con_rows, con_row0, con_entries, entry_body = (
        p.con_rows, p.con_row0, p.con_entries, p.entry_body)
    K, k, a, r, lam, worst = w.K, w.k, w.a, w.r, w.lam, 0.0
    for con in range(len(con_rows)):
        e0, e1 = con_entries[con, 0], con_entries[con, 1]
        for row in range(con_rows[con]):
            t = -k[con, row]
            for e in range(e0, e1):
                if entry_body[e] > 0:
                    t += dot6(row6_of(K, e, row), row6(a, entry_body[e]))
            r[con, row] = t
            worst = max(worst, abs(t))
            j = con_row0[con] + row
            lam[j] = mu * t if first else lam[j] + mu * t
    return worst


@njit(error_model='numpy', fastmath={'contract'})
def gradient_forces(m, d, p, w, mu):
    """df = f_tree - I a - sum K^T (lambda + mu r) into d.f: the body forces of the augmented
    Lagrangian's gradient at the current accelerations (lcaba._gradient_forces)."""
    rigid, df, f_tree, a, K, r, lam = w.rigid_o, d.f, w.f_tree, w.a, w.K, w.r, w.lam
    con_rows, con_row0, con_entries, entry_body = (
        p.con_rows, p.con_row0, p.con_entries, p.entry_body)
    for i in range(1, len(a)):
        set_row6(df, i, sub6(row6(f_tree, i), rigid_force(rigid[i], row6(a, i))))
    for con in range(len(con_rows)):
        for e in range(con_entries[con, 0], con_entries[con, 1]):
            b = entry_body[e]
            if b == 0:
                continue
            x = row6(df, b)
            for row in range(con_rows[con]):
                x = add_scaled6(x, -(lam[con_row0[con] + row] + mu * r[con, row]),
                                row6_of(K, e, row))
            set_row6(df, b, x)


@njit(cache=True, nogil=True, error_model='numpy', fastmath={'contract'})
def lcaba(m, d, p, w, q, qd, tau, f_ext, mu, tolerance, max_iterations):
    """Spanning accelerations of the closed-loop system into w.qdd by the proximal LCABA
    (Sathya & Carpentier 2025, Alg. 3; lcaba.lcaba); multipliers into w.lam,
    [iterations, residual, converged] into w.result. qd, tau spanning (nv); f_ext (nb x 6) in body
    coordinates; q None: d.Xup is at the positions already."""
    if q is not None:
        update_transforms(m, d, q)
    first_forward_sweep(m, d, p, w, qd, f_ext)
    a0 = (0.0, 0.0, 0.0, -m.gravity[0], -m.gravity[1], -m.gravity[2])
    constraint_penalties(m, d, p, w, mu, a0)
    status = backward_sweep(m, d, p, w, tau, a0)
    if status != OK:
        return status
    rollout(m, d, p, w, a0, False)
    iterations, step = 1, math.inf
    while True:
        residual = update_multipliers(p, w, mu, iterations == 1)
        converged = min(step, residual) < tolerance
        if converged or iterations == max_iterations:
            break
        gradient_forces(m, d, p, w, mu)
        reduced_backward_sweep(m, d, p, w, tau)
        step = rollout(m, d, p, w, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), True)
        iterations += 1
    w.result[0], w.result[1], w.result[2] = iterations, residual, 1.0 if converged else 0.0
    return OK
