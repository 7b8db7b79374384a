"""The node on a robot file no one here wrote, end to end over DDS: placeholder_leg (an Extended
URDF with <limit effort="1"> on every joint, SPHERICAL rods, a UJOINT ankle and a FIXED toe, as an
Onshape export writes them) with the shipped configuration. It starts without an ERROR, warns of
the placeholder limits, clamps and says so on /diagnostics, puts every link on /tf and /tf_static
(tf2_msgs/msg/TFMessage with the type hash of a ROS 2 graph) and the file's joints on
~/completed_joint_states; its services are there once it serves, its stream node is hidden, and a
command line that does not parse ends it with one FATAL line and status 1."""

from pathlib import Path
import subprocess

from cluster_dynamics.srv import DescribeModel
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from dynamics_node import load_model
from node_helpers import (EXECUTABLE, MAX_AGE, NAMESPACE, NodeProcess,  # noqa: F401
                          publish_and_wait, robot_state_outputs, ros, set_parameters, stamp_of)
from test_node_robot_state import chained_poses

MODELS = Path(__file__).parents[1] / 'models'
LEG, LEG_CLOSURES = str(MODELS / 'placeholder_leg.urdf'), str(MODELS / 'placeholder_leg.yaml')
# tf2_msgs/msg/TFMessage's type hash on a ROS 2 Jazzy or Kilted graph (ros2 topic info -v /tf)
TF_TYPE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'


@pytest.fixture(scope='module')
def leg(ros):  # noqa: F811 - the fixture imported above
    """The node serving placeholder_leg with the shipped configuration; the test's client waits
    for its service as any client does, and its first call is answered with the model."""
    process = NodeProcess('third_party', robot_description_file=LEG, closures_file=LEG_CLOSURES,
                          stream__max_age=MAX_AGE)
    try:
        client = ros.node.create_client(DescribeModel, f'{process.name}/describe_model')
        assert client.wait_for_service(timeout_sec=60.0), process.output()
        future = client.call_async(DescribeModel.Request())
        ros.executor.spin_until_future_complete(future, timeout_sec=30.0)
        assert future.result().success, future.result().message
        yield process, load_model(LEG, closures=LEG_CLOSURES)
    finally:
        process.stop()


def test_a_start_on_placeholder_limits_warns_once_without_error(ros, leg):  # noqa: F811
    """The start names the joints whose placeholder limit cannot hold the leg, and logs no
    ERROR; the stream's own node is hidden (its name starts with '_')."""
    process, model = leg
    output = process.output()
    assert '[ERROR]' not in output, output
    warnings = [line for line in output.splitlines() if 'Placeholder limits?' in line]
    assert len(warnings) == 1 and '[WARN]' in warnings[0], output
    assert 'hip_pitch 1 < ' in warnings[0] and 'knee 1 < ' in warnings[0]
    assert "set stream.effort_limits to 'ignore'" in warnings[0]
    nodes = ros.node.get_node_names_and_namespaces()
    assert ('_dynamics_node_stream', f'{NAMESPACE}/third_party') in nodes, nodes


def test_clamped_torques_tf_and_the_file_joints(ros, leg):  # noqa: F811
    """One input: the torques clamped to the placeholder 1 and /diagnostics WARN naming why;
    /tf with the input's stamp and /tf_static (transient local) chain into every link's pose;
    ~/completed_joint_states names the file's joints; /tf carries the graph's TFMessage type."""
    process, model = leg
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/third_party/joint_states',
                                          qos_profile_sensor_data)
    values = {'hip_pitch': 0.1, 'knee': -0.2, 'motor_l': 0.05, 'motor_r': -0.05}
    names = list(model.actuated_joint_names)
    msg = JointState(name=names, position=[values[n] for n in names], velocity=[0.0] * 4)
    msg.header.stamp = stamp_of(7)
    try:
        with robot_state_outputs(ros, process, ('/diagnostics', DiagnosticArray, 100)) as (
                torques, tf, static, joints, diagnostics):
            answer = publish_and_wait(ros, publisher, torques, msg)
            assert answer is not None, process.output()

            def mine(messages):
                return [m for m in messages if any(t.child_frame_id == 'ankle_cross'
                                                   or t.child_frame_id == 'toe'
                                                   for t in m.transforms)]
            assert ros.spin_until(lambda: mine(static) and joints and any(
                t.header.stamp == msg.header.stamp for m in mine(tf) for t in m.transforms))

            def clamped():
                return [s for a in diagnostics for s in a.status
                        if s.name == f'{process.name}: dynamics'
                        and 'outputs clamped to <limit effort>' in s.message]
            assert ros.spin_until(clamped), process.output()
            status = clamped()[0]
            assert status.level == DiagnosticStatus.WARN
            assert "of joint 'hip_pitch' exceeds its <limit effort> 1" in status.message
            info = ros.node.get_publishers_info_by_topic('/tf')
    finally:
        ros.node.destroy_publisher(publisher)
    q = model.complete_positions([values[n] for n in model.actuated_joint_names])
    tau = model.bias_forces(q, np.zeros(model.ny))
    assert np.allclose(answer.effort, np.clip(tau, -1.0, 1.0), rtol=1e-9, atol=1e-12)
    assert abs(answer.effort[0]) == 1.0
    (moving,) = [m for m in mine(tf) if m.transforms[0].header.stamp == msg.header.stamp]
    poses = chained_poses(model.root_link, [moving, mine(static)[-1]])
    for link in model.links:
        R, p = model.link_pose(q, link)
        assert np.allclose(poses[link][0], R, atol=1e-12) and np.allclose(poses[link][1], p,
                                                                          atol=1e-12), link
    assert list(joints[-1].name) == ['hip_pitch', 'knee', 'motor_l', 'motor_r', 'toe_joint']
    (ours,) = [i for i in info if i.node_name == '_dynamics_node_stream'
               and i.node_namespace == f'{NAMESPACE}/third_party']
    assert ours.topic_type == 'tf2_msgs/msg/TFMessage'
    assert str(ours.topic_type_hash) == TF_TYPE_HASH, ours.topic_type_hash


def test_stream_contacts_on_a_link_the_robot_lacks_are_refused(ros, leg):  # noqa: F811
    process, _ = leg
    result = set_parameters(ros, process.name, stream__contacts=['nolink:6D'])
    assert not result.successful
    assert result.reason.startswith("stream.contacts does not fit 'placeholder_leg'"), \
        result.reason
    assert set_parameters(ros, process.name, stream__contacts=['foot:6D']).successful


def test_a_bad_command_line_ends_the_node_with_one_fatal_line():
    """An unquoted list of strings in -p, which rcl's YAML parser refuses: one FATAL line with
    the reason, no traceback, status 1."""
    done = subprocess.run([str(EXECUTABLE), '--ros-args', '-p', 'stream.contacts:=[a:6D,b:6D]'],
                          capture_output=True, text=True, timeout=60)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1, (done.returncode, lines)
    assert len(lines) == 1 and lines[0].startswith('[FATAL] [dynamics_node]: invalid command '
                                                   'line: '), lines
    assert "Couldn't parse parameter override rule" in lines[0]
