"""Seeded fuzzing of the input rule: every public call returns finite numbers or raises ModelError,
never anything else and never hangs, and a failed call leaves no trace (a good call after it
returns what it returns on a fresh model). The same for Extended URDF pairs (URDF + YAML closures),
the console script extended_urdf_to_urdfplus (exit status 0, or 1 with one line on stderr), scenes
(compose: XML text or ModelError) and the node's parameter checks and joint_states name lists.

The suite runs a few hundred cases; ``python test/model/test_fuzz.py --descriptions 5000
--calls 5000 --pairs 3000 --joint-calls 3000 --scripts 50 --node 3000 --scenes 3000`` runs a bigger
campaign and prints the counts of each outcome and the slowest case of each kind.
"""

import argparse
import collections
from decimal import Decimal
from fractions import Fraction
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

from lxml import etree
import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from conftest import assert_close, random_independent_positions, random_state, SEED  # noqa: E402
from dynamics_node import (bundled_extended_urdf, bundled_model, bundled_models,  # noqa: E402
                           compose, Contact, load_model, ModelError, Part, ProximalSettings)
from dynamics_node.description.scenes import box  # noqa: E402
# spherical, planar, universal joints
from joint_type_models import MODELS as JOINT_TYPE_MODELS  # noqa: E402

HANG = 30.0             # seconds: a case that takes longer hangs (times are printed, not asserted)
BASES = tuple(bundled_models())
# Attribute values an attacker or a broken exporter could write.
VALUES = ('1e308', '-1e308', '1e-320', 'nan', 'inf', '-inf', '-1', '0', '', '   ', 'garbage',
          '1 2', '1 2 3 4', '\u00e9\u4e2d\u202e', '1e154 1e154 1e154', '1e308 1e308 0',
          '1e-300 0 0', '5e-324 0 0', 'x' * 100000,
          '9' * 400, '0x1p3', '1e4', '-1e4', '2e6', '1e-5', '3', 'true', 'false', 'floating',
          'fixed', 'prismatic', 'continuous', 'revolute', 'ball', '0 0 1', '1 0 0', '0.1 0.2 0.3')


# Numbers for numeric attributes: overflowing, tiny, negative, non-finite, near and beyond the
# bounds.
NUMBERS = ('1e308', '-1e308', '1e200', '1e154', '1e-320', '1e-300', 'nan', 'inf', '-inf', '-1',
           '0', '-0', '9' * 400, '1e3', '1e4', '-1e4', '1e5', '2e6', '1e9', '1e10', '1e-4', '1e-5',
           '3')


def mutate(text, rng):
    """One to three mutations of a URDF+ text: mostly one number of a numeric attribute replaced,
    else any attribute replaced, elements dropped, duplicated, renamed or re-linked; one case in
    eight is further damaged as bytes."""
    root = etree.fromstring(text.encode())
    for _ in range(1 + int(rng.exponential(0.7))):
        elements = [e for e in root.iter() if isinstance(e.tag, str)]
        numeric = [(e, key) for e in elements for key, value in e.attrib.items()
                   if _is_numbers(value)]
        element = elements[rng.integers(len(elements))]
        operation = rng.integers(10)
        if operation <= 4 and numeric:
            element, key = numeric[rng.integers(len(numeric))]
            values = element.get(key).split()
            values[rng.integers(len(values))] = NUMBERS[rng.integers(len(NUMBERS))]
            element.set(key, ' '.join(values))
        elif operation == 5 and element.attrib:
            attribute = sorted(element.attrib)[rng.integers(len(element.attrib))]
            element.set(attribute, VALUES[rng.integers(len(VALUES))])
        elif operation == 6 and element is not root:
            element.getparent().remove(element)
        elif operation == 7 and element is not root:
            element.addnext(etree.fromstring(etree.tostring(element)))
        elif operation == 8 and element is not root:
            element.tag = ('link', 'joint', 'loop', 'coupling', 'origin', 'axis', 'mimic',
                           'inertial')[rng.integers(8)]
        else:
            names = [e.get('name') for e in root.iter('link') if e.get('name')] + ['nowhere']
            references = [e for e in root.iter() if e.get('link') is not None]
            if references:
                references[rng.integers(len(references))].set('link',
                                                              names[rng.integers(len(names))])
    data = etree.tostring(root)
    if rng.integers(8) == 0:
        data = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(len(data)))
            data[i:i + 1] = (bytes([rng.integers(256)]), b'', b'\xff\xfe', b'<',
                             b'\x00')[rng.integers(5)]
        return bytes(data)
    return data.decode()


def _is_numbers(text):
    try:
        return bool([float(x) for x in text.split()])
    except ValueError:
        return False


class Outcomes(collections.Counter):
    """Counts of each outcome; a failure records the call and its exception, so that a broken rule
    can be reproduced."""

    def __init__(self):
        super().__init__()
        self.failures = []
        self.slowest = {}          # kind -> (seconds, label)

    def run(self, label, call, kind='call'):
        """The outcome of call(), counted as '<kind> <outcome>' (kind 'load' for load_model, 'call'
        for a call under test, 'good call' for the calls between them): its result, or None after a
        ModelError."""
        start = time.perf_counter()
        try:
            result = call()
        except ModelError:
            outcome, result = 'ModelError', None
        except Exception as error:         # the rule under test: anything else is a defect
            outcome, result = 'other', None
            self.failures.append(f'{label}: {type(error).__name__}: {str(error)[:200]}')
        else:
            outcome = 'loaded' if kind == 'load' else 'finite'
            if kind != 'load' and not all(np.isfinite(np.asarray(x, dtype=float)).all()
                                          for x in _arrays(result)):
                outcome = 'non-finite'
                self.failures.append(f'{label}: non-finite result')
        self.timed(kind, label, start)
        self[f'{kind} {outcome}'] += 1
        return result

    def timed(self, kind, label, start):
        """Keep the slowest case of each kind; one that hangs (HANG) is a failure."""
        elapsed = time.perf_counter() - start
        if elapsed > self.slowest.get(kind, (0.0,))[0]:
            self.slowest[kind] = (elapsed, label)
        if elapsed > HANG:
            self.failures.append(f'{label}: {elapsed:.2f} s')


def _arrays(result):
    if isinstance(result, tuple):
        return result
    if hasattr(result, 'efforts'):               # InverseDynamicsInfo, ContactBiasInfo
        return (result.efforts, *result.contact_forces,
                *(getattr(result, name) for name in ('velocities', 'accelerations')
                  if hasattr(result, name)))
    acceleration = getattr(result, 'acceleration', None)
    return (result,) if acceleration is None else (acceleration, *result.multipliers.values(),
                                                   *result.contact_forces)


# the whole-body calls (whole_body.py) and their arguments
WHOLE_BODY_CALLS = {'center_of_mass': 'q', 'potential_energy': 'q',
                    'centroidal_momentum_matrix': 'q', 'center_of_mass_jacobian': 'q',
                    'centroidal_momentum': 'qv', 'centroidal_bias': 'qv', 'kinetic_energy': 'qv',
                    'coriolis_matrix': 'qv', 'regressor': 'qva'}
# the derivative calls (derivatives.py): the third argument a or tau
DERIVATIVE_CALLS = {'inverse_dynamics_derivatives': 'qva', 'forward_dynamics_derivatives': 'qva'}
ARRAY_CALLS = {**WHOLE_BODY_CALLS, **DERIVATIVE_CALLS}


def exercise(model, rng, outcomes, label):
    """The public calls on a loaded (maybe odd) model at a random state."""
    q_ind = random_independent_positions(model, rng)
    q = outcomes.run(f'{label} complete_positions', lambda: model.complete_positions(q_ind))
    if q is None:
        q = np.zeros(model.nq)                    # may violate the loops: ModelError is the answer
    v, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    link = model.links[-1]
    outcomes.run(f'{label} forward_dynamics',
                 lambda: model.forward_dynamics(q, v, tau, {link: ((0, 0, 1), (0, 0, 0))}))
    outcomes.run(f'{label} lcaba',
                 lambda: model.forward_dynamics(q, v, tau, method='lcaba', info=True))
    outcomes.run(f'{label} inverse_dynamics', lambda: model.inverse_dynamics(q, v, tau))
    outcomes.run(f'{label} mass_matrix', lambda: model.mass_matrix(q))
    outcomes.run(f'{label} inverse_osim', lambda: model.inverse_osim(q, model.links[-2:]))
    outcomes.run(f'{label} link_pose', lambda: model.link_pose(q, link))
    outcomes.run(f'{label} link_jacobian', lambda: model.link_jacobian(q, link))
    outcomes.run(f'{label} link_bias_acceleration',
                 lambda: model.link_bias_acceleration(q, v, link))
    outcomes.run(f'{label} link_kinematics', lambda: model.link_kinematics(q, v, model.links))
    for name, arguments in ARRAY_CALLS.items():
        outcomes.run(f'{label} {name}',
                     lambda: getattr(model, name)(*(q, v, tau)[:len(arguments)]))
    outcomes.run(f'{label} inertial_parameters',
                 lambda: (model.inertial_parameters, np.array([model.total_mass])))


def fuzz_descriptions(count, seed, outcomes, compiled=True):
    rng = np.random.default_rng(seed)
    load_model(bundled_model('four_bar')).warm_up()     # compiling the kernels is no call's time
    texts = {name: _text(bundled_model(name)) for name in BASES}
    for case in range(count):
        name = BASES[rng.integers(len(BASES))]
        source = mutate(texts[name], rng)
        model = outcomes.run(f'description {case} ({name})', lambda: load_model(source, compiled),
                             kind='load')
        if model is not None:
            exercise(model, rng, outcomes, f'description {case} ({name})')


def _text(source):
    """The XML of a bundled robot (a path, or the URDF+ converted from an Extended URDF)."""
    if source.lstrip().startswith('<'):
        return source
    with open(source) as file:
        return file.read()


def hostile_vector(rng, n):
    """A hostile argument where a vector of n numbers is expected."""
    choices = (None, 'abc', 1j, [1j] * n, 10 ** 400, [10 ** 400] * n, [np.nan] * n, [np.inf] * n,
               [1e308] * n, [1e200] * n, np.full(n, 1e7), [], [0.0] * (n + 1), [[0.0] * n],
               {'a': 1}, [None] * n, np.zeros(n, complex), np.ones(n, bool), object(),
               np.array(['1'] * n), range(n),
               np.full(n, 1e-320), np.full(n, -1e5, np.float32), [[0.0], [0.0, 0.0]],
               np.zeros((n, 2)))
    value = choices[rng.integers(len(choices))]
    if rng.integers(3) == 0:                      # one bad entry in a good vector
        value = [0.0] * n
        value[rng.integers(n)] = (np.nan, -np.inf, 1e300, 10 ** 400, 2j, 'x', None,
                                  1e9)[rng.integers(8)]
    return value


def hostile_call(model, state, rng):
    """(label, call): one public call with one argument replaced by a hostile value."""
    q, yd, wrenches = state
    link = model.links[-1]
    hostile = {
        'wrenches': ([1, 2], {link: 5}, {'nowhere': ((0, 0, 1), (0, 0, 0))},
                     {link: ((1e10, 0, 0), (0, 0, 0))},
                     {link: ('abc', (0, 0, 0))}, {link: ((np.nan, 0, 0), (0, 0, 0))},
                     {5: ((0, 0, 1), (0, 0, 0))}, {link: ((1, 2), (3, 4))}, {link: None}, 'abc',
                     {(1, 2): 3}),
        'links': (None, [], ['nowhere'], [[link]], [link] * 2, 5, [5], 'nowhere', [link] * 2000,
                  {link: 1}),
        'method': (np.array(['aba', 'x']), 5, None, 'ABA', ['aba'], b'aba'),
        'settings': ('x', 5, {'mu': 1e6}),
    }

    def by_name():
        """The actuated joints' positions by name, one of them hostile, missing, renamed or
        joined by a hostile name."""
        names = list(model.actuated_joint_names) + [model.floating_base_joint] * \
            bool(model.floating_base_joint)
        sizes = {name: model.nq_body[model.joint_names.index(name) + 1] for name in names}
        mapping = {name: [0.0] * (sizes[name] - 1) + [1.0] for name in names}
        victim = names[rng.integers(len(names))]
        case = rng.integers(4)
        if case == 0:
            mapping[victim] = hostile_vector(rng, sizes[victim])
        elif case == 1:
            del mapping[victim]
        else:
            mapping[(None, 5, 'nowhere' * 100, model.joint_names[-1], b'x', 1.5)[
                rng.integers(6)] if case == 2 else victim + '_'] = 0.0
        return mapping

    def pick(kind):
        return hostile[kind][rng.integers(len(hostile[kind]))]

    def contacts():
        """Contacts built from hostile parts (a bad part raises ModelError as it is built)."""
        parts = {'link': (link, model.links[0], 'nowhere', 5, None, 'x' * 200),
                 'kind': ('3D', '6D', '2D', None, 6),
                 'placement': (None, ((0, 0, 0.1), (0, 0, 0, 1)), ((0, 0), (0, 0, 0, 1)),
                               ((0, 0, np.nan), (0, 0, 0, 1)), ((0, 0, 0), (0, 0, 0, 2)), 'abc',
                               ((1e300, 0, 0), (0, 0, 0, 1)), (0, 0, 0)),
                 'other': (None, None, model.links[0], model.links[len(model.links) // 2], 5)}
        made = [Contact(*(value[rng.integers(len(value))] for value in parts.values()))
                if rng.integers(3) == 0 else
                Contact(model.links[rng.integers(len(model.links))], ('3D', '6D')[rng.integers(2)])
                for _ in range(rng.integers(1, 4))]
        choice = rng.integers(8)
        if choice == 7:                           # more rows than any model takes (bounds.py)
            return [Contact(link, '3D', ((1e-4 * i, 0, 0), (0, 0, 0, 1))) for i in range(20_000)]
        return (made, made, made, made[0], made * 2, 'abc', [made[0], 5])[choice]

    def whole_body_call(name, arguments, hostile):
        """A whole-body call with its argument hostile replaced."""
        sizes = {'q': model.nq, 'v': model.nv, 'a': model.ny}
        good = {'q': q, 'v': yd, 'a': yd}
        return lambda: getattr(model, name)(*(
            hostile_vector(rng, sizes[argument]) if argument == hostile else good[argument]
            for argument in arguments))

    q_ind = _independent_positions(model, q)
    calls = [
        ('forward_dynamics q',
         lambda: model.forward_dynamics(hostile_vector(rng, model.nq), yd, yd)),
        ('forward_dynamics v',
         lambda: model.forward_dynamics(q, hostile_vector(rng, model.ny), yd)),
        ('forward_dynamics tau',
         lambda: model.forward_dynamics(q, yd, hostile_vector(rng, model.ny))),
        ('forward_dynamics wrenches', lambda: model.forward_dynamics(q, yd, yd, pick('wrenches'))),
        ('forward_dynamics method',
         lambda: model.forward_dynamics(q, yd, yd, method=pick('method'))),
        ('forward_dynamics settings',
         lambda: model.forward_dynamics(q, yd, yd, method='lcaba', settings=pick('settings'))),
        ('ProximalSettings',
         lambda: model.forward_dynamics(q, yd, yd, method='lcaba', settings=ProximalSettings(
            **{('mu', 'tolerance', 'max_iterations')[rng.integers(3)]: hostile_vector(rng, 1)}))),
        ('forward_dynamics contacts',
         lambda: model.forward_dynamics(q, yd, yd, contacts=contacts(),
                                        method=('aba', 'lcaba', 'auto')[rng.integers(3)],
                                        info=True)),
        ('inverse_dynamics contacts',
         lambda: model.inverse_dynamics(q, yd, yd, contacts=contacts(), info=True,
                                        weights=(None, hostile_vector(rng, model.ny))[
                                            rng.integers(2)])),
        ('gravity_forces contacts', lambda: model.gravity_forces(q, contacts=contacts())),
        ('forward_dynamics_derivatives contacts',
         lambda: model.forward_dynamics_derivatives(q, yd, yd, contacts=contacts(), info=True)),
        ('inverse_dynamics_derivatives contacts',
         lambda: model.inverse_dynamics_derivatives(q, yd, yd, contacts=contacts(),
                                                    weights=(None, hostile_vector(rng, model.ny))[
                                                        rng.integers(2)])),
        ('inverse_dynamics_derivatives wrenches',
         lambda: model.inverse_dynamics_derivatives(q, yd, yd, pick('wrenches'))),
        ('forward_dynamics_derivatives wrenches',
         lambda: model.forward_dynamics_derivatives(q, yd, yd, pick('wrenches'))),
        ('contact_bias_forces contacts',
         lambda: model.contact_bias_forces(q, yd, contacts(), info=True,
                                           weights=(None, hostile_vector(rng, model.ny))[
                                               rng.integers(2)])),
        ('contact_bias_forces v',
         lambda: model.contact_bias_forces(q, hostile_vector(rng, model.nv), contacts())),
        ('inverse_dynamics a',
         lambda: model.inverse_dynamics(q, yd, hostile_vector(rng, model.nv))),
        ('inverse_dynamics wrenches', lambda: model.inverse_dynamics(q, yd, yd, pick('wrenches'))),
        ('bias_forces v', lambda: model.bias_forces(q, hostile_vector(rng, model.nv))),
        ('gravity_forces q', lambda: model.gravity_forces(hostile_vector(rng, model.nq))),
        ('mass_matrix q', lambda: model.mass_matrix(hostile_vector(rng, model.nq))),
        ('inverse_osim links', lambda: model.inverse_osim(q, pick('links'))),
        ('link_pose link', lambda: model.link_pose(q, pick('links'))),
        ('link_jacobian link', lambda: model.link_jacobian(q, pick('links'))),
        ('link_bias_acceleration link',
         lambda: model.link_bias_acceleration(q, yd, pick('links'))),
        ('link_bias_acceleration v',
         lambda: model.link_bias_acceleration(q, hostile_vector(rng, model.nv), model.links[-1])),
        ('link_kinematics links', lambda: model.link_kinematics(q, yd, pick('links'))),
        ('link_kinematics v',
         lambda: model.link_kinematics(q, hostile_vector(rng, model.nv), model.links)),
        ('complete_positions', lambda: model.complete_positions(hostile_vector(rng, q_ind.size))),
        ('complete_positions budget',
         lambda: model.complete_positions(q_ind, budget_ms=hostile_vector(rng, 1))),
        ('complete_positions by name', lambda: model.complete_positions(by_name())),
        ('spanning_velocities',
         lambda: model.spanning_velocities(q, hostile_vector(rng, model.ny))),
        ('gravity', lambda: _set_gravity(model, hostile_vector(rng, 3))),
        ('center_of_mass v', lambda: model.center_of_mass(q, hostile_vector(rng, model.ny))),
        ('base_parameters states',
         lambda: model.base_parameters([(q, yd, yd), (q, yd, hostile_vector(rng, model.nv))])),
    ] + [(f'{name} {argument}', whole_body_call(name, arguments, argument))
         for name, arguments in ARRAY_CALLS.items() for argument in arguments]
    return calls[rng.integers(len(calls))]


def _set_gravity(model, value):
    model.gravity = value
    return model.gravity


def good_results(model, state):
    """Results of good calls, compared between a fuzzed model and a fresh one."""
    q, yd, wrenches = state
    return {'forward_dynamics': model.forward_dynamics(q, yd, yd, wrenches),
            'lcaba': model.forward_dynamics(q, yd, yd, wrenches, method='lcaba'),
            'inverse_dynamics': model.inverse_dynamics(q, yd, yd, wrenches),
            'mass_matrix': model.mass_matrix(q),
            'inverse_osim': model.inverse_osim(q, model.links[-2:]),
            'gravity': model.gravity,
            'centroidal_momentum_matrix': model.centroidal_momentum_matrix(q),
            'centroidal_bias': model.centroidal_bias(q, yd),
            'coriolis_matrix': model.coriolis_matrix(q, yd),
            'regressor': model.regressor(q, yd, yd),
            'inverse_dynamics_derivatives': np.stack(
                model.inverse_dynamics_derivatives(q, yd, yd, wrenches)),
            'forward_dynamics_derivatives': np.stack(
                model.forward_dynamics_derivatives(q, yd, yd, wrenches))}


def fuzz_calls(count, seed, outcomes, compiled=True, sources=None):
    """Hostile calls on robots (sources: name -> description; default: the bundled robots), one
    model per robot taking all of them. After each failed call, good calls must return what they
    return on a fresh model, and completing positions again must give back the positions completed
    just before (no poisoned warm start)."""
    rng = np.random.default_rng(seed)
    load_model(bundled_model('four_bar')).warm_up()
    sources = sources or {name: bundled_model(name) for name in BASES}
    names = tuple(sources)
    models = {name: (load_model(sources[name], compiled), load_model(sources[name], compiled))
              for name in names}
    for case in range(count):
        name = names[case % len(names)]
        model, fresh = models[name]
        state = random_state(fresh, np.random.default_rng(case))
        q_ind = _independent_positions(fresh, state[0])
        # A good completion may fail where an earlier successful hostile one moved the warm start
        # far away.
        before = outcomes.run(f'call {case} ({name}) complete_positions',
                              lambda: model.complete_positions(q_ind), kind='good call')
        label, call = hostile_call(model, state, rng)
        label = f'call {case} ({name}) {label}'
        if outcomes.run(label, call) is None:
            if before is not None:
                assert_close(model.complete_positions(q_ind), before,
                             f'{label}, then complete_positions', 1e-12)
            expected, actual = good_results(fresh, state), good_results(model, state)
            for key in expected:
                assert_close(actual[key], expected[key], f'{label}, then {key}', rtol=1e-12)
        model.gravity = fresh.gravity         # a successful hostile gravity is legitimate: undo it


def _independent_positions(model, q):
    """The independent entries of spanning positions q (7 for a floating joint)."""
    names = set(model.independent_joint_names)
    return np.concatenate([q[model.idx_q[i]:model.idx_q[i] + model.nq_body[i]]
                           for i in range(1, model.nb)
                           if model.joint_names[i - 1] in names])


@pytest.mark.parametrize('compiled, count', [(True, 400), (False, 150)],
                         ids=['compiled', 'reference'])
def test_fuzzed_descriptions_follow_the_rule(compiled, count):
    outcomes = Outcomes()
    fuzz_descriptions(count, SEED, outcomes, compiled)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['load loaded'] > count / 8
            and outcomes['load ModelError'] > count / 4), dict(outcomes)
    assert (outcomes['call finite'] > count / 2
            and outcomes['call ModelError'] > count / 40), dict(outcomes)


@pytest.mark.parametrize('compiled, count', [(True, 400), (False, 100)],
                         ids=['compiled', 'reference'])
def test_hostile_calls_follow_the_rule_and_leave_no_trace(compiled, count):
    outcomes = Outcomes()
    fuzz_calls(count, SEED, outcomes, compiled)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['call ModelError'] > 0.75 * count
            and outcomes['good call finite'] > 0.75 * count), dict(outcomes)


@pytest.mark.parametrize('compiled, count', [(True, 150), (False, 40)],
                         ids=['compiled', 'reference'])
def test_hostile_calls_on_spherical_planar_universal_joints(compiled, count):
    outcomes = Outcomes()
    fuzz_calls(count, SEED, outcomes, compiled, JOINT_TYPE_MODELS)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['call ModelError'] > 0.75 * count
            and outcomes['good call finite'] > 0.75 * count), dict(outcomes)


def fuzz_parameters(count, seed, outcomes):
    """load_model(inertial_parameters=...) with hostile vectors, and with one block of a good
    vector scaled, negated or skewed: a model whose parameters are those given, or ModelError."""
    rng = np.random.default_rng(seed)
    names = ('linkage_leg', 'ambidex_wrist', 'quadruped_rotors')
    good = {name: load_model(bundled_model(name), False).inertial_parameters for name in names}
    for case in range(count):
        name = names[case % len(names)]
        pi = good[name].copy()
        if rng.integers(2) == 0:
            pi = hostile_vector(rng, pi.size)
        else:
            block = 10 * rng.integers(pi.size // 10)
            pi[block + rng.integers(10)] *= (-1.0, 0.0, 1e3, -1e-3, 1e9)[rng.integers(5)]
        model = outcomes.run(f'parameters {case} ({name})', lambda: load_model(
            bundled_model(name), False, inertial_parameters=pi), kind='load')
        if model is not None:
            assert_close(model.inertial_parameters, np.asarray(pi, float).reshape(-1),
                         f'{case} parameters', 1e-9)
            exercise(model, rng, outcomes, f'parameters {case} ({name})')


def test_hostile_inertial_parameters_follow_the_rule():
    outcomes = Outcomes()
    fuzz_parameters(60, SEED, outcomes)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert outcomes['load loaded'] > 5 and outcomes['load ModelError'] > 20, dict(outcomes)


# ---- Extended URDF pairs ----

PAIRS = {'rod_knee_leg': bundled_extended_urdf('rod_knee_leg'),
         'ball_rod_ankle_leg': tuple(str(Path(__file__).parents[1] / 'models'
                                         / f'ball_rod_ankle_leg.{ext}')
                                     for ext in ('urdf', 'yaml'))}
KEYS = ('closed_loop', 'type', 'name_mot', 'joint_name', 'joint_type')
# Scalars PyYAML would turn into dates, numbers or booleans (and fail on some), explicit tags,
# control characters (YAML double-quoted escapes), and names of every kind.
SCALARS = ('2001-13-01', '0000-01-01', '2001-01-01 25:00:00', '2001-02-30', '2001-01-01',
           '1970-01-01T00:00:00Z', '!!timestamp foo', '!!float abc', '!!int x',
           '!!binary aGVsbG8=', '!!set {a: null}', '!!bool maybe',
           '!!python/object:os.system x', '!foo bar', '!!str 5', '!!null', '!!omap [a: 1]',
           '!!merge x', '9' * 5000, '1e999', '.nan', '0x1F', '-0', '3', 'yes', '~', '""', '"a\\0"',
           '"\\x01b"', '"\\x1b[31m"', '"\\uD800"', '"\\x7f"', '"caf\\u00e9"', "'a: b'", '"[x]"',
           'x' * 300, '6D', '3d', 'SPHERICAL', 'FIXED',
           'UJOINT_XY', 'UJOINT_ZZ', '&a anchored', '*a', '*undefined', '{a: b}', '[]', '[[a, b]]',
           '- x', ': :')


def closures_text(data):
    """Flow-style YAML of {key: [entry fragments]} (entries are YAML text, pairs are 2-lists of
    them)."""
    def entry(value):
        return '[' + ', '.join(value) + ']' if isinstance(value, list) else value
    return ''.join(f'{key}: [{", ".join(entry(v) for v in values)}]\n' if isinstance(values, list)
                   else f'{key}: {values}\n' for key, values in data.items())


def mutate_closures(text, rng):
    """The closures YAML with one to three mutations of a class the rule must withstand: scalars
    and tags (dates, numbers, explicit tags, control characters), nesting (brackets, indentation),
    list lengths and repeated names, keys (unknown, missing, a scalar or a mapping for a list),
    aliases and merge keys, size, and damaged bytes."""
    import yaml
    base = yaml.safe_load(text)
    data = {key: ([[a, b] for a, b in value] if key == 'closed_loop' else list(value))
            for key, value in base.items()}
    names = [x for value in data.values() for entry in value
             for x in (entry if isinstance(entry, list) else [entry])]
    raw = None
    for _ in range(1 + int(rng.exponential(0.6))):
        operation = rng.integers(11)
        key = KEYS[rng.integers(len(KEYS))]
        if not isinstance(data.get(key), list):         # absent, or a scalar put in its place
            data[key] = []
        values = data[key]
        if operation <= 2 and names:               # a scalar or tag in place of an entry or a name
            scalar = SCALARS[rng.integers(len(SCALARS))]
            if values and isinstance(values[0], list) and rng.integers(2):
                values[rng.integers(len(values))][rng.integers(2)] = scalar
            elif values:
                values[rng.integers(len(values))] = scalar
            else:
                values.append(scalar)
        elif operation == 3:                              # nesting: brackets
            depth = int((5, 8, 9, 100, 1000, 5000)[rng.integers(6)])
            values.append('[' * depth + 'a' + ']' * depth)
        elif operation == 4:                              # long lists, repeated names
            n = int((2, 100, 9_999, 10_000, 10_001, 20_000)[rng.integers(6)])
            copies = ([names[rng.integers(len(names))]] * n if rng.integers(2)
                      else [f'n{i}' for i in range(n)])
            data[key] = [[c, c] for c in copies] if key == 'closed_loop' else copies
        elif operation == 5:                              # keys
            choice = rng.integers(4)
            if choice == 0:
                data[('closed_loops', 'Type', 'name', '', '<<', '? x')[rng.integers(6)]] = ['a']
            elif choice == 1:
                data.pop(key)
            else:
                data[key] = ('null', 'hip_pitch', '{a: b}', '[]', '""',
                             '!!set {}')[rng.integers(6)]
        elif operation == 6 and names:                    # a name made of another one
            other = names[rng.integers(len(names))]
            values.append(f'{other}_a' if rng.integers(2) else f'"{other}\\t"')
        elif operation == 7:                              # aliases and merge keys
            raw = ('anchors: &a [a, b]\n' if rng.integers(2) else '') + closures_text(data) + \
                ('<<: {closed_loop: []}\n', 'name_mot: *a\n', 'x: &b [*b]\n',
                 'name_mot: [*a, *a]\n')[rng.integers(4)]
        elif operation == 8:                              # indentation depth
            depth = int((8, 9, 50, 1000)[rng.integers(4)])
            raw = (closures_text(data) + 'extra:\n'
                   + ''.join(' ' * (i + 1) + f'k{i}:\n' for i in range(depth)))
        elif operation == 9:                              # size
            raw = (closures_text(data) + '#'
                   + 'x' * int((999_000, 1_000_000, 2_000_000)[rng.integers(3)]) + '\n')
    text = raw if raw is not None else closures_text(data)
    if rng.integers(6) == 0:                              # damaged bytes
        chars = list(text)
        for _ in range(rng.integers(1, 4)):
            chars.insert(int(rng.integers(len(chars) + 1)),
                         ('\t', ':', '[', ']', '{', '&', '*', '!', '%', '\x00',
                          '\ufeff', '"', "'", '\n- ', '#')[rng.integers(15)])
        text = ''.join(chars)
    return text


def fuzz_pairs(count, seed, outcomes, compiled=True, directory=None):
    """Extended URDF pairs: the closures mutated (mutate_closures), one case in four the URDF too
    (mutate), one in four given as a file (one in twenty of those not UTF-8); loaded ones are
    exercised."""
    rng = np.random.default_rng(seed)
    load_model(bundled_model('four_bar')).warm_up()
    texts = {name: (Path(urdf).read_text(), Path(closures).read_text())
             for name, (urdf, closures) in PAIRS.items()}
    with tempfile.TemporaryDirectory() as scratch:
        for case in range(count):
            name = tuple(PAIRS)[rng.integers(len(PAIRS))]
            urdf, closures = texts[name]
            if rng.integers(4) == 0:
                urdf = mutate(urdf, rng)
            closures = mutate_closures(closures, rng)
            if rng.integers(4) == 0:
                path = Path(directory or scratch) / f'closures_{case}.yaml'
                data = closures.encode('utf-8', 'surrogatepass')
                path.write_bytes(data + b'\xff' if rng.integers(20) == 0 else data)
                closures = str(path)
            label = f'pair {case} ({name})'
            model = outcomes.run(label, lambda: load_model(urdf, compiled, closures=closures),
                                 kind='load')
            if model is not None:
                exercise(model, rng, outcomes, label)


@pytest.mark.parametrize('compiled, count', [(True, 300), (False, 60)],
                         ids=['compiled', 'reference'])
def test_fuzzed_extended_urdf_pairs_follow_the_rule(compiled, count, tmp_path):
    outcomes = Outcomes()
    fuzz_pairs(count, SEED, outcomes, compiled, tmp_path)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['load ModelError'] > count / 2
            and outcomes['load loaded'] > count / 40), dict(outcomes)


# ---- scenes: compose ----

def hostile_part(rng, texts, index):
    """Entry index of compose's parts: a Part or a tuple of fields, each field good, or one time
    in ten hostile (ints beyond floats, arrays for names, non-finite or complex placements, broken
    descriptions, robot names of dashes)."""
    def pick(good, hostile):
        values = hostile if rng.integers(10) == 0 else good
        return values[rng.integers(len(values))]
    text, closures = texts[tuple(texts)[rng.integers(len(texts))]]
    description = pick((text,), (mutate(text, rng), None, 5, b'<robot/>', '', '<robot',
                                 '/nonexistent.urdf', np.array(['x']), 'x' * 100_000,
                                 box((0.1,) * 3, 1.0).replace('name="body"', 'name="---"', 1)))
    prefix = pick((f'p{index}_', np.str_(f'p{index}_')),
                  ('', 'p0_', 'a b', 'a\x00', 'a\ud800', b'a_', 5, None, 'p' * 1000))
    number = pick((0.1, 0, 1e3, True, np.float32(2.0), '1'),
                  (10 ** 400, -10 ** 400, 1e400, np.nan, -np.inf, 1j, 'x', None, 1001.0,
                   Fraction(10 ** 400), Decimal('sNaN'), np.array([1.0, 2.0])))
    placement = pick((((0, 0, 0), (0, 0, 0)), ((number, 0, 0), (0, 0, 0)),
                      ((0, 0, 0), (0, number, 0)), np.zeros((2, 3))),
                     ('abc', np.zeros(6), None, ((0, 0), (0, 0, 0)), ((0, 0, 0), (0, 0, 0, 1)),
                      (number, number), 5))
    joint = pick(('fixed', 'floating', np.str_('floating')),
                 ('revolute', np.array(['fixed', 'floating']), np.array(['fixed']), None, 5,
                  b'fixed', ['fixed']))
    parent = pick(('world',) * 3 + (f'p{index - 1}_base',) * (index > 0),
                  ('nowhere', np.array(['world']), 5, None, b'world', '', f'p{index}_base'))
    closure = pick((closures,), (5, 'closed_loop: [', '/nonexistent.yaml', 'x' * 1000))
    fields = (description, prefix, placement, joint, parent, closure)
    kind = rng.integers(20)
    if kind == 0:
        return fields[:rng.integers(7)]
    if kind == 1:
        return ('robot.urdf', 5, None, fields + (1,), {'a': 1}, [text])[rng.integers(6)]
    return Part(*fields) if kind < 10 else list(fields)


def fuzz_compose(count, seed, outcomes):
    """compose on lists of hostile parts (hostile_part) and hostile lists and names: XML text or
    ModelError; one scene in four is loaded (the NumPy reference: no kernel to warm)."""
    rng = np.random.default_rng(seed)
    texts = {name: (_text(bundled_model(name)), None)
             for name in ('linkage_leg', 'four_bar', 'quadruped_rotors')}
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    texts['rod_knee_leg'] = (Path(urdf).read_text(), Path(closures).read_text())
    for case in range(count):
        parts = [hostile_part(rng, texts, index) for index in range(rng.integers(1, 4))]
        if rng.integers(10) == 0:
            parts = ('robot.urdf', 5, [], None, {'a': 1}, iter(parts))[rng.integers(6)]
        name = ('scene',) * 8 + ('', 'a\x00', 5, np.array(['x']), '---')
        name = name[rng.integers(len(name))]
        scene = []
        outcomes.run(f'compose {case}', lambda: (scene.append(compose(parts, name)),
                                                 np.zeros(1))[-1], kind='compose')
        if scene and rng.integers(4) == 0:
            outcomes.run(f'compose {case}, loaded', lambda: load_model(scene[0], False),
                         kind='load')


def test_compose_on_hostile_parts_follows_the_rule():
    outcomes = Outcomes()
    fuzz_compose(300, SEED, outcomes)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['compose ModelError'] > 100 and outcomes['compose finite'] > 30), \
        dict(outcomes)


# ---- the console script ----

SCRIPT = Path(sys.executable).parent / 'extended_urdf_to_urdfplus'
OUTPUTS = ('file', 'stdout', 'missing/robot.urdf', '.', '/dev/full', 'stdout:/dev/full')


def fuzz_console(count, seed, outcomes, directory):
    """extended_urdf_to_urdfplus on mutated closures (mutate_closures) and hostile outputs: exit
    status 0 with a URDF+ that loads, or 1 with one line on stderr naming the error; never a
    traceback."""
    rng = np.random.default_rng(seed)
    for case in range(count):
        name = tuple(PAIRS)[rng.integers(len(PAIRS))]
        urdf, closures = PAIRS[name]
        if rng.integers(3):
            closures = Path(directory) / f'script_{case}.yaml'
            closures.write_text(mutate_closures(Path(PAIRS[name][1]).read_text(), rng),
                                errors='surrogatepass')
        output = OUTPUTS[rng.integers(len(OUTPUTS))]
        target = Path(directory) / f'script_{case}.urdf' if output == 'file' else (
            output if output.startswith('/') else Path(directory) / output)
        command = ([str(SCRIPT), urdf, str(closures)]
                   + ([] if output.startswith('stdout') else ['-o', str(target)]))
        label = f'script {case} ({name}, {output})'
        start = time.perf_counter()
        with open(output[len('stdout:'):] if output.startswith('stdout:') else os.devnull,
                  'w') as stdout:
            run = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True,
                                 errors='replace', timeout=HANG * 4)
        outcomes.timed('script', label, start)
        lines = run.stderr.splitlines()
        if run.returncode == 1 and len(lines) == 1 and lines[0].startswith(
                'extended_urdf_to_urdfplus: error: '):
            outcomes['script error'] += 1
        elif run.returncode == 0 and not run.stderr and (output != 'file'
                                                         or load_model(str(target), False)):
            outcomes['script written'] += 1
        else:
            outcomes['script other'] += 1
            outcomes.failures.append(f'{label}: status {run.returncode}, stderr '
                                     f'{run.stderr[-500:]!r}')


def test_console_script_on_hostile_inputs_and_outputs(tmp_path):
    outcomes = Outcomes()
    fuzz_console(12, SEED, outcomes, tmp_path)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert outcomes['script error'] >= 6, dict(outcomes)


# ---- the node's parameter checks and joint_states name lists (no DDS) ----

def hostile_parameter(rng, names):
    """A value a ros2 param set (or a parameters file) could carry, hostile or not."""
    choices = (0, 1, -1, 3600, 3601, 10 ** 30, 0.0, 0.05, 1e308, float('nan'), float('inf'), -0.0,
               True, '', 'abc', '1', [], [0, 0, -9.81], [0.0, 0.0, 1e308], [0, 0], [1, 2, 3, 4],
               ['a', 'b', 'c'], [True, False],
               list(names[:2]), list(names[:1]) * 20_000, [names[0], 'nowhere'], ['x' * 100_000],
               'bias', 'gravity', 'auto', 'aba', 'lcaba', 'ABA', '/nonexistent.yaml', b'bytes',
               None)
    return choices[rng.integers(len(choices))]


IDENTITY_POSE = SimpleNamespace(position=SimpleNamespace(x=0.0, y=0.0, z=0.0),
                                orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0))


def hostile_contact(rng, links):
    """A cluster_dynamics/Contact message's fields (as a namespace) on links, hostile or not."""
    def pose():
        numbers = (0.0, 1.0, -1.0, 1e308, float('nan'), float('inf'), 1e-300, 0.05)
        x, y, z, qx, qy, qz, qw = (numbers[i] for i in rng.integers(len(numbers), size=7))
        if rng.integers(2):
            x, y, z, qx, qy, qz, qw = 0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0
        return SimpleNamespace(position=SimpleNamespace(x=x, y=y, z=z),
                               orientation=SimpleNamespace(x=qx, y=qy, z=qz, w=qw))
    links = [*links, *links, '', 'x' * 100_000, 'nowhere']
    kinds = ['3D', '6D', '3D', '6D', '2D', '', '6d', 'x' * 100_000]
    return SimpleNamespace(link=links[rng.integers(len(links))],
                           kind=kinds[rng.integers(len(kinds))], placement=pose(),
                           other=('', '', *links)[rng.integers(len(links) + 2)],
                           other_placement=pose())


def fuzz_node_inputs(count, seed, outcomes):
    """check_parameter (then setting) on hostile values of every parameter, contact messages
    (links, kinds and poses, hostile or not) through contacts_from_msgs and resolve, and
    joint_states name lists (repeated names, 20,000 copies of one, unknown names) through
    StreamInput.stage and JointLayout.select: accepted, or ModelError."""
    from dynamics_node.contacts import resolve
    from dynamics_node.ros import conversions as conv
    from dynamics_node.ros.parameters import check_parameter, PARAMETERS, setting
    rng = np.random.default_rng(seed)
    model = load_model(bundled_model('linkage_leg'))
    layout = conv.JointLayout(model)
    names = list(model.joint_names) + ['gripper']
    parameters = sorted(PARAMETERS)
    for case in range(count):
        if case % 2:
            name = parameters[rng.integers(len(parameters))]
            value = hostile_parameter(rng, names)
            # rclpy refuses another type
            if not dict(PARAMETERS[name].extras).get('dynamic_typing'):
                while type(value) is not type(PARAMETERS[name].default):
                    value = hostile_parameter(rng, names)
            outcomes.run(f'parameter {case} {name}={str(value)[:40]}',
                         lambda: (check_parameter(name, value), setting(name, value),
                                  np.zeros(1))[-1],
                         kind='parameter')
        elif case % 4 == 2:
            links = list(model.link_frame)
            contacts = ([hostile_contact(rng, links) for _ in range(int(rng.integers(1, 4)))]
                        if rng.integers(2) else
                        [SimpleNamespace(link=link, kind='3D', placement=IDENTITY_POSE, other='',
                                         other_placement=IDENTITY_POSE)
                         for link in rng.choice(links[1:], int(rng.integers(1, 3)),
                                                replace=False)])
            outcomes.run(f'contacts {case}',
                         lambda: (resolve(model, conv.contacts_from_msgs(contacts)),
                                  np.zeros(1))[-1], kind='contacts')
        else:
            n = int((1, 2, 5, 100, 20_000)[rng.integers(5)])
            listed = ([names[rng.integers(len(names))] for _ in range(n)] if rng.integers(2)
                      else [names[0]] * n)
            values = rng.normal(size=len(listed))
            stream = conv.StreamInput(layout)
            outcomes.run(f'joint_states {case} ({n} names)',
                         lambda: np.concatenate(stream.stage(listed, values, values)),
                         kind='joint_states')
            outcomes.run(f'state.name {case} ({n} names)',
                         lambda: (layout.select(listed), np.zeros(1))[-1], kind='state.name')


def test_node_parameters_and_joint_state_names_follow_the_rule():
    outcomes = Outcomes()
    fuzz_node_inputs(400, SEED, outcomes)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert (outcomes['parameter ModelError'] > 40 and outcomes['joint_states ModelError'] > 20
            and outcomes['contacts ModelError'] > 20 and outcomes['contacts finite'] > 20), \
        dict(outcomes)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--descriptions', type=int, default=2000)
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--pairs', type=int, default=0, help='Extended URDF pairs')
    parser.add_argument('--joint-calls', type=int, default=0,
                        help='calls on spherical, planar and universal joints')
    parser.add_argument('--scripts', type=int, default=0, help='runs of extended_urdf_to_urdfplus')
    parser.add_argument('--node', type=int, default=0,
                        help='node parameter values and joint_states name lists')
    parser.add_argument('--scenes', type=int, default=0, help='compose on hostile parts')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--reference', action='store_true',
                        help='the NumPy reference engine (compiled=False)')
    arguments = parser.parse_args()
    compiled = not arguments.reference
    with tempfile.TemporaryDirectory() as scratch:
        campaign = (
            ('descriptions', arguments.descriptions,
             lambda n, o: fuzz_descriptions(n, arguments.seed, o, compiled)),
            ('calls', arguments.calls, lambda n, o: fuzz_calls(n, arguments.seed, o, compiled)),
            ('pairs', arguments.pairs,
             lambda n, o: fuzz_pairs(n, arguments.seed, o, compiled, scratch)),
            ('joint-type calls', arguments.joint_calls,
             lambda n, o: fuzz_calls(n, arguments.seed, o, compiled, JOINT_TYPE_MODELS)),
            ('scripts', arguments.scripts,
             lambda n, o: fuzz_console(n, arguments.seed, o, scratch)),
            ('node inputs', arguments.node, lambda n, o: fuzz_node_inputs(n, arguments.seed, o)),
            ('scenes', arguments.scenes, lambda n, o: fuzz_compose(n, arguments.seed, o)))
        for kind, count, run in campaign:
            if not count:
                continue
            outcomes = Outcomes()
            start = time.perf_counter()
            run(count, outcomes)
            print(f'{kind}: {count} cases, {sum(outcomes.values())} outcomes in '
                  f'{time.perf_counter() - start:.0f} s: {dict(outcomes)}', flush=True)
            print('   slowest: ' + ', '.join(f'{k} {t:.2f} s ({label})'
                                             for k, (t, label) in outcomes.slowest.items()))
            for failure in outcomes.failures[:30]:
                print('  ', failure)
