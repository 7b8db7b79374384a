"""The node as its ROS 2 neighbours see it, end to end over DDS: a managed (lifecycle) node that
serves only while active, and one node whose every topic obeys the remaps written against it,
whatever runs inside (the stream's entities live on a second node)."""

import time

from cluster_dynamics.srv import DescribeModel
from diagnostic_msgs.msg import DiagnosticArray
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
import pytest
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from dynamics_node import bundled_extended_urdf, bundled_model, load_model
from node_helpers import (collect, has_service, joint_state, MAX_AGE, NAMESPACE,  # noqa: F401
                          node_values, NodeProcess, publish_and_wait, ros, set_parameters,
                          stamp_of, torques_qos, wait_until_served)

FOUR_BAR = load_model(bundled_model('four_bar'))
QUIET = 1.0             # s without an answer that shows the stream is silent


def get_state(client, process):
    return client.call(GetState, f'{process.name}/get_state').current_state.label


def change_state(client, process, transition):
    return client.call(ChangeState, f'{process.name}/change_state',
                       ChangeState.Request(transition=Transition(id=transition))).success


def describe(client, process):
    return client.call(DescribeModel, f'{process.name}/describe_model')


def four_bar_input(i):
    """joint_states of the four-bar's actuated joints (a closed pose), stamped input i."""
    names = list(FOUR_BAR.actuated_joint_names)
    reference = dict(zip(FOUR_BAR.joint_names, FOUR_BAR.reference_positions[FOUR_BAR.idx_q[1:]]))
    msg = joint_state(names, [reference[n] for n in names], [0.5] * len(names))
    msg.header.stamp = stamp_of(i)
    return msg


@pytest.fixture(scope='module')
def managed(ros):  # noqa: F811 - the fixture imported above
    """A node that waits for a lifecycle manager (autostart false), describing the four-bar."""
    process = NodeProcess('managed', robot_description_file='four_bar', autostart='false',
                          stream__max_age=MAX_AGE)
    try:
        assert ros.spin_until(lambda: has_service(ros, process, 'get_state'), timeout=30.0), \
            process.output()
        yield process
    finally:
        process.stop()


def latencies(diagnostics, process):
    """(p50, p99, max) s of the first collected period of process with outputs, or None."""
    for array in diagnostics:
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.name == f'{process.name}: dynamics' and values['output_latency_p50_ms']:
                return tuple(float(values[f'output_latency_{k}_ms']) * 1e-3
                             for k in ('p50', 'p99', 'max'))
    return None


def test_lifecycle_serves_only_while_active(ros, managed):  # noqa: F811
    """unconfigured -> configure -> inactive -> activate -> active -> deactivate -> inactive ->
    cleanup -> unconfigured: services answer success and the stream publishes in the active state
    only; /diagnostics names the state in each (and the output's latency, from the input's stamp
    to its publication, between the input's publication and its answer); a configure whose
    description does not load fails and leaves the node unconfigured."""
    process = managed
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/managed/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as output, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:

            def reported(state):
                diagnostics.clear()
                return ros.spin_until(lambda: (node_values(diagnostics, process.name) or {})
                                      .get('lifecycle_state') == state)

            def serving(expected, i):
                """The services exist and answer, and the stream answers, only while active
                (a service created at activate reaches this graph's cache some time after)."""
                available = (ros.spin_until(lambda: has_service(ros, process, 'describe_model'))
                             if expected else has_service(ros, process, 'describe_model'))
                answer = publish_and_wait(ros, publisher, output, four_bar_input(i),
                                          10.0 if expected else QUIET)
                assert available == expected and (answer is not None) == expected, answer
                return describe(ros, process) if expected else None

            assert get_state(ros, process) == 'unconfigured' and reported('unconfigured')
            serving(False, 0)
            assert change_state(ros, process, Transition.TRANSITION_CONFIGURE)
            assert get_state(ros, process) == 'inactive' and reported('inactive')
            serving(False, 1)
            assert change_state(ros, process, Transition.TRANSITION_ACTIVATE)
            assert get_state(ros, process) == 'active' and reported('active')
            sent = time.time()
            assert serving(True, 2).robot_name == 'four_bar'
            answered = time.time()
            # the output's latency on /diagnostics: from the input's stamp to its publication
            assert ros.spin_until(lambda: latencies(diagnostics, process))
            stamp = stamp_of(2).sec + stamp_of(2).nanosec * 1e-9
            p50, p99, peak = latencies(diagnostics, process)
            assert sent - stamp - 1e-3 <= p50 <= p99 <= peak <= answered - stamp + 1e-3, \
                (sent - stamp, p50, p99, peak, answered - stamp)
            assert change_state(ros, process, Transition.TRANSITION_DEACTIVATE)
            assert get_state(ros, process) == 'inactive'
            assert ros.spin_until(lambda: not has_service(ros, process, 'describe_model'))
            serving(False, 3)
            assert change_state(ros, process, Transition.TRANSITION_CLEANUP)
            assert get_state(ros, process) == 'unconfigured' and reported('unconfigured')
            serving(False, 4)

            # kept while unconfigured (no autostart), refused at configure
            assert set_parameters(ros, process.name,
                                  robot_description_file='/no/such/robot.urdf').successful
            assert not change_state(ros, process, Transition.TRANSITION_CONFIGURE)
            assert get_state(ros, process) == 'unconfigured'
            assert ros.spin_until(lambda: "robot_description_file '/no/such/robot.urdf' is "
                                  'neither a file' in (node_values(diagnostics, process.name)
                                                       or {}).get('last_error', ''))
            assert set_parameters(ros, process.name, robot_description_file='four_bar').successful
            assert change_state(ros, process, Transition.TRANSITION_CONFIGURE)
            assert change_state(ros, process, Transition.TRANSITION_ACTIVATE)
            serving(True, 5)
    finally:
        ros.node.destroy_publisher(publisher)


def test_autostart_activates_when_a_description_arrives(ros):  # noqa: F811
    """autostart (the default) with no description: unconfigured, serving nothing; the first
    description (a parameter) configures and activates the node by itself."""
    process = NodeProcess('autostart')
    try:
        assert ros.spin_until(lambda: has_service(ros, process, 'get_state'), timeout=30.0), \
            process.output()
        # its own configure at start fails (no description): no service. Each get_state is a
        # service call that can take seconds while discovery completes on a loaded machine.
        assert ros.spin_until(lambda: get_state(ros, process) == 'unconfigured', timeout=30.0), \
            process.output()
        assert not has_service(ros, process, 'describe_model')
        assert set_parameters(ros, process.name, robot_description_file='four_bar').successful
        assert ros.spin_until(lambda: get_state(ros, process) == 'active', timeout=30.0), \
            process.output()
        assert describe(ros, process).robot_name == 'four_bar'
    finally:
        process.stop()


REMAPS = {   # ns: (ros args, node name, joint_states topic, {output: (topic, type)})
    'node_specific': (
        ['-r', f'dynamics_node:joint_states:={NAMESPACE}/rm/driver/joint_states',
         '-r', f'~/computed_torques:={NAMESPACE}/rm/gravity_torques'],
        'dynamics_node', f'{NAMESPACE}/rm/driver/joint_states',
        {'computed_torques': (f'{NAMESPACE}/rm/gravity_torques', JointState)}),
    'renamed': (
        ['-r', '__node:=dyn', '-r', f'joint_states:={NAMESPACE}/rm_b/js',
         '-r', f'~/effort_commands:={NAMESPACE}/rm_b/efforts'],
        'dyn', f'{NAMESPACE}/rm_b/js',
        {'computed_torques': (f'{NAMESPACE}/renamed/dyn/computed_torques', JointState),
         'effort_commands': (f'{NAMESPACE}/rm_b/efforts', Float64MultiArray)}),
}


@pytest.mark.parametrize('ns', sorted(REMAPS))
def test_every_remap_form_reaches_the_stream(ros, ns):  # noqa: F811
    """A node-specific remap of joint_states and a private (~/) remap of an output; a renamed
    node (__node) with a global input remap and a private output remap; all under a namespace
    (__ns): the stream reads and writes the remapped topics, the services carry the node's name,
    and no entity is left under a default name."""
    ros_args, name, inputs, outputs = REMAPS[ns]
    process = NodeProcess(ns, name=name, ros_args=ros_args, robot_description_file='four_bar',
                          stream__max_age=MAX_AGE)
    publisher = ros.node.create_publisher(JointState, inputs, qos_profile_sensor_data)
    try:
        wait_until_served(ros, process)
        for kind, (topic, msg_type) in outputs.items():
            with collect(ros, topic, msg_type, torques_qos()) as output:
                msg = four_bar_input(10)
                if msg_type is JointState:
                    answer = publish_and_wait(ros, publisher, output, msg, 10.0)
                    assert answer is not None, (kind, topic)
                else:
                    def answer():
                        publisher.publish(msg)
                        return ros.spin_until(lambda: output, timeout=1.0)
                    assert any(answer() for _ in range(10)), (kind, topic)
        topics = {topic for topic, _ in ros.node.get_topic_names_and_types()}
        defaults = {f'{NAMESPACE}/{ns}/joint_states', f'{NAMESPACE}/{ns}/_{name}_stream'
                    '/computed_torques', f'{NAMESPACE}/{ns}/_{name}_stream/effort_commands'}
        defaults |= {f'{NAMESPACE}/{ns}/{name}/{kind}' for kind in outputs
                     if outputs[kind][0] != f'{NAMESPACE}/{ns}/{name}/{kind}'}
        assert not topics & defaults, topics & defaults
    finally:
        ros.node.destroy_publisher(publisher)
        process.stop()


def test_closures_file_applies_to_the_description_on_the_topic(ros):  # noqa: F811
    """The plain URDF of an Extended URDF robot on robot_description (reliable, transient local,
    as robot_state_publisher sends it) with closures_file: the node serves the robot with its
    loops closed, and says so in its source."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    closed, open_tree = load_model(urdf, closures=closures), load_model(urdf)
    assert closed.ny < open_tree.ny
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    publisher = ros.node.create_publisher(String, f'{NAMESPACE}/topic_closures/robot_description',
                                          qos)
    with open(urdf) as text:
        publisher.publish(String(data=text.read()))
    process = NodeProcess('topic_closures', closures_file=closures)
    try:
        wait_until_served(ros, process)
        response = describe(ros, process)
        assert tuple(response.independent_joint_names) == closed.independent_joint_names
        assert response.description_source.startswith(
            'topic robot_description with closures_file'), response.description_source
    finally:
        ros.node.destroy_publisher(publisher)
        process.stop()
