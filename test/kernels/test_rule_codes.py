"""Rule codes: every check of a public call reports a code (kernels/codes.py) that faults.py's one
table turns into the error naming the fault, on the compiled and the NumPy engine alike; a
compiled public call never runs the NumPy checks (validation.py)."""

import re

import numpy as np
import pytest

from conftest import random_state, robot
from dynamics_node import faults, ModelError, SingularConfigurationError
from dynamics_node import forward_dynamics as forward_module
from dynamics_node import model as model_module, validation
from dynamics_node.engines import numpy_engine
from dynamics_node.kernels import codes
from singular_loops import dead_point, four_bar_positions, ROCKER_DRIVEN
from urdf_text import inertial, joint, link, robot as urdf

ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'numpy'])


def _with(x, i, value):
    x = np.array(x, dtype=object if isinstance(value, int) else float)
    x[i] = value
    return x if x.dtype == object else x.astype(float)


def _state(name, compiled, rng):
    model = robot(name, compiled)
    q, yd, _ = random_state(model, rng)
    return model, q, model.spanning_velocities(q, yd), yd


def _raises(call, error=ModelError):
    with pytest.raises(error) as raised:
        call()
    return str(raised.value)


def test_every_code_has_its_message():
    """The table names every fault code the calls report (LCABA_REJECTED routes, OK is none)."""
    reported = {value for name, value in vars(codes).items()
                if name.isupper() and isinstance(value, int)
                and name not in ('OK', 'LCABA_REJECTED', 'FIRST', 'SECOND', 'THIRD')}
    assert reported <= set(faults.FAULTS), reported - set(faults.FAULTS)


@ENGINES
def test_length(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    assert _raises(lambda: model.forward_dynamics(q[:-1], v, v)) == (
        f'q has {model.nq - 1} entries; expected {model.nq} (spanning positions)')
    assert _raises(lambda: model.inverse_dynamics(q, v, v[:-1])) == (
        f'a has {model.nv - 1} entries; expected {model.nv} (spanning) or {model.ny} '
        '(independent)')
    assert _raises(lambda: model.mass_matrix(q[1:])).startswith(f'q has {model.nq - 1} entries')


@ENGINES
@pytest.mark.parametrize('value, shown', [(np.nan, 'nan'), (np.inf, 'inf'), (2e9, '2e+09')])
def test_out_of_bound(compiled, value, shown, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    assert _raises(lambda: model.forward_dynamics(q, v, _with(v, 1, value))) == (
        f'tau[1] is {shown}; expected finite numbers of magnitude at most 1e+09')
    assert _raises(lambda: model.bias_forces(q, _with(v, 2, value))) == (
        f'v[2] is {shown}; expected finite numbers of magnitude at most 1e+06')
    assert _raises(lambda: model.gravity_forces(_with(q, 0, value))) == (
        f'q[0] is {shown}; expected finite numbers of magnitude at most 1e+08')


@ENGINES
def test_big_integers_are_quoted_as_given(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    message = _raises(lambda: model.forward_dynamics(q, v, _with(list(v), 1, 10 ** 400)))
    assert message == ('tau[1] is 100000000000000000...0000000000000000000; expected finite '
                       'numbers of magnitude at most 1e+09')


@ENGINES
def test_not_a_vector_of_real_numbers(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    assert _raises(lambda: model.forward_dynamics(q, 'fast', v)) == (
        "v must be a vector of real numbers, got 'fast'")
    assert _raises(lambda: model.mass_matrix([1j] * model.nq)).startswith(
        'q must be a vector of real numbers')


@ENGINES
def test_quaternion(compiled, rng):
    model, q, v, _ = _state('quadruped_rotors', compiled, rng)
    at = model.idx_q[model.joint_type.index('floating')] + 3
    assert _raises(lambda: model.forward_dynamics(_with(q, at, 3.0), v, v)).endswith(
        'quaternion (qx qy qz qw) has norm 3.16228; expected a unit quaternion'
        if abs(np.linalg.norm(_with(q, at, 3.0)[at:at + 4]) - 3.16228) < 1e-5
        else 'expected a unit quaternion')


@ENGINES
def test_position_violation_names_the_worst_constraint(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    loop = next(c for c in model.cluster_list if not c.linear)
    body = next(b for b in loop.bodies if model.joint_role[b] == 'dependent')
    opened = _with(q, model.idx_q[body], q[model.idx_q[body]] + 0.01)
    for call in (lambda: model.forward_dynamics(opened, v, v),
                 lambda: model.inverse_dynamics(opened, v, v),
                 lambda: model.mass_matrix(opened),
                 lambda: model.forward_dynamics(opened, v, v, method='lcaba'),
                 lambda: model.forward_dynamics(opened, _with(v, 0, np.nan), v)):
        message = _raises(call)
        assert message.startswith('q violates constraint ') and f"of cluster '{loop.name}'" \
            in message and 'complete the dependent joints' in message, message


def test_position_violation_is_the_same_on_both_engines(rng):
    (compiled, q, v, _), reference = _state('linkage_leg', True, rng), robot('linkage_leg', False)
    opened = q + 0.01 * rng.normal(size=q.size)
    assert _raises(lambda: compiled.forward_dynamics(opened, v, v)) == \
        _raises(lambda: reference.forward_dynamics(opened, v, v))


@ENGINES
def test_velocity_violation(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    off = v + 0.01 * rng.normal(size=v.size)
    for call in (lambda: model.forward_dynamics(q, off, v), lambda: model.bias_forces(q, off),
                 lambda: model.forward_dynamics(q, off, v, method='lcaba')):
        message = _raises(call)
        assert message.startswith('v violates the constraints of cluster ') and message.endswith(
            f'pass consistent spanning values or the {model.ny} independent ones'), message


@ENGINES
def test_acceleration_violation(compiled, rng):
    model, q, v, _ = _state('linkage_leg', compiled, rng)
    a = model.forward_dynamics(q, v, np.ones(model.ny))
    assert _raises(lambda: model.inverse_dynamics(q, v, a + 0.01)).startswith(
        'a violates the constraints by ')


def _dead_point_model(compiled):
    from dynamics_node import load_model
    model = load_model(ROCKER_DRIVEN, compiled=compiled)
    return model, four_bar_positions(model, *dead_point('folded'))


@ENGINES
def test_singular_configuration(compiled):
    model, q = _dead_point_model(compiled)
    zero = np.zeros(model.ny)
    for call in (lambda: model.mass_matrix(q), lambda: model.gravity_forces(q),
                 lambda: model.forward_dynamics(q, zero, zero, method='aba')):
        assert 'singular configuration' in _raises(call, SingularConfigurationError)
    info = model.forward_dynamics(q, np.zeros(model.nv), np.ones(model.ny), info=True)
    assert info.method_used == 'lcaba' and 'singular configuration' in info.fallback_reason


@ENGINES
def test_independent_velocities_at_a_singular_configuration(compiled):
    model, q = _dead_point_model(compiled)
    message = _raises(lambda: model.forward_dynamics(q, np.ones(model.ny), np.ones(model.ny),
                                                     method='lcaba'), SingularConfigurationError)
    assert message.startswith(f'v holds the {model.ny} independent velocities, which cannot be '
                              'lifted') and 'singular configuration' in message


def test_singular_messages_are_the_same_on_both_engines():
    """The same message, but for the round-off both engines report as the conditioning at an
    exactly singular configuration (below 1e-12: its digits depend on the arithmetic's order)."""
    (compiled, q), (reference, _) = _dead_point_model(True), _dead_point_model(False)
    round_off = re.compile(r'\d(\.\d+)?e-(1[3-9]|[2-9]\d)')
    for name in ('mass_matrix', 'gravity_forces'):
        messages = [_raises(lambda: getattr(model, name)(q)) for model in (compiled, reference)]
        assert all(round_off.search(message) for message in messages), messages
        assert round_off.sub('0', messages[0]) == round_off.sub('0', messages[1]), name


@ENGINES
def test_not_finite(compiled):
    from dynamics_node import load_model
    model = load_model(urdf(link('base', ''),
                            link('a', inertial(1e-300, 1e-300, 1e-300, mass=1e-300)),
                            joint('j', 'base', 'a')), compiled=compiled)
    assert _raises(lambda: model.forward_dynamics([0.0], [0.0], [1e9])) == (
        "the accelerations are not finite at this input (largest relative to its bound: "
        "tau[0] = 1e+09 of joint 'j', bound 1e+09); the model's masses, inertias or ratios may "
        "be out of scale")


@ENGINES
def test_lcaba_not_positive(compiled):
    from dynamics_node import load_model
    model = load_model(urdf(link('base', ''), link('a', inertial(0, 0, 0, mass=0)),
                            link('b'), joint('j', 'base', 'a'), joint('k', 'a', 'b')),
                       compiled=compiled)
    message = _raises(lambda: model.forward_dynamics([0.0, 0.0], [0.0, 0.0], [0.0, 0.0],
                                                     method='lcaba'))
    assert 'is not positive definite' in message, message


def test_compiled_calls_never_run_the_numpy_checks(rng, monkeypatch):
    """The NumPy validation functions patched to fail wherever they are used: good and bad inputs
    of the compiled public calls get their results and errors without them."""
    model, q, v, yd = _state('linkage_leg', True, rng)
    tau = np.ones(model.ny)
    a = model.forward_dynamics(q, v, tau)
    expected = {'fd': a, 'id': model.inverse_dynamics(q, v, a),
                'H': model.mass_matrix(q), 'C': model.bias_forces(q, yd)}
    for module in (model_module, forward_module, numpy_engine, validation):
        for name in ('positions', 'vector', 'independent_velocities', 'check_finite'):
            if hasattr(module, name):
                monkeypatch.setattr(module, name,
                                    lambda *args, **kwargs: pytest.fail('a NumPy check ran'))
    np.testing.assert_array_equal(model.forward_dynamics(q, v, tau), expected['fd'])
    np.testing.assert_array_equal(model.forward_dynamics(list(q), list(v), tau), expected['fd'])
    np.testing.assert_array_equal(model.inverse_dynamics(q, v, a), expected['id'])
    np.testing.assert_array_equal(model.mass_matrix(q), expected['H'])
    np.testing.assert_array_equal(model.bias_forces(q, yd), expected['C'])
    model.gravity_forces(q.astype(np.float32))
    model.forward_dynamics(q, v, tau, method='lcaba', info=True)
    model.forward_dynamics(q, v, tau, method='aba', info=True)
    model.inverse_osim(q, [model.links[-1]])
    model.link_kinematics(q, v, [model.links[-1]])
    for call in (lambda: model.forward_dynamics(q[:-1], v, tau),
                 lambda: model.forward_dynamics(q, _with(v, 0, np.nan), tau),
                 lambda: model.forward_dynamics(q + 0.01, v, tau),
                 lambda: model.inverse_dynamics(q, v + 0.01, a),
                 lambda: model.inverse_dynamics(q, v, a + 0.01),
                 lambda: model.mass_matrix(_with(q, 0, np.inf)),
                 lambda: model.bias_forces(q, [0.0] * 3),
                 lambda: model.forward_dynamics(q, v, tau, method='lcaba', settings=None,
                                                wrenches={'no link': ((0, 0, 0), (0, 0, 0))})):
        _raises(call)
