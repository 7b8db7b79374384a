"""Launch the cluster_dynamics node (ROS 2 Humble, Jazzy, Kilted).

    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=quadruped_rotors
    ros2 launch cluster_dynamics dynamics.launch.py params_file:=my_params.yaml namespace:=leg
    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=/path/robot.urdf \
        closures_file:=/path/robot.yaml                                    # Extended URDF
    ros2 launch cluster_dynamics dynamics.launch.py xacro_file:=/path/robot.urdf.xacro \
        joint_states_topic:=/robot/joint_states \
        effort_commands_topic:=/forward_command_controller/commands use_sim_time:=true
    ros2 launch cluster_dynamics dynamics.launch.py robot_description_file:=quadruped_rotors \
        launch_prefix:='chrt -f 50'

Arguments (an empty one changes nothing):
  params_file             parameters YAML (default: the installed config/dynamics_node.yaml)
  robot_description       URDF+ XML itself (parameter robot_description)
  xacro_file              a xacro file whose output is the URDF+ XML (parameter robot_description;
                          not with robot_description)
  robot_description_file  a URDF+ path or a bundled robot name
  closures_file           the YAML closures of an Extended URDF
  use_sim_time            true or false (default false): the node's clock is /clock
  autostart               true or false (default true): the managed node configures and activates
                          itself; false leaves it to a lifecycle manager
  joint_states_topic      the input joint_states, remapped
  computed_torques_topic  the output ~/computed_torques, remapped
  effort_commands_topic   the output ~/effort_commands, remapped (e.g. to the commands of a
                          forward_command_controller)
  namespace               the node's namespace
  launch_prefix           a command prefix, e.g. 'chrt -f 50': real-time FIFO priority 50, which
                          needs CAP_SYS_NICE or an rtprio limit in /etc/security/limits.conf
The description arguments, use_sim_time and autostart override the params file.
"""

import shlex

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

FLAGS = ('use_sim_time', 'autostart')
# Launch argument -> the name the node remaps when it is given.
REMAPS = {'joint_states_topic': 'joint_states', 'computed_torques_topic': '~/computed_torques',
          'effort_commands_topic': '~/effort_commands'}


def _dynamics_node(context):
    """The node, with the description arguments and remaps applied only when given."""
    given = {name: LaunchConfiguration(name).perform(context)
             for name in ('robot_description', 'xacro_file', 'robot_description_file',
                          'closures_file', *FLAGS, *REMAPS, 'namespace', 'launch_prefix')}
    if given['robot_description'] and given['xacro_file']:
        raise ValueError('give robot_description or xacro_file, not both')
    overrides = {name: given[name] == 'true' for name in FLAGS}
    for name in ('robot_description', 'robot_description_file', 'closures_file'):
        if given[name]:
            overrides[name] = ParameterValue(given[name], value_type=str)
    if given['xacro_file']:
        overrides['robot_description'] = ParameterValue(
            Command(['xacro ', shlex.quote(given['xacro_file'])]), value_type=str)
    return [Node(package='cluster_dynamics', executable='dynamics_node', name='dynamics_node',
                 namespace=given['namespace'],
                 parameters=[LaunchConfiguration('params_file').perform(context), overrides],
                 remappings=[(name, given[argument]) for argument, name in REMAPS.items()
                             if given[argument]],
                 prefix=given['launch_prefix'] or None, output='screen')]


def generate_launch_description():
    text = {
        'robot_description': 'URDF+ XML of the robot (empty: from params_file)',
        'xacro_file': 'xacro file that makes the URDF+ XML of the robot (empty: none)',
        'robot_description_file': 'URDF+ file path or bundled robot name (empty: from '
                                  'params_file)',
        'closures_file': 'Extended URDF closures YAML for the description (empty: from '
                         'params_file)',
        'joint_states_topic': 'joint_states topic of the robot (empty: joint_states)',
        'computed_torques_topic': 'topic of the computed torques (empty: ~/computed_torques)',
        'effort_commands_topic': 'topic of the effort commands (empty: ~/effort_commands)',
        'namespace': 'Namespace of the node',
        'launch_prefix': "Command prefix, e.g. 'chrt -f 50' for real-time priority",
    }
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('cluster_dynamics'), 'config', 'dynamics_node.yaml']),
            description='YAML file with the dynamics_node parameters'),
        *(DeclareLaunchArgument(name, default_value='', description=description)
          for name, description in text.items()),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Use the simulation clock (/clock)'),
        DeclareLaunchArgument(
            'autostart', default_value='true', choices=['true', 'false'],
            description='Configure and activate the managed node at start (false: a lifecycle '
                        'manager does)'),
        OpaqueFunction(function=_dynamics_node),
    ])
