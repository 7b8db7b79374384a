"""Cluster CRBA (H_y = G^T H G) against the independent Pinocchio + KKT oracle (Chignoli et al.
2023)."""

import numpy as np
import pytest

from conftest import _G, assert_close, oracle, random_state, robot, ROBOTS

STATES = 3
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_mass_matrix_is_projected_crba(name, compiled, rng):
    model, reference = robot(name, compiled), oracle(name)
    for _ in range(STATES):
        q, _, _ = random_state(model, rng)
        G = _G(name, q)
        H = model.mass_matrix(q)
        assert_close(H, G.T @ reference.mass_matrix(q) @ G, 'H_y = G^T H G')
        assert np.allclose(H, H.T, rtol=0, atol=1e-12), 'H_y symmetric'
        assert np.linalg.eigvalsh(H).min() > 0, 'H_y positive definite'


@pytest.mark.parametrize('name', ROBOTS)
def test_mass_matrix_factors_on_the_cluster_tree(name, rng):
    """H_y is zero off the branches of the expanded parent array parent_y (kernels/flat/model.py),
    so that its LTL factor (kernels/dense.tree_factor) keeps those zeros; that factor's solves
    equal numpy's, and it refuses a matrix that is not positive definite."""
    from dynamics_node.kernels.dense import tree_factor, tree_solve
    model = robot(name, True)
    parent, ny = model.flat.parent_y, model.ny
    branch = np.eye(ny, dtype=bool)
    for i in range(ny):
        j = parent[i]
        while j >= 0:
            branch[i, j] = branch[j, i] = True
            j = parent[j]
    assert np.all(parent < np.arange(ny)), 'parents before children'
    for _ in range(STATES):
        q, _, _ = random_state(model, rng)
        H = model.mass_matrix(q)
        off = np.argwhere((H != 0.0) & ~branch)
        assert off.size == 0, f'H_y nonzero off the branches at {off[:3].tolist()}'
        L, X = H.copy(), rng.normal(size=(ny, 2 * ny + 1))
        assert tree_factor(parent, L, ny)
        solved = X.copy()
        tree_solve(parent, L, ny, solved)
        assert_close(solved, np.linalg.solve(H, X), 'H_y^-1 X by the tree factor', 1e-9)
    indefinite = -np.eye(ny)
    assert not tree_factor(parent, indefinite, ny)
