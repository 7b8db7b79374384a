"""Compiled twin of multibody/expressions.py and of constraints.ImplicitConstraint: the residual
tapes of the implicit constraints (FlatModel's tape fields) evaluated in truncated multi-dual
numbers along up to three directions (the readable module's docstring), one row of d.jet per node
with its 2^D components, or in vector mode (the value and the first derivatives along every
variable in one pass); and from them the implicit rows of a cluster: K (the gradient), the bias
-Kdot(u) w = -d^2 phi[u, w], its rate -d^3 phi[delta, u, w] and phi, and LCABA's cut rows of an
implicit constraint, at the joint positions of the last body_transforms (d.q_body). Outside an
expression's domain the components are NaN or inf (error_model='numpy'), which the callers'
finiteness checks name."""

import math

from numba import njit

from .cache import key_on_helpers
from .spatial import dot6, transform_at, transposed_force
from .tuples import row6, row6_of, set_row6_of

key_on_helpers(__file__)

# the tape's operations (expressions.py names them; flat/model.py writes their codes)
OPS = ('const', 'var', 'add', 'sub', 'neg', 'mul', 'div', 'pow', 'atan2', 'sin', 'cos', 'tan',
       'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'exp', 'log', 'sqrt')
(CONST, VAR, ADD, SUB, NEG, MUL, DIV, POW, ATAN2, SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH,
 TANH, EXP, LOG, SQRT) = range(len(OPS))
INVERSE = len(OPS)                      # 1 / x, of a quotient's divisor


@njit(inline='always', error_model='numpy')
def derivatives(op, x):
    """f(x) and its first three derivatives (expressions._derivatives)."""
    if op == SIN:
        s, c = math.sin(x), math.cos(x)
        return s, c, -s, -c
    if op == COS:
        s, c = math.sin(x), math.cos(x)
        return c, -s, -c, s
    if op == TAN:
        t = math.tan(x)
        e = 1.0 + t * t
        return t, e, 2.0 * t * e, e * (2.0 + 6.0 * t * t)
    if op == EXP:
        e = math.exp(x)
        return e, e, e, e
    if op == LOG:
        return math.log(x) if x > 0.0 else math.nan, 1.0 / x, -1.0 / (x * x), 2.0 / (x * x * x)
    if op == SQRT:
        s = math.sqrt(x) if x >= 0.0 else math.nan
        return s, 0.5 / s, -0.25 / (s * s * s), 0.375 / (s * s * s * s * s)
    if op == ATAN:
        e = 1.0 + x * x
        return math.atan(x), 1.0 / e, -2.0 * x / (e * e), (6.0 * x * x - 2.0) / (e * e * e)
    if op == ASIN or op == ACOS:
        r = 1.0 - x * x
        sign = 1.0 if op == ASIN else -1.0
        inside = -1.0 <= x <= 1.0
        value = (math.asin(x) if op == ASIN else math.acos(x)) if inside else math.nan
        root = math.sqrt(r) if r >= 0.0 else math.nan
        return (value, sign / root, sign * x / (r * root),
                sign * (1.0 + 2.0 * x * x) / (r * r * root))
    if op == SINH:
        s, c = math.sinh(x), math.cosh(x)
        return s, c, s, c
    if op == COSH:
        s, c = math.sinh(x), math.cosh(x)
        return c, s, c, s
    if op == TANH:
        t = math.tanh(x)
        e = 1.0 - t * t
        return t, e, -2.0 * t * e, e * (6.0 * t * t - 2.0)
    # INVERSE
    return 1.0 / x, -1.0 / (x * x), 2.0 / (x * x * x), -6.0 / (x * x * x * x)


@njit(inline='always', error_model='numpy')
def power(x, c):
    """x^c and its first three derivatives, c constant (expressions._power): real only, a term
    whose coefficient vanishes zero even at x = 0."""
    if x < 0.0 and c != math.floor(c):
        return math.nan, math.nan, math.nan, math.nan
    k1 = c
    k2 = c * (c - 1.0)
    k3 = k2 * (c - 2.0)
    return (x ** c, k1 * x ** (c - 1.0) if k1 != 0.0 else 0.0,
            k2 * x ** (c - 2.0) if k2 != 0.0 else 0.0, k3 * x ** (c - 3.0) if k3 != 0.0 else 0.0)


@njit(error_model='numpy')
def product(jet, c, a, b, size):
    """Row c = row a times row b: (ab)_S = sum over the subsets T of S of a_T b_{S-T}."""
    for S in range(size):
        t, T = 0.0, S
        while True:
            t += jet[a, T] * jet[b, S ^ T]
            if T == 0:
                break
            T = (T - 1) & S
        jet[c, S] = t


@njit(error_model='numpy')
def compose(jet, c, a, f0, f1, f2, f3, size):
    """Row c = f(row a), c != a, from f's value and derivatives at a_0 (Faa di Bruno,
    expressions.compose)."""
    jet[c, 0] = f0
    for S in range(1, size):
        i = S & -S                                      # the lowest direction of S
        rest = S ^ i
        if rest == 0:
            jet[c, S] = f1 * jet[a, S]
            continue
        j = rest & -rest
        k = rest ^ j
        if k == 0:
            jet[c, S] = f1 * jet[a, S] + f2 * jet[a, i] * jet[a, j]
        else:
            pairs = (jet[a, i] * jet[a, j | k] + jet[a, j] * jet[a, i | k]
                     + jet[a, k] * jet[a, i | j])
            jet[c, S] = f1 * jet[a, S] + f2 * pairs + f3 * jet[a, i] * jet[a, j] * jet[a, k]


@njit(error_model='numpy')
def atan2(jet, c, y, x, size, ratio, inverse):
    """Row c = atan2(row y, row x): the derivatives of atan(y / x) (or of -atan(x / y) where
    |y| > |x|), with atan2's value (expressions._atan2); rows ratio and inverse are scratch."""
    over, under = (y, x) if abs(jet[x, 0]) >= abs(jet[y, 0]) else (x, y)
    f0, f1, f2, f3 = derivatives(INVERSE, jet[under, 0])
    compose(jet, inverse, under, f0, f1, f2, f3, size)
    product(jet, ratio, over, inverse, size)
    f0, f1, f2, f3 = derivatives(ATAN, jet[ratio, 0])
    compose(jet, c, ratio, f0, f1, f2, f3, size)
    if over == x:
        for S in range(size):
            jet[c, S] = -jet[c, S]
    jet[c, 0] = math.atan2(jet[y, 0], jet[x, 0])


@njit(error_model='numpy')
def directional(m, d, row, D):
    """The multi-dual components of the residual of implicit row `row` at the positions d.q_body
    of its variables along the first D rows of d.directions (over its variables) into d.jet, a row
    per node (expressions.directional); returns the jet row of its last node."""
    op, ta, tb, value, jet, q_body, directions = (m.tape_op, m.tape_a, m.tape_b, m.tape_value,
                                                  d.jet, d.q_body, d.directions)
    t0, t1, v0, size = m.implicit_tape[row, 0], m.implicit_tape[row, 1], m.implicit_vars[row, 0], \
        1 << D
    ratio, inverse = len(jet) - 2, len(jet) - 1            # scratch rows after the longest tape
    for t in range(t0, t1):
        c, code, a, b = t - t0, op[t], ta[t], tb[t]
        if code == CONST or code == VAR:
            for S in range(size):
                jet[c, S] = 0.0
            if code == CONST:
                jet[c, 0] = value[t]
            else:
                jet[c, 0] = q_body[m.var_body[v0 + a]]
                for i in range(D):
                    jet[c, 1 << i] = directions[i, a]
        elif code == ADD or code == SUB or code == NEG:
            sign = -1.0 if code == SUB else 1.0
            for S in range(size):
                jet[c, S] = -jet[a, S] if code == NEG else jet[a, S] + sign * jet[b, S]
        elif code == MUL:
            product(jet, c, a, b, size)
        elif code == DIV:
            f0, f1, f2, f3 = derivatives(INVERSE, jet[b, 0])
            compose(jet, inverse, b, f0, f1, f2, f3, size)
            product(jet, c, a, inverse, size)
        elif code == POW:
            f0, f1, f2, f3 = power(jet[a, 0], value[t])
            compose(jet, c, a, f0, f1, f2, f3, size)
        elif code == ATAN2:
            atan2(jet, c, a, b, size, ratio, inverse)
        else:
            f0, f1, f2, f3 = derivatives(code, jet[a, 0])
            compose(jet, c, a, f0, f1, f2, f3, size)
    return t1 - t0 - 1


@njit(error_model='numpy')
def vector_product(jet, c, a, b, n):
    """Row c = row a times row b in vector mode (value, then n first derivatives)."""
    for j in range(1, n + 1):
        jet[c, j] = jet[a, j] * jet[b, 0] + jet[a, 0] * jet[b, j]
    jet[c, 0] = jet[a, 0] * jet[b, 0]


@njit(error_model='numpy')
def vector_compose(jet, c, a, f0, f1, n):
    """Row c = f(row a), c != a, in vector mode."""
    jet[c, 0] = f0
    for j in range(1, n + 1):
        jet[c, j] = f1 * jet[a, j]


@njit(error_model='numpy')
def gradient(m, d, row):
    """phi of implicit row `row` and its gradient over its variables at d.q_body into d.jet in
    vector forward mode (value in column 0, dphi/dx_j in column 1 + j): in one pass what
    directional gives a variable at a time, by the same operations; returns the jet row of its
    last node."""
    op, ta, tb, value, jet, q_body = m.tape_op, m.tape_a, m.tape_b, m.tape_value, d.jet, d.q_body
    t0, t1, v0 = m.implicit_tape[row, 0], m.implicit_tape[row, 1], m.implicit_vars[row, 0]
    n = m.implicit_vars[row, 1] - v0
    ratio, inverse = len(jet) - 2, len(jet) - 1
    for t in range(t0, t1):
        c, code, a, b = t - t0, op[t], ta[t], tb[t]
        if code == CONST or code == VAR:
            for j in range(n + 1):
                jet[c, j] = 0.0
            if code == CONST:
                jet[c, 0] = value[t]
            else:
                jet[c, 0], jet[c, 1 + a] = q_body[m.var_body[v0 + a]], 1.0
        elif code == ADD or code == SUB or code == NEG:
            sign = -1.0 if code == SUB else 1.0
            for j in range(n + 1):
                jet[c, j] = -jet[a, j] if code == NEG else jet[a, j] + sign * jet[b, j]
        elif code == MUL:
            vector_product(jet, c, a, b, n)
        elif code == DIV:
            f0, f1, _, _ = derivatives(INVERSE, jet[b, 0])
            vector_compose(jet, inverse, b, f0, f1, n)
            vector_product(jet, c, a, inverse, n)
        elif code == POW:
            f0, f1, _, _ = power(jet[a, 0], value[t])
            vector_compose(jet, c, a, f0, f1, n)
        elif code == ATAN2:                        # as atan2() does
            over, under = (a, b) if abs(jet[b, 0]) >= abs(jet[a, 0]) else (b, a)
            f0, f1, _, _ = derivatives(INVERSE, jet[under, 0])
            vector_compose(jet, inverse, under, f0, f1, n)
            vector_product(jet, ratio, over, inverse, n)
            f0, f1, _, _ = derivatives(ATAN, jet[ratio, 0])
            vector_compose(jet, c, ratio, f0, f1, n)
            if over == b:
                for j in range(1, n + 1):
                    jet[c, j] = -jet[c, j]
            jet[c, 0] = math.atan2(jet[a, 0], jet[b, 0])
        else:
            f0, f1, _, _ = derivatives(code, jet[a, 0])
            vector_compose(jet, c, a, f0, f1, n)
    return t1 - t0 - 1


@njit(error_model='numpy')
def set_directions(m, d, row, first, second, third, D):
    """d.directions: the entries of first, second and third (the first D of them; over the
    cluster's spanning velocities) at the columns of implicit row `row`'s variables."""
    v0, v1 = m.implicit_vars[row, 0], m.implicit_vars[row, 1]
    for j in range(v1 - v0):
        c = m.var_col[v0 + j]
        d.directions[0, j] = first[c]
        if D > 1:
            d.directions[1, j] = second[c]
        if D > 2:
            d.directions[2, j] = third[c]


@njit(error_model='numpy')
def implicit_rows(m, d, k, K):
    """The implicit rows of cluster k added into K (its active rows over its spanning velocities):
    dphi/dx_j at the column of each variable (ImplicitConstraint.joint_rows)."""
    for row in range(m.implicit_range[k, 0], m.implicit_range[k, 1]):
        a = m.implicit_row[row]
        if a < 0:
            continue
        last, v0 = gradient(m, d, row), m.implicit_vars[row, 0]
        for j in range(m.implicit_vars[row, 1] - v0):
            K[a, m.var_col[v0 + j]] += d.jet[last, 1 + j]


@njit(error_model='numpy')
def implicit_mixed(m, d, k, first, second, third, D, out):
    """-d^D phi[first, second, third (the first D)] on the implicit active rows of cluster k into
    out (the directions over its spanning velocities): D = 2 the bias -Kdot(along) qd at
    (along, qd, qd), D = 3 its rate along delta at (delta, u, w) (ImplicitConstraint.joint_rows,
    bias_rate)."""
    for row in range(m.implicit_range[k, 0], m.implicit_range[k, 1]):
        a = m.implicit_row[row]
        if a >= 0:
            set_directions(m, d, row, first, second, third, D)
            out[a] = -d.jet[directional(m, d, row, D), (1 << D) - 1]


@njit(error_model='numpy')
def implicit_phi(m, d, row):
    """phi of implicit row `row` (ImplicitConstraint.residual; NaN outside its domain)."""
    return d.jet[directional(m, d, row, 0), 0]


@njit(inline='always', error_model='numpy')
def violation(phi):
    """|phi|, inf where phi is not a number (outside an implicit constraint's domain)."""
    return abs(phi) if phi == phi else math.inf


@njit(error_model='numpy', fastmath={'contract'})
def implicit_cut_rows(m, d, p, w, con):
    """Entries K and k of implicit constraint con (lcaba.cut_rows): row r is
    sum_j K_rj (S_j^T a_j - S_j^T Xup_j a_parent) = k_r as a coupling's, with K_rj = dphi_r/dx_j
    and k_r = -d^2 phi_r[xd, xd] at the joint velocities xd_j = S_j^T (v_j - Xup_j v_parent)
    (kernels/expressions.py); its |K xd| into w.violation."""
    K, k, Xup_E, Xup_r, S, v, entry_body = w.K, w.k, d.Xup_E, d.Xup_r, p.S, d.v, p.entry_body
    term_body, term_entry, directions, jet = p.term_body, p.term_entry, d.directions, d.jet
    t0, t1, first = p.con_terms[con, 0], p.con_terms[con, 1], p.con_implicit[con]
    for e in range(p.con_entries[con, 0], p.con_entries[con, 1]):
        for row in range(p.con_rows[con]):
            set_row6_of(K, e, row, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    for t in range(t0, t1):                           # the variables' velocities, kept in row 2
        j = term_body[t]
        E, r = transform_at(Xup_E, Xup_r, j)
        s = row6_of(S, j, 0)
        directions[2, t - t0] = (dot6(s, row6(v, j))
                                 - dot6(transposed_force(E, r, s), row6(v, entry_body[
                                     term_entry[t, 1]])))
    for row in range(p.con_rows[con]):
        for e in range(t1 - t0):
            directions[0, e] = directions[1, e] = directions[2, e]
        k[con, row] = -jet[directional(m, d, first + row, 2), 3]
        last, violation = gradient(m, d, first + row), 0.0
        for t in range(t0, t1):
            coefficient = jet[last, 1 + t - t0]
            j, e_j, e_parent = term_body[t], term_entry[t, 0], term_entry[t, 1]
            E, r = transform_at(Xup_E, Xup_r, j)
            s = row6_of(S, j, 0)
            x = transposed_force(E, r, s)
            for c in range(6):
                K[e_j, row, c] += coefficient * s[c]
                K[e_parent, row, c] -= coefficient * x[c]
            violation += coefficient * directions[2, t - t0]
        w.violation[0] = max(w.violation[0], abs(violation))
