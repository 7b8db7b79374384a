"""The node's status on ``/diagnostics``: the served model and the stream's rates, losses, compute
times and errors, every ``diagnostics_period`` on the steady clock (so also under use_sim_time
without /clock). The headline names each kind of error of the period with its last reason, and
clears when a period has none."""

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType

from .guard import clip, Guard
from .stream import ERROR_KINDS


class Diagnostics:
    """The /diagnostics publisher and timer on node, reporting served, settings and stats.
    lost_reported: whether the RMW reports the message-lost events of joint_states."""

    def __init__(self, node, served, settings, stats, lost_reported):
        self.served, self.settings, self.stats, self.lost_reported = (served, settings, stats,
                                                                      lost_reported)
        self.name = f'{node.get_fully_qualified_name()}: dynamics'
        self.clock, self.logger = node.get_clock(), node.get_logger()
        self.publisher = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.last_report = (time.monotonic(), 0, 0, 0)   # time, received, published, problems
        node.create_timer(settings['diagnostics_period'], self.publish,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self):
        with Guard('diagnostics', self.logger, bad_input=()):
            report = DiagnosticArray(status=[self.status()])
            report.header.stamp = self.clock.now().to_msg()
            self.publisher.publish(report)

    def status(self):
        """DiagnosticStatus with the model, stream rates and losses, compute times and errors."""
        stats = self.stats
        received, published, dropped, mean, peak, latency, errors, last_error = stats.take()
        now = time.monotonic()
        then, received_before, published_before, lost_before = self.last_report
        expected_rate = self.settings['stream.expected_rate']
        inferred = stats.lost_inferred()
        lost = max(stats.lost_events, inferred)      # the stamps also see what the RMW reports
        self.last_report = (now, received, published, lost)
        elapsed = max(now - then, 1e-9)
        input_rate = (received - received_before) / elapsed
        age = ('' if stats.last_stamp is None else
               f'{(self.clock.now().nanoseconds - stats.last_stamp) * 1e-6:.1f}')
        values = {
            'expected_input_rate_hz': f'{expected_rate:g}' if expected_rate else 'unknown',
            'input_rate_hz': f'{input_rate:.1f}',
            'output_rate_hz': f'{(published - published_before) / elapsed:.1f}',
            'last_input_age_ms': age,
            'stale_inputs': str(stats.stale),
            'lost_before_node': str(lost),
            'lost_reported_by_rmw': (str(stats.lost_events) if self.lost_reported
                                     else 'not reported'),
            'lost_inferred_from_stamps': str(inferred) if expected_rate else 'unchecked',
            'compute_time_mean_ms': f'{mean * 1e3:.3f}',
            'compute_time_max_ms': f'{peak * 1e3:.3f}',
            **{f'output_latency_{name}_ms': f'{seconds * 1e3:.3f}' if latency else ''
               for name, seconds in zip(('p50', 'p99', 'max'), latency or (0.0,) * 3)},
            'received': str(received), 'published': str(published), 'dropped': str(dropped),
            'rejected': str(stats.rejected), 'last_error': last_error,
            'stream_mode': self.settings['stream.mode'],
            'waiting_for_joints': clip(', '.join(stats.waiting_for)),
            'contacts': clip(', '.join(f'{c.link}:{c.kind}' + (f'->{c.other}' if c.other else '')
                                       for c in stats.contacts[0])),
            'contacts_source': stats.contacts[1],
            'contacts_velocity_correction': f'{stats.velocity_correction:.3g}',
            'contacts_age_ms': ('' if stats.contacts_age is None
                                else f'{stats.contacts_age * 1e3:.1f}'),
            'waiting_inputs': str(stats.waiting), 'singular_inputs': str(stats.singular),
            'over_effort_limit': str(stats.over_limit), 'clamped_efforts': str(stats.clamped),
        }
        served = self.served
        loaded, loading, state = served.loaded, served.loading, served.state
        status = DiagnosticStatus(name=self.name, hardware_id=loaded.model.name if loaded else '')
        values = {'lifecycle_state': state, **values}
        if loaded is None:
            status.level = DiagnosticStatus.ERROR
            status.message = (f'loading the robot description from {loading}' if loading else
                              'no robot description: nothing is served' if state != 'finalized'
                              else 'finalized: nothing is served')
            values = {'source': 'none', **values}
        else:
            model = loaded.model
            values = {'model': model.name, 'source': loaded.source,
                      'clusters': str(len(model.clusters)), 'nq': str(model.nq),
                      'nv': str(model.nv), 'ny': str(model.ny), **values}
            values.update((f'model_warning_{i}', clip(w)) for i, w in enumerate(model.warnings))
            issues = []
            if state != 'active':
                issues.append(f'{state}: nothing is served until the node is activated')
            if stats.contacts_expired:
                issues.append(stats.contacts_expired)
            if stats.waiting_for:
                issues.append(f'waiting for joint_states of {clip(list(stats.waiting_for), 200)}')
            issues += [f'{count} {ERROR_KINDS[kind]}: {reason}'
                       for kind, (count, reason) in errors.items()
                       if kind not in ('waiting', 'rejected')]
            if lost > lost_before:
                issues.append(f'{lost - lost_before} joint_states lost before the node')
            warn = self.settings['stream.latency_warn']
            if latency is not None and warn and latency[1] * 1e3 > warn:
                issues.append(f'output latency p99 {latency[1] * 1e3:.1f} ms above '
                              f'stream.latency_warn {warn:g} ms')
            if expected_rate and input_rate < 0.9 * expected_rate:
                issues.append(f'input rate {input_rate:.1f} Hz below the expected '
                              f'{expected_rate:g} Hz')
            status.level = DiagnosticStatus.WARN if issues else DiagnosticStatus.OK
            status.message = '; '.join(issues) or 'ok'
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        return status
