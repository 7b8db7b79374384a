"""The node process's end at a signal: during the warm-up's compilation, and after client
processes were killed mid-call."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import program_lines, TEST_DOMAIN_ID
from node_helpers import HANG, NodeProcess, SESSION, wait_for_output

# The domain of the processes below, apart from the suite's: Fast DDS's shared-memory ports belong
# to a domain, and a process killed (or ended by its deadline) in the middle of a transfer can
# leave its port's mutex locked, on which any later user of the port waits for ever, GIL held.
APART = {'ROS_DOMAIN_ID': str(200 + TEST_DOMAIN_ID % 33),
         'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}


def test_sigterm_during_warm_up_ends_the_node_before_the_compilation(tmp_path):
    """With numba's cache empty the node compiles for many seconds: it says so, and SIGTERM ends it
    without waiting for the compilation (which would log 'serving')."""
    process = NodeProcess('warm_up', env={**APART, 'NUMBA_CACHE_DIR': str(tmp_path)},
                          robot_description_file='linkage_leg')
    try:
        assert wait_for_output(process, 'numba is compiling'), process.output()
        process.process.send_signal(signal.SIGTERM)
        process.process.wait(timeout=HANG)
        assert process.process.returncode == 0, process.output()
        assert 'serving' not in process.output()
    finally:
        process.stop()


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_a_node_that_served_several_processes_ends_at_a_signal(signum):
    """Sessions from four client processes, two of them killed in the middle of their calls: at
    the signal the node starts its exit deadline (a watchdog that ends the process, status 1, if
    leaving the ROS graph cleanly is held up by DDS) and ends: cleanly (status 0) or at the
    deadline (status 1), never a hang."""
    process = NodeProcess(f'served_{signum}', env=APART, robot_description_file='linkage_leg')
    clients = []
    try:
        clients = [subprocess.Popen([sys.executable, '-c', SESSION, process.name, str(calls)],
                                    text=True, stdout=subprocess.PIPE,
                                    env={**os.environ, **APART})
                   for calls in (5, 5, 100_000, 100_000)]
        for client in clients:
            assert next(program_lines(client.stdout)) == 'served'
        for client in clients[:2]:
            assert client.wait(timeout=HANG) == 0
        for client in clients[2:]:
            client.kill()
        process.process.send_signal(signum)
        process.process.wait(timeout=HANG)
        assert process.process.returncode in (0, 1), process.output()
        assert 'Traceback' not in process.output()
    finally:
        for client in clients:
            client.kill()
            client.wait()
        process.stop()
