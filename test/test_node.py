"""End-to-end tests of the dynamics node over real DDS (loopback only).

Each node runs in its own process, started as users start it: the .venv/bin/dynamics_node console
script with the shipped config/dynamics_node.yaml and -p overrides. The test process is the client,
with an rclpy Context of its own. Expected values come from the library in this process: every
service on the loop model linkage_leg (a four-bar knee with a geared rotor) and on the
floating-base quadruped_rotors; the torque stream; every kind of bad request; hot reload of the
description through the parameter and the topic.

The 500 Hz stream test runs the node as `make run` does (config/dynamics_node.yaml with the
bundled quadruped_rotors). Partial messages, modes, drops, stale input, the completed joint states
and the effort commands are tested on linkage_leg, where the dependent joints are completed through
the loop. The nodes run with stream.max_age 3600 s (an integer given with -p), so that inputs
stamped from the wall clock at the start of the module (up to 200 s ahead of it) are never stale
unless a test makes them so on purpose. No test measures a time against a budget: waits for a
response end at TIMEOUT, an ample bound that only a hang reaches.
"""

from contextlib import contextmanager, ExitStack
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from cluster_dynamics.msg import LinkWrench
from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from lifecycle_msgs.srv import GetState
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rcl_interfaces.srv import SetParametersAtomically
import rclpy
from rclpy._rclpy_pybind11 import NodeNameNonExistentError
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from conftest import assert_close, program_lines, robot, TEST_DOMAIN_ID
from dynamics_node import bundled_extended_urdf, bundled_model, load_model, ModelError
from dynamics_node.errors import quote
from dynamics_node.ros.stream import TF_QOS, TF_STATIC_QOS

ROOT = Path(__file__).resolve().parents[1]
EXECUTABLE = Path(sys.executable).parent / 'dynamics_node'
NAMESPACE = f'/test_node_{os.getpid()}'      # keeps concurrent runs on one domain apart
TIMEOUT = 10.0                              # s, for any single response
REPUBLISH = 1.0                             # s, between copies of an unanswered input
# The node runs the same library code on the same inputs; only the order of Newton warm starts
# may differ, which moves completed positions by far less than this.
RTOL = 1e-9
STREAM_RATE, STREAM_SECONDS = 500.0, 2.0
PRIMING = 99_999             # stamp index of the messages that open a stream connection
STAMP_BASE = int(time.time())            # s
MAX_AGE = 3600                           # s, stream.max_age of the nodes
STAMP_STEP = int(1e9 / STREAM_RATE)      # ns
# linkage_leg closed[crank1] from the file's comment (loop residual below 1e-15 m).
LOOP_CLOSED = {'crank_joint': 0.8, 'motor_rotor_joint': 7.2, 'coupler_joint': -0.949180575309133,
               'shank_joint': 0.379278800703310, 'ankle_joint': 0.3}
BAD_URDF = '<robot name="broken"><link name="a"/><joint name="j" type="revolute"/></robot>'


def text(path):
    return Path(path).read_text()


class NodeProcess:
    """A dynamics_node process in namespace NAMESPACE/<ns>, its output kept in a log file. name:
    the node's name (with ros_args '-r __node:=name'); ros_args: more --ros-args."""

    def __init__(self, ns, env=(), prefix=(), params_files=(), name='dynamics_node', ros_args=(),
                 **parameters):
        self.name = f'{NAMESPACE}/{ns}/{name}'
        self.log = tempfile.NamedTemporaryFile('w+', prefix=f'dynamics_node_{ns}_', suffix='.log')
        files = [arg for path in (ROOT / 'config' / 'dynamics_node.yaml', *params_files)
                 for arg in ('--params-file', str(path))]
        overrides = [arg for key, value in parameters.items()
                     for arg in ('-p', f'{key.replace("__", ".")}:={value}')]
        self.process = subprocess.Popen(
            [*prefix, str(EXECUTABLE), '--ros-args', '-r', f'__ns:={NAMESPACE}/{ns}', *files,
             *overrides, *ros_args],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **dict(env)})
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
    """Node processes, started together: 'default' (the shipped configuration with the
    quadruped, as `make run`), 'loop' (linkage_leg), 'floating' (quadruped_rotors, base state
    from the odom topic), 'reload' (no description at start) and 'ankle' (parallel_ankle_leg: a
    spherical joint the node completes)."""
    # Fills numba's on-disk cache if it is cold, so that the nodes do not all compile at once.
    robot('linkage_leg').warm_up()
    started = {'default': NodeProcess('default', robot_description_file='quadruped_rotors',
                                      stream__expected_rate=int(STREAM_RATE),
                                      stream__max_age=MAX_AGE),
               'loop': NodeProcess('loop', robot_description_file='linkage_leg',
                                   stream__max_age=MAX_AGE),
               'floating': NodeProcess('floating', robot_description_file='quadruped_rotors',
                                       odometry_topic='odom', stream__max_age=MAX_AGE),
               'reload': NodeProcess('reload', use_sim_time='true', stream__max_age=MAX_AGE),
               'ankle': NodeProcess('ankle', robot_description_file='parallel_ankle_leg',
                                    stream__max_age=MAX_AGE)}
    with serving(ros, started, without_model=('reload',)):
        yield started


@contextmanager
def serving(ros, started, without_model=()):
    """Until the node processes started ({key: NodeProcess}) answer (with a model served, but
    for the keys in without_model); interrupted together, then stopped, at the end."""
    try:
        for key, process in started.items():
            wait_until_served(ros, process, with_model=key not in without_model)
        yield started
    finally:
        for process in started.values():
            process.interrupt()
        for process in started.values():
            process.stop()


def wait_until_served(ros, process, with_model=True, timeout=60.0):
    """Until the node answers describe_model with a model (its services exist only while it is
    active), or, unless with_model, until it answers get_state (its lifecycle's, there from the
    start); else an AssertionError with the node's output. Each call waits 5 s and is repeated: a
    response can be lost while DDS discovery between the two processes completes."""
    srv_type, name = (DescribeModel, 'describe_model') if with_model else (GetState, 'get_state')

    def ready():
        try:
            response = ros.call(srv_type, f'{process.name}/{name}', timeout=5.0)
        except AssertionError:
            return False
        return not with_model or response.success
    if not ros.spin_until(ready, timeout=timeout):
        raise AssertionError(f'{process.name} served no model within {timeout} s; its output:\n'
                             f'{process.output()}')


def has_service(ros, process, name):
    """True when process's node serves name (~/name); a client's own services do not count."""
    namespace, node = process.name.rsplit('/', 1)
    try:
        services = ros.node.get_service_names_and_types_by_node(node, namespace)
    except NodeNameNonExistentError:          # not discovered yet
        return False
    return f'{process.name}/{name}' in dict(services)


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


# ---- services ----

def test_spherical_joint_is_completed_by_the_node(ros, nodes, rng):
    """parallel_ankle_leg: the rod's spherical joint is no JointState joint; a request of every
    other joint gets it from the loops and answers as the library does (forward and inverse
    dynamics)."""
    model = robot('parallel_ankle_leg')
    names = [n for n in model.joint_names if n != 'rod_l_ball']
    response = ros.call(DescribeModel, service(nodes, 'ankle', 'describe_model'))
    assert response.success and tuple(response.joint_names) == model.joint_names
    q = completed('parallel_ankle_leg', [0.3, -0.5, 0.2, -0.1])
    yd, tau_y = rng.normal(size=model.ny), rng.normal(size=model.ny)
    v, index = model.spanning_velocities(q, yd), [model.joint_names.index(n) for n in names]
    q_of = [model.idx_q[i + 1] for i in index]
    v_of = [model.idx_v[i + 1] for i in index]
    independent = list(model.independent_joint_names)
    tau = np.zeros(model.nv)
    tau[[model.idx_v[model.joint_names.index(n) + 1] for n in independent]] = tau_y
    request = ForwardDynamics.Request(state=joint_state(names, q[q_of], v[v_of], tau[v_of]))
    answer = ros.call(ForwardDynamics, service(nodes, 'ankle', 'forward_dynamics'), request)
    assert answer.success, answer.message
    assert tuple(answer.name) == tuple(names)
    assert_close(answer.acceleration, model.forward_dynamics(q, yd, tau)[v_of], 'qdd', RTOL)
    ydd = rng.normal(size=model.ny)
    request = InverseDynamics.Request(
        state=joint_state(independent,
                          q[[model.idx_q[model.joint_names.index(n) + 1] for n in independent]],
                          yd),
        acceleration=[float(x) for x in ydd])
    answer = ros.call(InverseDynamics, service(nodes, 'ankle', 'inverse_dynamics'), request)
    assert answer.success, answer.message
    assert_close(answer.effort, model.inverse_dynamics(q, yd, ydd), 'tau_y', RTOL)


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
    (ForwardDynamics, {'state_name': ['crank_joint', 'elbow'], 'state_position': [0.0, 0.0]},
     "state.name misses actuated joint(s) ['ankle_joint']: name every actuated joint "
     "['crank_joint', 'ankle_joint'] (passive ones may be left out: they rest at the reference "
     "configuration; other names are ignored, here ['elbow']), or all 5 spanning joints"),
    (ForwardDynamics, {'state_name': ['crank_joint'], 'state_position': [0.0]},
     "state.name misses actuated joint(s) ['ankle_joint']: name every actuated joint"),
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


# ---- service cases: a request and the check of its answer against the library, each answered
# over DDS here (test_service_answers_as_the_library) and by the handler alone in
# test_services.py ----

SERVICE_NAMES = {DescribeModel: 'describe_model', ForwardDynamics: 'forward_dynamics',
                 InverseDynamics: 'inverse_dynamics',
                 InverseOperationalSpaceInertia: 'inverse_operational_space_inertia'}
NODE_OF = {'linkage_leg': 'loop', 'quadruped_rotors': 'floating'}    # the test node serving it


def describe_case(name):
    def case(rng):
        model = robot(name)

        def check(response):
            assert response.message == 'ok'
            assert response.description_source == f"robot_description_file '{name}'"
            assert list(response.warnings) == model.warnings == []
            assert response.robot_name == model.name
            assert tuple(response.joint_names) == model.joint_names
            assert tuple(response.independent_joint_names) == model.independent_joint_names
            assert (response.nq, response.nv, response.ny) == (model.nq, model.nv, model.ny)
            assert response.floating_base == model.floating_base
            assert response.floating_base_joint == ('floating_base' if model.floating_base
                                                    else '')
            assert tuple(response.link_names) == model.links
            assert list(response.effort_limits) == [
                model.effort_limits.get(n, np.inf) for n in model.independent_joint_names]
            assert [(c.name, tuple(c.links), tuple(c.joints), tuple(c.independent_joints),
                     tuple(c.constraints)) for c in response.clusters] == [
                (c.name, c.links, c.joints, c.independent_joints, c.constraints)
                for c in model.clusters]
        return DescribeModel, name, DescribeModel.Request(), check
    return case


def forward_dynamics_loop_spanning_state(rng):
    """All spanning joints, reordered, with a wrench; a fixed base ignores the base fields."""
    model = robot('linkage_leg')
    q, v, _, tau = loop_state(rng)
    order = [3, 0, 4, 1, 2]
    names = [model.joint_names[i] for i in order]
    request = ForwardDynamics.Request(state=joint_state(names, q[order], v[order], tau[order]))
    request.base_pose.position.x = float('nan')
    request.external_wrenches = [link_wrench('foot', (1, 2, 3), (0.1, 0.2, 0.3))]
    expected = model.forward_dynamics(q, v, tau, {'foot': ((1, 2, 3), (0.1, 0.2, 0.3))})

    def check(response):
        assert tuple(response.name) == model.joint_names
        assert_close(response.acceleration, expected, 'qdd', RTOL)
        assert_close(vector6(response.base_acceleration, 'linear', 'angular'), np.zeros(6),
                     'base acceleration of a fixed base')
        assert response.method_used == 'aba' and response.message == ''
    return ForwardDynamics, 'linkage_leg', request, check


def forward_dynamics_loop_independent_state_lcaba(rng):
    """The independent joints only, completed from the reference configuration; method lcaba on
    request."""
    model = robot('linkage_leg')
    yd, tau_y = rng.normal(size=model.ny), rng.normal(size=model.ny)
    q_independent = [0.8 + 0.2 * rng.uniform(-1, 1), rng.uniform(-0.5, 0.5)]
    request = ForwardDynamics.Request(method='lcaba', state=joint_state(
        model.independent_joint_names, q_independent, yd, tau_y))
    expected = model.forward_dynamics(completed('linkage_leg', q_independent), yd, tau_y,
                                      method='lcaba', info=True)

    def check(response):
        assert response.method_used == 'lcaba'
        assert response.iterations == expected.iterations
        assert_close(response.acceleration, expected.acceleration, 'qdd', RTOL)
        assert response.constraint_residual == pytest.approx(expected.constraint_residual,
                                                             abs=1e-9)
    return ForwardDynamics, 'linkage_leg', request, check


def floating_state_request(srv_type, q, y, efforts=(), velocities=True):
    """A srv_type request at the quadruped's state (q, y): its joints by name, the base's pose
    and (with velocities) twist in the base fields."""
    model = robot('quadruped_rotors')
    names = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in names]
    request = srv_type.Request(state=joint_state(names, positions,
                                                 y[6:] if velocities else (), efforts))
    set_pose(request.base_pose, q[:7])
    if velocities:
        set_linear_angular(request.base_twist, y[:6])
    return request


def forward_dynamics_floating_base(rng):
    model = robot('quadruped_rotors')
    q, y, tau = floating_state(rng)
    request = floating_state_request(ForwardDynamics, q, y, tau)
    request.external_wrenches = [link_wrench('FL_foot', (0, 0, 30), (0, 0, 0))]
    expected = model.forward_dynamics(q, y, np.concatenate((np.zeros(6), tau)),
                                      {'FL_foot': ((0, 0, 30), (0, 0, 0))})

    def check(response):
        assert tuple(response.name) == model.joint_names[1:]
        assert_close(response.acceleration, expected[6:], 'joint accelerations', RTOL)
        assert_close(vector6(response.base_acceleration, 'linear', 'angular'), expected[:6],
                     'base acceleration', RTOL)
    return ForwardDynamics, 'quadruped_rotors', request, check


def inverse_dynamics_loop_round_trip(rng):
    """ID of FD accelerations (spanning selection) returns the applied efforts."""
    model = robot('linkage_leg')
    q, v, _, _ = loop_state(rng)
    tau_y = rng.normal(size=model.ny)
    qdd = model.forward_dynamics(q, v, tau_y)
    request = InverseDynamics.Request(state=joint_state(model.joint_names, q, v),
                                      acceleration=list(qdd))

    def check(response):
        assert tuple(response.name) == model.independent_joint_names
        assert_close(response.effort, model.inverse_dynamics(q, v, qdd), 'tau_y', RTOL)
        assert_close(response.effort, tau_y, 'tau_y = applied efforts', 1e-8)
    return InverseDynamics, 'linkage_leg', request, check


def inverse_dynamics_floating_base(rng):
    model = robot('quadruped_rotors')
    q, y, _ = floating_state(rng)
    ydd = rng.normal(size=model.ny)
    request = floating_state_request(InverseDynamics, q, y)
    request.acceleration = list(ydd[6:])
    set_linear_angular(request.base_acceleration, ydd[:6])
    request.external_wrenches = [link_wrench('trunk', (1, 0, 0), (0, 1, 0))]
    expected = model.inverse_dynamics(q, y, ydd, {'trunk': ((1, 0, 0), (0, 1, 0))})

    def check(response):
        assert tuple(response.name) == model.independent_joint_names[1:]
        assert_close(response.effort, expected[6:], 'joint efforts', RTOL)
        assert_close(vector6(response.base_wrench, 'force', 'torque'), expected[:6],
                     'base wrench', RTOL)
    return InverseDynamics, 'quadruped_rotors', request, check


def inverse_osim_case(name, links):
    def case(rng):
        model = robot(name)
        q = floating_state(rng)[0] if model.floating_base else loop_state(rng)[0]
        names = [n for n in model.joint_names if n != 'floating_base']
        request = InverseOperationalSpaceInertia.Request(
            state=joint_state(names, [q[model.idx_q[model.joint_names.index(n) + 1]]
                                      for n in names]), links=links)
        set_pose(request.base_pose, q[:7] if model.floating_base else [0, 0, 0, 0, 0, 0, 1])

        def check(response):
            assert response.rows == 6 * len(links)
            assert_close(np.reshape(response.matrix, (response.rows, response.rows)),
                         model.inverse_osim(q, links), 'Lambda^-1', RTOL)
        return InverseOperationalSpaceInertia, name, request, check
    return case


SERVICE_CASES = {
    'describe_model linkage_leg': describe_case('linkage_leg'),
    'describe_model quadruped_rotors': describe_case('quadruped_rotors'),
    'forward_dynamics loop spanning state': forward_dynamics_loop_spanning_state,
    'forward_dynamics loop independent state lcaba': forward_dynamics_loop_independent_state_lcaba,
    'forward_dynamics floating base': forward_dynamics_floating_base,
    'inverse_dynamics loop round trip': inverse_dynamics_loop_round_trip,
    'inverse_dynamics floating base': inverse_dynamics_floating_base,
    'inverse_osim linkage_leg': inverse_osim_case('linkage_leg', ['foot', 'shank']),
    'inverse_osim quadruped_rotors': inverse_osim_case('quadruped_rotors',
                                                       ['FL_foot', 'trunk', 'HR_foot']),
}


@pytest.mark.parametrize('case', SERVICE_CASES.values(), ids=list(SERVICE_CASES))
def test_service_answers_as_the_library(ros, nodes, rng, case):
    srv_type, name, request, check = case(rng)
    response = ros.call(srv_type, service(nodes, NODE_OF[name], SERVICE_NAMES[srv_type]), request)
    assert response.success, response.message
    check(response)


def bad_base_states():
    """[(a ForwardDynamics request of the quadruped with a bad base state, a pattern of the
    message that refuses it)]."""
    names = robot('quadruped_rotors').independent_joint_names[1:]

    def request():
        return ForwardDynamics.Request(state=joint_state(names, np.zeros(len(names))))
    infinite, unnormalized, named = request(), request(), request()
    infinite.base_twist.angular.y = float('inf')
    unnormalized.base_pose.orientation.w = 2.0
    named.state.name[0] = 'floating_base'
    return [(infinite, r'^base_twist\.angular\[y\] is inf; expected finite numbers$'),
            (unnormalized, r'quaternion \(qx qy qz qw\) has norm 2'),
            (named, r"^state\.name lists the floating joint 'floating_base'")]


def test_bad_base_state(ros, nodes):
    for request, pattern in bad_base_states():
        response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'),
                            request)
        assert not response.success
        assert re.search(pattern, response.message), response.message


@pytest.mark.parametrize('values, reason', [
    ({'gravity': [0.0, -9.81]}, 'gravity has 2 entries; expected 3 (x y z, m/s^2)'),
    ({'gravity': [0.0, 0.0, 1e309]}, 'gravity[2] is inf; expected finite numbers of magnitude at '
                                     'most 1000'),
    ({'gravity': ['0', '0', '-9.81']}, "gravity must be a vector of real numbers, got ['0', '0', "
                                       "'-9.81']"),
    ({'robot_description': 'robots/leg.urdf'}, 'robot_description is not XML (starts with '
                                               "'robots/leg.urdf')"),
    ({'stream__output_joints': ['shank_joint']}, "stream.output_joints names ['shank_joint'], not "
                                                 "independent joints of 'linkage_leg'"),
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
    """'reload' starts without a description (and with use_sim_time, no /clock): ERROR on
    /diagnostics, which keeps coming (steady timer); then topic: a file path (not XML) -> good ->
    parameter bad -> robot_description_file while the topic rules (rejected: precedence) ->
    parameter good -> parameter cleared (back to the topic's) -> topic bad -> topic good."""
    process = nodes['reload']
    describe = service(nodes, 'reload', 'describe_model')
    with collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
        assert ros.spin_until(lambda: node_status(diagnostics, process.name))
    status = node_status(diagnostics, process.name)
    assert status.level == DiagnosticStatus.ERROR, status
    assert status.message == 'no robot description: nothing is served', status.message
    # a description that comes later on the topic is a normal start: no ERROR in the log
    assert "waiting for a robot description on topic 'robot_description'" in process.output()
    assert '[ERROR]' not in process.output(), process.output()
    # the services appear once the node is active
    assert not has_service(ros, process, 'forward_dynamics')
    assert not has_service(ros, process, 'describe_model')

    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    publisher = ros.node.create_publisher(String, f'{NAMESPACE}/reload/robot_description', qos)
    try:
        def robot_name_becomes(name):
            return ros.spin_until(lambda: ros.call(DescribeModel, describe).robot_name == name)

        publisher.publish(String(data=bundled_model('four_bar')))      # a path, not the XML
        assert ros.spin_until(lambda: 'is not XML' in process.output())
        assert not has_service(ros, process, 'describe_model')
        assert f"the description on topic 'robot_description' is not XML (starts with " \
            f"{bundled_model('four_bar')[:80]!r}" in process.output()
        publisher.publish(String(data=text(bundled_model('four_bar'))))
        assert robot_name_becomes('four_bar'), process.output()

        result = set_parameters(ros, process.name, robot_description_file='six_bar')
        assert not result.successful
        assert result.reason.startswith('robot_description_file not applied: topic '
                                        'robot_description takes precedence'), result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'four_bar'

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
        # A CAD-like inertia (triangle inequality broken) loads; the warning reaches
        # describe_model.
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


@contextmanager
def robot_state_outputs(ros, process, *more):
    """(computed_torques, /tf, /tf_static, completed_joint_states, and the (topic, type, QoS) of
    more) received while the context is open: what a stream's input makes the node publish."""
    with collect(ros, f'{process.name}/computed_torques', JointState, torques_qos()) as torques, \
            collect(ros, '/tf', TFMessage, TF_QOS) as tf, \
            collect(ros, '/tf_static', TFMessage, TF_STATIC_QOS) as static, \
            collect(ros, f'{process.name}/completed_joint_states', JointState,
                    torques_qos()) as joints, \
            ExitStack() as stack:
        yield (torques, tf, static, joints,
               *(stack.enter_context(collect(ros, *topic)) for topic in more))


def torques_qos():
    return QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)


def _index(stamp):
    """Inverse of stamp_of."""
    return ((stamp.sec - STAMP_BASE) * 1_000_000_000 + stamp.nanosec) // STAMP_STEP


def stamp_of(i):
    """Stamp of input number i: STAMP_BASE plus i periods (never stale at MAX_AGE), one stream
    period (STAMP_STEP) after input i - 1."""
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
        STAMP_BASE * 1_000_000_000 + i * STAMP_STEP, 1_000_000_000)
    return msg.header.stamp


def prime(ros, publisher, received, name):
    """Publish JointStates with the actuated joints of bundled robot name at their reference
    positions (the node's state before any input) until the node answers one, so that both
    connections are matched both ways (a reader drops the samples of a writer it has not
    discovered yet, even when the writer already sees it) and every joint the stream waits for
    has arrived; then empty received."""
    model = robot(name)
    names = list(model.actuated_joint_names)
    reference = dict(zip(model.joint_names, model.reference_positions[model.idx_q[1:]]))
    msg = joint_state(names, [reference[n] for n in names])
    msg.header.stamp = stamp_of(PRIMING)
    end = time.monotonic() + TIMEOUT
    while not received and time.monotonic() < end:
        publisher.publish(msg)
        ros.spin_for(0.05)
    assert received, f'no computed_torques within {TIMEOUT} s'
    received.clear()


def test_stream_500_hz_values_stamps_losses_counted(ros, nodes):
    """The default configuration, 2 s of joint_states at 500 Hz (moving joints): outputs with the
    inputs' stamps in the same order, efforts equal to the library's bias forces with the base at
    rest at the identity pose. The input keeps only the newest message: every input the node did
    not receive between two it received is counted as lost in /diagnostics (inferred from the
    stamps at stream.expected_rate), every one it received as published or, late under load, as
    stale."""
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
            prime(ros, publisher, received, 'quadruped_rotors')
            diagnostics.clear()
            assert ros.spin_until(lambda: node_values(diagnostics, nodes['default'].name),
                                  timeout=TIMEOUT), 'no diagnostics before the stream'
            before = node_values(diagnostics, nodes['default'].name)
            received.clear()
            sender = threading.Thread(target=_publish_at_rate, args=(
                publisher, names, positions, velocities))
            sender.start()
            ros.spin_until(lambda: len(received) == count and not sender.is_alive(),
                           timeout=STREAM_SECONDS + 5.0)
            sender.join()
            ros.spin_for(0.2)            # anything extra would arrive now
            diagnostics.clear()
            assert ros.spin_until(lambda: node_values(diagnostics, nodes['default'].name),
                                  timeout=TIMEOUT), 'no diagnostics after the stream'
    finally:
        ros.node.destroy_publisher(publisher)
    indices = [_index(m.header.stamp) for m in received]
    values = node_values(diagnostics, nodes['default'].name)
    assert indices == sorted(set(indices)) and set(indices) <= set(range(count)), indices
    delta = {key: int(values[key]) - int(before[key])
             for key in ('received', 'published', 'dropped', 'stale_inputs', 'lost_before_node')}
    published = delta['published']
    assert (delta['received'] == published + delta['dropped'] + delta['stale_inputs']
            and not delta['dropped']), delta
    # An input the node never received counts as lost in the span of stamps it received: only
    # those before its first and after its last go uncounted. Stale ones (stream.max_age) came
    # late.
    assert (max(indices) - min(indices) + 1 <= delta['received'] + delta['lost_before_node']
            <= count), delta
    assert len(received) <= published
    # The share answered depends on the machine's load (keep last 1: newest or nothing), so only
    # that the stream carried values is asserted here; bench/node_latency.py measures what it
    # carries.
    assert received, f'none of {count} inputs answered'
    assert all(tuple(m.name) == names for m in received)
    base_pose, base_twist = [0, 0, 0, 0, 0, 0, 1], np.zeros(6)
    expected = [model.bias_forces(model.complete_positions(np.r_[base_pose, positions[i]]),
                                  np.r_[base_twist, velocities[i]])[6:] for i in indices]
    assert_close([m.effort for m in received], expected, 'streamed bias forces', RTOL)


def node_status(diagnostics, node_name):
    """node_name's latest DiagnosticStatus in the collected arrays, or None."""
    statuses = [status for array in diagnostics for status in array.status
                if status.name == f'{node_name}: dynamics']
    return statuses[-1] if statuses else None


def node_values(diagnostics, node_name):
    """{key: value} of node_name's latest diagnostics, or None."""
    status = node_status(diagnostics, node_name)
    return None if status is None else {kv.key: kv.value for kv in status.values}


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


def exchange(ros, publisher, received, msg, stamp, timeout=TIMEOUT):
    """Publish msg with stamp (an input number) and return its output (None if none within
    timeout)."""
    msg.header.stamp = stamp_of(stamp)
    return publish_and_wait(ros, publisher, received, msg, timeout)


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
            prime(ros, publisher, received, 'linkage_leg')
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
                   joint_state(['crank_joint', 'knee', 'crank_joint'], [0.1, 0.2, 0.3])]
            for i, msg in enumerate(bad):      # one at a time: the input keeps the newest only
                msg.header.stamp = stamp_of(20_000 + i)
                publisher.publish(msg)
                ros.spin_for(0.1)
            # Answered in order: once this one is, the bad ones were handled.
            assert exchange(ros, publisher, received, JointState(), 20_100) is not None
            assert all(answer(received, 20_000 + i) is None for i in range(len(bad)))

            assert set_parameters(ros, process.name, stream__enabled=False).successful
            try:
                assert exchange(ros, publisher, received, JointState(), 20_200,
                                timeout=1.0) is None
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
            assert ros.spin_until(lambda: status() is not None), \
                'no diagnostics with the dropped messages'
    finally:
        ros.node.destroy_publisher(publisher)
    values = status()
    assert values['model'] == 'linkage_leg'
    assert (values['clusters'], values['nq'], values['nv'], values['ny']) == ('2', '5', '5', '2')
    # the last bad message's reason, in the period it was dropped (last_error is the period's)
    errors = [kv.value for array in diagnostics for item in array.status
              if item.name == f'{process.name}: dynamics'
              for kv in item.values if kv.key == 'last_error']
    assert "name lists ['crank_joint'] more than once" in errors, errors
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
            prime(ros, publisher, received, 'quadruped_rotors')
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


# ---- control-grade stream and bad input that must not poison ----

def fresh_stamp(seconds_ago=0.0):
    """A header stamp seconds_ago before now (wall clock, the node's ROS time)."""
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
        time.time_ns() - int(seconds_ago * 1e9), 1_000_000_000)
    return msg.header.stamp


def publish_and_wait(ros, publisher, received, msg, timeout=TIMEOUT):
    """Publish msg (its stamp set by the caller) and return the output with its stamp, or None if
    none came within timeout. joint_states is best effort (sensor data QoS), and a loaded machine
    may lose a sample: msg is published again every REPUBLISH seconds until answered (the same
    message merges into the same state)."""
    stamp = msg.header.stamp

    def output():
        return next((m for m in received if m.header.stamp == stamp), None)
    end = time.monotonic() + timeout
    while output() is None and time.monotonic() < end:
        publisher.publish(msg)
        ros.spin_until(lambda: output() is not None,
                       timeout=min(REPUBLISH, end - time.monotonic()))
    return output()


@contextmanager
def loop_stream(ros, nodes, topic='computed_torques', msg_type=JointState):
    """(publisher of the loop node's joint_states, list of its outputs on topic), primed."""
    process = nodes['loop']
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/loop/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as torques, \
                collect(ros, f'{process.name}/{topic}', msg_type, torques_qos()) as received:
            prime(ros, publisher, torques, 'linkage_leg')
            received.clear()
            yield publisher, received
    finally:
        ros.node.destroy_publisher(publisher)


def test_stream_ignores_unknown_joints_and_values_it_does_not_need(ros, nodes):
    """A JointState that also carries a gripper, and NaN in a dependent joint (the constraints
    complete it), still gets torques from the known independent joints."""
    model = robot('linkage_leg')
    with loop_stream(ros, nodes) as (publisher, received):
        msg = joint_state(['gripper', 'crank_joint', 'coupler_joint', 'ankle_joint'],
                          [5.0, 0.85, float('nan'), -0.2], [float('inf'), 0.5, float('nan'), 1.5])
        msg.header.stamp = stamp_of(50_000)
        result = publish_and_wait(ros, publisher, received, msg)
    assert result is not None, 'no torques for a message with an unknown joint'
    expected = model.bias_forces(completed('linkage_leg', [0.85, -0.2]), [0.5, 1.5])
    assert tuple(result.name) == model.independent_joint_names
    assert_close(result.effort, expected, 'bias forces', RTOL)


def test_stale_input_dropped_and_counted_zero_stamp_served(ros, nodes):
    """stream.max_age (set as an integer at run time) by the header stamp: an input older than it,
    or as far in the future, is never answered and is counted in /diagnostics; a fresh one and an
    unstamped one are answered; inputs missing from jittered stamps at stream.expected_rate are
    counted as lost before the node, the jitter is not."""
    process = nodes['loop']
    with loop_stream(ros, nodes) as (publisher, received), \
            collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
        result = set_parameters(ros, process.name, stream__max_age=20)
        assert result.successful, result.reason
        try:
            def stale():
                values = node_values(diagnostics, process.name)
                return int(values['stale_inputs']) if values else None
            assert ros.spin_until(lambda: stale() is not None)
            errors = []
            for seconds_ago in (60.0, -60.0):
                msg = joint_state(['crank_joint'], [0.8])
                msg.header.stamp = fresh_stamp(seconds_ago)
                before, end = stale(), time.monotonic() + TIMEOUT
                # the input keeps the newest only
                while stale() == before and time.monotonic() < end:
                    publisher.publish(msg)
                    ros.spin_for(0.5)
                assert stale() > before
                assert not any(m.header.stamp == msg.header.stamp for m in received)
                errors.append(node_values(diagnostics, process.name)['last_error'])
            fresh = joint_state(['crank_joint'], [0.8])
            fresh.header.stamp = fresh_stamp()
            assert publish_and_wait(ros, publisher, received, fresh) is not None
        finally:
            assert set_parameters(ros, process.name, stream__max_age=MAX_AGE).successful
        assert (errors[0].startswith('stale joint_states: 60.')
                and errors[0].endswith(' s old (stream.max_age 20 s)'))
        assert errors[1].startswith('stale joint_states: stamped 59.') or \
            errors[1].startswith('stale joint_states: stamped 60.'), errors
        assert errors[1].endswith(' s in the future (stream.max_age 20 s)'), errors
        unstamped = joint_state(['crank_joint'], [0.81])
        publisher.publish(unstamped)
        assert ros.spin_until(lambda: any(m.header.stamp.sec == 0 for m in received))

        assert set_parameters(ros, process.name, stream__expected_rate=100).successful
        try:
            base = time.time_ns()
            # 10 ms apart at 100 Hz, each up to 4 ms early or late: inputs 2, 3, 4 and 7 never came
            for k, jitter in zip((0, 1, 5, 6, 8, 9), (4, -4, 3, -4, 4, 3)):
                msg = joint_state(['crank_joint'], [0.8])
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
                    base + k * 10_000_000 + jitter * 1_000_000, 1_000_000_000)
                assert publish_and_wait(ros, publisher, received, msg) is not None
            diagnostics.clear()
            assert ros.spin_until(lambda: node_values(diagnostics, process.name))
        finally:
            set_parameters(ros, process.name, stream__expected_rate=0.0)
    values = node_values(diagnostics, process.name)
    assert int(values['stale_inputs']) >= 2, values
    assert values['lost_inferred_from_stamps'] == '4', values
    assert values['expected_input_rate_hz'] == '100', values
    assert int(values['lost_before_node']) >= 4, values
    for key in ('expected_input_rate_hz', 'input_rate_hz', 'last_input_age_ms', 'source'):
        assert key in values, key
    assert values['source'] == "robot_description_file 'linkage_leg'"


def test_completed_joint_states_equal_the_library_completion(ros, nodes, rng):
    """~/completed_joint_states: every joint of the loop robot, dependent positions and
    velocities from the constraints, with the input's stamp."""
    model = robot('linkage_leg')
    p, yd = [0.8 + 0.1 * rng.uniform(-1, 1), rng.uniform(-0.5, 0.5)], rng.normal(size=2)
    with loop_stream(ros, nodes, 'completed_joint_states') as (publisher, received):
        assert ros.spin_until(lambda: publisher.get_subscription_count() > 0)
        ros.spin_for(0.3)            # the node's publisher discovers our subscription
        msg = joint_state(['ankle_joint', 'crank_joint'], p[::-1], yd[::-1])
        msg.header.stamp = stamp_of(60_000)
        result = publish_and_wait(ros, publisher, received, msg)
    assert result is not None, 'no completed joint states'
    q = completed('linkage_leg', p)
    assert tuple(result.name) == model.joint_names
    assert_close(result.position, q, 'completed positions', RTOL)
    assert_close(result.velocity, model.spanning_velocities(q, yd), 'completed velocities', RTOL)


def test_effort_commands_follow_stream_output_joints(ros, nodes):
    """~/effort_commands (Float64MultiArray) in the order of stream.output_joints; default: the
    independent joints in the model's order."""
    from std_msgs.msg import Float64MultiArray
    model = robot('linkage_leg')
    process = nodes['loop']
    expected = model.bias_forces(completed('linkage_leg', [0.8, 0.1]), [1.0, -2.0])
    msg = joint_state(['crank_joint', 'ankle_joint'], [0.8, 0.1], [1.0, -2.0])
    with loop_stream(ros, nodes, 'effort_commands', Float64MultiArray) as (publisher, received):
        msg.header.stamp = stamp_of(70_000)
        publisher.publish(msg)
        assert ros.spin_until(lambda: received), 'no effort commands'
        assert_close(received[-1].data, expected, 'efforts, default order', RTOL)
        result = set_parameters(ros, process.name,
                                stream__output_joints=['ankle_joint', 'crank_joint'])
        assert result.successful, result.reason
        try:
            received.clear()
            msg.header.stamp = stamp_of(70_001)
            publisher.publish(msg)
            assert ros.spin_until(lambda: received), 'no effort commands'
            assert_close(received[-1].data, expected[::-1], 'efforts, output_joints order', RTOL)
        finally:
            assert set_parameters(ros, process.name, stream__output_joints=[]).successful


def test_poisoned_joint_states_then_good_ones_and_services(ros, nodes, rng):
    """Position 1e308 and velocity 1e200 on the geared quadruped are dropped (never an
    inf or nan published); the good messages and service calls after them are answered
    correctly."""
    model = robot('quadruped_rotors')
    process = nodes['default']
    names = model.independent_joint_names[1:]
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/default/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received:
            prime(ros, publisher, received, 'quadruped_rotors')
            poisons = [joint_state(names[:1], [1e308]), joint_state(names[:1], [0.0], [1e200])]
            for i, msg in enumerate(poisons):      # one at a time: each is taken
                msg.header.stamp = stamp_of(80_000 + i)
                publisher.publish(msg)
                ros.spin_for(0.2)
            positions, velocities = rng.uniform(-0.5, 0.5, len(names)), rng.normal(size=len(names))
            good = exchange(ros, publisher, received, joint_state(names, positions, velocities),
                            80_010)
            all_outputs = list(received)
    finally:
        ros.node.destroy_publisher(publisher)
    assert good is not None, f'no answer after the poisoned ones; node log:\n{process.output()}'
    assert all(np.all(np.isfinite(m.effort)) for m in all_outputs)
    assert all(answer(all_outputs, 80_000 + i) is None for i in range(2))
    base = np.array([0, 0, 0, 0, 0, 0, 1.0])
    expected = model.bias_forces(load_model(bundled_model('quadruped_rotors')).complete_positions(
        np.r_[base, positions]), np.r_[np.zeros(6), velocities])
    assert_close(good.effort, expected[6:], 'bias forces after the poison', RTOL)
    q, y, tau = floating_state(rng)
    request = ForwardDynamics.Request(state=joint_state(
        names, [q[model.joint_names.index(n) + 6] for n in names], y[6:], tau))
    set_pose(request.base_pose, q[:7])
    set_linear_angular(request.base_twist, y[:6])
    response = ros.call(ForwardDynamics, service(nodes, 'default', 'forward_dynamics'), request)
    assert response.success, response.message
    assert_close(response.acceleration,
                 model.forward_dynamics(q, y, np.r_[np.zeros(6), tau])[6:], 'qdd', RTOL)


def test_parameters_integer_gravity_descriptors(ros, nodes):
    """Gravity takes integers; the descriptors carry the allowed values and ranges."""
    from rcl_interfaces.srv import DescribeParameters
    process = nodes['loop']
    result = set_parameters(ros, process.name, gravity=[0, 0, -3])
    assert result.successful, result.reason
    try:
        response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'),
                            _loop_request(ForwardDynamics))
        model = load_model(bundled_model('linkage_leg'))
        model.gravity = [0.0, 0.0, -3.0]
        q = [LOOP_CLOSED[n] for n in model.joint_names]
        assert_close(response.acceleration, model.forward_dynamics(q, np.zeros(2), np.zeros(2)),
                     'qdd under integer gravity', RTOL)
    finally:
        set_parameters(ros, process.name, gravity=[0.0, 0.0, -9.81])
    names = ['stream.mode', 'forward_dynamics.method', 'stream.max_age', 'diagnostics_period']
    descriptors = ros.call(DescribeParameters, f'{process.name}/describe_parameters',
                           DescribeParameters.Request(names=names)).descriptors
    by_name = {d.name: d for d in descriptors}
    assert by_name['stream.mode'].additional_constraints == 'one of bias, gravity'
    assert by_name['forward_dynamics.method'].additional_constraints == 'one of auto, aba, lcaba'
    assert by_name['stream.max_age'].floating_point_range[0].to_value == 3600.0
    assert by_name['diagnostics_period'].read_only


def test_double_parameters_take_integers_and_output_joints_each_once(ros, nodes, tmp_path):
    """Every double parameter takes an integer: at start-up from -p (the fixture's stream.max_age)
    and from a parameters file, and at run time; out of range is refused with the range;
    stream.output_joints refuses a repeated joint, also 10,000 copies of one."""
    process = nodes['loop']
    try:
        for key, value in (('stream__max_age', 1), ('stream__expected_rate', 50)):
            result = set_parameters(ros, process.name, **{key: value})
            assert result.successful, (key, result.reason)
    finally:
        assert set_parameters(ros, process.name, stream__max_age=MAX_AGE,
                              stream__expected_rate=0).successful
    result = set_parameters(ros, process.name, stream__max_age=-1)
    assert (result.successful, result.reason) == (
        False, 'stream.max_age must be a number from 0 to 3600, got -1')
    result = set_parameters(ros, process.name, stream__expected_rate='fast')
    assert result.reason == (
        "stream.expected_rate must be a number from 0 to 100000, got 'fast'"), result.reason
    result = set_parameters(ros, process.name, stream__output_joints=['crank_joint'] * 10_000)
    assert (result.successful, result.reason) == (
        False, "stream.output_joints names 'crank_joint' twice; name each joint once")
    result = set_parameters(ros, process.name,
                            stream__output_joints=['ankle_joint', 'crank_joint', 'ankle_joint'])
    assert not result.successful and 'twice' in result.reason

    integers = tmp_path / 'integers.yaml'
    integers.write_text('/**:\n  ros__parameters:\n    stream.max_age: 1\n'
                        '    stream.expected_rate: 100\n'
                        '    diagnostics_period: 2\n')
    started = NodeProcess('integers', params_files=[integers],
                          robot_description_file='linkage_leg')
    try:
        wait_until_served(ros, started)
        from rcl_interfaces.srv import GetParameters
        values = ros.call(GetParameters, f'{started.name}/get_parameters', GetParameters.Request(
            names=['stream.max_age', 'stream.expected_rate', 'diagnostics_period'])).values
        assert [v.integer_value for v in values] == [1, 100, 2], values
        assert 'invalid parameter' not in started.output()
    finally:
        started.stop()


def test_robot_switch_needs_both_parameters_at_once(ros, nodes):
    """An Extended URDF robot changes with robot_description_file and closures_file together: set
    one at a time (SetParameters), each half-switched pair is a description that does not load and
    is rejected, the old robot still served; set atomically (SetParametersAtomically, as the
    README says), the switch happens."""
    from rcl_interfaces.srv import SetParameters
    rod_urdf, rod_closures = bundled_extended_urdf('rod_knee_leg')
    ankle = ROOT / 'test' / 'models' / 'ball_rod_ankle_leg'
    ankle_urdf, ankle_closures = str(ankle.with_suffix('.urdf')), str(ankle.with_suffix('.yaml'))
    process, describe = nodes['loop'], service(nodes, 'loop', 'describe_model')
    try:
        result = set_parameters(ros, process.name, robot_description_file=rod_urdf,
                                closures_file=rod_closures)
        assert result.successful, result.reason
        request = SetParameters.Request(parameters=[
            Parameter('robot_description_file', value=ankle_urdf).to_parameter_msg(),
            Parameter('closures_file', value=ankle_closures).to_parameter_msg()])
        results = ros.call(SetParameters, f'{process.name}/set_parameters', request).results
        assert [r.successful for r in results] == [False, False], results
        assert all(r.reason.startswith('closures: ') for r in results), [r.reason for r in results]
        assert ros.call(DescribeModel, describe).robot_name == 'rod_knee_leg'
        result = set_parameters(ros, process.name, robot_description_file=ankle_urdf,
                                closures_file=ankle_closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, describe)
        assert response.robot_name == load_model(ankle_urdf, closures=ankle_closures).name
        assert response.description_source == (f'robot_description_file {quote(ankle_urdf)} with '
                                               f'closures_file {quote(ankle_closures)}')
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg',
                                  closures_file='')
    assert restored.successful, restored.reason


HANG = 30.0                  # s: a process that has not ended by then hangs


def test_sigterm_during_warm_up_ends_the_node_before_the_compilation(tmp_path):
    """With numba's cache empty the node compiles for many seconds: it says so, and SIGTERM ends it
    without waiting for the compilation (which would log 'serving')."""
    process = NodeProcess('warm_up', env={'NUMBA_CACHE_DIR': str(tmp_path)},
                          robot_description_file='linkage_leg')
    try:
        assert wait_for_output(process, 'numba is compiling'), process.output()
        process.process.send_signal(signal.SIGTERM)
        process.process.wait(timeout=HANG)
        assert process.process.returncode == 0, process.output()
        assert 'serving' not in process.output()
    finally:
        process.stop()


def wait_for_output(process, text, timeout=HANG):
    end = time.monotonic() + timeout
    while text not in process.output() and time.monotonic() < end:
        time.sleep(0.05)
    return text in process.output()


# Client processes of the exit test: each calls the services (and ends with its requests answered,
# or is killed in the middle of them), as the sessions of several peer processes do.
SESSION = """
import sys
import rclpy
from dynamics_node.ros.client import DynamicsClient
rclpy.init()
with DynamicsClient(sys.argv[1], timeout=30.0) as dynamics:
    dynamics.describe()
    print('served', flush=True)
    for _ in range(int(sys.argv[2])):
        dynamics.forward_dynamics(['crank_joint', 'ankle_joint'], [0.8, 0.1], [0, 0], [0, 0],
                                  method='lcaba')
rclpy.shutdown()
"""


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_a_node_that_served_several_processes_ends_at_a_signal(ros, signum):
    """Sessions from four client processes, two of them killed in the middle of their calls: at
    the signal the node starts its exit deadline (a watchdog that ends the process, status 1, if
    leaving the ROS graph cleanly is held up by DDS) and ends: cleanly (status 0) or at the
    deadline (status 1), never a hang."""
    process = NodeProcess(f'served_{signum}', robot_description_file='linkage_leg')
    clients = []
    try:
        wait_until_served(ros, process)
        clients = [subprocess.Popen([sys.executable, '-c', SESSION, process.name, str(calls)],
                                    text=True, stdout=subprocess.PIPE)
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


def test_the_stream_is_answered_while_a_service_call_runs(ros, nodes):
    """Services never block the stream thread, shown by order, not by time: while the main thread
    reloads a description (a 3000-body chain, which takes far longer than a stream period),
    joint_states sent after the reload request are answered before the reload's response comes
    back."""
    model = robot('quadruped_rotors')
    process = NodeProcess('ordering', robot_description_file='quadruped_rotors',
                          stream__max_age=MAX_AGE)
    chain = '<robot name="chain">' + '<link name="l0"/>' + ''.join(
        f'<link name="l{i}"><inertial><mass value="1"/>'
        f'<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
        f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
        f'<child link="l{i}"/><origin xyz="0.1 0 0"/><axis xyz="0 0 1"/></joint>'
        for i in range(1, 3001)) + '</robot>'
    names = model.independent_joint_names[1:]
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/ordering/joint_states',
                                          qos_profile_sensor_data)
    events = []  # ('output', stamp index), then ('response', None): in arrival order
    try:
        wait_until_served(ros, process)
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received:
            prime(ros, publisher, received, 'quadruped_rotors')
            subscription = ros.node.create_subscription(
                JointState, f'{process.name}/computed_torques',
                lambda m: events.append(('output', _index(m.header.stamp))), torques_qos())
            client = ros.node.create_client(SetParametersAtomically,
                                            f'{process.name}/set_parameters_atomically')
            assert client.wait_for_service(timeout_sec=TIMEOUT)
            future = client.call_async(SetParametersAtomically.Request(parameters=[
                Parameter('robot_description', value=chain).to_parameter_msg()]))
            sent, msg = 0, joint_state(names, np.zeros(len(names)), np.zeros(len(names)))
            end = time.monotonic() + HANG
            while not future.done() and time.monotonic() < end:
                msg.header.stamp = stamp_of(200_000 + sent)
                publisher.publish(msg)
                sent += 1
                period = time.monotonic() + STAMP_STEP * 1e-9
                while not future.done() and time.monotonic() < period:
                    # one callback: an output or the response
                    ros.executor.spin_once(timeout_sec=0.001)
            events.append(('response', None))
            ros.node.destroy_subscription(subscription)
            ros.node.destroy_client(client)
        assert future.done() and future.result().result.successful, future.result()
    finally:
        ros.node.destroy_publisher(publisher)
        process.stop()
    answered = [index for kind, index in events[:events.index(('response', None))]
                if kind == 'output']
    print(f'{len(answered)} of {sent} inputs sent during the reload answered before its response')
    assert len([i for i in answered if i >= 200_000]) >= 3, (answered, sent)


# ---- Extended URDF robots ----

def test_extended_urdf_through_closures_file(ros, nodes):
    """robot_description_file + closures_file serve an Extended URDF pair; closures that do not
    load are rejected and the served model stays; clearing them returns to linkage_leg."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    process, describe = nodes['loop'], service(nodes, 'loop', 'describe_model')
    try:
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=str(ROOT / 'package.xml'))
        assert not result.successful
        assert result.reason.startswith("closures: the YAML is '<?xml"), result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, describe)
        model = load_model(urdf, closures=closures)
        assert response.robot_name == 'rod_knee_leg'
        assert response.description_source == (f'robot_description_file {quote(urdf)} with '
                                               f'closures_file {quote(closures)}')
        assert tuple(response.independent_joint_names) == model.independent_joint_names
        assert ([tuple(c.constraints) for c in response.clusters]
                == [c.constraints for c in model.clusters])
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg',
                                  closures_file='')
    assert restored.successful, restored.reason
    assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'


def test_idle_rod_spins_are_served(ros, nodes, rng):
    """The Digit-like ankle of two rods with ball joints at both ends (test/models): each rod's
    top ball joint is split, an independent name whose value is its spin rate; its position is
    ignored."""
    ankle = ROOT / 'test' / 'models' / 'ball_rod_ankle_leg'
    urdf, closures = str(ankle.with_suffix('.urdf')), str(ankle.with_suffix('.yaml'))
    model = load_model(urdf, closures=closures)
    process = nodes['loop']
    try:
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, service(nodes, 'loop', 'describe_model'))
        assert tuple(response.independent_joint_names) == model.independent_joint_names
        assert ([tuple(c.independent_joints) for c in response.clusters]
                == [c.independent_joints for c in model.clusters])
        names = model.independent_joint_names                 # rod_l_top and rod_r_top: the spins
        positions = [0.2, -0.7, 0.4, 99.0, -0.3, 99.0]  # the split joints' positions are ignored
        y, ydd, tau = (rng.normal(size=model.ny) for _ in range(3))
        q = model.complete_positions([0.2, -0.7, 0.4, -0.3])  # a fresh model, as the node's
        request = InverseDynamics.Request(state=joint_state(names, positions, y),
                                          acceleration=list(ydd))
        response = ros.call(InverseDynamics, service(nodes, 'loop', 'inverse_dynamics'), request)
        assert response.success, response.message
        assert tuple(response.name) == names
        assert_close(response.effort, model.inverse_dynamics(q, y, ydd), 'tau_y', RTOL)
        request = ForwardDynamics.Request(state=joint_state(names, positions, y, tau))
        response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
        assert response.success, response.message
        assert_close(response.acceleration, model.forward_dynamics(q, y, tau)[layout_v(model)],
                     'qdd', RTOL)
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg',
                                  closures_file='')
    assert restored.successful, restored.reason


def layout_v(model):
    """v entries of the node's JointState joints (every joint but spherical and planar ones)."""
    return [model.idx_v[i + 1] for i, n in enumerate(model.joint_names)
            if model.joint_type[i + 1] not in ('spherical', 'planar')]


def test_readme_client_example_runs(nodes):
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


def test_client_raises_model_error_with_the_reason(ros, nodes):
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


def test_client_sends_an_unanswered_request_again(ros):
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


def test_messages_quote_at_most_80_characters_of_an_input(ros, nodes):
    """A huge input never comes back whole in a reason or in /diagnostics."""
    process = nodes['loop']
    huge = 'x' * 1_000_000
    result = set_parameters(ros, process.name, robot_description=huge)
    assert not result.successful
    assert result.reason.startswith('robot_description is not XML') and len(result.reason) < 500
    assert 'x' * 81 not in result.reason
    request = _loop_request(ForwardDynamics, state_name=['crank_joint', huge],
                            state_position=[0.8, 0.1])
    response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
    assert not response.success and len(response.message) <= 400, len(response.message)
    with collect(ros, '/diagnostics', DiagnosticArray, 10) as diagnostics:
        assert ros.spin_until(lambda: node_values(diagnostics, process.name))
    assert all(len(v) <= 400 for v in node_values(diagnostics, process.name).values())
