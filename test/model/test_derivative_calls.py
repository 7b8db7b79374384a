"""The public derivative calls (derivatives.py): both engines alike, spanning and independent
inputs alike, wrenches held in their link frames, info, the refusals by name (a dead point, a
redundant contact set) and bad inputs. The derivatives themselves are checked against Pinocchio and
the KKT oracle in test/algorithms/test_derivatives.py."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from conftest import assert_close, random_state, robot  # noqa: E402
from dynamics_node import Contact, ModelError, SingularConfigurationError  # noqa: E402
from published_robots import four_bar, near_dead_point  # noqa: E402

STEP = 1e-4
FD_RTOL = 1e-6


def central(f, h=STEP):
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


@pytest.mark.parametrize('name', ['linkage_leg', 'parallel_ankle_leg', 'delta', 'humanoid_belts',
                                  'quadruped_rotors'])
def test_engines_and_input_forms_agree(name, rng):
    """The compiled and the NumPy model give the same derivatives; spanning velocities,
    accelerations and forces give what independent ones give; info adds forward_dynamics'
    accelerations."""
    compiled, reference = robot(name, True), robot(name, False)
    q, yd, wrenches = random_state(compiled, rng)
    ydd, tau = rng.normal(size=compiled.ny), rng.normal(size=compiled.ny)
    v, a = compiled.spanning_velocities(q, yd), compiled.forward_dynamics(q, yd, tau)
    for model in (compiled, reference):
        expected = reference.inverse_dynamics_derivatives(q, yd, ydd, wrenches)
        for x, y in zip(model.inverse_dynamics_derivatives(q, yd, ydd, wrenches), expected):
            assert_close(x, y, 'inverse_dynamics_derivatives', 1e-12)
        ydd_of_a = a[model.independent_v]
        for x, y in zip(model.inverse_dynamics_derivatives(q, v, a),
                        reference.inverse_dynamics_derivatives(q, yd, ydd_of_a)):
            assert_close(x, y, 'spanning inputs', 1e-12)
        info = model.forward_dynamics_derivatives(q, v, tau, wrenches, info=True)
        assert_close(info.ydd, model.forward_dynamics(q, yd, tau, wrenches)[model.independent_v],
                     'info.ydd', 1e-12)
        for x, y in zip(info[:3], reference.forward_dynamics_derivatives(q, yd, tau, wrenches)):
            assert_close(x, y, 'forward_dynamics_derivatives', 1e-12)


def test_wrenches_are_held_in_their_link_frames(rng):
    """d/dq of inverse_dynamics with a wrench on a link, which turns with it: central differences
    of the public call along a completed motion of the independent positions."""
    model = robot('linkage_leg', False)
    q, yd, _ = random_state(model, rng)
    ydd = rng.normal(size=model.ny)
    wrenches = {model.links[-1]: (rng.normal(size=3), rng.normal(size=3))}
    d_y = model.inverse_dynamics_derivatives(q, yd, ydd, wrenches).dtau_dy
    y0 = q[model.independent_q]
    for l in range(model.ny):
        def tau(t):
            y = y0.copy()
            y[l] += t
            return model.inverse_dynamics(model.complete_positions(y), yd, ydd, wrenches)
        assert_close(d_y[:, l], central(tau), f'dtau/dy[:, {l}]', FD_RTOL)


@pytest.mark.parametrize('compiled', [True, False])
@pytest.mark.parametrize('side', [-1, 1])
def test_dead_point_is_refused_by_name(compiled, side):
    model, reference = four_bar(compiled)
    q, v, tau, _ = near_dead_point(model, reference, side)
    for call, x in ((model.forward_dynamics_derivatives, tau),
                    (model.inverse_dynamics_derivatives, np.array([0.3]))):
        with pytest.raises(SingularConfigurationError, match='amplif|singular') as error:
            call(q, v, x)
        assert 'lcaba' not in str(error.value), 'LCABA has no derivatives to offer'


@pytest.mark.parametrize('compiled', [True, False])
def test_redundant_contacts_are_refused_by_name(compiled):
    """Two 6D contacts on one sole: their forces are not determined."""
    model = robot('humanoid_belts', compiled)
    q = model.reference_positions
    zero = np.zeros(model.ny)
    shifted = ((0.1, 0, 0), (0, 0, 0, 1))
    feet = [Contact('left_foot_sole', '6D'), Contact('left_foot_sole', '6D', shifted)]
    with pytest.raises(SingularConfigurationError, match='left_foot_sole'):
        model.forward_dynamics_derivatives(q, zero, zero, contacts=feet)
    with pytest.raises(SingularConfigurationError, match='left_foot_sole'):
        model.inverse_dynamics_derivatives(q, zero, zero, contacts=feet)


@pytest.mark.parametrize('compiled', [True, False])
def test_contact_calls_name_faults_in_input_order(compiled):
    """With contacts (resolved before, so that the compiled engine's call is one compiled call),
    a bad q, v or a is named before a bad wrench, as inverse_dynamics names them."""
    model = robot('humanoid_belts', compiled)
    q, zero = model.reference_positions, np.zeros(model.ny)
    foot, bad_wrench = [Contact('left_foot_sole', '6D')], {'nowhere': ((0, 0, 1), (0, 0, 0))}
    model.inverse_dynamics_derivatives(q, zero, zero, contacts=foot)
    model.forward_dynamics_derivatives(q, zero, zero, contacts=foot)
    for call in (model.inverse_dynamics_derivatives, model.forward_dynamics_derivatives):
        for inputs, named in (((q[:-1], zero, zero), '^q has'), ((q, zero[:-1], zero), '^v has')):
            with pytest.raises(ModelError, match=named):
                call(*inputs, bad_wrench, foot)
        with pytest.raises(ModelError, match='unknown link'):
            call(q, zero, zero, bad_wrench, foot)


@pytest.mark.parametrize('call', ['inverse_dynamics_derivatives', 'forward_dynamics_derivatives'])
def test_bad_inputs_are_named(call):
    model = robot('linkage_leg', True)
    q, zero = model.reference_positions, np.zeros(model.ny)
    cases = [((q[:-1], zero, zero), 'q has'), ((q, zero[:-1], zero), 'v has'),
             ((q, zero, np.full(model.ny, np.nan)), 'not finite|NaN|nan'),
             ((q, zero, zero, {'nowhere': ((0, 0, 1), (0, 0, 0))}), 'unknown link'),
             ((q, zero, 'abc'), 'abc')]
    for arguments, message in cases:
        with pytest.raises(ModelError, match=message):
            getattr(model, call)(*arguments)
    q_open = q.copy()
    q_open[model.independent_q[0]] += 0.3                  # the loops no longer close
    with pytest.raises(ModelError, match='loop|clos|constraint'):
        getattr(model, call)(q_open, zero, zero)
