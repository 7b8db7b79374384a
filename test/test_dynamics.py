"""Cluster algorithms against the independent Pinocchio + KKT oracle and the identities of Chignoli
et al. 2023."""

import numpy as np
import pytest

from conftest import assert_close, oracle, random_state, robot, ROBOTS

STATES = 3


def _G(name, q):
    return oracle(name).null_space_G(q, robot(name).independent_v)


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


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_link_kinematics_match_pinocchio(name, compiled, rng):
    """Poses and Jacobians of every link against Pinocchio's placements and LOCAL frame Jacobians
    (times G); the batch link_kinematics gives exactly what the single calls give (its bias
    accelerations against Pinocchio: test_link_bias_acceleration.py)."""
    model, reference = robot(name, compiled), oracle(name)
    q, yd, _ = random_state(model, rng)
    G = _G(name, q)
    rotations, origins = model.link_poses(q)
    order = model.links[::-1]                        # the batch in an order of its own
    batch = dict(zip(order, zip(*model.link_kinematics(q, yd, order))))
    for link, R_all, p_all in zip(model.links, rotations, origins):
        R, p = model.link_pose(q, link)
        pose = reference.link_placement(q, link)
        assert_close(R, pose.rotation, f'R of {link}')
        assert_close(p, pose.translation, f'p of {link}')
        assert_close(R_all, pose.rotation, f'link_poses R of {link}')
        assert_close(p_all, pose.translation, f'link_poses p of {link}')
        J = model.link_jacobian(q, link)
        assert_close(J, reference.frame_jacobian(q, link) @ G, f'J of {link}')
        for part, single, in_batch in zip(
                ('R', 'p', 'J', 'Jdot yd'),
                (R, p, J, model.link_bias_acceleration(q, yd, link)), batch[link]):
            np.testing.assert_array_equal(in_batch, single, f'batch {part} of {link}')


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
