"""Contacts in the node: the services take them per request and answer their wrenches (handlers,
without DDS), and the stream's efforts hold the contacts of stream.contacts or of the last set on
~/contacts, falling back to stream.contacts, with a warning, when that set is older than
stream.contacts_max_age (over DDS)."""

from cluster_dynamics.msg import Contact as ContactMsg, ContactSet
from cluster_dynamics.srv import ForwardDynamics, InverseDynamics
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from dynamics_node import bundled_model, Contact, load_model, ModelError
from dynamics_node.ros.client import DynamicsClient
from dynamics_node.ros.conversions import JointLayout
from dynamics_node.ros.stream import CONTACTS_QOS
from node_helpers import (collect, joint_state, MAX_AGE, NAMESPACE, node_status,  # noqa: F401
                          node_values, NodeProcess, publish_and_wait, ros, set_parameters,
                          stamp_of, torques_qos, wait_until_served)
from test_services import call, loaded, serving, set_parameters as set_local

FEET = ('FL_foot', 'FR_foot', 'HL_foot', 'HR_foot')
STANDING = [f'{foot}:3D' for foot in FEET]


def contact_msg(link, kind, position=(0.0, 0.0, 0.0), other=''):
    msg = ContactMsg(link=link, kind=kind, other=other)
    msg.placement.position.x, msg.placement.position.y, msg.placement.position.z = position
    return msg


def quadruped_request(srv_type, model, rng):
    """A request at a random pose of the joints, the base at the identity, at rest."""
    request = srv_type.Request()
    names = [n for n in model.independent_joint_names if n != model.floating_base_joint]
    request.state.name = names
    request.state.position = [float(x) for x in rng.uniform(-0.5, 0.5, len(names))]
    request.state.velocity = [0.0] * len(names)
    request.state.effort = [float(x) for x in rng.uniform(-5.0, 5.0, len(names))]
    return request


def spanning_positions(model, request):
    positions = dict(zip(request.state.name, request.state.position))
    return model.complete_positions(
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + [positions[n] for n in model.independent_joint_names
                                               if n != model.floating_base_joint])


def wrench_array(wrench):
    return np.array([wrench.force.x, wrench.force.y, wrench.force.z,
                     wrench.torque.x, wrench.torque.y, wrench.torque.z])


def test_forward_dynamics_service_holds_the_requested_contacts(rng):
    """Four point feet, one with a placement below the foot: the accelerations and the contact
    wrenches are the library's (forces only, zero torques, for 3D contacts)."""
    served = loaded('quadruped_rotors')
    model = served.model
    request = quadruped_request(ForwardDynamics, model, rng)
    request.method = 'aba'
    request.contacts = [contact_msg(foot, '3D') for foot in FEET[:3]] + [
        contact_msg(FEET[3], '3D', (0.0, 0.0, -0.01))]
    response = call(ForwardDynamics, served, request)
    contacts = [Contact(foot, '3D') for foot in FEET[:3]] + [
        Contact(FEET[3], '3D', ((0.0, 0.0, -0.01), (0.0, 0.0, 0.0, 1.0)))]
    q = spanning_positions(model, request)
    tau = np.r_[np.zeros(6), request.state.effort]
    info = model.forward_dynamics(q, np.zeros(model.ny), tau, contacts=contacts, method='aba',
                                  info=True)
    joints, _ = JointLayout(model).split_spanning(info.acceleration)
    assert np.max(np.abs(np.array(response.acceleration) - joints)) <= 1e-12
    assert len(response.contact_wrenches) == 4
    for wrench, force in zip(response.contact_wrenches, info.contact_forces):
        assert np.array_equal(wrench_array(wrench), np.r_[force, np.zeros(3)])
    assert np.max(np.abs(info.contact_forces[0])) > 1.0


def test_inverse_dynamics_service_holds_the_requested_contacts(rng):
    """The quadruped standing on four points, at rest: the least-norm actuated efforts the
    library gives, the base wrench zero (the feet carry the robot), the contact wrenches'
    vertical forces carry its weight."""
    served = loaded('quadruped_rotors')
    model = served.model
    request = quadruped_request(InverseDynamics, model, rng)
    request.acceleration = [0.0] * len(request.state.name)
    request.contacts = [contact_msg(foot, '3D') for foot in FEET]
    response = call(InverseDynamics, served, request)
    q = spanning_positions(model, request)
    info = model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny),
                                  contacts=[Contact(foot, '3D') for foot in FEET], info=True)
    joints, base = JointLayout(model).split_independent(info.efforts)
    assert np.array_equal(np.array(response.effort), joints)
    assert np.array_equal(wrench_array(response.base_wrench), base) and not base.any()
    assert len(response.contact_wrenches) == 4
    plain = model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny))
    assert np.max(np.abs(joints - JointLayout(model).split_independent(plain)[0])) > 1e-3


@pytest.mark.parametrize('contacts, reason', [
    ([contact_msg('no_such_link', '3D')], "unknown link 'no_such_link'"),
    ([contact_msg('FL_foot', '2D')], "kind '2D' is unknown"),
    ([contact_msg('FL_foot', '3D'), contact_msg('FL_foot', '3D')], 'again'),
])
def test_bad_contacts_are_refused_by_name(rng, contacts, reason):
    served = loaded('quadruped_rotors')
    request = quadruped_request(ForwardDynamics, served.model, rng)
    request.contacts = contacts
    with pytest.raises(ModelError, match=reason):
        call(ForwardDynamics, served, request)


@pytest.mark.parametrize('value, reason', [
    (['FL_foot'], "is not 'link:kind'"),
    (['FL_foot:2D'], "kind '2D' is unknown"),
    (['FL_foot:3D', 'FL_foot:6D'], "names link 'FL_foot' twice"),
])
def test_bad_stream_contacts_are_rejected(value, reason):
    served = serving('quadruped_rotors')
    result = set_local(served, stream__contacts=value)
    assert not result.successful and reason in result.reason, result.reason
    assert served.settings['stream.contacts'] == ()


# ---- the stream, over DDS ----

@pytest.fixture(scope='module')
def standing(ros):  # noqa: F811 - the fixture imported above
    """The quadruped's node in gravity mode, its four feet held by stream.contacts."""
    process = NodeProcess('standing', robot_description_file='quadruped_rotors',
                          stream__mode='gravity', stream__max_age=MAX_AGE,
                          stream__contacts=str(STANDING))
    try:
        wait_until_served(ros, process)
        yield process
    finally:
        process.stop()


def expected_efforts(model, positions, contacts):
    """The efforts of the independent joints (not the base) at the base's identity pose."""
    q = model.complete_positions([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + list(positions))
    return JointLayout(model).split_independent(model.gravity_forces(q, contacts))[0]


def test_stream_efforts_hold_the_contacts_in_effect(ros, standing):  # noqa: F811
    """stream.contacts (four feet), then a set on ~/contacts (three feet), then that set stamped
    too long ago for stream.contacts_max_age: the four feet again, and /diagnostics warns."""
    model = load_model(bundled_model('quadruped_rotors'))
    names = [n for n in model.independent_joint_names if n != model.floating_base_joint]
    positions = np.tile([0.1, 0.7, -1.4], 4)
    four = [Contact(foot, '3D') for foot in FEET]
    three = [Contact(foot, '3D') for foot in FEET[:3]]
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/standing/joint_states',
                                          qos_profile_sensor_data)
    contact_sets = ros.node.create_publisher(ContactSet, f'{standing.name}/contacts',
                                             CONTACTS_QOS)
    try:
        with collect(ros, f'{standing.name}/computed_torques', JointState,
                     torques_qos()) as output, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:

            sent = iter(range(1, 10**6))

            def efforts():
                msg = joint_state(names, positions)
                msg.header.stamp = stamp_of(next(sent))
                answer = publish_and_wait(ros, publisher, output, msg)
                assert answer is not None, standing.output()
                return np.array(answer.effort)

            assert np.max(np.abs(efforts() - expected_efforts(model, positions, four))) <= 1e-9
            assert np.max(np.abs(expected_efforts(model, positions, four)
                                 - expected_efforts(model, positions, None))) > 1e-3
            contact_set = ContactSet(contacts=[contact_msg(c.link, c.kind) for c in three])
            contact_set.header.stamp = ros.node.get_clock().now().to_msg()
            contact_sets.publish(contact_set)
            expected = expected_efforts(model, positions, three)
            assert ros.spin_until(
                lambda: np.max(np.abs(efforts() - expected)) <= 1e-9), 'set not in use'

            assert set_parameters(ros, standing.name, stream__contacts_max_age=0.5).successful
            contact_set.header.stamp.sec -= 10
            contact_sets.publish(contact_set)
            expected = expected_efforts(model, positions, four)
            assert ros.spin_until(lambda: np.max(np.abs(efforts() - expected)) <= 1e-9)
            diagnostics.clear()

            def warned():
                status = node_status(diagnostics, standing.name)
                return (status is not None and 'holding stream.contacts' in status.message
                        and status)
            assert ros.spin_until(warned), 'no warning'
            assert warned().level == DiagnosticStatus.WARN
            values = node_values(diagnostics, standing.name)
            assert values['contacts_source'] == 'stream.contacts'
            assert values['contacts'] == ', '.join(STANDING)
            assert float(values['contacts_age_ms']) >= 10_000
    finally:
        set_parameters(ros, standing.name, stream__contacts_max_age=0.0)
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_publisher(contact_sets)


def test_client_sends_contacts_and_returns_their_wrenches(ros, standing, rng):  # noqa: F811
    """DynamicsClient's forward and inverse dynamics with contacts (one with a placement) answer
    the library's accelerations, efforts and contact wrenches."""
    model = load_model(bundled_model('quadruped_rotors'))
    joints = [n for n in model.independent_joint_names if n != model.floating_base_joint]
    positions = rng.uniform(-0.5, 0.5, len(joints))
    contacts = [Contact(foot, '3D') for foot in FEET[:3]] + [
        Contact(FEET[3], '6D', ((0.0, 0.01, -0.02), (0.0, 0.0, np.sin(0.2), np.cos(0.2))))]
    q = model.complete_positions([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + list(positions))
    zero = np.zeros(len(joints))
    with DynamicsClient(standing.name, context=ros.node.context, timeout=10.0) as dynamics:
        tau = rng.uniform(-5.0, 5.0, len(joints))
        answer = dynamics.forward_dynamics(joints, positions, zero, tau, contacts=contacts,
                                           method='lcaba')
        info = model.forward_dynamics(q, np.zeros(model.ny), np.r_[np.zeros(6), tau],
                                      contacts=contacts, method='lcaba', info=True)
        assert np.max(np.abs(answer.acceleration
                             - JointLayout(model).split_spanning(info.acceleration)[0])) <= 1e-9
        expected = [np.r_[f, np.zeros(6 - len(f))] for f in info.contact_forces]
        assert np.max(np.abs(answer.contact_wrenches - expected)) <= 1e-9
        standing_efforts = dynamics.inverse_dynamics(joints, positions, zero, zero,
                                                     contacts=contacts)
        info = model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny),
                                      contacts=contacts, info=True)
        assert np.max(np.abs(standing_efforts.effort
                             - JointLayout(model).split_independent(info.efforts)[0])) <= 1e-9
        assert standing_efforts.contact_wrenches.shape == (4, 6)


def test_stream_bias_mode_projects_measured_velocities(ros, standing, rng):  # noqa: F811
    """stream.mode bias with the four feet held: the measured joint velocities (the base at
    rest) are projected onto those that keep the contacts, and the published efforts are the
    library's contact_bias_forces; /diagnostics reports the velocity correction."""
    model = load_model(bundled_model('quadruped_rotors'))
    names = [n for n in model.independent_joint_names if n != model.floating_base_joint]
    positions, velocities = np.tile([0.1, 0.7, -1.4], 4), rng.uniform(-1.0, 1.0, 12)
    q = model.complete_positions([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] + list(positions))
    held = model.contact_bias_forces(q, np.r_[np.zeros(6), velocities],
                                     [Contact(foot, '3D') for foot in FEET], info=True)
    assert held.velocity_correction > 0.1
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/standing/joint_states',
                                          qos_profile_sensor_data)
    contact_sets = ros.node.create_publisher(ContactSet, f'{standing.name}/contacts',
                                             CONTACTS_QOS)
    contact_sets.publish(ContactSet(contacts=[contact_msg(foot, '3D') for foot in FEET]))
    assert set_parameters(ros, standing.name, stream__mode='bias').successful
    expected = JointLayout(model).split_independent(held.efforts)[0]
    sent = iter(range(1000, 10**6))
    try:
        with collect(ros, f'{standing.name}/computed_torques', JointState,
                     torques_qos()) as output, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
            def efforts():
                msg = joint_state(names, positions, velocities)
                msg.header.stamp = stamp_of(next(sent))
                answer = publish_and_wait(ros, publisher, output, msg)
                assert answer is not None, standing.output()
                return np.array(answer.effort)
            # the four feet once the set has arrived
            assert ros.spin_until(lambda: np.max(np.abs(efforts() - expected)) <= 1e-9)
            diagnostics.clear()
            assert ros.spin_until(lambda: node_values(diagnostics, standing.name))
            reported = float(node_values(diagnostics, standing.name)
                             ['contacts_velocity_correction'])
            assert abs(reported - held.velocity_correction) <= 1e-3 * held.velocity_correction
    finally:
        set_parameters(ros, standing.name, stream__mode='gravity')
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_publisher(contact_sets)


def test_a_biped_standing_on_two_feet_then_one(ros):  # noqa: F811
    """A humanoid (floating base, belt-driven knees) standing on both soles by stream.contacts:
    the published torques are the library's; a set on ~/contacts with the left sole alone changes
    them to the library's for that sole."""
    model = load_model(bundled_model('humanoid_belts'))
    soles = ('left_foot_sole', 'right_foot_sole')
    names = list(model.actuated_joint_names)
    reference = dict(zip(model.joint_names, model.reference_positions[model.idx_q[1:]]))
    positions = [reference[n] for n in names]
    q = model.reference_positions
    layout = JointLayout(model)

    def expected(contacts):
        efforts = layout.split_independent(model.gravity_forces(q, contacts))[0]
        return dict(zip(layout.independent_names, efforts))
    both, left = expected([Contact(s, '6D') for s in soles]), expected([Contact(soles[0], '6D')])
    assert max(abs(both[n] - left[n]) for n in both) > 0.1
    process = NodeProcess('biped', robot_description_file='humanoid_belts',
                          stream__mode='gravity', stream__max_age=MAX_AGE,
                          stream__contacts=str([f'{s}:6D' for s in soles]))
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/biped/joint_states',
                                          qos_profile_sensor_data)
    contact_sets = ros.node.create_publisher(ContactSet, f'{process.name}/contacts', CONTACTS_QOS)
    sent = iter(range(1, 10**6))
    try:
        wait_until_served(ros, process)
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as output:
            def matches(wanted):
                msg = joint_state(names, positions)
                msg.header.stamp = stamp_of(next(sent))
                answer = publish_and_wait(ros, publisher, output, msg)
                assert answer is not None, process.output()
                return max(abs(e - wanted[n]) for n, e in zip(answer.name, answer.effort)) <= 1e-9
            assert matches(both)
            contact_sets.publish(ContactSet(contacts=[contact_msg(soles[0], '6D')]))
            assert ros.spin_until(lambda: matches(left)), 'the new set is not in use'
    finally:
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_publisher(contact_sets)
        process.stop()
