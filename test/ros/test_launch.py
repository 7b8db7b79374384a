"""launch/dynamics.launch.py: its arguments, and the node action that given values make.

The file is loaded and its OpaqueFunction evaluated in a LaunchContext holding the arguments'
values; the Node it returns is recorded (its keyword arguments, bound to Node's signature):
package, executable, namespace, prefix, parameters and remappings. ROS 2's `launch` and
`launch_ros` are used where they are installed. They are not installable in this repository's
venvs (no wheels), so there the test installs a stub of the modules the file imports into
sys.modules (restored afterwards): classes with the signatures and properties of the real ones
that the file and the test use, which record what they are given, and
LaunchConfiguration(name).perform(context) reading context.launch_configurations as launch does.
"""

import ast
import importlib.util
import inspect
from pathlib import Path
import sys
import types

import pytest

LAUNCH_FILE = Path(__file__).resolve().parents[2] / 'launch' / 'dynamics.launch.py'
TEXT_ARGUMENTS = ('robot_description', 'xacro_file', 'robot_description_file', 'closures_file',
                  'joint_states_topic', 'computed_torques_topic', 'effort_commands_topic',
                  'namespace', 'launch_prefix')
DEFAULTS = {**dict.fromkeys(TEXT_ARGUMENTS, ''), 'use_sim_time': 'false', 'autostart': 'true'}
PARAMS_FILE = '/etc/robot/dynamics_node.yaml'


def _stub_modules():
    """Modules launch, launch.actions, launch.substitutions, launch_ros.actions,
    launch_ros.parameter_descriptions and launch_ros.substitutions, as far as the file uses
    them."""
    class Substitution:
        pass

    class TextSubstitution(Substitution):
        def __init__(self, *, text):
            self.text = text

        def perform(self, context):
            return self.text

    def substitutions(value):
        """normalize_to_list_of_substitutions: str or Substitution or an iterable of them."""
        items = [value] if isinstance(value, (str, Substitution)) else list(value)
        return [TextSubstitution(text=item) if isinstance(item, str) else item for item in items]

    class LaunchConfiguration(Substitution):
        def __init__(self, variable_name, *, default=None):
            self.variable_name = substitutions(variable_name)
            self.default = default

        def perform(self, context):
            name = ''.join(s.perform(context) for s in self.variable_name)
            if name not in context.launch_configurations and self.default is None:
                raise LookupError(f"launch configuration '{name}' does not exist")
            return context.launch_configurations.get(name, self.default)

    class PathJoinSubstitution(Substitution):
        def __init__(self, substitutions):
            self.substitutions = list(substitutions)

    class Command(Substitution):
        def __init__(self, command, *, on_stderr='fail'):
            self.command = substitutions(command)
            self.on_stderr = on_stderr

    class FindPackageShare(Substitution):
        def __init__(self, package):
            self.package = package

    class LaunchDescription:
        def __init__(self, initial_entities=None, *, deprecated_reason=None):
            self.entities = list(initial_entities or [])

    class LaunchContext:
        def __init__(self, *, argv=None, noninteractive=False):
            self.launch_configurations = {}

    class DeclareLaunchArgument:
        def __init__(self, name, *, default_value=None, description=None, choices=None,
                     **kwargs):
            self.name, self.description, self.choices = name, description, choices
            self.default_value = None if default_value is None else substitutions(default_value)

    class OpaqueFunction:
        def __init__(self, *, function, args=None, kwargs=None, **left_over_kwargs):
            self.function, self.args, self.kwargs = function, args or [], kwargs or {}

        def execute(self, context):
            return self.function(context, *self.args, **self.kwargs)

    class Node:
        def __init__(self, *, executable, package=None, name=None, namespace=None,
                     exec_name=None, parameters=None, remappings=None, ros_arguments=None,
                     arguments=None, **kwargs):
            pass

    class ParameterValue:
        def __init__(self, value, *, value_type=None):
            self.value, self.value_type = value, value_type

    contents = {
        'launch': {'LaunchDescription': LaunchDescription, 'LaunchContext': LaunchContext},
        'launch.actions': {'DeclareLaunchArgument': DeclareLaunchArgument,
                           'OpaqueFunction': OpaqueFunction},
        'launch.substitutions': {'Command': Command, 'LaunchConfiguration': LaunchConfiguration,
                                 'PathJoinSubstitution': PathJoinSubstitution,
                                 'TextSubstitution': TextSubstitution},
        'launch_ros': {},
        'launch_ros.actions': {'Node': Node},
        'launch_ros.parameter_descriptions': {'ParameterValue': ParameterValue},
        'launch_ros.substitutions': {'FindPackageShare': FindPackageShare},
    }
    modules = {}
    for name, members in contents.items():
        modules[name] = types.ModuleType(name)
        modules[name].__dict__.update(members)
    return modules


def _launch_is_installed():
    try:
        import launch  # noqa: F401
        import launch_ros  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope='module')
def launch():
    """(the launch file as a module, the launch module): ROS 2's where installed, else the stub's
    (sys.modules restored afterwards)."""
    stubs = {} if _launch_is_installed() else _stub_modules()
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location('dynamics_launch', LAUNCH_FILE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module, sys.modules['launch']
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value


def node_action(launch, monkeypatch, **values):
    """The keyword arguments of the Node that the file makes for the given argument values (the
    others at their defaults), bound to the signature of launch_ros' Node."""
    module, launch_module = launch
    context = launch_module.LaunchContext()
    context.launch_configurations.update(
        {**DEFAULTS, 'params_file': PARAMS_FILE, **values})
    made = []
    signature = inspect.signature(module.Node)
    monkeypatch.setattr(module, 'Node',
                        lambda **kwargs: made.append(signature.bind(**kwargs).arguments) or kwargs)
    opaque, = [entity for entity in module.generate_launch_description().entities
               if type(entity).__name__ == 'OpaqueFunction']
    actions = opaque.execute(context)
    assert len(made) == 1 and len(actions) == 1, actions
    arguments = made[0]
    return {**arguments.pop('kwargs', {}), **arguments}


def parameter(value):
    """A parameter's value, ParameterValue unwrapped: (value, value_type) or the plain value."""
    return (value.value, value.value_type) if hasattr(value, 'value_type') else value


def test_parses():
    ast.parse(LAUNCH_FILE.read_text(), str(LAUNCH_FILE))


def test_every_argument_declared_with_a_description(launch):
    module, _ = launch
    entities = module.generate_launch_description().entities
    declared = {e.name: e for e in entities if type(e).__name__ == 'DeclareLaunchArgument'}
    assert [type(e).__name__ for e in entities].count('OpaqueFunction') == 1
    assert sorted(declared) == sorted([*DEFAULTS, 'params_file'])
    for name, argument in declared.items():
        assert argument.description, f'{name} has no description'
    for name, default in DEFAULTS.items():
        text = ''.join(s.text for s in declared[name].default_value)
        assert text == default, f'{name} defaults to {text!r}, not {default!r}'
    for name in ('use_sim_time', 'autostart'):
        assert sorted(declared[name].choices) == ['false', 'true']
    assert type(declared['params_file'].default_value[0]).__name__ == 'PathJoinSubstitution'


def test_defaults_add_nothing(launch, monkeypatch):
    node = node_action(launch, monkeypatch)
    assert (node['package'], node['executable'], node['name']) == (
        'cluster_dynamics', 'dynamics_node', 'dynamics_node')
    assert node['parameters'] == [PARAMS_FILE, {'use_sim_time': False, 'autostart': True}]
    assert node['remappings'] == []
    assert node['namespace'] == ''
    assert node['prefix'] is None


def test_given_values(launch, monkeypatch):
    node = node_action(
        launch, monkeypatch, robot_description_file='/robots/leg.urdf',
        closures_file='/robots/leg.yaml', use_sim_time='true', autostart='false',
        joint_states_topic='/robot/joint_states', computed_torques_topic='/gravity_torques',
        effort_commands_topic='/forward_command_controller/commands', namespace='leg',
        launch_prefix='chrt -f 50')
    params_file, overrides = node['parameters']
    assert params_file == PARAMS_FILE
    assert {name: parameter(value) for name, value in overrides.items()} == {
        'use_sim_time': True, 'autostart': False,
        'robot_description_file': ('/robots/leg.urdf', str),
        'closures_file': ('/robots/leg.yaml', str)}
    assert node['remappings'] == [('joint_states', '/robot/joint_states'),
                                  ('~/computed_torques', '/gravity_torques'),
                                  ('~/effort_commands', '/forward_command_controller/commands')]
    assert (node['namespace'], node['prefix']) == ('leg', 'chrt -f 50')


def test_robot_description_given_directly(launch, monkeypatch):
    urdf = '<robot name="r"><link name="a"/></robot>'
    overrides = node_action(launch, monkeypatch, robot_description=urdf)['parameters'][1]
    assert parameter(overrides['robot_description']) == (urdf, str)
    assert 'robot_description_file' not in overrides


def test_xacro_file_through_the_command_substitution(launch, monkeypatch):
    overrides = node_action(launch, monkeypatch,
                            xacro_file='/robots/my leg.urdf.xacro')['parameters'][1]
    command, value_type = parameter(overrides['robot_description'])
    assert value_type is str and type(command).__name__ == 'Command'
    assert ''.join(s.text for s in command.command) == "xacro '/robots/my leg.urdf.xacro'"


def test_robot_description_and_xacro_file_exclude_each_other(launch, monkeypatch):
    with pytest.raises(ValueError, match='not both'):
        node_action(launch, monkeypatch, robot_description='<robot name="r"/>',
                    xacro_file='/robots/leg.urdf.xacro')
