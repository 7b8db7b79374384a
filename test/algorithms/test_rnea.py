"""Cluster RNEA (inverse dynamics, bias and gravity forces) against the independent Pinocchio +
KKT oracle and the identities of Chignoli et al. 2023."""

import numpy as np
import pytest

from conftest import _G, assert_close, oracle, random_state, robot, ROBOTS

STATES = 3
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_inverse_dynamics_is_projected_rnea(name, compiled, rng):
    """C-RNEA = G^T RNEA_span(q, G yd, G ydd + g) (Chignoli et al. 2023, Sec. 8 item 3)."""
    model, reference = robot(name, compiled), oracle(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        ydd = rng.normal(size=model.ny)
        G = _G(name, q)
        v = G @ yd
        qdd = G @ ydd + reference.explicit_bias_g(q, v, model.independent_v)
        expected = reference.inverse_dynamics_projected(q, v, qdd, G, wrenches)
        assert_close(model.inverse_dynamics(q, yd, ydd, wrenches), expected, 'tau_y')
        assert_close(model.inverse_dynamics(q, v, qdd, wrenches), expected,
                     'tau_y (spanning inputs)')


@pytest.mark.parametrize('name', ROBOTS)
def test_round_trips_and_bias(name, rng):
    """RNEA(ABA(tau)) = tau, ABA(RNEA(ydd)) = ydd, RNEA = H_y ydd + C_y (Chignoli et al. 2023, Sec.
    8 items 6-7)."""
    model = robot(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        tau = rng.normal(size=model.ny)
        ydd = model.forward_dynamics(q, yd, tau, wrenches)[model.independent_v]
        assert_close(model.inverse_dynamics(q, yd, ydd, wrenches), tau, 'RNEA(ABA(tau))')
        H, C = model.mass_matrix(q), model.bias_forces(q, yd, wrenches)
        assert_close(H @ ydd + C, tau, 'H_y ydd + C_y')
        gravity = model.gravity_forces(q)
        assert_close(gravity, model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny)),
                     'gravity')


def test_gravity_is_settable(rng):
    model = robot('geared_chain')
    q, _, _ = random_state(model, rng)
    reference = oracle('geared_chain')
    try:
        model.gravity = reference.gravity = (1.0, -2.0, -3.0)
        expected = reference.inverse_dynamics_projected(q, np.zeros(model.nv), np.zeros(model.nv),
                                                        _G('geared_chain', q))
        assert_close(model.gravity_forces(q), expected, 'gravity forces with custom gravity')
    finally:
        model.gravity = reference.gravity = (0.0, 0.0, -9.81)
