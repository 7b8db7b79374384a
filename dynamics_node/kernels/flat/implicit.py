"""The implicit constraints (constraints.ImplicitConstraint) of a FlatModel: their rows, grouped
by cluster, their variables and their residuals' tapes, as flat arrays for kernels/expressions.py
(ni implicit rows, nx variables, nt tape nodes)."""

import numpy as np

from ...multibody.constraints import ImplicitConstraint
from ..expressions import OPS

IMPLICIT_FIELDS = {   # name: meaning, shape
    'implicit_range': 'rows [r0, r1) of the implicit constraints of cluster k among the implicit '
                      'rows (nc, 2)',
    'implicit_row': 'implicit row r among the active rows of its cluster, -1 where it is '
                    'identically zero (ni)',
    'implicit_phi_row': 'its row among all the rows (phi) of its cluster (ni)',
    'implicit_of': 'its constraint, numbered among the implicit constraints (ni)',
    'implicit_tape': 'nodes [t0, t1) of its residual\'s tape (ni, 2)',
    'implicit_vars': 'variables [v0, v1) of its constraint (ni, 2)',
    'var_body': 'the joint body of each variable (nx)',
    'var_col': 'its column within its cluster\'s spanning velocities (nx)',
    'tape_op': 'operation of each tape node (kernels/expressions.py OPS; nt)',
    'tape_a': 'its first operand, a node of its tape counted from the tape\'s first, or the '
              'variable of a var node (nt)',
    'tape_b': 'its second operand (nt)',
    'tape_value': 'the value of a const node, the exponent of a pow node (nt)',
}


def implicit_fields(model):
    """The fields of IMPLICIT_FIELDS."""
    ranges = np.zeros((len(model.cluster_list), 2), dtype=np.int64)
    rows, variables, tape, constraints = [], [], [], 0
    for k, c in enumerate(model.cluster_list):
        ranges[k, 0] = len(rows)
        active = {int(r): a for a, r in enumerate(c.active_rows)}
        for first, con in c.first_rows():
            if not isinstance(con, ImplicitConstraint):
                continue
            v0 = len(variables)
            variables += [(b, c.col[b]) for b in con.bodies]
            for r, nodes in enumerate(con.tapes):
                rows.append((active.get(first + r, -1), first + r, constraints, len(tape),
                             len(tape) + len(nodes), v0, len(variables)))
                tape += [(OPS.index(op), a, b, value) for op, a, b, value in nodes]
            constraints += 1
        ranges[k, 1] = len(rows)
    rows = np.array(rows, dtype=np.int64).reshape(-1, 7)
    return {'implicit_range': ranges, 'implicit_row': rows[:, 0].copy(),
            'implicit_phi_row': rows[:, 1].copy(), 'implicit_of': rows[:, 2].copy(),
            'implicit_tape': rows[:, 3:5].copy(), 'implicit_vars': rows[:, 5:7].copy(),
            'var_body': _ints([b for b, _ in variables]),
            'var_col': _ints([col for _, col in variables]),
            'tape_op': _ints([t[0] for t in tape]), 'tape_a': _ints([t[1] for t in tape]),
            'tape_b': _ints([t[2] for t in tape]),
            'tape_value': np.array([t[3] for t in tape], dtype=float)}


def _ints(values):
    return np.array(values, dtype=np.int64)
