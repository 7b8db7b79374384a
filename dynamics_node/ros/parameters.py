"""The node's parameters: their specs (PARAMETERS, documented in config/dynamics_node.yaml), the
check of a value, its declaration, and the callback that applies a change at run time.

The node keeps the checked values in one dict, its settings ({name: setting(name, value)}), shared
by the parts that read them on each use; only the set-parameters callback writes it.
"""

from dataclasses import dataclass
import os

from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult

from ..contacts import Contact
from ..errors import first_repeated, ModelError, quote
from ..forward_dynamics import check_method
from ..robots import bundled_models
from ..validation import vector
from .. import bounds
from .guard import clip, Guard

STREAM_MODES = ('bias', 'gravity')
EFFORT_LIMIT_POLICIES = ('clamp', 'reject', 'ignore')


def _range(low, high):
    """Descriptor extras of a double parameter in [low, high] that also takes integers (-p name:=1,
    YAML name: 1), which rclpy would refuse for a double; check_parameter then checks the range."""
    return (('floating_point_range',
             [FloatingPointRange(from_value=low, to_value=high, step=0.0)]),
            ('dynamic_typing', True))


@dataclass(frozen=True)
class Spec:
    """A parameter: default, description, read-only (start-up only), descriptor extras."""

    default: object
    description: str
    read_only: bool = False
    extras: tuple = ()


PARAMETERS = {
    'robot_description': Spec(
        '', 'URDF+ XML of the robot; when non-empty it takes precedence over the topic and the '
        'file. Setting it reloads the model (rejected with the parser message if it fails).'),
    'robot_description_file': Spec(
        '', 'URDF+ file path, or the name of a bundled robot (e.g. quadruped_rotors); used when '
        'robot_description is empty and nothing arrived on robot_description_topic.',
        extras=(('additional_constraints',
                 'a file path or one of ' + ', '.join(bundled_models())),)),
    'closures_file': Spec(
        '',
        'Extended URDF closures (YAML file: closed_loop, type, name_mot, joint_name, '
        'joint_type) applied to the description from any source (parameter, topic or '
        'robot_description_file); empty: none.'),
    'floating_base': Spec(
        False, 'Hang the root link on a floating joint (load_model(..., floating_base=True)): a '
        'legged robot whose file has none. Its pose and twist come from odometry_topic (else the '
        'identity, at rest). Setting it reloads.'),
    'autostart': Spec(
        True, 'Configure and activate the node by itself (lifecycle), at start and when a '
        'description first arrives; false: wait for a lifecycle manager.', True),
    'robot_description_topic': Spec(
        'robot_description', 'std_msgs/String topic with the URDF+ XML (reliable, transient '
        'local, depth 1); each message reloads the model unless robot_description is set.', True),
    'reference_positions': Spec(
        [],
        'Reference (assembly) configuration, spanning q of the model (Model.reference_positions): '
        'a closed, regular configuration that fixes the assembly branch; empty: the one found at '
        'load.',
        extras=(('dynamic_typing', True),
                ('additional_constraints', 'nq finite numbers, or none'))),
    'amplification_limit': Spec(
        20.0,
        "Ratio (Model.amplification_limit): beyond this multiple of a loop cluster's "
        "amplification at the reference configuration a state counts as singular: services refuse "
        "it, the stream drops it.",
        extras=_range(1.0, 1e8)),
    'gravity': Spec(
        [0.0, 0.0, -9.81], 'Gravity acceleration in the root link frame, m/s^2 (x, y, z); '
        'integers are accepted.', extras=(('dynamic_typing', True),
                                          ('additional_constraints', '3 finite numbers'))),
    'stream.mode': Spec(
        'bias', "Effort of the stream: 'bias' (gravity + Coriolis and centrifugal "
        "compensation) or 'gravity' (gravity only).",
        extras=(('additional_constraints', 'one of ' + ', '.join(STREAM_MODES)),)),
    'stream.enabled': Spec(
        True, 'Answer every joint_states message on the output topics.'),
    'stream.max_age': Spec(
        0.1,
        'Inputs whose header stamp is older than this (s, by the node clock), or as far in the '
        'future, are dropped and counted as stale; 0 disables the check; a zero stamp is never '
        'stale.',
        extras=_range(0.0, 3600.0)),
    'stream.latency_warn': Spec(
        5.0,
        'Output latency, ms from the input stamp to the publication (node clock): /diagnostics '
        'warns when its p99 over a period exceeds this; 0 disables the warning.',
        extras=_range(0.0, 3600000.0)),
    'stream.expected_rate': Spec(
        0.0, 'Rate of joint_states the robot publishes, Hz (0: unknown). /diagnostics warns when '
        'the measured rate falls below 90 % of it and infers lost inputs from the stamps.',
        extras=_range(0.0, 100000.0)),
    'stream.output_joints': Spec(
        [], 'Order of ~/effort_commands: independent joint names (empty: all of them, in the '
        "model's order).", extras=(('dynamic_typing', True),
                                   ('additional_constraints', 'independent joints of the model'))),
    'stream.contacts': Spec(
        [], "Contacts the stream's efforts hold while no contact set from ~/contacts is in use: "
        "'link:6D' or 'link:3D', the link's frame held to the world; empty: none.",
        extras=(('dynamic_typing', True),
                ('additional_constraints', "'link:6D' or 'link:3D', each link once"))),
    'stream.contacts_max_age': Spec(
        0.0, 'A contact set from ~/contacts is in use while its stamp is at most this old (s, '
        'node clock; 0: always); older, the stream holds stream.contacts instead and '
        '/diagnostics warns.', extras=_range(0.0, 3600.0)),
    'stream.effort_limits': Spec(
        'clamp',
        "An effort beyond its joint's URDF <limit effort> (a limit of 0 or none: no limit): "
        "'clamp' publishes the limit instead, 'reject' drops the message (nothing published), "
        "both counted and warned on /diagnostics; 'ignore' publishes the efforts as computed. At "
        'load the node warns of limits that cannot hold the robot at its reference '
        'configuration (placeholder limits).',
        extras=(('additional_constraints', 'one of ' + ', '.join(EFFORT_LIMIT_POLICIES)),)),
    'stream.completion_budget': Spec(
        1.0,
        'Time a message may spend completing the dependent positions, ms; past it the message is '
        'dropped (a continuation from the reference configuration: after a jump, or the first '
        'message).',
        extras=_range(0.01, 10000.0)),
    'odometry_topic': Spec(
        '', 'nav_msgs/Odometry topic with the floating-base pose (world frame) and twist (base '
        'frame) for the stream; empty: the base rests at the identity pose.', True),
    'publish_tf': Spec(
        True, 'Publish every link\'s pose on /tf (the movable joints, with each output) and '
        '/tf_static (the fixed joints, once per served model), as robot_state_publisher does; '
        'false: none (robot_state_publisher on ~/completed_joint_states does it instead).', True),
    'forward_dynamics.method': Spec(
        'auto', "Method of ~/forward_dynamics when a request leaves it empty: 'auto', 'aba' or "
        "'lcaba'.", extras=(('additional_constraints', 'one of auto, aba, lcaba'),)),
    'diagnostics_period': Spec(
        1.0, 'Period of the /diagnostics status, s (steady clock).', True, _range(0.01, 3600.0)),
}


# The double parameters (which take integers too) and their ranges.
DOUBLES = {name: (limits.from_value, limits.to_value) for name, spec in PARAMETERS.items()
           for limits in dict(spec.extras).get('floating_point_range', ())}


def setting(name, value):
    """A checked parameter value as the node uses it: doubles as float (an integer given for
    one), stream.contacts as Contacts."""
    if name == 'stream.contacts':
        return parameter_contacts(value)
    return float(value) if name in DOUBLES else value


def parameter_contacts(value):
    """The Contacts of stream.contacts ('link:kind' each; None, as an empty YAML list arrives:
    none); raises ModelError."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ModelError(f"stream.contacts must be a list of 'link:kind' strings, got "
                         f'{quote(value)}')
    contacts = []
    for entry in value:
        link, _, kind = entry.rpartition(':')
        if not link:
            raise ModelError(f"stream.contacts entry {quote(entry)} is not 'link:kind' (kind 6D "
                             'or 3D)')
        contacts.append(Contact(link, kind))
    twice = first_repeated([c.link for c in contacts])
    if twice is not None:
        raise ModelError(f'stream.contacts names link {quote(twice)} twice; name each link once')
    return tuple(contacts)


def check_parameter(name, value):
    """Raise ModelError with the reason a parameter value is unusable."""
    if name == 'gravity':
        vector(value, 'gravity', {3: 'x y z, m/s^2'}, bounds.GRAVITY)     # the model's own check
    elif name == 'stream.mode' and value not in STREAM_MODES:
        raise ModelError(f'stream.mode {quote(value)} is unknown; expected one of '
                         f'{list(STREAM_MODES)}')
    elif name == 'reference_positions':
        if not isinstance(value, (list, tuple)) or any(isinstance(x, bool)
                                                       or not isinstance(x, (int, float))
                                                       for x in value):
            raise ModelError('reference_positions must be a list of numbers (spanning q), got '
                             f'{quote(value)}')
        if value:
            vector(value, 'reference_positions', {len(value): 'spanning positions'},
                   bounds.POSITION)
    elif name == 'stream.effort_limits' and value not in EFFORT_LIMIT_POLICIES:
        raise ModelError(f'stream.effort_limits {quote(value)} is unknown; expected one of '
                         f'{list(EFFORT_LIMIT_POLICIES)}')
    elif name == 'stream.contacts':
        parameter_contacts(value)
    elif name == 'stream.output_joints':
        if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
            raise ModelError(f'stream.output_joints must be a list of joint names, got '
                             f'{quote(value)}')
        if first_repeated(value) is not None:
            raise ModelError(f'stream.output_joints names {quote(first_repeated(value))} twice; '
                             'name each joint once')
    elif name in DOUBLES:
        low, high = DOUBLES[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not low <= value <= high):
            raise ModelError(f'{name} must be a number from {low:g} to {high:g}, got '
                             f'{quote(value)}')
    elif name == 'forward_dynamics.method':
        check_method(value)
    elif name == 'closures_file' and value and not os.path.isfile(value):
        raise ModelError(f'closures_file {quote(value)} is not a file')


def declare(node):
    """Declare PARAMETERS on node and return the settings of their initial values; raises
    ModelError (or rclpy's ParameterException) with the reason one is unusable."""
    for name, spec in PARAMETERS.items():
        node.declare_parameter(name, spec.default, ParameterDescriptor(
            description=spec.description, read_only=spec.read_only, **dict(spec.extras)))
        check_parameter(name, node.get_parameter(name).value)
    return {name: setting(name, node.get_parameter(name).value) for name in PARAMETERS}


def on_set_parameters(settings, served, stats, logger):
    """The set-parameters callback: check every changed value and apply the changes to the served
    model (a changed description is loaded first), then to settings; all or none. A rejection
    answers successful=false with the reason, counted as rejected."""
    def callback(parameters):
        changes = {p.name: p.value for p in parameters}
        with Guard('parameters', logger) as outcome:
            for name, value in changes.items():
                check_parameter(name, value)
            checked = {name: setting(name, value) for name, value in changes.items()}
            note = served.apply(checked, {**settings, **checked})
            settings.update((name, checked[name]) for name in PARAMETERS if name in checked)
            served.described(checked)
            if 'stream.expected_rate' in checked:
                stats.restart_span()           # losses inferred at the new rate from now on
            if note:
                logger.warning(note)
            return SetParametersResult(successful=True)
        stats.reject(outcome.reason)
        logger.error(f'rejected parameters {clip(sorted(changes))}: {outcome.reason}')
        return SetParametersResult(successful=False, reason=outcome.reason)
    return callback
