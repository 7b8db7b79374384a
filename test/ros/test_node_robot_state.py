"""The node on a third-party robot file, without DDS: placeholder <limit effort>s (the load-time
warning, the stream's clamp, reject and ignore, and /diagnostics naming the cause), every link's
pose on /tf and /tf_static, the file's own joints on ~/completed_joint_states, and the parameters
and contact sets checked against each served model. The stream runs on a node stand-in whose
publishers keep what they are given; expected values come from the library."""

from pathlib import Path
import time

from cluster_dynamics.msg import Contact, ContactSet
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.clock import ROSClock
from sensor_msgs.msg import JointState

from conftest import assert_close
from dynamics_node import bundled_model, load_model, ModelError
from dynamics_node.spatial import quaternion_matrix
from dynamics_node.ros.description import load, ServedModel
from dynamics_node.ros.diagnostics import Diagnostics
from dynamics_node.ros.parameters import setting
from dynamics_node.ros.stream import Stream, StreamStats
from test_services import FakeNode, Log, set_parameters, settings

MODELS = Path(__file__).parents[1] / 'models'
LEG, LEG_CLOSURES = str(MODELS / 'placeholder_leg.urdf'), str(MODELS / 'placeholder_leg.yaml')
LABEL = 'robot_description_file placeholder_leg'


class Publisher:
    """A publisher that keeps what it is given; listeners: its subscriber count."""

    def __init__(self, listeners=1):
        self.sent, self.listeners = [], listeners

    def publish(self, msg):
        self.sent.append(msg)

    def get_subscription_count(self):
        return self.listeners


class StreamNode:
    """What Stream asks of its node, without DDS: publishers by topic, subscriptions ignored."""

    def __init__(self):
        self.publishers = {}

    def create_publisher(self, msg_type, topic, qos):
        return self.publishers.setdefault(topic, Publisher())

    def create_subscription(self, *args, **options):
        return None


def served_stream(source=LEG, closures=LEG_CLOSURES, **changes):
    """(ServedModel active with the robot, its Stream on a StreamNode, the node) with the node's
    settings and changes (a double underscore stands for a dot); no stale inputs, no completion
    budget and no latency warning, which a loaded machine could trip."""
    values = settings(**{'stream__max_age': 0.0, 'stream__completion_budget': 1e4,
                         'stream__latency_warn': 0.0, **changes})
    served = ServedModel(values, StreamStats(), Log())
    node = StreamNode()
    stream = Stream(node, lambda name: name, served, values, served.stats, ROSClock(),
                    served.logger)
    served.swap(load(LABEL, source, closures, values, served.logger))
    served.state = 'active'
    return served, stream, node


def leg_state(model, values):
    """joint_states of the leg's actuated joints (values by name), velocities zero, stamped now
    (no latency to warn of)."""
    names = list(model.actuated_joint_names)
    msg = JointState(name=names, position=[float(values[n]) for n in names],
                     velocity=[0.0] * len(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
    return msg


REFERENCE = {'hip_pitch': 0.0, 'knee': 0.0, 'motor_l': 0.0, 'motor_r': 0.0}


# ---- placeholder effort limits ----

def test_the_load_warns_of_limits_that_cannot_hold_the_robot():
    """Every joint's <limit effort="1">: the hip and the knee need more to hold the horizontal leg
    at its reference configuration; the warning names both with the numbers and the parameter that
    silences it. 'ignore' silences it; a robot whose limits hold (bundled belt_leg) has none."""
    model = load_model(LEG, closures=LEG_CLOSURES)
    needed = model.gravity_forces(model.reference_positions)
    need = {n: abs(needed[model.independent_joint_names.index(n)]) for n in ('hip_pitch', 'knee')}
    assert min(need.values()) > 1.0
    log = Log()
    load(LABEL, LEG, LEG_CLOSURES, settings(), log)
    load(LABEL, LEG, LEG_CLOSURES, settings(stream__effort_limits='ignore'), log)
    load('belt_leg', bundled_model('belt_leg'), None, settings(), log)
    (warning,) = [m for level, m in log.lines if level == 'warning']
    assert warning == (
        "the <limit effort> of 2 joints of 'placeholder_leg' cannot hold it at its reference "
        f"configuration against gravity: hip_pitch 1 < {need['hip_pitch']:.3g}, knee 1 < "
        f"{need['knee']:.3g}. Placeholder limits? stream.effort_limits: clamp publishes the limit "
        "instead of the effort; set stream.effort_limits to 'ignore' to publish the computed "
        'efforts (this warning then goes)'), warning


@pytest.mark.parametrize('policy', ['clamp', 'reject', 'ignore'])
def test_an_effort_beyond_its_limit_is_clamped_or_dropped_and_named_or_passed(policy):
    """At the reference configuration the hip needs ~16 N m against its placeholder 1: 'clamp'
    publishes the limit where the library's effort is beyond it, 'reject' publishes nothing,
    both WARN on /diagnostics naming the joint, the effort and the policy, until a period without
    such an output (then OK, last_error empty); 'ignore' publishes the library's efforts, OK."""
    served, stream, node = served_stream(stream__effort_limits=policy)
    diagnostics = Diagnostics(FakeNode(), served, served.settings, served.stats, True)
    model = served.loaded.model
    stream.on_joint_state(leg_state(model, REFERENCE))
    tau = model.bias_forces(model.reference_positions, np.zeros(model.ny))
    torques = node.publishers['~/computed_torques'].sent
    status = diagnostics.status()
    values = {kv.key: kv.value for kv in status.values}
    hip = f"{tau[0]:.6g} of joint 'hip_pitch' exceeds its <limit effort> 1"
    if policy == 'ignore':
        assert_close(torques[-1].effort, tau, 'the efforts as computed')
        assert status.level == DiagnosticStatus.OK, status.message
        return
    assert status.level == DiagnosticStatus.WARN
    if policy == 'clamp':
        assert_close(torques[-1].effort, np.clip(tau, -1.0, 1.0), 'clamped efforts')
        assert status.message == (
            f'1 outputs clamped to <limit effort>: effort {hip} (stream.effort_limits: clamp): '
            f'published {np.sign(tau[0]):g}'), status.message
        assert values['clamped_efforts'] == '1'
    else:
        assert not torques
        assert status.message == (f'1 joint_states dropped over <limit effort>: effort {hip} '
                                  '(stream.effort_limits: reject)'), status.message
        assert values['over_effort_limit'] == '1'
    assert values['last_error'] in status.message
    status = diagnostics.status()
    assert (status.level, status.message) == (DiagnosticStatus.OK, 'ok')
    assert {kv.key: kv.value for kv in status.values}['last_error'] == ''


# ---- /tf, /tf_static, ~/completed_joint_states ----

def _pose(transform):
    t, r = transform.transform.translation, transform.transform.rotation
    return quaternion_matrix(r.x, r.y, r.z, r.w), np.array([t.x, t.y, t.z])


def chained_poses(root, messages):
    """{link: (R, p)} in root's frame, chaining the parent -> child transforms of messages."""
    edges = {t.child_frame_id: (t.header.frame_id, _pose(t))
             for msg in messages for t in msg.transforms}
    poses = {root: (np.eye(3), np.zeros(3))}

    def pose(link):
        if link not in poses:
            parent, (R, p) = edges[link]
            R_parent, p_parent = pose(parent)
            poses[link] = (R_parent @ R, p_parent + R_parent @ p)
        return poses[link]
    for link in edges:
        pose(link)
    return poses


def test_tf_carries_every_link_and_the_file_joints_their_states(rng):
    """At a closed configuration of the Extended URDF leg, /tf (movable joints, the input's stamp)
    and /tf_static (fixed ones, once per served model) chain into every link's pose as the library
    gives it, ankle_cross of the UJOINT included; ~/completed_joint_states names the file's joints
    that a JointState carries, toe_joint (FIXED) at 0."""
    served, stream, node = served_stream(stream__effort_limits='ignore')
    model = served.loaded.model
    (static,) = node.publishers['/tf_static'].sent
    assert {t.child_frame_id for t in static.transforms} == {
        'rod_l_end', 'rod_r_end', 'foot_l_pin', 'foot_r_pin', 'toe'}
    values = dict(zip(REFERENCE, rng.uniform(-0.2, 0.2, 4)))
    msg = leg_state(model, values)
    stream.on_joint_state(msg)
    (tf,) = node.publishers['/tf'].sent
    assert all(t.header.stamp == msg.header.stamp for t in tf.transforms)
    q = model.complete_positions([values[n] for n in model.actuated_joint_names])
    poses = chained_poses(model.root_link, [tf, static])
    assert set(poses) == set(model.links) and 'ankle_cross' in poses
    for link in model.links:
        R, p = model.link_pose(q, link)
        assert_close(poses[link][0], R, f'{link} orientation', 1e-12)
        assert_close(poses[link][1], p, f'{link} position', 1e-12)
    (joints,) = node.publishers['~/completed_joint_states'].sent
    assert list(joints.name) == ['hip_pitch', 'knee', 'motor_l', 'motor_r', 'toe_joint']
    assert_close(joints.position, [q[model.idx_q[model.joint_names.index(n) + 1]]
                                   for n in joints.name[:4]] + [0.0], 'positions')
    assert joints.header.stamp == msg.header.stamp


def test_tf_hangs_a_floating_base_on_the_odometry_frame():
    """quadruped_rotors with odometry: the floating joint's child (trunk) hangs on the odometry
    message's frame at its pose; no /tf while nobody listens."""
    served, stream, node = served_stream(bundled_model('quadruped_rotors'), None,
                                         odometry_topic='odom')
    model = served.loaded.model
    odometry = Odometry()
    odometry.header.frame_id = 'odom'
    odometry.pose.pose.position.x = 0.5
    odometry.pose.pose.orientation.z, odometry.pose.pose.orientation.w = 1.0, 0.0
    stream.on_odometry(odometry)
    names = [n for n in model.actuated_joint_names]
    msg = JointState(name=names, position=[0.7 if 'hip' in n else -1.4 if 'knee' in n else 0.0
                                           for n in names])
    stream.on_joint_state(msg)
    (tf,) = node.publishers['/tf'].sent
    (base,) = [t for t in tf.transforms if t.child_frame_id == 'trunk']
    R, p = _pose(base)
    assert base.header.frame_id == 'odom' and p.tolist() == [0.5, 0.0, 0.0]
    assert_close(R, np.diag([-1.0, -1.0, 1.0]), 'half a turn about z')
    node.publishers['/tf'].listeners = 0
    stream.on_joint_state(msg)
    assert len(node.publishers['/tf'].sent) == 1


# ---- parameters and contact sets checked against each served model ----

def test_stream_contacts_must_name_links_of_the_model():
    """At configure and at run time, stream.contacts naming a link the model lacks is refused with
    the reason; the served model and its settings stay."""
    served = ServedModel(settings(robot_description_file='linkage_leg',
                                  stream__contacts=setting('stream.contacts', ['nolink:6D'])),
                         StreamStats(), Log())
    with pytest.raises(ModelError, match=r"stream.contacts does not fit 'linkage_leg': .*"
                                         r"'nolink'"):
        served.configure()
    served.settings['stream.contacts'] = ()
    served.configure()
    served.state = 'active'
    result = set_parameters(served, stream__contacts=['foot:3D', 'nolink:6D'])
    assert not result.successful
    assert result.reason.startswith("stream.contacts does not fit 'linkage_leg'"), result.reason
    assert served.settings['stream.contacts'] == ()
    assert set_parameters(served, stream__contacts=['foot:3D']).successful


def test_a_contact_set_is_checked_against_every_served_model():
    """A set received before a model is served is kept, then dropped with a warning when the
    served model lacks its link; a set that fits stays across a reload that keeps the link."""
    values = settings(stream__max_age=0.0)
    served = ServedModel(values, StreamStats(), Log())
    stream = Stream(StreamNode(), lambda name: name, served, values, served.stats, ROSClock(),
                    served.logger)
    stream.on_contacts(ContactSet(contacts=[Contact(link='FL_foot', kind='3D')]))
    assert stream.contact_set is not None
    served.swap(load('linkage_leg', bundled_model('linkage_leg'), None, values, served.logger))
    assert stream.contact_set is None
    assert served.logger.lines[-1][0] == 'warning'
    assert served.logger.lines[-1][1].startswith('contact set from ~/contacts dropped: '), \
        served.logger.lines[-1]
    stream.on_contacts(ContactSet(contacts=[Contact(link='foot', kind='3D')]))
    served.swap(load('linkage_leg', bundled_model('linkage_leg'), None, values, served.logger))
    assert stream.contact_set[0][0].link == 'foot'


def test_every_refusal_names_a_possible_next_step():
    """Inactive: activate; unconfigured after a cleanup (a description set): configure and
    activate; finalized: start the node again."""
    served = ServedModel(settings(robot_description_file='linkage_leg'), StreamStats(), Log(),
                         autostart=lambda: None)
    expected = {'inactive': 'the node is inactive: nothing is served until it is activated',
                'unconfigured': 'no robot model loaded yet: the node is unconfigured; configure '
                                'and activate it (lifecycle)',
                'finalized': 'the node is finalized (lifecycle shutdown): nothing is served; '
                             'start the node again'}
    for state, message in expected.items():
        served.state = state
        with pytest.raises(ModelError, match=message.replace('(', r'\(').replace(')', r'\)')):
            served.current()


def test_no_description_yet_is_a_normal_start_under_autostart():
    """Autostart's configure without a description (one comes later on the topic) logs INFO and
    counts nothing; a lifecycle manager's configure without one logs the ERROR."""
    for autostart, level in ((lambda: None, 'info'), (None, 'error')):
        served = ServedModel(settings(), StreamStats(), Log(), autostart=autostart)
        with pytest.raises(ModelError, match='no robot description'):
            served.configure()
        assert [line[0] for line in served.logger.lines] == [level]
        assert served.stats.rejected == (0 if autostart else 1)


def test_floating_base_hangs_a_file_without_one_on_the_odometry():
    """floating_base (a legged robot exported without a floating joint): linkage_leg's root link
    hangs on the library's floating joint, its pose from the odometry; the efforts are the
    library's at that base pose, /tf hangs the root link on the odometry frame; setting
    floating_base false reloads the fixed robot."""
    served, stream, node = served_stream(bundled_model('linkage_leg'), None, floating_base=True,
                                         odometry_topic='odom', stream__effort_limits='ignore',
                                         robot_description_file='linkage_leg')
    model = served.loaded.model
    fixed = load_model(bundled_model('linkage_leg'))
    assert model.floating_base and model.ny == fixed.ny + 6
    assert model.actuated_joint_names == fixed.actuated_joint_names
    odometry = Odometry()
    odometry.header.frame_id = 'odom'
    odometry.pose.pose.position.z = 0.7
    odometry.pose.pose.orientation.x, odometry.pose.pose.orientation.w = 0.6, 0.8
    odometry.twist.twist.angular.y = 0.5
    stream.on_odometry(odometry)
    names = list(model.actuated_joint_names)
    msg = JointState(name=names, position=[0.8, 0.3], velocity=[0.2, -0.1])
    stream.on_joint_state(msg)
    base = model.floating_base_joint
    q = model.complete_positions({**dict(zip(names, msg.position)),
                                  base: [0.0, 0.0, 0.7, 0.6, 0.0, 0.0, 0.8]})
    y = np.zeros(model.ny)
    for name, velocity in zip(names, msg.velocity):
        y[model.independent_velocities_index[name]] = velocity
    y[model.independent_velocities_index[base] + 4] = 0.5     # (linear, angular) in the base
    tau = model.bias_forces(q, y)
    (torques,) = node.publishers['~/computed_torques'].sent
    assert_close(torques.effort, served.loaded.layout.split_independent(tau)[0], 'efforts', 1e-12)
    (tf,) = node.publishers['/tf'].sent
    (hung,) = [t for t in tf.transforms if t.header.frame_id == 'odom']
    assert hung.child_frame_id == fixed.root_link
    assert_close(_pose(hung)[1], [0.0, 0.0, 0.7], 'base position')
    assert set_parameters(served, floating_base=False).successful
    assert not served.loaded.model.floating_base
