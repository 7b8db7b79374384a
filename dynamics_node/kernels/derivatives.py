"""Derivative kernels (algorithms/derivatives.py): the first-order derivatives of cluster inverse
and forward dynamics with respect to the independent coordinates, without contacts.

world_motion and world_composites put the spanning tree's columns, motion and composites in root
coordinates (d.root_E, d.root_r from frames.link_transforms); spanning_derivatives fills dtau/dq,
dtau/dqd and H on the spanning velocities from them; chain_rule maps them to the independent
coordinates cluster by cluster (G_k blocks), with each LOOP cluster's moving G and g (loop_terms:
the bilinear constraint_bias and the third-order bias_rate, solved on the cluster's sparse QR of
K_d). As in constraint_bias, the loops' terms are computed in the cluster's output frame: a change
of coordinates at the instant leaves them as they are.
"""

import numpy as np
from numba import njit

from .cache import key_on_helpers
from .dense import FASTMATH, subtract_scaled, tree_factor, tree_solve
from .aba import aba, spanning_accelerations
from .expressions import implicit_mixed
from .frames import link_transforms
from .joints import joint_column, joint_nv
from .kinematics import constraint_bias, kinematics, LOOP, loop_constraint, OK, SINGLE
from .linalg import qr_solve
from .spatial import (add_scaled, cross_force, cross_motion, dot6, inverse_motion, rigid_force,
                      rigid_congruence, transform_at, transposed_force, ZERO6)

key_on_helpers(__file__)


class DerivativeWorkspace:
    """The buffers of the derivative kernels for one FlatData: the results d_y, d_yd, d_ydd
    (ny x ny: dtau_y/dy, dtau_y/dyd, H_y) and fd_y, fd_yd, H_inv (forward dynamics); per
    spanning velocity (nv, 6): the root-frame column Sw, Psid, Psidd, Phi and one body's rows
    row_B = 2 S^T B^C, row_I = S^T I^C and its columns below_q, below_qd, below_qdd; per body:
    vw, aw (nb, 6), the composites Ic_w (nb, 10), Idot_w (nb, 6, 6), hc_w, F_w (nb, 6); dq, dqd,
    H
    (nv x nv) and tau (nv) on the spanning tree; T_y, T_yd, T_ydd (nv x ny), the spanning rows of
    the chain rule; dG (M, M, N), rate_qd, rate_qdd, dg_dyd (N), rhs, term (R) and dG_tau
    (nc, M, M), a loop cluster's scratch; Hf (ny x ny), the factor of H_y (free_factor), and
    solved (ny x 3 ny), forward_dynamics_derivatives' right-hand sides.
    With contact rows, dq, dqd, H and T_y, T_yd, T_ydd have that many rows more, below the
    spanning tree's: the contacts' partials (contact_derivatives.py), which chain_rule maps with
    the tree's."""

    def __init__(self, flat, contact_rows=0):
        nb, nc, nv, ny, M, N = flat.nb, flat.nc, flat.nv, flat.ny, flat.M, flat.N
        rows = nv + contact_rows
        R = flat.K_const.shape[1]
        self.d_y, self.d_yd, self.d_ydd = (np.zeros((ny, ny)) for _ in range(3))
        self.fd_y, self.fd_yd, self.H_inv, self.Hf = (np.zeros((ny, ny)) for _ in range(4))
        self.Sw, self.Psid, self.Psidd, self.Phi = (np.zeros((nv, 6)) for _ in range(4))
        self.row_B, self.row_I = np.zeros((nv, 6)), np.zeros((nv, 6))
        self.below_q, self.below_qd, self.below_qdd = (np.zeros((nv, 6)) for _ in range(3))
        self.vw, self.aw, self.hc_w, self.F_w = (np.zeros((nb, 6)) for _ in range(4))
        self.Ic_w, self.Idot_w = np.zeros((nb, 10)), np.zeros((nb, 6, 6))
        self.dq, self.dqd, self.H = (np.zeros((rows, nv)) for _ in range(3))
        self.tau = np.zeros(nv)
        self.T_y, self.T_yd, self.T_ydd = (np.zeros((rows, ny)) for _ in range(3))
        self.dG = np.zeros((M, M, N))
        self.rate_qd, self.rate_qdd, self.dg_dyd = (np.zeros(N) for _ in range(3))
        self.rhs, self.term = np.zeros(R), np.zeros(R)
        self.dG_tau = np.zeros((nc, M, M))
        self.solved = np.zeros((ny, 3 * ny))


@njit(inline='always', error_model='numpy')
def first_column(m, i):
    """The spanning velocity index of the first column of body i's joint."""
    return m.v_range[m.cluster[i], 0] + m.col[i]


@njit(error_model='numpy')
def world_motion(m, d, w):
    """Root-frame columns Sw, velocities vw, accelerations aw (aw_0 = -a_g) and Psid, Psidd, Phi
    of every joint at d.qd, d.qdd (algorithms/derivatives.WorldMotion)."""
    parent, joint, axes, gravity = m.parent, m.joint, m.axes, m.gravity
    Sw, Psid, Psidd, Phi, vw, aw, qd, qdd = w.Sw, w.Psid, w.Psidd, w.Phi, w.vw, w.aw, d.qd, d.qdd
    for e in range(6):
        vw[0, e] = aw[0, e] = 0.0
    aw[0, 3], aw[0, 4], aw[0, 5] = -gravity[0], -gravity[1], -gravity[2]
    for i in range(1, len(parent)):
        p, c0 = parent[i], first_column(m, i)
        E, r = transform_at(d.root_E, d.root_r, i)
        v, a = add_scaled(ZERO6, 1.0, vw[p]), add_scaled(ZERO6, 1.0, aw[p])
        for j in range(joint_nv(joint[i])):
            s = inverse_motion(E, r, joint_column(joint[i], axes[i], j))
            psid = cross_motion(vw[p], s)
            psidd = add_scaled(cross_motion(aw[p], s), 1.0, cross_motion(vw[p], psid))
            v = add_scaled(v, qd[c0 + j], s)
            a = add_scaled(add_scaled(a, qdd[c0 + j], s), qd[c0 + j], psid)
            for e in range(6):
                Sw[c0 + j, e], Psid[c0 + j, e], Psidd[c0 + j, e] = s[e], psid[e], psidd[e]
        for e in range(6):
            vw[i, e], aw[i, e] = v[e], a[e]
        for j in range(joint_nv(joint[i])):
            phi = add_scaled(cross_motion(v, Sw[c0 + j]), 1.0, Psid[c0 + j])
            for e in range(6):
                Phi[c0 + j, e] = phi[e]


@njit(error_model='numpy')
def world_composites(m, d, w, f_ext):
    """Root-frame composites of every subtree: inertias Ic, Idot = sum (v x*) I - I (v x), the
    momenta hc = sum I v (2 B^C x = Idot x + x x* hc, coriolis.py) and the forces
    F = sum I a + v x* I v - f_ext (f_ext in body coordinates, turning with the bodies)."""
    parent, rigid = m.parent, m.rigid_inertia
    Ic, Idot, hc, F, vw, aw = w.Ic_w, w.Idot_w, w.hc_w, w.F_w, w.vw, w.aw
    for i in range(1, len(parent)):
        E, r = transform_at(d.root_E, d.root_r, i)
        I = rigid_congruence(d.root_E[i], d.root_r[i], rigid[i])
        h = rigid_force(I, vw[i])
        f = add_scaled(add_scaled(rigid_force(I, aw[i]), 1.0, cross_force(vw[i], h)), -1.0,
                       transposed_force(E, r, f_ext[i]))
        for c in range(6):
            unit = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
                    1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
            x = cross_force(vw[i], rigid_force(I, unit))     # column c of (v x*) I
            for e in range(6):
                Idot[i, e, c] = x[e]
        for a in range(6):
            for b in range(a, 6):
                Idot[i, a, b] = Idot[i, b, a] = Idot[i, a, b] + Idot[i, b, a]
        for e in range(10):
            Ic[i, e] = I[e]
        for e in range(6):
            hc[i, e], F[i, e] = h[e], f[e]
    for i in range(len(parent) - 1, 0, -1):
        p = parent[i]
        if p > 0:
            for e in range(10):
                Ic[p, e] += Ic[i, e]
            for e in range(6):
                hc[p, e] += hc[i, e]
                F[p, e] += F[i, e]
                for b in range(6):
                    Idot[p, e, b] += Idot[i, e, b]


@njit(inline='always', error_model='numpy')
def symmetric_times(M, x):
    """M x for a symmetric 6 x 6 M, as a 6-tuple."""
    y = ZERO6
    for c in range(6):
        y = add_scaled(y, x[c], M[c])
    return y


@njit(inline='always', error_model='numpy')
def coriolis_times(Idot, hc, x):
    """2 B^C x = Idot x + x x* hc (2 B^C^T x = Idot x - x x* hc)."""
    return add_scaled(symmetric_times(Idot, x), 1.0, cross_force(x, hc))


@njit(error_model='numpy')
def spanning_derivatives(m, w):
    """dtau/dq, dtau/dqd, H and tau of the spanning tree into w.dq, w.dqd, w.H, w.tau (module
    docstring of algorithms/derivatives.py): per body j its rows S_j^T 2 B^C_j, S_j^T I^C_j and
    columns, then the walk up its ancestors k."""
    parent, joint = m.parent, m.joint
    Sw, Psid, Psidd, Phi = w.Sw, w.Psid, w.Psidd, w.Phi
    Ic, Idot, hc, F = w.Ic_w, w.Idot_w, w.hc_w, w.F_w
    row_B, row_I, below_q, below_qd, below_qdd = (w.row_B, w.row_I, w.below_q, w.below_qd,
                                                  w.below_qdd)
    dq, dqd, H, tau = w.dq, w.dqd, w.H, w.tau
    for r in range(dq.shape[1]):                         # the tree's rows
        for c in range(dq.shape[1]):
            dq[r, c] = dqd[r, c] = H[r, c] = 0.0
    for j in range(1, len(parent)):
        c0, n = first_column(m, j), joint_nv(joint[j])
        for a in range(n):
            s = Sw[c0 + a]
            tau[c0 + a] = dot6(s, F[j])
            Idot_s, s_hc = symmetric_times(Idot[j], s), cross_force(s, hc[j])
            rB, rI = add_scaled(Idot_s, -1.0, s_hc), rigid_force(Ic[j], s)   # 2 B^C^T s, I^C s
            bq = add_scaled(add_scaled(cross_force(s, F[j]), 1.0,
                                       coriolis_times(Idot[j], hc[j], Psid[c0 + a])),
                            1.0, rigid_force(Ic[j], Psidd[c0 + a]))
            bqd = add_scaled(add_scaled(Idot_s, 1.0, s_hc), 1.0, rigid_force(Ic[j], Phi[c0 + a]))
            for e in range(6):
                row_B[c0 + a, e], row_I[c0 + a, e] = rB[e], rI[e]
                below_q[c0 + a, e], below_qd[c0 + a, e] = bq[e], bqd[e]
                below_qdd[c0 + a, e] = rI[e]
        k = j
        while k > 0:
            k0 = first_column(m, k)
            for a in range(n):
                for b in range(joint_nv(joint[k])):
                    J, K = c0 + a, k0 + b
                    dq[J, K] = dot6(row_B[J], Psid[K]) + dot6(row_I[J], Psidd[K])
                    dqd[J, K] = dot6(row_B[J], Sw[K]) + dot6(row_I[J], Phi[K])
                    H[J, K] = dot6(row_I[J], Sw[K])
                    if k != j:
                        dq[K, J] = dot6(Sw[K], below_q[J])
                        dqd[K, J] = dot6(Sw[K], below_qd[J])
                        H[K, J] = dot6(Sw[K], below_qdd[J])
            k = parent[k]


@njit(inline='always', error_model='numpy')
def branch_rates(joint, col, path, length, joint_o, delta, u, w):
    """One path of a loop walked along delta, u and w (constraints.LoopConstraint._branch_rates):
    v(delta), v(u), v(w), a(delta, u), a(delta, w), a(u, w) and its rate along delta."""
    Ud = Uu = Uw = Adu = Adw = Auw = dAuw = ZERO6
    for p in range(length):
        body = path[p]
        sd = su = sw = ZERO6
        for j in range(joint_nv(joint[body])):
            sd = add_scaled(sd, delta[col[body] + j], joint_o[body, j])
            su = add_scaled(su, u[col[body] + j], joint_o[body, j])
            sw = add_scaled(sw, w[col[body] + j], joint_o[body, j])
        Ud, Uu, Uw = add_scaled(sd, 1.0, Ud), add_scaled(su, 1.0, Uu), add_scaled(sw, 1.0, Uw)
        Adu = add_scaled(cross_motion(Ud, su), 1.0, Adu)
        Adw = add_scaled(cross_motion(Ud, sw), 1.0, Adw)
        Auw = add_scaled(cross_motion(Uu, sw), 1.0, Auw)
        dAuw = add_scaled(add_scaled(cross_motion(Adu, sw), 1.0,
                                     cross_motion(Uu, cross_motion(Ud, sw))), 1.0, dAuw)
    return Ud, Uu, Uw, Adu, Adw, Auw, dAuw


@njit(inline='always', error_model='numpy')
def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(inline='always', error_model='numpy')
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(error_model='numpy')
def bias_rate(m, d, k, delta, u, w, out):
    """d/ddelta of -Kdot(u) w (constraint_bias) over the active rows of LOOP cluster k into out,
    u and w held (constraints.LoopConstraint.bias_rate): zero on the coupling rows; on a loop's,
    Psi^T (dr - v_P(delta) x r); a universal loop's first row d(n . r) plus the rate of its
    turning term, a1 turning with P and a2 with S; an implicit constraint's rows
    -d^3 phi[delta, u, w] (kernels/expressions.py)."""
    joint, col, loop_path, loop_path_len, loop_active, universal = m.joint, m.col, m.loop_path, \
        m.loop_path_len, m.loop_active, m.loop_universal
    joint_o, Psi_o, loop_a = d.joint_o, d.Psi_o, d.loop_a
    for a in range(m.n_active[k]):
        out[a] = 0.0
    for lp in range(m.loop_range[k, 0], m.loop_range[k, 1]):
        path, length = loop_path[lp], loop_path_len[lp]
        dP, uP, wP, duP, dwP, uwP, d_uwP = branch_rates(joint, col, path[0], length[0], joint_o,
                                                        delta, u, w)
        dS, uS, wS, duS, dwS, uwS, d_uwS = branch_rates(joint, col, path[1], length[1], joint_o,
                                                        delta, u, w)
        relative = add_scaled(wS, -1.0, wP)
        r = add_scaled(add_scaled(cross_motion(uP, relative), -1.0, uwS), 1.0, uwP)
        dr = add_scaled(add_scaled(add_scaled(cross_motion(duP, relative), 1.0,
                                              cross_motion(uP, add_scaled(dwS, -1.0, dwP))),
                                   -1.0, d_uwS), 1.0, d_uwP)
        x = add_scaled(dr, -1.0, cross_motion(dP, r))
        a0 = loop_active[lp, 0]
        for row in range(universal[lp], loop_active[lp, 1] - a0):
            out[a0 + row] = dot6(Psi_o[lp, row], x)
        if universal[lp]:
            a1, a2 = loop_a[lp, 0], loop_a[lp, 1]
            da1, da2 = cross3(dP, a1), cross3(dS, a2)       # angular parts: the first three
            n = cross3(a1, a2)
            dn = add3(cross3(da1, a2), cross3(a1, da2))
            xu, yw = add3(uS, uP, -1.0), add3(wS, wP, -1.0)
            dxu, dyw = add3(duS, duP, -1.0), add3(dwS, dwP, -1.0)
            out[a0] = (dot3(dn, r) + dot3(n, dr)
                       + (dot3(da1, xu) + dot3(a1, dxu)) * dot3(a2, yw)
                       + dot3(a1, xu) * (dot3(da2, yw) + dot3(a2, dyw))
                       - (dot3(da1, a2) + dot3(a1, da2)) * dot3(xu, yw)
                       - dot3(a1, a2) * (dot3(dxu, yw) + dot3(xu, dyw)))
    implicit_mixed(m, d, k, delta, u, w, 3, out)


@njit(inline='always', error_model='numpy')
def add3(a, b, sign=1.0):
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2])


@njit(inline='always', error_model='numpy')
def dependent_solve(m, d, k, rhs, out):
    """out (n_k) with K out = rhs on the active rows of LOOP cluster k, zero on its independent
    columns, on the sparse QR of K_d that loop_constraint left in d.QR."""
    n, nd = m.v_range[k, 1] - m.v_range[k, 0], m.v_range[k, 1] - m.v_range[k, 0] - (
        m.y_range[k, 1] - m.y_range[k, 0])
    A = d.QR
    for a in range(m.n_active[k]):
        A[a, n] = rhs[a]
    qr_solve(m, k, A, nd, d.beta, n)
    for r in range(n):
        out[r] = 0.0
    for p in range(nd):
        out[m.dependent[k, p]] = A[m.qr_rows[k, p, 0], n]


@njit(inline='always', error_model='numpy')
def add_bias(m, d, k, along, qd, w, scale):
    """w.rhs += scale (-Kdot(along) qd) of LOOP cluster k (constraint_bias), through w.term."""
    constraint_bias(m, d, k, along, qd, w.term)
    for a in range(m.n_active[k]):
        w.rhs[a] += scale * w.term[a]


@njit(error_model='numpy')
def loop_terms(m, d, w, k, yd, ydd):
    """A LOOP cluster's moving G and g in the chain rule (algorithms/derivatives.loop_terms and
    Chain): along each delta = G e_l, dG from K dG = k(delta, G), dg from K dg = dk(delta; qd, qd)
    + k(dqd, qd) + k(qd, dqd) + k(delta, g) and dg/dyd from K x = k(delta, qd) + k(qd, delta),
    added to the columns of T_y and T_yd; dG^T tau into w.dG_tau[k]."""
    v0, v1, y0, y1 = m.v_range[k, 0], m.v_range[k, 1], m.y_range[k, 0], m.y_range[k, 1]
    n, mk = v1 - v0, y1 - y0
    status = loop_constraint(m, d, k, d.zero_y, False)       # K_d's QR into d.QR
    if status != OK:
        return status
    G, qd, g, dG, rhs = d.G[k], d.qd[v0:v1], d.g[v0:v1], w.dG, w.rhs
    rate_qd, rate_qdd, dg_dyd, tau = w.rate_qd, w.rate_qdd, w.dg_dyd, w.tau
    dqd, H, T_y, T_yd, dG_tau = w.dqd, w.H, w.T_y, w.T_yd, w.dG_tau
    for l in range(mk):
        delta = G[l]
        for j in range(mk):
            constraint_bias(m, d, k, delta, G[j], rhs)
            dependent_solve(m, d, k, rhs, dG[l, j])
        for r in range(n):
            rate_qd[r] = 0.0
            for j in range(mk):
                rate_qd[r] += dG[l, j, r] * yd[j]
        bias_rate(m, d, k, delta, qd, qd, rhs)
        add_bias(m, d, k, rate_qd, qd, w, 1.0)
        add_bias(m, d, k, qd, rate_qd, w, 1.0)
        add_bias(m, d, k, delta, g, w, 1.0)
        dependent_solve(m, d, k, rhs, rate_qdd)
        for r in range(n):
            for j in range(mk):
                rate_qdd[r] += dG[l, j, r] * ydd[j]
        for a in range(m.n_active[k]):
            rhs[a] = 0.0
        add_bias(m, d, k, delta, qd, w, 1.0)
        add_bias(m, d, k, qd, delta, w, 1.0)
        dependent_solve(m, d, k, rhs, dg_dyd)
        for row in range(T_y.shape[0]):
            t_y = t_yd = 0.0
            for r in range(n):
                t_y += dqd[row, v0 + r] * rate_qd[r] + H[row, v0 + r] * rate_qdd[r]
                t_yd += H[row, v0 + r] * dg_dyd[r]
            T_y[row, y0 + l] += t_y
            T_yd[row, y0 + l] += t_yd
        for j in range(mk):
            t = 0.0
            for r in range(n):
                t += dG[l, j, r] * tau[v0 + r]
            dG_tau[k, j, l] = t
    return OK


@njit(error_model='numpy')
def chain_rule(m, d, w, yd, ydd):
    """d_y, d_yd, d_ydd = G^T (T_y, T_yd, T_ydd) with T = (dq, dqd, H) G and the LOOP clusters'
    terms (loop_terms), G block diagonal: G_k on cluster k's rows and columns (the identity of a
    SINGLE cluster: copies). Rows of contacts below the tree's (DerivativeWorkspace) are mapped
    by T alone: their dx/dy, dx/dyd, dx/dydd stay in T_y, T_yd, T_ydd (the only rows of T kept
    where every cluster is SINGLE)."""
    v_range, y_range, kind, G = m.v_range, m.y_range, m.kind, d.G
    dq, dqd, H, T_y, T_yd, T_ydd = w.dq, w.dqd, w.H, w.T_y, w.T_yd, w.T_ydd
    d_y, d_yd, d_ydd, dG_tau = w.d_y, w.d_yd, w.d_ydd, w.dG_tau
    rows, ny = dq.shape[0], d_y.shape[0]
    tree = True
    for k in range(len(kind)):
        tree &= kind[k] == SINGLE
    if tree:                                      # G = 1, g = 0: whole copies
        d_y[:, :], d_yd[:, :], d_ydd[:, :] = dq[:ny], dqd[:ny], H[:ny]
        T_y[ny:], T_yd[ny:], T_ydd[ny:] = dq[ny:], dqd[ny:], H[ny:]
        return OK
    for k in range(len(kind)):
        v0, y0, mk, n = v_range[k, 0], y_range[k, 0], y_range[k, 1] - y_range[k, 0], \
            v_range[k, 1] - v_range[k, 0]
        if kind[k] == SINGLE:
            for row in range(rows):
                for j in range(mk):
                    T_y[row, y0 + j] = dq[row, v0 + j]
                    T_yd[row, y0 + j] = dqd[row, v0 + j]
                    T_ydd[row, y0 + j] = H[row, v0 + j]
            continue
        for row in range(rows):
            for j in range(mk):
                t_y = t_yd = t_ydd = 0.0
                for r in range(n):
                    x = G[k, j, r]
                    t_y += dq[row, v0 + r] * x
                    t_yd += dqd[row, v0 + r] * x
                    t_ydd += H[row, v0 + r] * x
                T_y[row, y0 + j], T_yd[row, y0 + j], T_ydd[row, y0 + j] = t_y, t_yd, t_ydd
    for k in range(len(kind)):
        if kind[k] == LOOP and y_range[k, 1] > y_range[k, 0]:
            y0, y1 = y_range[k, 0], y_range[k, 1]
            status = loop_terms(m, d, w, k, yd[y0:y1], ydd[y0:y1])
            if status != OK:
                return status
    for k in range(len(kind)):
        v0, y0, mk, n = v_range[k, 0], y_range[k, 0], y_range[k, 1] - y_range[k, 0], \
            v_range[k, 1] - v_range[k, 0]
        for j in range(mk):                       # by whole rows (1-d views, which vectorize)
            if kind[k] == SINGLE:
                d_y[y0 + j], d_yd[y0 + j], d_ydd[y0 + j] = T_y[v0 + j], T_yd[v0 + j], T_ydd[v0 + j]
                continue
            d_y[y0 + j], d_yd[y0 + j], d_ydd[y0 + j] = 0.0, 0.0, 0.0
            for r in range(n):
                x = -G[k, j, r]
                subtract_scaled(d_y[y0 + j], x, T_y[v0 + r])
                subtract_scaled(d_yd[y0 + j], x, T_yd[v0 + r])
                subtract_scaled(d_ydd[y0 + j], x, T_ydd[v0 + r])
        if kind[k] == LOOP:
            for j in range(mk):
                for l in range(mk):
                    d_y[y0 + j, y0 + l] += dG_tau[k, j, l]
    return OK


@njit(error_model='numpy')
def derivatives_at_state(m, d, w, yd, ydd, f_ext):
    """The inverse dynamics derivatives into w.d_y, w.d_yd, w.d_ydd at the kinematics d holds and
    spanning accelerations d.qdd = G ydd + g."""
    link_transforms(m, d)
    world_motion(m, d, w)
    world_composites(m, d, w, f_ext)
    spanning_derivatives(m, w)
    return chain_rule(m, d, w, yd, ydd)


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics_derivatives(m, d, q, yd, ydd, w, f_ext):
    """(dtau_y/dy, dtau_y/dyd, H_y) into w.d_y, w.d_yd, w.d_ydd (module docstring)."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    spanning_accelerations(m, d, ydd)
    return derivatives_at_state(m, d, w, yd, ydd, f_ext)


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_derivatives(m, d, q, yd, tau, w, f_ext):
    """ydd of the cluster ABA into d.ydd and (dydd/dy, dydd/dyd, H_y^-1) into w.fd_y, w.fd_yd,
    w.H_inv: H_y^-1 [-dtau_y/dy, -dtau_y/dyd, 1] at ydd in one free_solve on w.solved (the held
    coordinates keep zero acceleration and carry no row); NaN where free_factor fails, which the
    ABA's own checks leave to round-off: the call then reports NOT_FINITE."""
    status = aba(m, d, q, yd, tau, f_ext)
    if status != OK:
        return status
    status = derivatives_at_state(m, d, w, yd, d.ydd, f_ext)
    if status != OK:
        return status
    ny, X = m.ny, w.solved
    if free_factor(m, w):
        for a in range(ny):
            row = X[a]
            for c in range(ny):
                row[c], row[ny + c], row[2 * ny + c] = -w.d_y[a, c], -w.d_yd[a, c], 0.0
            row[2 * ny + a] = 1.0
        free_solve(m, w, X)
    else:
        X[:, :] = np.nan
    w.fd_y[:, :], w.fd_yd[:, :], w.H_inv[:, :] = X[:, :ny], X[:, ny:2 * ny], X[:, 2 * ny:]
    return OK


@njit(error_model='numpy', fastmath=FASTMATH)
def free_factor(m, w):
    """H_y (in w.d_ydd) with the held coordinates' rows and columns those of the identity, factored
    into w.Hf (dense.tree_factor on m.parent_y); False where it is not PD."""
    free, H, A = m.free_y, w.d_ydd, w.Hf
    for a in range(m.ny):
        for b in range(a + 1):
            A[a, b] = H[a, b] if free[a] != 0.0 and free[b] != 0.0 else (1.0 if a == b else 0.0)
    return tree_factor(m.parent_y, A, m.ny)


@njit(error_model='numpy', fastmath=FASTMATH)
def free_solve(m, w, X):
    """X <- H_y^-1 X on the free coordinates, zero rows on the held ones, from free_factor."""
    for a in range(m.ny):
        if m.free_y[a] == 0.0:
            X[a] = 0.0
    tree_solve(m.parent_y, w.Hf, m.ny, X)


@njit(error_model='numpy')
def free_inverse(m, w):
    """H_y^-1 into w.H_inv on the free coordinates (m.free_y), zero on the held ones
    (algorithms/derivatives.free_inverse): free_solve of the identity (NaN where free_factor
    fails)."""
    X = w.H_inv
    X[:, :] = 0.0
    if not free_factor(m, w):
        X[:, :] = np.nan
        return
    for a in range(m.ny):
        X[a, a] = 1.0
    free_solve(m, w, X)
