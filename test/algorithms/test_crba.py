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
