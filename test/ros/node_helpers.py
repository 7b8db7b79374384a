"""What the node tests over DDS share: node processes started as users start them (the
.venv/bin/dynamics_node console script with the shipped config/dynamics_node.yaml and -p
overrides), the test's client (an rclpy Context of its own, discovering this machine only), the
`ros` and `nodes` fixtures, request cases and waits that end at TIMEOUT, an ample bound that only a
hang reaches (test_node.py describes the nodes and what is expected of them)."""

from contextlib import contextmanager, ExitStack
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
from lifecycle_msgs.srv import GetState
import numpy as np
import pytest
from rcl_interfaces.srv import SetParametersAtomically
import rclpy
from rclpy._rclpy_pybind11 import NodeNameNonExistentError
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from conftest import assert_close, robot, TEST_DOMAIN_ID
from dynamics_node import bundled_model, load_model
from dynamics_node.ros.stream import TF_QOS, TF_STATIC_QOS


ROOT = Path(__file__).resolve().parents[2]


EXECUTABLE = Path(sys.executable).parent / 'dynamics_node'


NAMESPACE = f'/test_node_{os.getpid()}'      # keeps concurrent runs on one domain apart


TIMEOUT = 10.0                              # s, for any single response
HANG = 30.0                                 # s: a process that has not ended by then hangs
# s: leaving the ROS graph can be held up by DDS (the node's exit deadline knows it too); a test
# module's client that has not left by then is left behind, and the tests go on
LEAVE_DEADLINE = 60.0


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
        """Interrupt the node, wait for its end (killed after HANG), then drop its log. A killed
        node leaves its DDS shared-memory ports locked behind it, which the next processes on the
        machine trip over: a loaded machine gets the time to end cleanly."""
        self.interrupt()
        try:
            self.process.wait(timeout=HANG)
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
        def leave():
            client.close()
            rclpy.shutdown(context=context)
        leaving = threading.Thread(target=leave, daemon=True)
        leaving.start()
        leaving.join(LEAVE_DEADLINE)
        if leaving.is_alive():
            print(f'the test client did not leave the ROS graph in {LEAVE_DEADLINE:.0f} s')
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
            assert response.total_mass == model.total_mass > 0
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


def layout_v(model):
    """v entries of the node's JointState joints (every joint but spherical and planar ones)."""
    return [model.idx_v[i + 1] for i, n in enumerate(model.joint_names)
            if model.joint_type[i + 1] not in ('spherical', 'planar')]
