"""The compiled contact routes (kernels/contact_dynamics.py: projected inverse dynamics, contact
bias forces and the exact route, one compiled call each) against the NumPy algorithms
(compiled=False) to round-off and against Pinocchio's constraintDynamics on the published trees;
their faults give the NumPy algorithms' messages."""

import re

import numpy as np
import pytest

from conftest import SEED
from dynamics_node import (bounds, Contact, ContactBiasInfo, InverseDynamicsInfo, load_model,
                           ModelError, SingularConfigurationError)
from test_contacts import (ARM, fused_calls, held_state, OFFSET, QUADRUPED_FEET, random_state,
                           REDUNDANT_FEET, ROBOTS, setup, spanning)

ROUND_OFF = 1e-12        # compiled against NumPy, relative to max(1, |NumPy's|)
PINOCCHIO = 1e-9         # against constraintDynamics
STATES = 3
CASES = [(name, ROBOTS[name][1]) for name in (
    'quadruped_rotors 3D feet', 'humanoid_belts 6D soles', 'linkage_leg 6D foot',
    'parallel_ankle_leg 6D foot', 'talos 6D feet', 'solo12 3D feet')] + [
    ('quadruped_rotors 3D feet', REDUNDANT_FEET),
    ('humanoid_belts 6D soles', [Contact('left_foot_sole', '6D'),
                                 Contact('right_foot_sole', '6D')])]
TREES = ['solo12 3D feet', 'anymal 3D feet', 'talos 6D feet', 'talos hands']


def relative(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def engines(name):
    """The compiled model and the NumPy one of a robot of test_contacts."""
    return setup(name, 'compiled')[0], setup(name, 'numpy')[0]


def same_result(compiled, numpy_result):
    """Every array of two infos (InverseDynamicsInfo, ContactBiasInfo, ForwardDynamicsInfo) agree
    to round-off; the floats too, but for residuals, round-off themselves: both below 1e-8."""
    assert type(compiled) is type(numpy_result)
    for name, value in vars(numpy_result).items():
        got = getattr(compiled, name)
        if isinstance(value, np.ndarray):
            assert relative(got, value) < ROUND_OFF, name
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], np.ndarray):
            assert [f.size for f in got] == [f.size for f in value], name
            assert relative(np.concatenate(got), np.concatenate(value)) < ROUND_OFF, name
        elif name.endswith('residual'):
            assert got < 1e-8 and value < 1e-8, name
        elif isinstance(value, float):
            assert abs(got - value) < ROUND_OFF * max(1.0, abs(value)) + 1e-15, name


def kept_state(model, contacts, rng):
    """A random q with velocities and accelerations that keep the contacts (those of
    contact_bias_forces, which the redundant sets allow too)."""
    q, yd, _ = random_state(model, rng)
    info = model.contact_bias_forces(q, yd, contacts, info=True)
    return q, info.velocities, info.accelerations


@pytest.mark.parametrize('name, contacts', CASES)
def test_projected_inverse_dynamics_against_numpy(name, contacts):
    """Weighted and at unit weights, with info or without: one fused call each once the first call
    resolved the contacts on the checked path (kept_state ran on the reference model)."""
    compiled, reference = load_model(ROBOTS[name][0]()), setup(name, 'numpy')[0]
    fused = fused_calls(compiled)
    rng = np.random.default_rng(SEED + 31)
    for _ in range(STATES):
        q, yd, ydd = kept_state(reference, contacts, rng)
        weights = np.exp(rng.uniform(-2, 2, compiled.ny))
        for w in (None, weights):
            expected = reference.inverse_dynamics(q, yd, ydd, contacts=contacts, weights=w,
                                                  info=True)
            got = compiled.inverse_dynamics(q, yd, ydd, contacts=contacts, weights=w, info=True)
            assert isinstance(got, InverseDynamicsInfo)
            same_result(got, expected)
        assert relative(compiled.inverse_dynamics(q, yd, ydd, contacts=contacts),
                        reference.inverse_dynamics(q, yd, ydd, contacts=contacts)) < ROUND_OFF
        assert relative(compiled.gravity_forces(q, contacts=contacts),
                        reference.gravity_forces(q, contacts=contacts)) < ROUND_OFF
    # the first call resolves the contacts on the checked path; then four fused calls a state
    assert fused.count('fused_inverse_dynamics') == 4 * STATES - 1


@pytest.mark.parametrize('name, contacts', CASES)
def test_contact_bias_forces_against_numpy(name, contacts):
    compiled, reference = engines(name)
    rng = np.random.default_rng(SEED + 37)
    for _ in range(STATES):
        q, yd, _ = random_state(reference, rng)
        weights = np.exp(rng.uniform(-2, 2, compiled.ny))
        expected = reference.contact_bias_forces(q, yd, contacts, weights=weights, info=True)
        got = compiled.contact_bias_forces(q, yd, contacts, weights=weights, info=True)
        assert isinstance(got, ContactBiasInfo)
        same_result(got, expected)
        assert np.array_equal(got.efforts, compiled.inverse_dynamics(
            q, got.velocities, got.accelerations, contacts=contacts, weights=weights))


EXACT = [name for name, _ in CASES[:6]] + ['anymal 3D feet', 'talos hands']


@pytest.mark.parametrize('name', EXACT)
def test_exact_route_against_numpy(name):
    compiled, reference = engines(name)
    contacts = ROBOTS[name][1]
    rng = np.random.default_rng(SEED + 41)
    for _ in range(STATES):
        q, yd, tau = random_state(reference, rng)
        for info in (True, False):
            expected = reference.forward_dynamics(q, yd, tau, contacts=contacts, method='aba',
                                                  info=info)
            got = compiled.forward_dynamics(q, yd, tau, contacts=contacts, method='aba',
                                            info=info)
            if info:
                same_result(got, expected)
            else:
                assert relative(got, expected) < ROUND_OFF


def pinocchio(name, q, v, tau):
    """(qdd, stacked contact forces) of pin.constraintDynamics on a tree of test_contacts, its
    proximal iterations refining the regularised KKT solve to convergence."""
    _, reference = setup(name)
    return reference.pinocchio(q, v, tau, iterations=20)


@pytest.mark.parametrize('name', TREES)
def test_compiled_routes_against_pinocchio(name):
    """The exact route's accelerations and forces are constraintDynamics'; the efforts of projected
    inverse dynamics and of contact_bias_forces, fed to constraintDynamics at their velocities,
    give back their accelerations and contact forces."""
    model, _ = setup(name)
    contacts = ROBOTS[name][1]
    rng = np.random.default_rng(SEED + 43)
    for _ in range(STATES):
        q, yd, tau = random_state(model, rng)
        v = spanning(model, q, yd)
        info = model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba', info=True)
        qdd, forces = pinocchio(name, q, v, tau)
        assert relative(info.acceleration, qdd) < PINOCCHIO
        assert relative(np.concatenate(info.contact_forces), forces) < 10 * PINOCCHIO
        q, yd, ydd = held_state(model, contacts, rng)
        held = model.inverse_dynamics(q, yd, ydd, contacts=contacts, info=True)
        qdd, forces = pinocchio(name, q, spanning(model, q, yd), held.efforts)
        assert relative(qdd, ydd) < PINOCCHIO
        assert relative(np.concatenate(held.contact_forces), forces) < 10 * PINOCCHIO
        bias = model.contact_bias_forces(q, rng.normal(size=model.ny), contacts, info=True)
        qdd, forces = pinocchio(name, q, bias.velocities, bias.efforts)
        assert relative(qdd, bias.accelerations) < PINOCCHIO
        assert relative(np.concatenate(bias.contact_forces), forces) < 10 * PINOCCHIO


def error(call):
    """The (type, message) a call raises."""
    with pytest.raises(ModelError) as raised:
        call()
    return type(raised.value), str(raised.value)


def both(name, call):
    """call(model) on the compiled and the NumPy model raises the same error."""
    compiled, reference = engines(name)
    expected = error(lambda: call(reference))
    assert error(lambda: call(compiled)) == expected
    return expected


def test_faults_give_the_same_messages():
    name = 'quadruped_rotors 3D feet'
    model, _ = engines(name)
    q, yd, tau = random_state(model, np.random.default_rng(SEED))
    one = [Contact('FL_foot', '3D')]
    for call in (lambda m: m.gravity_forces(q, contacts=one),
                 lambda m: m.contact_bias_forces(q, yd, one)):
        assert both(name, call)[1].startswith('no actuator torques produce this motion')
    assert 'a violates the contacts' in both(name, lambda m: m.inverse_dynamics(
        q, np.zeros(m.ny), np.ones(m.ny), contacts=one))[1]
    assert 'v moves the contacts' in both(name, lambda m: m.inverse_dynamics(
        q, yd, np.zeros(m.ny), contacts=one))[1]
    feet6 = [Contact(foot, '6D') for foot in QUADRUPED_FEET]           # redundant
    kind, message = both(name, lambda m: m.forward_dynamics(q, yd, tau, contacts=feet6,
                                                            method='aba'))
    assert kind is SingularConfigurationError and 'Delassus' in message
    # conflicting rows (test_contacts.test_conflicting_redundant_contacts): by how much the
    # accelerations of a D singular in exact arithmetic miss them is round-off
    side = [Contact('FL_foot', '6D'), Contact('HL_foot', '6D')]
    q72, yd72, tau72 = random_state(model, np.random.default_rng(72))

    def exact(m):
        return m.forward_dynamics(q72, yd72, tau72, contacts=side, method='aba')
    kinds, messages = zip(*(error(lambda: exact(m)) for m in engines(name)))
    assert kinds == (SingularConfigurationError,) * 2
    assert len({re.sub(r'by [0-9.e+-]+ relative', 'by x relative', m) for m in messages}) == 1
    assert 'miss the rows by' in messages[0]
    limit = bounds.CONTACT_ROWS_PER_BODY * (model.nb - 1)
    many = [Contact(QUADRUPED_FEET[i % 4], '3D', ((1e-3 * (i // 4), 0.0, 0.0), (0, 0, 0, 1)))
            for i in range(limit // 3 + 1)]
    for call in (lambda m: m.contact_bias_forces(q, yd, many),
                 lambda m: m.gravity_forces(q, contacts=many),
                 lambda m: m.forward_dynamics(q, yd, tau, contacts=many, method='aba')):
        assert 'more than the' in both(name, call)[1]
    assert 'rows on' in both(name, lambda m: m.forward_dynamics(
        q, yd, tau, contacts=many[:7], method='aba'))[1]


def test_singular_contact_jacobian_gives_the_same_message():
    """A stretched arm whose tip is held: no accelerations keep the contact, on both engines."""
    compiled, reference = load_model(ARM), load_model(ARM, compiled=False)
    tip = Contact('tip', '3D')
    messages = [error(lambda: m.contact_bias_forces(np.zeros(2), [1.0, 0.0], tip))
                for m in (compiled, reference)]
    assert messages[0] == messages[1] and 'loses rank' in messages[0][1]
    bent = [m.contact_bias_forces([0.0, 0.5], [1.0, 0.0], tip, info=True)
            for m in (compiled, reference)]
    same_result(*bent)


def test_repeated_calls_agree_bitwise():
    """The compiled routes keep their buffers per contact set: repeated calls give the same
    results."""
    model, _ = engines('quadruped_rotors 3D feet')
    contacts = [Contact(foot, '3D', OFFSET) for foot in QUADRUPED_FEET]
    q, yd, tau = random_state(model, np.random.default_rng(SEED + 47))
    first = model.contact_bias_forces(q, yd, contacts, info=True)
    exact = model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba')
    for _ in range(2):
        again = model.contact_bias_forces(q, yd, contacts, info=True)
        assert np.array_equal(again.efforts, first.efforts)
        assert np.array_equal(model.forward_dynamics(q, yd, tau, contacts=contacts,
                                                     method='aba'), exact)
