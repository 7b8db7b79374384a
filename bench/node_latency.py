"""Latency of the dynamics node as a client sees it, on quadruped_rotors, against the rclpy floor.

The node runs in its own process, configured by config/dynamics_node.yaml with the quadruped; this
process is the client, over DDS on the loopback interface. Prints the time until the node answers
its first service call (ready time, numba cache warm), the p50/p99 round-trip time of each service
(after a few warm-up calls) and of the torque stream: joint_states published at --rate Hz for
--seconds s (default 1 kHz for 5 s), latency from each publish to the arrival of the
computed_torques message with the same stamp. Then the stream holding the four feet
(stream.contacts, four point contacts: Model.contact_bias_forces per message; --contacts-rate,
default 200 Hz) against the library call alone (the completion and contact_bias_forces on the
sender's states, in this process) plus the relay floor: the node's per-message cost over what no
node can avoid (target <= 1.3x). The floors: a bare rclpy service (InverseDynamics type, fixed
answer) and a bare relay (joint_states -> JointState, the node's QoS), each in a
process of its own, spun twice over: by rclpy.spin (rclpy's default SingleThreadedExecutor, the
plain rclpy node) and as the node spins (FLOORS: its executor, rclpy's EventsExecutor where it
exists, in its spin_once loop), which measures what the node adds to the same rclpy machinery. The
node and the floors take turns for --rounds rounds (default 3), so that the machine's load hits
both sides of a ratio alike; percentiles are of the samples pooled over the rounds, and the ratios
node / floor are printed pooled and per round. With --chrt the served processes (node and floors)
then run again under `chrt -f 50` (real-time FIFO priority 50; needs root or CAP_SYS_NICE).

Usage: .venv/bin/python bench/node_latency.py [--calls N] [--rate HZ] [--seconds S] [--rounds R]
[--chrt] (the script runs itself with --sender, --bare-service or --bare-relay as its helper
processes)
"""

import argparse
import itertools
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
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_ID = 63               # used unless ROS_DOMAIN_ID is set
NAMESPACE = f'/bench_{os.getpid()}'     # of the served process under test (_new_namespace)
NODE = f'{NAMESPACE}/dynamics_node'
_PROCESSES = itertools.count()
WARM_UP_CALLS = 10
INVERSE_LABEL = 'inverse_dynamics'
FEET = ['FL_foot', 'FR_foot', 'HL_foot', 'HR_foot']


def start(command, prefix):
    """A served process (command after prefix, e.g. chrt), output discarded."""
    return subprocess.Popen([*prefix, *command], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def node_command(*parameters):
    """The node (namespace NAMESPACE) as `make run` starts it, with more -p parameters."""
    return [str(Path(sys.executable).parent / 'dynamics_node'), '--ros-args', '-r',
            f'__ns:={NAMESPACE}', '--params-file', str(ROOT / 'config' / 'dynamics_node.yaml'),
            '-p', 'robot_description_file:=quadruped_rotors',
            *(arg for parameter in parameters for arg in ('-p', parameter))]


CONTACTS = 'stream.contacts:=[' + ', '.join(f"'{foot}:3D'" for foot in FEET) + ']'


FLOORS = ('rclpy.spin', 'node executor')


def floor_command(kind, spin):
    """A bare rclpy process: kind 'service' or 'relay' (name NODE as the node's), spin one of
    FLOORS."""
    return [sys.executable, __file__, f'--bare-{kind}', NAMESPACE, spin]


def bare_service(namespace, spin):
    """An InverseDynamics service at NODE/inverse_dynamics that answers a fixed response."""
    rclpy.init()
    node = rclpy.create_node('dynamics_node', namespace=namespace)
    answer = InverseDynamics.Response(success=True, name=[f'j{i}' for i in range(12)],
                                      effort=[0.5] * 12)

    def callback(request, response):
        return answer
    node.create_service(InverseDynamics, f'{namespace}/dynamics_node/inverse_dynamics', callback)
    _spin(node, spin)


def bare_relay(namespace, spin):
    """joint_states -> NODE/computed_torques (header copied, 12 efforts), the node's QoS."""
    from dynamics_node.ros.stream import JOINT_STATES_QOS, OUTPUT_QOS
    rclpy.init()
    node = rclpy.create_node('dynamics_node', namespace=namespace)
    publisher = node.create_publisher(JointState, f'{namespace}/dynamics_node/computed_torques',
                                      OUTPUT_QOS)
    output = JointState(name=[f'j{i}' for i in range(12)], effort=[0.5] * 12)

    def relay(msg):
        output.header = msg.header
        publisher.publish(output)
    node.create_subscription(JointState, f'{namespace}/joint_states', relay, JOINT_STATES_QOS)
    _spin(node, spin)


def _spin(node, spin):
    """Spin node with rclpy.spin, or as the dynamics node spins its own (the same executor and
    loop)."""
    from dynamics_node.ros.node import executor_of, spin as spin_until_shutdown
    try:
        if spin == 'rclpy.spin':
            rclpy.spin(node)
        else:
            spin_until_shutdown(executor_of(node), node.get_logger())
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


def service_requests(names):
    """(label, type, service, request) of each service, at a bent-knee standing pose."""
    state = JointState(name=names, position=[0.0, 0.8, -1.6] * 4, velocity=[0.1] * 12,
                       effort=[1.0] * 12)
    forward = ForwardDynamics.Request(state=state)
    inverse = InverseDynamics.Request(state=state, acceleration=[0.5] * 12)
    osim = InverseOperationalSpaceInertia.Request(state=state, links=FEET)
    return [('describe_model', DescribeModel, DescribeModel.Request()),
            ('forward_dynamics', ForwardDynamics, forward),
            (INVERSE_LABEL, InverseDynamics, inverse),
            ('inverse_operational_space_inertia (4 feet)', InverseOperationalSpaceInertia, osim)]


def round_trips(node, executor, srv_type, service, request, calls):
    """Seconds per call of `calls` calls after WARM_UP_CALLS; raises on a failed call. A warm-up
    call whose response does not come within 2 s is sent again (at most 3 times): right after
    discovery the server's response writer may not have matched this client yet and drop the
    response (the service discovery race, ros2/rmw_fastrtps#842; it stopped one make bench here, at
    a bare floor service)."""
    client = node.create_client(srv_type, f'{NODE}/{service}')
    if not client.wait_for_service(timeout_sec=30.0):
        raise RuntimeError(f'{service} is not available')
    times, lost, i = [], 0, 0
    while i < WARM_UP_CALLS + calls:
        start = time.perf_counter()
        future = client.call_async(request)
        executor.spin_until_future_complete(future,
                                            timeout_sec=10.0 if i >= WARM_UP_CALLS else 2.0)
        elapsed = time.perf_counter() - start
        response = future.result()
        if response is None and i < WARM_UP_CALLS and lost < 3:
            lost += 1
            continue
        if response is None or not getattr(response, 'success', True):
            raise RuntimeError(f'{service} failed: {getattr(response, "message", "timeout")}')
        if i >= WARM_UP_CALLS:
            times.append(elapsed)
        i += 1
    node.destroy_client(client)
    return np.array(times)


def stream_latencies(node, executor, names, rate, seconds):
    """(latencies s, received, sent) of joint_states at rate Hz for seconds s. The messages come
    from a sender process of their own (so that this process's receiving does not delay the
    sending), each stamped with its wall-clock send time (fresh for stream.max_age), which the node
    copies to its answer."""
    arrivals = {}
    subscription = node.create_subscription(
        JointState, f'{NODE}/computed_torques',
        lambda msg: arrivals.setdefault((msg.header.stamp.sec, msg.header.stamp.nanosec),
                                        time.time_ns()),
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    publisher = node.create_publisher(JointState, f'{NAMESPACE}/joint_states',
                                      qos_profile_sensor_data)
    _prime(executor, publisher, arrivals, names)
    node.destroy_publisher(publisher)
    sender = subprocess.Popen([sys.executable, __file__, '--sender', NAMESPACE, str(rate),
                               str(seconds)])
    while sender.poll() is None:
        executor.spin_once(timeout_sec=0.01)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    if sender.returncode:
        raise RuntimeError(f'the joint_states sender failed ({sender.returncode})')
    node.destroy_subscription(subscription)
    latencies = [arrival - (sec * 1_000_000_000 + nanosec)
                 for (sec, nanosec), arrival in arrivals.items()]
    return np.array(latencies) * 1e-9, len(latencies), int(rate * seconds)


def _prime(executor, publisher, arrivals, names):
    """Publish JointStates of the joints names at zero (zero stamp: never stale, before any send
    time) until one is answered, so that the node's output is matched and every joint its stream
    waits for has arrived; the answers are then forgotten."""
    msg = JointState(name=list(names), position=[0.0] * len(names))
    end = time.monotonic() + 10.0
    while not arrivals and time.monotonic() < end:
        publisher.publish(msg)
        for _ in range(5):
            executor.spin_once(timeout_sec=0.01)
    if not arrivals:
        raise RuntimeError('no computed_torques answer within 10 s')
    executor.spin_once(timeout_sec=0.1)
    arrivals.clear()


def sender_states(rate, seconds):
    """(names, [(positions, velocities)]) of the joint_states the sender publishes."""
    names = [f'{leg}_{joint}_joint' for leg in ('FL', 'FR', 'HL', 'HR')
             for joint in ('abad', 'hip', 'knee')]
    phases = 2 * np.pi * np.arange(int(rate * seconds)) / rate
    return names, [([0.3 * np.sin(phase), 0.8, -1.6] * 4,
                    [0.6 * np.pi * np.cos(phase), 0.0, 0.0] * 4) for phase in phases]


def library_times(rate, seconds):
    """Seconds per message of the library's part of the stream holding the four feet, on the
    sender's states: complete_positions and contact_bias_forces (as the node calls them), one call
    per period at rate Hz as the stream makes them (back to back they take about half as long: the
    caches stay warm; 0.66 against 1.5 ms every 5 ms, on the shared 2-core machine)."""
    from dynamics_node import bundled_model, Contact, load_model
    from dynamics_node.ros.conversions import JointLayout, StreamInput
    model = load_model(bundled_model('quadruped_rotors'))
    model.warm_up()
    contacts = [Contact(foot, '3D') for foot in FEET]
    stream = StreamInput(JointLayout(model))
    names, states = sender_states(rate, seconds)
    staged = [tuple(x.copy() for x in stream.stage(names, positions, velocities))
              for positions, velocities in states]
    times, begin = [], time.perf_counter()
    for i, (positions, velocities) in enumerate(staged):
        time.sleep(max(0.0, begin + i / rate - time.perf_counter()))
        start = time.perf_counter()
        q = model.complete_positions(positions)
        model.contact_bias_forces(q, velocities, contacts, info=True)
        times.append(time.perf_counter() - start)
    return np.array(times)


def send(namespace, rate, seconds):
    """Sender process: once the node's subscription is matched, publish joint_states at rate Hz for
    seconds s, like a robot driver (after a stall the schedule moves on, no catch-up burst)."""
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    node = rclpy.create_node('joint_states_sender', namespace=namespace, context=context)
    publisher = node.create_publisher(JointState, f'{namespace}/joint_states',
                                      qos_profile_sensor_data)
    end = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(1.0)                      # let the matching settle in both directions
    names, states = sender_states(rate, seconds)
    start = time.perf_counter()
    for i, (positions, velocities) in enumerate(states):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            start -= delay
        msg = JointState(name=names, position=positions, velocity=velocities)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
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


def percentiles(seconds):
    return np.percentile(seconds * 1e3, [50, 99])


def row(label, seconds, note=''):
    p50, p99 = percentiles(seconds)
    print(f'  {label:44s} {p50:8.2f} {p99:8.2f}  {note}')


def stop(process):
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        process.kill()


def run(node, executor, names, args, prefix):
    """One table: the node's services and stream against the floors, in args.rounds rounds that
    each start the node, the bare service and the bare relay in turn (so that a change of the
    machine's load hits both sides of a ratio alike); samples pooled over the rounds, ratios per
    round too."""
    samples = {}
    ready = []
    ratios = []
    for round_ in range(args.rounds):
        this = {}
        _new_namespace()
        started = time.perf_counter()
        process = start(node_command(), prefix)
        try:
            ready.append(_wait_ready(node, executor) - started)
            for label, srv_type, request in service_requests(names):
                this[label] = round_trips(node, executor, srv_type, label.split()[0], request,
                                          args.calls)
            this['stream'], received, sent = stream_latencies(node, executor, names, args.rate,
                                                              args.seconds)
            this['stream answered'] = (received, sent)
        finally:
            stop(process)
        _new_namespace()
        process = start(node_command(CONTACTS), prefix)
        try:
            _wait_ready(node, executor)
            this['contacts'], received, sent = stream_latencies(node, executor, names,
                                                                args.contacts_rate, args.seconds)
            this['contacts answered'] = (received, sent)
        finally:
            stop(process)
        this['library'] = library_times(args.contacts_rate, args.seconds)
        inverse = service_requests(names)[2]
        for spin in FLOORS:
            _new_namespace()
            process = start(floor_command('service', spin), prefix)
            try:
                this[f'service {spin}'] = round_trips(node, executor, inverse[1],
                                                      'inverse_dynamics', inverse[2], args.calls)
            finally:
                stop(process)
            _new_namespace()
            process = start(floor_command('relay', spin), prefix)
            try:
                this[f'relay {spin}'], received, sent = stream_latencies(node, executor, names,
                                                                         args.rate, args.seconds)
                this[f'relay {spin} answered'] = (received, sent)
            finally:
                stop(process)
        ratios.append({spin: _ratios(this, spin) for spin in FLOORS})
        for key, value in this.items():
            if key.endswith('answered'):
                samples[key] = tuple(np.add(samples.get(key, (0, 0)), value))
            else:
                samples[key] = np.concatenate((samples.get(key, np.zeros(0)), value))
    print(f'  node ready (first describe_model answer after start): {np.median(ready):.2f} s '
          f'median of {len(ready)} starts')
    print(f'  {"":44s} {"p50 ms":>8s} {"p99 ms":>8s}')
    for label, *_ in service_requests(names):
        row(f'~/{label}', samples[label], f'{args.calls} calls x {args.rounds}')
    row('joint_states -> ~/computed_torques', samples['stream'],
        '{}/{} answered at {:.0f} Hz, {:g} s x {}'.format(*samples['stream answered'], args.rate,
                                                          args.seconds, args.rounds))
    row('  the same, holding four point feet', samples['contacts'],
        '{}/{} answered at {:.0f} Hz'.format(*samples['contacts answered'], args.contacts_rate))
    row('  library: completion + contact_bias_forces', samples['library'],
        f'in this process, one call per period at {args.contacts_rate:.0f} Hz')
    for spin in FLOORS:
        row(f'floor, {spin}: bare service', samples[f'service {spin}'],
            f'{args.calls} calls x {args.rounds}')
        row(f'floor, {spin}: bare relay', samples[f'relay {spin}'],
            '{}/{} answered'.format(*samples[f'relay {spin} answered']))
    for spin in FLOORS:
        service, stream_p50, stream_p99, _ = _ratios(samples, spin)
        print(f'  ratios to the {spin} floor, pooled: inverse_dynamics p50 {service:.2f}x the '
              f'bare service (target <= 1.3); stream p50 {stream_p50:.2f}x, p99 {stream_p99:.2f}x '
              'the bare relay (targets <= 1.3, <= 1.5)')
        print('    per round: '
              + '; '.join('{:.2f} / {:.2f} / {:.2f}'.format(*r[spin][:3]) for r in ratios))
    for spin in FLOORS:
        print(f'  stream holding four feet, p50: {_contact_ratio(samples, spin):.2f}x the library '
              f'call + the {spin} relay floor (target <= 1.3); per round: '
              + ', '.join(f'{r[spin][3]:.2f}' for r in ratios))


def _new_namespace():
    """A namespace of its own for the next served process: a client must not find the entities of
    the previous one in its discovery cache and send to them."""
    global NAMESPACE, NODE
    NAMESPACE = f'/bench_{os.getpid()}_{next(_PROCESSES)}'
    NODE = f'{NAMESPACE}/dynamics_node'


def _ratios(samples, spin):
    """(inverse_dynamics p50, stream p50, stream p99), each over its floor's spun by spin."""
    service = percentiles(samples[INVERSE_LABEL])[0] / percentiles(samples[f'service {spin}'])[0]
    stream_p50, stream_p99 = percentiles(samples['stream']) / percentiles(samples[f'relay {spin}'])
    return service, stream_p50, stream_p99, _contact_ratio(samples, spin)


def _contact_ratio(samples, spin):
    """The stream holding four feet, p50, over the library call's p50 plus the relay floor's."""
    floor = percentiles(samples['library'])[0] + percentiles(samples[f'relay {spin}'])[0]
    return percentiles(samples['contacts'])[0] / floor


def main():
    helpers = {'--sender': lambda a: send(a[0], float(a[1]), float(a[2])),
               '--bare-service': lambda a: bare_service(a[0], a[1]),
               '--bare-relay': lambda a: bare_relay(a[0], a[1])}
    if sys.argv[1:2] and sys.argv[1] in helpers:
        return helpers[sys.argv[1]](sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calls', type=int, default=200, help='timed calls per service')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint_states rate, Hz')
    parser.add_argument('--contacts-rate', type=float, default=200.0,
                        help='joint_states rate of the stream holding four feet, Hz (below the '
                        "rate it sustains, so that an input does not wait for the previous one's "
                        'computation)')
    parser.add_argument('--seconds', type=float, default=5.0,
                        help='joint_states duration per round, s')
    parser.add_argument('--rounds', type=int, default=3,
                        help='rounds of node, bare service, bare relay')
    parser.add_argument('--chrt', action='store_true',
                        help='also run the served processes under chrt -f 50')
    args = parser.parse_args()
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('ROS_DOMAIN_ID') or str(DOMAIN_ID)
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    node = rclpy.create_node('node_latency', namespace=NAMESPACE, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    names = [f'{leg}_{joint}_joint' for leg in ('FL', 'FR', 'HL', 'HR')
             for joint in ('abad', 'hip', 'knee')]
    try:
        for prefix in ([], ['chrt', '-f', '50']) if args.chrt else ([],):
            print('dynamics node latency, quadruped_rotors '
                  f'({" ".join(prefix) or "normal priority"}; each process its own, loopback DDS)')
            run(node, executor, names, args, prefix)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


if __name__ == '__main__':
    main()
