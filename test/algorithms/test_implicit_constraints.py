"""Implicit <constraint>s (residual expressions of joint positions) and Tello's differentials: the
bundled Tello robots against the Pinocchio + KKT oracle with the differentials written from their
derivation (tello.py, CasADi), the geometry against the derivation's inverse kinematics, the
expressions' exact derivatives against CasADi's, and every bad expression refused by name."""

import casadi
import numpy as np
import pytest

from conftest import assert_close, random_state, RTOL
from dynamics_node import bundled_model, load_model, ModelError, ProximalSettings
from dynamics_node.multibody.expressions import (DEPTH_LIMIT, directional, EXPONENT_LIMIT,
                                                 NODE_LIMIT, parse, TEXT_LIMIT)
from singular_loops import LCABA_RTOL
from tello import hip_rotors, knee_ankle_rotors, N, tello_oracle, TELLO_ROBOTS
from test_derivatives import assert_inverse_dynamics_derivatives, completed_state

STATES = 3


def tello(name, compiled=None):
    model = load_model(bundled_model(name), compiled=compiled)
    return model, tello_oracle(bundled_model(name), model.joint_names)


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
@pytest.mark.parametrize('name', TELLO_ROBOTS)
def test_tello_matches_kkt(name, compiled, rng):
    """FD (cluster ABA and LCABA), ID, H_y, Lambda^-1 and completion against the dense KKT oracle
    on Pinocchio's spanning tree with the differentials' phi from the derivation."""
    model, reference = tello(name, compiled)
    links = [link for link in model.links if link.endswith('foot')] + [model.links[2]]
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-11, 'completed q closes phi'
        G = reference.null_space_G(q, model.independent_v)
        v = model.spanning_velocities(q, yd)
        assert_close(v, G @ yd, 'qd = G yd')
        tau = rng.normal(size=model.nv)
        qdd = model.forward_dynamics(q, yd, tau, wrenches)
        assert_close(qdd, reference.forward_dynamics(q, v, tau, wrenches), 'qdd')
        info = model.forward_dynamics(q, v, tau, wrenches, method='lcaba', info=True)
        assert_close(info.acceleration, qdd, 'qdd LCABA', LCABA_RTOL)
        assert info.constraint_residual < ProximalSettings().tolerance, '|K qdd - k|'
        tau_y = model.inverse_dynamics(q, yd, qdd, wrenches)
        assert_close(tau_y, G.T @ tau, 'tau_y = G^T tau at the accelerations FD gave')
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')
        assert_close(model.inverse_osim(q, links), reference.osim_inverse(q, G, links),
                     'Lambda^-1')


@pytest.mark.parametrize('name', TELLO_ROBOTS)
def test_tello_inverse_dynamics_derivatives_match_central_differences(name, rng):
    model, reference = tello(name)
    assert_inverse_dynamics_derivatives(model, reference, *completed_state(model, reference, rng))


def test_differentials_follow_the_derivations_inverse_kinematics():
    """Rotor angles N y from the derivations' inverse kinematics for given joint angles complete
    to those joint angles."""
    model = load_model(bundled_model('tello_legs'))
    names = model.independent_joint_names
    for side in ('left', 'right'):
        for roll, pitch, knee, ankle in ((0.0, -0.1, 0.3, -0.1), (0.1, 0.2, 0.6, 0.2),
                                         (-0.15, -0.3, 0.9, -0.3)):
            y = np.zeros(model.ny)
            rotors = hip_rotors(roll, pitch) + knee_ankle_rotors(knee, ankle)
            for joint, rotor in zip((f'{side}-hip-clamp-to-hip-rotor-1',
                                     f'{side}-hip-clamp-to-hip-rotor-2',
                                     f'{side}-thigh-to-knee-ankle-rotor-1',
                                     f'{side}-thigh-to-knee-ankle-rotor-2'), rotors):
                y[names.index(joint)] = N * rotor
            q = dict(zip(model.joint_names, model.complete_positions(y)))
            assert_close([q[f'{side}-hip-clamp-to-gimbal'], q[f'{side}-gimbal-to-thigh'],
                          q[f'{side}-thigh-to-shin'], q[f'{side}-shin-to-foot']],
                         [roll, pitch, knee, ankle], 'joint angles', RTOL)


def test_node_inputs_are_the_motors():
    """Tello's independent coordinates are its ten motors; the joints follow."""
    model = load_model(bundled_model('tello_legs'))
    assert len(model.actuated_joint_names) == 10
    assert all('rotor' in name for name in model.actuated_joint_names)


# ---------------------------------------------------------------------------- expressions

EXPRESSION = ('57 * sin(r / 6) / 2500 - 8 * cos(a) * sin(b) ^ 2 / 625 + atan2(a - 0.3, b + 2) '
              '- sqrt(2 + a * b) ** 3 / (1 + b * b) + tanh(r) * exp(-a) - acos(0.3 * a) '
              '+ log(3 + cosh(b)) - asin(a / 4) + atan(r * b) + tan(0.2 * b) - -a / +sinh(1 + b) '
              '+ e ^ pi * a')


def casadi_expression(x):
    r, a, b = x[0], x[1], x[2]
    s = casadi
    return (57 * s.sin(r / 6) / 2500 - 8 * s.cos(a) * s.sin(b) ** 2 / 625
            + s.atan2(a - 0.3, b + 2) - s.sqrt(2 + a * b) ** 3 / (1 + b * b)
            + s.tanh(r) * s.exp(-a) - s.acos(0.3 * a) + s.log(3 + s.cosh(b)) - s.asin(a / 4)
            + s.atan(r * b) + s.tan(0.2 * b) + a / s.sinh(1 + b) + np.e ** np.pi * a)


def test_expression_derivatives_match_casadi(rng):
    """Value, gradient, second and third directional derivatives of every function and operation
    against CasADi's symbolic differentiation, at random points and directions (atan2 on both
    sides of |y| = |x|)."""
    tape = parse(EXPRESSION, ['r', 'a', 'b'], 'test')
    x = casadi.SX.sym('x', 3)
    f = casadi_expression(x)
    g = casadi.gradient(f, x)
    H = casadi.jacobian(g, x)
    T = casadi.vertcat(*[casadi.jacobian(H[:, i], x) for i in range(3)])
    exact = casadi.Function('exact', [x], [f, g, H, T])
    for point in rng.uniform(-1, 1, (8, 3)):
        delta, u, w = rng.normal(size=(3, 3))
        f0, g0, H0, T0 = (np.array(v) for v in exact(point))
        third = np.einsum('ijk,i,j,k', T0.reshape(3, 3, 3), delta, u, w)
        assert_close(directional(tape, point, ())[0], f0.item(), 'value', 1e-13)
        assert_close([directional(tape, point, (e,))[1] for e in np.eye(3)], g0.reshape(-1),
                     'gradient', 1e-12)
        assert_close(directional(tape, point, (u, w))[3], u @ H0 @ w, 'd2 phi[u, w]', 1e-12)
        assert_close(directional(tape, point, (delta, u, w))[7], third, 'd3 phi[delta, u, w]',
                     1e-11)
        assert_close(directional(tape, point, (delta, u, w))[0], f0.item(), 'value', 1e-13)


@pytest.mark.parametrize('text, message', [
    ('a +', r'unexpected end at character 4'),
    ('foo(a)', r"unknown name 'foo' at character 1"),
    ('a $ b', r'an unexpected character at character 3'),
    ('a ^ b', r'a power with a variable exponent'),
    (f'a ^ {EXPONENT_LIMIT + 1}', r'the exponent 17 .*expected a magnitude up to 16'),
    ('1 / 0 + a', r'a quotient of constants is undefined'),
    ('sqrt(-1) + a', r'sqrt of constants is undefined'),
    ('exp(1000) * a', r'exp of constants is undefined'),
    ('1e400 * a', r"the number '1e400'"),
    ('2e9 * a', r"the number '2e9' .*expected a magnitude up to 1e\+09"),
    ('3', r'a residual without a variable'),
    ('', r'the residual is empty'),
    ('(' * (DEPTH_LIMIT + 1) + 'a' + ')' * (DEPTH_LIMIT + 1), r'nesting deeper than 32'),
    ('-' * (DEPTH_LIMIT + 1) + 'a', r'nesting deeper than 32'),
    ('a' + ' ' * TEXT_LIMIT, r'the residual has 4097 characters; at most 4096'),
    ('a' + '*a' * NODE_LIMIT, r'more than 1024 operations'),
    ('atan2(a)', r"unexpected '\)' at character 8.*expected ','"),
    ('sin a', r"unexpected 'a' at character 5.*expected '\('"),
    ('a b', r"unexpected 'b' at character 3.*expected an operator or the end"),
    ('__import__(a)', r"unknown name '__import__'"),
    ('__import__("os")', r'an unexpected character at character 12'),
])
def test_bad_expressions_are_refused_by_name(text, message):
    with pytest.raises(ModelError, match=r"constraint 'c' <residual> 1: " + message):
        parse(text, ['a', 'b'], "constraint 'c' <residual> 1")


def test_fuzzed_expressions_give_model_errors_or_finite_tapes(rng):
    """Random token strings parse into a tape or are refused by name; a tape evaluates to its 8
    components along three directions (NaN outside its domain), never raises."""
    tokens = ['a', 'b', 'pi', 'e', '1', '0', '2.5e3', '1e-9', '+', '-', '*', '/', '^', '**', '(',
              ')', ',', 'sin', 'sqrt', 'log', 'atan2', 'exp', 'tan', ' ', 'x', '@', '1e99']
    parsed = 0
    for _ in range(3000):
        text = ''.join(rng.choice(tokens, rng.integers(1, 12)))
        try:
            tape = parse(text, ['a', 'b'], 'fuzz')
        except ModelError as error:
            assert str(error).startswith('fuzz: ')
            continue
        parsed += 1
        components = directional(tape, rng.normal(size=2), rng.normal(size=(3, 2)))
        assert len(components) == 8 and all(isinstance(c, float) for c in components)
    assert parsed > 20


def tello_with(residual):
    """tello_legs with the knee of the left knee-ankle differential given by residual."""
    text = open(bundled_model('tello_legs')).read()
    knee = '<residual>a - (r2 / 6) / 2 - (r1 / 6) / 2</residual>'
    assert knee in text
    return text.replace(knee, f'<residual>{residual}</residual>', 1)


@pytest.mark.parametrize('change, message', [
    (lambda t: tello_with('log(a) - r1 / 12 - r2 / 12'),
     r"constraint 'left-knee-ankle-differential' <residual> 2 or its gradient is not finite at "
     r'the zero position'),
    (lambda t: tello_with('1 / a + r1'), r'<residual> 2 or its gradient is not finite'),
    (lambda t: tello_with('a - c'), r"<residual> 2: unknown name 'c'"),
    (lambda t: t.replace('joint="left-shin-to-foot"', 'joint="nowhere"', 1),
     r"constraint 'left-knee-ankle-differential' names unknown joint 'nowhere'"),
    (lambda t: t.replace('name="left-shin-to-foot" type="revolute"',
                         'name="left-shin-to-foot" type="fixed"', 1),
     r"constraint 'left-knee-ankle-differential' involves fixed joint 'left-shin-to-foot'"),
    (lambda t: t.replace('joint="left-shin-to-foot"', 'joint="left-thigh-to-shin"', 1),
     r"joint of a variable 'left-thigh-to-shin' is named twice"),
    (lambda t: t.replace('<variable name="b" joint="left-shin-to-foot"/>',
                         '<variable name="2b" joint="left-shin-to-foot"/>', 1),
     r'<variable name="2b" joint="left-shin-to-foot">; expected an identifier'),
    (lambda t: t.replace('<constraint name="left-hip-differential">',
                         '<constraint name="left-hip-clamp-transmission">', 1),
     r"duplicate constraint \(<loop>/<coupling>/<constraint>\) name "),
])
def test_bad_constraints_are_refused_by_name(change, message):
    with pytest.raises(ModelError, match=message):
        load_model(change(open(bundled_model('tello_legs')).read()))


def test_outside_the_domain_is_refused_by_name():
    """A differential driven past its expression's domain: completion, and positions there, are
    refused by name, never NaN."""
    model = load_model(tello_with('sqrt(1 + a) - 1 - r1 / 12 - r2 / 12'))
    y = np.zeros(model.ny)
    for joint in ('left-thigh-to-knee-ankle-rotor-1', 'left-thigh-to-knee-ankle-rotor-2'):
        y[model.independent_joint_names.index(joint)] = -20.0
    with pytest.raises(ModelError, match=r"cannot close the constraints "
                                         r"\['left-knee-ankle-differential'\]"):
        model.complete_positions(y)
    q = model.reference_positions
    q[model.joint_names.index('left-thigh-to-shin')] = -1.5
    with pytest.raises(ModelError, match=r"q violates constraint 'left-knee-ankle-differential' "
                                         r"of cluster '.*' by inf"):
        model.forward_dynamics(q, np.zeros(model.ny), np.zeros(model.ny))
