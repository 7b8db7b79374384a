"""Cluster EFPA (Lambda^-1 = J_y H_y^-1 J_y^T) against the independent Pinocchio + KKT oracle
(Chignoli et al. 2023)."""

import pytest

from conftest import _G, assert_close, oracle, random_state, robot, ROBOTS

STATES = 3
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_inverse_osim_matches_projection(name, compiled, rng):
    """C-EFPA = J_y H_y^-1 J_y^T with Pinocchio LOCAL Jacobians (Chignoli et al. 2023, Sec. 8 item
    9)."""
    model, reference = robot(name, compiled), oracle(name)
    links = list(model.links[-1:]) + list(model.links[1:3])
    for _ in range(STATES):
        q, _, _ = random_state(model, rng)
        expected = reference.osim_inverse(q, _G(name, q), links)
        Omega = model.inverse_osim(q, links)
        assert_close(Omega, expected, 'Lambda^-1')
        assert_close(Omega, Omega.T, 'Lambda^-1 symmetric')
