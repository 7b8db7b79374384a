"""Cluster ABA (forward dynamics, independent and spanning inputs) against the independent
Pinocchio + KKT oracle (Chignoli et al. 2023)."""

import pytest

from conftest import _G, assert_close, oracle, random_state, robot, ROBOTS

STATES = 3
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_forward_dynamics_matches_kkt(name, compiled, rng):
    model, reference = robot(name, compiled), oracle(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        v = model.spanning_velocities(q, yd)
        assert_close(v, _G(name, q) @ yd, 'qd = G yd')
        expected = reference.forward_dynamics(q, v, tau, wrenches)
        assert_close(model.forward_dynamics(q, yd, tau, wrenches), expected,
                     'qdd (independent inputs)')
        assert_close(model.forward_dynamics(q, v, tau, wrenches), expected,
                     'qdd (spanning inputs)')
        assert_close(model.forward_dynamics(q, yd, tau), reference.forward_dynamics(q, v, tau, {}),
                     'qdd without the previous call\'s wrenches')
