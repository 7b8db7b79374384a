"""Seeded fuzzing of the input rule (issue 9): every public call returns finite numbers or raises
ModelError, never anything else, within a second, and a failed call leaves no trace (a good call after
it returns what it returns on a fresh model).

The suite runs a few hundred cases; ``python test/test_fuzz.py --descriptions 5000 --calls 5000`` runs
a bigger campaign and prints the counts of each outcome.
"""

import argparse
import collections
import os
import sys
import time

from lxml import etree
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from conftest import assert_close, random_independent_positions, random_state, SEED  # noqa: E402
from dynamics_node import bundled_model, bundled_models, load_model, ModelError, ProximalSettings  # noqa: E402

SLOW = 1.0                     # seconds: no call may take longer
BASES = tuple(bundled_models())
# Attribute values an attacker or a broken exporter could write.
VALUES = ('1e308', '-1e308', '1e-320', 'nan', 'inf', '-inf', '-1', '0', '', '   ', 'garbage', '1 2', '1 2 3 4',
          '\u00e9\u4e2d\u202e', '1e154 1e154 1e154', '1e308 1e308 0', '1e-300 0 0', '5e-324 0 0', 'x' * 100000,
          '9' * 400, '0x1p3', '1e4', '-1e4', '2e6', '1e-5', '3', 'true', 'false', 'floating', 'fixed', 'prismatic',
          'continuous', 'revolute', 'ball', '0 0 1', '1 0 0', '0.1 0.2 0.3')


# Numbers for numeric attributes: overflowing, tiny, negative, non-finite, near and beyond the bounds.
NUMBERS = ('1e308', '-1e308', '1e200', '1e154', '1e-320', '1e-300', 'nan', 'inf', '-inf', '-1', '0', '-0', '9' * 400,
           '1e3', '1e4', '-1e4', '1e5', '2e6', '1e9', '1e10', '1e-4', '1e-5', '3')


def mutate(text, rng):
    """One to three mutations of a URDF+ text: mostly one number of a numeric attribute replaced, else
    any attribute replaced, elements dropped, duplicated, renamed or re-linked; one case in eight is
    further damaged as bytes."""
    root = etree.fromstring(text.encode())
    for _ in range(1 + int(rng.exponential(0.7))):
        elements = [e for e in root.iter() if isinstance(e.tag, str)]
        numeric = [(e, key) for e in elements for key, value in e.attrib.items() if _is_numbers(value)]
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
            element.tag = ('link', 'joint', 'loop', 'coupling', 'origin', 'axis', 'mimic', 'inertial')[rng.integers(8)]
        else:
            names = [e.get('name') for e in root.iter('link') if e.get('name')] + ['nowhere']
            references = [e for e in root.iter() if e.get('link') is not None]
            if references:
                references[rng.integers(len(references))].set('link', names[rng.integers(len(names))])
    data = etree.tostring(root)
    if rng.integers(8) == 0:
        data = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(len(data)))
            data[i:i + 1] = (bytes([rng.integers(256)]), b'', b'\xff\xfe', b'<', b'\x00')[rng.integers(5)]
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

    def run(self, label, call, kind='call'):
        """The outcome of call(), counted as '<kind> <outcome>' (kind 'load' for load_model, 'call' for
        a call under test, 'good call' for the calls between them): its result, or None after a ModelError."""
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
            if kind != 'load' and not all(np.isfinite(np.asarray(x, dtype=float)).all() for x in _arrays(result)):
                outcome = 'non-finite'
                self.failures.append(f'{label}: non-finite result')
        elapsed = time.perf_counter() - start
        self[f'{kind} {outcome}'] += 1
        if elapsed > SLOW:
            self[f'{kind} over 1 s'] += 1
            self.failures.append(f'{label}: {elapsed:.2f} s')
        return result


def _arrays(result):
    if isinstance(result, tuple):
        return result
    acceleration = getattr(result, 'acceleration', None)
    return (result,) if acceleration is None else (acceleration, *result.multipliers.values())


def exercise(model, rng, outcomes, label):
    """The public calls on a loaded (maybe odd) model at a random state."""
    q_ind = random_independent_positions(model, rng)
    q = outcomes.run(f'{label} complete_positions', lambda: model.complete_positions(q_ind))
    if q is None:
        q = np.zeros(model.nq)                         # may violate the loops: ModelError is the answer
    v, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    link = model.links[-1]
    outcomes.run(f'{label} forward_dynamics', lambda: model.forward_dynamics(q, v, tau, {link: ((0, 0, 1), (0, 0, 0))}))
    outcomes.run(f'{label} lcaba', lambda: model.forward_dynamics(q, v, tau, method='lcaba', info=True))
    outcomes.run(f'{label} inverse_dynamics', lambda: model.inverse_dynamics(q, v, tau))
    outcomes.run(f'{label} mass_matrix', lambda: model.mass_matrix(q))
    outcomes.run(f'{label} inverse_osim', lambda: model.inverse_osim(q, model.links[-2:]))
    outcomes.run(f'{label} link_pose', lambda: model.link_pose(q, link))
    outcomes.run(f'{label} link_jacobian', lambda: model.link_jacobian(q, link))


def fuzz_descriptions(count, seed, outcomes, compiled=True):
    rng = np.random.default_rng(seed)
    load_model(bundled_model('four_bar')).warm_up()     # compiling the kernels is no call's time
    texts = {name: _text(bundled_model(name)) for name in BASES}
    for case in range(count):
        name = BASES[rng.integers(len(BASES))]
        source = mutate(texts[name], rng)
        model = outcomes.run(f'description {case} ({name})', lambda: load_model(source, compiled), kind='load')
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
    choices = (None, 'abc', 1j, [1j] * n, 10 ** 400, [10 ** 400] * n, [np.nan] * n, [np.inf] * n, [1e308] * n,
               [1e200] * n, np.full(n, 1e7), [], [0.0] * (n + 1), [[0.0] * n], {'a': 1}, [None] * n,
               np.zeros(n, complex), np.ones(n, bool), object(), np.array(['1'] * n), range(n),
               np.full(n, 1e-320), np.full(n, -1e5, np.float32), [[0.0], [0.0, 0.0]], np.zeros((n, 2)))
    value = choices[rng.integers(len(choices))]
    if rng.integers(3) == 0:                      # one bad entry in a good vector
        value = [0.0] * n
        value[rng.integers(n)] = (np.nan, -np.inf, 1e300, 10 ** 400, 2j, 'x', None, 1e9)[rng.integers(8)]
    return value


def hostile_call(model, state, rng):
    """(label, call): one public call with one argument replaced by a hostile value."""
    q, yd, wrenches = state
    link = model.links[-1]
    hostile = {
        'wrenches': ([1, 2], {link: 5}, {'nowhere': ((0, 0, 1), (0, 0, 0))}, {link: ((1e10, 0, 0), (0, 0, 0))},
                     {link: ('abc', (0, 0, 0))}, {link: ((np.nan, 0, 0), (0, 0, 0))}, {5: ((0, 0, 1), (0, 0, 0))},
                     {link: ((1, 2), (3, 4))}, {link: None}, 'abc', {(1, 2): 3}),
        'links': (None, [], ['nowhere'], [[link]], [link] * 2, 5, [5], 'nowhere', [link] * 2000, {link: 1}),
        'method': (np.array(['aba', 'x']), 5, None, 'ABA', ['aba'], b'aba'),
        'settings': ('x', 5, {'mu': 1e6}),
    }

    def pick(kind):
        return hostile[kind][rng.integers(len(hostile[kind]))]

    q_ind = _independent_positions(model, q)
    calls = [
        ('forward_dynamics q', lambda: model.forward_dynamics(hostile_vector(rng, model.nq), yd, yd)),
        ('forward_dynamics v', lambda: model.forward_dynamics(q, hostile_vector(rng, model.ny), yd)),
        ('forward_dynamics tau', lambda: model.forward_dynamics(q, yd, hostile_vector(rng, model.ny))),
        ('forward_dynamics wrenches', lambda: model.forward_dynamics(q, yd, yd, pick('wrenches'))),
        ('forward_dynamics method', lambda: model.forward_dynamics(q, yd, yd, method=pick('method'))),
        ('forward_dynamics settings',
         lambda: model.forward_dynamics(q, yd, yd, method='lcaba', settings=pick('settings'))),
        ('ProximalSettings', lambda: model.forward_dynamics(q, yd, yd, method='lcaba', settings=ProximalSettings(
            **{('mu', 'tolerance', 'max_iterations')[rng.integers(3)]: hostile_vector(rng, 1)}))),
        ('inverse_dynamics a', lambda: model.inverse_dynamics(q, yd, hostile_vector(rng, model.nv))),
        ('inverse_dynamics wrenches', lambda: model.inverse_dynamics(q, yd, yd, pick('wrenches'))),
        ('bias_forces v', lambda: model.bias_forces(q, hostile_vector(rng, model.nv))),
        ('gravity_forces q', lambda: model.gravity_forces(hostile_vector(rng, model.nq))),
        ('mass_matrix q', lambda: model.mass_matrix(hostile_vector(rng, model.nq))),
        ('inverse_osim links', lambda: model.inverse_osim(q, pick('links'))),
        ('link_pose link', lambda: model.link_pose(q, pick('links'))),
        ('link_jacobian link', lambda: model.link_jacobian(q, pick('links'))),
        ('complete_positions', lambda: model.complete_positions(hostile_vector(rng, q_ind.size))),
        ('complete_positions budget', lambda: model.complete_positions(q_ind, budget_ms=hostile_vector(rng, 1))),
        ('spanning_velocities', lambda: model.spanning_velocities(q, hostile_vector(rng, model.ny))),
        ('gravity', lambda: _set_gravity(model, hostile_vector(rng, 3))),
    ]
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
            'gravity': model.gravity}


def fuzz_calls(count, seed, outcomes, compiled=True, names=BASES):
    """Hostile calls on bundled robots, one model per robot taking all of them. After each failed call,
    good calls must return what they return on a fresh model, and completing positions again must give
    back the positions completed just before (no poisoned warm start)."""
    rng = np.random.default_rng(seed)
    load_model(bundled_model('four_bar')).warm_up()
    models = {name: (load_model(bundled_model(name), compiled), load_model(bundled_model(name), compiled))
              for name in names}
    for case in range(count):
        name = names[case % len(names)]
        model, fresh = models[name]
        state = random_state(fresh, np.random.default_rng(case))
        q_ind = _independent_positions(fresh, state[0])
        # A good completion may fail where an earlier successful hostile one moved the warm start far away.
        before = outcomes.run(f'call {case} ({name}) complete_positions', lambda: model.complete_positions(q_ind),
                              kind='good call')
        label, call = hostile_call(model, state, rng)
        label = f'call {case} ({name}) {label}'
        if outcomes.run(label, call) is None:
            if before is not None:
                assert_close(model.complete_positions(q_ind), before, f'{label}, then complete_positions', 1e-12)
            expected, actual = good_results(fresh, state), good_results(model, state)
            for key in expected:
                assert_close(actual[key], expected[key], f'{label}, then {key}', rtol=1e-12)
        model.gravity = fresh.gravity             # a successful hostile gravity is legitimate: undo it


def _independent_positions(model, q):
    """The independent entries of spanning positions q (7 for a floating joint)."""
    names = set(model.independent_joint_names)
    return np.concatenate([q[model.idx_q[i]:model.idx_q[i] + model.nq_body[i]] for i in range(1, model.nb)
                           if model.joint_names[i - 1] in names])


@pytest.mark.parametrize('compiled, count', [(True, 400), (False, 150)], ids=['compiled', 'reference'])
def test_fuzzed_descriptions_follow_the_rule(compiled, count):
    outcomes = Outcomes()
    fuzz_descriptions(count, SEED, outcomes, compiled)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert outcomes['load loaded'] > count / 8 and outcomes['load ModelError'] > count / 4, dict(outcomes)
    assert outcomes['call finite'] > count / 2 and outcomes['call ModelError'] > count / 40, dict(outcomes)


@pytest.mark.parametrize('compiled, count', [(True, 400), (False, 100)], ids=['compiled', 'reference'])
def test_hostile_calls_follow_the_rule_and_leave_no_trace(compiled, count):
    outcomes = Outcomes()
    fuzz_calls(count, SEED, outcomes, compiled)
    assert not outcomes.failures, '\n'.join(outcomes.failures[:20])
    assert outcomes['call ModelError'] > 0.75 * count and outcomes['good call finite'] > 0.75 * count, dict(outcomes)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--descriptions', type=int, default=2000)
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--reference', action='store_true', help='the NumPy reference engine (compiled=False)')
    arguments = parser.parse_args()
    for kind, run, count in (('descriptions', fuzz_descriptions, arguments.descriptions),
                             ('calls', fuzz_calls, arguments.calls)):
        outcomes = Outcomes()
        start = time.perf_counter()
        run(count, arguments.seed, outcomes, not arguments.reference)
        print(f'{kind}: {count} cases, {sum(outcomes.values())} calls in {time.perf_counter() - start:.0f} s: '
              f'{dict(outcomes)}')
        for failure in outcomes.failures[:30]:
            print('  ', failure)
