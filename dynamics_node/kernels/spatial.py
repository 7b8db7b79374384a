"""Spatial algebra of the kernels (the twin of dynamics_node/spatial.py): transforms as (E, r)
pairs, X = [[E, 0], [-E r x, E]] (Featherstone & Orin 2000), held as tuples (E a row-major 9-tuple,
r a 3-tuple) in registers; 6-vectors as tuples or rows of buffers; rigid-body inertias as 10
parameters (m, h = m c, Ibar)."""

from numba import njit

from .cache import key_on_helpers

key_on_helpers(__file__)


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
        n0, n1, n2, g0, g1, g2 = (n0 + out[0], n1 + out[1], n2 + out[2],
                                  g0 + out[3], g1 + out[4], g2 + out[5])
    out[0], out[1], out[2], out[3], out[4], out[5] = n0, n1, n2, g0, g1, g2


@njit(inline='always', error_model='numpy')
def compose(E1, r1, E2, r2, E, r):
    """X = X1 X2 (product) into E, r, which must not alias the inputs."""
    E12, r12 = product(rotation_tuple(E1), (r1[0], r1[1], r1[2]),
                       rotation_tuple(E2), (r2[0], r2[1], r2[2]))
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
    return ((E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
             E[i, 2, 0], E[i, 2, 1], E[i, 2, 2]), (r[i, 0], r[i, 1], r[i, 2]))


@njit(inline='always', error_model='numpy')
def product(E1, r1, E2, r2):
    """X1 X2 as tuples: E = E1 E2, r = r2 + E2^T r1."""
    return ((E1[0] * E2[0] + E1[1] * E2[3] + E1[2] * E2[6],
             E1[0] * E2[1] + E1[1] * E2[4] + E1[2] * E2[7],
             E1[0] * E2[2] + E1[1] * E2[5] + E1[2] * E2[8],
             E1[3] * E2[0] + E1[4] * E2[3] + E1[5] * E2[6],
             E1[3] * E2[1] + E1[4] * E2[4] + E1[5] * E2[7],
             E1[3] * E2[2] + E1[4] * E2[5] + E1[5] * E2[8],
             E1[6] * E2[0] + E1[7] * E2[3] + E1[8] * E2[6],
             E1[6] * E2[1] + E1[7] * E2[4] + E1[8] * E2[7],
             E1[6] * E2[2] + E1[7] * E2[5] + E1[8] * E2[8]),
            (r2[0] + E2[0] * r1[0] + E2[3] * r1[1] + E2[6] * r1[2],
             r2[1] + E2[1] * r1[0] + E2[4] * r1[1] + E2[7] * r1[2],
             r2[2] + E2[2] * r1[0] + E2[5] * r1[1] + E2[8] * r1[2]))


@njit(inline='always', error_model='numpy')
def relative(E1, r1, E2, r2):
    """X1 X2^-1 as tuples, of two transforms from one frame: E = E1 E2^T, r = E2 (r1 - r2)."""
    u = (r1[0] - r2[0], r1[1] - r2[1], r1[2] - r2[2])
    return ((E1[0] * E2[0] + E1[1] * E2[1] + E1[2] * E2[2],
             E1[0] * E2[3] + E1[1] * E2[4] + E1[2] * E2[5],
             E1[0] * E2[6] + E1[1] * E2[7] + E1[2] * E2[8],
             E1[3] * E2[0] + E1[4] * E2[1] + E1[5] * E2[2],
             E1[3] * E2[3] + E1[4] * E2[4] + E1[5] * E2[5],
             E1[3] * E2[6] + E1[4] * E2[7] + E1[5] * E2[8],
             E1[6] * E2[0] + E1[7] * E2[1] + E1[8] * E2[2],
             E1[6] * E2[3] + E1[7] * E2[4] + E1[8] * E2[5],
             E1[6] * E2[6] + E1[7] * E2[7] + E1[8] * E2[8]),
            (E2[0] * u[0] + E2[1] * u[1] + E2[2] * u[2],
             E2[3] * u[0] + E2[4] * u[1] + E2[5] * u[2],
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
    return (E[0] * w0 + E[1] * w1 + E[2] * w2,
            E[3] * w0 + E[4] * w1 + E[5] * w2,
            E[6] * w0 + E[7] * w1 + E[8] * w2,
            E[0] * t0 + E[1] * t1 + E[2] * t2,
            E[3] * t0 + E[4] * t1 + E[5] * t2,
            E[6] * t0 + E[7] * t1 + E[8] * t2)


@njit(inline='always', error_model='numpy')
def inverse_motion(E, r, m):
    """X^-1 m = [E^T w; E^T v + r x E^T w] as a 6-tuple."""
    w0, w1, w2 = rotated_back(E, (m[0], m[1], m[2]))
    t0, t1, t2 = rotated_back(E, (m[3], m[4], m[5]))
    return (w0, w1, w2,
            t0 + r[1] * w2 - r[2] * w1, t1 + r[2] * w0 - r[0] * w2, t2 + r[0] * w1 - r[1] * w0)


@njit(inline='always', error_model='numpy')
def transposed_force(E, r, f):
    """X^T f = [E^T n + r x E^T f0; E^T f0] as a 6-tuple."""
    g0, g1, g2 = rotated_back(E, (f[3], f[4], f[5]))
    n0, n1, n2 = rotated_back(E, (f[0], f[1], f[2]))
    return (n0 + r[1] * g2 - r[2] * g1, n1 + r[2] * g0 - r[0] * g2, n2 + r[0] * g1 - r[1] * g0,
            g0, g1, g2)


@njit(inline='always', error_model='numpy')
def path_transform(Xup_E, Xup_r, path, n):
    """^bodyX_top of the last of the n bodies of path below top as tuples
    (constraints.chain_transform)."""
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
    w = (M[0] * E[0, 0] + M[1] * E[1, 0] + M[2] * E[2, 0],
         M[0] * E[0, 1] + M[1] * E[1, 1] + M[2] * E[2, 1],
         M[0] * E[0, 2] + M[1] * E[1, 2] + M[2] * E[2, 2],
         M[3] * E[0, 0] + M[4] * E[1, 0] + M[5] * E[2, 0],
         M[3] * E[0, 1] + M[4] * E[1, 1] + M[5] * E[2, 1],
         M[3] * E[0, 2] + M[4] * E[1, 2] + M[5] * E[2, 2],
         M[6] * E[0, 0] + M[7] * E[1, 0] + M[8] * E[2, 0],
         M[6] * E[0, 1] + M[7] * E[1, 1] + M[8] * E[2, 1],
         M[6] * E[0, 2] + M[7] * E[1, 2] + M[8] * E[2, 2])
    return (E[0, 0] * w[0] + E[1, 0] * w[3] + E[2, 0] * w[6],
            E[0, 0] * w[1] + E[1, 0] * w[4] + E[2, 0] * w[7],
            E[0, 0] * w[2] + E[1, 0] * w[5] + E[2, 0] * w[8],
            E[0, 1] * w[0] + E[1, 1] * w[3] + E[2, 1] * w[6],
            E[0, 1] * w[1] + E[1, 1] * w[4] + E[2, 1] * w[7],
            E[0, 1] * w[2] + E[1, 1] * w[5] + E[2, 1] * w[8],
            E[0, 2] * w[0] + E[1, 2] * w[3] + E[2, 2] * w[6],
            E[0, 2] * w[1] + E[1, 2] * w[4] + E[2, 2] * w[7],
            E[0, 2] * w[2] + E[1, 2] * w[5] + E[2, 2] * w[8])


@njit(inline='always', error_model='numpy')
def rotated_block(M, r0, c0, E):
    """E^T M[r0:r0 + 3, c0:c0 + 3] E as a row-major 9-tuple."""
    return rotated((M[r0, c0], M[r0, c0 + 1], M[r0, c0 + 2],
                    M[r0 + 1, c0], M[r0 + 1, c0 + 1], M[r0 + 1, c0 + 2],
                    M[r0 + 2, c0], M[r0 + 2, c0 + 1], M[r0 + 2, c0 + 2]), E)


@njit(inline='always', error_model='numpy')
def congruence_add(E, r, M, out):
    """out += X^T M X for a symmetric M (Chignoli et al. 2023, eq. 55).
    X = blkdiag(E, E) [[1, 0], [-r x, 1]]: with the rotated blocks A, B, C (E^T A E, ...) of
    M = [[A, B], [B^T, C]] and P = B + r x C,
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
        # row a of B r x
        Brx = (Ba1 * r2 - Ba2 * r1, Ba2 * r0 - Ba0 * r2, Ba0 * r1 - Ba1 * r0)
        for b in range(a, 3):
            Pb0, Pb1, Pb2 = P[3 * b], P[3 * b + 1], P[3 * b + 2]
            # column b of r x P^T
            rxP = (r1 * Pb2 - r2 * Pb1, r2 * Pb0 - r0 * Pb2, r0 * Pb1 - r1 * Pb0)
            x = A[3 * a + b] - Brx[b] + rxP[a]
            out[a, b] += x
            if b != a:
                out[b, a] += x


# ---- rigid-body inertias as 10 parameters (rigid_inertia in flat/model.py): mass m, first moment
#      h = m c and the rotational inertia Ibar about the origin (upper triangle xx xy xz yy yz zz),
#      the spatial inertia being I = [[Ibar, h x], [-h x, m 1]]
#      (Chignoli et al. 2023 Sec. III-D: Ibar = I_C + m c x c x^T, h x = m c x) ----

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
    """The parameters of X^T I X as a 10-tuple: I moved from the body frame to the frame in which
    the body origin sits at r, body axes E^T. With g = E^T h (parallel-axis theorem):
    m, h' = g + m r and
    Ibar' = E^T Ibar E - r x g x - (g + m r) x r x = E^T Ibar E - (r u^T + u r^T) + 2 (r . u) 1,
    u = g + m r / 2."""
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
    M[1, 3] += h2                                # h x = [[0, -h2, h1], [h2, 0, -h0], [-h1, h0, 0]]
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
    """out = M x for a symmetric M (every caller's: inertias), summed as x_0 M[0] + ... + x_5 M[5],
    which vectorizes over the rows."""
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
    return (acc[0] + a * x[0], acc[1] + a * x[1], acc[2] + a * x[2],
            acc[3] + a * x[3], acc[4] + a * x[4], acc[5] + a * x[5])


@njit(inline='always', error_model='numpy')
def combination(a, x, b, y, c, z):
    """a x + b y + c z for 6-vectors x, y, z, as a 6-tuple."""
    return (a * x[0] + b * y[0] + c * z[0], a * x[1] + b * y[1] + c * z[1],
            a * x[2] + b * y[2] + c * z[2], a * x[3] + b * y[3] + c * z[3],
            a * x[4] + b * y[4] + c * z[4], a * x[5] + b * y[5] + c * z[5])
