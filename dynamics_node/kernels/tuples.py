"""Rows of buffers, 6-vectors and the 3x3 blocks of H as tuples, and the Cholesky solves on a
body's D_i, for the LCABA kernels (lcaba.py). A tuple stays in registers, where an array element
would be reloaded after every store into a buffer (numba emits no alias information). All are
inlined into their callers.
"""

import math

from numba import njit

from .cache import key_on_helpers
from .spatial import rotated_back

key_on_helpers(__file__)


# ---- rows of buffers as tuples ----

@njit(inline='always')
def row3(x, i):
    return x[i, 0], x[i, 1], x[i, 2]


@njit(inline='always')
def row6(x, i):
    return x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5]


@njit(inline='always')
def row6_of(x, i, j):
    """x[i, j] of a 3-d buffer."""
    return x[i, j, 0], x[i, j, 1], x[i, j, 2], x[i, j, 3], x[i, j, 4], x[i, j, 5]


@njit(inline='always')
def set_row6(x, i, t):
    x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5] = t


@njit(inline='always')
def set_row6_of(x, i, j, t):
    x[i, j, 0], x[i, j, 1], x[i, j, 2], x[i, j, 3], x[i, j, 4], x[i, j, 5] = t


@njit(inline='always')
def add_row6(x, i, t):
    x[i, 0], x[i, 1], x[i, 2] = x[i, 0] + t[0], x[i, 1] + t[1], x[i, 2] + t[2]
    x[i, 3], x[i, 4], x[i, 5] = x[i, 3] + t[3], x[i, 4] + t[4], x[i, 5] + t[5]


@njit(inline='always')
def add6(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5]


@njit(inline='always')
def sub6(a, b):
    return a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5]


@njit(inline='always')
def add_scaled6(a, s, b):
    """a + s b."""
    return (a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2],
            a[3] + s * b[3], a[4] + s * b[4], a[5] + s * b[5])


@njit(inline='always')
def scale6(s, a):
    return s * a[0], s * a[1], s * a[2], s * a[3], s * a[4], s * a[5]


# ---- 3x3 blocks as row-major 9-tuples; 6x6 matrices as four blocks [11, 12, 21, 22] ----

@njit(inline='always')
def block3(M, i, r0, c0):
    """M[i, r0:r0 + 3, c0:c0 + 3] of a 3-d buffer."""
    return (M[i, r0, c0], M[i, r0, c0 + 1], M[i, r0, c0 + 2],
            M[i, r0 + 1, c0], M[i, r0 + 1, c0 + 1], M[i, r0 + 1, c0 + 2],
            M[i, r0 + 2, c0], M[i, r0 + 2, c0 + 1], M[i, r0 + 2, c0 + 2])


@njit(inline='always')
def blocks(M, i, transposed):
    """The blocks of M[i] (or of M[i]^T)."""
    if transposed:
        return (transpose3(block3(M, i, 0, 0)), transpose3(block3(M, i, 3, 0)),
                transpose3(block3(M, i, 0, 3)), transpose3(block3(M, i, 3, 3)))
    return block3(M, i, 0, 0), block3(M, i, 0, 3), block3(M, i, 3, 0), block3(M, i, 3, 3)


@njit(inline='always')
def add_block3(M, i, r0, c0, A, transposed):
    """M[i, r0:r0 + 3, c0:c0 + 3] += A (or A^T)."""
    for a in range(3):
        for b in range(3):
            M[i, r0 + a, c0 + b] += A[3 * b + a] if transposed else A[3 * a + b]


@njit(inline='always')
def add_blocks(M, i, N11, N12, N21, N22, transposed):
    """M[i] += N (or N^T) for N = [N11 N12; N21 N22]."""
    add_block3(M, i, 0, 0, N11, transposed)
    add_block3(M, i, 0, 3, N21 if transposed else N12, transposed)
    add_block3(M, i, 3, 0, N12 if transposed else N21, transposed)
    add_block3(M, i, 3, 3, N22, transposed)


@njit(inline='always')
def transpose3(A):
    return A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8]


@njit(inline='always')
def sub_outer3(A, u, v):
    """A - u v^T."""
    return (A[0] - u[0] * v[0], A[1] - u[0] * v[1], A[2] - u[0] * v[2],
            A[3] - u[1] * v[0], A[4] - u[1] * v[1], A[5] - u[1] * v[2],
            A[6] - u[2] * v[0], A[7] - u[2] * v[1], A[8] - u[2] * v[2])


@njit(inline='always')
def mul_vector3(A, x):
    """A x."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2], A[3] * x[0] + A[4] * x[1] + A[5] * x[2],
            A[6] * x[0] + A[7] * x[1] + A[8] * x[2])


@njit(inline='always')
def mul_blocks(M, x):
    """M x for M = (M11, M12, M21, M22) and a 6-tuple x."""
    M11, M12, M21, M22 = M
    t1, t2 = mul_vector3(M11, (x[0], x[1], x[2])), mul_vector3(M12, (x[3], x[4], x[5]))
    b1, b2 = mul_vector3(M21, (x[0], x[1], x[2])), mul_vector3(M22, (x[3], x[4], x[5]))
    return t1[0] + t2[0], t1[1] + t2[1], t1[2] + t2[2], b1[0] + b2[0], b1[1] + b2[1], b1[2] + b2[2]


@njit(inline='always')
def tmul_blocks(M, x):
    """M^T x for M = (M11, M12, M21, M22) and a 6-tuple x."""
    M11, M12, M21, M22 = M
    t1, t2 = rotated_back(M11, (x[0], x[1], x[2])), rotated_back(M21, (x[3], x[4], x[5]))
    b1, b2 = rotated_back(M12, (x[0], x[1], x[2])), rotated_back(M22, (x[3], x[4], x[5]))
    return t1[0] + t2[0], t1[1] + t2[1], t1[2] + t2[2], b1[0] + b2[0], b1[1] + b2[1], b1[2] + b2[2]


@njit(inline='always')
def rows_of_product(X, i1, j1, i2, j2, rows, c):
    """Rows c and c + 1 of X[i1, j1:j1 + rows]^T X[i2, j2:j2 + rows] (6-vector rows of a 3-d
    buffer), accumulated in registers: twelve independent sums."""
    t = u = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for row in range(rows):
        x = row6_of(X, i2, j2 + row)
        t, u = add_scaled6(t, X[i1, j1 + row, c], x), add_scaled6(u, X[i1, j1 + row, c + 1], x)
    return t, u


# ---- Cholesky factor L_i = L[i] of D_i and its triangular solves (the kernels's cholesky,
# forward_solve, forward_solve_rows, backward_solve on full indices) ----

@njit(inline='always')
def cholesky_of(L, i, n):
    """L[i, :n, :n] <- its lower Cholesky factor with the reciprocals of its diagonal on the
    diagonal (lower triangle read): the solves multiply, as a division on their chain of dependent
    operations costs 3-4 multiplications' latency. False if not positive definite (then factored
    on, into nan)."""
    positive = True
    for j in range(n):
        s = L[i, j, j]
        for k in range(j):
            s -= L[i, j, k] * L[i, j, k]
        positive = positive and s > 0.0
        inverse = 1.0 / math.sqrt(s)
        L[i, j, j] = inverse
        for a in range(j + 1, n):
            t = L[i, a, j]
            for k in range(j):
                t -= L[i, a, k] * L[i, j, k]
            L[i, a, j] = t * inverse
    return positive


@njit(inline='always')
def solve_rows(L, i, n, X, j0):
    """X[i, j0:j0 + n] <- L_i^-1 X[i, j0:j0 + n] for 6-vector rows."""
    for a in range(n):
        x = row6_of(X, i, j0 + a)
        for b in range(a):
            x = add_scaled6(x, -L[i, a, b], row6_of(X, i, j0 + b))
        set_row6_of(X, i, j0 + a, scale6(L[i, a, a], x))


@njit(inline='always')
def solve(L, i, n, x):
    """x[i, :n] <- L_i^-1 x[i, :n]."""
    for a in range(n):
        t = x[i, a]
        for b in range(a):
            t -= L[i, a, b] * x[i, b]
        x[i, a] = t * L[i, a, a]


@njit(inline='always')
def solve_transposed(L, i, n, x):
    """x[:n] <- L_i^-T x[:n]."""
    for a in range(n - 1, -1, -1):
        t = x[a]
        for b in range(a + 1, n):
            t -= L[i, b, a] * x[b]
        x[a] = t * L[i, a, a]
