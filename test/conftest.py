"""Shared fixtures: bundled robots, their Pinocchio KKT oracles, random consistent states,
tolerances."""

import faulthandler
import fcntl
import functools
from importlib import metadata
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from dynamics_node import bundled_model, bundled_models, load_model  # noqa: E402
from oracle import KKTOracle  # noqa: E402
from tello import tello_oracle, TELLO_ROBOTS  # noqa: E402   the differentials' phi

ROBOTS = bundled_models()
# Agreement with the independent oracle: double-precision round-off through ~40-body recursions and
# dense factorizations stays far below this.
RTOL = 1e-9
SEED = int(os.environ.get('CLUSTER_DYNAMICS_TEST_SEED', '0'))
# The DDS domain of the tests: the environment's ROS_DOMAIN_ID, else one of 100..199 chosen by this
# process, so that two suites running at once on one machine (a CI beside a developer) are apart.
TEST_DOMAIN_ID = int(os.environ.get('ROS_DOMAIN_ID') or 100 + os.getpid() % 100)
# A line that Fast DDS's log writes into a process's standard output between colour codes, e.g.
# "[RTPS_TRANSPORT_SHM Error] Failed init_port ...: open_and_lock_file failed".
COLOUR = r'(\x1b\[[0-9;]*m)*'
MIDDLEWARE_LOG_LINE = re.compile(rf'\[{COLOUR}RTPS_[A-Z_]+{COLOUR} (Error|Warning|Info)\]')


# A test whose set-up, call or tear-down (module fixtures included) runs past HUNG_AFTER_S has
# hung: every thread's stack goes to the terminal and the run ends with status 1, rather than
# stalling until an outer limit with no word of where. A loaded machine starts the ROS tests' five
# nodes in well under a minute.
HUNG_AFTER_S = 600.0


def pytest_configure(config):
    """Keeps a copy of the terminal's standard error, which output capture leaves alone, and
    removes Fast DDS's zombie shared-memory ports and segments."""
    config.hang_report = os.fdopen(os.dup(sys.stderr.fileno()), 'w')
    clean_shared_memory()


def clean_shared_memory():
    """Removes Fast DDS's shared-memory ports and segments that no live process owns, as `fastdds
    shm clean` does (its tool needs psutil, which the venvs lack; it also leaves the ports whose
    lock files are gone): an owner holds its lock file (_el or _sl). A process killed while it
    held a port's mutex leaves the mutex locked: the next process to open that port regenerates
    it and waits on the mutex for ever, holding Python's lock (a suite once stalled so in its
    first node test, on a machine where earlier suites' nodes had been killed)."""
    directory = '/dev/shm'
    try:
        names = os.listdir(directory)
    except OSError:
        return
    owners = {match.group(1) for match in map(SHARED_MEMORY_FILE.match, names) if match}
    for owner in owners:
        files = [os.path.join(directory, owner + suffix) for suffix in ('_el', '_sl')]
        if any(held(path) for path in files if os.path.exists(path)):
            continue
        for path in files + [os.path.join(directory, owner),
                             os.path.join(directory, f'sem.{owner}_mutex')]:
            try:
                os.remove(path)
            except OSError:
                pass


# a Fast DDS port or segment (2.x: fastrtps_, 3.x: fastdds_), its lock file or its port's mutex;
# group 1 the port or segment
SHARED_MEMORY_FILE = re.compile(
    r'^(?:sem\.)?((?:fastrtps|fastdds)_(?:port\d+|[0-9a-z]{16}))(?:_el|_sl|_mutex)?$')


def held(path):
    """Whether a live process holds the lock file at path (an exclusive flock is refused)."""
    try:
        with open(path, 'ab') as file:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    faulthandler.dump_traceback_later(HUNG_AFTER_S, exit=True, file=item.config.hang_report)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def program_lines(lines):
    """The lines a process printed itself (read as they come from a pipe, or from a list), without
    the lines of the middleware's log."""
    return (line.rstrip('\n') for line in lines if not MIDDLEWARE_LOG_LINE.search(line))


def published_file(path):
    """Path of a robot file of example-robot-data, a test dependency that the set-up installs:
    missing, the test fails (it has nothing to run on)."""
    try:
        robots = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
    except metadata.PackageNotFoundError:
        pytest.fail('example-robot-data is not installed; `make setup` installs it')
    path = os.path.join(robots, path)
    if not os.path.exists(path):
        pytest.fail(f'example-robot-data has no {path}')
    return path


@functools.lru_cache(maxsize=None)
def robot(name, compiled=True):
    """A bundled robot on the numba fast path, or on the NumPy reference with compiled=False."""
    return load_model(bundled_model(name), compiled=compiled)


@functools.lru_cache(maxsize=None)
def oracle(name):
    if name in TELLO_ROBOTS:
        return tello_oracle(bundled_model(name), robot(name, None).joint_names)
    reference = KKTOracle(bundled_model(name))
    reference.set_layout(robot(name).joint_names)
    return reference


def random_independent_positions(model, rng):
    """Independent positions in [-0.6, 0.6] rad (unit quaternions for floating and spherical
    joints, planar x y theta in [-0.6, 0.6])."""
    q_ind = []
    for name in model.independent_joint_names:
        if name in model.split_joint_names:
            continue                           # a split joint's free directions take no position
        kind = model.joint_type[model.joint_names.index(name) + 1]
        if kind in ('floating', 'spherical'):
            quat = rng.normal(size=4)
            position = rng.uniform(-1, 1, 3) if kind == 'floating' else []
            q_ind.extend(np.concatenate((position, quat / np.linalg.norm(quat))))
        else:
            q_ind.extend(rng.uniform(-0.6, 0.6, 3 if kind == 'planar' else 1))
    return np.array(q_ind)


def random_state(model, rng):
    """Consistent random state: random independent positions completed by the library, independent
    velocities, torques and a wrench on every 3rd link."""
    q = model.complete_positions(random_independent_positions(model, rng))
    yd = rng.normal(size=model.ny)
    wrenches = {link: (rng.normal(size=3), rng.normal(size=3)) for link in model.links[1::3]}
    return q, yd, wrenches


def assert_close(actual, expected, name, rtol=RTOL):
    """|actual - expected| <= rtol * max(1, |expected|) entrywise, naming the quantity."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f'{name}: shape {actual.shape} != {expected.shape}'
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    error = float(np.max(np.abs(actual - expected), initial=0.0))
    assert error <= rtol * scale, f'{name}: max error {error:.3e} > {rtol:.0e} * {scale:.3g}'


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def _G(name, q):
    return oracle(name).null_space_G(q, robot(name).independent_v)
