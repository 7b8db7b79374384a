"""Numba kernels of the cluster algorithms on a FlatModel ``m`` and its FlatData ``d`` (seed 003).

Same algorithms as kinematics.py, rnea.py, aba.py, crba.py and efpa.py, which stay the readable
reference; the kernels exploit what the flat layout makes explicit:
- transforms are (E, r) pairs, never 6x6 products (X m = [E w; E (v - r x w)], X^T f likewise);
- every cluster has one output body o, so ^kX_parent is one block column (flat.py) and every pass
  carries a cluster to its parent as a sum over the cluster's bodies into o;
- the articulated and composite inertias therefore stay block diagonal (one per body);
- a composite inertia is a rigid-body inertia: the CRBA carries it as 10 parameters (m, h, Ibar), whose
  transform X^T I X costs a third of a 6x6 congruence; so does the articulated inertia of a body no
  cluster hangs from (flat.py's leaf);
- D_k^-1 enters through its Cholesky factor L_k (stored with 1/L_jj on its diagonal, so that the solves
  multiply; the formulas mean the factor itself): with V_k = L_k^-1 (^kX_o^T U_k)^T the parent gets
  the rank-m_k update ^kX_o^T U D^-1 U^T ^kX_o = V_k^T V_k (seed 003, eqs. 55-56), and
  Lambda^-1 = T T^T (eqs. 63-67), each frame's T packed on the clusters supporting it (flat.py's
  y_support), so that two frames share the leading rows of their common ancestors;
- single-body clusters (G = 1) skip the constraint and G products.
The small per-body helpers (spatial algebra, joints, triangular solves) are inlined into their callers
in numba's IR (inline='always'): as separate functions each call blocked LLVM's optimization across
it, which cost about 40 % of the ABA, RNEA and CRBA times; inlining the larger per-cluster steps too
gained little more and tripled the compile time. m and d are Borrowed handles and their arrays are
BorrowedArrays (borrowed.py): numba counts no reference to them, their fields or their views (S[i, j]).
Each pass still reads its fields into locals once and loops over the clusters or bodies itself: numba
emits no aliasing information, so a field is reloaded through the struct after any store.
Helpers that return 6-tuples (add_scaled, combination, rigid_force, ...) keep small results in
registers; summed as combinations of rows or columns (mat6_vec, right_transform) they vectorize.
The kinematics and the loop constraints walk transforms as tuples (E a row-major 9-tuple, r a 3-tuple:
transform_at, product, transformed_motion, ...; the array helpers compose, transform_motion and
transform_force load them): an array element would be reloaded after every store. A LOOP cluster's K
holds its active rows only (flat.py's loop_active); its QR follows the cluster's elimination plan
(elimination.py: each step reflects only the rows that hold its column, delta's K_d then costs a fifth
of the dense QR's multiply-adds) and carries K_i along (G without a solve per column).
The fused public calls (compiled_calls.py) pass q = None: their position check left d.Xup at q.
No kernel allocates: every buffer lives in d. Each returns a status (OK or one of the singular
cases below, details in d.info) instead of raising; fast_path.py raises the library's errors. The
kernels here and in compiled_calls.py, compiled_checks.py and compiled_completion.py divide without
checks, as compiled_lcaba.py does (error_model='numpy'): a zero divisor gives inf or nan, which the
finiteness checks of the fused calls refer to the Python path, and no ZeroDivisionError can leave a
kernel (an A/B in one process: delta's fused FD, ID and H_y 2-4 % faster, other robots within 1 %).

Everything a kernel depends on is defined here or passed in m: numba's cache is keyed on this file
(and on the other kernel modules and borrowed.py, kernel_cache.py) only, so a constant imported from
another module could go stale in the cache.
"""

import math

from numba import njit

from .kernel_cache import key_on_helpers

key_on_helpers(__file__)


REVOLUTE, PRISMATIC, FLOATING, SPHERICAL, PLANAR = 0, 1, 2, 3, 4   # joint codes (continuous = revolute)
SINGLE, COUPLED, LOOP = 0, 1, 2                  # cluster kinds: one body (G = 1); constant G, g = 0; G(q)
OK, SINGULAR_SPLIT, D_NOT_POSITIVE, D_ILL_CONDITIONED, AMPLIFIED = 0, 1, 2, 3, 4


# ---- spatial algebra on (E, r) pairs, X = [[E, 0], [-E rx, E]] (seed 001); contiguous 6-vectors ----

@njit(inline='always', error_model='numpy')
def transform_motion(E, r, m, out):
    """out = X m (transformed_motion); out may alias m."""
    x = transformed_motion(rotation_tuple(E), (r[0], r[1], r[2]), m)
    for e in range(6):
        out[e] = x[e]


@njit(inline='always', error_model='numpy')
def transform_force(E, r, f, out, add):
    """out = X^T f (transposed_force) (add=False) or out += X^T f; out may alias f."""
    n0, n1, n2, g0, g1, g2 = transposed_force(rotation_tuple(E), (r[0], r[1], r[2]), f)
    if add:
        n0, n1, n2, g0, g1, g2 = n0 + out[0], n1 + out[1], n2 + out[2], g0 + out[3], g1 + out[4], g2 + out[5]
    out[0], out[1], out[2], out[3], out[4], out[5] = n0, n1, n2, g0, g1, g2


@njit(inline='always', error_model='numpy')
def compose(E1, r1, E2, r2, E, r):
    """X = X1 X2 (product) into E, r, which must not alias the inputs."""
    E12, r12 = product(rotation_tuple(E1), (r1[0], r1[1], r1[2]), rotation_tuple(E2), (r2[0], r2[1], r2[2]))
    for a in range(3):
        for b in range(3):
            E[a, b] = E12[3 * a + b]
        r[a] = r12[a]


# ---- transforms in registers: E as a row-major 9-tuple, r as a 3-tuple (header) ----

IDENTITY = ((1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(inline='always', error_model='numpy')
def rotation_tuple(E):
    """A 3x3 array as a row-major 9-tuple."""
    return E[0, 0], E[0, 1], E[0, 2], E[1, 0], E[1, 1], E[1, 2], E[2, 0], E[2, 1], E[2, 2]


@njit(inline='always', error_model='numpy')
def transform_at(E, r, i):
    """Transform i of a stack (E[i], r[i]) as tuples."""
    return ((E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2], E[i, 2, 0], E[i, 2, 1],
             E[i, 2, 2]), (r[i, 0], r[i, 1], r[i, 2]))


@njit(inline='always', error_model='numpy')
def product(E1, r1, E2, r2):
    """X1 X2 as tuples: E = E1 E2, r = r2 + E2^T r1."""
    return ((E1[0] * E2[0] + E1[1] * E2[3] + E1[2] * E2[6], E1[0] * E2[1] + E1[1] * E2[4] + E1[2] * E2[7],
             E1[0] * E2[2] + E1[1] * E2[5] + E1[2] * E2[8], E1[3] * E2[0] + E1[4] * E2[3] + E1[5] * E2[6],
             E1[3] * E2[1] + E1[4] * E2[4] + E1[5] * E2[7], E1[3] * E2[2] + E1[4] * E2[5] + E1[5] * E2[8],
             E1[6] * E2[0] + E1[7] * E2[3] + E1[8] * E2[6], E1[6] * E2[1] + E1[7] * E2[4] + E1[8] * E2[7],
             E1[6] * E2[2] + E1[7] * E2[5] + E1[8] * E2[8]),
            (r2[0] + E2[0] * r1[0] + E2[3] * r1[1] + E2[6] * r1[2],
             r2[1] + E2[1] * r1[0] + E2[4] * r1[1] + E2[7] * r1[2],
             r2[2] + E2[2] * r1[0] + E2[5] * r1[1] + E2[8] * r1[2]))


@njit(inline='always', error_model='numpy')
def relative(E1, r1, E2, r2):
    """X1 X2^-1 as tuples, of two transforms from one frame: E = E1 E2^T, r = E2 (r1 - r2)."""
    u = (r1[0] - r2[0], r1[1] - r2[1], r1[2] - r2[2])
    return ((E1[0] * E2[0] + E1[1] * E2[1] + E1[2] * E2[2], E1[0] * E2[3] + E1[1] * E2[4] + E1[2] * E2[5],
             E1[0] * E2[6] + E1[1] * E2[7] + E1[2] * E2[8], E1[3] * E2[0] + E1[4] * E2[1] + E1[5] * E2[2],
             E1[3] * E2[3] + E1[4] * E2[4] + E1[5] * E2[5], E1[3] * E2[6] + E1[4] * E2[7] + E1[5] * E2[8],
             E1[6] * E2[0] + E1[7] * E2[1] + E1[8] * E2[2], E1[6] * E2[3] + E1[7] * E2[4] + E1[8] * E2[5],
             E1[6] * E2[6] + E1[7] * E2[7] + E1[8] * E2[8]),
            (E2[0] * u[0] + E2[1] * u[1] + E2[2] * u[2], E2[3] * u[0] + E2[4] * u[1] + E2[5] * u[2],
             E2[6] * u[0] + E2[7] * u[1] + E2[8] * u[2]))


@njit(inline='always', error_model='numpy')
def rotated_back(E, x):
    """E^T x (3-tuple): a vector of the frame below E in the frame above."""
    return (E[0] * x[0] + E[3] * x[1] + E[6] * x[2], E[1] * x[0] + E[4] * x[1] + E[7] * x[2],
            E[2] * x[0] + E[5] * x[1] + E[8] * x[2])


@njit(inline='always', error_model='numpy')
def transformed_motion(E, r, m):
    """X m = [E w; E (v - r x w)] as a 6-tuple."""
    w0, w1, w2 = m[0], m[1], m[2]
    t0 = m[3] - r[1] * w2 + r[2] * w1
    t1 = m[4] - r[2] * w0 + r[0] * w2
    t2 = m[5] - r[0] * w1 + r[1] * w0
    return (E[0] * w0 + E[1] * w1 + E[2] * w2, E[3] * w0 + E[4] * w1 + E[5] * w2, E[6] * w0 + E[7] * w1 + E[8] * w2,
            E[0] * t0 + E[1] * t1 + E[2] * t2, E[3] * t0 + E[4] * t1 + E[5] * t2, E[6] * t0 + E[7] * t1 + E[8] * t2)


@njit(inline='always', error_model='numpy')
def inverse_motion(E, r, m):
    """X^-1 m = [E^T w; E^T v + r x E^T w] as a 6-tuple."""
    w0, w1, w2 = rotated_back(E, (m[0], m[1], m[2]))
    t0, t1, t2 = rotated_back(E, (m[3], m[4], m[5]))
    return w0, w1, w2, t0 + r[1] * w2 - r[2] * w1, t1 + r[2] * w0 - r[0] * w2, t2 + r[0] * w1 - r[1] * w0


@njit(inline='always', error_model='numpy')
def transposed_force(E, r, f):
    """X^T f = [E^T n + r x E^T f0; E^T f0] as a 6-tuple."""
    g0, g1, g2 = rotated_back(E, (f[3], f[4], f[5]))
    n0, n1, n2 = rotated_back(E, (f[0], f[1], f[2]))
    return n0 + r[1] * g2 - r[2] * g1, n1 + r[2] * g0 - r[0] * g2, n2 + r[0] * g1 - r[1] * g0, g0, g1, g2


@njit(inline='always', error_model='numpy')
def path_transform(Xup_E, Xup_r, path, n):
    """^bodyX_top of the last of the n bodies of path below top as tuples (constraints.chain_transform)."""
    E, r = IDENTITY
    for p in range(n):
        E_body, r_body = transform_at(Xup_E, Xup_r, path[p])
        E, r = product(E_body, r_body, E, r)
    return E, r


@njit(inline='always', error_model='numpy')
def right_transform(M, E, r):
    """M X for a 6x6 M given and returned as its columns (6-tuples): each row [p, s] becomes
    [p E + r x (s E), s E]; by columns, which vectorizes over the rows."""
    c0, c1, c2, c3, c4, c5 = M
    s0 = combination(E[0, 0], c3, E[1, 0], c4, E[2, 0], c5)
    s1 = combination(E[0, 1], c3, E[1, 1], c4, E[2, 1], c5)
    s2 = combination(E[0, 2], c3, E[1, 2], c4, E[2, 2], c5)
    p0 = combination(E[0, 0], c0, E[1, 0], c1, E[2, 0], c2)
    p1 = combination(E[0, 1], c0, E[1, 1], c1, E[2, 1], c2)
    p2 = combination(E[0, 2], c0, E[1, 2], c1, E[2, 2], c2)
    return (combination(1.0, p0, r[1], s2, -r[2], s1), combination(1.0, p1, r[2], s0, -r[0], s2),
            combination(1.0, p2, r[0], s1, -r[1], s0), s0, s1, s2)


@njit(inline='always', error_model='numpy')
def rotated(M, E):
    """E^T M E of a 3x3 M, both row-major 9-tuples, E a 3x3 array: W = M E, then E^T W."""
    w = (M[0] * E[0, 0] + M[1] * E[1, 0] + M[2] * E[2, 0], M[0] * E[0, 1] + M[1] * E[1, 1] + M[2] * E[2, 1],
         M[0] * E[0, 2] + M[1] * E[1, 2] + M[2] * E[2, 2], M[3] * E[0, 0] + M[4] * E[1, 0] + M[5] * E[2, 0],
         M[3] * E[0, 1] + M[4] * E[1, 1] + M[5] * E[2, 1], M[3] * E[0, 2] + M[4] * E[1, 2] + M[5] * E[2, 2],
         M[6] * E[0, 0] + M[7] * E[1, 0] + M[8] * E[2, 0], M[6] * E[0, 1] + M[7] * E[1, 1] + M[8] * E[2, 1],
         M[6] * E[0, 2] + M[7] * E[1, 2] + M[8] * E[2, 2])
    return (E[0, 0] * w[0] + E[1, 0] * w[3] + E[2, 0] * w[6], E[0, 0] * w[1] + E[1, 0] * w[4] + E[2, 0] * w[7],
            E[0, 0] * w[2] + E[1, 0] * w[5] + E[2, 0] * w[8], E[0, 1] * w[0] + E[1, 1] * w[3] + E[2, 1] * w[6],
            E[0, 1] * w[1] + E[1, 1] * w[4] + E[2, 1] * w[7], E[0, 1] * w[2] + E[1, 1] * w[5] + E[2, 1] * w[8],
            E[0, 2] * w[0] + E[1, 2] * w[3] + E[2, 2] * w[6], E[0, 2] * w[1] + E[1, 2] * w[4] + E[2, 2] * w[7],
            E[0, 2] * w[2] + E[1, 2] * w[5] + E[2, 2] * w[8])


@njit(inline='always', error_model='numpy')
def rotated_block(M, r0, c0, E):
    """E^T M[r0:r0 + 3, c0:c0 + 3] E as a row-major 9-tuple."""
    return rotated((M[r0, c0], M[r0, c0 + 1], M[r0, c0 + 2], M[r0 + 1, c0], M[r0 + 1, c0 + 1], M[r0 + 1, c0 + 2],
                    M[r0 + 2, c0], M[r0 + 2, c0 + 1], M[r0 + 2, c0 + 2]), E)


@njit(inline='always', error_model='numpy')
def congruence_add(E, r, M, out):
    """out += X^T M X for a symmetric M (seed 003, eq. 55). X = blkdiag(E, E) [[1, 0], [-r x, 1]]: with the
    rotated blocks A, B, C (E^T A E, ...) of M = [[A, B], [B^T, C]] and P = B + r x C,
    X^T M X = [[A - B r x + r x P^T, P], [P^T, C]], whose upper-left block is symmetric."""
    A, B, C = rotated_block(M, 0, 0, E), rotated_block(M, 0, 3, E), rotated_block(M, 3, 3, E)
    r0, r1, r2 = r[0], r[1], r[2]
    P = (B[0] + r1 * C[6] - r2 * C[3], B[1] + r1 * C[7] - r2 * C[4], B[2] + r1 * C[8] - r2 * C[5],
         B[3] + r2 * C[0] - r0 * C[6], B[4] + r2 * C[1] - r0 * C[7], B[5] + r2 * C[2] - r0 * C[8],
         B[6] + r0 * C[3] - r1 * C[0], B[7] + r0 * C[4] - r1 * C[1], B[8] + r0 * C[5] - r1 * C[2])
    for a in range(3):
        for b in range(3):
            out[a, 3 + b] += P[3 * a + b]
            out[3 + b, a] += P[3 * a + b]
            out[3 + a, 3 + b] += C[3 * a + b]
    for a in range(3):
        Ba0, Ba1, Ba2 = B[3 * a], B[3 * a + 1], B[3 * a + 2]
        Brx = (Ba1 * r2 - Ba2 * r1, Ba2 * r0 - Ba0 * r2, Ba0 * r1 - Ba1 * r0)            # row a of B r x
        for b in range(a, 3):
            Pb0, Pb1, Pb2 = P[3 * b], P[3 * b + 1], P[3 * b + 2]
            rxP = (r1 * Pb2 - r2 * Pb1, r2 * Pb0 - r0 * Pb2, r0 * Pb1 - r1 * Pb0)        # column b of r x P^T
            x = A[3 * a + b] - Brx[b] + rxP[a]
            out[a, b] += x
            if b != a:
                out[b, a] += x


# ---- rigid-body inertias as 10 parameters (rigid_inertia in flat.py): mass m, first moment h = m c and the
#      rotational inertia Ibar about the origin (upper triangle xx xy xz yy yz zz), the spatial inertia being
#      I = [[Ibar, h x], [-h x, m 1]] (seed 003 Sec. III-D: Ibar = I_C + m c x c x^T, h x = m c x) ----

@njit(inline='always', error_model='numpy')
def rigid_force(I, x):
    """I x = [Ibar w + h x v; m v - h x w] as a 6-tuple, for x = [w; v]."""
    m, h0, h1, h2 = I[0], I[1], I[2], I[3]
    w0, w1, w2, v0, v1, v2 = x[0], x[1], x[2], x[3], x[4], x[5]
    return (I[4] * w0 + I[5] * w1 + I[6] * w2 + h1 * v2 - h2 * v1,
            I[5] * w0 + I[7] * w1 + I[8] * w2 + h2 * v0 - h0 * v2,
            I[6] * w0 + I[8] * w1 + I[9] * w2 + h0 * v1 - h1 * v0,
            m * v0 - h1 * w2 + h2 * w1, m * v1 - h2 * w0 + h0 * w2, m * v2 - h0 * w1 + h1 * w0)


@njit(inline='always', error_model='numpy')
def rigid_congruence(E, r, I):
    """The parameters of X^T I X as a 10-tuple: I moved from the body frame to the frame in which the body
    origin sits at r, body axes E^T. With g = E^T h (parallel-axis theorem): m, h' = g + m r and
    Ibar' = E^T Ibar E - r x g x - (g + m r) x r x = E^T Ibar E - (r u^T + u r^T) + 2 (r . u) 1, u = g + m r / 2."""
    m, h0, h1, h2 = I[0], I[1], I[2], I[3]
    xx, xy, xz, yy, yz, zz = I[4], I[5], I[6], I[7], I[8], I[9]
    R = rotated((xx, xy, xz, xy, yy, yz, xz, yz, zz), E)            # E^T Ibar E
    g0 = E[0, 0] * h0 + E[1, 0] * h1 + E[2, 0] * h2
    g1 = E[0, 1] * h0 + E[1, 1] * h1 + E[2, 1] * h2
    g2 = E[0, 2] * h0 + E[1, 2] * h1 + E[2, 2] * h2
    r0, r1, r2 = r[0], r[1], r[2]
    u0, u1, u2 = g0 + 0.5 * m * r0, g1 + 0.5 * m * r1, g2 + 0.5 * m * r2
    s = 2.0 * (r0 * u0 + r1 * u1 + r2 * u2)
    return (m, g0 + m * r0, g1 + m * r1, g2 + m * r2,
            R[0] - 2.0 * r0 * u0 + s, R[1] - r0 * u1 - u0 * r1, R[2] - r0 * u2 - u0 * r2,
            R[4] - 2.0 * r1 * u1 + s, R[5] - r1 * u2 - u1 * r2, R[8] - 2.0 * r2 * u2 + s)


@njit(inline='always', error_model='numpy')
def add_rigid(p, out):
    """out += the 10 parameters p."""
    for e in range(10):
        out[e] += p[e]


@njit(inline='always', error_model='numpy')
def add_rigid_matrix(p, M):
    """M += [[Ibar, h x], [-h x, m 1]] of the parameters p."""
    m, h0, h1, h2 = p[0], p[1], p[2], p[3]
    M[0, 0] += p[4]
    M[1, 1] += p[7]
    M[2, 2] += p[9]
    M[0, 1] += p[5]
    M[1, 0] += p[5]
    M[0, 2] += p[6]
    M[2, 0] += p[6]
    M[1, 2] += p[8]
    M[2, 1] += p[8]
    for a in range(3, 6):
        M[a, a] += m
    M[1, 3] += h2                                 # h x = [[0, -h2, h1], [h2, 0, -h0], [-h1, h0, 0]]
    M[3, 1] += h2
    M[2, 3] -= h1
    M[3, 2] -= h1
    M[0, 4] -= h2
    M[4, 0] -= h2
    M[2, 4] += h0
    M[4, 2] += h0
    M[0, 5] += h1
    M[5, 0] += h1
    M[1, 5] -= h0
    M[5, 1] -= h0


@njit(inline='always', error_model='numpy')
def cross_motion(v, m):
    """v x m as a 6-tuple."""
    return (v[1] * m[2] - v[2] * m[1], v[2] * m[0] - v[0] * m[2], v[0] * m[1] - v[1] * m[0],
            v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1],
            v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2],
            v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0])


@njit(inline='always', error_model='numpy')
def cross_force(v, f):
    """v x* f as a 6-tuple."""
    return (v[1] * f[2] - v[2] * f[1] + v[4] * f[5] - v[5] * f[4],
            v[2] * f[0] - v[0] * f[2] + v[5] * f[3] - v[3] * f[5],
            v[0] * f[1] - v[1] * f[0] + v[3] * f[4] - v[4] * f[3],
            v[1] * f[5] - v[2] * f[4], v[2] * f[3] - v[0] * f[5], v[0] * f[4] - v[1] * f[3])


@njit(inline='always', error_model='numpy')
def mat6_vec(M, x, out):
    """out = M x for a symmetric M (every caller's: inertias), summed as x_0 M[0] + ... + x_5 M[5], which
    vectorizes over the rows."""
    y = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for c in range(6):
        y = add_scaled(y, x[c], M[c])
    for a in range(6):
        out[a] = y[a]


@njit(inline='always', error_model='numpy')
def dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@njit(inline='always', error_model='numpy')
def add_scaled(acc, a, x):
    """acc + a x for a 6-tuple acc and a 6-vector x."""
    return (acc[0] + a * x[0], acc[1] + a * x[1], acc[2] + a * x[2], acc[3] + a * x[3], acc[4] + a * x[4],
            acc[5] + a * x[5])


@njit(inline='always', error_model='numpy')
def combination(a, x, b, y, c, z):
    """a x + b y + c z for 6-vectors x, y, z, as a 6-tuple."""
    return (a * x[0] + b * y[0] + c * z[0], a * x[1] + b * y[1] + c * z[1], a * x[2] + b * y[2] + c * z[2],
            a * x[3] + b * y[3] + c * z[3], a * x[4] + b * y[4] + c * z[4], a * x[5] + b * y[5] + c * z[5])


# ---- small linear algebra: Cholesky of D_k (m_k <= 6), sparse QR of a LOOP cluster's K_d ----

@njit(error_model='numpy')
def cholesky(A, n):
    """In-place lower Cholesky factor of the SPD A[:n, :n] (lower triangle read), with the reciprocals of
    its diagonal on the diagonal: the solves multiply, as a division on their chain of dependent operations
    costs 3-4 multiplications' latency. False if not PD."""
    for j in range(n):
        s = A[j, j]
        for p in range(j):
            s -= A[j, p] * A[j, p]
        if not s > 0.0:
            return False
        inverse = 1.0 / math.sqrt(s)
        A[j, j] = inverse
        for i in range(j + 1, n):
            t = A[i, j]
            for p in range(j):
                t -= A[i, p] * A[j, p]
            A[i, j] = t * inverse
    return True


@njit(inline='always', error_model='numpy')
def forward_solve(L, n, x):
    """x[:n] <- L^-1 x[:n] (L from cholesky: reciprocals on its diagonal)."""
    for j in range(n):
        for p in range(j):
            x[j] -= L[j, p] * x[p]
        x[j] *= L[j, j]


@njit(inline='always', error_model='numpy')
def forward_solve_rows(L, n, X):
    """X[:n] <- L^-1 X[:n] for the 6-vector rows X[j] of a matrix."""
    for j in range(n):
        for p in range(j):
            for e in range(6):
                X[j, e] -= L[j, p] * X[p, e]
        for e in range(6):
            X[j, e] *= L[j, j]


@njit(inline='always', error_model='numpy')
def backward_solve(L, n, x):
    """x[:n] <- L^-T x[:n] (L from cholesky)."""
    for i in range(n - 1, -1, -1):
        for p in range(i + 1, n):
            x[i] -= L[p, i] * x[p]
        x[i] *= L[i, i]


@njit(inline='always', error_model='numpy')
def reflect(A, step, n, p, b, c):
    """A[step, c] <- (1 - b w w^T) A[step, c]: the reflection of step p of the sparse QR on column c, its rows
    step[:n] (pivot first), w = (1, A[step[1:n], p])."""
    s = A[step[0], c]
    for t in range(1, n):
        s += A[step[t], p] * A[step[t], c]
    s *= b
    A[step[0], c] -= s
    for t in range(1, n):
        A[step[t], c] -= s * A[step[t], p]


@njit(error_model='numpy')
def sparse_qr(m, k, A, nd, width, beta):
    """In-place Householder QR of K_d = A[:, :nd] (rows: the active rows of LOOP cluster k; columns: its
    dependent joints in elimination order) on the cluster's elimination plan (elimination.py; flat.py qr_*),
    Q^T applied to the columns nd..width-1 too: step p reflects only its rows qr_rows[k, p] of its column,
    of the later columns qr_cols[k, p] and of those. R lands in the pivot rows (the first of each step), the
    reflectors below their implicit leading 1 in the others, scaled by a reciprocal (a division per entry
    made delta's dense QR twice as slow); a step of one row reflects nothing (beta 0). Returns
    min |R_pp| and max |R_pp|."""
    rows, n_rows, cols, n_cols = m.qr_rows[k], m.qr_n_rows[k], m.qr_cols[k], m.qr_n_cols[k]
    smallest, largest = math.inf, 0.0
    for p in range(nd):
        step, n, pivot = rows[p], n_rows[p], rows[p, 0]
        beta[p] = 0.0
        norm = 0.0
        for t in range(1, n):
            norm += A[step[t], p] * A[step[t], p]
        if norm > 0.0:
            norm = math.sqrt(norm + A[pivot, p] * A[pivot, p])
            rpp = -norm if A[pivot, p] >= 0.0 else norm
            head = A[pivot, p] - rpp
            inverse = 1.0 / head
            for t in range(1, n):
                A[step[t], p] *= inverse
            beta[p] = -head / rpp
            A[pivot, p] = rpp
            for u in range(n_cols[p]):
                reflect(A, step, n, p, beta[p], cols[p, u])
            for c in range(nd, width):
                reflect(A, step, n, p, beta[p], c)
        smallest, largest = min(smallest, abs(A[pivot, p])), max(largest, abs(A[pivot, p]))
    return smallest, largest


@njit(error_model='numpy')
def back_substitute(m, k, A, nd, c0, c1):
    """A[pivot_p, c0:c1] <- the solutions of R x = A[pivots, c0:c1] after sparse_qr, each in the pivot row of
    its column p (row p of R holds the later columns qr_cols[k, p] only)."""
    rows, cols, n_cols = m.qr_rows[k], m.qr_cols[k], m.qr_n_cols[k]
    for p in range(nd - 1, -1, -1):
        pivot = rows[p, 0]
        inverse = 1.0 / A[pivot, p]
        for c in range(c0, c1):
            t = A[pivot, c]
            for u in range(n_cols[p]):
                j = cols[p, u]
                t -= A[pivot, j] * A[rows[j, 0], c]
            A[pivot, c] = t * inverse


@njit(error_model='numpy')
def dependent_least_squares(m, k, A, nd, width, beta, threshold):
    """K_d^+ A[:, nd:width] (the sparse_qr layout) into the pivot rows of the columns of K_d; returns -1, or
    min |R_pp| / max |R_pp| where K_d is singular: min |R_pp| <= threshold max(max |R_pp|, 1)
    (kinematics.SINGULARITY_THRESHOLD)."""
    smallest, largest = sparse_qr(m, k, A, nd, width, beta)
    if smallest <= threshold * max(largest, 1.0):
        return smallest / largest if largest > 0.0 else 0.0
    back_substitute(m, k, A, nd, nd, width)
    return -1.0


@njit(error_model='numpy')
def qr_solve(m, k, A, nd, beta, c):
    """A[pivot_p, c] <- K_d^+ A[:, c] for a column c after dependent_least_squares."""
    rows, n_rows = m.qr_rows[k], m.qr_n_rows[k]
    for p in range(nd):
        if beta[p] != 0.0:
            reflect(A, rows[p], n_rows[p], p, beta[p], c)
    back_substitute(m, k, A, nd, c, c + 1)


# ---- joints (jcalc, seed 001; joints.py) ----

@njit(inline='always', error_model='numpy')
def joint_nv(code):
    return 6 if code == FLOATING else 3 if code == SPHERICAL or code == PLANAR else 1


@njit(inline='always', error_model='numpy')
def joint_motion(code, axes, x, ix):
    """S_i x[ix:ix + nv] as a 6-tuple; axes = rows (e1, e2, axis) of the joint's axis frame (a floating
    joint's velocity is [linear; angular]; a planar one's e1, e2 linear and axis angular)."""
    if code == FLOATING:
        return x[ix + 3], x[ix + 4], x[ix + 5], x[ix], x[ix + 1], x[ix + 2]
    if code == SPHERICAL:
        return x[ix], x[ix + 1], x[ix + 2], 0.0, 0.0, 0.0
    e1, e2, axis = axes[0], axes[1], axes[2]
    if code == PLANAR:
        u, w, t = x[ix], x[ix + 1], x[ix + 2]
        return (axis[0] * t, axis[1] * t, axis[2] * t, e1[0] * u + e2[0] * w, e1[1] * u + e2[1] * w,
                e1[2] * u + e2[2] * w)
    s = x[ix]
    if code == PRISMATIC:
        return 0.0, 0.0, 0.0, axis[0] * s, axis[1] * s, axis[2] * s
    return axis[0] * s, axis[1] * s, axis[2] * s, 0.0, 0.0, 0.0


@njit(inline='always', error_model='numpy')
def joint_column(code, axes, j):
    """Column j of S_i as a 6-tuple."""
    if code == FLOATING or code == SPHERICAL:  # [linear; angular] (floating) -> [angular; linear] motion
        e = (1.0 if j % 3 == 0 else 0.0, 1.0 if j % 3 == 1 else 0.0, 1.0 if j % 3 == 2 else 0.0)
        angular = j >= 3 if code == FLOATING else True
        return (e[0], e[1], e[2], 0.0, 0.0, 0.0) if angular else (0.0, 0.0, 0.0, e[0], e[1], e[2])
    axis = axes[2]
    if code == PLANAR:
        if j == 2:
            return axis[0], axis[1], axis[2], 0.0, 0.0, 0.0
        return 0.0, 0.0, 0.0, axes[j, 0], axes[j, 1], axes[j, 2]
    if code == PRISMATIC:
        return 0.0, 0.0, 0.0, axis[0], axis[1], axis[2]
    return axis[0], axis[1], axis[2], 0.0, 0.0, 0.0


@njit(inline='always', error_model='numpy')
def axis_rotation(axis, angle, EJ):
    """EJ = R(axis, angle)^T = 1 - sin K + (1 - cos) K^2, K = axis x."""
    s, t = math.sin(angle), 1.0 - math.cos(angle)
    x, y, z = axis[0], axis[1], axis[2]
    n2 = x * x + y * y + z * z
    for a in range(3):
        for b in range(3):
            EJ[a, b] = t * axis[a] * axis[b]
        EJ[a, a] += 1.0 - t * n2
    EJ[0, 1] += s * z
    EJ[1, 0] -= s * z
    EJ[0, 2] -= s * y
    EJ[2, 0] += s * y
    EJ[1, 2] += s * x
    EJ[2, 1] -= s * x


@njit(inline='always', error_model='numpy')
def quaternion_rotation(q, at, EJ):
    """EJ = R(q[at:at + 4])^T for a unit quaternion qx qy qz qw."""
    qx, qy, qz, qw = q[at], q[at + 1], q[at + 2], q[at + 3]
    EJ[0, 0], EJ[1, 0], EJ[2, 0] = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
    EJ[0, 1], EJ[1, 1], EJ[2, 1] = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
    EJ[0, 2], EJ[1, 2], EJ[2, 2] = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)


@njit(inline='always', error_model='numpy')
def joint_transform(code, axes, q, iq, EJ):
    """E_J of X_J(q) into EJ; returns its translation r_J (joints.py)."""
    if code == REVOLUTE:
        axis_rotation(axes[2], q[iq], EJ)
        return 0.0, 0.0, 0.0
    if code == PRISMATIC:
        for a in range(3):
            for b in range(3):
                EJ[a, b] = 1.0 if a == b else 0.0
        return q[iq] * axes[2, 0], q[iq] * axes[2, 1], q[iq] * axes[2, 2]
    if code == PLANAR:
        axis_rotation(axes[2], q[iq + 2], EJ)
        x, y = q[iq], q[iq + 1]
        return x * axes[0, 0] + y * axes[1, 0], x * axes[0, 1] + y * axes[1, 1], x * axes[0, 2] + y * axes[1, 2]
    if code == SPHERICAL:
        quaternion_rotation(q, iq, EJ)
        return 0.0, 0.0, 0.0
    quaternion_rotation(q, iq + 3, EJ)
    return q[iq], q[iq + 1], q[iq + 2]


@njit(error_model='numpy')
def update_transforms(m, d, q):
    """Xup of every body (body_transforms)."""
    body_transforms(m, d, q, 1, len(m.joint))


@njit(error_model='numpy')
def body_transforms(m, d, q, b0, b1):
    """Xup[i] = X_J(q_i) X_tree(i) of bodies b0..b1-1: E = E_J E_T, r = r_T + E_T^T r_J (kinematics.py). A
    revolute joint about +-e_a turns by the angle t = +-q; E_J = R(e_a, t)^T then only mixes the rows b, c
    (a, b, c cyclic): E[b] = cos t E_T[b] + sin t E_T[c], E[c] = cos t E_T[c] - sin t E_T[b], r = r_T."""
    joint, axes, coordinate_axis, idx_q, tree_E, tree_r = m.joint, m.axes, m.coordinate_axis, m.idx_q, m.tree_E, \
        m.tree_r
    Xup_E, Xup_r, EJ = d.Xup_E, d.Xup_r, d.E3
    for i in range(b0, b1):
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


# ---- cluster kinematics (kinematics.py; seed 003, Alg. 1 lines 1-19) ----

@njit(inline='always', error_model='numpy')
def set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r):
    """Xo[i] = ^iX_output(i) from Xup[i] = (E, r): Xup[i] Xo[parent(i)] where the parent is in the cluster,
    else Xup[i] (kinematics.py cluster_motion; parents first)."""
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
    parent, cluster, body_range, Xup_E, Xup_r, Xo_E, Xo_r = m.parent, m.cluster, m.body_range, d.Xup_E, d.Xup_r, \
        d.Xo_E, d.Xo_r
    for i in range(b0, b1):
        E, r = transform_at(Xup_E, Xup_r, i)
        set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r)


@njit(error_model='numpy')
def loop_output_transforms(m, d):
    """Xo of the bodies of every LOOP cluster, which their constraint rows and closure checks read."""
    for k in range(len(m.kind)):
        if m.kind[k] == LOOP:
            output_transforms(m, d, m.body_range[k, 0], m.body_range[k, 1])


@njit(inline='always', error_model='numpy')
def output_frame(m, d, k, body):
    """^bodyX_output of a body of cluster k or of its output body (the identity) as tuples."""
    return transform_at(d.Xo_E, d.Xo_r, body) if m.cluster[body] == k else IDENTITY


@njit(inline='always', error_model='numpy')
def set_loop_ends(d, lp, E_A, r_A, E_B, r_B):
    """The transforms to the predecessor (A) and successor (B) bodies of loop lp from one frame fixed to both
    (d.end_E, d.end_r), which the closure check reads (compiled_checks.loop_residuals)."""
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
    """K_k of the LOOP cluster k over its active rows into d.K[k], at the transforms Xo of its bodies
    (output_transforms): its constant coupling rows and, for each loop, Psi^T (J_S - J_P) (constraints.py
    LoopConstraint.evaluate) in the cluster's output frame o, where every loop finds its joint columns
    (d.joint_o, one transform per body for all the loops) and its Psi (d.Psi_o), which constraint_bias
    reads too. LoopConstraint works in NCA coordinates; a change of coordinates at the instant leaves
    Psi^T J and k as they are (Psi maps as a force, the columns as motions). A universal loop's first
    row n = a1 x a2 turns with both bodies: a1 fixed in the predecessor, a2 in the successor (into
    d.loop_a; LoopConstraint.directions)."""
    joint, axes, col, loop_path, loop_path_len, loop_active = m.joint, m.axes, m.col, m.loop_path, m.loop_path_len, \
        m.loop_active
    loop_E, loop_r, loop_Psi, universal, loop_axes, loop_ends = m.loop_E, m.loop_r, m.loop_Psi, m.loop_universal, \
        m.loop_axes, m.loop_ends
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
        E_A, r_A = output_frame(m, d, k, loop_ends[lp, 0])                   # ^predX_o
        E_B, r_B = output_frame(m, d, k, loop_ends[lp, 1])                   # ^succX_o
        set_loop_ends(d, lp, E_A, r_A, E_B, r_B)
        E, r = transform_at(loop_E, loop_r, lp)
        E, r = product(E, r, E_A, r_A)                                       # ^PX_o = ^PX_pred ^predX_o
        for row in range(universal[lp], rows):
            psi = transposed_force(E, r, loop_Psi[lp, row])                  # force-like: ^PX_o^T Psi
            for e in range(6):
                Psi_o[lp, row, e] = psi[e]
        if universal[lp]:
            a1, a2 = rotated_back(E_A, loop_axes[lp, 0]), rotated_back(E_B, loop_axes[lp, 1])
            n = (a1[1] * a2[2] - a1[2] * a2[1], a1[2] * a2[0] - a1[0] * a2[2], a1[0] * a2[1] - a1[1] * a2[0])
            for e in range(3):
                loop_a[lp, 0, e], loop_a[lp, 1, e], Psi_o[lp, 0, e], Psi_o[lp, 0, 3 + e] = a1[e], a2[e], n[e], 0.0
        for side in range(2):
            sign = -1.0 if side == 0 else 1.0
            for p in range(length[side]):
                body = path[side, p]
                for j in range(joint_nv(joint[body])):
                    c = col[body] + j
                    for row in range(rows):
                        K[a0 + row, c] += sign * dot6(Psi_o[lp, row], joint_o[body, j])


@njit(inline='always', error_model='numpy')
def branch_motion(joint, col, path, length, joint_o, qd):
    """Velocity v relative to the NCA and bias acceleration a (qdd = 0) at the end of one path of a loop, in
    the columns' frame: v = sum s qd and a = sum v x (s qd) down the path (d/dt (s qd) = v x (s qd), s fixed
    in the body)."""
    v = a = ZERO6
    for p in range(length):
        body = path[p]
        vJ = ZERO6
        for j in range(joint_nv(joint[body])):
            vJ = add_scaled(vJ, qd[col[body] + j], joint_o[body, j])
        v = add_scaled(vJ, 1.0, v)
        a = add_scaled(cross_motion(v, vJ), 1.0, a)
    return v, a


@njit(error_model='numpy')
def constraint_bias(m, d, k, qd, bias):
    """k_k of the LOOP cluster k over its active rows into bias, at its spanning velocities qd: zero on the
    coupling rows and, on the rows of each loop, Psi^T (v_P x v_S - (a_S - a_P)) with the paths' velocities
    and bias accelerations (branch_motion), from the columns and Psi of constraint_rows; a universal loop's
    first row adds (a1.w_r)(a2.w_r) - (a1.a2)|w_r|^2, w_r = w_S - w_P (constraints.py)."""
    joint, col, loop_path, loop_path_len, loop_active, universal = m.joint, m.col, m.loop_path, m.loop_path_len, \
        m.loop_active, m.loop_universal
    joint_o, Psi_o, loop_a = d.joint_o, d.Psi_o, d.loop_a
    for a in range(m.n_active[k]):
        bias[a] = 0.0
    for lp in range(m.loop_range[k, 0], m.loop_range[k, 1]):
        path, length, Psi = loop_path[lp], loop_path_len[lp], Psi_o[lp]
        vP, aP = branch_motion(joint, col, path[0], length[0], joint_o, qd)
        vS, aS = branch_motion(joint, col, path[1], length[1], joint_o, qd)
        x = cross_motion(vP, vS)
        w = (x[0] - aS[0] + aP[0], x[1] - aS[1] + aP[1], x[2] - aS[2] + aP[2], x[3] - aS[3] + aP[3],
             x[4] - aS[4] + aP[4], x[5] - aS[5] + aP[5])
        a0 = loop_active[lp, 0]
        for row in range(loop_active[lp, 1] - a0):
            bias[a0 + row] = dot6(Psi[row], w)
        if universal[lp]:
            a1, a2 = loop_a[lp, 0], loop_a[lp, 1]
            w0, w1, w2 = vS[0] - vP[0], vS[1] - vP[1], vS[2] - vP[2]
            bias[a0] += (a1[0] * w0 + a1[1] * w1 + a1[2] * w2) * (a2[0] * w0 + a2[1] * w1 + a2[2] * w2) \
                - (a1[0] * a2[0] + a1[1] * a2[1] + a1[2] * a2[2]) * (w0 * w0 + w1 * w1 + w2 * w2)


@njit(error_model='numpy')
def loop_constraint(m, d, k, yd, velocities):
    """G_k = P [1; -K_d^+ K_i] and, with velocities, g_k = P [0; K_d^+ k] and qd_k = G_k yd_k from the sparse
    QR of the dependent columns of K_k that carries its independent ones, then k in its last column
    (kinematics.py explicit_constraint, seed 000 Sec. 1.1)."""
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
    conditioning = dependent_least_squares(m, k, A, nd, n, beta, m.singularity_threshold)     # K_d^+ K_i
    if conditioning >= 0.0:
        d.info[0], d.info[1] = k, conditioning
        return SINGULAR_SPLIT
    for j in range(mk):
        for r in range(n):
            G[j, r] = 0.0
        G[j, independent[j]] = 1.0
        for p in range(nd):
            G[j, dependent[p]] = -A[pivot[p], nd + j]
    amplification = 1.0                       # the largest row sum of |G_k| (kinematics.check_amplification)
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
    constraint_bias(m, d, k, qd[v0:v1], A[:, n])
    qr_solve(m, k, A, nd, beta, n)
    for p in range(nd):
        g[v0 + dependent[p]] = A[pivot[p], n]
    return OK


@njit(error_model='numpy')
def explicit_constraints(m, d, yd, velocities=True):
    """G_k and, with velocities, g_k and qd_k = G_k yd_k of every cluster (G constant and g = 0 unless LOOP;
    a LOOP cluster's Xo first, which its constraint rows take)."""
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
    """Transforms (q None: d.Xup is at the positions already, computed by the position check of a fused
    call, compiled_calls.py) and constraints, then base to tips for each body i of each cluster k: Xo (of a
    LOOP cluster's bodies already with its constraints), its rows of S_k = Omega blkdiag(S_i) G_k (eq. 24)
    and, with velocities (CRBA and EFPA do without: yd = 0), v (eq. 33) and its rows of
    c_k = Omega (blkdiag(S_i) g_k + stack(v_i x S_i qd_i)) (digest 1.8); Omega is applied recursively along
    the in-cluster parents. Bodies are numbered cluster by cluster."""
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
        E, r = transform_at(Xup_E, Xup_r, i)                         # in registers (header)
        if kind[k] != LOOP:                                          # a LOOP cluster's with its constraints
            set_output_transform(parent, cluster, body_range, Xo_E, Xo_r, i, E, r)
        for j in range(mk):                                          # S_i G_k, G_k = 1 for one body
            x = joint_column(joint[i], axes[i], j) if single else joint_motion(joint[i], axes[i], G[k, j], col[i])
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


# ---- C-RNEA (rnea.py; seed 003 Sec. VI) ----

@njit(inline='always', error_model='numpy')
def set_base_acceleration(m, d):
    """a_0 = -a_g: gravity enters as a fictitious base acceleration."""
    for e in range(3):
        d.a[0, e] = 0.0
        d.a[0, 3 + e] = -m.gravity[e]


@njit(inline='always', error_model='numpy')
def bias_force(I, v, f_ext, f):
    """f = v x* I v - f_ext (the velocity-product part of eq. 34), I as 10 parameters."""
    x = cross_force(v, rigid_force(I, v))
    for e in range(6):
        f[e] = x[e] - f_ext[e]


@njit(inline='always', error_model='numpy')
def bias_acceleration(Xo_E, Xo_r, a, c, i, o):
    """a_i = ^iX_o a_o + c_i: eq. (33) without S_k ydd_k."""
    transform_motion(Xo_E[i], Xo_r[i], a[o], a[i])
    for e in range(6):
        a[i, e] += c[i, e]


@njit(cache=True, nogil=True, error_model='numpy')
def rnea(m, d, q, yd, ydd, f_ext):
    """Independent forces tau_y = S_k^T f_k into d.tau (rnea.py)."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    rigid, cluster, output, body_range, y_range = m.rigid_inertia, m.cluster, m.output, m.body_range, m.y_range
    Xo_E, Xo_r, S, v, a, c, f, tau = d.Xo_E, d.Xo_r, d.S, d.v, d.a, d.c, d.f, d.tau
    set_base_acceleration(m, d)
    for i in range(1, len(rigid)):                                   # forward pass, cluster by cluster
        k = cluster[i]
        y0 = y_range[k, 0]
        bias_acceleration(Xo_E, Xo_r, a, c, i, output[k])
        for e in range(6):
            for j in range(y_range[k, 1] - y0):
                a[i, e] += S[i, j, e] * ydd[y0 + j]                  # eq. (33)
        bias_force(rigid[i], v[i], f_ext[i], f[i])
        x = rigid_force(rigid[i], a[i])
        for e in range(6):
            f[i, e] += x[e]                                          # eq. (34)
    for k in range(len(output) - 1, -1, -1):                         # backward pass
        o, b0, b1, y0 = output[k], body_range[k, 0], body_range[k, 1], y_range[k, 0]
        for j in range(y_range[k, 1] - y0):
            tau[y0 + j] = 0.0
            for i in range(b0, b1):
                tau[y0 + j] += dot6(S[i, j], f[i])                   # eq. (31)
        if o > 0:
            for i in range(b0, b1):
                transform_force(Xo_E[i], Xo_r[i], f[i], f[o], True)  # eq. (35)
    return OK


# ---- C-ABA (aba.py; seed 003 Alg. 1) ----

@njit(error_model='numpy')
def articulated_inertias(m, d):
    """I^A of every body, tips to base, from I^A = I: for each cluster k U_k = I^A_k S_k (zero on its held
    coordinates, whose rows and columns of D_k are those of the identity: they stay still, aba.py),
    D_k = S_k^T U_k = L_k L_k^T, V_k = L_k^-1 (^kX_o^T U_k)^T and
    I^A_o += sum_i ^iX_o^T I^A_i ^iX_o - V_k^T V_k (I^a of eqs. 55-56 carried to the output body). A leaf's
    I^A is its I, used as 10 parameters (rigid_force, rigid_congruence); d.IA holds the others'."""
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
        b0, b1, mk, Lk, Vk = body_range[k, 0], body_range[k, 1], y_range[k, 1] - y_range[k, 0], L[k], V[k]
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
        for r in range(mk):                    # a held coordinate's row and column: those of the identity
            for c in range(r + 1):
                Lk[r, c] = 0.0
                for i in range(b0, b1):
                    Lk[r, c] += dot6(S[i, r], U[i, c])
                Lk[r, c] *= free[y_range[k, 0] + r]
            Lk[r, r] += 1.0 - free[y_range[k, 0] + r]
        if not cholesky(Lk, mk):
            d.info[0] = k
            return D_NOT_POSITIVE
        smallest, largest = math.inf, 0.0          # of the reciprocals 1/L_jj: their ratio is the same
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
            if leaf[i]:                                              # I^A_i = I_i: the cheap congruence
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
    """Tips to base, for each cluster k: u_k = tau_k - S_k^T p^A_k (tau_k = G_k^T tau for spanning forces)
    and p^A_o += sum_i ^iX_o^T (p^A_i + I^A_i c_i) + V_k^T L_k^-1 (u_k - U_k^T c_k) (p^a of Alg. 1)."""
    rigid, leaf, output, body_range, v_range, y_range = m.rigid_inertia, m.leaf, m.output, m.body_range, \
        m.v_range, m.y_range
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
            u[y0 + j] = t * free[y0 + j]                             # a held coordinate's force is ignored
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
    """Base to tips, for each cluster k: ydd_k = D_k^-1 (u_k - U_k^T a'), a' = ^kX_o a_o + c_k, then
    a_k = a' + S_k ydd_k."""
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
    if status != OK:
        return status
    rigid, v, pA = m.rigid_inertia, d.v, d.f
    for i in range(1, len(rigid)):
        bias_force(rigid[i], v[i], f_ext[i], pA[i])                  # p^A = v x* I v - f_ext
    articulated_biases(m, d, tau)
    set_base_acceleration(m, d)
    aba_accelerations(m, d)                                          # forward pass
    spanning_accelerations(m, d, d.ydd)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def spanning(m, d, q, yd, ydd):
    """qdd = G ydd + g into d.qdd (G, g from the constraints at q, yd)."""
    update_transforms(m, d, q)
    status = explicit_constraints(m, d, yd)
    if status == OK:
        spanning_accelerations(m, d, ydd)
    return status


# ---- cluster CRBA (crba.py) ----

@njit(cache=True, nogil=True, error_model='numpy')
def crba(m, d, q):
    """H_y = G^T H G into d.H: composite rigid-body inertias Ic_o += ^iX_o^T Ic_i ^iX_o (as 10 parameters),
    then each block column F = sum_i ^iX_o^T Ic_i S_i (seed 001, eq. 10) walked up the ancestors:
    H_jk = S_j^T F, F <- ^bX_o^T F."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status != OK:
        return status
    rigid, output, cluster, body_range, y_range = m.rigid_inertia, m.output, m.cluster, m.body_range, m.y_range
    Xo_E, Xo_r, S, U, Ic, F, H = d.Xo_E, d.Xo_r, d.S, d.U, d.Ic, d.F, d.H
    nc = len(output)
    for i in range(1, len(rigid)):
        for e in range(10):
            Ic[i, e] = rigid[i, e]
    for k in range(nc - 1, -1, -1):
        o = output[k]
        if o > 0:
            for i in range(body_range[k, 0], body_range[k, 1]):
                add_rigid(rigid_congruence(Xo_E[i], Xo_r[i], Ic[i]), Ic[o])     # seed 001, eq. 9
    for r in range(H.shape[0]):
        for c in range(H.shape[1]):
            H[r, c] = 0.0
    for k in range(nc):
        b0, b1, y0, mk = body_range[k, 0], body_range[k, 1], y_range[k, 0], y_range[k, 1] - y_range[k, 0]
        body = output[k]
        for j in range(mk):
            for e in range(6):
                F[j, e] = 0.0
            for i in range(b0, b1):
                f, u = rigid_force(Ic[i], S[i, j]), U[i, j]
                for e in range(6):
                    u[e] = f[e]
                if body > 0:                                         # F only goes up to ancestors
                    transform_force(Xo_E[i], Xo_r[i], u, F[j], True)
        for r in range(mk):
            for c in range(r, mk):                                   # H_k symmetric
                t = 0.0
                for i in range(b0, b1):
                    t += dot6(S[i, r], U[i, c])
                H[y0 + r, y0 + c] = H[y0 + c, y0 + r] = t
        while body > 0:
            j = cluster[body]
            z0 = y_range[j, 0]
            for r in range(y_range[j, 1] - z0):
                for c in range(mk):
                    H[z0 + r, y0 + c] = dot6(S[body, r], F[c])
                    H[y0 + c, z0 + r] = H[z0 + r, y0 + c]
            if output[j] > 0:
                for c in range(mk):
                    transform_force(Xo_E[body], Xo_r[body], F[c], F[c], False)
            body = output[j]
    return OK


# ---- C-EFPA (efpa.py; seed 003 Sec. VIII) ----

@njit(error_model='numpy')
def frame_propagators(m, d, frame_body, frame_X, T):
    """T[e] (ny x 6) of each frame e: T_k^T, T_k = Chi S_k L_k^-T, on each cluster k supporting the frame, at
    the rows [y_support[k] - m_k, y_support[k]) (root first), with the propagator Chi (a single 6x6 block, at
    one body, held by columns; rows in the public [linear; angular] order) moved up by
    Chi <- Chi ^bX_o - T_k V_k, which is eq. (62) with L_k = 1 - S_k D_k^-1 U_k^T. Then Lambda^-1 = T T^T
    (eqs. 63-67 unrolled)."""
    cluster, output, y_range, y_support, free = m.cluster, m.output, m.y_range, m.y_support, m.free_y
    Xo_E, Xo_r, S, V, L, SL = d.Xo_E, d.Xo_r, d.S, d.V, d.L, d.SL
    for e in range(len(frame_body)):
        body, Te, X = frame_body[e], T[e], frame_X[e]
        chi = ((X[3, 0], X[4, 0], X[5, 0], X[0, 0], X[1, 0], X[2, 0]),
               (X[3, 1], X[4, 1], X[5, 1], X[0, 1], X[1, 1], X[2, 1]),
               (X[3, 2], X[4, 2], X[5, 2], X[0, 2], X[1, 2], X[2, 2]),
               (X[3, 3], X[4, 3], X[5, 3], X[0, 3], X[1, 3], X[2, 3]),
               (X[3, 4], X[4, 4], X[5, 4], X[0, 4], X[1, 4], X[2, 4]),
               (X[3, 5], X[4, 5], X[5, 5], X[0, 5], X[1, 5], X[2, 5]))
        while body > 0:
            k = cluster[body]
            mk = y_range[k, 1] - y_range[k, 0]
            t0 = y_support[k] - mk
            for j in range(mk):
                for c in range(6):
                    SL[j, c] = S[body, j, c] * free[y_range[k, 0] + j]          # held: no column
            forward_solve_rows(L[k], mk, SL)
            for j in range(mk):
                t = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for c in range(6):
                    t = add_scaled(t, SL[j, c], chi[c])
                for r in range(6):
                    Te[t0 + j, r] = t[r]
            if output[k] == 0:
                break
            chi = right_transform(chi, Xo_E[body], Xo_r[body])
            for j in range(mk):
                t, v = Te[t0 + j], V[k, j]
                chi = (add_scaled(chi[0], -v[0], t), add_scaled(chi[1], -v[1], t), add_scaled(chi[2], -v[2], t),
                       add_scaled(chi[3], -v[3], t), add_scaled(chi[4], -v[4], t), add_scaled(chi[5], -v[5], t))
            body = output[k]


@njit(inline='always', error_model='numpy')
def common_support(output, cluster, y_support, body1, body2):
    """The number of independent velocities of the clusters supporting both bodies: y_support of their
    nearest common cluster (a parent precedes its children), 0 if none."""
    k1, k2 = cluster[body1], cluster[body2]
    while k1 != k2:
        if k1 > k2:
            k1 = cluster[output[k1]]
        else:
            k2 = cluster[output[k2]]
    return y_support[k1] if k1 >= 0 else 0


@njit(cache=True, nogil=True, error_model='numpy')
def efpa(m, d, q, frame_body, frame_X, T, Omega):
    """Lambda^-1 (6 nf x 6 nf) of frames (body, ^frameX_body) into Omega, in the public layout:
    [linear; angular] rows and columns per frame, each in its own frame; T: (nf, ny, 6) scratch."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status == OK:
        status = articulated_inertias(m, d)
    if status != OK:
        return status
    frame_propagators(m, d, frame_body, frame_X, T)
    output, cluster, y_support, nf = m.output, m.cluster, m.y_support, len(frame_body)
    for e1 in range(nf):
        for e2 in range(e1, nf):
            n = common_support(output, cluster, y_support, frame_body[e1], frame_body[e2])
            T1, T2 = T[e1], T[e2]
            for r in range(0, 6, 2):                                 # two rows at a time: independent sums
                a = b = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for y in range(n):
                    a, b = add_scaled(a, T1[y, r], T2[y]), add_scaled(b, T1[y, r + 1], T2[y])
                for c in range(6):
                    Omega[6 * e1 + r, 6 * e2 + c] = Omega[6 * e2 + c, 6 * e1 + r] = a[c]
                    Omega[6 * e1 + r + 1, 6 * e2 + c] = Omega[6 * e2 + c, 6 * e1 + r + 1] = b[c]
    return OK
