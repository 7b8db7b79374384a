"""DynamicsClient (dynamics_node/ros/client.py) against a node over DDS: the README's client
example, a ModelError with the reason, an unanswered request sent again."""

import os
import subprocess
import sys
import threading
import time

from cluster_dynamics.srv import DescribeModel
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from conftest import assert_close, program_lines, robot
from dynamics_node import ModelError
from node_helpers import completed, NAMESPACE, ROOT, RTOL
from node_helpers import nodes, ros  # noqa: F401 - fixtures


def test_readme_client_example_runs(nodes):  # noqa: F811
    """The README's Python client example, run as written against the 'loop' node."""
    readme = (ROOT / 'README.md').read_text()
    blocks = [b.split('```')[0] for b in readme.split('```python\n')[1:]]
    example = next(b for b in blocks if 'DynamicsClient' in b)
    script = example.replace("'/dynamics_node'", repr(nodes['loop'].name))
    run = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                         timeout=60, env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    model = robot('linkage_leg')
    efforts = model.inverse_dynamics(completed('linkage_leg', [0.8, 0.8]), np.zeros(2),
                                     np.zeros(2))
    lines = list(program_lines(run.stdout.splitlines()))
    assert lines[0].startswith(str(dict(zip(model.independent_joint_names, efforts.round(3))))), \
        run.stdout
    assert lines[1].startswith('lcaba'), run.stdout


def test_client_raises_model_error_with_the_reason(ros, nodes):  # noqa: F811
    from dynamics_node.ros.client import DynamicsClient
    with DynamicsClient(nodes['loop'].name, context=ros.node.context) as dynamics:
        with pytest.raises(ModelError, match=r"inverse_operational_space_inertia: unknown link "
                                             r"'hand'"):
            dynamics.inverse_osim(['crank_joint', 'ankle_joint'], [0.8, 0.1], ['hand'])
        with pytest.raises(ModelError, match='q has 1 entries; expected 2'):
            dynamics.inverse_dynamics(['crank_joint', 'ankle_joint'], [0.8], [0, 0], [0, 0])
        matrix = dynamics.inverse_osim(['crank_joint', 'ankle_joint'], [0.8, 0.1], ['foot'])
    assert_close(matrix, robot('linkage_leg').inverse_osim(completed('linkage_leg', [0.8, 0.1]),
                                                           ['foot']), 'Lambda^-1', RTOL)


def test_client_sends_an_unanswered_request_again(ros):  # noqa: F811
    """A response lost on the way (as DDS can lose one while discovery completes): the client
    sends the request again after RESEND_S and takes the answer to the repeat. The stand-in node
    here fails the first request before it answers."""
    from dynamics_node.ros.client import DynamicsClient, RESEND_S
    node = rclpy.create_node('lossy', namespace=NAMESPACE, context=ros.node.context)
    requests = []

    def describe(request, response):
        requests.append(time.monotonic())
        if len(requests) == 1:
            raise RuntimeError('the first answer is lost')
        response.success, response.robot_name = True, 'lossy'
        return response

    node.create_service(DescribeModel, 'lossy/describe_model', describe)
    executor = SingleThreadedExecutor(context=ros.node.context)
    executor.add_node(node)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                executor.spin_once(timeout_sec=0.01)
            except RuntimeError:                 # the lost answer
                pass
    server = threading.Thread(target=serve)
    server.start()
    try:
        with DynamicsClient(f'{NAMESPACE}/lossy', context=ros.node.context,
                            timeout=10.0) as dynamics:
            assert dynamics.describe().robot_name == 'lossy'
    finally:
        stop.set()
        server.join()
        executor.shutdown()
        node.destroy_node()
    assert len(requests) == 2 and requests[1] - requests[0] >= 0.9 * RESEND_S, requests
