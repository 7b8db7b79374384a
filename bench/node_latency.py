"""Latency of the dynamics node as a client sees it, on the default robot (quadruped_rotors).

The node runs in its own process, configured by config/dynamics_node.yaml; this process is the
client, over DDS on the loopback interface. Prints the time until the node answers its first
service call (ready time, numba cache warm), the p50/p99 round-trip time of each service (after a few
warm-up calls) and of the torque stream: joint_states published at --rate Hz for --seconds s (default
1 kHz for 10 s), latency from each publish to the arrival of the computed_torques message with the
same stamp.

Usage: .venv/bin/python bench/node_latency.py [--calls N] [--rate HZ] [--seconds S]
(the script runs itself with --sender NAMESPACE RATE SECONDS as the joint_states sender process)
"""

import argparse
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_ID = 63               # used unless ROS_DOMAIN_ID is set
NAMESPACE = f'/bench_{os.getpid()}'
NODE = f'{NAMESPACE}/dynamics_node'
WARM_UP_CALLS = 10
FEET = ['FL_foot', 'FR_foot', 'HL_foot', 'HR_foot']


def start_node():
    """The node process (default configuration, namespace NAMESPACE), output discarded."""
    return subprocess.Popen(
        [str(Path(sys.executable).parent / 'dynamics_node'), '--ros-args', '-r',
         f'__ns:={NAMESPACE}', '--params-file', str(ROOT / 'config' / 'dynamics_node.yaml')],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def service_requests(names):
    """(label, type, service, request) of each service, at a bent-knee standing pose."""
    state = JointState(name=names, position=[0.0, 0.8, -1.6] * 4, velocity=[0.1] * 12,
                       effort=[1.0] * 12)
    forward = ForwardDynamics.Request(state=state)
    inverse = InverseDynamics.Request(state=state, acceleration=[0.5] * 12)
    osim = InverseOperationalSpaceInertia.Request(state=state, links=FEET)
    return [('describe_model', DescribeModel, DescribeModel.Request()),
            ('forward_dynamics', ForwardDynamics, forward),
            ('inverse_dynamics', InverseDynamics, inverse),
            ('inverse_operational_space_inertia (4 feet)', InverseOperationalSpaceInertia, osim)]


def round_trips(node, executor, srv_type, service, request, calls):
    """Seconds per call of `calls` calls after WARM_UP_CALLS; raises on a failed call."""
    client = node.create_client(srv_type, f'{NODE}/{service}')
    if not client.wait_for_service(timeout_sec=30.0):
        raise RuntimeError(f'{service} is not available')
    times = []
    for i in range(WARM_UP_CALLS + calls):
        start = time.perf_counter()
        future = client.call_async(request)
        executor.spin_until_future_complete(future, timeout_sec=10.0)
        elapsed = time.perf_counter() - start
        response = future.result()
        if response is None or not getattr(response, 'success', True):
            raise RuntimeError(f'{service} failed: {getattr(response, "message", "timeout")}')
        if i >= WARM_UP_CALLS:
            times.append(elapsed)
    node.destroy_client(client)
    return np.array(times)


def stream_latencies(node, executor, names, rate, seconds):
    """(latencies s, received, sent) of joint_states at rate Hz for seconds s. The messages come from a
    sender process of their own (so that this process's receiving does not delay the sending), each
    stamped with its CLOCK_MONOTONIC send time, which the node copies to its answer."""
    arrivals = {}
    node.create_subscription(
        JointState, f'{NODE}/computed_torques',
        lambda msg: arrivals.setdefault((msg.header.stamp.sec, msg.header.stamp.nanosec),
                                        time.monotonic_ns()),
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    publisher = node.create_publisher(JointState, f'{NAMESPACE}/joint_states',
                                      qos_profile_sensor_data)
    _prime(executor, publisher, arrivals)
    node.destroy_publisher(publisher)
    sender = subprocess.Popen([sys.executable, __file__, '--sender', NAMESPACE, str(rate), str(seconds)])
    while sender.poll() is None:
        executor.spin_once(timeout_sec=0.01)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    if sender.returncode:
        raise RuntimeError(f'the joint_states sender failed ({sender.returncode})')
    latencies = [arrival - (sec * 1_000_000_000 + nanosec) for (sec, nanosec), arrival in arrivals.items()]
    return np.array(latencies) * 1e-9, len(latencies), int(rate * seconds)


def _prime(executor, publisher, arrivals):
    """Publish JointStates naming no joint (stamp 1 ns, before any send time) until one is answered,
    so that the node's output is matched; the answers are then forgotten."""
    msg = JointState()
    msg.header.stamp.nanosec = 1
    end = time.monotonic() + 10.0
    while not arrivals and time.monotonic() < end:
        publisher.publish(msg)
        for _ in range(5):
            executor.spin_once(timeout_sec=0.01)
    if not arrivals:
        raise RuntimeError('no computed_torques answer within 10 s')
    executor.spin_once(timeout_sec=0.1)
    arrivals.clear()


def send(namespace, rate, seconds):
    """Sender process: once the node's subscription is matched, publish joint_states at rate Hz for
    seconds s, like a robot driver (after a stall the schedule moves on, no catch-up burst)."""
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    node = rclpy.create_node('joint_states_sender', namespace=namespace, context=context)
    publisher = node.create_publisher(JointState, f'{namespace}/joint_states', qos_profile_sensor_data)
    end = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(1.0)                      # let the matching settle in both directions
    names = [f'{leg}_{joint}_joint' for leg in ('FL', 'FR', 'HL', 'HR') for joint in ('abad', 'hip', 'knee')]
    start = time.perf_counter()
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            start -= delay
        phase = 2 * np.pi * i / rate
        msg = JointState(name=names, position=[0.3 * np.sin(phase), 0.8, -1.6] * 4,
                         velocity=[0.6 * np.pi * np.cos(phase), 0.0, 0.0] * 4)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.monotonic_ns(), 1_000_000_000)
        publisher.publish(msg)
    node.destroy_node()
    rclpy.shutdown(context=context)


def _wait_ready(node, executor):
    """perf_counter time at which the node first answers describe_model with its robot."""
    client = node.create_client(DescribeModel, f'{NODE}/describe_model')
    end = time.monotonic() + 60.0
    while time.monotonic() < end:
        if client.wait_for_service(timeout_sec=0.01):
            future = client.call_async(DescribeModel.Request())
            executor.spin_until_future_complete(future, timeout_sec=5.0)
            if future.done() and future.result().robot_name:
                node.destroy_client(client)
                return time.perf_counter()
    raise RuntimeError('the node did not answer describe_model within 60 s')


def row(label, seconds, note=''):
    p50, p99 = np.percentile(seconds * 1e3, [50, 99])
    print(f'  {label:44s} {p50:8.2f} {p99:8.2f}  {note}')


def main():
    if sys.argv[1:2] == ['--sender']:
        namespace, rate, seconds = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
        return send(namespace, rate, seconds)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--calls', type=int, default=200, help='timed calls per service')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint_states rate, Hz')
    parser.add_argument('--seconds', type=float, default=10.0, help='joint_states duration, s')
    args = parser.parse_args()
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('ROS_DOMAIN_ID') or str(DOMAIN_ID)
    started = time.perf_counter()
    process = start_node()
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    node = rclpy.create_node('node_latency', namespace=NAMESPACE, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        names = [f'{leg}_{joint}_joint' for leg in ('FL', 'FR', 'HL', 'HR')
                 for joint in ('abad', 'hip', 'knee')]
        print('dynamics node latency, default robot quadruped_rotors (node in its own process, '
              'loopback DDS)')
        ready = _wait_ready(node, executor) - started
        print(f'  node ready (first describe_model answer after start): {ready:.2f} s')
        print(f'  {"":44s} {"p50 ms":>8s} {"p99 ms":>8s}')
        for label, srv_type, request in service_requests(names):
            service = label.split()[0]
            times = round_trips(node, executor, srv_type, service, request, args.calls)
            row(f'~/{label}', times, f'{len(times)} calls')
        latencies, received, sent = stream_latencies(node, executor, names, args.rate, args.seconds)
        row('joint_states -> ~/computed_torques', latencies,
            f'{received}/{sent} answered at {args.rate:.0f} Hz for {args.seconds:g} s')
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            process.kill()


if __name__ == '__main__':
    main()
