"""Link frames (algorithms/frames.py): link poses and Jacobians against Pinocchio's placements and
LOCAL frame Jacobians; Model.link_bias_acceleration, Jdot yd: the classical acceleration of a
link frame at zero independent accelerations, against two independent references.

- Pinocchio (test/oracle.py, which never imports the library): forwardKinematics at (q, v = G yd,
  qdd = g), g the oracle's own explicit constraint bias (K g = k, zero on the independent joints;
  zero on trees, where this is Pinocchio's qdd = 0), then getFrameClassicalAcceleration in the
  LOCAL frame, on every link of every bundled robot and of the published-pattern robots
  (test/models), to 1e-9 relative.
- Finite differences along the constrained motion at ydd = 0 on the fixed-base robots with loops
  and couplings: q(t) = complete_positions(y0 + t yd), the link's world velocity
  v_w(t) = R(t) J(q(t)) yd, its central difference at t = 0 rotated back into the link frame by
  R(0)^T. This reference shares only link_pose, link_jacobian and completion with the library.
"""

import numpy as np
import pinocchio as pin
import pytest

from conftest import (_G, assert_close, oracle, random_independent_positions, random_state,
                      robot, ROBOTS)
from dynamics_node import ModelError, SingularConfigurationError
import published_robots as published

STATES = 3
# Central difference step. Completion closes the loops to 1e-12 (completion.TOLERANCE), which puts
# ~1e-12 / H of noise into the difference quotient; its truncation error is ~H^2 |v_w'''| / 6.
# Observed at H = 1e-4: 1e-8 relative at most.
H = 1e-4
FD_RTOL = 1e-6
FIXED_BASE = [name for name in ROBOTS if not robot(name).floating_base]
PUBLISHED_FIXED_BASE = ['cassie', 'five_bar']        # Extended URDF pairs with split rod joints

ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


def pinocchio_bias_acceleration(reference, model, q, yd, link):
    """[linear; angular] classical acceleration of link (LOCAL) at v = G yd, qdd = g."""
    G = reference.null_space_G(q, model.independent_v)
    v = G @ yd
    g = reference.explicit_bias_g(q, v, model.independent_v)
    pin.forwardKinematics(reference.model, reference.data, reference.q_to_pin(q),
                          reference.v_to_pin(v), reference.v_to_pin(g))
    return pin.getFrameClassicalAcceleration(reference.model, reference.data,
                                             reference._body_frame_id(link), pin.LOCAL).vector


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_matches_pinocchio_on_bundled_robots(name, compiled, rng):
    model, reference = robot(name, compiled), oracle(name)
    for _ in range(STATES):
        q = model.complete_positions(random_independent_positions(model, rng))
        yd = rng.normal(size=model.ny)
        v = model.spanning_velocities(q, yd)
        _, _, _, batch = model.link_kinematics(q, v, model.links)
        for link, in_batch in zip(model.links, batch):
            expected = pinocchio_bias_acceleration(reference, model, q, yd, link)
            assert_close(model.link_bias_acceleration(q, yd, link), expected,
                         f'Jdot yd of {link}')
            assert_close(model.link_bias_acceleration(q, v, link), expected,
                         f'Jdot yd of {link} (spanning v)')
            assert_close(in_batch, expected, f'Jdot yd of {link} (link_kinematics)')


@pytest.mark.parametrize('name', published.NAMES)
def test_matches_pinocchio_on_published_patterns(name):
    model, reference = published.robot(name, True), published.oracle(name)
    for state in published.states(name, True):
        _, _, _, batch = model.link_kinematics(state.q, state.yd, model.links)
        for link, in_batch in zip(model.links, batch):
            expected = pinocchio_bias_acceleration(reference, model, state.q, state.yd, link)
            assert_close(model.link_bias_acceleration(state.q, state.yd, link), expected,
                         f'Jdot yd of {link}')
            assert_close(in_batch, expected, f'Jdot yd of {link} (link_kinematics)')


def position_rates(model, yd):
    """d/dt of the independent positions (model.independent_q) when the independent velocities
    are yd: the entry of each positioned joint (all scalar here)."""
    y_of_v = {int(v): y for y, v in enumerate(model.independent_v)}
    rates = []
    for i in model.independent_q:
        body = int(np.searchsorted(model.idx_q[1:], i, side='right'))
        assert model.nq_body[body] == 1, 'scalar independent joints only'
        rates.append(yd[y_of_v[int(model.idx_v[body])]])
    return np.array(rates)


def positioned_velocities(model, rng):
    """Random yd that moves only positioned coordinates (a split joint's idle spin, which
    completion leaves where it is, at rest)."""
    rates = np.zeros(model.ny)
    y_of_v = {int(v): y for y, v in enumerate(model.independent_v)}
    for i in model.independent_q:
        body = int(np.searchsorted(model.idx_q[1:], i, side='right'))
        rates[y_of_v[int(model.idx_v[body])]] = rng.normal()
    return rates


def finite_difference(model, y0, yd, link):
    """R(0)^T d/dt (R(t) J(q(t)) yd) at t = 0 along q(t) = complete_positions(y0 + t yd)."""
    rates = position_rates(model, yd)

    def world_velocity(t):
        q = model.complete_positions(y0 + t * rates)
        R, _ = model.link_pose(q, link)
        v = model.link_jacobian(q, link) @ yd
        return np.concatenate((R @ v[:3], R @ v[3:]))
    R0, _ = model.link_pose(model.complete_positions(y0), link)
    derivative = (world_velocity(H) - world_velocity(-H)) / (2 * H)
    return np.concatenate((R0.T @ derivative[:3], R0.T @ derivative[3:]))


def check_finite_differences(model, y0, yd):
    q = model.complete_positions(y0)
    for link in model.links:
        expected = finite_difference(model, y0, yd, link)
        assert_close(model.link_bias_acceleration(q, yd, link), expected,
                     f'Jdot yd of {link} (finite differences)', FD_RTOL)


@pytest.mark.parametrize('name', FIXED_BASE)
def test_loops_match_finite_differences_on_bundled_robots(name, rng):
    model = robot(name)
    for _ in range(STATES):
        check_finite_differences(model, random_independent_positions(model, rng),
                                 positioned_velocities(model, rng))


@pytest.mark.parametrize('name', PUBLISHED_FIXED_BASE)
def test_loops_match_finite_differences_on_published_patterns(name):
    model, rng = published.robot(name, True), published.seeded(name, 'bias acceleration')
    assert model.split_joint_names or name != 'cassie', 'the rod spins are split joints'
    for _ in range(STATES):
        check_finite_differences(model, published.independent_positions(model, rng),
                                 positioned_velocities(model, rng))


def test_a_loop_bias_is_not_zero():
    """On a loop the spanning accelerations at ydd = 0 are g, not zero: the foot of linkage_leg
    accelerates with only the crank turning at constant speed, unlike in the open chain."""
    model = robot('linkage_leg')
    q = model.complete_positions([0.8, 0.0])
    yd = np.array([1.0, 0.0])
    reference = oracle('linkage_leg')
    v = model.spanning_velocities(q, yd)
    g = reference.explicit_bias_g(q, v, model.independent_v)
    assert np.max(np.abs(g)) > 0.1
    pin.forwardKinematics(reference.model, reference.data, reference.q_to_pin(q),
                          reference.v_to_pin(v), np.zeros(reference.model.nv))
    open_chain = pin.getFrameClassicalAcceleration(
        reference.model, reference.data, reference._body_frame_id('foot'), pin.LOCAL).vector
    bias = model.link_bias_acceleration(q, yd, 'foot')
    assert np.max(np.abs(bias - open_chain)) > 0.1
    assert_close(bias, pinocchio_bias_acceleration(reference, model, q, yd, 'foot'), 'Jdot yd')


@ENGINES
def test_bad_input_raises_model_error_naming_it(compiled):
    model = robot('linkage_leg', compiled)
    q = model.complete_positions([0.8, 0.1])
    v = model.spanning_velocities(q, [1.0, -0.5])
    cases = [
        (lambda: model.link_bias_acceleration(q, [1.0], 'foot'),
         r'^v has 1 entries; expected 5 \(spanning\) or 2 \(independent\)$'),
        (lambda: model.link_bias_acceleration(q, [np.nan, 0.0], 'foot'),
         r'^v\[0\] is nan; expected finite numbers of magnitude at most 1e\+06$'),
        (lambda: model.link_bias_acceleration(q, v + 0.1, 'foot'),
         r"^v violates the constraints of cluster '.*' by .*; pass consistent spanning values "
         r'or the 2 independent ones$'),
        (lambda: model.link_bias_acceleration(q + 0.1, [1.0, 0.0], 'foot'),
         r"^q violates constraint 'knee_gear' of cluster 'crank' by 0.8 "),
        (lambda: model.link_bias_acceleration(q, [1.0, 0.0], ['foot']),
         r"^unknown link \['foot'\]; links are \["),
        (lambda: model.link_kinematics(q, [1.0], ['foot']),
         r'^v has 1 entries; expected 5 \(spanning\) or 2 \(independent\)$'),
        (lambda: model.link_kinematics(q, [np.nan, 0.0], 'foot'),
         r'^v\[0\] is nan; expected finite numbers of magnitude at most 1e\+06$'),
        (lambda: model.link_kinematics(q, v + 0.1, ['foot', 'crank']),
         r"^v violates the constraints of cluster '.*' by .*; pass consistent spanning values "
         r'or the 2 independent ones$'),
        (lambda: model.link_kinematics(q + 0.1, [1.0, 0.0], ['foot']),
         r"^q violates constraint 'knee_gear' of cluster 'crank' by 0.8 "),
        (lambda: model.link_kinematics(q[:-1], [1.0, 0.0], ['foot']),
         r'^q has 4 entries; expected 5 \(spanning positions\)$'),
        # the links first, then q and v
        (lambda: model.link_kinematics(q + 0.1, [np.nan], ['foot', 'hand']),
         r"^unknown link 'hand'; links are \['base', 'coupler', 'crank', 'foot', 'motor_rotor', "
         r"'shank'\]$"),
        (lambda: model.link_kinematics(q, [1.0, 0.0], ['foot', 'crank', 'foot']),
         r"^link 'foot' is named twice in links; name each link once$"),
        (lambda: model.link_kinematics(q, [1.0, 0.0], [['foot']]),
         r"^unknown link \['foot'\]; links are \["),
        (lambda: model.link_kinematics(q, [1.0, 0.0], 5),
         r'^links must be a link name or a list of them, got 5$'),
    ]
    for call, message in cases:
        with pytest.raises(ModelError, match=message):
            call()
    with pytest.raises(ModelError) as error:
        model.link_bias_acceleration(q, [1.0, 0.0], 'y' * 1_000_000)
    assert str(error.value) == (f"unknown link '{'y' * 80}'... (1000000 characters); links are "
                                "['base', 'coupler', 'crank', 'foot', 'motor_rotor', 'shank']")
    R, p, J, bias = model.link_kinematics(q, v, [])
    assert (R.shape, p.shape, J.shape, bias.shape) == ((0, 3, 3), (0, 3), (0, 6, 2), (0, 6))


@ENGINES
def test_a_request_longer_than_the_links_is_refused_before_any_kinematics(compiled, monkeypatch):
    """link_kinematics names each link of the model at most once: 10,000 names, repeated or
    unknown, are refused by the name at fault before any kinematics (the engine's link calls are
    never reached), their check linear in their number (layout.checked_links)."""
    model = robot('linkage_leg', compiled)
    q = model.complete_positions([0.8, 0.1])
    engine = model._local.data.engine
    for method in ('link_call', 'link_kinematics'):
        monkeypatch.setattr(engine, method, lambda *args, **kwargs: pytest.fail('kinematics ran'))
    for links, message in ((['foot', 'shank'] * 5_000,
                            "link 'foot' is named twice in links; name each link once"),
                           (model.links + tuple(f'link{i}' for i in range(10_000)),
                            "unknown link 'link0'; links are ['base', 'coupler', 'crank', 'foot', "
                            "'motor_rotor', 'shank']")):
        with pytest.raises(ModelError) as error:
            model.link_kinematics(q, [1.0, 0.0], links)
        assert str(error.value) == message


@ENGINES
@pytest.mark.parametrize('side', [1, -1], ids=['upper', 'lower'])
def test_dead_point_is_refused(compiled, side):
    """Next to a four-bar's dead point the loop cannot give its g: SingularConfigurationError
    naming the cluster."""
    model, reference = published.four_bar(compiled)
    q, v, _, _ = published.near_dead_point(model, reference, side)
    with pytest.raises(SingularConfigurationError,
                       match=f"cluster '{model.clusters[0].name}'.*amplification_limit"):
        model.link_bias_acceleration(q, v, 'rocker')


@ENGINES
@pytest.mark.parametrize('name', ROBOTS)
def test_link_kinematics_match_pinocchio(name, compiled, rng):
    """Poses and Jacobians of every link against Pinocchio's placements and LOCAL frame Jacobians
    (times G); the batch link_kinematics gives exactly what the single calls give (its bias
    accelerations against Pinocchio: the tests above)."""
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
