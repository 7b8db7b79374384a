"""Small linear algebra of the kernels: the Cholesky factor of D_k (m_k <= 6) and its triangular
solves, and the sparse Householder QR of a LOOP cluster's K_d on its elimination plan
(multibody/elimination.py: each step reflects only the rows that hold its column), which carries
K_i and k along."""

import math

from numba import njit

from .cache import key_on_helpers

key_on_helpers(__file__)


@njit(error_model='numpy')
def cholesky(A, n):
    """In-place lower Cholesky factor of the SPD A[:n, :n] (lower triangle read), with the
    reciprocals of its diagonal on the diagonal: the solves multiply, as a division on their chain
    of dependent operations costs 3-4 multiplications' latency. False if not PD."""
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
    """A[step, c] <- (1 - b w w^T) A[step, c]: the reflection of step p of the sparse QR on column
    c, its rows step[:n] (pivot first), w = (1, A[step[1:n], p])."""
    s = A[step[0], c]
    for t in range(1, n):
        s += A[step[t], p] * A[step[t], c]
    s *= b
    A[step[0], c] -= s
    for t in range(1, n):
        A[step[t], c] -= s * A[step[t], p]


@njit(error_model='numpy')
def sparse_qr(m, k, A, nd, width, beta):
    """In-place Householder QR of K_d = A[:, :nd] (rows: the active rows of LOOP cluster k;
    columns: its dependent joints in elimination order) on the cluster's elimination plan
    (elimination.py; flat/model.py qr_*), Q^T applied to the columns nd..width-1 too: step p
    reflects only its rows qr_rows[k, p] of its column, of the later columns qr_cols[k, p] and of
    those. R lands in the pivot rows (the first of each step), the reflectors below their implicit
    leading 1 in the others, scaled by a reciprocal (a division per entry made delta's dense QR
    twice as slow); a step of one row reflects nothing (beta 0). Returns min |R_pp| and
    max |R_pp|."""
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
    """A[pivot_p, c0:c1] <- the solutions of R x = A[pivots, c0:c1] after sparse_qr, each in the
    pivot row of its column p (row p of R holds the later columns qr_cols[k, p] only)."""
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
    """K_d^+ A[:, nd:width] (the sparse_qr layout) into the pivot rows of the columns of K_d;
    returns -1, or min |R_pp| / max |R_pp| where K_d is singular:
    min |R_pp| <= threshold max(max |R_pp|, 1) (kinematics.SINGULARITY_THRESHOLD)."""
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
