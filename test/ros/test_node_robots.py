"""The node on the robots users have, end to end over DDS: no garbage near a dead point (services
refuse by name, the stream never publishes an effort beyond the joint's <limit effort>), and a
stream fed by what drivers publish (the output waits until every actuated joint has been named
once; passive coordinates start at the reference configuration)."""

import math
from pathlib import Path

from cluster_dynamics.srv import ForwardDynamics, InverseDynamics
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from dynamics_node import bundled_model, load_model, SingularConfigurationError
from singular_loops import dead_point, ROCKER_DRIVEN
from node_helpers import (collect, joint_state, MAX_AGE, NAMESPACE,  # noqa: F401 - a fixture
                          node_values, NodeProcess, publish_and_wait, ros, set_parameters,
                          stamp_of, torques_qos, wait_until_served)

EFFORT_LIMIT = 5.0          # the four-bar's <limit effort> of rocker_joint
MODELS = Path(__file__).parents[1] / 'models'


@pytest.fixture(scope='module')
def four_bar_node(ros, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """A node serving the four-bar driven by its rocker (dead points at the rocker's extremes)."""
    path = tmp_path_factory.mktemp('robots') / 'rocker_driven_four_bar.urdf'
    path.write_text(ROCKER_DRIVEN)
    process = NodeProcess('dead_point', robot_description_file=str(path), stream__max_age=MAX_AGE,
                          stream__effort_limits='reject')
    try:
        wait_until_served(ros, process)
        yield process, load_model(ROCKER_DRIVEN)
    finally:
        process.stop()


def test_services_refuse_a_pose_near_the_dead_point_by_name(ros, four_bar_node):  # noqa: F811
    """1e-6 rad from the dead point (closed by a model that accepts any amplification): inverse
    dynamics is refused with the cluster's name, forward dynamics falls back to LCABA and says
    why."""
    process, model = four_bar_node
    _, _, extreme = dead_point('stretched')
    q = load_model(ROCKER_DRIVEN, amplification_limit=1e8).complete_positions(
        [extreme - 1e-6])
    with pytest.raises(SingularConfigurationError):
        model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny))
    request = InverseDynamics.Request()
    request.state.name, request.state.position = list(model.joint_names), [float(x) for x in q]
    response = ros.call(InverseDynamics, f'{process.name}/inverse_dynamics', request)
    assert not response.success
    assert "cluster 'crank' is near a singular configuration" in response.message, response.message
    request = ForwardDynamics.Request(method='auto')
    request.state.name, request.state.position = list(model.joint_names), [float(x) for x in q]
    response = ros.call(ForwardDynamics, f'{process.name}/forward_dynamics', request)
    assert response.success and response.method_used == 'lcaba', response.message
    assert all(math.isfinite(x) for x in response.acceleration)
    assert 'near a singular configuration' in response.message


def test_the_stream_never_publishes_an_effort_beyond_the_limit(ros, four_bar_node):  # noqa: F811
    """A rocker sinusoid that runs into the dead point at 1 rad/s: what is published stays within
    <limit effort>; the rest is dropped, counted and named on /diagnostics."""
    process, model = four_bar_node
    _, _, extreme = dead_point('stretched')
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/dead_point/joint_states',
                                          qos_profile_sensor_data)
    angles = extreme + 0.3 * (np.cos(np.linspace(0.0, 2.0 * np.pi, 300)) - 1.0) + 1e-6
    rates = -0.3 * np.sin(np.linspace(0.0, 2.0 * np.pi, 300)) * 2.0 * np.pi
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
            for i, (angle, rate) in enumerate(zip(angles, rates)):
                msg = joint_state(['rocker_joint'], [angle], [rate])
                msg.header.stamp = stamp_of(i)
                publisher.publish(msg)
                ros.spin_for(0.005)
            ros.spin_for(0.5)
            assert received, 'nothing published'
            assert max(abs(e) for msg in received for e in msg.effort) <= EFFORT_LIMIT
            assert len(received) < len(angles), 'every message answered, also at the dead point'

            def refused():
                """A period's headline that names why inputs were dropped."""
                return any(status.name == f'{process.name}: dynamics'
                           and any(f'joint_states dropped{kind}' in status.message
                                   for kind in (' over <limit effort>: effort',
                                                ' as singular', ': '))
                           for array in diagnostics for status in array.status)
            assert ros.spin_until(refused, timeout=5.0), 'no refusal named on /diagnostics'
            values = node_values(diagnostics, process.name)
            assert int(values['over_effort_limit']) + int(values['singular_inputs']) > 0
    finally:
        ros.node.destroy_publisher(publisher)


def test_clamped_efforts_stay_at_the_limit(ros, four_bar_node):  # noqa: F811
    process, model = four_bar_node
    _, _, extreme = dead_point('stretched')
    q = model.complete_positions([extreme - 0.01])
    assert abs(model.bias_forces(q, [3.0])[0]) > EFFORT_LIMIT
    assert set_parameters(ros, process.name, stream__effort_limits='clamp').successful
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/dead_point/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received:
            for i in range(20):     # the same state until it is answered (discovery may lose some)
                msg = joint_state(['rocker_joint'], [extreme - 0.01], [3.0])
                msg.header.stamp = stamp_of(1000 + i)
                publisher.publish(msg)
                ros.spin_for(0.05)
                if received:
                    break
            assert received and abs(received[-1].effort[0]) == EFFORT_LIMIT
    finally:
        set_parameters(ros, process.name, stream__effort_limits='reject')
        ros.node.destroy_publisher(publisher)


def assert_bias_forces(msg, model, q_independent, yd):
    """msg names the independent joints and carries the bias forces at the completed positions,
    to 1e-9."""
    expected = model.bias_forces(model.complete_positions(q_independent), yd)
    assert tuple(msg.name) == model.independent_joint_names
    assert (np.max(np.abs(np.array(msg.effort) - expected))
            <= 1e-9 * max(1.0, np.max(np.abs(expected))))


# ---- a Cassie-like leg (test/models/cassie_like_leg.*): rods with ball ends, a closure body, open
# at zero ----

LEG = tuple(str(MODELS / f'cassie_like_leg{ext}') for ext in ('.urdf', '.yaml'))


@pytest.fixture(scope='module')
def leg_node(ros):  # noqa: F811 - the fixture imported above
    process = NodeProcess('leg', robot_description_file=LEG[0], closures_file=LEG[1],
                          stream__max_age=MAX_AGE)
    try:
        wait_until_served(ros, process)
        yield process, load_model(LEG[0], closures=LEG[1])
    finally:
        process.stop()


def test_a_driver_stream_of_the_actuated_joints_gets_torques(ros, leg_node):  # noqa: F811
    """joint_states naming the motors only: nothing is published until every motor has been named
    (the missing ones named on /diagnostics); then each message gets the library's bias forces at
    the motors' positions with the passive coordinates (rod spins, the closure body) at the
    reference configuration and at rest (a fresh model completing each state on its own gives the
    same efforts). Each message is published until answered: the input keeps only the newest
    message, so a loaded machine may skip some."""
    process, model = leg_node
    motors = list(model.actuated_joint_names)
    assert set(model.passive_joint_names) == {'knee_rod_top', 'ankle_rod_top', 'closedloop1_B'}
    reference = dict(zip(model.joint_names, model.reference_positions[model.idx_q[1:]]))
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/leg/joint_states',
                                          qos_profile_sensor_data)
    try:
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received, \
                collect(ros, '/diagnostics', DiagnosticArray, 100) as diagnostics:
            for i in range(40):                      # the first motors only: waiting, however long
                msg = joint_state(motors[:3], [reference[n] for n in motors[:3]])
                msg.header.stamp = stamp_of(i)
                publisher.publish(msg)
                ros.spin_for(0.02)

            def waiting():
                values = node_values(diagnostics, process.name)
                return values and int(values['waiting_inputs']) > 0 and values
            assert ros.spin_until(waiting, timeout=5.0), 'no waiting counted'
            assert waiting()['waiting_for_joints'] == 'knee_motor, ankle_motor'
            assert not received, 'published before every motor was named'
            rng = np.random.default_rng(3)
            walk = (np.array([reference[n] for n in motors])
                    + np.cumsum(rng.uniform(-0.01, 0.01, (60, 5)), axis=0))
            rates, sent = rng.normal(size=(60, 5)), {}
            for step, (positions, velocities) in enumerate(zip(walk, rates)):
                msg = joint_state(motors, positions, velocities)
                msg.header.stamp = stamp_of(100 + step)
                sent[msg.header.stamp.sec, msg.header.stamp.nanosec] = step
                assert publish_and_wait(ros, publisher, received, msg), f'step {step} unanswered'
            fresh = load_model(LEG[0], closures=LEG[1])
            index = {n: i for i, n in enumerate(model.independent_joint_names)}
            for msg in received:
                step = sent[msg.header.stamp.sec, msg.header.stamp.nanosec]
                q_independent = [walk[step][motors.index(n)] if n in motors else reference[n]
                                 for n in model.independent_joint_names
                                 if n not in model.split_joint_names]
                yd = np.zeros(model.ny)
                for n, rate in zip(motors, rates[step]):
                    yd[index[n]] = rate
                assert_bias_forces(msg, fresh, q_independent, yd)
    finally:
        ros.node.destroy_publisher(publisher)


# ---- Tello's legs: four differentials as implicit constraints, the motors as joint_states ----

def test_tello_is_served_from_its_motors(ros):  # noqa: F811 - the fixture imported above
    """joint_states of Tello's ten motors alone: each message gets the bias forces at the joints
    its differentials' constraints complete from the motors."""
    process = NodeProcess('tello', robot_description_file='tello_legs', stream__max_age=MAX_AGE)
    publisher = ros.node.create_publisher(JointState, f'{NAMESPACE}/tello/joint_states',
                                          qos_profile_sensor_data)
    try:
        wait_until_served(ros, process)
        model = load_model(bundled_model('tello_legs'))
        motors = list(model.actuated_joint_names)
        assert len(motors) == 10 and motors == list(model.independent_joint_names)
        rng = np.random.default_rng(5)
        with collect(ros, f'{process.name}/computed_torques', JointState,
                     torques_qos()) as received:
            for step in range(5):
                positions, rates = rng.uniform(-0.6, 0.6, 10), rng.normal(size=10)
                msg = joint_state(motors, positions, rates)
                msg.header.stamp = stamp_of(step)
                answer = publish_and_wait(ros, publisher, received, msg)
                assert answer is not None, f'step {step} unanswered'
                assert_bias_forces(answer, model, positions, rates)
    finally:
        ros.node.destroy_publisher(publisher)
        process.stop()
