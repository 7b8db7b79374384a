"""Batch (dynamics_node/batch.py): N states in one call equal N single calls bit for bit, on 1 and
2 threads, both engines; the rows run in the compiled batch kernels (the single calls only where a
row's compiled call does not return OK: a singular row routed to LCABA, a refused row); a refused
row raises the single call's error with its row named; malformed batches are named."""

import numpy as np
import pytest

from conftest import random_state, robot
from dynamics_node import Batch, Contact, load_model, ModelError, SingularConfigurationError
from dynamics_node.batch import MAX_THREADS
from singular_loops import dead_point, four_bar_positions, ROCKER_DRIVEN

ROWS = 7
ROBOTS = ('quadruped_rotors', 'humanoid_belts', 'linkage_leg', 'delta', 'ambidex_wrist')
AT_POSITIONS = ('mass_matrix', 'center_of_mass', 'potential_energy', 'centroidal_momentum_matrix',
                'center_of_mass_jacobian')
AT_STATES = ('bias_forces', 'centroidal_momentum', 'centroidal_bias', 'kinetic_energy',
             'coriolis_matrix')
CALLS = ('forward_dynamics', 'inverse_dynamics', 'regressor') + AT_POSITIONS + AT_STATES
FEET = {'quadruped_rotors': [Contact(foot, '3D') for foot in ('FL_foot', 'FR_foot', 'HL_foot')],
        'humanoid_belts': [Contact('left_foot_sole', '6D')]}


def states(model, rng, rows=ROWS, spanning=False):
    """Q, V, U (forces or accelerations) of rows random closed states."""
    Q, V, U = [], [], []
    for _ in range(rows):
        q, yd, _ = random_state(model, rng)
        Q.append(q)
        V.append(model.spanning_velocities(q, yd) if spanning else yd)
        U.append(rng.normal(size=model.ny))
    return np.array(Q), np.array(V), np.array(U)


def arguments(name, Q, V, U):
    return (Q,) if name in AT_POSITIONS else (Q, V) if name in AT_STATES else (Q, V, U)


def singles(model, name, inputs):
    """The single calls' results stacked."""
    return np.array([getattr(model, name)(*row) for row in zip(*inputs)])


class Counted:
    """Counts the single calls a Batch makes (the model's method, replaced on the instance)."""

    def __init__(self, model, name):
        self.calls, self.method = 0, getattr(model, name)
        setattr(model, name, self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.method(*args, **kwargs)


@pytest.mark.parametrize('threads', (1, 2))
@pytest.mark.parametrize('name', ROBOTS)
def test_rows_equal_single_calls(name, threads, rng):
    model = robot(name)
    batch = Batch(model, threads)
    for spanning in (False, True):
        Q, V, U = states(model, rng, spanning=spanning)
        for call in CALLS:
            inputs = arguments(call, Q, V, U)
            expected = singles(model, call, inputs)
            counted = Counted(model, call)
            try:
                result = getattr(batch, call)(*inputs)
            finally:
                del model.__dict__[call]
            assert counted.calls == 0, f'{call}: {counted.calls} rows left the compiled kernel'
            assert result.shape == expected.shape and np.array_equal(result, expected), (
                f'{name} {call} spanning={spanning} threads={threads}')
    batch.close()


@pytest.mark.parametrize('threads', (1, 2))
@pytest.mark.parametrize('name', sorted(FEET))
def test_contact_bias_forces_rows_equal_single_calls(name, threads, rng):
    """One contact set and weights for every row: each thread's first row resolves the set by a
    single call, its other rows run compiled; contacts that are none or that the model refuses
    are named."""
    model, contacts = robot(name), FEET[name]
    Q, V, _ = states(model, rng)
    weights = rng.uniform(0.5, 2.0, model.ny)
    for w in (None, weights):
        expected = np.array([model.contact_bias_forces(q, v, contacts, w) for q, v in zip(Q, V)])
        fresh = robot(name)                    # its workspaces have resolved no contact set
        counted = Counted(fresh, 'contact_bias_forces')
        try:
            result = Batch(fresh, threads).contact_bias_forces(Q, V, contacts, w)
        finally:
            del fresh.__dict__['contact_bias_forces']
        # to round-off: a set's first call on a workspace (a thread's first row) takes the
        # checked path, whose contact kernel has buffers of its own (test_contacts.py)
        assert np.max(np.abs(result - expected)) <= 1e-13 * np.max(np.abs(expected))
        assert counted.calls <= threads, 'one single call per thread at most'
    with pytest.raises(ModelError, match='weights'):
        Batch(model).contact_bias_forces(Q, V, contacts, -weights)
    with pytest.raises(ModelError, match=r'^row 0: contacts\[0\]: unknown link'):
        Batch(model).contact_bias_forces(Q, V, [Contact('nowhere', '3D')])
    for garbage in ([['FL_foot', '3D']], {'FL_foot': '3D'}, np.zeros(3), 'FL_foot'):
        with pytest.raises(ModelError, match='^row 0: contacts'):
            Batch(model, threads).contact_bias_forces(Q, V, garbage)


def test_reference_engine_rows_equal_single_calls(rng):
    model = robot('linkage_leg', compiled=False)
    Q, V, U = states(model, rng, rows=3)
    batch = Batch(model, 2)
    for call in CALLS:
        inputs = arguments(call, Q, V, U)
        np.testing.assert_array_equal(getattr(batch, call)(*inputs),
                                      singles(model, call, inputs), call)


def test_singular_row_takes_the_single_calls_route(rng):
    """At a four-bar's dead point the cluster ABA of the batch kernel refuses: that row is the
    single call's (method 'auto' falls back to LCABA), the others stay compiled."""
    model = load_model(ROCKER_DRIVEN)
    Q = np.array([model.reference_positions, four_bar_positions(model, *dead_point('folded')),
                  model.reference_positions])
    V, T = np.zeros((3, model.nv)), rng.normal(size=(3, model.ny))
    with pytest.raises(SingularConfigurationError):
        model.forward_dynamics(Q[1], V[1], T[1], method='aba')
    counted = Counted(model, 'forward_dynamics')
    try:
        result = Batch(model).forward_dynamics(Q, V, T)
    finally:
        del model.__dict__['forward_dynamics']
    assert counted.calls == 1
    np.testing.assert_array_equal(result, singles(model, 'forward_dynamics', (Q, V, T)))


@pytest.mark.parametrize('compiled', (True, False), ids=('compiled', 'reference'))
@pytest.mark.parametrize('threads', (1, 2))
def test_refused_row_is_named(compiled, threads, rng):
    model = robot('quadruped_rotors', compiled)
    Q, V, U = states(model, rng, rows=5)
    for row, (array, index, value) in ((3, (Q, 2, np.nan)), (0, (V, 1, 1e9)),
                                       (4, (U, 0, np.inf))):
        bad = [x.copy() for x in (Q, V, U)]
        target = [x is array for x in (Q, V, U)].index(True)
        bad[target][row, index] = value
        with pytest.raises(ModelError) as single:
            model.inverse_dynamics(*(x[row] for x in bad))
        with pytest.raises(ModelError) as batched:
            Batch(model, threads).inverse_dynamics(*bad)
        assert str(batched.value) == f'row {row}: {single.value}'
        assert type(batched.value) is type(single.value)


@pytest.mark.parametrize('threads', (1, 2))
def test_earliest_refused_row_is_named(threads, rng):
    """Rows refused in different threads' rows: the earliest is the one named, every time."""
    model = robot('linkage_leg')
    Q, V, U = states(model, rng, rows=200)
    for first, second in ((5, 190), (150, 199), (60, 61)):
        bad = U.copy()
        bad[first, 0] = bad[second, 0] = np.inf
        for _ in range(3):
            with pytest.raises(ModelError, match=f'^row {first}: '):
                Batch(model, threads).inverse_dynamics(Q, V, bad)


def test_calling_thread_takes_the_rows_the_others_start_late_by(rng):
    """The parts cover the rows in order; after a batch whose other thread finished late (less
    the time it took to start), the calling thread takes half the rows that evens them, within
    the batch, and never less than an even share; a batch the calling thread then covers hands
    nothing over; the rows still equal single calls."""
    model = robot('linkage_leg')
    batch = Batch(model, 2)
    assert batch._parts('inverse_dynamics', 1000) == [(0, 500), (500, 1000)]
    # 500 rows in 1 ms on the calling thread: 2 us a row; the other finished 0.1 ms later
    batch._balance('inverse_dynamics', 1000, 500, 1e-3, 1e-4)
    assert batch._parts('inverse_dynamics', 1000) == [(0, 512), (512, 1000)]
    assert batch._parts('inverse_dynamics', 10) == [(0, 10), (10, 10)]
    batch._balance('inverse_dynamics', 1000, 512, 1e-3, 1.0)               # a second late
    assert batch._parts('inverse_dynamics', 1000) == [(0, 1000), (1000, 1000)]
    batch._balance('inverse_dynamics', 1000, 1000, 1e-3, -1.0)             # a second early
    assert batch._parts('inverse_dynamics', 1000) == [(0, 500), (500, 1000)]
    Q, V, A = states(model, rng, rows=50)
    for _ in range(3):
        assert np.array_equal(batch.inverse_dynamics(Q, V, A),
                              [model.inverse_dynamics(q, v, a) for q, v, a in zip(Q, V, A)])


def test_malformed_batches_are_named():
    model = robot('linkage_leg')
    batch = Batch(model)
    Q = np.array([model.reference_positions] * 2)
    V = np.zeros((2, model.ny))
    cases = [
        ((Q[0], V, V), r'q has shape \(%d,\); expected N x %d' % (model.nq, model.nq)),
        ((Q, V[:, :1], V), 'v has shape'),
        ((Q, V[:1], V), 'v has 1 rows; expected 2, as q'),
        ((Q, V, 'abc'), "a must be an array of real numbers, got 'abc'"),
        ((Q, V, [[1j] * model.ny] * 2), 'a must be an array of real numbers'),
    ]
    for inputs, expected in cases:
        with pytest.raises(ModelError, match=expected):
            batch.inverse_dynamics(*inputs)
    for threads in (0, 2.0, 'two', MAX_THREADS + 1):
        with pytest.raises(ModelError, match='threads is'):
            Batch(model, threads)
    with pytest.raises(ModelError, match="model is 'linkage_leg'; expected a Model"):
        Batch('linkage_leg')
    for threads in (1, 2):
        closed = Batch(model, threads)
        closed.close()
        with pytest.raises(ModelError, match='this Batch is closed'):
            closed.inverse_dynamics(Q, V, V)


@pytest.mark.parametrize('threads', (1, 2))
def test_results_written_into_out(threads, rng):
    """out=: the rows written in place into the array given, which is returned, bit for bit the
    results without it; every call takes it, the completion too."""
    model = robot('quadruped_rotors')
    batch = Batch(model, threads)
    Q, V, U = states(model, rng)
    for name in CALLS + ('bias_forces',):
        inputs = arguments(name, Q, V, U)
        expected = getattr(batch, name)(*inputs)
        out = np.full(expected.shape, np.nan)
        assert getattr(batch, name)(*inputs, out=out) is out
        assert np.array_equal(out, expected), name
    feet = FEET['quadruped_rotors']
    batch.contact_bias_forces(Q, V, feet)      # resolves the set on each thread's workspace
    expected = batch.contact_bias_forces(Q, V, feet)
    out = np.empty_like(expected)
    assert batch.contact_bias_forces(Q, V, feet, out=out) is out
    assert np.array_equal(out, expected)
    Y = Q[:, model.independent_q]
    expected = batch.complete_positions(Y, cold=True)
    out = np.empty_like(expected)
    assert batch.complete_positions(Y, cold=True, out=out) is out
    assert np.array_equal(out, expected)


def test_unfit_out_is_named_before_any_row(rng):
    """An out of another shape, type or layout, read-only or sharing memory with an input is
    refused by name, and nothing is written into it."""
    model = robot('linkage_leg')
    batch = Batch(model, 2)
    Q, V, U = states(model, rng, rows=3)
    good = np.zeros((3, model.ny))
    read_only = good.copy()
    read_only.setflags(write=False)
    unfit = [np.zeros((2, model.ny)), np.zeros((3, model.ny), dtype=np.float32),
             np.zeros((model.ny, 3)).T, read_only, good.tolist(), 'out']
    for out in unfit:
        before = np.array(out, dtype=object, copy=True)
        with pytest.raises(ModelError, match='out is .*; expected a writable C-contiguous '
                                             f'float64 NumPy array of shape 3 x {model.ny}'):
            batch.inverse_dynamics(Q, V, U, out=out)
        assert np.array_equal(np.array(out, dtype=object), before)
    U_copy = U.copy()
    with pytest.raises(ModelError, match='out shares memory with an input'):
        batch.inverse_dynamics(Q, V, U_copy, out=U_copy)
    assert np.array_equal(U_copy, U)
    weights = np.ones((3, model.ny))                  # the weights: a row of out
    with pytest.raises(ModelError, match='out shares memory with an input'):
        batch.contact_bias_forces(Q, V, [Contact('foot', '6D')], weights[0], out=weights)


def test_empty_batch(rng):
    model = robot('linkage_leg')
    empty = np.zeros((0, model.nq)), np.zeros((0, model.ny)), np.zeros((0, model.ny))
    assert Batch(model, 2).inverse_dynamics(*empty).shape == (0, model.ny)
    assert Batch(model).mass_matrix(empty[0]).shape == (0, model.ny, model.ny)


def test_fuzzed_batches_raise_only_model_errors():
    """Seeded garbage in every batch call: results or ModelError, nothing else."""
    model, fuzz = robot('quadruped_rotors'), np.random.default_rng(29)
    batch = Batch(model, 2)
    pool = [np.nan, np.inf, -np.inf, 1e300, 0.0, 1.0, -1.0, 1e-300]
    for _ in range(60):
        rows = int(fuzz.integers(0, 4))
        inputs = []
        for columns in (model.nq, model.nv, model.ny):
            width = columns if fuzz.random() < 0.8 else int(fuzz.integers(0, 40))
            x = fuzz.normal(size=(rows, width))
            x[fuzz.random(x.shape) < 0.2] = fuzz.choice(pool)
            inputs.append(x if fuzz.random() < 0.9 else x.astype(object))
        call = CALLS[int(fuzz.integers(len(CALLS)))]
        try:
            result = getattr(batch, call)(*arguments(call, *inputs))
        except ModelError:
            continue
        assert np.all(np.isfinite(result))


@pytest.mark.parametrize('name', ('linkage_leg', 'tello_legs', 'quadruped_rotors', 'delta',
                                  'ambidex_wrist', 'six_bar'))
def test_complete_positions_rows_equal_single_calls_in_order(name):
    """Rows along a motion, each tracked from the one before: equal, bit for bit, to single calls
    one after another from the same start on the same workspace (a cold one: the reference), and
    the batch leaves it where they would (the next single call equal too); in the compiled kernel
    (no single call) where the compiled completion takes the robot; a refused row named."""
    model = robot(name)
    y0 = model.reference_positions[model.independent_q]
    t = np.linspace(0.0, 1.0, 40)[:, None]
    Y = y0 + 0.2 * np.sin(3.0 * t + np.arange(y0.size))
    after = y0 + 0.21 * np.sin(3.0 + np.arange(y0.size))
    if model.floating_base:                     # the base's quaternion kept at the reference
        Y[:, 3:7] = after[3:7] = y0[3:7]
    expected = np.array([model.complete_positions(y) for y in Y])
    expected_after = model.complete_positions(after)
    counted = Counted(model, 'complete_positions')
    try:
        result = Batch(model).complete_positions(Y, cold=True)      # from the reference again
    finally:
        del model.__dict__['complete_positions']
    assert np.array_equal(result, expected)
    if name in ('linkage_leg', 'tello_legs', 'quadruped_rotors'):
        assert counted.calls == 0
    assert np.array_equal(model.complete_positions(after), expected_after)
    for bad in (np.nan, np.inf, 1e12):
        refused = Y.copy()
        refused[25, -1] = bad
        with pytest.raises(ModelError) as alone:
            robot(name).complete_positions(refused[25])
        with pytest.raises(ModelError) as batched:
            Batch(robot(name)).complete_positions(refused)
        assert str(batched.value) == f'row 25: {alone.value}'


def test_complete_positions_out_of_reach_row_is_named():
    """A row the delta's loops cannot close: the single call's error, from the same start (the
    row before), with its row named."""
    model = robot('delta')
    y0 = model.reference_positions[model.independent_q]
    Y = y0 + np.linspace(0.0, 0.1, 10)[:, None]
    Y[6] = y0 + 2.5
    sequence = robot('delta')
    for y in Y[:6]:
        sequence.complete_positions(y)
    with pytest.raises(ModelError) as alone:
        sequence.complete_positions(Y[6])
    with pytest.raises(ModelError) as batched:
        Batch(model).complete_positions(Y)
    assert str(batched.value) == f'row 6: {alone.value}'
