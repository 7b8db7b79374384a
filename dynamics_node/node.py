"""The cluster_dynamics ROS 2 node: a thin adapter between ROS messages and the dynamics library.

Services (private names): ``~/forward_dynamics``, ``~/inverse_dynamics``,
``~/inverse_operational_space_inertia``, ``~/describe_model``. Stream: ``joint_states``
(sensor_msgs/JointState, sensor-data QoS) -> ``~/computed_torques`` (JointState of the independent
joints, effort = bias or gravity forces, reliable, depth 1). Status on ``/diagnostics``. The
parameters are listed in PARAMETERS (and documented in config/dynamics_node.yaml).

The robot description comes from the ``robot_description`` parameter if it is non-empty, else from
the last message on the description topic, else from ``robot_description_file``; a new one is
parsed into a new model that replaces the served one only if it loads. Every callback takes a
local reference to the current model and catches every exception: bad requests answer
``success=false`` with the reason, bad stream messages are counted and dropped.

Executor: single-threaded, so services and the stream take turns (a service call delays the
stream by its compute time). rclpy's MultiThreadedExecutor (9.1.2, rclpy issue #1452) cannot keep
up with a control-rate stream: on the 2-core development machine a node that only echoes
joint_states through it passed 36 to 119 of 1000 messages sent at 500 Hz, against all 1000 (0.6 ms
median latency) with the SingleThreadedExecutor.
"""

from dataclasses import dataclass
import os
import time
import traceback

from cluster_dynamics.msg import ClusterInfo
from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from . import ros_conversions as conv
from .errors import ModelError
from .forward_dynamics import check_method
from .model import load_model, Model
from .models import bundled_model, bundled_models

STREAM_MODES = ('bias', 'gravity')
# Sensor-data QoS (best effort, volatile: matches reliable and best-effort publishers) with a deeper
# queue than its 5 messages, so that a scheduling stall of up to 0.1 s at 1 kHz delays inputs instead
# of dropping them. Latest-only: qos_overrides./joint_states.subscription.depth: 1.
JOINT_STATES_QOS = QoSProfile(depth=100, reliability=qos_profile_sensor_data.reliability,
                              durability=qos_profile_sensor_data.durability)
DESCRIPTION_PARAMETERS = ('robot_description', 'robot_description_file', 'closures_file')

# name: (default, description, read-only). Read-only ones take effect at start-up only.
PARAMETERS = {
    'robot_description': (
        '', 'URDF+ XML of the robot; when non-empty it takes precedence over the topic and the '
        'file. Setting it reloads the model (rejected with the parser message if it fails).',
        False),
    'robot_description_file': (
        '', 'URDF+ file path, or the name of a bundled robot (e.g. quadruped_rotors); used when '
        'robot_description is empty and nothing arrived on robot_description_topic.', False),
    'closures_file': (
        '', 'Extended URDF closures (YAML file: closed_loop, type, name_mot, joint_name, joint_type) '
        'applied to robot_description and robot_description_file (not to the topic); empty: none.',
        False),
    'robot_description_topic': (
        'robot_description', 'std_msgs/String topic with the URDF+ XML (reliable, transient '
        'local, depth 1); each message reloads the model unless robot_description is set.', True),
    'gravity': (
        [0.0, 0.0, -9.81], 'Gravity acceleration in the root link frame, m/s^2 (x, y, z).', False),
    'stream.mode': (
        'bias', "Effort of ~/computed_torques: 'bias' (gravity + Coriolis and centrifugal "
        "compensation) or 'gravity' (gravity only).", False),
    'stream.enabled': (
        True, 'Publish ~/computed_torques for every joint_states message.', False),
    'odometry_topic': (
        '', 'nav_msgs/Odometry topic with the floating-base pose (world frame) and twist (base '
        'frame) for the stream; empty: the base rests at the identity pose.', True),
    'forward_dynamics.method': (
        'auto', "Method of ~/forward_dynamics when a request leaves it empty: 'auto', 'aba' or "
        "'lcaba'.", False),
    'diagnostics_period': (
        1.0, 'Period of the /diagnostics status, s.', True),
}
DIAGNOSTICS_PERIOD_RANGE = FloatingPointRange(from_value=0.01, to_value=3600.0, step=0.0)


def check_parameter(name, value):
    """Raise ValueError (ModelError) with the reason a parameter value is unusable."""
    if name == 'gravity':
        if len(value) != 3 or not np.all(np.isfinite(value)):
            raise ModelError(f'gravity must be 3 finite numbers (x, y, z in m/s^2), got '
                             f'{list(value)}')
    elif name == 'stream.mode' and value not in STREAM_MODES:
        raise ModelError(f'stream.mode {value!r} is unknown; expected one of {list(STREAM_MODES)}')
    elif name == 'forward_dynamics.method':
        check_method(value)
    elif name == 'closures_file' and value and not os.path.isfile(value):
        raise ModelError(f'closures_file {value!r} is not a file')


def description_file(value):
    """Path of robot_description_file: the file itself, else the bundled robot of that name."""
    if os.path.isfile(value):
        return value
    if value in bundled_models():
        return bundled_model(value)
    raise ModelError(f'robot_description_file {value!r} is neither a file nor a bundled robot; '
                     f'bundled robots are {bundled_models()}')


@dataclass(frozen=True)
class Loaded:
    """A served model with what the node derives from it (replaced as a whole on reload)."""

    model: Model
    layout: conv.JointLayout
    stream: conv.StreamInput     # stream state, updated by the joint_states callback
    output: JointState           # preallocated ~/computed_torques message
    source: str                  # where the description came from


class StreamStats:
    """Counters of the stream and the last error; the diagnostics timer reads them and resets
    the compute-time window."""

    def __init__(self):
        self.received = self.published = self.dropped = self.rejected = 0
        self.last_error = ''
        self._count, self._total, self._max = 0, 0.0, 0.0

    def publish(self, seconds):
        self.published += 1
        self._count += 1
        self._total += seconds
        self._max = max(self._max, seconds)

    def drop(self, reason):
        self.dropped += 1
        self.last_error = reason

    def reject(self, reason):
        """A service request answered with success=false, or a rejected description."""
        self.rejected += 1
        self.last_error = reason

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
        self._topic_description = ''     # last description received on the topic
        self._base_state = None          # (pose[7], twist[6]) from odometry
        self._stats = StreamStats()
        self._declare_parameters()
        self._settings = {name: self.get_parameter(name).value for name in PARAMETERS}
        self._create_services()
        self._create_stream()
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._last_report = (time.monotonic(), 0, 0, 0)   # time, received, published, dropped
        self.create_timer(self._settings['diagnostics_period'], self._publish_diagnostics)
        self.create_subscription(
            String, self._settings['robot_description_topic'], self._on_description,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._load_initial_description()
        self.add_on_set_parameters_callback(self._on_set_parameters)

    # ---- parameters and the robot description ----

    def _declare_parameters(self):
        """Declare PARAMETERS, then check the initial values (SystemExit with the reason)."""
        try:
            for name, (default, description, read_only) in PARAMETERS.items():
                ranges = ({'floating_point_range': [DIAGNOSTICS_PERIOD_RANGE]}
                          if name == 'diagnostics_period' else {})
                self.declare_parameter(name, default, ParameterDescriptor(
                    description=description, read_only=read_only, **ranges))
                check_parameter(name, self.get_parameter(name).value)
        except (ModelError, ParameterException) as error:
            self.get_logger().fatal(f'invalid parameter: {error}')
            raise SystemExit(1) from None

    def _on_set_parameters(self, parameters):
        """Validate every changed parameter (and load a changed description), then apply all."""
        changes = {p.name: p.value for p in parameters}
        try:
            for name, value in changes.items():
                check_parameter(name, value)
            loaded = self._reload(changes)
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'rejected parameters {sorted(changes)}: {error}')
            return SetParametersResult(successful=False, reason=str(error))
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._stats.reject(f'internal error: {error!r}')
            self._log_internal('parameters', error)
            return SetParametersResult(successful=False, reason=f'internal error: {error!r}')
        self._settings.update((name, changes[name]) for name in PARAMETERS if name in changes)
        if loaded is not None:
            self._swap(loaded)
        elif 'gravity' in changes and self._loaded is not None:
            self._loaded.model.gravity = changes['gravity']
        return SetParametersResult(successful=True)

    def _reload(self, changes):
        """The Loaded model of the description in effect after changes, or None if the
        description parameters are not among them (or all of them are empty)."""
        if not set(DESCRIPTION_PARAMETERS) & set(changes):
            return None
        settings = {**self._settings, **changes}
        selected = self._select_description(settings)
        if selected is None:
            self.get_logger().warning('every description source is empty: keeping the served '
                                      'model')
            return None
        return self._build(*selected, settings['gravity'])

    def _select_description(self, settings):
        """(source label, XML or path, closures path or None) in effect for settings, or None if
        there is none. closures_file applies to the parameter and the file, not to the topic."""
        if settings['robot_description'].strip():
            label, source = 'parameter robot_description', settings['robot_description']
        elif self._topic_description:
            return f"topic {settings['robot_description_topic']}", self._topic_description, None
        elif settings['robot_description_file']:
            value = settings['robot_description_file']
            label, source = f'robot_description_file {value!r}', description_file(value)
        else:
            return None
        closures = settings['closures_file']
        if not closures:
            return label, source, None
        return f'{label} with closures_file {closures!r}', source, closures

    def _build(self, label, source, closures, gravity):
        """Parse a description (with Extended URDF closures, if any) into a Loaded model, its
        compiled algorithms ready (numba compiles them on a process's first model unless its
        on-disk cache has them); raises ModelError."""
        self.get_logger().info(f'loading the robot description from {label}')
        model = load_model(source, closures=closures)
        model.gravity = gravity
        model.warm_up()
        layout = conv.JointLayout(model)
        output = JointState(name=list(layout.independent_names),
                            effort=conv.float64_array(np.zeros(len(layout.independent_names))))
        return Loaded(model, layout, conv.StreamInput(layout), output, label)

    def _swap(self, loaded):
        self._loaded = loaded
        model = loaded.model
        self.get_logger().info(
            f'serving {model.name!r} from {loaded.source}: {len(model.clusters)} clusters, '
            f'nq {model.nq}, nv {model.nv}, ny {model.ny}'
            f'{", floating base" if model.floating_base else ""}')
        for warning in model.warnings:
            self.get_logger().warning(f'{model.name!r}: {warning}')

    def _load_initial_description(self):
        try:
            selected = self._select_description(self._settings)
            if selected is None:
                self.get_logger().warning(
                    'no robot description yet: set robot_description or robot_description_file, '
                    f"or publish on {self._settings['robot_description_topic']!r}")
            else:
                self._swap(self._build(*selected, self._settings['gravity']))
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'cannot load the robot description: {error}')

    def _on_description(self, msg):
        """A description on the topic: reload unless the robot_description parameter rules."""
        try:
            if self._settings['robot_description'].strip():
                self._topic_description = msg.data
                self.get_logger().info('description received on the topic; the '
                                       'robot_description parameter takes precedence')
                return
            loaded = self._build(f"topic {self._settings['robot_description_topic']}", msg.data, None,
                                 self._settings['gravity'])
            self._topic_description = msg.data
            self._swap(loaded)
        except ModelError as error:
            self._stats.reject(str(error))
            self.get_logger().error(f'description on the topic rejected, keeping the served '
                                    f'model: {error}')
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._stats.reject(f'internal error: {error!r}')
            self._log_internal('robot_description topic', error)

    def _current(self):
        """The served Loaded model; raises ModelError before the first description."""
        loaded = self._loaded
        if loaded is None:
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
                reason = str(error)
                self._stats.reject(f'{name}: {reason}')
                self.get_logger().warning(f'{name}: {reason}', throttle_duration_sec=1.0)
            except Exception as error:  # noqa: B902 - nothing may raise into the executor
                reason = f'internal error: {error!r}'
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
                                   request.state.name)
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
            self._stats.reject(f'describe_model: internal error: {error!r}')
            self._log_internal('describe_model', error)
            return DescribeModel.Response()

    # ---- torque stream ----

    def _create_stream(self):
        self._torques = self.create_publisher(
            JointState, '~/computed_torques',
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE),
            qos_overriding_options=QoSOverridingOptions.with_default_policies())
        self.create_subscription(
            JointState, 'joint_states', self._on_joint_state, JOINT_STATES_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies())
        if self._settings['odometry_topic']:
            self.create_subscription(Odometry, self._settings['odometry_topic'],
                                     self._on_odometry, qos_profile_sensor_data)

    def _on_joint_state(self, msg):
        if not self._settings['stream.enabled']:
            return
        self._stats.received += 1
        start = time.perf_counter()
        try:
            self._publish_torques(msg)
        except ModelError as error:
            self._drop(str(error))
        except Exception as error:  # noqa: B902 - nothing may raise into the executor
            self._drop(f'internal error: {error!r}')
            self._log_internal('joint_states', error)
        else:
            self._stats.publish(time.perf_counter() - start)

    def _publish_torques(self, msg):
        """Merge msg into the stream state, compute the efforts, publish with msg's stamp."""
        loaded = self._current()
        model = loaded.model
        base = self._base_state if loaded.layout.floating else None
        positions, velocities = loaded.stream.stage(msg.name, msg.position, msg.velocity, base)
        q = model.complete_positions(positions)
        if self._settings['stream.mode'] == 'bias':
            tau = model.bias_forces(q, velocities)
        else:
            tau = model.gravity_forces(q)
        loaded.stream.commit()
        output = loaded.output
        output.header = msg.header
        np.frombuffer(output.effort, dtype=float)[:] = loaded.layout.split_independent(tau)[0]
        self._torques.publish(output)

    def _drop(self, reason, topic='joint_states'):
        self._stats.drop(reason)
        self.get_logger().warning(f'{topic} message dropped: {reason}',
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
        """DiagnosticStatus with the model, stream rates, compute times and errors."""
        received, published, dropped, mean, peak = self._stats.take()
        now = time.monotonic()
        then, received_before, published_before, dropped_before = self._last_report
        self._last_report = (now, received, published, dropped)
        elapsed = max(now - then, 1e-9)
        dropped_now = dropped - dropped_before
        values = {
            'input_rate_hz': f'{(received - received_before) / elapsed:.1f}',
            'output_rate_hz': f'{(published - published_before) / elapsed:.1f}',
            'compute_time_mean_ms': f'{mean * 1e3:.3f}',
            'compute_time_max_ms': f'{peak * 1e3:.3f}',
            'received': str(received), 'published': str(published), 'dropped': str(dropped),
            'rejected': str(self._stats.rejected), 'last_error': self._stats.last_error,
            'stream_mode': self._settings['stream.mode'],
        }
        loaded = self._loaded
        status = DiagnosticStatus(name=f'{self.get_fully_qualified_name()}: dynamics',
                                  hardware_id=loaded.model.name if loaded else '')
        if loaded is None:
            status.level, status.message = DiagnosticStatus.ERROR, 'no robot model loaded'
        else:
            model = loaded.model
            values = {'model': model.name, 'source': loaded.source,
                      'clusters': str(len(model.clusters)), 'nq': str(model.nq),
                      'nv': str(model.nv), 'ny': str(model.ny), **values}
            values.update((f'model_warning_{i}', w) for i, w in enumerate(model.warnings))
            status.level = DiagnosticStatus.WARN if dropped_now > 0 else DiagnosticStatus.OK
            status.message = (f'{dropped_now} joint_states messages dropped'
                              if dropped_now > 0 else 'ok')
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status


def main(args=None):
    """Run the node until Ctrl-C or an external shutdown."""
    try:
        with rclpy.init(args=args):
            rclpy.spin(DynamicsNode())
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
