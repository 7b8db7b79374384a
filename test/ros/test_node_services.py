"""The whole-body controller services (~/mass_matrix, ~/bias_forces, ~/link_kinematics,
~/centroidal) and the
Python client's calls of them, over real DDS (loopback only) against node processes serving the
loop robot linkage_leg and the floating quadruped_rotors, started as users start them (see
node_helpers.py). Expected values come from the library in this process at the same state, to 1e-12
relative: the node runs the same code on the same numbers.

The cases (a request and the check of its answer) and the bad requests are defined here once and
also answered by the handlers alone, without DDS, in test_services.py.
"""

import os
import subprocess
import sys

from cluster_dynamics.srv import BiasForces, Centroidal, LinkKinematics, MassMatrix
import numpy as np
import pytest

from conftest import assert_close, program_lines, robot
from dynamics_node import ModelError
from dynamics_node.spatial import quaternion_matrix
from node_helpers import (_loop_request, completed, floating_state, floating_state_request,
                          joint_state, loop_state, NodeProcess, ROOT, serving, vector6)
import node_helpers

ros = node_helpers.ros                  # the fixture: a DDS client on the test domain

# The node's answers against the library called in this process on the same inputs.
RTOL = 1e-12
BASE = ['floating_base.linear.x', 'floating_base.linear.y', 'floating_base.linear.z',
        'floating_base.angular.x', 'floating_base.angular.y', 'floating_base.angular.z']
SERVICE_NAMES = {MassMatrix: 'mass_matrix', BiasForces: 'bias_forces',
                 LinkKinematics: 'link_kinematics', Centroidal: 'centroidal'}
NODE_OF = {'linkage_leg': 'services_loop', 'quadruped_rotors': 'services_floating'}


# ---- requests: the loop's spanning joints reordered (no completion: the node answers at this
# very q), the quadruped's independent joints and base state ----

def loop_request(srv_type, rng, velocities=True):
    """(request of every joint of linkage_leg in another order, q, v) at a random closed
    state."""
    model = robot('linkage_leg')
    q, v, _, _ = loop_state(rng)
    order = [3, 0, 4, 1, 2]
    names = [model.joint_names[i] for i in order]
    request = srv_type.Request(state=joint_state(names, q[order], v[order] if velocities else ()))
    request.base_pose.position.x = float('nan')              # a fixed base ignores it
    return request, q, v


def floating_request(srv_type, rng, velocities=True):
    """(request of the quadruped's independent joints, base pose and twist, q, y)."""
    q, y, _ = floating_state(rng)
    return floating_state_request(srv_type, q, y, velocities=velocities), q, y


def mass_matrix_case(name):
    def case(rng):
        model = robot(name)
        request, q, _ = (floating_request if model.floating_base else loop_request)(
            MassMatrix, rng, velocities=False)
        expected = model.mass_matrix(q)

        def check(response):
            names = ((BASE if model.floating_base else [])
                     + [n for n in model.independent_joint_names if n != 'floating_base'])
            assert list(response.name) == names and len(names) == model.ny
            assert_close(np.reshape(response.matrix, (model.ny, model.ny)), expected, 'H_y', RTOL)
        return MassMatrix, name, request, check
    return case


def bias_forces_case(name, gravity_only):
    def case(rng):
        model = robot(name)
        request, q, v = (floating_request if model.floating_base else loop_request)(
            BiasForces, rng)
        request.gravity_only = gravity_only
        if gravity_only:                                     # velocities ignored, even NaN
            request.state.velocity[0] = float('nan')
            request.base_twist.linear.x = float('nan')
        expected = model.gravity_forces(q) if gravity_only else model.bias_forces(q, v)
        joints = 6 if model.floating_base else 0

        def check(response):
            assert tuple(response.name) == tuple(n for n in model.independent_joint_names
                                                 if n != 'floating_base')
            assert_close(response.effort, expected[joints:], 'efforts', RTOL)
            assert_close(vector6(response.base_wrench, 'force', 'torque'),
                         expected[:6] if joints else np.zeros(6), 'base wrench', RTOL)
        return BiasForces, name, request, check
    return case


def link_kinematics_case(name, links):
    def case(rng):
        model = robot(name)
        request, q, v = (floating_request if model.floating_base else loop_request)(
            LinkKinematics, rng)
        request.links = links
        poses = [model.link_pose(q, link) for link in links]
        jacobians = [model.link_jacobian(q, link) for link in links]
        biases = [model.link_bias_acceleration(q, v, link) for link in links]

        def check(response):
            names = ((BASE if model.floating_base else [])
                     + [n for n in model.independent_joint_names if n != 'floating_base'])
            assert list(response.name) == names
            assert len(response.poses) == len(response.bias_accelerations) == len(links)
            J = np.reshape(response.jacobians, (len(links), 6, model.ny))
            for k, link in enumerate(links):
                pose = response.poses[k]
                o = pose.orientation
                assert_close(quaternion_matrix(o.x, o.y, o.z, o.w), poses[k][0], f'R of {link}',
                             RTOL)
                assert_close(vector6(pose, 'position', 'position')[:3], poses[k][1],
                             f'p of {link}', RTOL)
                assert_close(J[k], jacobians[k], f'J of {link}', RTOL)
                assert_close(vector6(response.bias_accelerations[k], 'linear', 'angular'),
                             biases[k], f'Jdot yd of {link}', RTOL)
        return LinkKinematics, name, request, check
    return case


def centroidal_case(name):
    def case(rng):
        model = robot(name)
        request, q, v = (floating_request if model.floating_base else loop_request)(
            Centroidal, rng)
        com, com_velocity = model.center_of_mass(q, v)

        def check(response):
            names = ((BASE if model.floating_base else [])
                     + [n for n in model.independent_joint_names if n != 'floating_base'])
            assert list(response.name) == names
            assert response.total_mass == model.total_mass
            point, velocity = response.center_of_mass, response.center_of_mass_velocity
            assert_close([point.x, point.y, point.z], com, 'CoM', RTOL)
            assert_close([velocity.x, velocity.y, velocity.z], com_velocity, 'CoM velocity',
                         RTOL)
            assert_close(np.reshape(response.center_of_mass_jacobian, (3, model.ny)),
                         model.center_of_mass_jacobian(q), 'CoM Jacobian', RTOL)
            assert_close(np.reshape(response.centroidal_momentum_matrix, (6, model.ny)),
                         model.centroidal_momentum_matrix(q), 'A_g', RTOL)
            assert_close(response.centroidal_momentum, model.centroidal_momentum(q, v), 'h_g',
                         RTOL)
            assert_close(response.centroidal_bias, model.centroidal_bias(q, v), 'bias', RTOL)
        return Centroidal, name, request, check
    return case


WHOLE_BODY_CASES = {
    'mass_matrix linkage_leg': mass_matrix_case('linkage_leg'),
    'mass_matrix quadruped_rotors': mass_matrix_case('quadruped_rotors'),
    'bias_forces linkage_leg': bias_forces_case('linkage_leg', False),
    'bias_forces linkage_leg gravity_only': bias_forces_case('linkage_leg', True),
    'bias_forces quadruped_rotors': bias_forces_case('quadruped_rotors', False),
    'bias_forces quadruped_rotors gravity_only': bias_forces_case('quadruped_rotors', True),
    'link_kinematics linkage_leg': link_kinematics_case('linkage_leg', ['foot', 'shank']),
    'link_kinematics quadruped_rotors': link_kinematics_case('quadruped_rotors',
                                                             ['FL_foot', 'trunk', 'HR_foot']),
    'link_kinematics no links': link_kinematics_case('linkage_leg', []),
    'link_kinematics every link': link_kinematics_case('quadruped_rotors',
                                                       list(robot('quadruped_rotors').links)),
    'centroidal linkage_leg': centroidal_case('linkage_leg'),
    'centroidal quadruped_rotors': centroidal_case('quadruped_rotors'),
}

WHOLE_BODY_BAD_REQUESTS = [
    # (service type, request fields of a linkage_leg request at LOOP_CLOSED, start of the message)
    (MassMatrix, {'state_name': ['crank_joint'], 'state_position': [0.8]},
     "state.name misses actuated joint(s) ['ankle_joint']: name every actuated joint"),
    (MassMatrix, {'state_position': [0.8, 7.2, -0.9, 0.38, 0.3]},
     "q violates constraint 'knee_linkage_loop' of cluster"),
    (BiasForces, {'state_velocity': [0.0, 0.0, float('nan'), 0.0, 0.0]},
     'state.velocity[coupler_joint] is nan; expected finite numbers'),
    (BiasForces, {'state_velocity': [1.0, 0.0, 0.0, 0.0, 0.0]},
     "v violates the constraints of cluster 'crank'"),
    (LinkKinematics, {'links': ['foot', 'hand' + 'x' * 1000]},
     f"unknown link 'hand{'x' * 76}'... (1004 characters); links are ['base', 'coupler', "
     "'crank', 'foot', 'motor_rotor', 'shank']"),
    (Centroidal, {'state_velocity': [1.0, 0.0, 0.0, 0.0, 0.0]},
     "v violates the constraints of cluster 'crank'"),
    (LinkKinematics, {'links': ['foot'], 'state_velocity': [0.0]},
     'state.velocity has 1 entries; expected 5 (one per state.name) or none'),
    # a request names each link at most once: longer ones are refused before any kinematics
    (LinkKinematics, {'links': ['foot', 'shank'] * 5_000},
     "link 'foot' is named twice in links; name each link once"),
    (LinkKinematics, {'links': ['foot'] + [f'link{i}' for i in range(10_000)]},
     "unknown link 'link0'; links are ['base', 'coupler', 'crank', 'foot', 'motor_rotor', "
     "'shank']"),
]


# ---- over DDS ----

@pytest.fixture(scope='module')
def nodes(ros):
    """Node processes serving linkage_leg and quadruped_rotors."""
    robot('linkage_leg').warm_up()        # fills numba's on-disk cache if it is cold
    started = {ns: NodeProcess(ns, robot_description_file=name) for name, ns in NODE_OF.items()}
    with serving(ros, started):
        yield started


@pytest.mark.parametrize('case', WHOLE_BODY_CASES.values(), ids=list(WHOLE_BODY_CASES))
def test_service_answers_as_the_library(ros, nodes, rng, case):
    srv_type, name, request, check = case(rng)
    response = ros.call(srv_type, f'{nodes[NODE_OF[name]].name}/{SERVICE_NAMES[srv_type]}',
                        request)
    assert response.success, response.message
    check(response)


@pytest.mark.parametrize('srv_type, fields, message', WHOLE_BODY_BAD_REQUESTS,
                         ids=[m.split(';')[0][:40] for _, _, m in WHOLE_BODY_BAD_REQUESTS])
def test_bad_request(ros, nodes, srv_type, fields, message):
    node = nodes[NODE_OF['linkage_leg']].name
    response = ros.call(srv_type, f'{node}/{SERVICE_NAMES[srv_type]}',
                        _loop_request(srv_type, **fields))
    assert not response.success
    assert response.message.startswith(message), response.message
    good = ros.call(MassMatrix, f'{node}/mass_matrix', _loop_request(MassMatrix))
    assert good.success, good.message


def client(ros, nodes, name):
    from dynamics_node.ros.client import DynamicsClient
    return DynamicsClient(nodes[NODE_OF[name]].name, context=ros.node.context)


def test_client_on_the_loop_robot(ros, nodes, rng):
    """Every client call of the new services on linkage_leg, all spanning joints given; the
    answers make the equation of motion H_y ydd + C_y = tau_y of inverse dynamics."""
    model = robot('linkage_leg')
    q, v, yd, _ = loop_state(rng)
    joints, ydd = model.joint_names, rng.normal(size=model.ny)
    with client(ros, nodes, 'linkage_leg') as dynamics:
        H = dynamics.mass_matrix(joints, q)
        bias = dynamics.bias_forces(joints, q, v)
        gravity = dynamics.gravity_forces(joints, q)
        kinematics = dynamics.link_kinematics(joints, q, v, ['foot', 'crank'])
        centroidal = dynamics.centroidal(joints, q, v)
        qdd = model.forward_dynamics(q, v, H.matrix @ ydd + bias.effort)
        tau = dynamics.inverse_dynamics(joints, q, v, qdd)
    assert H.names == bias.names == gravity.names == kinematics.names == tau.names
    assert H.names == model.independent_joint_names == centroidal.names
    assert centroidal.total_mass == model.total_mass
    assert_close(centroidal.momentum_matrix, model.centroidal_momentum_matrix(q), 'A_g', RTOL)
    assert_close(centroidal.momentum, centroidal.momentum_matrix @ yd, 'h_g = A_g yd', 1e-12)
    assert_close(centroidal.bias, model.centroidal_bias(q, v), 'centroidal bias', RTOL)
    assert_close(centroidal.center_of_mass_velocity, centroidal.center_of_mass_jacobian @ yd,
                 'CoM velocity = J_com yd', 1e-12)
    assert_close(H.matrix, model.mass_matrix(q), 'H_y', RTOL)
    assert_close(bias.effort, model.bias_forces(q, yd), 'C_y', RTOL)
    assert_close(gravity.effort, model.gravity_forces(q), 'gravity', RTOL)
    assert_close(bias.base_wrench, np.zeros(6), 'base wrench of a fixed base')
    assert_close(tau.effort, H.matrix @ ydd + bias.effort, 'H_y ydd + C_y', 1e-9)
    assert kinematics.poses.shape == (2, 7) and kinematics.jacobians.shape == (2, 6, model.ny)
    for k, link in enumerate(['foot', 'crank']):
        R, p = model.link_pose(q, link)
        assert_close(quaternion_matrix(*kinematics.poses[k, 3:]), R, f'R of {link}', RTOL)
        assert_close(kinematics.poses[k, :3], p, f'p of {link}', RTOL)
        assert_close(kinematics.jacobians[k], model.link_jacobian(q, link), f'J of {link}', RTOL)
        assert_close(kinematics.bias_accelerations[k], model.link_bias_acceleration(q, v, link),
                     f'Jdot yd of {link}', RTOL)


def test_client_on_the_floating_robot(ros, nodes, rng):
    """The quadruped's independent joints with a base pose and twist: the base's six coordinates
    lead H_y and the Jacobians' columns; bias and gravity forces split into joints and base."""
    model = robot('quadruped_rotors')
    q, y, _ = floating_state(rng)
    joints = model.independent_joint_names[1:]
    positions = [q[model.joint_names.index(n) + 6] for n in joints]
    base = {'base_pose': q[:7], 'base_twist': y[:6]}
    with client(ros, nodes, 'quadruped_rotors') as dynamics:
        H = dynamics.mass_matrix(joints, positions, base_pose=q[:7])
        bias = dynamics.bias_forces(joints, positions, y[6:], **base)
        gravity = dynamics.gravity_forces(joints, positions, base_pose=q[:7])
        kinematics = dynamics.link_kinematics(joints, positions, y[6:], ['FL_foot'], **base)
        centroidal = dynamics.centroidal(joints, positions, y[6:], **base)
    assert H.names == kinematics.names == centroidal.names == tuple(BASE) + joints
    com, com_velocity = model.center_of_mass(q, y)
    assert_close(centroidal.center_of_mass, com, 'CoM', RTOL)
    assert_close(centroidal.center_of_mass_velocity, com_velocity, 'CoM velocity', RTOL)
    assert_close(centroidal.center_of_mass_jacobian, model.center_of_mass_jacobian(q), 'J_com',
                 RTOL)
    assert_close(centroidal.momentum, model.centroidal_momentum(q, y), 'h_g', RTOL)
    assert bias.names == gravity.names == joints
    assert_close(H.matrix, model.mass_matrix(q), 'H_y', RTOL)
    C = model.bias_forces(q, y)
    assert_close(np.concatenate((bias.base_wrench, bias.effort)), C, 'C_y', RTOL)
    assert_close(np.concatenate((gravity.base_wrench, gravity.effort)), model.gravity_forces(q),
                 'gravity', RTOL)
    R, p = model.link_pose(q, 'FL_foot')
    assert_close(quaternion_matrix(*kinematics.poses[0, 3:]), R, 'R of FL_foot', RTOL)
    assert_close(kinematics.poses[0, :3], p, 'p of FL_foot', RTOL)
    assert_close(kinematics.jacobians[0], model.link_jacobian(q, 'FL_foot'), 'J', RTOL)
    assert_close(kinematics.bias_accelerations[0],
                 model.link_bias_acceleration(q, y, 'FL_foot'), 'Jdot yd', RTOL)


def test_client_raises_model_error_with_the_reason(ros, nodes):
    with client(ros, nodes, 'linkage_leg') as dynamics:
        with pytest.raises(ModelError, match=r"^link_kinematics: unknown link 'hand'; links are"):
            dynamics.link_kinematics(['crank_joint', 'ankle_joint'], [0.8, 0.1], [0, 0],
                                     ['hand'])
        with pytest.raises(ModelError, match=r'^v has 1 entries; expected 2$'):
            dynamics.bias_forces(['crank_joint', 'ankle_joint'], [0.8, 0.1], [0])


def test_readme_client_example_runs(nodes):
    """The README's Python client example, run as written against the loop node: its whole-body
    lines print H_y ydd + C_y and a link's acceleration J ydd + Jdot yd as the library computes
    them (its first two lines: test_client.py)."""
    readme = (ROOT / 'README.md').read_text()
    blocks = [b.split('```')[0] for b in readme.split('```python\n')[1:]]
    example = next(b for b in blocks if 'DynamicsClient' in b)
    script = example.replace("'/dynamics_node'", repr(nodes[NODE_OF['linkage_leg']].name))
    run = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                         timeout=60, env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    model = robot('linkage_leg')
    q, yd, ydd = completed('linkage_leg', [0.8, 0.8]), np.full(2, 0.3), np.full(2, 0.5)
    link = model.links[-1]
    tau = model.mass_matrix(q) @ ydd + model.bias_forces(q, yd)
    acceleration = model.link_jacobian(q, link) @ ydd + model.link_bias_acceleration(q, yd, link)
    assert list(program_lines(run.stdout.splitlines()))[2:] == [
        str(dict(zip(model.independent_joint_names, tau.round(3)))),
        str(acceleration.round(3))], run.stdout
