"""The elimination plan of a loop cluster's sparse QR (elimination.py): sound on random patterns (a
dense QR in the plan's column order never fills an entry the plan leaves out, and the plan's
reflections give the least-squares solution), run by the kernels (kernels/linalg.py's QR as Python
functions) to the same solutions and R diagonal, and sparse where the loops are (delta)."""

import types

import numpy as np
import pytest

from dynamics_node import bundled_model, load_model
from dynamics_node.kernels import linalg
from dynamics_node.multibody.elimination import elimination_plan


def planned_least_squares(A, plan, B):
    """K_d^+ B by Householder reflections of only the rows of each step (test oracle: NumPy, no
    kernel)."""
    A, B = A[:, list(plan.order)].astype(float), B.astype(float)
    solution = np.zeros((A.shape[1], B.shape[1]))
    live = set(range(A.shape[0]))
    for p, rows in enumerate(plan.rows):
        assert np.all(A[sorted(live - set(rows)), p] == 0.0), (
            'every live row holding column p is reflected')
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


def random_system(seed):
    """A random sparse K_d of full column rank (possibly more rows than columns) with its pattern,
    and B."""
    rng = np.random.default_rng(seed)
    columns = int(rng.integers(1, 9))
    rows = columns + int(rng.integers(0, 4))
    pattern = rng.random((rows, columns)) < rng.uniform(0.2, 0.7)
    pattern[rng.permutation(rows)[:columns], np.arange(columns)] = True    # structurally full rank
    A = np.where(pattern, rng.normal(size=pattern.shape), 0.0)
    if seed % 3 == 0:
        # zeros inside the pattern: a step may find nothing to reflect
        A[rng.random(A.shape) < 0.15] = 0.0
    return pattern, A, rng.normal(size=(rows, 2))


@pytest.mark.parametrize('seed', range(40))
def test_plan_solves_least_squares_on_random_patterns(seed):
    pattern, A, B = random_system(seed)
    columns = A.shape[1]
    plan = elimination_plan(pattern)
    assert sorted(plan.order) == list(range(columns))
    assert all(rows[0] not in later for p, rows in enumerate(plan.rows)
               for later in plan.rows[p + 1:])
    if np.linalg.matrix_rank(A) < columns:
        return
    expected = np.linalg.lstsq(A, B, rcond=None)[0]
    assert np.allclose(planned_least_squares(A, plan, B), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize('seed', range(40))
def test_kernels_run_the_plan(seed, monkeypatch):
    """linalg.dependent_least_squares (K_d^+ of carried columns) and qr_solve (of a later column),
    run as Python on the plan's arrays as flat/model.py lays them out: the least-squares solutions,
    in the pivot rows; R's diagonal that of a dense QR in the same column order."""
    pattern, A, B = random_system(seed)
    rows, columns = A.shape
    if np.linalg.matrix_rank(A) < columns:
        return
    for kernel in ('sparse_qr', 'back_substitute'):        # called by the two below: as Python too
        monkeypatch.setattr(linalg, kernel, getattr(linalg, kernel).py_func)
    plan = elimination_plan(pattern)
    m = types.SimpleNamespace(qr_rows=np.zeros((1, columns, rows), np.int64),
                              qr_n_rows=np.zeros((1, columns), np.int64),
                              qr_cols=np.zeros((1, columns, columns), np.int64),
                              qr_n_cols=np.zeros((1, columns), np.int64))
    for p, (reflected, changed) in enumerate(zip(plan.rows, plan.columns)):
        m.qr_n_rows[0, p], m.qr_n_cols[0, p] = len(reflected), len(changed)
        m.qr_rows[0, p, :len(reflected)], m.qr_cols[0, p, :len(changed)] = reflected, changed
    K_d = A[:, list(plan.order)]
    work, beta = np.zeros((rows, columns + 2)), np.zeros(columns)
    work[:, :columns], work[:, columns] = K_d, B[:, 0]
    R = np.abs(np.diag(np.linalg.qr(K_d)[1]))
    singular = R.min() <= 1e-9 * max(R.max(), 1.0)
    conditioning = linalg.dependent_least_squares.py_func(m, 0, work, columns, columns + 1, beta,
                                                          1e-9)
    pivots = m.qr_rows[0, :, 0]
    assert np.allclose(np.abs(work[pivots, np.arange(columns)]), R, rtol=1e-10, atol=1e-14)
    if singular:
        assert np.isclose(conditioning, R.min() / R.max(), rtol=1e-6)
        return
    assert conditioning == -1.0
    work[:, columns + 1] = B[:, 1]
    linalg.qr_solve.py_func(m, 0, work, columns, beta, columns + 1)
    solutions = work[pivots, columns:]
    expected = np.linalg.lstsq(K_d, B, rcond=None)[0]
    assert np.allclose(solutions, expected, rtol=1e-9,
                       atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_delta_eliminates_each_loops_own_joints_first():
    cluster = load_model(bundled_model('delta')).cluster_list[0]
    plan = cluster.elimination
    reflected = [len(rows) for rows in plan.rows]
    assert reflected[:10] == [3, 2] * 5            # each ball loop's two rod joints, on its 3 rows
    assert reflected[10:] == [5, 4, 3, 2, 1]       # then one row per loop for the 5 shared columns
    nd, na = len(cluster.dependent), len(cluster.active_rows)
    sparse = sum(len(rows) * (len(columns) + 1) for rows, columns in zip(plan.rows, plan.columns))
    dense = sum((na - p) * (nd - p) for p in range(nd))
    assert sparse < dense / 4
