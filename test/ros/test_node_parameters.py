"""The node's parameters over DDS (node in its own process): bad values rejected, hot reload of
the description good -> bad -> good, integer and double parameters, a robot switch through
SetParametersAtomically."""


from cluster_dynamics.srv import DescribeModel, ForwardDynamics
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from conftest import assert_close
from dynamics_node import bundled_extended_urdf, bundled_model, load_model, ModelError
from dynamics_node.errors import quote
from node_helpers import (BAD_URDF, collect, has_service, LOOP_CLOSED, _loop_request, MAX_AGE,
                          NAMESPACE, node_status, NodeProcess, ROOT, RTOL, service, set_parameters,
                          text, wait_until_served)
from node_helpers import nodes, ros  # noqa: F401 - fixtures


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
def test_bad_parameters_are_rejected(ros, nodes, values, reason):  # noqa: F811
    result = set_parameters(ros, nodes['loop'].name, **values)
    assert not result.successful
    assert result.reason.startswith(reason), result.reason
    describe = ros.call(DescribeModel, service(nodes, 'loop', 'describe_model'))
    assert describe.robot_name == 'linkage_leg'


def test_no_model_then_hot_reload_good_bad_good(ros, nodes):  # noqa: F811
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


def test_parameters_integer_gravity_descriptors(ros, nodes):  # noqa: F811
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


def test_double_parameters_take_integers_and_output_joints_each_once(
        ros, nodes, tmp_path):  # noqa: F811
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


def test_robot_switch_needs_both_parameters_at_once(ros, nodes):  # noqa: F811
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
