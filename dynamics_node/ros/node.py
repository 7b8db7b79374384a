"""The cluster_dynamics ROS 2 node: a thin adapter between ROS messages and the dynamics library.

Services (private names): ``~/forward_dynamics``, ``~/inverse_dynamics``,
``~/inverse_operational_space_inertia``, ``~/describe_model``. Stream: ``joint_states``
(sensor_msgs/JointState, best effort, keep last 1) -> ``~/computed_torques`` (JointState of the
independent joints), ``~/effort_commands`` (Float64MultiArray in the order of
``stream.output_joints``) and ``~/completed_joint_states`` (every joint, dependent ones completed
from the constraints), all with the input's stamp. Status on ``/diagnostics``. The parameters are
listed in PARAMETERS (and documented in config/dynamics_node.yaml).

The robot description comes from the ``robot_description`` parameter if it is non-empty, else from
the last message on the description topic, else from ``robot_description_file``; a new one is
parsed into a new model that replaces the served one only if it loads. Every callback takes a
local reference to the current model and catches every exception: bad requests answer
``success=false`` with the reason, bad stream messages are counted and dropped.

Threads: services, parameters, the description topic and diagnostics run on the main thread's
executor; the stream runs on an executor thread of its own, with a second node
``<name>_stream`` holding its subscription and publishers, so that a long service call (LCABA,
a reload) never delays a torque. The compiled kernels release the GIL, and the interpreter's
switch interval is shortened so that the stream thread gets the GIL back within STREAM_GIL_SWITCH
while the main thread runs Python. rclpy's MultiThreadedExecutor (9.1.2, rclpy issue #1452) cannot
keep up with a control-rate stream, hence two executors of one thread each: EventsExecutor where
rclpy has it (Jazzy, Kilted), else SingleThreadedExecutor. The first description is loaded on a
thread of its own, so that the node answers signals while numba compiles.

rclpy APIs used (all present in Humble's rclpy 3.3, Jazzy's 7.1 and Kilted's 9.1): rclpy.init (with
SignalHandlerOptions.NO: SIGINT and SIGTERM are handled here, see main), rclpy.try_shutdown, Node
(cli_args, start_parameter_services), declare_parameter with a ParameterDescriptor (dynamic_typing,
ranges), add_on_set_parameters_callback, create_timer with a steady Clock, ROSClock.ros_time_is_active,
Executor.spin_once, ExternalShutdownException, and the message-lost QoS event (rclpy.event_handler,
rclpy.qos_event before Iron); rclpy.experimental.EventsExecutor only where it exists.
"""

from dataclasses import dataclass
import faulthandler
import os
import signal
import sys
import threading
import time
import traceback

from cluster_dynamics.msg import ClusterInfo
from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import (FloatingPointRange, ParameterDescriptor, SetParametersResult)
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

try:                                      # Iron and later
    from rclpy.event_handler import SubscriptionEventCallbacks, UnsupportedEventTypeError
except ImportError:                       # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks, UnsupportedEventTypeError

from ..errors import first_repeated, ModelError, quote, SingularConfigurationError
from ..forward_dynamics import check_method
from ..model import load_model, Model
from ..robots import bundled_model, bundled_models
from ..validation import vector
from .. import bounds
from . import conversions as conv

STREAM_MODES = ('bias', 'gravity')
EFFORT_LIMIT_POLICIES = ('reject', 'clamp')
# Control-grade input: the newest state or nothing. Best effort and volatile match reliable and
# best-effort publishers; keep last 1, so an input that waited behind a newer one is replaced.
JOINT_STATES_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                              reliability=ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)
OUTPUT_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
DESCRIPTION_PARAMETERS = ('robot_description', 'robot_description_file', 'closures_file', 'reference_positions')
# Parameters that change the description served from each source (first word of its label).
SERVED_FROM = {'parameter': {'robot_description', 'closures_file', 'reference_positions'},
               'topic': {'robot_description', 'reference_positions'},
               'robot_description_file': set(DESCRIPTION_PARAMETERS)}
STREAM_GIL_SWITCH = 5e-5     # s, interpreter switch interval (Python's default is 5 ms)
COMPILE_NOTICE_AFTER = 1.0   # s of loading after which the node says numba is compiling
MESSAGE_LIMIT = 400          # characters of a whole reason (inputs in it are quoted shorter)
EXIT_DEADLINE = 0.7          # s from SIGINT/SIGTERM (or an external shutdown) to the end of the process
_ENDING, _ENDING_LOCK = threading.Event(), threading.Lock()   # set once the process is ending (_end_within)


def _range(low, high):
    """Descriptor extras of a double parameter in [low, high] that also takes integers (-p name:=1, YAML
    name: 1), which rclpy would refuse for a double; check_parameter then checks the range."""
    return (('floating_point_range', [FloatingPointRange(from_value=low, to_value=high, step=0.0)]),
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
        extras=(('additional_constraints', 'a file path or one of ' + ', '.join(bundled_models())),)),
    'closures_file': Spec(
        '', 'Extended URDF closures (YAML file: closed_loop, type, name_mot, joint_name, joint_type) '
        'applied to robot_description and robot_description_file (not to the topic); empty: none.'),
    'robot_description_topic': Spec(
        'robot_description', 'std_msgs/String topic with the URDF+ XML (reliable, transient '
        'local, depth 1); each message reloads the model unless robot_description is set.', True),
    'reference_positions': Spec(
        [], 'Reference (assembly) configuration, spanning q of the model (Model.reference_positions): a '
        'closed, regular configuration that fixes the assembly branch; empty: the one found at load.',
        extras=(('dynamic_typing', True), ('additional_constraints', 'nq finite numbers, or none'))),
    'amplification_limit': Spec(
        20.0, "Ratio (Model.amplification_limit): beyond this multiple of a loop cluster's amplification at "
        'the reference configuration a state counts as singular: services refuse it, the stream drops it.',
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
        0.1, 'Inputs whose header stamp is older than this (s, by the node clock), or as far in the '
        'future, are dropped and counted as stale; 0 disables the check; a zero stamp is never stale.',
        extras=_range(0.0, 3600.0)),
    'stream.expected_rate': Spec(
        0.0, 'Rate of joint_states the robot publishes, Hz (0: unknown). /diagnostics warns when '
        'the measured rate falls below 90 % of it and counts gaps in the stamps as lost inputs.',
        extras=_range(0.0, 100000.0)),
    'stream.output_joints': Spec(
        [], 'Order of ~/effort_commands: independent joint names (empty: all of them, in the '
        "model's order).", extras=(('dynamic_typing', True),
                                   ('additional_constraints', 'independent joints of the model'))),
    'stream.effort_limits': Spec(
        'reject', "An effort beyond its joint's URDF <limit effort> (a limit of 0 or none: no limit): 'reject' "
        "drops the message (nothing published, counted), 'clamp' publishes the limit instead (counted).",
        extras=(('additional_constraints', 'one of ' + ', '.join(EFFORT_LIMIT_POLICIES)),)),
    'stream.completion_budget': Spec(
        1.0, 'Time a message may spend completing the dependent positions, ms; past it the message is '
        'dropped (a continuation from the reference configuration: after a jump, or the first message).',
        extras=_range(0.01, 10000.0)),
    'odometry_topic': Spec(
        '', 'nav_msgs/Odometry topic with the floating-base pose (world frame) and twist (base '
        'frame) for the stream; empty: the base rests at the identity pose.', True),
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
    """A checked parameter value as the node uses it: doubles as float (an integer given for one)."""
    return float(value) if name in DOUBLES else value


def stale_reason(age, max_age):
    """Why an input stamped age seconds ago (negative: in the future) is stale, or '' if it is not."""
    if max_age <= 0.0 or abs(age) <= max_age:
        return ''
    when = f'{age:.3f} s old' if age > 0.0 else f'stamped {-age:.3f} s in the future'
    return f'stale joint_states: {when} (stream.max_age {max_age:g} s)'


def clip(text, limit=MESSAGE_LIMIT):
    """text cut to limit characters (a reason may quote a whole input)."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + '...'


def check_parameter(name, value):
    """Raise ModelError with the reason a parameter value is unusable."""
    if name == 'gravity':
        vector(value, 'gravity', {3: 'x y z, m/s^2'}, bounds.GRAVITY)     # the model's own check
    elif name == 'stream.mode' and value not in STREAM_MODES:
        raise ModelError(f'stream.mode {quote(value)} is unknown; expected one of '
                         f'{list(STREAM_MODES)}')
    elif name == 'reference_positions':
        if not isinstance(value, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                       for x in value):
            raise ModelError(f'reference_positions must be a list of numbers (spanning q), got {quote(value)}')
        if value:
            vector(value, 'reference_positions', {len(value): 'spanning positions'}, bounds.POSITION)
    elif name == 'stream.effort_limits' and value not in EFFORT_LIMIT_POLICIES:
        raise ModelError(f'stream.effort_limits {quote(value)} is unknown; expected one of '
                         f'{list(EFFORT_LIMIT_POLICIES)}')
    elif name == 'stream.output_joints':
        if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
            raise ModelError(f'stream.output_joints must be a list of joint names, got '
                             f'{quote(value)}')
        if first_repeated(value) is not None:
            raise ModelError(f'stream.output_joints names {quote(first_repeated(value))} twice; name '
                             'each joint once')
    elif name in DOUBLES:
        low, high = DOUBLES[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ModelError(f'{name} must be a number from {low:g} to {high:g}, got {quote(value)}')
    elif name == 'forward_dynamics.method':
        check_method(value)
    elif name == 'closures_file' and value and not os.path.isfile(value):
        raise ModelError(f'closures_file {quote(value)} is not a file')


def description_file(value):
    """Path of robot_description_file: the file itself, else the bundled robot of that name."""
    if os.path.isfile(value):
        return value
    if value in bundled_models():
        return bundled_model(value)
    raise ModelError(f'robot_description_file {quote(value)} is neither a file nor a bundled '
                     f'robot; bundled robots are {bundled_models()}')


def description_xml(text, label):
    """text, which must be URDF+ XML (the parameter and the topic never carry a path)."""
    if not text.lstrip().startswith('<'):
        raise ModelError(f'{label} is not XML (starts with {quote(text.lstrip())}); it carries '
                         'the URDF+ document itself, a path goes to robot_description_file')
    return text


def output_order(layout, names):
    """Indices into layout.independent_names of stream.output_joints (all if empty)."""
    if not names:
        return np.arange(len(layout.independent_names))
    known = {n: i for i, n in enumerate(layout.independent_names)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ModelError(f'stream.output_joints names {quote(unknown)}, not independent '
                         f'joints of {layout.model.name!r}; they are {list(known)}')
    return np.array([known[n] for n in names], dtype=int)


@dataclass(frozen=True)
class Loaded:
    """A served model with what the node derives from it (replaced as a whole on reload)."""

    model: Model
    layout: conv.JointLayout
    stream: conv.StreamInput     # stream state, updated by the joint_states callback
    output_index: np.ndarray     # ~/effort_commands entries in layout.independent_names
    source: str                  # where the description came from
    output: JointState           # ~/computed_torques message, its names set once
    efforts: Float64MultiArray   # ~/effort_commands message, reused
    limits: np.ndarray           # <limit effort> of layout.independent_names, inf where none


class StreamStats:
    """Counters of the stream and the last error; the diagnostics timer reads them and resets
    the compute-time window. Written by the stream thread, read by the main one."""

    def __init__(self):
        self.received = self.published = self.dropped = self.rejected = 0
        self.stale = self.lost_events = self.gaps = 0
        self.waiting = self.singular = self.over_limit = self.clamped = 0     # inputs held back, by cause
        self.waiting_for = ()             # independent joints no message has named yet
        self.last_stamp = None            # ns of the last stamped input
        self.gap_reference = None         # ns of the last stamped input at the current expected rate
        self.last_error = ''
        self._count, self._total, self._max = 0, 0.0, 0.0

    def publish(self, seconds):
        self.published += 1
        self._count += 1
        self._total += seconds
        self._max = max(self._max, seconds)

    def drop(self, reason):
        self.dropped += 1
        self.last_error = clip(reason)

    def reject(self, reason):
        """A service request answered with success=false, or a rejected description."""
        self.rejected += 1
        self.last_error = clip(reason)

    def arrive(self, stamp, expected_rate):
        """Count gaps before an input stamped stamp (ns, 0: unstamped) at expected_rate Hz."""
        if stamp == 0:
            return
        last, self.last_stamp, self.gap_reference = self.gap_reference, stamp, stamp
        if expected_rate > 0.0 and last is not None and stamp > last:
            self.gaps += max(0, round((stamp - last) * 1e-9 * expected_rate) - 1)

    def take(self):
        """(received, published, dropped, compute mean s, compute max s); resets the window."""
        mean = self._total / self._count if self._count else 0.0
        snapshot = (self.received, self.published, self.dropped, mean, self._max)
        self._count, self._total, self._max = 0, 0.0, 0.0
        return snapshot


class DynamicsNode(Node):
    """Serves the dynamics of a URDF+ robot: services, torque stream, diagnostics."""

    def __init__(self, **kwargs):
        super().__init__('dynamics_node', **kwargs)
        self._loaded = None              # Loaded, swapped atomically
        self._generation = 0             # incremented by every swap (the first load yields)
        self._loading = ''               # label of the description the first load works on
        self._topic_description = ''     # last description received on the topic
        self._base_state = None          # (pose[7], twist[6]) from odometry
        self._stats = StreamStats()
        self._declare_parameters()
        self._settings = {name: setting(name, self.get_parameter(name).value) for name in PARAMETERS}
        self._create_services()
        self.stream_node = self._create_stream()
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._last_report = (time.monotonic(), 0, 0, 0)   # time, received, published, problems
        self.create_timer(self._settings['diagnostics_period'], self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.create_subscription(
            String, self._settings['robot_description_topic'], self._on_description,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def destroy_node(self):
        """Destroy the stream node, then this one."""
        self.stream_node.destroy_node()
        return super().destroy_node()

    # ---- parameters and the robot description ----

    def _declare_parameters(self):
        """Declare PARAMETERS, then check the initial values (SystemExit with the reason)."""
        try:
            for name, spec in PARAMETERS.items():
                self.declare_parameter(name, spec.default, ParameterDescriptor(
                    description=spec.description, read_only=spec.read_only, **dict(spec.extras)))
                check_parameter(name, self.get_parameter(name).value)
        except (ModelError, ParameterException) as error:
            self.get_logger().fatal(f'invalid parameter: {clip(error)}')
            raise SystemExit(1) from None

    def _on_set_parameters(self, parameters):
        """Validate every changed parameter (and load a changed description), then apply all."""
        changes = {p.name: p.value for p in parameters}
        try:
            for name, value in changes.items():
                check_parameter(name, value)
            changes = {name: setting(name, value) for name, value in changes.items()}
            settings = {**self._settings, **changes}
            loaded, note = self._reload(changes, settings)
            current = self._loaded
            if loaded is None and current is not None and 'stream.output_joints' in changes:
                current = self._with_outputs(current, settings['stream.output_joints'])
        except ModelError as error:
            reason = clip(error)
            self._stats.reject(reason)
            self.get_logger().error(f'rejected parameters {clip(sorted(changes))}: {reason}')
            return SetParametersResult(successful=False, reason=reason)
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            reason = clip(f'internal error: {error!r}')
            self._stats.reject(reason)
            self._log_internal('parameters', error)
            return SetParametersResult(successful=False, reason=reason)
        self._settings.update((name, changes[name]) for name in PARAMETERS if name in changes)
        if 'stream.expected_rate' in changes:
            self._stats.gap_reference = None     # gaps count from the next input at the new rate
        if loaded is not None:
            self._swap(loaded)
        elif current is not None:
            if 'gravity' in changes:
                current.model.gravity = changes['gravity']
            if 'amplification_limit' in changes:
                current.model.amplification_limit = changes['amplification_limit']
            self._loaded = current
        if note:
            self.get_logger().warning(note)
        return SetParametersResult(successful=True)

    def _reload(self, changes, settings):
        """(Loaded model of the description in effect after changes or None, note): None when
        no description parameter changed, or none is left (the note says so); raises ModelError
        when the changed parameters are not those of the source served (precedence)."""
        if not set(DESCRIPTION_PARAMETERS) & set(changes):
            return None, ''
        selected = self._select_description(settings)
        if selected is None:
            return None, 'every description source is empty: keeping the served model'
        label = selected[0]
        changed = set(DESCRIPTION_PARAMETERS) & set(changes)
        if not changed & SERVED_FROM[label.split()[0]]:
            # Rejected rather than stored: rclpy passes on the reason of a failure only.
            raise ModelError(f'{", ".join(sorted(changed))} not applied: {label} takes '
                             'precedence (robot_description, then the topic, then '
                             'robot_description_file; closures_file does not apply to the topic)')
        return self._build(*selected, settings), ''

    def _select_description(self, settings):
        """(source label, XML or path, closures path or None) in effect for settings, or None if
        there is none. closures_file applies to the parameter and the file, not to the topic."""
        if settings['robot_description'].strip():
            label, source = 'parameter robot_description', description_xml(
                settings['robot_description'], 'robot_description')
        elif self._topic_description:
            return f"topic {settings['robot_description_topic']}", self._topic_description, None
        elif settings['robot_description_file']:
            value = settings['robot_description_file']
            label, source = f'robot_description_file {quote(value)}', description_file(value)
        else:
            return None
        closures = settings['closures_file']
        if not closures:
            return label, source, None
        return f'{label} with closures_file {quote(closures)}', source, closures

    def _build(self, label, source, closures, settings):
        """Parse a description (with Extended URDF closures, if any) into a Loaded model, its
        compiled algorithms ready (numba compiles them on a process's first model unless its
        on-disk cache has them); raises ModelError."""
        self.get_logger().info(f'loading the robot description from {label}')
        reference = settings['reference_positions']
        model = load_model(source, closures=closures, amplification_limit=settings['amplification_limit'],
                           reference_positions=list(reference) or None)
        model.gravity = settings['gravity']
        notice = threading.Timer(COMPILE_NOTICE_AFTER, self.get_logger().warning, (
            f'loading takes over {COMPILE_NOTICE_AFTER:g} s: numba is compiling the dynamics '
            'kernels unless its on-disk cache has them (once after an install or a change of '
            'the kernels, 30 s to 2 min; `make setup` or the colcon install fills the cache)',))
        notice.daemon = True
        notice.start()
        try:
            model.warm_up()
        finally:
            notice.cancel()
        layout = conv.JointLayout(model)
        return Loaded(model, layout, conv.StreamInput(layout),
                      output_order(layout, settings['stream.output_joints']), label,
                      JointState(name=list(layout.independent_names)), Float64MultiArray(),
                      np.array([model.effort_limits.get(n, np.inf) for n in layout.independent_names]))

    @staticmethod
    def _with_outputs(loaded, names):
        return Loaded(loaded.model, loaded.layout, loaded.stream, output_order(loaded.layout, names),
                      loaded.source, loaded.output, loaded.efforts, loaded.limits)

    def _swap(self, loaded):
        self._loaded = loaded
        self._generation += 1
        model = loaded.model
        self.get_logger().info(
            f'serving {model.name!r} from {loaded.source}: {len(model.clusters)} clusters, '
            f'nq {model.nq}, nv {model.nv}, ny {model.ny}'
            f'{", floating base" if model.floating_base else ""}')
        for warning in model.warnings:
            self.get_logger().warning(f'{model.name!r}: {clip(warning)}')

    def start_loading(self):
        """Load the initial description on a thread of its own (numba may compile for minutes,
        during which the node must still answer signals); returns the thread or None."""
        try:
            selected = self._select_description(self._settings)
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'cannot load the robot description: {clip(error)}')
            return None
        if selected is None:
            self.get_logger().error(
                'no robot description: set robot_description or robot_description_file, or '
                f"publish on {self._settings['robot_description_topic']!r}; nothing is served "
                'until one arrives')
            return None
        self._loading = selected[0]
        generation = self._generation
        thread = threading.Thread(target=self._load_initial, args=(selected, generation),
                                  name='initial description', daemon=True)
        thread.start()
        return thread

    def _load_initial(self, selected, generation):
        try:
            loaded = self._build(*selected, self._settings)
            if self._generation == generation:     # no description arrived in the meantime
                self._swap(loaded)
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'cannot load the robot description: {clip(error)}')
        except Exception as error:  # noqa: B902 - report, the node keeps running
            self._stats.reject(clip(f'internal error: {error!r}'))
            self._log_internal('initial description', error)
        finally:
            self._loading = ''

    def _on_description(self, msg):
        """A description on the topic: reload unless the robot_description parameter rules."""
        try:
            topic = self._settings['robot_description_topic']
            xml = description_xml(msg.data, f'the description on topic {topic!r}')
            if self._settings['robot_description'].strip():
                self._topic_description = xml
                self.get_logger().info('description received on the topic; the '
                                       'robot_description parameter takes precedence')
                return
            loaded = self._build(f'topic {topic}', xml, None, self._settings)
            self._topic_description = xml
            self._swap(loaded)
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'description on the topic rejected, keeping the served '
                                    f'model: {clip(error)}')
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._stats.reject(clip(f'internal error: {error!r}'))
            self._log_internal('robot_description topic', error)

    def _current(self):
        """The served Loaded model; raises ModelError before the first description."""
        loaded = self._loaded
        if loaded is None:
            if self._loading:
                raise ModelError(f'no robot model loaded yet: still loading the description from '
                                 f'{self._loading}')
            raise ModelError('no robot model loaded yet: set the robot_description or '
                             'robot_description_file parameter, or publish the description on '
                             f"{self._settings['robot_description_topic']!r}")
        return loaded

    def _log_internal(self, where, error):
        """Log an unexpected exception with its traceback (a bug, not a bad input)."""
        self.get_logger().error(f'internal error in {where}:\n' + ''.join(
            traceback.format_exception(error)))

    # ---- services ----

    def _create_services(self):
        for srv_type, name, handler in (
                (ForwardDynamics, 'forward_dynamics', self._forward_dynamics),
                (InverseDynamics, 'inverse_dynamics', self._inverse_dynamics),
                (InverseOperationalSpaceInertia, 'inverse_operational_space_inertia',
                 self._inverse_osim)):
            self.create_service(srv_type, f'~/{name}', self._guarded(name, handler))
        self.create_service(DescribeModel, '~/describe_model', self._describe_model)

    def _guarded(self, name, handler):
        """A service callback running handler(loaded, request, response) that answers
        success=false with the reason instead of raising."""
        def callback(request, response):
            try:
                handler(self._current(), request, response)
                response.success = True
                return response
            except ModelError as error:
                reason = clip(error)
                self._stats.reject(f'{name}: {reason}')
                self.get_logger().warning(f'{name}: {reason}', throttle_duration_sec=1.0)
            except Exception as error:  # noqa: B902 - nothing may raise into the executor
                reason = clip(f'internal error: {error!r}')
                self._stats.reject(f'{name}: {reason}')
                self._log_internal(name, error)
            return type(response)(success=False, message=reason)
        return callback

    @staticmethod
    def _positions(layout, request):
        """(Selection, spanning q) of a request's state and base_pose."""
        state = request.state
        selection = layout.select(state.name)
        base = conv.pose_to_array(request.base_pose) if layout.floating else None
        return selection, layout.positions(selection, state.position, state.name, base)

    @staticmethod
    def _velocities(layout, selection, request):
        """v (spanning) or y (independent) of a request's state and base_twist."""
        base = conv.twist_to_array(request.base_twist) if layout.floating else None
        return layout.velocity_like(selection, request.state.velocity, 'state.velocity',
                                    request.state.name, base)

    def _forward_dynamics(self, loaded, request, response):
        layout = loaded.layout
        method = request.method or self._settings['forward_dynamics.method']
        check_method(method)
        selection, q = self._positions(layout, request)
        v = self._velocities(layout, selection, request)
        tau = layout.velocity_like(selection, request.state.effort, 'state.effort',
                                   request.state.name, forces=True)
        info = loaded.model.forward_dynamics(
            q, v, tau, conv.link_wrenches_to_dict(request.external_wrenches), method=method,
            info=True)
        joints, base = layout.split_spanning(info.acceleration)
        response.name = list(layout.joint_names)
        response.acceleration = conv.float64_array(joints)
        conv.array_to_accel(base, response.base_acceleration)
        response.method_used = info.method_used
        response.constraint_residual = float(info.constraint_residual)
        response.iterations = int(info.iterations)
        if info.fallback_reason:
            response.message = f'fell back to {info.method_used}: {info.fallback_reason}'

    def _inverse_dynamics(self, loaded, request, response):
        layout = loaded.layout
        selection, q = self._positions(layout, request)
        v = self._velocities(layout, selection, request)
        a = layout.velocity_like(
            selection, request.acceleration, 'acceleration', request.state.name,
            conv.accel_to_array(request.base_acceleration) if layout.floating else None)
        tau = loaded.model.inverse_dynamics(
            q, v, a, conv.link_wrenches_to_dict(request.external_wrenches))
        joints, base = layout.split_independent(tau)
        response.name = list(layout.independent_names)
        response.effort = conv.float64_array(joints)
        conv.array_to_wrench(base, response.base_wrench)

    def _inverse_osim(self, loaded, request, response):
        _, q = self._positions(loaded.layout, request)
        matrix = loaded.model.inverse_osim(q, list(request.links))
        response.rows = matrix.shape[0]
        response.matrix = conv.float64_array(matrix.reshape(-1))

    def _describe_model(self, request, response):
        """Describe the served model; success=false with the reason before the first one."""
        try:
            loaded = self._current()
        except ModelError as error:
            self.get_logger().warning(f'describe_model: {error}', throttle_duration_sec=1.0)
            response.message = str(error)
            return response
        try:
            model = loaded.model
            response.success, response.message = True, 'ok'
            response.description_source = loaded.source
            response.warnings = list(model.warnings)
            response.robot_name = model.name
            response.joint_names = list(model.joint_names)
            response.independent_joint_names = list(model.independent_joint_names)
            response.nq, response.nv, response.ny = model.nq, model.nv, model.ny
            response.floating_base = model.floating_base
            response.clusters = [ClusterInfo(
                name=c.name, links=list(c.links), joints=list(c.joints),
                independent_joints=list(c.independent_joints), constraints=list(c.constraints))
                for c in model.clusters]
            return response
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._stats.reject(clip(f'describe_model: internal error: {error!r}'))
            self._log_internal('describe_model', error)
            return DescribeModel.Response()

    # ---- torque stream (on the stream node, spun by its own thread) ----

    def _create_stream(self):
        """The node of the stream's entities: ``<name>_stream`` in this node's namespace (the
        local __node remap wins over a global one); outputs under this node's private names."""
        stream = Node(f'{self.get_name()}_stream', context=self.context,
                      cli_args=['--ros-args', '-r', f'__node:={self.get_name()}_stream'],
                      start_parameter_services=False)
        private = self.get_fully_qualified_name()
        self._torques = stream.create_publisher(JointState, f'{private}/computed_torques',
                                                OUTPUT_QOS)
        self._efforts = stream.create_publisher(Float64MultiArray, f'{private}/effort_commands',
                                                OUTPUT_QOS)
        self._completed = stream.create_publisher(
            JointState, f'{private}/completed_joint_states', OUTPUT_QOS)
        try:
            stream.create_subscription(
                JointState, 'joint_states', self._on_joint_state, JOINT_STATES_QOS,
                event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_message_lost))
            self._lost_reported = True
        except UnsupportedEventTypeError:
            stream.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                       JOINT_STATES_QOS)
            self._lost_reported = False
        if self._settings['odometry_topic']:
            stream.create_subscription(Odometry, self._settings['odometry_topic'],
                                       self._on_odometry, qos_profile_sensor_data)
        return stream

    def _on_message_lost(self, info):
        self._stats.lost_events += info.total_count_change

    def _on_joint_state(self, msg):
        settings = self._settings
        if not settings['stream.enabled']:
            return
        stats = self._stats
        stats.received += 1
        start = time.perf_counter()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        stats.arrive(stamp, settings['stream.expected_rate'])
        if stamp:
            stale = stale_reason((self._now_ns() - stamp) * 1e-9, settings['stream.max_age'])
            if stale:
                stats.stale += 1
                stats.last_error = stale
                return
        try:
            self._publish_stream(msg, settings)
        except SingularConfigurationError as error:
            stats.singular += 1
            self._drop(str(error))
        except ModelError as error:
            self._drop(str(error))
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._drop(f'internal error: {error!r}')
            self._log_internal('joint_states', error)
        else:
            stats.publish(time.perf_counter() - start)

    def _publish_stream(self, msg, settings):
        """Merge msg into the stream state, compute the efforts, publish them (and the completed
        state if anyone listens) with msg's stamp; the state is kept only if all succeeded, or when
        the output waits for joints no message has named yet."""
        loaded = self._current()
        model, layout, stream = loaded.model, loaded.layout, loaded.stream
        base = self._base_state if layout.floating else None
        positions, velocities = stream.stage(msg.name, msg.position, msg.velocity, base)
        missing = stream.missing()
        if missing:
            stream.commit()
            self._stats.waiting += 1
            self._stats.waiting_for = missing
            raise ModelError(f'waiting for joint_states of {quote(list(missing))}: no message has named '
                             'them yet')
        self._stats.waiting_for = ()
        q = model.complete_positions(positions, budget_ms=settings['stream.completion_budget'])
        tau = model.bias_forces(q, velocities) if settings['stream.mode'] == 'bias' else model.gravity_forces(q)
        joints = self._limited(loaded, layout.split_independent(tau)[0], settings['stream.effort_limits'])
        completed = None
        if self._completed.get_subscription_count() > 0:
            completed = JointState(header=msg.header)
            layout.fill_joint_state(completed, q, model.spanning_velocities(q, velocities))
        stream.commit()
        torques, efforts = loaded.output, loaded.efforts
        torques.header, torques.effort = msg.header, conv.float64_array(joints)
        self._torques.publish(torques)
        efforts.data = conv.float64_array(joints[loaded.output_index])
        self._efforts.publish(efforts)
        if completed is not None:
            self._completed.publish(completed)

    def _limited(self, loaded, efforts, policy):
        """efforts within their joints' <limit effort>: beyond one, ModelError (policy 'reject') or the
        limit (policy 'clamp'), counted either way."""
        over = np.abs(efforts) > loaded.limits
        if not over.any():
            return efforts
        i = int(np.argmax(np.abs(efforts) - loaded.limits))
        name = loaded.layout.independent_names[i]
        if policy == 'clamp':
            self._stats.clamped += 1
            return np.clip(efforts, -loaded.limits, loaded.limits)
        self._stats.over_limit += 1
        raise ModelError(f'effort {efforts[i]:.6g} of joint {quote(name)} exceeds its <limit effort> '
                         f'{loaded.limits[i]:g} (stream.effort_limits: reject)')

    def _now_ns(self):
        """The node clock's time, ns: the system time unless sim time is active (a quarter of the cost of
        Clock.now())."""
        clock = self.get_clock()
        return clock.now().nanoseconds if clock.ros_time_is_active else time.time_ns()

    def _drop(self, reason, topic='joint_states'):
        self._stats.drop(reason)
        self.get_logger().warning(f'{topic} message dropped: {clip(reason)}',
                                  throttle_duration_sec=5.0)

    def _on_odometry(self, msg):
        """Keep the floating-base pose and twist of the latest valid odometry message."""
        try:
            self._base_state = (conv.normalized_pose(msg.pose.pose, 'odometry pose'),
                                conv.twist_to_array(msg.twist.twist, 'odometry twist'))
        except ModelError as error:
            self._drop(str(error), 'odometry')
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._drop(f'internal error: {error!r}', 'odometry')
            self._log_internal('odometry', error)

    # ---- diagnostics ----

    def _publish_diagnostics(self):
        try:
            report = DiagnosticArray(status=[self._status()])
            report.header.stamp = self.get_clock().now().to_msg()
            self._diagnostics.publish(report)
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._log_internal('diagnostics', error)

    def _status(self):
        """DiagnosticStatus with the model, stream rates and losses, compute times and errors."""
        stats = self._stats
        received, published, dropped, mean, peak = stats.take()
        now = time.monotonic()
        then, received_before, published_before, problems_before = self._last_report
        problems = dropped + stats.stale + stats.gaps + stats.lost_events
        self._last_report = (now, received, published, problems)
        elapsed = max(now - then, 1e-9)
        input_rate = (received - received_before) / elapsed
        expected_rate = self._settings['stream.expected_rate']
        age = ('' if stats.last_stamp is None else
               f'{(self.get_clock().now().nanoseconds - stats.last_stamp) * 1e-6:.1f}')
        values = {
            'expected_input_rate_hz': f'{expected_rate:g}' if expected_rate else 'unknown',
            'input_rate_hz': f'{input_rate:.1f}',
            'output_rate_hz': f'{(published - published_before) / elapsed:.1f}',
            'last_input_age_ms': age,
            'stale_inputs': str(stats.stale),
            'lost_before_node': str(stats.lost_events + stats.gaps),
            'lost_events': str(stats.lost_events) if self._lost_reported else 'not reported',
            'stamp_gaps': str(stats.gaps) if expected_rate else 'unchecked',
            'compute_time_mean_ms': f'{mean * 1e3:.3f}',
            'compute_time_max_ms': f'{peak * 1e3:.3f}',
            'received': str(received), 'published': str(published), 'dropped': str(dropped),
            'rejected': str(stats.rejected), 'last_error': stats.last_error,
            'stream_mode': self._settings['stream.mode'],
            'waiting_for_joints': clip(', '.join(stats.waiting_for)),
            'waiting_inputs': str(stats.waiting), 'singular_inputs': str(stats.singular),
            'over_effort_limit': str(stats.over_limit), 'clamped_efforts': str(stats.clamped),
        }
        loaded = self._loaded
        status = DiagnosticStatus(name=f'{self.get_fully_qualified_name()}: dynamics',
                                  hardware_id=loaded.model.name if loaded else '')
        if loaded is None:
            status.level = DiagnosticStatus.ERROR
            status.message = (f'loading the robot description from {self._loading}'
                              if self._loading else 'no robot description: nothing is served')
            values = {'source': 'none', **values}
        else:
            model = loaded.model
            values = {'model': model.name, 'source': loaded.source,
                      'clusters': str(len(model.clusters)), 'nq': str(model.nq),
                      'nv': str(model.nv), 'ny': str(model.ny), **values}
            values.update((f'model_warning_{i}', clip(w)) for i, w in enumerate(model.warnings))
            issues = []
            if stats.waiting_for:
                issues.append(f'waiting for joint_states of {clip(list(stats.waiting_for), 200)}')
            if problems > problems_before:
                issues.append(f'{problems - problems_before} inputs dropped, stale or lost')
            if expected_rate and input_rate < 0.9 * expected_rate:
                issues.append(f'input rate {input_rate:.1f} Hz below the expected '
                              f'{expected_rate:g} Hz')
            status.level = DiagnosticStatus.WARN if issues else DiagnosticStatus.OK
            status.message = '; '.join(issues) or 'ok'
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status


def _executor(node):
    """An executor of node alone: rclpy's EventsExecutor where it exists (Jazzy, Kilted; about
    0.3 ms less per service call than the SingleThreadedExecutor), else the latter (Humble)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        executor = SingleThreadedExecutor()
    else:
        executor = EventsExecutor()
    executor.add_node(node)
    return executor


def _spin(executor, logger):
    """Spin until the context shuts down. A loop of spin_once: EventsExecutor.spin() (rclpy
    9.1.2) leaves services unanswered. An error of the executor itself is logged, not fatal."""
    while rclpy.ok():
        try:
            executor.spin_once(timeout_sec=0.1)
        except (ExternalShutdownException, KeyboardInterrupt):
            return
        except Exception as error:  # noqa: B902 - the executor must keep running
            logger.error(f'executor error: {error!r}', throttle_duration_sec=1.0)


def _end_within(seconds):
    """From now on the process ends within seconds, whatever DDS does: faulthandler's watchdog is a C
    thread, which needs no GIL, and calls _exit(1) unless the clean exit of main comes first. That clean
    exit destroys the nodes, so that their peers see them leave at once, but DDS can hold it up for
    seconds (seen: 0.5-3 s, and once a crash, in a node whose client processes had ended without leaving
    the graph). True if this call armed the deadline (later calls keep the first one)."""
    with _ENDING_LOCK:
        if _ENDING.is_set():
            return False
        _ENDING.set()
    faulthandler.dump_traceback_later(seconds, exit=True, file=open(os.devnull, 'w'))   # no traceback
    return True


def _on_signal(signum, frame):
    """SIGINT or SIGTERM, in the main thread: leave the spin loop unless the signal watcher ended it."""
    if _end_within(EXIT_DEADLINE):
        raise KeyboardInterrupt


def _watch_signals():
    """Start the deadline at a SIGINT or SIGTERM and shut the context down (the spin loops end), also while
    the main thread, the only one to run Python's signal handlers, is held up in a C call that releases the
    GIL (a compiled kernel). The interpreter's C-level handler writes the signal number to a pipe at once; a
    thread of its own reads it. A C call that keeps the GIL still delays both: rclpy's Service.send_response
    to clients killed in the middle of their requests was seen waiting in DDS 0.3 s after the signal."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)
    signal.set_wakeup_fd(write)

    def watch():
        os.read(read, 1)
        _end_within(EXIT_DEADLINE)
        rclpy.try_shutdown()
    threading.Thread(target=watch, name='signals', daemon=True).start()


def main(args=None):
    """Run the node until Ctrl-C, SIGTERM or an external shutdown, then end the process."""
    sys.setswitchinterval(STREAM_GIL_SWITCH)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    _watch_signals()
    node = stream = None
    code = 0
    try:
        node = DynamicsNode()
        stream = threading.Thread(target=_spin, args=(_executor(node.stream_node), node.get_logger()),
                                  name='stream', daemon=True)
        stream.start()
        node.start_loading()
        _spin(_executor(node), node.get_logger())
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SystemExit as error:
        code = error.code
    finally:
        _end_within(EXIT_DEADLINE)
        rclpy.try_shutdown()
        if stream is not None:
            stream.join()             # its spin loop ends with the context: no entity is in use below
        if node is not None:
            node.destroy_node()
    # The interpreter's own finalization (numba, llvmlite) takes ~0.7 s, and would wait for a
    # compilation in progress: skip it, so that a signal ends the node well within 1 s.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
