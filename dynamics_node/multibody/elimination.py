"""The elimination plan of a loop cluster: a sparse Householder QR of its K_d by row merging
(George & Heath, 1980), worked out once on the pattern of K_d.

A loop's rows touch only the joints on its two paths: delta's five ball loops each involve two rod
joints of their own and five shared ones (K_d 15 x 15, half of it zero). A Householder reflection
of dependent column p then needs only the rows not yet pivoted that hold p, and changes only the
later columns those rows hold, which then all of them hold (fill). Taking at each step the column
held by the fewest such rows, each loop's own joints go first and leave one row per loop for the
shared ones: delta's QR does a fifth of the dense QR's multiply-adds, and a step of one row
reflects nothing. The kernels run the plan (linalg.dependent_least_squares). R's diagonal, and so
the singularity measure, depends only on the order of the columns (Q R = P K_d for any row order),
which the reference QR (kinematics.py) therefore shares: clusters.py puts the dependent columns in
this order.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EliminationPlan:
    order: tuple      # the dependent columns (positions in the given pattern) in elimination order
    rows: tuple       # rows[p]: the rows step p reflects, its pivot first (the row of R_p)
    columns: tuple    # columns[p]: the later steps (> p) whose columns step p changes


def elimination_plan(pattern):
    """The plan of a K_d whose entries may be nonzero where pattern (rows x columns, bool) is
    True."""
    held = np.array(pattern, dtype=bool)
    rows, columns = held.shape
    live = np.ones(rows, dtype=bool)
    left = list(range(columns))
    order, step_rows, step_columns = [], [], []
    for _ in range(columns):
        column = min(left, key=lambda c: (np.count_nonzero(held[live, c]), c))
        mine = [int(r) for r in np.flatnonzero(live & held[:, column])]
        assert mine, 'K_d has full rank (clusters._split_coordinates)'
        left.remove(column)
        changed = [c for c in left if held[mine, c].any()]
        held[np.ix_(mine, changed)] = True                   # fill
        live[mine[0]] = False
        order.append(column)
        step_rows.append(tuple(mine))
        step_columns.append(changed)
    step = {column: p for p, column in enumerate(order)}
    return EliminationPlan(tuple(order), tuple(step_rows), tuple(tuple(sorted(step[c]
                                                                              for c in changed))
                                                                 for changed in step_columns))
