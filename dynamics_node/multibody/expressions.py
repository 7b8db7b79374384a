"""Residual expressions of implicit constraints: a bounded, whitelisted grammar parsed into a tape,
and its exact derivatives up to third order by forward-mode Taylor arithmetic.

Grammar (no Python evaluation of file text):
  expr  := term (('+' | '-') term)*
  term  := unary (('*' | '/') unary)*
  unary := ('+' | '-') unary | power
  power := atom (('^' | '**') unary)?          (right associative; the exponent a constant)
  atom  := number | name | function '(' expr (',' expr)? ')' | '(' expr ')'
Names are the constraint's declared variables and the constants pi and e; functions are FUNCTIONS
and atan2(y, x). Constant subexpressions are folded at parse time, so a division by zero, a
function outside its domain or an overflow among constants is refused by name.

A tape is a tuple of nodes (op, a, b, value) in evaluation order: 'const' (value), 'var' (a: the
variable's index), unary ops on node a, binary ops on nodes a and b, 'pow' (node a to the constant
value). ``directional(tape, x, directions)`` evaluates it in truncated multi-dual numbers along up
to three directions d_1..d_D (e_i^2 = 0): a number carries a component a_S for every subset S of
the directions (a bitmask), the mixed derivative of the node along the directions in S, a_0 its
value. A variable x_j has a_0 = x_j and a_{i} = d_i[j]; products follow Leibniz,
(ab)_S = sum_{T in S} a_T b_{S-T}; a function f with derivatives f1, f2, f3 at a_0 follows Faa di
Bruno over the partitions of S:
  f(a)_{i} = f1 a_i,   f(a)_{ij} = f1 a_ij + f2 a_i a_j,
  f(a)_{ijk} = f1 a_ijk + f2 (a_i a_jk + a_j a_ik + a_k a_ij) + f3 a_i a_j a_k.
So one direction e_j gives dphi/dx_j (a row of K), two give the bias -Kdot(u) w = -d^2 phi[u, w],
three the third-order term d^3 phi[delta, u, w] of the derivatives (constraints.py). The compiled
twin is kernels/expressions.py.
"""

import math
import re

from ..errors import ModelError, quote

TEXT_LIMIT = 4096          # characters of one residual
DEPTH_LIMIT = 32           # nesting of parentheses, calls and unary signs
NODE_LIMIT = 1024          # tape nodes of one residual
CONSTANT_LIMIT = 1e9       # magnitude of a number written in a residual
EXPONENT_LIMIT = 16        # magnitude of a power's constant exponent

CONSTANTS = {'pi': math.pi, 'e': math.e}


def _derivatives(name, x):
    """f(x) and its first three derivatives."""
    if name == 'sin':
        s, c = math.sin(x), math.cos(x)
        return s, c, -s, -c
    if name == 'cos':
        s, c = math.sin(x), math.cos(x)
        return c, -s, -c, s
    if name == 'tan':
        t = math.tan(x)
        d = 1.0 + t * t
        return t, d, 2.0 * t * d, d * (2.0 + 6.0 * t * t)
    if name == 'exp':
        e = math.exp(x)
        return e, e, e, e
    if name == 'log':
        return math.log(x), 1.0 / x, -1.0 / x ** 2, 2.0 / x ** 3
    if name == 'sqrt':
        s = math.sqrt(x)
        return s, 0.5 / s, -0.25 / s ** 3, 0.375 / s ** 5
    if name == 'atan':
        d = 1.0 + x * x
        return math.atan(x), 1.0 / d, -2.0 * x / d ** 2, (6.0 * x * x - 2.0) / d ** 3
    if name in ('asin', 'acos'):
        r = 1.0 - x * x
        sign = 1.0 if name == 'asin' else -1.0
        return (math.asin(x) if name == 'asin' else math.acos(x),
                sign / math.sqrt(r), sign * x / r ** 1.5, sign * (1.0 + 2.0 * x * x) / r ** 2.5)
    if name == 'sinh':
        s, c = math.sinh(x), math.cosh(x)
        return s, c, s, c
    if name == 'cosh':
        s, c = math.sinh(x), math.cosh(x)
        return c, s, c, s
    if name == 'tanh':
        t = math.tanh(x)
        d = 1.0 - t * t
        return t, d, -2.0 * t * d, d * (6.0 * t * t - 2.0)
    if name == 'inverse':
        return 1.0 / x, -1.0 / x ** 2, 2.0 / x ** 3, -6.0 / x ** 4
    raise KeyError(name)


FUNCTIONS = ('sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'exp', 'log',
             'sqrt')
BINARY = {'+': 'add', '-': 'sub', '*': 'mul', '/': 'div'}
WORDS = {'add': 'a sum', 'sub': 'a difference', 'mul': 'a product', 'div': 'a quotient',
         'neg': 'a negation', 'pow': 'a power'}
TOKEN = re.compile(r'\s*(?:(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_]\w*)'
                   r'|(\*\*|[-+*/^(),]))')


def _power(x, c):
    """x^c and its first three derivatives (c constant; real only; a term whose coefficient
    vanishes, as for an integer c, is zero even at x = 0)."""
    if x < 0.0 and c != int(c):
        raise ValueError('a negative base to a fractional power')
    coefficients = (1.0, c, c * (c - 1.0), c * (c - 1.0) * (c - 2.0))
    return tuple(k * x ** (c - i) if k else 0.0 for i, k in enumerate(coefficients))


def _fold(op, a, b, value):
    """The value of an operation on constants (ArithmeticError and ValueError when undefined)."""
    if op in FUNCTIONS or op == 'inverse':
        return _derivatives(op, a)[0]
    if op == 'neg':
        return -a
    if op == 'pow':
        return _power(a, value)[0]
    if op == 'atan2':
        return math.atan2(a, b)
    return {'add': a + b, 'sub': a - b, 'mul': a * b, 'div': a / b}[op]


class Parser:
    """Recursive-descent parser of one residual into tape nodes (module docstring)."""

    def __init__(self, text, variables, where):
        self.where = where
        if not isinstance(text, str) or not text.strip():
            raise ModelError(f'{where}: the residual is empty; expected an expression of '
                             f'{quote(list(variables))}')
        if len(text) > TEXT_LIMIT:
            raise ModelError(f'{where}: the residual has {len(text)} characters; at most '
                             f'{TEXT_LIMIT}')
        self.text, self.variables = text, variables
        self.tokens, position = [], 0
        while position < len(text):
            match = TOKEN.match(text, position)
            if match is None:
                if text[position:].strip() == '':
                    break
                self.fail(len(text) - len(text[position:].lstrip()), 'an unexpected character')
            self.tokens.append((match.start(match.lastindex), match.group(match.lastindex),
                                match.lastindex))
            position = match.end()
        self.tokens.append((len(text), '', 0))
        self.next, self.nodes, self.index = 0, [], {}

    def fail(self, position, what, expected=''):
        shown = self.text[max(0, position - 20):position + 20]
        raise ModelError(f'{self.where}: {what} at character {position + 1} '
                         f'({quote(shown)}){expected}')

    def parse(self):
        root = self.expression(0)
        position, token, _ = self.tokens[self.next]
        if token:
            self.fail(position, f'unexpected {quote(token)}', '; expected an operator or the end')
        node = self.nodes[root]
        if node[0] == 'const':
            self.fail(0, 'a residual without a variable',
                      f'; expected an expression of {quote(list(self.variables))}')
        return tuple(self.nodes)

    def peek(self):
        return self.tokens[self.next][1]

    def take(self):
        token = self.tokens[self.next]
        self.next += 1
        return token

    def add(self, op, a=-1, b=-1, value=0.0, position=0):
        """A node, folded where its inputs are constants, shared where it already exists."""
        nodes = self.nodes
        if op not in ('const', 'var') and nodes[a][0] == 'const' \
                and (b < 0 or nodes[b][0] == 'const'):
            try:
                value = _fold(op, nodes[a][3], nodes[b][3] if b >= 0 else 0.0, value)
            except (ArithmeticError, ValueError):
                self.fail(position, f'{WORDS.get(op, op)} of constants is undefined')
            if not math.isfinite(value) or abs(value) > CONSTANT_LIMIT:
                self.fail(position, f'{WORDS.get(op, op)} of constants gives {value:g}',
                          f'; expected a magnitude up to {CONSTANT_LIMIT:g}')
            op, a, b = 'const', -1, -1
        key = (op, a, b, float(value))
        if key not in self.index:
            if len(nodes) >= NODE_LIMIT:
                self.fail(position, f'more than {NODE_LIMIT} operations')
            self.index[key] = len(nodes)
            nodes.append(key)
        return self.index[key]

    def expression(self, depth):
        left = self.term(depth)
        while self.peek() in ('+', '-'):
            position, token, _ = self.take()
            left = self.add(BINARY[token], left, self.term(depth), position=position)
        return left

    def term(self, depth):
        left = self.unary(depth)
        while self.peek() in ('*', '/'):
            position, token, _ = self.take()
            left = self.add(BINARY[token], left, self.unary(depth), position=position)
        return left

    def unary(self, depth):
        position, token, _ = self.tokens[self.next]
        if depth >= DEPTH_LIMIT:
            self.fail(position, f'nesting deeper than {DEPTH_LIMIT}')
        if token in ('+', '-'):
            self.take()
            operand = self.unary(depth + 1)
            return operand if token == '+' else self.add('neg', operand, position=position)
        base = self.atom(depth)
        if self.peek() in ('^', '**'):
            position = self.take()[0]
            exponent = self.unary(depth + 1)
            if self.nodes[exponent][0] != 'const':
                self.fail(position, 'a power with a variable exponent',
                          '; expected a constant exponent')
            c = self.nodes[exponent][3]
            if abs(c) > EXPONENT_LIMIT:
                self.fail(position, f'the exponent {c:g}',
                          f'; expected a magnitude up to {EXPONENT_LIMIT}')
            return self.add('pow', base, value=c, position=position)
        return base

    def atom(self, depth):
        position, token, kind = self.take()
        if kind == 1:                                           # a number
            value = float(token)
            if not math.isfinite(value) or abs(value) > CONSTANT_LIMIT:
                self.fail(position, f'the number {quote(token)}',
                          f'; expected a magnitude up to {CONSTANT_LIMIT:g}')
            return self.add('const', value=value)
        if kind == 2:                                           # a name
            if token in self.variables:
                return self.add('var', self.variables.index(token))
            if token in CONSTANTS:
                return self.add('const', value=CONSTANTS[token])
            if token in FUNCTIONS or token == 'atan2':
                return self.call(token, position, depth)
            self.fail(position, f'unknown name {quote(token)}',
                      f'; expected a variable {quote(list(self.variables))}, pi, e or a '
                      f'function {quote(FUNCTIONS + ("atan2",))}')
        if token == '(':
            inner = self.expression(depth + 1)
            self.expect(')')
            return inner
        self.fail(position, f'unexpected {quote(token) if token else "end"}',
                  '; expected a number, a variable, a function or "("')

    def call(self, name, position, depth):
        self.expect('(')
        first = self.expression(depth + 1)
        if name == 'atan2':
            self.expect(',')
            second = self.expression(depth + 1)
            self.expect(')')
            return self.add('atan2', first, second, position=position)
        self.expect(')')
        return self.add(name, first, position=position)

    def expect(self, symbol):
        position, token, _ = self.take()
        if token != symbol:
            self.fail(position, f'unexpected {quote(token) if token else "end"}',
                      f'; expected {quote(symbol)}')


def parse(text, variables, where):
    """The tape of one residual over the named variables (ModelError naming where and what)."""
    return Parser(text, tuple(variables), where).parse()


def product(a, b):
    """(ab)_S = sum over the subsets T of S of a_T b_{S-T}."""
    c = [0.0] * len(a)
    for S in range(len(a)):
        T = S
        while True:
            c[S] += a[T] * b[S ^ T]
            if T == 0:
                break
            T = (T - 1) & S
    return c


def compose(f, a):
    """f(a) from f's value and derivatives f = (f0, f1, f2, f3) at a_0 (Faa di Bruno)."""
    c = [f[0]] + [0.0] * (len(a) - 1)
    for S in range(1, len(a)):
        bits = [1 << i for i in range(3) if S >> i & 1]
        if len(bits) == 1:
            c[S] = f[1] * a[S]
        elif len(bits) == 2:
            c[S] = f[1] * a[S] + f[2] * a[bits[0]] * a[bits[1]]
        else:
            i, j, k = bits
            c[S] = (f[1] * a[S] + f[2] * (a[i] * a[j | k] + a[j] * a[i | k] + a[k] * a[i | j])
                    + f[3] * a[i] * a[j] * a[k])
    return c


def _atan2(y, x):
    """atan2(y, x): the derivatives of atan(y / x) (or of -atan(x / y) where |y| > |x|), which
    differ from atan2 by a constant, with atan2's value."""
    if abs(x[0]) >= abs(y[0]):
        ratio = product(y, compose(_derivatives('inverse', x[0]), x))
        c = compose(_derivatives('atan', ratio[0]), ratio)
    else:
        ratio = product(x, compose(_derivatives('inverse', y[0]), y))
        c = [-t for t in compose(_derivatives('atan', ratio[0]), ratio)]
    c[0] = math.atan2(y[0], x[0])
    return c


def directional(tape, x, directions):
    """The multi-dual components (module docstring) of the tape's last node at x along the
    directions (at most 3): entry 0 the value, entry 2^D - 1 the mixed derivative along all;
    NaN everywhere outside the expression's domain (ArithmeticError, ValueError), which the
    callers' finiteness checks name."""
    size = 1 << len(directions)
    try:
        values = []
        for op, a, b, value in tape:
            if op == 'const':
                c = [value] + [0.0] * (size - 1)
            elif op == 'var':
                c = [float(x[a])] + [0.0] * (size - 1)
                for i, direction in enumerate(directions):
                    c[1 << i] = float(direction[a])
            elif op in ('add', 'sub'):
                sign = 1.0 if op == 'add' else -1.0
                c = [s + sign * t for s, t in zip(values[a], values[b])]
            elif op == 'neg':
                c = [-s for s in values[a]]
            elif op == 'mul':
                c = product(values[a], values[b])
            elif op == 'div':
                c = product(values[a], compose(_derivatives('inverse', values[b][0]), values[b]))
            elif op == 'pow':
                c = compose(_power(values[a][0], value), values[a])
            elif op == 'atan2':
                c = _atan2(values[a], values[b])
            else:
                c = compose(_derivatives(op, values[a][0]), values[a])
            values.append(c)
        return values[-1]
    except (ArithmeticError, ValueError):
        return [math.nan] * size
