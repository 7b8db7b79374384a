"""The elimination plan of a loop cluster's sparse QR (elimination.py): sound on random patterns (a dense
QR in the plan's column order never fills an entry the plan leaves out, and the plan's reflections give
the least-squares solution), and sparse where the loops are (delta)."""

import numpy as np
import pytest

from dynamics_node import bundled_model, load_model
from dynamics_node.elimination import elimination_plan


def planned_least_squares(A, plan, B):
    """K_d^+ B by Householder reflections of only the rows of each step (test oracle: NumPy, no kernel)."""
    A, B = A[:, list(plan.order)].astype(float), B.astype(float)
    solution = np.zeros((A.shape[1], B.shape[1]))
    live = set(range(A.shape[0]))
    for p, rows in enumerate(plan.rows):
        assert np.all(A[sorted(live - set(rows)), p] == 0.0), 'every live row holding column p is reflected'
        live.remove(rows[0])
        x = A[list(rows), p]
        v = x.copy()
        v[0] += np.copysign(np.linalg.norm(x), x[0])
        if v @ v > 0.0:
            reflect = np.eye(len(rows)) - 2.0 * np.outer(v, v) / (v @ v)
            A[list(rows)] = reflect @ A[list(rows)]
            B[list(rows)] = reflect @ B[list(rows)]
        outside = np.setdiff1d(np.arange(p + 1, A.shape[1]), plan.columns[p])
        assert np.all(A[rows[0], outside] == 0.0), 'R_p holds only the columns of qr_cols'
    pivots = [rows[0] for rows in plan.rows]
    R = A[pivots]
    solution[list(plan.order)] = np.linalg.solve(np.triu(R), B[pivots])
    return solution


@pytest.mark.parametrize('seed', range(40))
def test_plan_solves_least_squares_on_random_patterns(seed):
    rng = np.random.default_rng(seed)
    columns = int(rng.integers(1, 9))
    rows = columns + int(rng.integers(0, 4))
    pattern = rng.random((rows, columns)) < rng.uniform(0.2, 0.7)
    pattern[rng.permutation(rows)[:columns], np.arange(columns)] = True       # structurally full rank
    A = np.where(pattern, rng.normal(size=pattern.shape), 0.0)
    B = rng.normal(size=(rows, 2))
    plan = elimination_plan(pattern)
    assert sorted(plan.order) == list(range(columns))
    assert all(rows[0] not in later for p, rows in enumerate(plan.rows) for later in plan.rows[p + 1:])
    expected = np.linalg.lstsq(A, B, rcond=None)[0]
    assert np.allclose(planned_least_squares(A, plan, B), expected, rtol=1e-10, atol=1e-10)


def test_delta_eliminates_each_loops_own_joints_first():
    cluster = load_model(bundled_model('delta')).cluster_list[0]
    plan = cluster.elimination
    reflected = [len(rows) for rows in plan.rows]
    assert reflected[:10] == [3, 2] * 5                 # each ball loop's two rod joints, on its 3 rows
    assert reflected[10:] == [5, 4, 3, 2, 1]            # then one row per loop for the 5 shared columns
    nd, na = len(cluster.dependent), len(cluster.active_rows)
    sparse = sum(len(rows) * (len(columns) + 1) for rows, columns in zip(plan.rows, plan.columns))
    dense = sum((na - p) * (nd - p) for p in range(nd))
    assert sparse < dense / 4
