"""Unit tests of dynamics_node.ros_conversions: messages <-> library arrays, without DDS.

The reference layouts are built here from the model's joint lists (not from the layout code): the
floating joint sits in q, v and y at the entries the library documents, and a request naming the
independent joints must give the library what it gets from complete_positions and y directly.
"""

from array import array
from pathlib import Path

from cluster_dynamics.msg import Contact, LinkWrench
from geometry_msgs.msg import Accel, Pose, Twist, Wrench
import numpy as np
import pytest

from conftest import assert_close, random_state, robot
from dynamics_node import load_model, ModelError
from dynamics_node.ros.conversions import (accel_to_array, array_to_accel, array_to_wrench,
                                           contacts_from_msgs, float64_array, JointLayout,
                                           link_wrenches_to_dict,
                                           normalized_pose, pose_to_array, StreamInput,
                                           twist_to_array)
from joint_type_models import MODELS

PLACEHOLDER_LEG = str(Path(__file__).parents[1] / 'models' / 'placeholder_leg.urdf')
PLACEHOLDER_CLOSURES = PLACEHOLDER_LEG[:-len('urdf')] + 'yaml'

# The crank-rocker closed configuration of four_bar.urdf's comment (closed[crank1]).
FOUR_BAR_CLOSED = {'crank_joint': 1.0, 'coupler_joint': -0.507353802871532,
                   'rocker_joint': 1.621178553741403}


def pose(x, y, z, qx, qy, qz, qw):
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = x, y, z
    o = msg.orientation
    o.x, o.y, o.z, o.w = qx, qy, qz, qw
    return msg


def twist(values):
    msg = Twist()
    msg.linear.x, msg.linear.y, msg.linear.z = values[:3]
    msg.angular.x, msg.angular.y, msg.angular.z = values[3:]
    return msg


def link_wrench(link, force, torque):
    msg = LinkWrench(link=link)
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = force
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = torque
    return msg


# ---- geometry messages ----

def test_pose_twist_accel_to_arrays():
    assert list(pose_to_array(pose(1, 2, 3, 0, 0, 0.6, 0.8))) == [1, 2, 3, 0, 0, 0.6, 0.8]
    assert list(twist_to_array(twist([1, 2, 3, 4, 5, 6]))) == [1, 2, 3, 4, 5, 6]
    accel = array_to_accel([1, 2, 3, 4, 5, 6], Accel())
    assert (accel.linear.z, accel.angular.x) == (3.0, 4.0)
    assert list(accel_to_array(accel)) == [1, 2, 3, 4, 5, 6]
    wrench = array_to_wrench(np.arange(6.0), Wrench())
    assert (wrench.force.x, wrench.force.z, wrench.torque.x, wrench.torque.z) == (0, 2, 3, 5)


def test_normalized_pose():
    assert_close(normalized_pose(pose(0, 0, 0, 0, 0, 0, 2))[3:], [0, 0, 0, 1], 'quaternion')
    with pytest.raises(ModelError, match=r'odom.orientation is the zero quaternion'):
        normalized_pose(pose(0, 0, 0, 0, 0, 0, 0), 'odom')


@pytest.mark.parametrize('convert, message', [
    (lambda: pose_to_array(pose(0, np.nan, 0, 0, 0, 0, 1)), r'base_pose.position\[y\] is nan'),
    (lambda: pose_to_array(pose(0, 0, 0, 0, 0, 0, np.inf)), r'base_pose.orientation\[w\] is inf'),
    (lambda: twist_to_array(twist([0, 0, 0, 0, 0, np.nan])), r'base_twist.angular\[z\] is nan'),
])
def test_non_finite_geometry_is_named(convert, message):
    with pytest.raises(ModelError, match=message):
        convert()


def test_link_wrenches_add_per_link():
    wrenches = link_wrenches_to_dict([link_wrench('a', (1, 0, 0), (0, 0, 1)),
                                      link_wrench('b', (0, 2, 0), (0, 0, 0)),
                                      link_wrench('a', (1, 0, 0), (0, 0, 2))])
    assert sorted(wrenches) == ['a', 'b']
    assert_close(wrenches['a'][0], [2, 0, 0], 'force on a')
    assert_close(wrenches['a'][1], [0, 0, 3], 'torque on a')
    with pytest.raises(ModelError, match=r'external_wrenches\[1\].wrench.torque\[x\] is nan'):
        link_wrenches_to_dict([link_wrench('a', (0, 0, 0), (0, 0, 0)),
                               link_wrench('b', (0, 0, 0), (np.nan, 0, 0))])


def test_float64_array():
    values = float64_array(np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(-1))
    assert isinstance(values, array) and values.typecode == 'd'
    assert list(values) == [1.0, 2.0, 3.0, 4.0]


# ---- joint layouts of requests ----

def test_four_bar_spanning_and_independent_selections():
    model = robot('four_bar')
    layout = JointLayout(model)
    assert not layout.floating
    assert layout.joint_names == model.joint_names
    assert layout.independent_names == ('crank_joint',)
    names = ['rocker_joint', 'crank_joint', 'coupler_joint']         # any order
    spanning = layout.select(names)
    assert not spanning.independent
    q = layout.positions(spanning, [FOUR_BAR_CLOSED[n] for n in names], names)
    assert_close(q, [FOUR_BAR_CLOSED[n] for n in model.joint_names], 'q')
    independent = layout.select(['crank_joint'])
    assert independent.independent
    completed = layout.positions(independent, array('d', [1.0]), ['crank_joint'])
    assert_close(completed, model.complete_positions([1.0]), 'completed q')
    v = layout.velocity_like(spanning, [3.0, 1.0, 2.0], 'state.velocity', names)
    assert_close(v, [1.0, 2.0, 3.0], 'v')
    assert_close(layout.velocity_like(independent, [], 'state.velocity', ['crank_joint']), [0.0],
                 'empty velocity')
    assert layout.select(names) is spanning                          # cached per name list


def test_spherical_joints_are_completed_not_state_joints(rng):
    """delta: the platform's spherical joint is no JointState joint; a spanning request of the
    1-DoF joints gets it from the loops, velocities by their independent entries, efforts
    projected."""
    model = robot('delta')
    layout = JointLayout(model)
    assert layout.completed == ('platform_ball',)
    assert ('platform_ball' not in layout.joint_names
            and len(layout.joint_names) == len(model.joint_names) - 1)
    q_closed = model.complete_positions([0.2, -0.1, 0.3])
    names = list(layout.joint_names)
    spanning = layout.select(names)
    index = [model.idx_q[model.joint_names.index(n) + 1] for n in names]
    q = layout.positions(spanning, q_closed[index], names)
    assert_close(q, q_closed, 'q with the completed platform')
    y = rng.normal(size=3)
    v_full = model.spanning_velocities(q, y)
    v_index = [model.idx_v[model.joint_names.index(n) + 1] for n in names]
    assert_close(layout.velocity_like(spanning, v_full[v_index], 'state.velocity', names), y, 'y')
    tau = layout.velocity_like(spanning, np.ones(len(names)), 'state.effort', names, forces=True)
    platform = model.idx_v[model.joint_names.index('platform_ball') + 1]
    assert tau.size == model.nv and not tau[platform:platform + 3].any()
    with pytest.raises(ModelError,
                       match=r"spherical joint 'ball' has independent coordinates: a JointState "
                             r"carries one value per joint"):
        JointLayout(load_model('<robot name="x"><link name="a"/><link name="b"><inertial><mass '
                               'value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                               'izz="1"/></inertial></link><joint name="ball" '
                               'type="spherical"><parent link="a"/><child '
                               'link="b"/></joint></robot>'))


def test_floating_base_layout():
    model = robot('quadruped_rotors')
    layout = JointLayout(model)
    assert layout.base_joint == 'floating_base'
    assert 'floating_base' not in layout.joint_names + layout.independent_names
    assert len(layout.independent_names) == model.ny - 6
    rng = np.random.default_rng(0)
    q_ref, yd_ref, _ = random_state(model, rng)
    base_pose, base_twist = q_ref[:7], yd_ref[:6]      # floating_base is the first joint
    names = list(layout.independent_names)
    index = [model.joint_names.index(n) + 6 for n in names]    # q entry of each 1-dof joint
    selection = layout.select(names)
    q = layout.positions(selection, q_ref[index], names, base_pose)
    assert_close(q, q_ref, 'q from the independent joints and base_pose')
    y_index = [model.independent_joint_names.index(n) + 5 for n in names]
    y = layout.velocity_like(selection, yd_ref[y_index], 'state.velocity', names, base_twist)
    assert_close(y, yd_ref, 'y from the independent joints and base_twist')
    joints, base = layout.split_independent(y)
    assert_close(joints, yd_ref[y_index], 'joint part')
    assert_close(base, base_twist, 'base part')
    qdd = np.arange(model.nv, dtype=float)
    joints, base = layout.split_spanning(qdd)
    assert_close(base, qdd[:6], 'base acceleration')
    assert_close(joints, qdd[6:], 'joint accelerations')


@pytest.mark.parametrize('names, values, message', [
    # a joint named twice
    (['crank_joint', 'crank_joint'], [0, 0], r"state.name lists \['crank_joint'\] more than once"),
    # neither all spanning joints nor every actuated one; the names ignored are listed
    (['rocker_joint', 'elbow'], [0, 0],
     r"state.name misses actuated joint\(s\) \['crank_joint'\]: name every actuated joint "
     r"\['crank_joint'\] \(passive ones may be left out: they rest at the reference "
     r"configuration; other names are ignored, here \['elbow'\]\), or all 3 spanning joints"),
    # lengths
    (['crank_joint'], [0, 0], r'state.position has 2 entries; expected 1 \(one per state.name\)$'),
    (['crank_joint'], [], r'state.position has 0 entries; expected 1'),
    # non-finite, named by joint
    (['crank_joint'], [np.nan], r'state.position\[crank_joint\] is nan'),
])
def test_bad_request_states(names, values, message):
    layout = JointLayout(robot('four_bar'))
    with pytest.raises(ModelError, match=message):
        layout.positions(layout.select(names), values, names)


def test_floating_joint_is_not_a_state_joint():
    layout = JointLayout(robot('quadruped_rotors'))
    with pytest.raises(ModelError, match=r"state.name lists the floating joint 'floating_base', "
                                         r'which the base fields give'):
        layout.select(['floating_base'])


def test_velocity_length_mismatch():
    layout = JointLayout(robot('four_bar'))
    selection = layout.select(['crank_joint'])
    with pytest.raises(ModelError, match=r'state.effort has 2 entries; expected 1 \(one per '
                                         r'state.name\) or none'):
        layout.velocity_like(selection, [1.0, 2.0], 'state.effort', ['crank_joint'])


# ---- stream input ----

def test_stream_merges_partial_reordered_messages():
    model = robot('linkage_leg')               # independent: crank_joint, ankle_joint
    stream = StreamInput(JointLayout(model))
    assert model.independent_joint_names == ('crank_joint', 'ankle_joint')
    positions, velocities = stream.stage(['ankle_joint', 'crank_joint'], [0.2, 0.1], [2.0, 1.0])
    assert_close(positions, [0.1, 0.2], 'positions')
    assert_close(velocities, [1.0, 2.0], 'velocities')
    stream.commit()
    # a dependent joint is ignored, an empty velocity array keeps the velocities
    positions, velocities = stream.stage(['shank_joint', 'ankle_joint'], [9.0, 0.3], [])
    assert_close(positions, [0.1, 0.3], 'positions after a partial message')
    assert_close(velocities, [1.0, 2.0], 'velocities kept')
    # not committed: the next message starts from the committed state
    positions, _ = stream.stage(['crank_joint'], [0.5], [])
    assert_close(positions, [0.5, 0.2], 'staged positions start from the committed state')


def test_stream_ignores_unknown_joints_and_values_not_needed():
    """A gripper's joint and NaN or inf in a dependent joint change nothing."""
    stream = StreamInput(JointLayout(robot('linkage_leg')))
    positions, velocities = stream.stage(
        ['gripper', 'crank_joint', 'shank_joint', 'gripper', 'ankle_joint'],
        [np.nan, 0.1, np.nan, 1.0, 0.2], [np.inf, 1.0, np.inf, np.nan, 2.0])
    assert_close(positions, [0.1, 0.2], 'positions')
    assert_close(velocities, [1.0, 2.0], 'velocities')


@pytest.mark.parametrize('names, positions, velocities, message', [
    (['crank_joint', 'knee'], [0, np.nan], [1, 2, 3], r'velocity has 3 entries; expected 2'),
    (['crank_joint'], [0, 1], [], r'position has 2 entries; expected 1 \(one per name\) or none'),
    (['crank_joint'], [0], [np.inf], r'velocity\[crank_joint\] is inf'),
    (['ankle_joint', 'ankle_joint'], [0, 0], [], r"name lists \['ankle_joint'\] more than once"),
])
def test_stream_rejects_bad_messages_without_changing_state(names, positions, velocities,
                                                            message):
    stream = StreamInput(JointLayout(robot('linkage_leg')))
    stream.stage(['crank_joint', 'ankle_joint'], [0.1, 0.2], [1.0, 2.0])
    stream.commit()
    with pytest.raises(ModelError, match=message):
        stream.stage(names, positions, velocities)
    positions, velocities = stream.stage([], [], [])
    assert_close(positions, [0.1, 0.2], 'positions after a rejected message')
    assert_close(velocities, [1.0, 2.0], 'velocities after a rejected message')


def test_stream_floating_base_starts_at_rest_at_identity():
    model = robot('quadruped_rotors')
    stream = StreamInput(JointLayout(model))
    positions, velocities = stream.stage([], [], [])
    assert_close(positions[:7], [0, 0, 0, 0, 0, 0, 1], 'base pose')
    assert_close(velocities, np.zeros(model.ny), 'velocities')
    base = (np.array([1.0, 2, 3, 0, 0, 0, 1]), np.arange(6.0))
    positions, velocities = stream.stage(['FL_knee_joint'], [0.5], [0.25], base)
    assert_close(positions[:7], base[0], 'base pose from odometry')
    assert_close(velocities[:6], base[1], 'base twist from odometry')
    y = model.independent_joint_names.index('FL_knee_joint') + 5    # 6 base entries, not 1
    assert (positions[y + 1], velocities[y]) == (0.5, 0.25)         # 7 base positions


def test_split_joint_carries_its_spin_rate_and_no_position():
    """RSSR's rod_ball (test_joint_types): an independent name whose one value is the spin rate (y)
    and whose position is ignored (completed); no spanning name (completed like a dependent ball
    joint)."""
    model = load_model(MODELS['rssr'])
    layout = JointLayout(model)
    assert layout.independent_names == ('crank_joint', 'rod_ball') and layout.nqi == 1
    assert (layout.joint_names == ('crank_joint', 'rocker_joint')
            and layout.completed == ('rod_ball',))
    names = ['rod_ball', 'crank_joint']
    selection = layout.select(names)
    q = layout.positions(selection, [123.0, 0.3], names)
    assert_close(q, model.complete_positions([0.3]), 'q completed from the crank alone')
    y = layout.velocity_like(selection, [2.0, 1.0], 'state.velocity', names)
    assert_close(y, [1.0, 2.0], 'y: crank rate, spin rate')
    tau = model.inverse_dynamics(q, y, np.zeros(2))
    assert_close(layout.split_independent(tau)[0], tau, 'one effort per independent name')
    spanning = layout.select(['rocker_joint', 'crank_joint'])
    assert_close(layout.positions(spanning, [q[-1], 0.3], ['rocker_joint', 'crank_joint']), q,
                 'spanning q')
    stream = StreamInput(layout)
    positions, velocities = stream.stage(names, [np.nan, 0.4], [3.0, 1.5])
    assert_close(positions, [0.4], 'the spin has no position entry (NaN ignored)')
    assert_close(velocities, [1.5, 3.0], 'velocities')


def test_requests_take_the_streams_form(rng):
    """A request's state as joint_states carry it: the actuated joints in any order, a gripper's
    joint and a dependent one (NaN) ignored; the passive rod spins left out rest at the reference
    configuration, at rest (placeholder_leg: an Extended URDF with SPHERICAL rods and a UJOINT
    ankle)."""
    model = load_model(PLACEHOLDER_LEG, closures=PLACEHOLDER_CLOSURES, compiled=False)
    layout = JointLayout(model)
    assert model.passive_joint_names == ('rod_l_top', 'rod_r_top')
    names = ['gripper', 'motor_r', 'ankle_a', 'knee', 'hip_pitch', 'motor_l']
    values = {'hip_pitch': 0.3, 'knee': -0.4, 'motor_l': 0.1, 'motor_r': -0.05}
    positions = [values.get(n, np.nan) for n in names]
    rates = [values.get(n, np.nan) * 2.0 for n in names]
    selection = layout.select(names)
    assert selection.independent and set(selection.used) == set(values)
    q = layout.positions(selection, positions, names)
    assert_close(q, model.complete_positions([values[n] for n in model.actuated_joint_names]),
                 'q completed from the actuated joints')
    y = layout.velocity_like(selection, rates, 'state.velocity', names)
    expected = [2.0 * values.get(n, 0.0) for n in model.independent_joint_names]
    assert_close(y, expected, 'y, the passive spins at rest')
    tau = layout.velocity_like(selection, rates, 'state.effort', names, forces=True)
    assert_close(tau, expected, 'efforts, zero on the passive spins')


@pytest.mark.parametrize('other_placement, message', [
    (((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)),
     r'contacts\[0\].other_placement is .*but other is empty \(the world\)'),
    (((np.nan, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
     r'contacts\[0\].other_placement.position\[x\] is nan'),
    (((0.1, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
     r'contacts\[0\].other_placement is .*but other is empty'),
])
def test_a_contact_with_the_world_refuses_an_other_placement(other_placement, message):
    """As the library refuses other_placement without other, the node refuses anything but the
    message's default (the identity) when other is empty; the identity passes."""
    contact = Contact(link='foot', kind='3D')
    (contact.other_placement.position.x, contact.other_placement.position.y,
     contact.other_placement.position.z) = other_placement[0]
    o = contact.other_placement.orientation
    o.x, o.y, o.z, o.w = other_placement[1]
    with pytest.raises(ModelError, match=message):
        contacts_from_msgs([contact])
    (held,) = contacts_from_msgs([Contact(link='foot', kind='3D')])
    assert (held.link, held.kind, held.other, held.other_placement) == ('foot', '3D', None, None)
