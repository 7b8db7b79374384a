"""dynamics_offline in windows (dynamics_node/offline/scale.py): the same bits from one process, a
local Dask cluster of two workers (--workers 2), an existing cluster (--scheduler) and a cluster
that loses a worker in the middle of the job (a worker plugin ends the process that starts a
window, once); several bags at once; a window's filtered derivatives are those of the whole
recording and its drops those one process counts; the options refused by name. Bags are written
by the tests (test_torques.py's recordings)."""

import os
import re
import socket
import subprocess
import sys

import cloudpickle
import numpy as np
import pytest
from distributed import Client, LocalCluster, WorkerPlugin

from conftest import robot
from dynamics_node import bundled_extended_urdf, bundled_model, load_model
from dynamics_node.offline import bags, cli, scale
from dynamics_node.offline.torques import torques
from test_torques import recording, walking, write_bag, write_walking_bag

WINDOW_STATES = '100'                    # six windows of a recording of 600 states
NOT_FINITE, OUT_OF_REACH = [5, 99, 350], [100, 420]      # around the windows' boundaries
LOST_WINDOW = 3


@pytest.fixture(scope='module')
def cluster():
    """A client of a local Dask cluster of two worker processes, one thread each."""
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local, \
            Client(local) as client:
        yield client


@pytest.fixture
def limping(tmp_path, rng):
    """A bag of the linkage leg's positions alone (its velocities and accelerations filtered)
    with states not finite and out of the mechanism's reach around the windows' boundaries."""
    model = robot('linkage_leg')
    t_ns, names, Q, *_ = recording(model, rng)
    crank = model.joint_names.index('crank_joint')
    Q[NOT_FINITE, crank] = np.nan
    Q[OUT_OF_REACH, crank] += 5.0
    write_bag(tmp_path / 'limp.mcap', t_ns, names, Q, model)
    return tmp_path / 'limp.mcap'


class LoseWorker(WorkerPlugin):
    """Ends the worker process that starts window `window` (the nanny starts a new one, Dask runs
    the window again) the first time: where the marker file does not exist yet, made first."""

    def __init__(self, marker, window):
        self.marker, self.window = marker, window

    def transition(self, key, start, finish, **kwargs):
        if finish == 'executing' and str(key).startswith(f'window-{self.window}-'):
            try:
                open(self.marker, 'x').close()
            except FileExistsError:
                return
            os._exit(1)


def run(argv, out, capsys):
    """The summary of `dynamics_offline torques` with argv, its time taken out, writing out."""
    cli.main(['torques', *argv, '--out', str(out)])
    return re.sub(r' in [0-9.]+ s \([0-9]+ states/s\)', '', capsys.readouterr().out)


def assert_same_files(a, b):
    """The bags a and b (and their tables) are the same bytes."""
    for suffix in ('.mcap', '.parquet'):
        assert a.with_suffix(suffix).read_bytes() == b.with_suffix(suffix).read_bytes(), suffix


def assert_same_bits(a, b):
    """Torques a and b of the same states, bit for bit (their Motions too)."""
    for x, y in [(a.stamps, b.stamps), (a.efforts, b.efforts), (a.base_wrench, b.base_wrench)] + [
            (getattr(a.motion, f), getattr(b.motion, f))
            for f in ('positions', 'velocities', 'accelerations')]:
        assert (x is None and y is None) or (x.shape == y.shape and x.tobytes() == y.tobytes())
    assert a.motion.dropped == b.motion.dropped and a.motion.filtered == b.motion.filtered


def test_one_process_and_two_workers_write_the_same_bits(limping, tmp_path, capsys):
    argv = [str(limping), '--robot', bundled_model('linkage_leg'), '--window-states',
            WINDOW_STATES]
    one = run(argv, tmp_path / 'one.mcap', capsys)
    assert '595 of 600 states answered; filtered: velocities, accelerations; dropped: ' \
           '3 not finite, 2 completion' in one
    assert run(argv + ['--workers', '2'], tmp_path / 'two.mcap', capsys) == one.replace(
        'one.', 'two.')
    assert_same_files(tmp_path / 'one.mcap', tmp_path / 'two.mcap')


def test_a_cluster_answers_each_window_as_one_process(limping, cluster):
    """Every array of the Torques and its Motion bit for bit, the drops as one process counts
    them over the whole recording (torques.torques on a freshly loaded model)."""
    text = open(bundled_model('linkage_leg'), encoding='utf-8').read()
    recordings = {'limp': bags.read_joint_states(limping)}
    here = scale.torques(text, recordings, window_states=100)['limp']
    assert len(here.stamps) == 595
    assert_same_bits(scale.torques(text, recordings, window_states=100, client=cluster)['limp'],
                     here)
    whole = torques(load_model(bundled_model('linkage_leg')), recordings['limp'])
    assert here.motion.dropped == whole.motion.dropped == {'not finite': 3, 'completion': 2}


def test_a_lost_worker_changes_no_bit(limping, cluster, tmp_path, capsys):
    """The worker that starts window 3 ends in the middle of the job: Dask runs the windows it
    was running or held again; no state is lost or answered twice."""
    argv = [str(limping), '--robot', bundled_model('linkage_leg'), '--window-states',
            WINDOW_STATES]
    one = run(argv, tmp_path / 'one.mcap', capsys)
    marker = tmp_path / 'lost'
    cloudpickle.register_pickle_by_value(sys.modules[__name__])      # no import on the workers
    cluster.register_plugin(LoseWorker(str(marker), LOST_WINDOW), name='lose-worker')
    try:
        lost = run(argv + ['--scheduler', cluster.scheduler.address], tmp_path / 'lost.mcap',
                   capsys)
    finally:
        cluster.unregister_worker_plugin('lose-worker')
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists(), 'no worker was lost'
    assert lost == one.replace('one.', 'lost.')
    assert_same_files(tmp_path / 'one.mcap', tmp_path / 'lost.mcap')


def test_scheduler_answers_a_floating_base_alike(cluster, tmp_path, rng, capsys):
    """The quadruped from its odometry (base accelerations filtered) on the cluster of
    --scheduler."""
    model = robot('quadruped_rotors')
    t_ns, _, Q, poses, yd, ydd, _ = walking(model, rng)
    write_walking_bag(tmp_path / 'walk.mcap', model, t_ns, Q, poses, yd, ydd)
    argv = [str(tmp_path / 'walk.mcap'), '--robot', bundled_model('quadruped_rotors'),
            '--odometry', '/odom', '--window-states', WINDOW_STATES]
    one = run(argv, tmp_path / 'one.mcap', capsys)
    assert '600 of 600 states answered; filtered: base accelerations' in one
    assert run(argv + ['--scheduler', cluster.scheduler.address], tmp_path / 'two.mcap',
               capsys) == one.replace('one.', 'two.')
    assert_same_files(tmp_path / 'one.mcap', tmp_path / 'two.mcap')


def test_several_bags_at_once(cluster, tmp_path, rng, capsys):
    """Two recordings of the Extended URDF leg, one filtered and one with its velocities and
    accelerations, on a cluster into a directory: each bag's files and summary are those of the
    bag alone on one process."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    model = load_model(urdf, closures=closures)
    t_ns, names, Q, yd, ydd, _ = recording(model, rng)
    write_bag(tmp_path / 'filtered.mcap', t_ns, names, Q, model)
    write_bag(tmp_path / 'measured.mcap', t_ns[:450], names, Q, model, yd, ydd)
    argv = ['--robot', urdf, '--closures', closures, '--window-states', WINDOW_STATES]
    both = run([str(tmp_path / 'filtered.mcap'), str(tmp_path / 'measured.mcap'), *argv,
                '--scheduler', cluster.scheduler.address], tmp_path / 'out', capsys)
    lines = both.splitlines()
    assert len(lines) == 3 and lines[2].startswith('1050 states of 2 bags answered')
    for bag, line in zip(('filtered', 'measured'), lines):
        alone = run([str(tmp_path / f'{bag}.mcap'), *argv], tmp_path / f'{bag}-alone.mcap',
                    capsys)
        assert line == f'{tmp_path / bag}.mcap: ' + alone.strip().replace(
            f'{bag}-alone.', f'out/{bag}.')
        assert_same_files(tmp_path / 'out' / f'{bag}.mcap', tmp_path / f'{bag}-alone.mcap')
    assert 'filtered: velocities, accelerations' in lines[0] and 'filtered: nothing' in lines[1]


@pytest.mark.parametrize('length', (1, 7, 100, 601))
def test_a_window_filters_as_the_whole_recording(limping, length):
    """The windows share the states out once; their velocities and accelerations are the whole
    recording's bit for bit, a single window's torques are torques.torques' on a fresh model."""
    n, window = 597, 21
    shares = list(scale.windows(n, length, window))
    assert [i for own, context in shares
            for i in range(context.start + own.start, context.start + own.stop)] == list(range(n))
    text = open(bundled_model('linkage_leg'), encoding='utf-8').read()
    recordings = {'limp': bags.read_joint_states(limping)}
    windowed = scale.torques(text, recordings, window_states=length, window=window)['limp']
    fresh = torques(load_model(bundled_model('linkage_leg')), recordings['limp'], window=window)
    for name in ('velocities', 'accelerations'):
        assert getattr(windowed.motion, name).tobytes() == getattr(fresh.motion, name).tobytes()
    np.testing.assert_allclose(windowed.efforts, fresh.efforts, rtol=1e-9, atol=1e-9)
    if length > n:
        assert_same_bits(windowed, fresh)


def test_options_refused_by_name(limping, tmp_path, capsys):
    for folder in ('a', 'b'):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / 'limp.mcap').write_bytes(limping.read_bytes())
    twins = [str(tmp_path / folder / 'limp.mcap') for folder in ('a', 'b')]
    cases = [
        ([str(limping), '--workers', '0'],
         "argument --workers: '0' is not a whole number of at least 1"),
        ([str(limping), '--window-states', 'many'],
         "argument --window-states: 'many' is not a whole number of at least 1"),
        ([str(limping), '--workers', '2', '--scheduler', 'tcp://127.0.0.1:8786'],
         'argument --scheduler: not allowed with argument --workers'),
        (twins, "two bags are named 'limp'"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as stop:
            cli.main(['torques', *argv, '--robot', bundled_model('linkage_leg'), '--out',
                      str(tmp_path / 'out')])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_unreachable_scheduler_is_named(limping, tmp_path):
    """A scheduler address where nothing listens: status 2 within the connect timeout (the test
    allows 60 s), naming the address."""
    with socket.socket() as free:
        free.bind(('127.0.0.1', 0))
        address = f'tcp://127.0.0.1:{free.getsockname()[1]}'
    done = subprocess.run(
        [sys.executable, '-m', 'dynamics_node.offline.cli', 'torques', str(limping), '--robot',
         bundled_model('linkage_leg'), '--scheduler', address, '--out',
         str(tmp_path / 'out.mcap')], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"cannot reach the Dask scheduler '{address}'" in done.stderr
    assert not (tmp_path / 'out.mcap').exists()
