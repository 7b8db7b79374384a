"""The node's torque stream over DDS (node in its own process): 500 Hz with every loss counted,
partial and stale inputs, modes, a floating base from odometry, the completed joint states and
the effort commands, poisoned messages then good ones, a stream answered while a service call
runs."""

import threading
import time

from cluster_dynamics.srv import ForwardDynamics
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from conftest import assert_close, robot
from dynamics_node import bundled_model, load_model
from node_helpers import (answer, collect, completed, exchange, floating_state, fresh_stamp, HANG,
                          _index, joint_state, loop_stream, MAX_AGE, NAMESPACE, node_values,
                          NodeProcess, prime, publish_and_wait, _publish_at_rate, RTOL, service,
                          set_linear_angular, set_parameters, set_pose, stamp_of, STAMP_STEP,
                          STREAM_RATE, STREAM_SECONDS, TIMEOUT, torques_qos, wait_until_served)
from node_helpers import nodes, ros  # noqa: F401 - fixtures


def test_stream_500_hz_values_stamps_losses_counted(ros, nodes):  # noqa: F811
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


def test_stream_partial_messages_modes_and_drops(ros, nodes):  # noqa: F811
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


def test_stream_floating_base_from_odometry(ros, nodes, rng):  # noqa: F811
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


def test_stream_ignores_unknown_joints_and_values_it_does_not_need(ros, nodes):  # noqa: F811
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


def test_stale_input_dropped_and_counted_zero_stamp_served(ros, nodes):  # noqa: F811
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


def test_completed_joint_states_equal_the_library_completion(ros, nodes, rng):  # noqa: F811
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


def test_effort_commands_follow_stream_output_joints(ros, nodes):  # noqa: F811
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


def test_poisoned_joint_states_then_good_ones_and_services(ros, nodes, rng):  # noqa: F811
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


def test_the_stream_is_answered_while_a_service_call_runs(ros, nodes):  # noqa: F811
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
