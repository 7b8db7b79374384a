"""End-to-end tests of the dynamics node over real DDS (loopback only).

Each node runs in its own process, started as users start it: the .venv/bin/dynamics_node console
script with the shipped config/dynamics_node.yaml and -p overrides. The test process is the client,
with an rclpy Context of its own. Expected values come from the library in this process: every
service on the loop model linkage_leg (a four-bar knee with a geared rotor) and on the
floating-base quadruped_rotors; the torque stream; every kind of bad request; hot reload of the
description through the parameter and the topic.

The 500 Hz stream test runs the node exactly as configured by config/dynamics_node.yaml (the
default robot quadruped_rotors). Partial messages, modes and drops are tested on linkage_leg, where
the dependent joints are completed through the loop.
"""

from contextlib import contextmanager
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import threading
import time

from cluster_dynamics.msg import LinkWrench
from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rcl_interfaces.srv import SetParametersAtomically
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from conftest import assert_close, robot
from dynamics_node import bundled_extended_urdf, bundled_model, load_model, ModelError

# Used unless ROS_DOMAIN_ID is set in the environment (test_interfaces.py uses 61).
TEST_DOMAIN_ID = 62
ROOT = Path(__file__).resolve().parents[1]
EXECUTABLE = Path(sys.executable).parent / 'dynamics_node'
NAMESPACE = f'/test_node_{os.getpid()}'      # keeps concurrent runs on one domain apart
TIMEOUT = 10.0                              # s, for any single response
# The node runs the same library code on the same inputs; only the order of Newton warm starts
# may differ, which moves completed positions by far less than this.
RTOL = 1e-9
STREAM_RATE, STREAM_SECONDS = 500.0, 2.0
PRIMING = 99_999             # stamp index of the messages that open a stream connection
# linkage_leg closed[crank1] from the file's comment (loop residual below 1e-15 m).
LOOP_CLOSED = {'crank_joint': 0.8, 'motor_rotor_joint': 7.2, 'coupler_joint': -0.949180575309133,
               'shank_joint': 0.379278800703310, 'ankle_joint': 0.3}
BAD_URDF = '<robot name="broken"><link name="a"/><joint name="j" type="revolute"/></robot>'


def text(path):
    return Path(path).read_text()


class NodeProcess:
    """A dynamics_node process in namespace NAMESPACE/<ns>, its output kept in a log file."""

    def __init__(self, ns, **parameters):
        self.name = f'{NAMESPACE}/{ns}/dynamics_node'
        self.log = tempfile.NamedTemporaryFile('w+', prefix=f'dynamics_node_{ns}_', suffix='.log')
        overrides = [arg for key, value in parameters.items() for arg in ('-p', f'{key}:={value}')]
        self.process = subprocess.Popen(
            [str(EXECUTABLE), '--ros-args', '-r', f'__ns:={NAMESPACE}/{ns}', '--params-file',
             str(ROOT / 'config' / 'dynamics_node.yaml'), *overrides],
            stdout=self.log, stderr=subprocess.STDOUT, env=os.environ.copy())
        self.interrupted = False

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def interrupt(self):
        """Ask the node to shut down (Ctrl-C), once."""
        if self.process.poll() is None and not self.interrupted:
            self.process.send_signal(signal.SIGINT)
            self.interrupted = True

    def stop(self):
        """Interrupt the node, wait for its end (killed after 5 s), then drop its log."""
        self.interrupt()
        try:
            self.process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Client:
    """The test's ROS side: one node in a private context, spun by the calling thread."""

    def __init__(self, context):
        self.node = rclpy.create_node('test_node_client', namespace=NAMESPACE, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._clients = {}

    def call(self, srv_type, service, request=None, timeout=TIMEOUT):
        """The response of service to request (default: an empty request)."""
        client = self._clients.get(service)
        if client is None:
            client = self._clients[service] = self.node.create_client(srv_type, service)
        assert client.wait_for_service(timeout_sec=timeout), f'{service} is not available'
        future = client.call_async(srv_type.Request() if request is None else request)
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        assert future.done(), f'no response from {service} within {timeout} s'
        return future.result()

    def spin_for(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def spin_until(self, condition, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while not condition() and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
        return condition()

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()


@pytest.fixture(scope='module')
def ros():
    """A Client on the test domain, discovering this machine only."""
    saved = {key: os.environ.get(key) for key in ('ROS_AUTOMATIC_DISCOVERY_RANGE',
                                                  'ROS_DOMAIN_ID')}
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_DOMAIN_ID'] = os.environ.get('ROS_DOMAIN_ID') or str(TEST_DOMAIN_ID)
    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    client = Client(context)
    try:
        yield client
    finally:
        client.close()
        rclpy.shutdown(context=context)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope='module')
def nodes(ros):
    """Node processes, started together: 'default' (the shipped configuration), 'loop'
    (linkage_leg), 'floating' (quadruped_rotors, base state from the odom topic) and 'reload'
    (no description at start)."""
    # Fills numba's on-disk cache if it is cold, so that the nodes do not all compile at once.
    robot('linkage_leg').warm_up()
    started = {'default': NodeProcess('default'),
               'loop': NodeProcess('loop', robot_description_file='linkage_leg'),
               'floating': NodeProcess('floating', robot_description_file='quadruped_rotors',
                                       odometry_topic='odom'),
               'reload': NodeProcess('reload', robot_description_file="''")}
    try:
        for process in started.values():
            try:
                ros.call(DescribeModel, f'{process.name}/describe_model', timeout=30.0)
            except AssertionError as error:
                raise AssertionError(f'{error}; node output:\n{process.output()}') from None
        yield started
    finally:
        for process in started.values():
            process.interrupt()
        for process in started.values():
            process.stop()


def service(nodes, ns, name):
    return f'{nodes[ns].name}/{name}'


def set_parameters(ros, node_name, **values):
    """SetParametersResult of setting values (a double underscore in a key stands for a dot)
    on node_name, atomically."""
    request = SetParametersAtomically.Request(parameters=[
        Parameter(k.replace('__', '.'), value=v).to_parameter_msg() for k, v in values.items()])
    return ros.call(SetParametersAtomically, f'{node_name}/set_parameters_atomically',
                    request).result


def joint_state(names, positions=(), velocities=(), efforts=()):
    return JointState(name=list(names), position=[float(x) for x in positions],
                      velocity=[float(x) for x in velocities],
                      effort=[float(x) for x in efforts])


def link_wrench(link, force, torque):
    msg = LinkWrench(link=link)
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(f) for f in force)
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(t) for t in torque)
    return msg


def set_pose(msg, values):
    msg.position.x, msg.position.y, msg.position.z = (float(x) for x in values[:3])
    o = msg.orientation
    o.x, o.y, o.z, o.w = (float(x) for x in values[3:7])


def set_linear_angular(msg, values):
    """Fill a Twist or an Accel from [linear; angular]."""
    msg.linear.x, msg.linear.y, msg.linear.z = (float(x) for x in values[:3])
    msg.angular.x, msg.angular.y, msg.angular.z = (float(x) for x in values[3:6])


def vector6(msg, first, second):
    a, b = getattr(msg, first), getattr(msg, second)
    return np.array([a.x, a.y, a.z, b.x, b.y, b.z])


def completed(name, q_independent):
    """Spanning q of independent positions as the nodes complete them: from a fresh model, whose
    Newton iterations start at zero. A loop has several assembly branches, and a model that
    completed other states first (the shared test models) may converge to another one."""
    return load_model(bundled_model(name)).complete_positions(q_independent)


def loop_state(rng):
    """linkage_leg: a closed q (on whichever branch: requests carry all its joints), consistent
    spanning v and efforts, random but seeded."""
    model = robot('linkage_leg')
    q = model.complete_positions([0.8 + 0.2 * rng.uniform(-1, 1), rng.uniform(-0.5, 0.5)])
    yd = rng.normal(size=model.ny)
    return q, model.spanning_velocities(q, yd), yd, rng.normal(size=model.nv)


def floating_state(rng):
    """quadruped_rotors: random base pose and twist, joint positions, velocities, efforts."""
    model = robot('quadruped_rotors')
    quat = rng.normal(size=4)
    base = np.concatenate((rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat)))
    q = model.complete_positions(np.concatenate((base, rng.uniform(-0.6, 0.6, model.ny - 6))))
    return q, rng.normal(size=model.ny), rng.normal(size=model.ny - 6)


# ---- describe_model ----

@pytest.mark.parametrize('ns, name', [('loop', 'linkage_leg'), ('floating', 'quadruped_rotors')])
def test_describe_model(ros, nodes, ns, name):
    model = robot(name)
    response = ros.call(DescribeModel, service(nodes, ns, 'describe_model'))
    assert response.success and response.message == 'ok'
    assert response.description_source == f"robot_description_file '{name}'"
    assert list(response.warnings) == model.warnings == []
    assert response.robot_name == model.name
    assert tuple(response.joint_names) == model.joint_names
    assert tuple(response.independent_joint_names) == model.independent_joint_names
    assert (response.nq, response.nv, response.ny) == (model.nq, model.nv, model.ny)
    assert response.floating_base == model.floating_base
    assert [(c.name, tuple(c.links), tuple(c.joints), tuple(c.independent_joints),
             tuple(c.constraints)) for c in response.clusters] == [
        (c.name, c.links, c.joints, c.independent_joints, c.constraints) for c in model.clusters]


# ---- forward dynamics ----

def test_forward_dynamics_loop_spanning_state(ros, nodes, rng):
    """All spanning joints, reordered, with a wrench; a fixed base ignores the base fields."""
    model = robot('linkage_leg')
    q, v, _, tau = loop_state(rng)
    order = [3, 0, 4, 1, 2]
    names = [model.joint_names[i] for i in order]
    request = ForwardDynamics.Request(state=joint_state(names, q[order], v[order], tau[order]))
    request.base_pose.position.x = float('nan')
    request.external_wrenches = [link_wrench('foot', (1, 2, 3), (0.1, 0.2, 0.3))]
    response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
    assert response.success, response.message
    expected = model.forward_dynamics(q, v, tau, {'foot': ((1, 2, 3), (0.1, 0.2, 0.3))})
    assert tuple(response.name) == model.joint_names
    assert_close(response.acceleration, expected, 'qdd', RTOL)
    assert_close(vector6(response.base_acceleration, 'linear', 'angular'), np.zeros(6),
                 'base acceleration of a fixed base')
    assert response.method_used == 'aba'


def test_forward_dynamics_loop_independent_state_lcaba(ros, nodes, rng):
    """The independent joints only, completed by the node; method lcaba on request."""
    model = robot('linkage_leg')
    yd, tau_y = rng.normal(size=model.ny), rng.normal(size=model.ny)
    q_independent = [0.8 + 0.2 * rng.uniform(-1, 1), rng.uniform(-0.5, 0.5)]
    q = completed('linkage_leg', q_independent)
    request = ForwardDynamics.Request(method='lcaba', state=joint_state(
        model.independent_joint_names, q_independent, yd, tau_y))
    response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
    assert response.success, response.message
    expected = model.forward_dynamics(q, yd, tau_y, method='lcaba', info=True)
    assert response.method_used == 'lcaba'
    assert response.iterations == expected.iterations
    assert_close(response.acceleration, expected.acceleration, 'qdd', RTOL)
    assert response.constraint_residual == pytest.approx(expected.constraint_residual, abs=1e-9)


def test_forward_dynamics_floating_base(ros, nodes, rng):
    model = robot('quadruped_rotors')
    q, y, tau = floating_state(rng)
    names = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in names]
    request = ForwardDynamics.Request(state=joint_state(names, positions, y[6:], tau))
    set_pose(request.base_pose, q[:7])
    set_linear_angular(request.base_twist, y[:6])
    request.external_wrenches = [link_wrench('FL_foot', (0, 0, 30), (0, 0, 0))]
    response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'), request)
    assert response.success, response.message
    expected = model.forward_dynamics(q, y, np.concatenate((np.zeros(6), tau)),
                                      {'FL_foot': ((0, 0, 30), (0, 0, 0))})
    assert tuple(response.name) == model.joint_names[1:]
    assert_close(response.acceleration, expected[6:], 'joint accelerations', RTOL)
    assert_close(vector6(response.base_acceleration, 'linear', 'angular'), expected[:6],
                 'base acceleration', RTOL)


# ---- inverse dynamics ----

def test_inverse_dynamics_loop_round_trip(ros, nodes, rng):
    """ID of the node's FD accelerations (spanning selection) returns the applied efforts."""
    model = robot('linkage_leg')
    q, v, _, _ = loop_state(rng)
    tau_y = rng.normal(size=model.ny)
    names = list(model.joint_names)
    qdd = model.forward_dynamics(q, v, tau_y)
    request = InverseDynamics.Request(state=joint_state(names, q, v), acceleration=list(qdd))
    response = ros.call(InverseDynamics, service(nodes, 'loop', 'inverse_dynamics'), request)
    assert response.success, response.message
    assert tuple(response.name) == model.independent_joint_names
    assert_close(response.effort, model.inverse_dynamics(q, v, qdd), 'tau_y', RTOL)
    assert_close(response.effort, tau_y, 'tau_y = applied efforts', 1e-8)


def test_inverse_dynamics_floating_base(ros, nodes, rng):
    model = robot('quadruped_rotors')
    q, y, _ = floating_state(rng)
    ydd = rng.normal(size=model.ny)
    names = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in names]
    request = InverseDynamics.Request(state=joint_state(names, positions, y[6:]),
                                      acceleration=list(ydd[6:]))
    set_pose(request.base_pose, q[:7])
    set_linear_angular(request.base_twist, y[:6])
    set_linear_angular(request.base_acceleration, ydd[:6])
    request.external_wrenches = [link_wrench('trunk', (1, 0, 0), (0, 1, 0))]
    response = ros.call(InverseDynamics, service(nodes, 'floating', 'inverse_dynamics'), request)
    assert response.success, response.message
    expected = model.inverse_dynamics(q, y, ydd, {'trunk': ((1, 0, 0), (0, 1, 0))})
    assert tuple(response.name) == model.independent_joint_names[1:]
    assert_close(response.effort, expected[6:], 'joint efforts', RTOL)
    assert_close(vector6(response.base_wrench, 'force', 'torque'), expected[:6], 'base wrench',
                 RTOL)


# ---- inverse operational-space inertia ----

@pytest.mark.parametrize('ns, name, links', [('loop', 'linkage_leg', ['foot', 'shank']),
                                             ('floating', 'quadruped_rotors', ['FL_foot', 'trunk',
                                                                               'HR_foot'])])
def test_inverse_operational_space_inertia(ros, nodes, rng, ns, name, links):
    model = robot(name)
    if model.floating_base:
        q = floating_state(rng)[0]
    else:
        q = loop_state(rng)[0]
    names = [n for n in model.joint_names if n != 'floating_base']
    request = InverseOperationalSpaceInertia.Request(
        state=joint_state(names, [q[model.idx_q[model.joint_names.index(n) + 1]]
                                  for n in names]), links=links)
    set_pose(request.base_pose, q[:7] if model.floating_base else [0, 0, 0, 0, 0, 0, 1])
    response = ros.call(InverseOperationalSpaceInertia,
                        service(nodes, ns, 'inverse_operational_space_inertia'), request)
    assert response.success, response.message
    assert response.rows == 6 * len(links)
    assert_close(np.reshape(response.matrix, (response.rows, response.rows)),
                 model.inverse_osim(q, links), 'Lambda^-1', RTOL)


# ---- bad requests: success=false with a precise message, and the node keeps serving ----

def _loop_request(srv_type, **fields):
    """A request at LOOP_CLOSED (all spanning joints) with fields replaced; 'state_x' stands
    for state.x."""
    request = srv_type.Request(state=joint_state(LOOP_CLOSED, LOOP_CLOSED.values()))
    for key, value in fields.items():
        if key.startswith('state_'):
            setattr(request.state, key[len('state_'):], value)
        else:
            setattr(request, key, value)
    return request


BAD_REQUESTS = [
    # (service type, request fields, start of the expected message)
    (ForwardDynamics, {'state_name': ['crank_joint', 'ankle_joint', 'elbow'],
                       'state_position': [0.0, 0.0, 0.0]},
     "unknown joint(s) ['elbow'] in state.name; the joints are ['crank_joint', 'coupler_joint', "
     "'motor_rotor_joint', 'shank_joint', 'ankle_joint']"),
    (ForwardDynamics, {'state_name': ['crank_joint'], 'state_position': [0.0]},
     "state.name lists 1 joints but misses ['coupler_joint', 'motor_rotor_joint', 'shank_joint',"
     " 'ankle_joint']: list all 5 spanning joints or exactly the 2 independent ones"),
    (ForwardDynamics, {'state_velocity': [0.0, 0.0]},
     'state.velocity has 2 entries; expected 5 (one per state.name) or none'),
    (InverseDynamics, {'acceleration': [0.0]},
     'acceleration has 1 entries; expected 5 (one per state.name) or none'),
    (ForwardDynamics, {'state_position': [0.8, 7.2, float('nan'), 0.38, 0.3]},
     'state.position[coupler_joint] is nan; expected finite numbers'),
    (ForwardDynamics, {'state_position': [0.8, 7.2, -0.9, 0.38, 0.3]},
     "q violates constraint 'knee_linkage_loop' of cluster"),
    (ForwardDynamics, {'method': 'euler'},
     "forward dynamics method 'euler' is unknown; expected one of ['auto', 'aba', 'lcaba']"),
    (ForwardDynamics, {'external_wrenches': [link_wrench('hand', (0, 0, 0), (0, 0, 0))]},
     "wrench on unknown link 'hand'; links are"),
    (InverseOperationalSpaceInertia, {'links': ['foot', 'hand']},
     "unknown link 'hand'; links are"),
    (InverseOperationalSpaceInertia, {'links': []}, 'links is empty'),
]


@pytest.mark.parametrize('srv_type, fields, message', BAD_REQUESTS,
                         ids=[m.split(';')[0][:40] for _, _, m in BAD_REQUESTS])
def test_bad_request(ros, nodes, srv_type, fields, message):
    name = {ForwardDynamics: 'forward_dynamics', InverseDynamics: 'inverse_dynamics',
            InverseOperationalSpaceInertia: 'inverse_operational_space_inertia'}[srv_type]
    response = ros.call(srv_type, service(nodes, 'loop', name), _loop_request(srv_type, **fields))
    assert not response.success
    assert response.message.startswith(message), response.message
    good = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'),
                    _loop_request(ForwardDynamics))
    assert good.success, good.message


def test_bad_base_state(ros, nodes):
    model = robot('quadruped_rotors')
    names = model.independent_joint_names[1:]
    request = ForwardDynamics.Request(state=joint_state(names, np.zeros(len(names))))
    request.base_twist.angular.y = float('inf')
    response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'), request)
    assert not response.success
    assert response.message == 'base_twist.angular[y] is inf; expected finite numbers'
    request.base_twist.angular.y = 0.0
    request.base_pose.orientation.w = 2.0
    response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'), request)
    assert not response.success
    assert "quaternion (qx qy qz qw) has norm 2" in response.message
    request.base_pose.orientation.w = 1.0
    request.state.name[0] = 'floating_base'
    response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'), request)
    assert not response.success
    assert response.message.startswith("unknown joint(s) ['floating_base'] in state.name")


@pytest.mark.parametrize('values, reason', [
    ({'gravity': [0.0, -9.81]}, 'gravity must be 3 finite numbers (x, y, z in m/s^2), got '
                                '[0.0, -9.81]'),
    ({'stream__mode': 'torque'}, "stream.mode 'torque' is unknown; expected one of ['bias', "
                                 "'gravity']"),
    ({'forward_dynamics__method': 'rk4'}, "forward dynamics method 'rk4' is unknown"),
    ({'robot_description_file': 'no_such_robot'}, "robot_description_file 'no_such_robot' is "
                                                  'neither a file nor a bundled robot'),
    ({'closures_file': '/no/such.yaml'}, "closures_file '/no/such.yaml' is not a file"),
])
def test_bad_parameters_are_rejected(ros, nodes, values, reason):
    result = set_parameters(ros, nodes['loop'].name, **values)
    assert not result.successful
    assert result.reason.startswith(reason), result.reason
    describe = ros.call(DescribeModel, service(nodes, 'loop', 'describe_model'))
    assert describe.robot_name == 'linkage_leg'


# ---- hot reload ----

def test_no_model_then_hot_reload_good_bad_good(ros, nodes):
    """'reload' starts without a description; then topic good -> parameter bad -> parameter good
    -> parameter cleared (back to the topic's) -> topic bad -> topic good."""
    process = nodes['reload']
    describe = service(nodes, 'reload', 'describe_model')
    response = ros.call(ForwardDynamics, service(nodes, 'reload', 'forward_dynamics'),
                        _loop_request(ForwardDynamics))
    assert not response.success
    assert response.message.startswith('no robot model loaded yet'), response.message
    before = ros.call(DescribeModel, describe)
    assert (before.success, before.robot_name) == (False, '')
    assert before.message.startswith('no robot model loaded yet'), before.message

    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    publisher = ros.node.create_publisher(String, f'{NAMESPACE}/reload/robot_description', qos)
    try:
        def robot_name_becomes(name):
            return ros.spin_until(lambda: ros.call(DescribeModel, describe).robot_name == name)

        publisher.publish(String(data=text(bundled_model('four_bar'))))
        assert robot_name_becomes('four_bar'), process.output()

        with pytest.raises(ModelError) as parse_error:
            load_model(BAD_URDF)
        result = set_parameters(ros, process.name, robot_description=BAD_URDF)
        assert not result.successful
        assert result.reason == str(parse_error.value)
        assert ros.call(DescribeModel, describe).robot_name == 'four_bar'

        result = set_parameters(ros, process.name,
                                robot_description=text(bundled_model('linkage_leg')),
                                gravity=[0.0, 0.0, -3.0])
        assert result.successful, result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'
        response = ros.call(ForwardDynamics, service(nodes, 'reload', 'forward_dynamics'),
                            _loop_request(ForwardDynamics))
        model = load_model(bundled_model('linkage_leg'))
        model.gravity = [0.0, 0.0, -3.0]
        q = [LOOP_CLOSED[n] for n in model.joint_names]
        assert_close(response.acceleration, model.forward_dynamics(q, np.zeros(model.ny),
                                                                   np.zeros(model.ny)),
                     'qdd under the new gravity', RTOL)

        result = set_parameters(ros, process.name, robot_description='')
        assert result.successful, result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'four_bar'

        publisher.publish(String(data=BAD_URDF))
        ros.spin_for(0.5)
        assert ros.call(DescribeModel, describe).robot_name == 'four_bar'
        # A CAD-like inertia (triangle inequality broken) loads; the warning reaches describe_model.
        cad = text(bundled_model('six_bar')).replace('izz="0.00010625"', 'izz="0.00012"', 1)
        publisher.publish(String(data=cad))
        assert robot_name_becomes('six_bar'), process.output()
        warnings = list(ros.call(DescribeModel, describe).warnings)
        assert warnings == load_model(cad).warnings and len(warnings) == 1, warnings
    finally:
        ros.node.destroy_publisher(publisher)
    assert 'description on the topic rejected, keeping the served model' in process.output()


# ---- torque stream ----

@contextmanager
def collect(ros, topic, msg_type, qos):
    """A list receiving every message on topic while the context is open."""
    received = []
    subscription = ros.node.create_subscription(msg_type, topic, received.append, qos)
    try:
        yield received
    finally:
        ros.node.destroy_subscription(subscription)


def torques_qos():
    return QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)


def _index(stamp):
    """Inverse of stamp_of."""
    return (stamp.sec - 1000) * 1000 + stamp.nanosec // 1000


def stamp_of(i):
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1000 + i // 1000, (i % 1000) * 1000
    return msg.header.stamp


def prime(ros, publisher, received):
    """Publish JointStates naming no joint (they change no state) until the node answers one,
    so that both connections are matched both ways (a reader drops the samples of a writer it
    has not discovered yet, even when the writer already sees it); then empty received."""
    msg = JointState()
    msg.header.stamp = stamp_of(PRIMING)
    end = time.monotonic() + TIMEOUT
    while not received and time.monotonic() < end:
        publisher.publish(msg)
        ros.spin_for(0.05)
    assert received, f'no computed_torques within {TIMEOUT} s'
    received.clear()


def test_stream_500_hz_values_stamps_no_drops(ros, nodes):
    """The default configuration, 2 s of joint_states at 500 Hz (moving joints): one output per
    input, same stamps in the same order, efforts equal to the library's bias forces with the
    base at rest at the identity pose."""
    model = robot('quadruped_rotors')
    names = model.independent_joint_names[1:]
    count = int(STREAM_RATE * STREAM_SECONDS)
    t = np.arange(count)[:, None] / STREAM_RATE
    phase = np.linspace(0.0, np.pi, len(names))
    positions = 0.5 * np.sin(2 * np.pi * t + phase)
    velocities = np.pi * np.cos(2 * np.pi * t + phase)
    output = f'{nodes["default"].name}/computed_torques'
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/default/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, output, JointState, torques_qos()) as received, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
            prime(ros, publisher, received)
            sender = threading.Thread(target=_publish_at_rate, args=(
                publisher, names, positions, velocities))
            sender.start()
            ros.spin_until(lambda: len(received) == count and not sender.is_alive(),
                           timeout=STREAM_SECONDS + 5.0)
            sender.join()
            ros.spin_for(0.2)            # anything extra would arrive now
            if len(received) != count:   # for the message: the node's counts after the run
                ros.spin_for(1.5)
    finally:
        ros.node.destroy_publisher(publisher)
    stamps = [(m.header.stamp.sec, m.header.stamp.nanosec) for m in received]
    missing = sorted(set(range(count)) - {_index(m.header.stamp) for m in received})
    assert len(received) == count, (
        f'{count - len(received)} of {count} messages dropped (first ones {missing[:10]}); '
        f'the node counted {node_counts(diagnostics, nodes["default"].name)} (incl. priming)')
    assert stamps == [(stamp_of(i).sec, stamp_of(i).nanosec) for i in range(count)]
    assert all(tuple(m.name) == names for m in received)
    base_pose, base_twist = [0, 0, 0, 0, 0, 0, 1], np.zeros(6)
    expected = [model.bias_forces(model.complete_positions(np.r_[base_pose, p]),
                                  np.r_[base_twist, v])[6:]
                for p, v in zip(positions, velocities)]
    assert_close([m.effort for m in received], expected, 'streamed bias forces', RTOL)


def node_counts(diagnostics, node_name):
    """'received R, published P, dropped D' from node_name's latest diagnostics."""
    values = [{kv.key: kv.value for kv in status.values} for array in diagnostics
              for status in array.status if status.name == f'{node_name}: dynamics']
    if not values:
        return 'nothing (no diagnostics)'
    return ', '.join(f'{key} {values[-1][key]}' for key in ('received', 'published', 'dropped'))


def _publish_at_rate(publisher, names, positions, velocities):
    """One message per period, like a robot driver: after a stall of this (test) process the
    schedule moves on instead of publishing the missed messages in a burst."""
    start = time.perf_counter()
    for i, (p, v) in enumerate(zip(positions, velocities)):
        delay = start + i / STREAM_RATE - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            start -= delay                      # late: shift the schedule rather than catch up
        msg = joint_state(names, p, v)
        msg.header.stamp = stamp_of(i)
        publisher.publish(msg)


def answer(received, stamp):
    """The output message with the stamp of input message number stamp, or None."""
    stamp = stamp_of(stamp)
    return next((m for m in received if m.header.stamp == stamp), None)


def exchange(ros, publisher, received, msg, stamp):
    """Publish msg with stamp (an input number) and return its output (None if none in 1 s)."""
    msg.header.stamp = stamp_of(stamp)
    publisher.publish(msg)
    ros.spin_until(lambda: answer(received, stamp) is not None, timeout=1.0)
    return answer(received, stamp)


def test_stream_partial_messages_modes_and_drops(ros, nodes):
    """Partial and reordered name lists merge into the last state; dependent joints are
    completed; invalid messages are dropped and counted in diagnostics; stream.enabled false
    silences the stream; stream.mode gravity."""
    model = robot('linkage_leg')
    process = nodes['loop']
    output = f'{process.name}/computed_torques'
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/loop/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, output, JointState, torques_qos()) as received, \
                collect(ros, '/diagnostics', DiagnosticArray, 10) as diagnostics:
            prime(ros, publisher, received)
            steps = [  # (message, expected independent positions, velocities)
                (joint_state(['ankle_joint', 'crank_joint'], [0.2, 0.7], [1.0, -1.0]),
                 [0.7, 0.2], [-1.0, 1.0]),
                (joint_state(['crank_joint'], [0.9]), [0.9, 0.2], [-1.0, 1.0]),
                (joint_state(['shank_joint', 'ankle_joint'], [5.0, -0.1], [9.0, 0.5]),
                 [0.9, -0.1], [-1.0, 0.5]),
            ]
            for i, (msg, p, v) in enumerate(steps):
                result = exchange(ros, publisher, received, msg, 10_000 + i)
                assert result is not None, f'no output for step {i}'
                expected = model.bias_forces(completed('linkage_leg', p), v)
                assert_close(result.effort, expected, f'bias forces at step {i}', RTOL)

            bad = [joint_state(['crank_joint'], [float('nan')]),
                   joint_state(['crank_joint'], [0.1, 0.2]),
                   joint_state(['knee'], [0.1])]
            for i, msg in enumerate(bad):
                msg.header.stamp = stamp_of(20_000 + i)
                publisher.publish(msg)
            # Answered in order: once this one is, the bad ones were handled.
            assert exchange(ros, publisher, received, JointState(), 20_100) is not None
            assert all(answer(received, 20_000 + i) is None for i in range(len(bad)))

            assert set_parameters(ros, process.name, stream__enabled=False).successful
            try:
                assert exchange(ros, publisher, received, JointState(), 20_200) is None
            finally:
                set_parameters(ros, process.name, stream__enabled=True)
            assert exchange(ros, publisher, received, JointState(), 20_201) is not None

            result = set_parameters(ros, process.name, stream__mode='gravity')
            assert result.successful, result.reason
            try:
                msg = joint_state(['crank_joint', 'ankle_joint'], [0.8, 0.1], [3.0, 3.0])
                result = exchange(ros, publisher, received, msg, 30_000)
            finally:
                set_parameters(ros, process.name, stream__mode='bias')
            assert result is not None, 'no output in gravity mode'
            assert_close(result.effort, model.gravity_forces(completed('linkage_leg', [0.8, 0.1])),
                         'gravity forces', RTOL)

            def status():
                for array in reversed(diagnostics):
                    for item in array.status:
                        values = {kv.key: kv.value for kv in item.values}
                        if item.name == f'{process.name}: dynamics' and \
                                int(values.get('dropped', 0)) >= len(bad):
                            return values
                return None
            assert ros.spin_until(lambda: status() is not None, timeout=5.0), \
                'no diagnostics with the dropped messages'
    finally:
        ros.node.destroy_publisher(publisher)
    values = status()
    assert values['model'] == 'linkage_leg'
    assert (values['clusters'], values['nq'], values['nv'], values['ny']) == ('2', '5', '5', '2')
    assert values['last_error'].startswith("unknown joint(s) ['knee'] in name"), \
        values['last_error']
    for key in ('input_rate_hz', 'output_rate_hz', 'compute_time_mean_ms', 'compute_time_max_ms'):
        assert float(values[key]) >= 0.0, key


def test_stream_floating_base_from_odometry(ros, nodes, rng):
    """Before odometry the base rests at the identity pose; then it follows the odom topic."""
    model = robot('quadruped_rotors')
    process = nodes['floating']
    output = f'{process.name}/computed_torques'
    names = model.independent_joint_names[1:]
    positions, velocities = rng.uniform(-0.5, 0.5, len(names)), rng.normal(size=len(names))
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/floating/joint_states',
                                          qos_profile_sensor_data)
    odometry = ros.node.create_publisher(Odometry, f'{NAMESPACE}/floating/odom', 10)
    try:
        with collect(ros, output, JointState, torques_qos()) as received:
            prime(ros, publisher, received)
            msg = joint_state(names, positions, velocities)
            result = exchange(ros, publisher, received, msg, 40_000)
            assert result is not None, 'no output at rest'
            base = np.array([0, 0, 0, 0, 0, 0, 1.0])
            expected = model.bias_forces(model.complete_positions(np.r_[base, positions]),
                                         np.r_[np.zeros(6), velocities])
            assert tuple(result.name) == names
            assert_close(result.effort, expected[6:], 'bias forces, base at rest', RTOL)

            pose = np.r_[0.1, 0.2, 0.3, np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm(
                [0.1, -0.2, 0.3, 0.9])]
            twist = rng.normal(size=6)
            odom = Odometry()
            set_pose(odom.pose.pose, pose)
            set_linear_angular(odom.twist.twist, twist)
            assert ros.spin_until(lambda: odometry.get_subscription_count() > 0)
            for _ in range(10):          # the first ones may precede the node's discovery
                odometry.publish(odom)
                ros.spin_for(0.05)
            result = exchange(ros, publisher, received, msg, 40_001)
            assert result is not None, 'no output with odometry'
            expected = model.bias_forces(model.complete_positions(np.r_[pose, positions]),
                                         np.r_[twist, velocities])
            assert_close(result.effort, expected[6:], 'bias forces, base from odometry', RTOL)
    finally:
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_publisher(odometry)


# ---- Extended URDF robots ----

def test_extended_urdf_through_closures_file(ros, nodes):
    """robot_description_file + closures_file serve an Extended URDF pair; closures that do not load
    are rejected and the served model stays; clearing them returns to linkage_leg."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    process, describe = nodes['loop'], service(nodes, 'loop', 'describe_model')
    try:
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=str(ROOT / 'package.xml'))
        assert not result.successful
        assert result.reason.startswith("closures: the YAML is '<?xml"), result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'
        result = set_parameters(ros, process.name, robot_description_file=urdf, closures_file=closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, describe)
        model = load_model(urdf, closures=closures)
        assert response.robot_name == 'rod_knee_leg'
        assert response.description_source == (f'robot_description_file {urdf!r} with closures_file '
                                               f'{closures!r}')
        assert tuple(response.independent_joint_names) == model.independent_joint_names
        assert [tuple(c.constraints) for c in response.clusters] == [c.constraints for c in model.clusters]
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg', closures_file='')
    assert restored.successful, restored.reason
    assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'
