"""The node's service handlers, parameter callback and guard without DDS: a Loaded model of a
bundled robot built in this process as the node builds it, requests filled as a client fills them,
answers compared with the library; bad requests answer success=false with the reason, and a bug in
a handler answers an internal error with its traceback logged."""

import numpy as np
import pytest
from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from rclpy.parameter import Parameter

from conftest import assert_close, robot
from dynamics_node import bundled_model, load_model, ModelError
from dynamics_node.ros.description import load, ServedModel
from dynamics_node.ros.guard import clip, Guard, MESSAGE_LIMIT
from dynamics_node.ros.parameters import on_set_parameters, PARAMETERS, setting
from dynamics_node.ros.services import (describe_model, forward_dynamics, inverse_dynamics,
                                        inverse_operational_space_inertia, service_callback)
from dynamics_node.ros.stream import StreamStats
from test_node import (_loop_request, BAD_REQUESTS, BAD_URDF, completed, floating_state,
                       joint_state, link_wrench, loop_state, RTOL, set_linear_angular, set_pose,
                       text, vector6)

HANDLERS = {ForwardDynamics: forward_dynamics, InverseDynamics: inverse_dynamics,
            InverseOperationalSpaceInertia: inverse_operational_space_inertia,
            DescribeModel: describe_model}


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
    """A ServedModel serving bundled robot name (nothing if None), its stats and logger in it."""
    served = ServedModel(settings(robot_description_file=name or ''), StreamStats(), Log())
    if name:
        served.swap(loaded(name))
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


# ---- describe_model ----

@pytest.mark.parametrize('name', ['linkage_leg', 'quadruped_rotors'])
def test_describe_model(name):
    model = robot(name)
    response = call(DescribeModel, loaded(name))
    assert response.message == 'ok'
    assert response.description_source == f"robot_description_file '{name}'"
    assert list(response.warnings) == model.warnings == []
    assert response.robot_name == model.name
    assert tuple(response.joint_names) == model.joint_names
    assert tuple(response.independent_joint_names) == model.independent_joint_names
    assert (response.nq, response.nv, response.ny) == (model.nq, model.nv, model.ny)
    assert response.floating_base == model.floating_base
    assert [(c.name, tuple(c.links), tuple(c.joints), tuple(c.independent_joints),
             tuple(c.constraints)) for c in response.clusters] == [
        (c.name, c.links, c.joints, c.independent_joints, c.constraints) for c in model.clusters]


# ---- forward dynamics ----

def test_forward_dynamics_loop_spanning_state(loop, rng):
    """All spanning joints, reordered, with a wrench; a fixed base ignores the base fields."""
    model = robot('linkage_leg')
    q, v, _, tau = loop_state(rng)
    order = [3, 0, 4, 1, 2]
    names = [model.joint_names[i] for i in order]
    request = ForwardDynamics.Request(state=joint_state(names, q[order], v[order], tau[order]))
    request.base_pose.position.x = float('nan')
    request.external_wrenches = [link_wrench('foot', (1, 2, 3), (0.1, 0.2, 0.3))]
    response = call(ForwardDynamics, loop, request)
    expected = model.forward_dynamics(q, v, tau, {'foot': ((1, 2, 3), (0.1, 0.2, 0.3))})
    assert tuple(response.name) == model.joint_names
    assert_close(response.acceleration, expected, 'qdd', RTOL)
    assert_close(vector6(response.base_acceleration, 'linear', 'angular'), np.zeros(6),
                 'base acceleration of a fixed base')
    assert response.method_used == 'aba' and response.message == ''


@pytest.mark.parametrize('method, default', [('lcaba', 'auto'), ('', 'lcaba')])
def test_forward_dynamics_loop_independent_state_lcaba(rng, method, default):
    """The independent joints only, completed from the reference configuration; lcaba on request,
    or as the default method (forward_dynamics.method) when the request leaves it empty."""
    model = robot('linkage_leg')
    yd, tau_y = rng.normal(size=model.ny), rng.normal(size=model.ny)
    q_independent = [0.8 + 0.2 * rng.uniform(-1, 1), rng.uniform(-0.5, 0.5)]
    request = ForwardDynamics.Request(method=method, state=joint_state(
        model.independent_joint_names, q_independent, yd, tau_y))
    response = ForwardDynamics.Response()
    forward_dynamics(loaded('linkage_leg'), request, response, default)
    expected = model.forward_dynamics(completed('linkage_leg', q_independent), yd, tau_y,
                                      method='lcaba', info=True)
    assert response.method_used == 'lcaba'
    assert response.iterations == expected.iterations
    assert_close(response.acceleration, expected.acceleration, 'qdd', RTOL)
    assert response.constraint_residual == pytest.approx(expected.constraint_residual, abs=1e-9)


def test_forward_dynamics_floating_base(quadruped, rng):
    model = robot('quadruped_rotors')
    q, y, tau = floating_state(rng)
    names = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in names]
    request = ForwardDynamics.Request(state=joint_state(names, positions, y[6:], tau))
    set_pose(request.base_pose, q[:7])
    set_linear_angular(request.base_twist, y[:6])
    request.external_wrenches = [link_wrench('FL_foot', (0, 0, 30), (0, 0, 0))]
    response = call(ForwardDynamics, quadruped, request)
    expected = model.forward_dynamics(q, y, np.concatenate((np.zeros(6), tau)),
                                      {'FL_foot': ((0, 0, 30), (0, 0, 0))})
    assert tuple(response.name) == model.joint_names[1:]
    assert_close(response.acceleration, expected[6:], 'joint accelerations', RTOL)
    assert_close(vector6(response.base_acceleration, 'linear', 'angular'), expected[:6],
                 'base acceleration', RTOL)


# ---- inverse dynamics ----

def test_inverse_dynamics_loop_round_trip(loop, rng):
    """ID of FD accelerations (spanning selection) returns the applied efforts."""
    model = robot('linkage_leg')
    q, v, _, _ = loop_state(rng)
    tau_y = rng.normal(size=model.ny)
    qdd = model.forward_dynamics(q, v, tau_y)
    request = InverseDynamics.Request(state=joint_state(model.joint_names, q, v),
                                      acceleration=list(qdd))
    response = call(InverseDynamics, loop, request)
    assert tuple(response.name) == model.independent_joint_names
    assert_close(response.effort, model.inverse_dynamics(q, v, qdd), 'tau_y', RTOL)
    assert_close(response.effort, tau_y, 'tau_y = applied efforts', 1e-8)


def test_inverse_dynamics_floating_base(quadruped, rng):
    model = robot('quadruped_rotors')
    q, y, _ = floating_state(rng)
    ydd = rng.normal(size=model.ny)
    names = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in names]
    request = InverseDynamics.Request(state=joint_state(names, positions, y[6:]),
                                      acceleration=list(ydd[6:]))
    set_pose(request.base_pose, q[:7])
    set_linear_angular(request.base_twist, y[:6])
    set_linear_angular(request.base_acceleration, ydd[:6])
    request.external_wrenches = [link_wrench('trunk', (1, 0, 0), (0, 1, 0))]
    response = call(InverseDynamics, quadruped, request)
    expected = model.inverse_dynamics(q, y, ydd, {'trunk': ((1, 0, 0), (0, 1, 0))})
    assert tuple(response.name) == model.independent_joint_names[1:]
    assert_close(response.effort, expected[6:], 'joint efforts', RTOL)
    assert_close(vector6(response.base_wrench, 'force', 'torque'), expected[:6], 'base wrench',
                 RTOL)


# ---- inverse operational-space inertia ----

@pytest.mark.parametrize('name, links', [('linkage_leg', ['foot', 'shank']),
                                         ('quadruped_rotors', ['FL_foot', 'trunk', 'HR_foot'])])
def test_inverse_operational_space_inertia(rng, name, links):
    model = robot(name)
    q = floating_state(rng)[0] if model.floating_base else loop_state(rng)[0]
    names = [n for n in model.joint_names if n != 'floating_base']
    request = InverseOperationalSpaceInertia.Request(
        state=joint_state(names, [q[model.idx_q[model.joint_names.index(n) + 1]] for n in names]),
        links=links)
    set_pose(request.base_pose, q[:7] if model.floating_base else [0, 0, 0, 0, 0, 0, 1])
    response = call(InverseOperationalSpaceInertia, loaded(name), request)
    assert response.rows == 6 * len(links)
    assert_close(np.reshape(response.matrix, (response.rows, response.rows)),
                 model.inverse_osim(q, links), 'Lambda^-1', RTOL)


# ---- bad requests: ModelError from the handler, success=false with its reason from the
# callback ----

@pytest.mark.parametrize('srv_type, fields, message', BAD_REQUESTS,
                         ids=[m.split(';')[0][:40] for _, _, m in BAD_REQUESTS])
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


def test_bad_base_state(quadruped):
    names = robot('quadruped_rotors').independent_joint_names[1:]
    request = ForwardDynamics.Request(state=joint_state(names, np.zeros(len(names))))
    request.base_twist.angular.y = float('inf')
    with pytest.raises(ModelError,
                       match=r'^base_twist.angular\[y\] is inf; expected finite numbers$'):
        call(ForwardDynamics, quadruped, request)
    request.base_twist.angular.y = 0.0
    request.base_pose.orientation.w = 2.0
    with pytest.raises(ModelError, match=r'quaternion \(qx qy qz qw\) has norm 2'):
        call(ForwardDynamics, quadruped, request)
    request.base_pose.orientation.w = 1.0
    request.state.name[0] = 'floating_base'
    with pytest.raises(ModelError, match=r"^unknown joint\(s\) \['floating_base'\] in state.name"):
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
