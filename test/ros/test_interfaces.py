"""Smoke test of the generated cluster_dynamics interfaces, and of the tf2_msgs messages the node
publishes (built by the set-up where the ROS install lacks them).

Checks the field names, order and types of every msg/srv (they are a contract), the type hashes of
tf2_msgs' messages against those of a ROS 2 graph, then makes one DescribeModel call over real DDS
between a server and a client of the same process.
"""
import json
import os
from pathlib import Path

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from cluster_dynamics.msg import ClusterInfo, Contact, ContactSet, LinkWrench
from cluster_dynamics.srv import (
    BiasForces,
    Centroidal,
    DescribeModel,
    ForwardDynamics,
    InverseDynamics,
    InverseOperationalSpaceInertia,
    LinkKinematics,
    MassMatrix,
)
import tf2_msgs
from tf2_msgs.msg import TF2Error, TFMessage

from conftest import TEST_DOMAIN_ID


EXPECTED_FIELDS = {
    Contact: [
        ('link', 'string'),
        ('kind', 'string'),
        ('placement', 'geometry_msgs/Pose'),
        ('other', 'string'),
        ('other_placement', 'geometry_msgs/Pose'),
    ],
    ContactSet: [
        ('header', 'std_msgs/Header'),
        ('contacts', 'sequence<cluster_dynamics/Contact>'),
    ],
    LinkWrench: [
        ('link', 'string'),
        ('wrench', 'geometry_msgs/Wrench'),
    ],
    ClusterInfo: [
        ('name', 'string'),
        ('links', 'sequence<string>'),
        ('joints', 'sequence<string>'),
        ('independent_joints', 'sequence<string>'),
        ('constraints', 'sequence<string>'),
    ],
    ForwardDynamics.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('base_twist', 'geometry_msgs/Twist'),
        ('external_wrenches', 'sequence<cluster_dynamics/LinkWrench>'),
        ('contacts', 'sequence<cluster_dynamics/Contact>'),
        ('method', 'string'),
    ],
    ForwardDynamics.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('acceleration', 'sequence<double>'),
        ('base_acceleration', 'geometry_msgs/Accel'),
        ('method_used', 'string'),
        ('constraint_residual', 'double'),
        ('iterations', 'uint32'),
        ('contact_wrenches', 'sequence<geometry_msgs/Wrench>'),
    ],
    InverseDynamics.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('acceleration', 'sequence<double>'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('base_twist', 'geometry_msgs/Twist'),
        ('base_acceleration', 'geometry_msgs/Accel'),
        ('external_wrenches', 'sequence<cluster_dynamics/LinkWrench>'),
        ('contacts', 'sequence<cluster_dynamics/Contact>'),
    ],
    InverseDynamics.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('effort', 'sequence<double>'),
        ('base_wrench', 'geometry_msgs/Wrench'),
        ('contact_wrenches', 'sequence<geometry_msgs/Wrench>'),
    ],
    InverseOperationalSpaceInertia.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('links', 'sequence<string>'),
    ],
    InverseOperationalSpaceInertia.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('rows', 'uint32'),
        ('matrix', 'sequence<double>'),
    ],
    MassMatrix.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
    ],
    MassMatrix.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('matrix', 'sequence<double>'),
    ],
    BiasForces.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('base_twist', 'geometry_msgs/Twist'),
        ('gravity_only', 'boolean'),
    ],
    BiasForces.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('effort', 'sequence<double>'),
        ('base_wrench', 'geometry_msgs/Wrench'),
    ],
    LinkKinematics.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('base_twist', 'geometry_msgs/Twist'),
        ('links', 'sequence<string>'),
    ],
    LinkKinematics.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('poses', 'sequence<geometry_msgs/Pose>'),
        ('jacobians', 'sequence<double>'),
        ('bias_accelerations', 'sequence<geometry_msgs/Accel>'),
    ],
    DescribeModel.Request: [],
    DescribeModel.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('description_source', 'string'),
        ('warnings', 'sequence<string>'),
        ('robot_name', 'string'),
        ('joint_names', 'sequence<string>'),
        ('independent_joint_names', 'sequence<string>'),
        ('nq', 'uint32'),
        ('nv', 'uint32'),
        ('ny', 'uint32'),
        ('floating_base', 'boolean'),
        ('floating_base_joint', 'string'),
        ('link_names', 'sequence<string>'),
        ('effort_limits', 'sequence<double>'),
        ('clusters', 'sequence<cluster_dynamics/ClusterInfo>'),
        ('total_mass', 'double'),
    ],
    Centroidal.Request: [
        ('state', 'sensor_msgs/JointState'),
        ('base_pose', 'geometry_msgs/Pose'),
        ('base_twist', 'geometry_msgs/Twist'),
    ],
    Centroidal.Response: [
        ('success', 'boolean'),
        ('message', 'string'),
        ('name', 'sequence<string>'),
        ('total_mass', 'double'),
        ('center_of_mass', 'geometry_msgs/Point'),
        ('center_of_mass_velocity', 'geometry_msgs/Vector3'),
        ('center_of_mass_jacobian', 'sequence<double>'),
        ('centroidal_momentum_matrix', 'sequence<double>'),
        ('centroidal_momentum', 'double[6]'),
        ('centroidal_bias', 'double[6]'),
    ],
    TFMessage: [('transforms', 'sequence<geometry_msgs/TransformStamped>')],
    TF2Error: [('error', 'uint8'), ('error_string', 'string')],
}
# The type hashes of tf2_msgs' messages on a ROS 2 Jazzy or Kilted graph (ros2 topic info -v, the
# golden hashes of ros2/rosidl's type-hash tests).
TF2_TYPE_HASHES = {
    'TFMessage': 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087',
    'TF2Error': 'RIHS01_db2485e7d6a0ec75bf087e058ee45df682acc3a621ca7780503d10aac141809a',
}


@pytest.mark.parametrize('cls', list(EXPECTED_FIELDS), ids=lambda cls: cls.__qualname__)
def test_fields(cls):
    assert list(cls.get_fields_and_field_types().items()) == EXPECTED_FIELDS[cls]
    cls()  # constructible with defaults


@pytest.mark.parametrize('name', list(TF2_TYPE_HASHES))
def test_tf2_msgs_has_the_type_hashes_of_a_ros_graph(name):
    """tf2_msgs as the set-up builds it (or a ROS install provides it): its messages' type hashes
    are those of a real ROS 2 graph, so that /tf and /tf_static match their subscribers."""
    prefix = Path(tf2_msgs.__file__).parents[4]           # <prefix>/lib/python3.x/site-packages
    description = prefix / 'share' / 'tf2_msgs' / 'msg' / f'{name}.json'
    hashes = json.loads(description.read_text())['type_hashes']
    assert hashes[0]['type_name'] == f'tf2_msgs/msg/{name}'
    assert hashes[0]['hash_string'] == TF2_TYPE_HASHES[name]
    assert (TF2Error.LOOKUP_ERROR, TF2Error.TRANSFORM_ERROR) == (1, 6)


def test_nested_assignment():
    request = ForwardDynamics.Request(method='auto')
    wrench = LinkWrench(link='foot')
    wrench.wrench.force.z = -9.81
    request.external_wrenches.append(wrench)
    assert request.external_wrenches[0].wrench.force.z == -9.81


@pytest.fixture
def ros_context(monkeypatch):
    """An rclpy context of its own, discovering only this machine, on the test domain."""
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = Context()
    rclpy.init(context=context,
               domain_id=TEST_DOMAIN_ID)
    yield context
    rclpy.shutdown(context=context)


def test_describe_model_over_dds(ros_context):
    def describe(_request, response):
        response.robot_name = 'four_bar'
        response.joint_names = ['a', 'b', 'c']
        response.independent_joint_names = ['a']
        response.nq = response.nv = 3
        response.ny = 1
        response.clusters = [ClusterInfo(name='loop', links=['l1', 'l2', 'l3'],
                                         joints=['a', 'b', 'c'], independent_joints=['a'],
                                         constraints=['closure'])]
        return response

    # A namespace of our own keeps concurrent runs on the same domain apart.
    node = rclpy.create_node('test_interfaces', namespace=f'test_interfaces_{os.getpid()}',
                             context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    try:
        node.create_service(DescribeModel, 'describe_model', describe)
        client = node.create_client(DescribeModel, 'describe_model')
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(DescribeModel.Request())
        executor.spin_until_future_complete(future, timeout_sec=10.0)
        assert future.done(), 'no DescribeModel response within 10 s'
        response = future.result()
    finally:
        executor.shutdown()
        node.destroy_node()

    assert response.robot_name == 'four_bar'
    assert list(response.joint_names) == ['a', 'b', 'c']
    assert (response.nq, response.nv, response.ny) == (3, 3, 1)
    assert not response.floating_base
    assert len(response.clusters) == 1
    assert response.clusters[0].constraints == ['closure']
