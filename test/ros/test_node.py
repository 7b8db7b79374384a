"""End-to-end tests of the dynamics node over real DDS (loopback only).

Each node runs in its own process, started as users start it: the .venv/bin/dynamics_node console
script with the shipped config/dynamics_node.yaml and -p overrides. The test process is the client,
with an rclpy Context of its own. Expected values come from the library in this process: every
service on the loop model linkage_leg (a four-bar knee with a geared rotor) and on the
floating-base quadruped_rotors; the torque stream; every kind of bad request; hot reload of the
description through the parameter and the topic.

The 500 Hz stream test runs the node as `make run` does (config/dynamics_node.yaml with the
bundled quadruped_rotors). Partial messages, modes, drops, stale input, the completed joint states
and the effort commands are tested on linkage_leg, where the dependent joints are completed through
the loop. The nodes run with stream.max_age 3600 s (an integer given with -p), so that inputs
stamped from the wall clock at the start of the module (up to 200 s ahead of it) are never stale
unless a test makes them so on purpose. No test measures a time against a budget: waits for a
response end at TIMEOUT, an ample bound that only a hang reaches.
"""
import re

from cluster_dynamics.srv import (DescribeModel, ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia)
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest

from conftest import assert_close, robot
from dynamics_node import bundled_extended_urdf, load_model
from dynamics_node.errors import quote
from node_helpers import (bad_base_states, BAD_REQUESTS, collect, completed, joint_state, layout_v,
                          _loop_request, NODE_OF, node_values, ROOT, RTOL, service, SERVICE_CASES,
                          SERVICE_NAMES, set_parameters)
from node_helpers import nodes, ros  # noqa: F401 - fixtures


# ---- services ----

def test_spherical_joint_is_completed_by_the_node(ros, nodes, rng):  # noqa: F811
    """parallel_ankle_leg: the rod's spherical joint is no JointState joint; a request of every
    other joint gets it from the loops and answers as the library does (forward and inverse
    dynamics)."""
    model = robot('parallel_ankle_leg')
    names = [n for n in model.joint_names if n != 'rod_l_ball']
    response = ros.call(DescribeModel, service(nodes, 'ankle', 'describe_model'))
    assert response.success and tuple(response.joint_names) == model.joint_names
    q = completed('parallel_ankle_leg', [0.3, -0.5, 0.2, -0.1])
    yd, tau_y = rng.normal(size=model.ny), rng.normal(size=model.ny)
    v, index = model.spanning_velocities(q, yd), [model.joint_names.index(n) for n in names]
    q_of = [model.idx_q[i + 1] for i in index]
    v_of = [model.idx_v[i + 1] for i in index]
    independent = list(model.independent_joint_names)
    tau = np.zeros(model.nv)
    tau[[model.idx_v[model.joint_names.index(n) + 1] for n in independent]] = tau_y
    request = ForwardDynamics.Request(state=joint_state(names, q[q_of], v[v_of], tau[v_of]))
    answer = ros.call(ForwardDynamics, service(nodes, 'ankle', 'forward_dynamics'), request)
    assert answer.success, answer.message
    assert tuple(answer.name) == tuple(names)
    assert_close(answer.acceleration, model.forward_dynamics(q, yd, tau)[v_of], 'qdd', RTOL)
    ydd = rng.normal(size=model.ny)
    request = InverseDynamics.Request(
        state=joint_state(independent,
                          q[[model.idx_q[model.joint_names.index(n) + 1] for n in independent]],
                          yd),
        acceleration=[float(x) for x in ydd])
    answer = ros.call(InverseDynamics, service(nodes, 'ankle', 'inverse_dynamics'), request)
    assert answer.success, answer.message
    assert_close(answer.effort, model.inverse_dynamics(q, yd, ydd), 'tau_y', RTOL)


# ---- bad requests: success=false with a precise message, and the node keeps serving ----


@pytest.mark.parametrize('srv_type, fields, message', BAD_REQUESTS,
                         ids=[m.split(';')[0][:40] for _, _, m in BAD_REQUESTS])
def test_bad_request(ros, nodes, srv_type, fields, message):  # noqa: F811
    name = {ForwardDynamics: 'forward_dynamics', InverseDynamics: 'inverse_dynamics',
            InverseOperationalSpaceInertia: 'inverse_operational_space_inertia'}[srv_type]
    response = ros.call(srv_type, service(nodes, 'loop', name), _loop_request(srv_type, **fields))
    assert not response.success
    assert response.message.startswith(message), response.message
    good = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'),
                    _loop_request(ForwardDynamics))
    assert good.success, good.message


# ---- service cases: a request and the check of its answer against the library, each answered
# over DDS here (test_service_answers_as_the_library) and by the handler alone in
# test_services.py ----


@pytest.mark.parametrize('case', SERVICE_CASES.values(), ids=list(SERVICE_CASES))
def test_service_answers_as_the_library(ros, nodes, rng, case):  # noqa: F811
    srv_type, name, request, check = case(rng)
    response = ros.call(srv_type, service(nodes, NODE_OF[name], SERVICE_NAMES[srv_type]), request)
    assert response.success, response.message
    check(response)


def test_bad_base_state(ros, nodes):  # noqa: F811
    for request, pattern in bad_base_states():
        response = ros.call(ForwardDynamics, service(nodes, 'floating', 'forward_dynamics'),
                            request)
        assert not response.success
        assert re.search(pattern, response.message), response.message


# ---- hot reload ----


# ---- torque stream ----


# ---- control-grade stream and bad input that must not poison ----


# ---- Extended URDF robots ----

def test_extended_urdf_through_closures_file(ros, nodes):  # noqa: F811
    """robot_description_file + closures_file serve an Extended URDF pair; closures that do not
    load are rejected and the served model stays; clearing them returns to linkage_leg."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    process, describe = nodes['loop'], service(nodes, 'loop', 'describe_model')
    try:
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=str(ROOT / 'package.xml'))
        assert not result.successful
        assert result.reason.startswith("closures: the YAML is '<?xml"), result.reason
        assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, describe)
        model = load_model(urdf, closures=closures)
        assert response.robot_name == 'rod_knee_leg'
        assert response.description_source == (f'robot_description_file {quote(urdf)} with '
                                               f'closures_file {quote(closures)}')
        assert tuple(response.independent_joint_names) == model.independent_joint_names
        assert ([tuple(c.constraints) for c in response.clusters]
                == [c.constraints for c in model.clusters])
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg',
                                  closures_file='')
    assert restored.successful, restored.reason
    assert ros.call(DescribeModel, describe).robot_name == 'linkage_leg'


def test_idle_rod_spins_are_served(ros, nodes, rng):  # noqa: F811
    """The Digit-like ankle of two rods with ball joints at both ends (test/models): each rod's
    top ball joint is split, an independent name whose value is its spin rate; its position is
    ignored."""
    ankle = ROOT / 'test' / 'models' / 'ball_rod_ankle_leg'
    urdf, closures = str(ankle.with_suffix('.urdf')), str(ankle.with_suffix('.yaml'))
    model = load_model(urdf, closures=closures)
    process = nodes['loop']
    try:
        result = set_parameters(ros, process.name, robot_description_file=urdf,
                                closures_file=closures)
        assert result.successful, result.reason
        response = ros.call(DescribeModel, service(nodes, 'loop', 'describe_model'))
        assert tuple(response.independent_joint_names) == model.independent_joint_names
        assert ([tuple(c.independent_joints) for c in response.clusters]
                == [c.independent_joints for c in model.clusters])
        names = model.independent_joint_names                 # rod_l_top and rod_r_top: the spins
        positions = [0.2, -0.7, 0.4, 99.0, -0.3, 99.0]  # the split joints' positions are ignored
        y, ydd, tau = (rng.normal(size=model.ny) for _ in range(3))
        q = model.complete_positions([0.2, -0.7, 0.4, -0.3])  # a fresh model, as the node's
        request = InverseDynamics.Request(state=joint_state(names, positions, y),
                                          acceleration=list(ydd))
        response = ros.call(InverseDynamics, service(nodes, 'loop', 'inverse_dynamics'), request)
        assert response.success, response.message
        assert tuple(response.name) == names
        assert_close(response.effort, model.inverse_dynamics(q, y, ydd), 'tau_y', RTOL)
        request = ForwardDynamics.Request(state=joint_state(names, positions, y, tau))
        response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
        assert response.success, response.message
        assert_close(response.acceleration, model.forward_dynamics(q, y, tau)[layout_v(model)],
                     'qdd', RTOL)
    finally:
        restored = set_parameters(ros, process.name, robot_description_file='linkage_leg',
                                  closures_file='')
    assert restored.successful, restored.reason


def test_messages_quote_at_most_80_characters_of_an_input(ros, nodes):  # noqa: F811
    """A huge input never comes back whole in a reason or in /diagnostics."""
    process = nodes['loop']
    huge = 'x' * 1_000_000
    result = set_parameters(ros, process.name, robot_description=huge)
    assert not result.successful
    assert result.reason.startswith('robot_description is not XML') and len(result.reason) < 500
    assert 'x' * 81 not in result.reason
    request = _loop_request(ForwardDynamics, state_name=['crank_joint', huge],
                            state_position=[0.8, 0.1])
    response = ros.call(ForwardDynamics, service(nodes, 'loop', 'forward_dynamics'), request)
    assert not response.success and len(response.message) <= 400, len(response.message)
    with collect(ros, '/diagnostics', DiagnosticArray, 10) as diagnostics:
        assert ros.spin_until(lambda: node_values(diagnostics, process.name))
    assert all(len(v) <= 400 for v in node_values(diagnostics, process.name).values())
