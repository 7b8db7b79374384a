"""The node's service handlers, parameter callback and guard without DDS: a Loaded model of a
bundled robot built in this process as the node builds it, requests filled as a client fills them,
answers compared with the library; bad requests answer success=false with the reason, and a bug in
a handler answers an internal error with its traceback logged."""

import numpy as np
import pytest
from cluster_dynamics.srv import (BiasForces, Centroidal, DescribeModel, ForwardDynamics,
                                  InverseDynamics, InverseOperationalSpaceInertia, LinkKinematics,
                                  MassMatrix)
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock
from rclpy.parameter import Parameter
from std_msgs.msg import String

from dynamics_node import bundled_extended_urdf, bundled_model, load_model, ModelError
from dynamics_node.errors import quote
from dynamics_node.ros import description
from dynamics_node.ros.description import load, select, ServedModel
from dynamics_node.ros.diagnostics import Diagnostics
from dynamics_node.ros.guard import clip, ENDING, Guard, MESSAGE_LIMIT
from dynamics_node.ros.parameters import on_set_parameters, PARAMETERS, setting
from dynamics_node.ros.services import (bias_forces, centroidal, describe_model,
                                        forward_dynamics, inverse_dynamics,
                                        inverse_operational_space_inertia, link_kinematics,
                                        mass_matrix, service_callback)
from dynamics_node.ros.stream import StreamStats
from node_helpers import (_loop_request, bad_base_states, BAD_REQUESTS, BAD_URDF,
                          forward_dynamics_loop_independent_state_lcaba, SERVICE_CASES, text)
from test_node_services import WHOLE_BODY_BAD_REQUESTS, WHOLE_BODY_CASES

HANDLERS = {ForwardDynamics: forward_dynamics, InverseDynamics: inverse_dynamics,
            InverseOperationalSpaceInertia: inverse_operational_space_inertia,
            DescribeModel: describe_model, MassMatrix: mass_matrix, BiasForces: bias_forces,
            LinkKinematics: link_kinematics, Centroidal: centroidal}
CASES = {**SERVICE_CASES, **WHOLE_BODY_CASES}
BAD = BAD_REQUESTS + WHOLE_BODY_BAD_REQUESTS


class Log:
    """A logger that keeps what it is told: [(level, message)]."""

    def __init__(self):
        self.lines = []

    def __getattr__(self, level):
        return lambda message, **options: self.lines.append((level, message))


def settings(**changes):
    """The node's settings at the parameters' defaults, with changes (a double underscore stands
    for a dot)."""
    values = {name: setting(name, spec.default) for name, spec in PARAMETERS.items()}
    values.update((key.replace('__', '.'), value) for key, value in changes.items())
    return values


def loaded(name, **changes):
    """A Loaded model of bundled robot name, as the node loads it from robot_description_file."""
    return load(f"robot_description_file '{name}'", bundled_model(name), None, settings(**changes),
                Log())


def serving(name=None):
    """An active ServedModel serving bundled robot name (nothing if None), its stats and logger
    in it."""
    served = ServedModel(settings(robot_description_file=name or ''), StreamStats(), Log())
    if name:
        served.swap(loaded(name))
        served.state = 'active'
    return served


def call(srv_type, model, request=None):
    """The response of srv_type's handler on a Loaded model; ModelError if it refuses the
    request."""
    response = srv_type.Response()
    HANDLERS[srv_type](model, srv_type.Request() if request is None else request, response)
    return response


@pytest.fixture(scope='module')
def loop():
    return loaded('linkage_leg')


@pytest.fixture(scope='module')
def quadruped():
    return loaded('quadruped_rotors')


# ---- answers: the cases test_node.py and test_node_services.py send over DDS, answered by the
# handlers alone ----

@pytest.mark.parametrize('case', CASES.values(), ids=list(CASES))
def test_handler_answers_as_the_library(rng, case):
    srv_type, name, request, check = case(rng)
    check(call(srv_type, loaded(name), request))


def test_forward_dynamics_default_method(rng):
    """A request that leaves the method empty gets forward_dynamics.method (here lcaba)."""
    srv_type, name, request, check = forward_dynamics_loop_independent_state_lcaba(rng)
    request.method = ''
    response = ForwardDynamics.Response()
    forward_dynamics(loaded(name), request, response, 'lcaba')
    check(response)


# ---- bad requests: ModelError from the handler, success=false with its reason from the
# callback ----

@pytest.mark.parametrize('srv_type, fields, message', BAD,
                         ids=[m.split(';')[0][:40] for _, _, m in BAD])
def test_bad_request(srv_type, fields, message):
    served = serving('linkage_leg')
    with pytest.raises(ModelError) as error:
        call(srv_type, served.loaded, _loop_request(srv_type, **fields))
    assert str(error.value).startswith(message), error.value
    name = srv_type.__name__
    response = service_callback(name, HANDLERS[srv_type], served, served.stats, served.logger)(
        _loop_request(srv_type, **fields), srv_type.Response())
    assert not response.success and response.message == clip(error.value)
    assert (served.stats.rejected, served.stats.last_error) == (1, f'{name}: {response.message}')
    assert served.logger.lines[-1] == ('warning', f'{name}: {response.message}')
    good = service_callback(name, forward_dynamics, served, served.stats, served.logger)(
        _loop_request(ForwardDynamics), ForwardDynamics.Response())
    assert good.success, good.message


def test_a_long_link_request_is_refused_before_any_kinematics(monkeypatch):
    """~/link_kinematics: a request naming more links than the model has (10,000, repeated) is
    answered success=false naming the repeat, without reaching the model's kinematics; the same
    links once each are answered."""
    served = serving('linkage_leg')
    engine = served.loaded.model._local.data.engine
    callback = service_callback('link_kinematics', link_kinematics, served, served.stats,
                                served.logger)
    links = list(served.loaded.model.links)
    with monkeypatch.context() as patch:
        for method in ('link_call', 'link_kinematics'):
            patch.setattr(engine, method, lambda *args, **kwargs: pytest.fail('kinematics ran'))
        response = callback(_loop_request(LinkKinematics, links=links * 1_700),
                            LinkKinematics.Response())
    assert not response.success
    assert response.message == "link 'base' is named twice in links; name each link once"
    response = callback(_loop_request(LinkKinematics, links=links), LinkKinematics.Response())
    assert response.success and len(response.poses) == len(links), response.message


def test_bad_base_state(quadruped):
    for request, pattern in bad_base_states():
        with pytest.raises(ModelError, match=pattern):
            call(ForwardDynamics, quadruped, request)


def test_services_before_a_model_say_so():
    """Without a model every service answers success=false; describe_model, a question about the
    node, counts no rejected request."""
    served = serving()
    for srv_type, counted in ((ForwardDynamics, True), (DescribeModel, False)):
        response = service_callback(srv_type.__name__, HANDLERS[srv_type], served,
                                    served.stats, served.logger,
                                    counted)(srv_type.Request(), srv_type.Response())
        assert not response.success
        assert response.message.startswith("no robot model loaded yet: set the robot_description "
                                           "or robot_description_file parameter, or publish the "
                                           "description on 'robot_description'"), response.message
    assert served.stats.rejected == 1


def test_a_bug_in_a_handler_answers_an_internal_error_with_its_traceback_logged():
    served = serving('linkage_leg')

    def broken(loaded, request, response):
        response.robot_name = 'half-filled'
        raise KeyError('x' * 1000)
    response = service_callback('describe_model', broken, served, served.stats, served.logger)(
        DescribeModel.Request(), DescribeModel.Response())
    assert (response.success, response.robot_name) == (False, '')
    assert (response.message.startswith("internal error: KeyError('xxx")
            and len(response.message) == MESSAGE_LIMIT)
    (level, logged), warning = served.logger.lines[-2:]
    assert level == 'error' and logged.startswith('internal error in describe_model:\nTraceback')
    assert "raise KeyError('x' * 1000)" in logged
    assert warning == ('warning', f'describe_model: {response.message}')
    assert served.stats.rejected == 1


# ---- the guard ----

def test_the_guard():
    """A ModelError gives its reason, any other Exception an internal error with its traceback
    logged (every one when bad_input is empty); a KeyboardInterrupt passes."""
    log = Log()
    with Guard('here', log) as outcome:
        pass
    assert not outcome.failed and outcome.reason is None
    with Guard('here', log) as outcome:
        raise ModelError('a bad input')
    assert outcome.failed and outcome.reason == 'a bad input' and not log.lines
    with Guard('here', log) as outcome:
        raise ZeroDivisionError('a bug')
    assert isinstance(outcome.error, ZeroDivisionError)
    assert outcome.reason == "internal error: ZeroDivisionError('a bug')"
    assert (log.lines[-1][0] == 'error'
            and log.lines[-1][1].startswith('internal error in here:\nTraceback'))
    with Guard('timer', log, bad_input=()) as outcome:
        raise ModelError('a bug here')
    assert outcome.reason == "internal error: ModelError('a bug here')"
    assert log.lines[-1][1].startswith('internal error in timer:\nTraceback')
    with pytest.raises(KeyboardInterrupt):
        with Guard('here', log):
            raise KeyboardInterrupt


# ---- parameters: all or none, rejections with the reason ----

def set_parameters(served, **values):
    callback = on_set_parameters(served.settings, served, served.stats, served.logger)
    return callback([Parameter(key.replace('__', '.'), value=value)
                     for key, value in values.items()])


def test_parameters_apply_to_the_served_model_all_or_none():
    served = serving('linkage_leg')
    model = served.loaded.model
    result = set_parameters(served, gravity=[0.0, 0.0, -3.0],
                            stream__output_joints=['ankle_joint', 'crank_joint'])
    assert result.successful, result.reason
    assert served.loaded.model is model and list(model.gravity) == [0.0, 0.0, -3.0]
    assert list(served.loaded.output_index) == [1, 0]
    assert served.settings['stream.output_joints'] == ['ankle_joint', 'crank_joint']
    result = set_parameters(served, gravity=[0.0, 0.0, -1.0],
                            stream__output_joints=['shank_joint'])
    assert not result.successful
    assert result.reason.startswith("stream.output_joints names ['shank_joint'], not independent "
                                    "joints of 'linkage_leg'"), result.reason
    assert (list(model.gravity) == [0.0, 0.0, -3.0]
            and served.settings['gravity'] == [0.0, 0.0, -3.0])
    assert (served.stats.rejected, served.stats.last_error) == (1, result.reason)
    assert served.logger.lines[-1] == (
        'error', f"rejected parameters ['gravity', 'stream.output_joints']: {result.reason}")


def test_a_description_parameter_reloads_unless_another_source_rules():
    served = serving('linkage_leg')
    result = set_parameters(served, robot_description_file='four_bar', amplification_limit=50)
    assert result.successful, result.reason
    assert (served.loaded.model.name == 'four_bar'
            and served.loaded.model.amplification_limit == 50.0)
    assert (served.settings['amplification_limit'] == 50.0
            and isinstance(served.settings['amplification_limit'], float))
    assert served.loaded.source == "robot_description_file 'four_bar'"
    served.topic_description = text(bundled_model('six_bar'))
    result = set_parameters(served, robot_description_file='linkage_leg')
    assert not result.successful
    assert result.reason.startswith('robot_description_file not applied: topic robot_description '
                                    'takes precedence'), result.reason
    assert served.loaded.model.name == 'four_bar'
    with pytest.raises(ModelError) as parse_error:
        load_model(BAD_URDF)
    result = set_parameters(served, robot_description=BAD_URDF)
    assert (result.successful, result.reason) == (False, str(parse_error.value))
    assert served.loaded.model.name == 'four_bar'


def test_a_description_served_while_configure_fails_is_kept(monkeypatch):
    """Autostart's configure finds no description, and one arrives on the topic meanwhile (it is
    loaded and served, the node being no longer unconfigured): configure succeeds with it."""
    served = ServedModel(settings(), StreamStats(), Log())
    served.state = 'configuring'
    arrived = String(data=text(bundled_model('four_bar')))

    def select_as_a_description_arrives(*args):
        monkeypatch.setattr(description, 'select', select)
        served.on_description(arrived)
        return None
    monkeypatch.setattr(description, 'select', select_as_a_description_arrives)
    served.configure()
    assert served.loaded.model.name == 'four_bar' and served.stats.rejected == 0
    alone = ServedModel(settings(), StreamStats(), Log())
    with pytest.raises(ModelError, match='no robot description'):       # none arrives: refused
        alone.configure()
    assert alone.stats.rejected == 1


def test_a_description_served_after_configure_failed_restarts_the_node(monkeypatch):
    """A description arrives on the topic while autostart's configure runs, and is served only
    after that configure failed for want of one, the node unconfigured again: autostart is called
    again, and its configure serves the description."""
    starts = []
    served = ServedModel(settings(), StreamStats(), Log(),
                         autostart=lambda: starts.append(served.state))
    served.state = 'configuring'
    load = description.load

    def load_while_configure_fails(*args):
        with pytest.raises(ModelError, match='no robot description'):
            served.configure()
        served.state = 'unconfigured'                 # as the node's failed configure leaves it
        return load(*args)
    monkeypatch.setattr(description, 'load', load_while_configure_fails)
    served.on_description(String(data=text(bundled_model('four_bar'))))
    assert served.loaded.model.name == 'four_bar' and starts == ['unconfigured']
    monkeypatch.setattr(description, 'load', load)
    served.configure()
    # no description yet is autostart's normal start: nothing rejected
    assert served.loaded.model.name == 'four_bar' and served.stats.rejected == 0


def test_errors_while_the_process_ends_are_not_logged_as_bugs():
    """A callback that a shutting-down context fails (a timer publishing on an invalidated
    publisher) answers its reason, without an internal-error traceback."""
    log = Log()
    ENDING.set()
    try:
        with Guard('diagnostics', log) as outcome:
            raise RuntimeError("publisher's context is invalid")
    finally:
        ENDING.clear()
    assert outcome.failed and outcome.reason.startswith('process ending: RuntimeError')
    assert log.lines == []
    with Guard('diagnostics', log) as outcome:
        raise RuntimeError('a bug')
    assert outcome.reason.startswith('internal error') and log.lines[0][0] == 'error'


def test_closures_file_applies_to_the_description_on_the_topic():
    """A plain URDF on the topic (as robot_state_publisher sends it) with closures_file serves the
    Extended URDF robot, its loops closed, as the parameter and the file do; closures_file set
    while the topic serves reloads from the topic."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    closed, open_tree = load_model(urdf, closures=closures), load_model(urdf)
    assert closed.ny < open_tree.ny
    served = ServedModel(settings(closures_file=closures), StreamStats(), Log())
    served.on_description(String(data=text(urdf)))
    assert served.loaded is None                                  # unconfigured: kept
    served.configure()
    assert served.loaded.source == f'topic robot_description with closures_file {quote(closures)}'
    assert served.loaded.model.independent_joint_names == closed.independent_joint_names
    served = ServedModel(settings(), StreamStats(), Log())
    served.on_description(String(data=text(urdf)))
    served.configure()
    served.state = 'active'
    assert served.loaded.model.independent_joint_names == open_tree.independent_joint_names
    result = set_parameters(served, closures_file=closures)
    assert result.successful, result.reason
    assert served.loaded.model.independent_joint_names == closed.independent_joint_names
    assert served.loaded.source.startswith('topic robot_description with closures_file')


# ---- diagnostics: output latency ----

class FakeNode:
    """What Diagnostics asks of its node, without DDS."""

    def get_fully_qualified_name(self):
        return '/dynamics_node'

    def get_clock(self):
        return Clock()

    def get_logger(self):
        return Log()

    def create_publisher(self, *args):
        return None

    def create_timer(self, *args, **options):
        return None


def test_diagnostics_report_the_output_latency_of_the_period():
    """The arithmetic of the report, on latencies handed to StreamStats (no clock is read): p50,
    p99 and max of the period's stamped outputs (unstamped ones have none), WARN when the p99
    exceeds stream.latency_warn, and a new window every period."""
    served = serving('linkage_leg')
    diagnostics = Diagnostics(FakeNode(), served, served.settings, served.stats, True)
    latencies = np.arange(1, 101) * 1e-3                      # given: 1 .. 100 ms
    for latency in latencies:
        served.stats.publish(1e-4, latency)
    served.stats.publish(1e-4)                                # unstamped
    status = diagnostics.status()
    values = {v.key: v.value for v in status.values}
    assert [float(values[f'output_latency_{k}_ms']) for k in ('p50', 'p99', 'max')] == \
        pytest.approx([np.percentile(latencies, 50) * 1e3, np.percentile(latencies, 99) * 1e3,
                       100.0], abs=1e-3)
    assert status.level == DiagnosticStatus.WARN
    assert 'output latency p99 99.0 ms above stream.latency_warn 5 ms' in status.message
    served.stats.publish(1e-4, 1e-3)
    status = diagnostics.status()
    values = {v.key: v.value for v in status.values}
    assert (values['output_latency_max_ms'], status.level) == ('1.000', DiagnosticStatus.OK)
    assert {v.key: v.value for v in diagnostics.status().values}['output_latency_p99_ms'] == ''
