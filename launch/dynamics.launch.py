"""Launch the cluster_dynamics node (ROS 2 Humble, Jazzy, Kilted).

    ros2 launch cluster_dynamics dynamics.launch.py
    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=/path/robot.urdf
    ros2 launch cluster_dynamics dynamics.launch.py params_file:=my_params.yaml namespace:=leg
    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=/path/robot.urdf \
        closures_file:=/path/robot.yaml                                    # Extended URDF
    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=quadruped_rotors \
        launch_prefix:='chrt -f 50'

Arguments: params_file (default: the installed config/dynamics_node.yaml), robot_description_file
(a URDF+ path or a bundled robot name), closures_file (the YAML closures of an Extended URDF; both
empty: the params file's values), namespace and launch_prefix (e.g. 'chrt -f 50': real-time FIFO
priority 50, which needs CAP_SYS_NICE or an rtprio limit in /etc/security/limits.conf).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def _dynamics_node(context):
    """The node, with robot_description_file and closures_file overriding the params file only when
    given."""
    parameters = [LaunchConfiguration('params_file').perform(context)]
    for name in ('robot_description_file', 'closures_file'):
        value = LaunchConfiguration(name).perform(context)
        if value:
            parameters.append({name: value})
    prefix = LaunchConfiguration('launch_prefix').perform(context)
    return [Node(package='cluster_dynamics', executable='dynamics_node', name='dynamics_node',
                 namespace=LaunchConfiguration('namespace'), parameters=parameters,
                 prefix=prefix or None, output='screen')]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('cluster_dynamics'), 'config', 'dynamics_node.yaml']),
            description='YAML file with the dynamics_node parameters'),
        DeclareLaunchArgument(
            'robot_description_file', default_value='',
            description='URDF+ file path or bundled robot name (empty: from params_file)'),
        DeclareLaunchArgument(
            'closures_file', default_value='',
            description='Extended URDF closures YAML for robot_description_file (empty: from '
                        'params_file)'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='Namespace of the node'),
        DeclareLaunchArgument(
            'launch_prefix', default_value='',
            description="Command prefix, e.g. 'chrt -f 50' for real-time priority"),
        OpaqueFunction(function=_dynamics_node),
    ])
