"""The public whole-body calls of Model (whole_body.py) on both engines (compiled and NumPy):
total_mass, inertial_parameters, parameter_bodies, center_of_mass, center_of_mass_jacobian,
centroidal_momentum_matrix, centroidal_momentum, centroidal_bias, coriolis_matrix,
kinetic_energy, potential_energy, regressor, base_parameters and
load_model(inertial_parameters=...).

- Trees (example-robot-data: Solo-12, Talos, UR5): against Pinocchio (ccrba, dccrba,
  computeCentroidalMomentumTimeVariation, centerOfMass, jacobianCenterOfMass,
  computeCoriolisMatrix, computeKineticEnergy, computePotentialEnergy,
  computeJointTorqueRegressor, toDynamicParameters), 1e-9.
- Every bundled robot (loops, couplings, rotors): the calls equal the NumPy algorithms
  (algorithms/centroidal.py, coriolis.py, regressor.py; 1e-12 on the compiled engine) with spanning
  and independent velocities, and the identities A_g yd = h_g, J_c = A_g[:3] / m, c' = J_c yd,
  1/2 yd^T H_y yd = kinetic energy, C_y yd + gravity forces = bias forces,
  Y_y pi = inverse dynamics, 1e-9.
- A robot loaded with other parameters has them, and its dynamics are theirs; base parameters.
- Bad inputs raise ModelError naming them, the same on both engines.
"""

import functools

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, ROBOTS
from dynamics_node import bundled_model, load_model, ModelError
from dynamics_node.algorithms import centroidal
from dynamics_node.algorithms.coriolis import coriolis_matrix
from dynamics_node.algorithms.regressor import inertial_parameters, regressor
from test_centroidal import pinocchio_terms
from test_coriolis import pinocchio_coriolis
from test_regressor import pinocchio_regressor
from urdf_text import joint, link, robot
from whole_body import data, state, tree, TREES

ENGINES = (True, False)
RTOL = 1e-9             # against Pinocchio and the identities
TWIN_RTOL = 1e-12       # against the NumPy algorithms


@functools.lru_cache(maxsize=None)
def published(name, compiled):
    """(model on the engine, the Pinocchio oracle) of a published tree."""
    model, reference = tree(name)
    return (load_model(TREES[name](), compiled=True) if compiled else model), reference


@functools.lru_cache(maxsize=None)
def bundled(name, compiled):
    return load_model(bundled_model(name), compiled=compiled)


def spanning(model, q, yd):
    return model.spanning_velocities(q, yd)


@pytest.mark.parametrize('compiled', ENGINES)
@pytest.mark.parametrize('name', TREES)
def test_trees_match_pinocchio(name, compiled, rng):
    model, reference = published(name, compiled)
    pm, pd = reference.model, reference.data
    expected = np.concatenate([pm.inertias[pm.getJointId(joint)].toDynamicParameters()
                               for joint in model.parameter_bodies])
    assert_close(model.inertial_parameters, expected, 'inertial_parameters', RTOL)
    for _ in range(2):
        q, yd, ydd = state(model, rng)
        A, h, rate, c, c_dot, J, mass = pinocchio_terms(reference, q, yd, np.zeros(model.nv))
        assert_close(model.total_mass, mass, 'total_mass', RTOL)
        assert_close(model.centroidal_momentum_matrix(q), A, 'A_g (ccrba)', RTOL)
        assert_close(model.centroidal_momentum(q, yd), h, 'h_g', RTOL)
        assert_close(model.centroidal_bias(q, yd), rate, 'bias (dh_g at a = 0)', RTOL)
        assert_close(model.center_of_mass(q), c, 'centerOfMass', RTOL)
        assert_close(model.center_of_mass(q, yd)[1], c_dot, 'vcom', RTOL)
        assert_close(model.center_of_mass_jacobian(q), J, 'jacobianCenterOfMass', RTOL)
        qp, vp = reference.q_to_pin(q), reference.v_to_pin(yd)
        assert_close(model.kinetic_energy(q, yd), pin.computeKineticEnergy(pm, pd, qp, vp),
                     'computeKineticEnergy', RTOL)
        assert_close(model.potential_energy(q), pin.computePotentialEnergy(pm, pd, qp),
                     'computePotentialEnergy', RTOL)
        assert_close(model.coriolis_matrix(q, yd), pinocchio_coriolis(reference, q, yd),
                     'computeCoriolisMatrix', RTOL)
        assert_close(model.regressor(q, yd, ydd),
                     pinocchio_regressor(model, reference, q, yd, ydd),
                     'computeJointTorqueRegressor', RTOL)


@pytest.mark.parametrize('compiled', ENGINES)
@pytest.mark.parametrize('name', ROBOTS)
def test_calls_equal_the_algorithms(name, compiled, rng):
    """Each call equals the NumPy algorithm at the same state, with independent and spanning
    velocities (and accelerations G ydd + g)."""
    model, reference = bundled(name, compiled), bundled(name, False)
    work = data(reference)
    rtol = TWIN_RTOL if compiled else 0.0
    assert model.parameter_bodies == model.joint_names
    assert_close(model.total_mass, centroidal.total_mass(reference), 'total_mass', 0.0)
    assert_close(model.inertial_parameters, inertial_parameters(reference), 'parameters', 0.0)
    for _ in range(2):
        q, yd, ydd = state(model, rng)
        qd = spanning(model, q, yd)
        qdd = model.forward_dynamics(q, yd, model.inverse_dynamics(q, yd, ydd))
        A, c = centroidal.centroidal_momentum_matrix(reference, work, q)
        bias, h, _ = centroidal.centroidal_bias(reference, work, q, yd)
        expected = {
            'A_g': (model.centroidal_momentum_matrix(q), A),
            'CoM': (model.center_of_mass(q), c),
            'J_c': (model.center_of_mass_jacobian(q),
                    centroidal.center_of_mass_jacobian(reference, work, q)),
            'potential': (model.potential_energy(q),
                          centroidal.potential_energy(reference, work, q))}
        for v in (yd, qd):
            expected.update({
                f'h_g {v.size}': (model.centroidal_momentum(q, v), h),
                f'bias {v.size}': (model.centroidal_bias(q, v), bias),
                f'CoM {v.size}': (model.center_of_mass(q, v)[0], c),
                f'kinetic {v.size}': (model.kinetic_energy(q, v),
                                      centroidal.kinetic_energy(reference, work, q, yd)),
                f'C_y {v.size}': (model.coriolis_matrix(q, v),
                                  coriolis_matrix(reference, work, q, yd))})
        expected['Y_y'] = (model.regressor(q, yd, ydd), regressor(reference, work, q, yd, ydd))
        expected['Y_y spanning'] = (model.regressor(q, qd, qdd), regressor(
            reference, work, q, yd, qdd[model.independent_v]))
        for what, (actual, value) in expected.items():
            assert_close(actual, value, what, rtol)


@pytest.mark.parametrize('compiled', ENGINES)
@pytest.mark.parametrize('name', ROBOTS)
def test_identities(name, compiled, rng):
    model = bundled(name, compiled)
    for _ in range(2):
        q, yd, ydd = state(model, rng)
        A, mass = model.centroidal_momentum_matrix(q), model.total_mass
        assert_close(A @ yd, model.centroidal_momentum(q, yd), 'A_g yd = h_g', RTOL)
        J = model.center_of_mass_jacobian(q)
        assert_close(J, A[:3] / mass, 'J_c = A_g[:3] / m', RTOL)
        assert_close(model.center_of_mass(q, yd)[1], J @ yd, "c' = J_c yd", RTOL)
        assert_close(model.kinetic_energy(q, yd), 0.5 * yd @ model.mass_matrix(q) @ yd,
                     'kinetic energy', RTOL)
        assert_close(model.coriolis_matrix(q, yd) @ yd + model.gravity_forces(q),
                     model.bias_forces(q, yd), 'C_y yd + gravity = bias', RTOL)
        assert_close(model.regressor(q, yd, ydd) @ model.inertial_parameters,
                     model.inverse_dynamics(q, yd, ydd), 'Y_y pi = inverse dynamics', RTOL)


@pytest.mark.parametrize('compiled', ENGINES)
@pytest.mark.parametrize('name', ('linkage_leg', 'quadruped_rotors', 'ambidex_wrist',
                                  'geared_chain'))
def test_other_parameters(name, compiled, rng):
    """load_model(inertial_parameters=pi): the same structure with pi, its dynamics linear in
    pi (regressor of the original robot times pi)."""
    model = bundled(name, compiled)
    scale = np.repeat(rng.uniform(0.5, 2.0, model.nb - 1), 10)
    pi = model.inertial_parameters * scale                 # every body scaled: still physical
    other = load_model(bundled_model(name), compiled=compiled, inertial_parameters=pi)
    assert other.joint_names == model.joint_names and other.ny == model.ny
    assert_close(other.inertial_parameters, pi, 'inertial_parameters', RTOL)
    q, yd, ydd = state(model, rng)
    assert_close(other.inverse_dynamics(q, yd, ydd), model.regressor(q, yd, ydd) @ pi,
                 'inverse dynamics of pi', RTOL)
    assert_close(other.total_mass, sum(pi[::10]), 'total_mass', RTOL)


@pytest.mark.parametrize('compiled', ENGINES)
def test_base_parameters(compiled, rng):
    """The rank and kept columns from random states equal those from given states, and the
    base parameters reproduce the torques of a state outside the stack."""
    model = bundled('linkage_leg', compiled)
    drawn = model.base_parameters(seed=1)
    states = [state(model, rng) for _ in range(2 * drawn.B.shape[1] // model.ny + 1)]
    given = model.base_parameters(states)
    assert (drawn.rank, list(drawn.kept)) == (given.rank, list(given.kept))
    q, yd, ydd = state(model, rng)
    Y = model.regressor(q, yd, ydd)
    assert_close(Y[:, drawn.kept] @ (drawn.B @ model.inertial_parameters),
                 model.inverse_dynamics(q, yd, ydd), 'W_kept beta', RTOL)


LOCKED = robot(link('base', ''), link('crank'), link('a'), link('b'),
               joint('crank_joint', 'base', 'crank', origin='0 0 0'),
               joint('a_joint', 'crank', 'a', attributes='independent="false"', origin='0.3 0 0'),
               joint('b_joint', 'crank', 'b', attributes='independent="false"',
                     origin='0.3 0.5 0'),
               '<loop name="lock" type="revolute"><predecessor link="a"><origin xyz="0.2 0.3 0"/>'
               '</predecessor><successor link="b"><origin xyz="0.2 -0.2 0"/></successor>'
               '<axis xyz="0 0 1"/></loop>')


@pytest.mark.parametrize('compiled', ENGINES)
def test_a_locked_loop(compiled, rng):
    """Two links pinned to one body and to each other: their cluster has no independent
    coordinate, no column in C_y (a case the description fuzz found)."""
    model = load_model(LOCKED, compiled=compiled)
    assert model.ny == 1
    q, yd, ydd = state(model, rng)
    assert_close(model.coriolis_matrix(q, yd) @ yd + model.gravity_forces(q),
                 model.bias_forces(q, yd), 'C_y yd + gravity = bias', RTOL)
    assert_close(model.regressor(q, yd, ydd) @ model.inertial_parameters,
                 model.inverse_dynamics(q, yd, ydd), 'Y_y pi = inverse dynamics', RTOL)


BAD_CALLS = [
    (lambda m, q, v: m.center_of_mass(q[:-1]), r'^q has \d+ entries; expected \d+ \(spanning '
     r'positions\)$'),
    (lambda m, q, v: m.center_of_mass(q, v[:-1]), r'^v has \d+ entries; expected'),
    (lambda m, q, v: m.centroidal_momentum_matrix(np.full_like(q, np.nan)),
     r'^q\[0\] is nan; expected finite numbers'),
    (lambda m, q, v: m.center_of_mass_jacobian('abc'), r'^q must be a vector of real numbers'),
    (lambda m, q, v: m.centroidal_bias(q, [1e7] + list(v[1:])), r'^v\[0\] is 1e\+07'),
    (lambda m, q, v: m.coriolis_matrix(q, None), r'^v must be a vector of real numbers'),
    (lambda m, q, v: m.kinetic_energy(q + 0.3, v), r'^q violates constraint'),
    (lambda m, q, v: m.potential_energy(q + 0.3), r'^q violates constraint'),
    (lambda m, q, v: m.regressor(q, v, np.ones(m.nv)), r'^a violates the constraints'),
    (lambda m, q, v: m.centroidal_momentum(q, np.ones(m.nv)),
     r'^v violates the constraints of cluster'),
    (lambda m, q, v: m.base_parameters([(q, v)]), r'^states\[0\] is .*; expected \(q, v, a\)$'),
    (lambda m, q, v: m.base_parameters(samples=0), r'^samples is 0; expected an integer'),
]


@pytest.mark.parametrize('compiled', ENGINES)
@pytest.mark.parametrize('index', range(len(BAD_CALLS)))
def test_bad_inputs_are_named(index, compiled, rng):
    """The same message on both engines; a good call afterwards is unchanged."""
    model = bundled('linkage_leg', compiled)
    q, yd, _ = state(model, rng)
    before = model.centroidal_bias(q, yd)
    call, pattern = BAD_CALLS[index]
    with pytest.raises(ModelError, match=pattern):
        call(model, q, yd)
    assert_close(model.centroidal_bias(q, yd), before, 'after a refused call', 0.0)


BAD_PARAMETERS = [
    (lambda pi: pi[:-1], r'^inertial_parameters has \d+ entries; expected \d+ \(10 per body'),
    (lambda pi: np.where(np.arange(pi.size) == 3, np.nan, pi), r'^inertial_parameters\[3\] is '
     r'nan'),
    (lambda pi: np.where(np.arange(pi.size) == 0, -1.0, pi), r"^inertial_parameters\[0:10\] "
     r"\(body '[^']+'\): the mass is -1; expected a non-negative mass$"),
    (lambda pi: np.where(np.arange(pi.size) == 4, 100.0, pi), r'triangle inequality'),
    (lambda pi: np.where(np.arange(pi.size) == 4, -1.0, pi), r'principal moments'),
]


@pytest.mark.parametrize('index', range(len(BAD_PARAMETERS)))
def test_bad_parameters_are_named(index):
    model = bundled('linkage_leg', False)
    change, pattern = BAD_PARAMETERS[index]
    with pytest.raises(ModelError, match=pattern):
        load_model(bundled_model('linkage_leg'), compiled=False,
                   inertial_parameters=change(model.inertial_parameters.copy()))
