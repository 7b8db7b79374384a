"""Small dense solves of the contact and derivative kernels, written out so that a call allocates
nothing: Householder QR with column pivoting, the least-squares and least-norm solutions it gives,
a Cholesky factor with its pivots, and H_y's factor on the branches of the cluster tree.

Rank: the contacts' Jacobian J_c (m x ny, m <= 6 per contact) decides its rank by a cutoff on its
singular values in the NumPy algorithms (contacts.py: numpy.linalg.svd). Here the QR of J_c^T with
column pivoting (Businger & Golub 1965; Golub & Van Loan 2013, Alg. 5.4.1) decides it by the same
cutoff on |R_kk|, non-increasing along the diagonal: R_00 is the largest row norm of J_c, within
sqrt(m) of its largest singular value, and |R_kk| of a numerically dependent row falls to round-off
as the singular value does, so that redundant contacts and contacts that repeat a loop's rows show
alike. The least-squares solution of least norm then follows from the complete orthogonal
decomposition J_c^T P = Q [R11 R12; 0 0] (Golub & Van Loan 2013 Sec. 5.4.2): the rows [R11 R12]
have full rank, and a second QR of their transpose gives it (only where J_c loses rank). The
solutions are those of the SVD (both give the unique least-norm least-squares solution), at a
tenth of the cost, and no normal equations square the conditioning.

Layout: a matrix A (rows x cols) is stored by columns, column j in row j of its array (At[j, i] =
A[i, j]), so that the loops over a column's entries run along memory. It is factored in place: R on
and above the diagonal, each reflector H_k = 1 - beta_k w_k w_k^T below it with its leading 1
implicit.

Speed: the loops along a column run over 1-d views from index 0 (dot, subtract_scaled): numba
checks a signed index for wraparound, which keeps LLVM from vectorizing a loop from k + 1, but not
one over range(len(view)). Their sums may be reassociated and products fused (FASTMATH: LLVM's
reassoc and contract flags, nothing assumed of NaN or inf). Both together make a pivoted QR of a
73 x 36 J_c^T four times faster, its results within a few ulps.

H_y = L^T L (tree_factor): H_y[i, j] is zero unless one of i, j is an ancestor of the other in the
cluster tree, and this factor keeps those zeros (Featherstone's LTL), so that H_y^-1 X costs the
depths of the rows of X rather than ny each: on Talos (ny = 38) H_y^-1 and H_y^-1 of two ny x ny
matrices take half the time of a dense Cholesky inverse and product.
"""

import math

from numba import njit

from .cache import key_on_helpers

key_on_helpers(__file__)

FASTMATH = {'reassoc', 'contract'}


@njit(inline='always', error_model='numpy', fastmath=FASTMATH)
def dot(x, y):
    """x . y, two vectors of x's length."""
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


@njit(inline='always', error_model='numpy', fastmath=FASTMATH)
def subtract_scaled(y, a, x):
    """y <- y - a x, two vectors of x's length."""
    for i in range(len(x)):
        y[i] -= a * x[i]


@njit(inline='always', error_model='numpy', fastmath=FASTMATH)
def _reflect(At, rows, k, beta, c):
    """Column c of A <- H_k A[:, c]."""
    w, column = At[k, k + 1:rows], At[c]
    s = beta * (column[k] + dot(w, column[k + 1:rows]))
    column[k] -= s
    subtract_scaled(column[k + 1:rows], s, w)


@njit(error_model='numpy', fastmath=FASTMATH)
def householder_qr(At, rows, cols, beta, perm, pivoting):
    """A[:rows, :cols] P = Q R in place (module docstring); perm[j]: the column of A that column j
    of R came from (the identity without pivoting). Pivoting takes the remaining column of
    largest norm first."""
    for j in range(cols):
        perm[j] = j
    for k in range(min(rows, cols)):
        if pivoting:
            best, pivot = -1.0, k
            for j in range(k, cols):
                s = dot(At[j, k:rows], At[j, k:rows])
                if s > best:
                    best, pivot = s, j
            if pivot != k:
                for i in range(rows):
                    At[k, i], At[pivot, i] = At[pivot, i], At[k, i]
                perm[k], perm[pivot] = perm[pivot], perm[k]
        w = At[k, k + 1:rows]
        sigma = dot(w, w)
        beta[k] = 0.0
        if sigma > 0.0:
            alpha = At[k, k]
            norm = math.sqrt(alpha * alpha + sigma)
            r = -norm if alpha >= 0.0 else norm
            head = alpha - r
            for i in range(len(w)):
                w[i] /= head
            beta[k] = -head / r
            At[k, k] = r
            for c in range(k + 1, cols):
                _reflect(At, rows, k, beta[k], c)


@njit(error_model='numpy', fastmath=FASTMATH)
def rank(At, rows, cols, threshold):
    """The leading diagonal entries of R above threshold (after a pivoted householder_qr of
    A[:rows, :cols])."""
    n = min(rows, cols)
    r = 0
    while r < n and abs(At[r, r]) > threshold:
        r += 1
    return r


@njit(error_model='numpy', fastmath=FASTMATH)
def apply_q(At, rows, steps, beta, x, transposed):
    """x (rows) <- Q^T x (transposed) or Q x, Q = H_0 ... H_{steps-1}."""
    for t in range(steps):
        k = t if transposed else steps - 1 - t
        w = At[k, k + 1:rows]
        s = beta[k] * (x[k] + dot(w, x[k + 1:rows]))
        x[k] -= s
        subtract_scaled(x[k + 1:rows], s, w)


@njit(error_model='numpy', fastmath=FASTMATH)
def solve_upper(At, n, x, transposed):
    """x <- R^-1 x (R = A[:n, :n] upper triangular) or, transposed, R^-T x."""
    if transposed:
        for i in range(n):
            x[i] = (x[i] - dot(At[i, :i], x[:i])) / At[i, i]
    else:
        for i in range(n - 1, -1, -1):
            s = x[i]
            for j in range(i + 1, n):
                s -= At[j, i] * x[j]
            x[i] = s / At[i, i]


@njit(error_model='numpy', fastmath=FASTMATH)
def _factor_rows(At, r, cols, Bt, beta_b, perm_b):
    """B[:cols, :r] = [R11 R12]^T (the first r rows of R, r < cols), factored by QR."""
    for j in range(r):
        for i in range(cols):
            Bt[j, i] = At[i, j] if i >= j else 0.0
    householder_qr(Bt, cols, r, beta_b, perm_b, False)


@njit(error_model='numpy', fastmath=FASTMATH)
def least_squares(At, rows, cols, beta, perm, r, b, x, Bt, beta_b, perm_b, t):
    """x (rows) <- the least-squares solution of least norm of M x = b (b: cols), M^T = A the
    pivoted householder_qr of rank r: M = P [R11 R12]^T Q_r^T, x = Q_r [R11 R12]^T+ P^T b.
    Scratch: t (cols), B (cols x cols) with beta_b and perm_b (cols)."""
    for j in range(cols):
        t[j] = b[perm[j]]
    if r < cols:
        _factor_rows(At, r, cols, Bt, beta_b, perm_b)
        apply_q(Bt, cols, r, beta_b, t, True)
        solve_upper(Bt, r, t, False)
    else:
        solve_upper(At, r, t, True)
    for i in range(rows):
        x[i] = t[i] if i < r else 0.0
    apply_q(At, rows, min(rows, cols), beta, x, False)


@njit(error_model='numpy', fastmath=FASTMATH)
def least_norm(At, cols, perm, r, c, x, Bt, beta_b, perm_b, t):
    """x (cols) <- the least-norm solution of [R11 R12] P^T x = c (c: r), the first r rows of the
    pivoted householder_qr A: M x = Q_r c for M^T = A where Q_r c is in the range of M^T.
    Scratch as least_squares."""
    for j in range(r):
        t[j] = c[j]
    if r < cols:
        _factor_rows(At, r, cols, Bt, beta_b, perm_b)
        solve_upper(Bt, r, t, True)
        for j in range(r, cols):
            t[j] = 0.0
        apply_q(Bt, cols, r, beta_b, t, False)
    else:
        solve_upper(At, r, t, False)
    for j in range(cols):
        x[perm[j]] = t[j]


@njit(error_model='numpy', fastmath=FASTMATH)
def cholesky_pivots(A, L, n):
    """L (lower, n x n) <- the Cholesky factor of A[:n, :n]; returns min L_jj^2 / max L_jj^2 (0.0
    where A is not positive definite)."""
    smallest, largest = math.inf, 0.0
    for j in range(n):
        for i in range(j, n):
            s = A[i, j] - dot(L[i, :j], L[j, :j])
            if i == j:
                if not s > 0.0:
                    return 0.0
                L[j, j] = math.sqrt(s)
                smallest, largest = min(smallest, s), max(largest, s)
            else:
                L[i, j] = s / L[j, j]
    return smallest / largest if n else 1.0


@njit(error_model='numpy', fastmath=FASTMATH)
def cholesky_solve(L, n, x):
    """x <- (L L^T)^-1 x."""
    for i in range(n):
        x[i] = (x[i] - dot(L[i, :i], x[:i])) / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit(error_model='numpy', fastmath=FASTMATH)
def cholesky_solve_rows(L, n, X):
    """X[:n] <- (L L^T)^-1 X[:n] for every column of X at once, by whole rows (1-d views)."""
    for i in range(n):
        row = X[i]
        for k in range(i):
            subtract_scaled(row, L[i, k], X[k])
        for c in range(len(row)):
            row[c] /= L[i, i]
    for i in range(n - 1, -1, -1):
        row = X[i]
        for k in range(i + 1, n):
            subtract_scaled(row, L[k, i], X[k])
        for c in range(len(row)):
            row[c] /= L[i, i]


@njit(error_model='numpy', fastmath=FASTMATH)
def tree_factor(parent, A, n):
    """In place, H = L^T L of the SPD H in A[:n, :n] (lower triangle read) with L lower triangular
    and as sparse as H's branches (Featherstone 2005, IJRR 24(6), the LTL factorization; seed
    003's ref. 19): parent is the expanded parent array (parent[i] < i, -1 at a root), and H[i, j]
    must be zero unless j is i or an ancestor of i along parent; the reciprocals of L's diagonal
    on the diagonal, as linalg.cholesky. False if H is not PD."""
    for k in range(n - 1, -1, -1):
        if not A[k, k] > 0.0:
            return False
        r = A[k, k] = 1.0 / math.sqrt(A[k, k])
        i = parent[k]
        while i >= 0:
            A[k, i] *= r
            i = parent[i]
        i = parent[k]
        while i >= 0:
            a, j = A[k, i], i
            while j >= 0:
                A[i, j] -= a * A[k, j]
                j = parent[j]
            i = parent[i]
    return True


@njit(error_model='numpy', fastmath=FASTMATH)
def tree_solve(parent, L, n, X):
    """X[:n] <- H^-1 X[:n] for a matrix X by whole rows (1-d views, which vectorize), H = L^T L
    from tree_factor: L^-T, then L^-1, each step along the ancestors of one row (Featherstone
    2005)."""
    for k in range(n - 1, -1, -1):
        row = X[k]
        r = L[k, k]
        for c in range(len(row)):
            row[c] *= r
        i = parent[k]
        while i >= 0:
            subtract_scaled(X[i], L[k, i], row)
            i = parent[i]
    for k in range(n):
        row = X[k]
        i = parent[k]
        while i >= 0:
            subtract_scaled(row, L[k, i], X[i])
            i = parent[i]
        r = L[k, k]
        for c in range(len(row)):
            row[c] *= r
