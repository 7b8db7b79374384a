"""Numba twins of the contact routes of contacts.py, each one compiled call on the workspace
(m, d), the LcabaPlan built with the contacts and its data (p, w: their rows,
kernels/contacts.py) and their ContactBuffers b (flat/contacts.py):
- inverse_dynamics: projected inverse dynamics (Aghili 2005; Mistry & Righetti 2012), the actuated
  efforts of least weighted norm with H_y ydd + C_y = S^T tau + J_c^T lambda;
- contact_bias_forces: the same at the velocities and accelerations nearest to the measured ones
  that keep the contacts;
- exact_forward_dynamics: the exact route (Chignoli et al. 2023 Sec. VIII): cluster ABA, the
  Delassus matrix from the cluster EFPA, a second ABA with the contact forces.

The range of J_c^T, its pseudo-inverse and the least-norm forces come from one QR of J_c^T with
column pivoting (dense.py, which says why it replaces the NumPy twins' SVDs). Each returns OK, a
status of the kinematics (kinematics.py, the engine names it) or a fault below, the value it
reports in b.info[0]; contacts.py raises the NumPy twins' messages for them.
"""

import math

from numba import njit

from .aba import aba, aba_forces
from .cache import key_on_helpers
from .contacts import contact_state
from .dense import (apply_q, cholesky_pivots, cholesky_solve, householder_qr, least_norm,
                    least_squares, rank, solve_upper)
from .efpa import inverse_inertia
from .kinematics import kinematics, OK
from .rnea import rnea

key_on_helpers(__file__)

# b.limits
(VELOCITY_TOLERANCE, RANK_CUTOFF, PSEUDOINVERSE_CUTOFF, UNACTUATED_TOLERANCE,
 DELASSUS_CONDITION_LIMIT, DELASSUS_RESIDUAL_LIMIT, MASS, REACH, STANDARD_GRAVITY) = range(9)
LIMITS = 9
# faults (after the kinematics' statuses)
MOVES, VIOLATES, UNACTUATED, NO_ACCELERATIONS, SINGULAR_DELASSUS, MISSES_ROWS = range(10, 16)


@njit(inline='always', error_model='numpy')
def largest(x, n):
    """max(1, |x[:n]|_inf)."""
    s = 1.0
    for i in range(n):
        s = max(s, abs(x[i]))
    return s


@njit(error_model='numpy')
def factor(b, ny):
    """The contacts' J_c^T into b.QR (stored by columns: the rows sizes[0]... of b.J), factored
    with column pivoting."""
    row0, m = b.sizes[0], b.sizes[1]
    for i in range(m):
        for y in range(ny):
            b.QR[i, y] = b.J[row0 + i, y]
    householder_qr(b.QR, ny, m, b.beta, b.perm, True)


@njit(error_model='numpy')
def pseudo_inverse(b, ny, r, rhs, x):
    """x (ny) <- J_c^+ rhs (m) at rank r (least squares of least norm)."""
    least_squares(b.QR, ny, b.sizes[1], b.beta, b.perm, r, rhs, x, b.B, b.beta_b, b.perm_b, b.t)


@njit(error_model='numpy')
def range_rows(b, ny, r):
    """b.Vu (nu x r) <- the unactuated rows of V = Q[:, :r], the range of J_c^T: row u of V is
    (Q^T e_u)[:r], one product with Q^T per unactuated coordinate (V itself is never formed)."""
    u, x = b.unactuated, b.x
    for i in range(len(u)):
        for y in range(ny):
            x[y] = 1.0 if y == u[i] else 0.0
        apply_q(b.QR, ny, min(ny, b.sizes[1]), b.beta, x, True)
        for j in range(r):
            b.Vu[i, j] = x[j]


@njit(error_model='numpy')
def in_range(b, ny, r, coordinates, x):
    """x (ny) <- V coordinates (r): Q [coordinates; 0]."""
    for y in range(ny):
        x[y] = coordinates[y] if y < r else 0.0
    apply_q(b.QR, ny, min(ny, b.sizes[1]), b.beta, x, False)


@njit(error_model='numpy')
def check_unactuated(m, b, r, tau_id):
    """c (r) <- the least-norm least-squares solution of V_u c = tau_id,u (b.Vu), b.gap its
    residual, b.N (r x (r - ru)) the null space of V_u; returns ru and whether the residual is
    within UNACTUATED_TOLERANCE of the robot's weight (times its reach for a moment)."""
    u, Vu, Au, c, limits = b.unactuated, b.Vu, b.Au, b.c, b.limits
    nu = len(u)
    for i in range(nu):                                      # V_u^T, stored by columns
        for j in range(r):
            Au[i, j] = Vu[i, j]
    householder_qr(Au, r, nu, b.beta_u, b.perm_u, True)
    ru = rank(Au, r, nu, limits[RANK_CUTOFF])       # singular values of V_u are at most 1
    for i in range(nu):
        b.y[i] = tau_id[u[i]]
    least_squares(Au, r, nu, b.beta_u, b.perm_u, ru, b.y, c, b.B, b.beta_b, b.perm_b, b.t)
    for j in range(r - ru):                                  # columns ru... of Au's Q
        for i in range(r):
            b.x[i] = 1.0 if i == ru + j else 0.0
        apply_q(Au, r, min(r, nu), b.beta_u, b.x, False)
        for i in range(r):
            b.N[i, j] = b.x[i]
    g = math.sqrt(m.gravity[0] ** 2 + m.gravity[1] ** 2 + m.gravity[2] ** 2)
    weight = limits[MASS] * max(g, limits[STANDARD_GRAVITY])
    worst, ratio = -1, -1.0
    for i in range(nu):
        s = 0.0
        for j in range(r):
            s += Vu[i, j] * c[j]
        b.gap[i] = s - tau_id[u[i]]
        scale = weight * (limits[REACH] if b.rotational[i] else 1.0)
        if abs(b.gap[i]) / max(scale, 2.2250738585072014e-308) > ratio:
            worst, ratio = i, abs(b.gap[i]) / max(scale, 2.2250738585072014e-308)
    if worst < 0:
        return ru, True
    scale = weight * (limits[REACH] if b.rotational[worst] else 1.0)
    return ru, not abs(b.gap[worst]) > limits[UNACTUATED_TOLERANCE] * scale


@njit(error_model='numpy')
def projected_efforts(m, b, ny, tau_id, weights):
    """Projected inverse dynamics after factor() (contacts.inverse_dynamics): b.efforts, b.lam;
    False where the unactuated rows cannot be balanced (b.gap). V = Q[:, :r] enters through
    products with Q alone: its unactuated rows, V c, V^T of a vector (the cost of a product each,
    not r to form V)."""
    N, c, x, t, a = b.N, b.c, b.x, b.t, b.actuated
    row0, nc = b.sizes[0], b.sizes[1]
    r = rank(b.QR, ny, nc, b.limits[RANK_CUTOFF] * abs(b.QR[0, 0]))
    range_rows(b, ny, r)
    ru, balanced = check_unactuated(m, b, r, tau_id)
    if not balanced:
        return False
    nz, na = r - ru, len(a)
    if nz > 0 and na > 0:        # tau_a = tau_id,a - V_a (c + N z): weighted least squares in z
        in_range(b, ny, r, c, t)                             # t = V c
        unit = True
        for i in range(na):
            unit &= weights[a[i]] == 1.0
        z = b.rhs
        if unit:
            # V_a N has orthonormal columns (V does, and V_u N = 0): z = (V_a N)^T (tau_id - V c)_a
            for y in range(ny):
                x[y] = 0.0
            for i in range(na):
                x[a[i]] = tau_id[a[i]] - t[a[i]]
            apply_q(b.QR, ny, min(ny, nc), b.beta, x, True)    # its first r entries: V^T x
            for k in range(nz):
                s = 0.0
                for j in range(r):
                    s += N[j, k] * x[j]
                z[k] = s
        else:
            # M = W^(1/2) V_a N, of full column rank (the columns above times the weights): its
            # plain QR solves the least squares
            M = b.M
            for k in range(nz):
                in_range(b, ny, r, N[:, k], x)               # V N[:, k]
                for i in range(na):
                    M[k, i] = math.sqrt(weights[a[i]]) * x[a[i]]     # stored by columns
            for i in range(na):
                z[i] = math.sqrt(weights[a[i]]) * (tau_id[a[i]] - t[a[i]])
            householder_qr(M, na, nz, b.beta_m, b.perm_m, False)
            apply_q(M, na, min(na, nz), b.beta_m, z, True)
            solve_upper(M, nz, z, False)
        for j in range(r):
            for k in range(nz):
                c[j] += N[j, k] * z[k]
    least_norm(b.QR, nc, b.perm, r, c, b.lam, b.B, b.beta_b, b.perm_b, b.t)   # lambda
    for y in range(ny):
        b.efforts[y] = 0.0
    for i in range(na):
        s = tau_id[a[i]]
        for row in range(nc):
            s -= b.J[row0 + row, a[i]] * b.lam[row]
        b.efforts[a[i]] = s
    return True


@njit(error_model='numpy')
def projected(m, d, b, yd, ydd, weights):
    """Projected inverse dynamics after the RNEA at (yd, ydd) and contact_jacobian there, J_c
    factored: the checks that yd and ydd keep the contacts, then projected_efforts."""
    row0, nc, ny, out, tolerance = b.sizes[0], b.sizes[1], len(yd), b.out, b.limits[
        VELOCITY_TOLERANCE]
    velocity = residual = 0.0
    for i in range(nc):
        velocity = max(velocity, abs(out[1, row0 + i]))
        residual = max(residual, abs(out[0, row0 + i]))
    b.info[0], b.info[1] = velocity, residual
    if velocity > tolerance * largest(yd, ny):
        return MOVES
    if residual > tolerance * largest(ydd, ny):
        b.info[0] = residual
        return VIOLATES
    if not projected_efforts(m, b, ny, d.tau, weights):
        return UNACTUATED
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics(m, d, p, w, b, q, yd, ydd, f_ext, weights):
    """contacts.inverse_dynamics: b.efforts and b.lam; b.info[1] the contact residual."""
    status = rnea(m, d, q, yd, ydd, f_ext)
    if status != OK:
        return status
    contact_state(m, d, p, w, b.J, b.out, False, True)
    factor(b, len(yd))
    return projected(m, d, b, yd, ydd, weights)


@njit(cache=True, nogil=True, error_model='numpy')
def contact_bias_forces(m, d, p, w, b, q, yd, f_ext, weights):
    """contacts.contact_bias_forces: yd_c = yd - J_c^+ J_c yd into b.yd_c, ydd = -J_c^+ Jdot yd_c
    into b.ydd (PSEUDOINVERSE_CUTOFF), then inverse_dynamics there; |yd - yd_c|_inf into
    b.info[1]. J_c depends on q alone: the transforms at q, J_c and its factors serve every
    step."""
    ny, row0, nc, J, x, y = len(yd), b.sizes[0], b.sizes[1], b.J, b.x, b.y
    yd_c, ydd = b.yd_c, b.ydd
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    contact_state(m, d, p, w, J, b.out, False, True)
    factor(b, ny)
    r = rank(b.QR, ny, nc, b.limits[PSEUDOINVERSE_CUTOFF] * abs(b.QR[0, 0]))
    for i in range(nc):
        s = 0.0
        for j in range(ny):
            s += J[row0 + i, j] * yd[j]
        y[i] = s
    pseudo_inverse(b, ny, r, y, x)
    for j in range(ny):
        yd_c[j] = yd[j] - x[j]
    status = kinematics(m, d, None, yd_c)
    if status != OK:
        return status
    contact_state(m, d, p, w, J, b.out, True, False)                # Jdot yd_c
    for i in range(nc):
        y[i] = b.out[0, row0 + i]
    pseudo_inverse(b, ny, r, y, x)
    for j in range(ny):
        ydd[j] = -x[j]
    gap = 0.0
    for i in range(nc):
        s = y[i]
        for j in range(ny):
            s += J[row0 + i, j] * ydd[j]
        gap = max(gap, abs(s))
    if gap > b.limits[VELOCITY_TOLERANCE] * largest(ydd, ny):
        b.info[0] = gap
        return NO_ACCELERATIONS
    status = rnea(m, d, None, yd_c, ydd, f_ext)
    if status != OK:
        return status
    contact_state(m, d, p, w, J, b.out, False, False)
    status = projected(m, d, b, yd_c, ydd, weights)
    correction = 0.0
    for j in range(ny):
        correction = max(correction, abs(yd[j] - yd_c[j]))
    b.info[1] = correction
    return status


@njit(error_model='numpy')
def delassus(p, w, b):
    """b.D = P Lambda^-1 P^T (its lower triangle, which cholesky_pivots reads), P the contacts'
    rows K^b (w.K) of their moving bodies in EFPA's [linear; angular] order
    (algorithms/contacts.delassus)."""
    row0, n6, K, Omega, Y, D, slot = b.sizes[0], 6 * b.sizes[2], w.K, b.Omega, b.Y, b.D, \
        b.entry_slot
    for con in range(len(p.con_rows)):
        if p.con_contact[con] < 0:
            continue
        for row in range(p.con_rows[con]):
            Y_row = Y[p.con_row0[con] - row0 + row]     # rows as 1-d views: the loops vectorize
            for col in range(n6):
                Y_row[col] = 0.0
            for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
                if slot[e] >= 0:
                    for c in range(6):
                        k, Omega_row = K[e, row, (c + 3) % 6], Omega[6 * slot[e] + c]
                        for col in range(n6):
                            Y_row[col] += k * Omega_row[col]
    for con in range(len(p.con_rows)):                    # the lower triangle of D = Y P^T
        if p.con_contact[con] < 0:
            continue
        for row in range(p.con_rows[con]):
            r2 = p.con_row0[con] - row0 + row
            for r1 in range(r2, b.sizes[1]):
                s = 0.0
                for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
                    if slot[e] >= 0:
                        for c in range(6):
                            s += Y[r1, 6 * slot[e] + c] * K[e, row, (c + 3) % 6]
                D[r1, r2] = s


@njit(error_model='numpy')
def contact_wrenches(p, w, b, f_ext):
    """b.f <- f_ext + sum_b K^b^T lambda: the external forces (nb x 6, body coordinates) with the
    contact forces b.lam on their bodies, on the rows K^b of the last contact_state (w.K)."""
    f, row0 = b.f, b.sizes[0]
    for i in range(len(f)):
        for e in range(6):
            f[i, e] = 0.0
    for con in range(len(p.con_rows)):
        if p.con_contact[con] < 0:
            continue
        for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
            body = p.entry_body[e]
            if body > 0:
                for row in range(p.con_rows[con]):
                    force = b.lam[p.con_row0[con] - row0 + row]
                    for c in range(6):
                        f[body, c] += force * w.K[e, row, c]
    for i in range(len(f)):
        for e in range(6):
            f[i, e] = f_ext[i, e] + f[i, e]


@njit(cache=True, nogil=True, error_model='numpy')
def exact_forward_dynamics(m, d, p, w, b, q, yd, tau, f_ext):
    """contacts._exact: the free accelerations (cluster ABA), D lambda = -(J_c ydd_free + Jdot yd)
    with D from the cluster EFPA on the ABA's articulated inertias (Cholesky; SINGULAR_DELASSUS
    where its squared pivot ratio is at most DELASSUS_CONDITION_LIMIT), the force passes of the
    cluster ABA again with K^b^T lambda added to the bodies' forces: d.qdd, b.lam, the contact
    residual in b.info[0] (MISSES_ROWS where it exceeds DELASSUS_RESIDUAL_LIMIT max(1, |qdd|),
    relative in b.info[1])."""
    row0, nc, y, lam = b.sizes[0], b.sizes[1], b.y, b.lam
    if nc > m.ny:                        # D has rank ny at most: not formed (b.D holds nothing)
        return SINGULAR_DELASSUS
    status = aba(m, d, q, yd, tau, f_ext)
    if status != OK:
        return status
    contact_state(m, d, p, w, b.J, b.out, False, False)        # the rows K^b, k and the drift
    for i in range(nc):
        y[i] = b.out[0, row0 + i]
    inverse_inertia(m, d, b.body, b.X, b.T, b.Omega)         # from the ABA's factors at q
    delassus(p, w, b)
    if not cholesky_pivots(b.D, b.L, nc) > b.limits[DELASSUS_CONDITION_LIMIT]:
        return SINGULAR_DELASSUS
    cholesky_solve(b.L, nc, y)
    for i in range(nc):
        lam[i] = -y[i]
    contact_wrenches(p, w, b, f_ext)
    aba_forces(m, d, tau, b.f)                               # at the same inertias
    contact_state(m, d, p, w, b.J, b.out, False, False)
    residual = 0.0
    for i in range(nc):
        residual = max(residual, abs(b.out[0, row0 + i]))
    scale = largest(d.qdd, len(d.qdd))
    b.info[0], b.info[1] = residual, residual / scale
    if not residual <= b.limits[DELASSUS_RESIDUAL_LIMIT] * scale:
        return MISSES_ROWS
    return OK
