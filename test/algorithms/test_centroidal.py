"""Centroidal dynamics (algorithms/centroidal.py and its compiled twin kernels/centroidal.py)
against independent references.

- Trees (example-robot-data: Solo-12 and Talos on a floating base, UR5 on a fixed one): Pinocchio's
  ccrba (A_g, h_g), dccrba (Adot_g v, the bias at zero acceleration), centerOfMass (position,
  velocity, total mass), jacobianCenterOfMass, computeKineticEnergy and computePotentialEnergy.
- Every bundled robot (loops, couplings, rotors): A_g = Pinocchio's A_g G on the spanning tree
  (G the oracle's), the bias against Pinocchio's dh_g at v = G yd, a = g (the oracle's loop bias),
  A_g ydd + bias = dh_g/dt and J_c yd = dc/dt by central differences along completed motions.
- The compiled kernels agree with the NumPy algorithms to 1e-12.
"""

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, ROBOTS
from dynamics_node.algorithms import centroidal
from dynamics_node.kernels import centroidal as kernels
from whole_body import (bundled, compiled, data, FD_RTOL, Motion, spanning_G, state, tree,
                        TREES)

STATES = 3
RTOL = 1e-9             # against Pinocchio
TWIN_RTOL = 1e-12       # compiled against NumPy: the same sums in another order


def pinocchio_terms(reference, q, v, a):
    """(A_g, h_g, dh_g/dt, c, c', J_c, m) of Pinocchio on the spanning tree, in the model's
    velocity layout ([linear; angular] about the CoM)."""
    model, pdata = reference.model, reference.data
    qp, vp, ap = reference.q_to_pin(q), reference.v_to_pin(v), reference.v_to_pin(a)
    A = reference.cols_from_pin(pin.ccrba(model, pdata, qp, vp))
    pin.computeCentroidalMomentumTimeVariation(model, pdata, qp, vp, ap)
    h, rate = pdata.hg.vector.copy(), pdata.dhg.vector.copy()
    c = pin.centerOfMass(model, pdata, qp, vp).copy()
    c_dot = pdata.vcom[0].copy()
    J = reference.cols_from_pin(pin.jacobianCenterOfMass(model, pdata, qp))
    return A, h, rate, c, c_dot, J, pdata.mass[0]


def numpy_terms(model, q, yd):
    """The NumPy algorithms' (A_g, h_g, bias, c, J_c, m, kinetic, potential)."""
    work = data(model)
    A, c = centroidal.centroidal_momentum_matrix(model, work, q)
    bias, h, c_bias = centroidal.centroidal_bias(model, work, q, yd)
    assert_close(c_bias, c, 'the CoM of centroidal_bias', TWIN_RTOL)
    assert_close(centroidal.center_of_mass(model, work, q), c, 'center_of_mass', TWIN_RTOL)
    return (A, h, bias, c, centroidal.center_of_mass_jacobian(model, work, q),
            centroidal.total_mass(model), centroidal.kinetic_energy(model, work, q, yd),
            centroidal.potential_energy(model, work, q))


def compiled_terms(model, q, yd):
    """The kernels' terms, in the order of numpy_terms."""
    run = compiled(model)
    w = kernels.CentroidalWorkspace(run.flat)
    run.call(kernels.centroidal_momentum_matrix, q, w.A, w.com)
    A, c = w.A.copy(), w.com.copy()
    run.call(kernels.center_of_mass_jacobian, q, w.com, w.J)
    run.call(kernels.centroidal_bias, q, yd, w.bias, w.momentum, w.com)
    assert_close(w.com, c, 'the CoM of centroidal_bias (compiled)', TWIN_RTOL)
    run.call(kernels.center_of_mass, q, w.com)
    assert_close(w.com, c, 'center_of_mass (compiled)', TWIN_RTOL)
    run.call(kernels.kinetic_energy, q, yd, w.energy)
    kinetic = w.energy[0]
    run.call(kernels.potential_energy, q, w.energy)
    return (A, w.momentum.copy(), w.bias.copy(), c, w.J.copy(), centroidal.total_mass(model),
            kinetic, w.energy[0])


NAMES = ('A_g', 'h_g', 'centroidal bias', 'CoM', 'CoM Jacobian', 'total mass', 'kinetic energy',
         'potential energy')


def check_twins(model, q, yd):
    """The compiled terms equal the NumPy ones; returns the NumPy ones."""
    expected = numpy_terms(model, q, yd)
    for name, actual, value in zip(NAMES, compiled_terms(model, q, yd), expected):
        assert_close(actual, value, f'{name} (compiled)', TWIN_RTOL)
    return expected


@pytest.mark.parametrize('name', TREES)
def test_trees_match_pinocchio(name, rng):
    model, reference = tree(name)
    for _ in range(STATES):
        q, yd, _ = state(model, rng)
        A, h, bias, c, J, mass, kinetic, potential = check_twins(model, q, yd)
        A_p, h_p, rate_p, c_p, c_dot_p, J_p, mass_p = pinocchio_terms(reference, q, yd,
                                                                      np.zeros(model.nv))
        assert_close(A, A_p, 'A_g (ccrba)')
        assert_close(h, h_p, 'h_g (ccrba)')
        assert_close(A @ yd, h_p, 'A_g yd')
        assert_close(bias, rate_p, 'Adot_g yd (dccrba at a = 0)')
        dAg = reference.cols_from_pin(pin.dccrba(reference.model, reference.data,
                                                 reference.q_to_pin(q), reference.v_to_pin(yd)))
        assert_close(bias, dAg @ yd, 'Adot_g yd (dccrba)')
        assert_close(c, c_p, 'CoM (centerOfMass)')
        assert_close(h[:3] / mass, c_dot_p, 'CoM velocity')
        assert_close(J, J_p, 'CoM Jacobian (jacobianCenterOfMass)')
        assert_close(mass, mass_p, 'total mass')
        qp, vp = reference.q_to_pin(q), reference.v_to_pin(yd)
        assert_close(kinetic, pin.computeKineticEnergy(reference.model, reference.data, qp, vp),
                     'kinetic energy')
        assert_close(potential, pin.computePotentialEnergy(reference.model, reference.data, qp),
                     'potential energy')


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_match_pinocchio_on_the_spanning_tree(name, rng):
    model, reference = bundled(name)
    for _ in range(STATES):
        q, yd, _ = state(model, rng)
        A, h, bias, c, J, mass, kinetic, potential = check_twins(model, q, yd)
        G = spanning_G(model, reference, q)
        v = G @ yd
        g = reference.explicit_bias_g(q, v, model.independent_v)
        A_p, h_p, rate_p, c_p, c_dot_p, J_p, mass_p = pinocchio_terms(reference, q, v, g)
        assert_close(A, A_p @ G, 'A_g = A_g(spanning) G')
        assert_close(h, h_p, 'h_g')
        assert_close(bias, rate_p, 'centroidal bias = dh_g at v = G yd, a = g')
        assert_close(c, c_p, 'CoM')
        assert_close(J, J_p @ G, 'CoM Jacobian')
        assert_close(mass, mass_p, 'total mass')
        assert_close(kinetic, reference.kinetic_energy(q, v), 'kinetic energy')
        assert_close(potential, reference.potential_energy(q), 'potential energy')


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_match_central_differences(name, rng):
    """A_g ydd + bias = dh_g/dt and J_c yd = dc/dt along completed motions."""
    model, reference = bundled(name)
    work = data(model)

    def momentum(q, yd):
        return centroidal.centroidal_momentum_matrix(model, work, q)[0] @ yd

    for _ in range(STATES):
        motion = Motion(model, reference, rng)
        q = motion.q(0.0)
        A, _ = centroidal.centroidal_momentum_matrix(model, work, q)
        bias, _, _ = centroidal.centroidal_bias(model, work, q, motion.yd)
        assert_close(A @ motion.ydd + bias, motion.rate(momentum), 'A_g ydd + bias = dh_g/dt',
                     FD_RTOL)
        J = centroidal.center_of_mass_jacobian(model, work, q)
        assert_close(J @ motion.yd,
                     motion.rate(lambda q, _: centroidal.center_of_mass(model, work, q)),
                     'J_c yd = dc/dt', FD_RTOL)


def test_a_loop_bias_carries_g():
    """On linkage_leg the bias at ydd = 0 is not the open chain's: the loops' g enters."""
    model, reference = bundled('linkage_leg')
    q = model.complete_positions([0.8, 0.0])
    yd = np.array([1.0, 0.0])
    G = spanning_G(model, reference, q)
    _, _, open_chain, _, _, _, _ = pinocchio_terms(reference, q, G @ yd, np.zeros(model.nv))
    bias, _, _ = centroidal.centroidal_bias(model, data(model), q, yd)
    assert np.max(np.abs(bias - open_chain)) > 1e-2
