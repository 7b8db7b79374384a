"""Cluster ABA kernels (algorithms/aba.py; Chignoli et al. 2023 Alg. 1): with
V_k = L_k^-1 (^kX_o^T U_k)^T the parent gets the rank-m_k update
^kX_o^T U D^-1 U^T ^kX_o = V_k^T V_k (eqs. 55-56); held coordinates (roles) keep D's identity rows
and zero acceleration."""

import math

from numba import njit

from .cache import key_on_helpers
from .kinematics import (D_ILL_CONDITIONED, D_NOT_POSITIVE, explicit_constraints, kinematics, OK,
                         update_transforms)
from .linalg import backward_solve, cholesky, forward_solve, forward_solve_rows
from .rnea import bias_acceleration, bias_force, set_base_acceleration
from .spatial import (add_rigid_matrix, congruence_add, dot6, mat6_vec, rigid_congruence,
                      rigid_force, transform_force)

key_on_helpers(__file__)


@njit(error_model='numpy')
def articulated_inertias(m, d):
    """I^A of every body, tips to base, from I^A = I: for each cluster k U_k = I^A_k S_k (zero on
    its held coordinates, whose rows and columns of D_k are those of the identity: they stay still,
    aba.py), D_k = S_k^T U_k = L_k L_k^T, V_k = L_k^-1 (^kX_o^T U_k)^T and
    I^A_o += sum_i ^iX_o^T I^A_i ^iX_o - V_k^T V_k (I^a of eqs. 55-56 carried to the output body).
    A leaf's I^A is its I, used as 10 parameters (rigid_force, rigid_congruence); d.IA holds the
    others'."""
    inertia, rigid, leaf, output, body_range, y_range, free = \
        m.inertia, m.rigid_inertia, m.leaf, m.output, m.body_range, m.y_range, m.free_y
    Xo_E, Xo_r, S, U, IA, L, V = d.Xo_E, d.Xo_r, d.S, d.U, d.IA, d.L, d.V
    limit = m.d_condition_limit
    for i in range(1, len(inertia)):
        if not leaf[i]:
            for r in range(6):
                for c in range(6):
                    IA[i, r, c] = inertia[i, r, c]
    for k in range(len(output) - 1, -1, -1):
        b0, b1, mk, Lk, Vk = (body_range[k, 0], body_range[k, 1],
                              y_range[k, 1] - y_range[k, 0], L[k], V[k])
        for i in range(b0, b1):
            for j in range(mk):
                if leaf[i]:
                    x, u = rigid_force(rigid[i], S[i, j]), U[i, j]
                    for e in range(6):
                        u[e] = x[e] * free[y_range[k, 0] + j]
                else:
                    mat6_vec(IA[i], S[i, j], U[i, j])
                    for e in range(6):
                        U[i, j, e] *= free[y_range[k, 0] + j]
        for r in range(mk):             # a held coordinate's row and column: those of the identity
            for c in range(r + 1):
                Lk[r, c] = 0.0
                for i in range(b0, b1):
                    Lk[r, c] += dot6(S[i, r], U[i, c])
                Lk[r, c] *= free[y_range[k, 0] + r]
            Lk[r, r] += 1.0 - free[y_range[k, 0] + r]
        if not cholesky(Lk, mk):
            d.info[0] = k
            return D_NOT_POSITIVE
        smallest, largest = math.inf, 0.0      # of the reciprocals 1/L_jj: their ratio is the same
        for j in range(mk):
            smallest, largest = min(smallest, Lk[j, j]), max(largest, Lk[j, j])
        if smallest * smallest <= limit * largest * largest:
            d.info[0] = k
            return D_ILL_CONDITIONED
        o = output[k]
        if o == 0:
            continue
        for j in range(mk):
            for e in range(6):
                Vk[j, e] = 0.0
            for i in range(b0, b1):
                transform_force(Xo_E[i], Xo_r[i], U[i, j], Vk[j], True)
        forward_solve_rows(Lk, mk, Vk)
        for i in range(b0, b1):
            if leaf[i]:                                         # I^A_i = I_i: the cheap congruence
                add_rigid_matrix(rigid_congruence(Xo_E[i], Xo_r[i], rigid[i]), IA[o])
            else:
                congruence_add(Xo_E[i], Xo_r[i], IA[i], IA[o])
        for r in range(6):
            for j in range(mk):
                t, v, row = Vk[j, r], Vk[j], IA[o, r]
                for c in range(6):
                    row[c] -= t * v[c]
    return OK


@njit(error_model='numpy')
def articulated_biases(m, d, tau):
    """Tips to base, for each cluster k: u_k = tau_k - S_k^T p^A_k (tau_k = G_k^T tau for spanning
    forces) and p^A_o += sum_i ^iX_o^T (p^A_i + I^A_i c_i) + V_k^T L_k^-1 (u_k - U_k^T c_k) (p^a of
    Alg. 1)."""
    rigid, leaf, output, body_range, v_range, y_range = m.rigid_inertia, m.leaf, m.output, \
        m.body_range, m.v_range, m.y_range
    Xo_E, Xo_r, S, U, IA, c, pA, u, z, w = d.Xo_E, d.Xo_r, d.S, d.U, d.IA, d.c, d.f, d.u, d.z, d.w6
    G, L, V = d.G, d.L, d.V
    spanning, free = tau.shape[0] != m.ny, m.free_y
    for k in range(len(output) - 1, -1, -1):
        b0, b1, y0, v0 = body_range[k, 0], body_range[k, 1], y_range[k, 0], v_range[k, 0]
        mk = y_range[k, 1] - y0
        for j in range(mk):
            t = 0.0
            if spanning:
                for r in range(v_range[k, 1] - v0):
                    t += G[k, j, r] * tau[v0 + r]
            else:
                t = tau[y0 + j]
            for i in range(b0, b1):
                t -= dot6(S[i, j], pA[i])
            u[y0 + j] = t * free[y0 + j]                     # a held coordinate's force is ignored
        o = output[k]
        if o == 0:
            continue
        for j in range(mk):
            z[j] = u[y0 + j]
            for i in range(b0, b1):
                z[j] -= dot6(U[i, j], c[i])
        forward_solve(L[k], mk, z)
        for i in range(b0, b1):
            if leaf[i]:
                x = rigid_force(rigid[i], c[i])
                for e in range(6):
                    w[e] = x[e] + pA[i, e]
            else:
                mat6_vec(IA[i], c[i], w)
                for e in range(6):
                    w[e] += pA[i, e]
            transform_force(Xo_E[i], Xo_r[i], w, pA[o], True)
        for j in range(mk):
            for e in range(6):
                pA[o, e] += V[k, j, e] * z[j]


@njit(error_model='numpy')
def aba_accelerations(m, d):
    """Base to tips, for each cluster k: ydd_k = D_k^-1 (u_k - U_k^T a'), a' = ^kX_o a_o + c_k,
    then a_k = a' + S_k ydd_k."""
    output, body_range, y_range = m.output, m.body_range, m.y_range
    Xo_E, Xo_r, S, U, a, c, z, u, L, ydd = d.Xo_E, d.Xo_r, d.S, d.U, d.a, d.c, d.z, d.u, d.L, d.ydd
    for k in range(len(output)):
        o, b0, b1, y0 = output[k], body_range[k, 0], body_range[k, 1], y_range[k, 0]
        mk = y_range[k, 1] - y0
        for i in range(b0, b1):
            bias_acceleration(Xo_E, Xo_r, a, c, i, o)
        for j in range(mk):
            z[j] = u[y0 + j]
            for i in range(b0, b1):
                z[j] -= dot6(U[i, j], a[i])
        forward_solve(L[k], mk, z)
        backward_solve(L[k], mk, z)
        for j in range(mk):
            ydd[y0 + j] = z[j]
        for i in range(b0, b1):
            for e in range(6):
                for j in range(mk):
                    a[i, e] += S[i, j, e] * z[j]


@njit(error_model='numpy')
def spanning_accelerations(m, d, ydd):
    """qdd_k = G_k ydd_k + g_k into d.qdd."""
    v_range, y_range, G, g, qdd = m.v_range, m.y_range, d.G, d.g, d.qdd
    for k in range(len(v_range)):
        v0, y0 = v_range[k, 0], y_range[k, 0]
        for r in range(v_range[k, 1] - v0):
            qdd[v0 + r] = g[v0 + r]
            for j in range(y_range[k, 1] - y0):
                qdd[v0 + r] += G[k, j, r] * ydd[y0 + j]


@njit(cache=True, nogil=True, error_model='numpy')
def aba(m, d, q, yd, tau, f_ext):
    """Independent accelerations into d.ydd and spanning ones G ydd + g into d.qdd (aba.py);
    tau independent (ny) or spanning (nv, projected with G^T)."""
    status = kinematics(m, d, q, yd)
    if status == OK:
        status = articulated_inertias(m, d)                          # backward pass
    if status == OK:
        aba_forces(m, d, tau, f_ext)
    return status


@njit(error_model='numpy')
def aba_forces(m, d, tau, f_ext):
    """The passes of aba that read the forces, at the velocities and articulated inertias that
    d holds: p^A, u and p^a tips to base, then the accelerations base to tips (Alg. 1)."""
    rigid, v, pA = m.rigid_inertia, d.v, d.f
    for i in range(1, len(rigid)):
        bias_force(rigid[i], v[i], f_ext[i], pA[i])                  # p^A = v x* I v - f_ext
    articulated_biases(m, d, tau)
    set_base_acceleration(m, d)
    aba_accelerations(m, d)                                          # forward pass
    spanning_accelerations(m, d, d.ydd)


@njit(cache=True, nogil=True, error_model='numpy')
def spanning(m, d, q, yd, ydd):
    """qdd = G ydd + g into d.qdd (G, g from the constraints at q, yd)."""
    update_transforms(m, d, q)
    status = explicit_constraints(m, d, yd)
    if status == OK:
        spanning_accelerations(m, d, ydd)
    return status
