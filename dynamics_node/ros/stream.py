"""The torque stream: ``joint_states`` (sensor_msgs/JointState, best effort, keep last 1) ->
``computed_torques`` (JointState of the independent joints), ``effort_commands`` (Float64MultiArray
in the order of ``stream.output_joints``) and ``completed_joint_states`` (every joint, dependent
ones completed from the constraints), all with the input's stamp; a floating base from the odometry
topic; the contacts the efforts hold from ``~/contacts`` (ContactSet) or ``stream.contacts``.

A message merges into the last state of every joint (StreamInput); until every independent joint
has been named the stream waits. Stale, invalid, singular and over-limit inputs are dropped and
counted in StreamStats, which /diagnostics reports.
"""

import time

import numpy as np
from cluster_dynamics.msg import ContactSet
from nav_msgs.msg import Odometry
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from tf2_msgs.msg import TFMessage

try:                                      # Iron and later
    from rclpy.event_handler import SubscriptionEventCallbacks, UnsupportedEventTypeError
except ImportError:                       # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks, UnsupportedEventTypeError

from ..contacts import resolve as resolve_contacts
from ..errors import ModelError, quote, SingularConfigurationError
from . import conversions as conv
from .guard import clip, Guard

# Control-grade input: the newest state or nothing. Best effort and volatile match reliable and
# best-effort publishers; keep last 1, so an input that waited behind a newer one is replaced.
JOINT_STATES_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                              reliability=ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)
OUTPUT_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# /tf and /tf_static as robot_state_publisher publishes them (tf2_ros' broadcasters' QoS).
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The latest contact set, also for a node that starts after the scheduler published it.
CONTACTS_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)
LATENCY_WINDOW = 60_000          # latest outputs whose latency a diagnostics period keeps
# The kinds of errors /diagnostics headlines, each with what it counts.
ERROR_KINDS = {'invalid': 'joint_states dropped', 'waiting': 'joint_states waiting',
               'singular': 'joint_states dropped as singular',
               'over_limit': 'joint_states dropped over <limit effort>',
               'clamped': 'outputs clamped to <limit effort>', 'stale': 'joint_states stale',
               'contacts': '~/contacts sets dropped', 'odometry': 'odometry messages dropped',
               'rejected': 'requests or descriptions rejected'}


def stale_reason(age, max_age):
    """Why an input stamped age seconds ago (negative: in the future) is stale, or '' if it is
    not."""
    if max_age <= 0.0 or abs(age) <= max_age:
        return ''
    when = f'{age:.3f} s old' if age > 0.0 else f'stamped {-age:.3f} s in the future'
    return f'stale joint_states: {when} (stream.max_age {max_age:g} s)'


class StreamStats:
    """Counters of the stream, of rejected requests and descriptions, and the errors of the current
    diagnostics period by kind; the diagnostics timer reads them and resets the period. Written by
    the stream thread, read by the main one."""

    def __init__(self):
        self.received = self.published = self.dropped = self.rejected = 0
        self.stale = 0
        self.lost_events = 0            # inputs the RMW reports lost (QoS message-lost events)
        # inputs held back, by cause
        self.waiting = self.singular = self.over_limit = self.clamped = 0
        self.waiting_for = ()           # independent joints no message has named yet
        self.contacts = ((), 'stream.contacts')     # (Contacts, source) of the last output
        self.contacts_age = None        # s, of the last set from ~/contacts when last used
        self.contacts_expired = ''      # why that set is not in use ('' while it is)
        self.velocity_correction = 0.0  # |y - y_c|_inf of the last output held by contacts
        self.last_stamp = None          # ns of the last stamped input
        self.span = None                # (first ns, last ns, inputs, Hz) of the current stamp span
        self.lost_before_span = 0       # inputs inferred lost in the spans before it
        self.last_error = ''            # the last error of the period ('' if none)
        self.errors = {}                # kind (ERROR_KINDS) -> [count, last reason] of the period
        self._count, self._total, self._max = 0, 0.0, 0.0
        self._latencies = np.empty(LATENCY_WINDOW)     # s, of the period's stamped outputs
        self._latency_count = 0

    def publish(self, seconds, latency=None):
        """An output computed in seconds, published latency s after its input's stamp (None:
        unstamped)."""
        self.published += 1
        self._count += 1
        self._total += seconds
        if seconds > self._max:
            self._max = seconds
        if latency is not None:
            self._latencies[self._latency_count % LATENCY_WINDOW] = latency
            self._latency_count += 1

    def drop(self, reason, kind='invalid'):
        """An input dropped (counted) for reason, of a kind of ERROR_KINDS."""
        self.dropped += 1
        self.error(reason, kind)

    def reject(self, reason):
        """A service request answered with success=false, or a rejected description."""
        self.rejected += 1
        self.error(reason, 'rejected')

    def error(self, reason, kind):
        """Note an error of a kind of ERROR_KINDS in the period."""
        reason = clip(reason)
        entry = self.errors.get(kind)
        if entry is None:
            self.errors[kind] = [1, reason]
        else:
            entry[0] += 1
            entry[1] = reason
        self.last_error = reason

    def arrive(self, stamp, expected_rate):
        """Note an input stamped stamp (ns, 0: unstamped) of a stream expected at expected_rate Hz
        (0: unknown, nothing inferred). Losses are inferred per span of stamps: the periods it
        covers minus the inputs that arrived in it. Only the span's ends count, so a publisher's
        jitter cancels out (the ends' jitter moves the count by one if it adds up to more than
        half a period). An input that repeats the previous stamp counts nothing, a reordered
        one counts as arrived; a stamp before the span (a restarted publisher, a looped bag)
        starts a new span. A gap counts as lost inputs whatever its length: the stamps cannot
        tell a publisher's pause from a stalled node that missed inputs."""
        if stamp == 0:
            return
        repeated, self.last_stamp = stamp == self.last_stamp, stamp
        span = self.span
        if expected_rate <= 0.0:
            self.restart_span()
        elif span is None or stamp < span[0]:
            self.restart_span()
            self.span = (stamp, stamp, 1, expected_rate)
        elif not repeated:
            self.span = (span[0], max(stamp, span[1]), span[2] + 1, span[3])

    def lost_inferred(self):
        """Inputs inferred lost from the stamps (arrive), those of the current span included."""
        span = self.span
        if span is None:
            return self.lost_before_span
        first, last, count, rate = span
        return self.lost_before_span + max(0, round((last - first) * 1e-9 * rate) + 1 - count)

    def restart_span(self):
        """Close the current span (its losses kept); the next stamped input opens one."""
        self.lost_before_span = self.lost_inferred()
        self.span = None

    def take(self):
        """(received, published, dropped, compute mean s, compute max s, output latencies s: p50,
        p99 and max of the period's stamped outputs (the last LATENCY_WINDOW), None if none;
        errors of the period {kind: (count, last reason)}, the last error of the period); starts a
        new period."""
        mean = self._total / self._count if self._count else 0.0
        latencies = self._latencies[:min(self._latency_count, LATENCY_WINDOW)]
        latency = (tuple(np.percentile(latencies, (50, 99))) + (latencies.max(),)
                   if len(latencies) else None)
        errors, self.errors = self.errors, {}
        last_error, self.last_error = self.last_error, ''
        snapshot = (self.received, self.published, self.dropped, mean, self._max, latency,
                    {kind: tuple(entry) for kind, entry in errors.items()}, last_error)
        self._count, self._total, self._max = 0, 0.0, 0.0
        self._latency_count = 0
        return snapshot


class OverLimit(ModelError):
    """An effort beyond its joint's <limit effort> (stream.effort_limits: reject)."""


class Waiting(ModelError):
    """An input before every actuated joint has been named."""


class Stream:
    """The stream's subscriptions and publishers on node, named by resolve (the serving node's
    resolve_topic_name: its namespace, name and remaps); the efforts of served's model with
    settings, counted in stats. clock: the node clock that judges stamps; logger: where drops are
    logged."""

    def __init__(self, node, resolve, served, settings, stats, clock, logger):
        self.served, self.settings, self.stats = served, settings, stats
        self.clock, self.logger = clock, logger
        self.base_state = None           # (pose[7], twist[6], frame) from odometry
        self.contact_set = None          # (Contacts, stamp ns) of the last valid ~/contacts
        self.torques = node.create_publisher(JointState, resolve('~/computed_torques'),
                                             OUTPUT_QOS)
        self.efforts = node.create_publisher(Float64MultiArray, resolve('~/effort_commands'),
                                             OUTPUT_QOS)
        self.completed = node.create_publisher(JointState, resolve('~/completed_joint_states'),
                                               OUTPUT_QOS)
        self.tf = self.tf_static = None
        if settings['publish_tf']:
            self.tf = node.create_publisher(TFMessage, resolve('/tf'), TF_QOS)
            self.tf_static = node.create_publisher(TFMessage, resolve('/tf_static'),
                                                   TF_STATIC_QOS)
        try:
            node.create_subscription(
                JointState, resolve('joint_states'), self.on_joint_state, JOINT_STATES_QOS,
                event_callbacks=SubscriptionEventCallbacks(message_lost=self.on_message_lost))
            self.lost_reported = True
        except UnsupportedEventTypeError:
            node.create_subscription(JointState, resolve('joint_states'), self.on_joint_state,
                                     JOINT_STATES_QOS)
            self.lost_reported = False
        node.create_subscription(ContactSet, resolve('~/contacts'), self.on_contacts,
                                 CONTACTS_QOS)
        if settings['odometry_topic']:
            node.create_subscription(Odometry, resolve(settings['odometry_topic']),
                                     self.on_odometry, qos_profile_sensor_data)
        served.on_serve.append(self.serve)

    def serve(self, loaded):
        """A model is served from now on: its fixed joints on /tf_static, and the contact set from
        ~/contacts checked against it (dropped with a warning if the model lacks one of its
        links)."""
        if self.tf_static is not None:
            self.tf_static.publish(loaded.frames.static_message(self.clock.now().to_msg()))
        topic = self.contact_set
        if topic is not None:
            with Guard('~/contacts', self.logger) as outcome:
                resolve_contacts(loaded.model, topic[0])
            if outcome.failed:
                self.contact_set = None
                self.logger.warning(f'contact set from ~/contacts dropped: {outcome.reason}; '
                                    'holding stream.contacts until a new set arrives')

    def on_message_lost(self, info):
        with Guard('joint_states message-lost event', self.logger, bad_input=()):
            self.stats.lost_events += info.total_count_change

    def on_joint_state(self, msg):
        with Guard('joint_states', self.logger) as outcome:
            self._answer(msg)
        if outcome.failed:
            error = outcome.error
            if isinstance(error, SingularConfigurationError):
                self.stats.singular += 1
            self._drop(outcome.reason, 'joint_states',
                       'singular' if isinstance(error, SingularConfigurationError) else
                       'over_limit' if isinstance(error, OverLimit) else
                       'waiting' if isinstance(error, Waiting) else 'invalid')

    def _answer(self, msg):
        """Unless the stream is off or the node inactive: count msg and, unless it is stale,
        publish its efforts."""
        settings, stats = self.settings, self.stats
        if not settings['stream.enabled'] or self.served.state != 'active':
            return
        stats.received += 1
        start = time.perf_counter()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        stats.arrive(stamp, settings['stream.expected_rate'])
        now = self._now_ns() if stamp else 0
        if stamp:
            stale = stale_reason((now - stamp) * 1e-9, settings['stream.max_age'])
            if stale:
                stats.stale += 1
                stats.error(stale, 'stale')
                return
        self._publish(msg, settings, now)
        end = time.perf_counter()
        stats.publish(end - start, (now - stamp) * 1e-9 + (end - start) if stamp else None)

    def _publish(self, msg, settings, now):
        """Merge msg into the stream state, compute the efforts, publish them (and the completed
        state and TF if anyone listens) with msg's stamp; the state is kept only if all succeeded,
        or when the output waits for joints no message has named yet. now: the node clock's ns
        (0 if msg is unstamped)."""
        loaded = self.served.current()
        model, layout, stream = loaded.model, loaded.layout, loaded.stream
        base = self.base_state if layout.floating else None
        positions, velocities = stream.stage(msg.name, msg.position, msg.velocity, base)
        missing = stream.missing()
        if missing:
            stream.commit()
            self.stats.waiting += 1
            self.stats.waiting_for = missing
            raise Waiting(f'waiting for joint_states of {quote(list(missing))}: no message has '
                          'named them yet')
        self.stats.waiting_for = ()
        q = model.complete_positions(positions, budget_ms=settings['stream.completion_budget'])
        contacts = self._contacts(now) or None
        if settings['stream.mode'] == 'gravity':
            tau = model.gravity_forces(q, contacts)
        elif contacts is None:
            tau = model.bias_forces(q, velocities)
        else:   # measured velocities, projected onto those that keep the contacts
            held = model.contact_bias_forces(q, velocities, contacts, info=True)
            tau, self.stats.velocity_correction = held.efforts, held.velocity_correction
        joints = self._limited(loaded, tau[loaded.output_y], settings['stream.effort_limits'])
        completed = tf = None
        if self.completed.get_subscription_count() > 0:
            completed = loaded.file_joints.fill(JointState(header=msg.header), q,
                                                model.spanning_velocities(q, velocities))
        if self.tf is not None and self.tf.get_subscription_count() > 0:
            tf = loaded.frames.message(q, msg.header.stamp,
                                       base and (base[2], base[0]))
        stream.commit()
        torques, efforts = loaded.output, loaded.efforts
        torques.header, torques.effort = msg.header, conv.float64_array(joints)
        self.torques.publish(torques)
        efforts.data = conv.float64_array(joints[loaded.output_index])
        self.efforts.publish(efforts)
        if completed is not None:
            self.completed.publish(completed)
        if tf is not None:
            self.tf.publish(tf)

    def _limited(self, loaded, efforts, policy):
        """efforts within their joints' <limit effort>: beyond one, OverLimit (policy 'reject')
        or the limit (policy 'clamp'), counted either way; policy 'ignore': efforts as they
        are."""
        if policy == 'ignore' or loaded.unlimited:
            return efforts
        excess = np.abs(efforts) - loaded.limits
        i = int(np.argmax(excess))
        if excess[i] <= 0.0:
            return efforts
        name = loaded.layout.independent_names[i]
        beyond = (f'effort {efforts[i]:.6g} of joint {quote(name)} exceeds its <limit effort> '
                  f'{loaded.limits[i]:g} (stream.effort_limits: {policy})')
        if policy == 'clamp':
            self.stats.clamped += 1
            self.stats.error(f'{beyond}: published {np.sign(efforts[i]) * loaded.limits[i]:g}',
                             'clamped')
            return np.clip(efforts, -loaded.limits, loaded.limits)
        self.stats.over_limit += 1
        raise OverLimit(beyond)

    def on_contacts(self, msg):
        """A contact set from ~/contacts, in use from now on unless the served model lacks one of
        its links (then dropped, the previous set stays); a set that arrives before a model is
        served is checked when one is (serve)."""
        with Guard('~/contacts', self.logger) as outcome:
            contacts = tuple(conv.contacts_from_msgs(msg.contacts) or ())
            loaded = self.served.loaded
            if loaded is not None:
                resolve_contacts(loaded.model, contacts)
            self.contact_set = (contacts, msg.header.stamp.sec * 1_000_000_000
                                + msg.header.stamp.nanosec)
        if outcome.failed:
            self._drop(outcome.reason, '~/contacts', 'contacts')

    def _contacts(self, now):
        """The contacts in effect, noted in stats: the last set from ~/contacts unless its stamp
        is older than stream.contacts_max_age (a zero stamp never is), else stream.contacts.
        now: the node clock's ns, 0 if not read yet."""
        stats, topic = self.stats, self.contact_set
        if topic is not None:
            contacts, stamp = topic
            max_age = self.settings['stream.contacts_max_age']
            age = (((now or self._now_ns()) - stamp) * 1e-9 if stamp and max_age else 0.0)
            stats.contacts_age = age
            if not max_age or age <= max_age:
                stats.contacts, stats.contacts_expired = (contacts, '~/contacts'), ''
                return contacts
            stats.contacts_expired = (f'the contact set from ~/contacts is {age:.3f} s old '
                                      f'(stream.contacts_max_age {max_age:g} s): holding '
                                      'stream.contacts')
        stats.contacts = (self.settings['stream.contacts'], 'stream.contacts')
        return stats.contacts[0]

    def _now_ns(self):
        """The node clock's time, ns: the system time unless sim time is active (a quarter of the
        cost of Clock.now())."""
        return self.clock.now().nanoseconds if self.clock.ros_time_is_active else time.time_ns()

    def _drop(self, reason, topic, kind):
        self.stats.drop(reason, kind)
        self.logger.warning(f'{topic} message dropped: {reason}', throttle_duration_sec=5.0)

    def on_odometry(self, msg):
        """Keep the floating-base pose, twist and frame of the latest valid odometry message."""
        with Guard('odometry', self.logger) as outcome:
            self.base_state = (conv.normalized_pose(msg.pose.pose, 'odometry pose'),
                               conv.twist_to_array(msg.twist.twist, 'odometry twist'),
                               msg.header.frame_id)
        if outcome.failed:
            self._drop(outcome.reason, 'odometry', 'odometry')
