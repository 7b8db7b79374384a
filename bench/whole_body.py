"""The whole-body calls (dynamics_node/whole_body.py) next to their Pinocchio counterparts on the
same spanning tree, in one process: centroidal_momentum_matrix / ccrba, centroidal_bias / dccrba
(dAg v) and computeCentroidalMomentumTimeVariation, center_of_mass / centerOfMass,
center_of_mass_jacobian / jacobianCenterOfMass, coriolis_matrix / computeCoriolisMatrix,
kinetic_energy / computeKineticEnergy, potential_energy / computePotentialEnergy, regressor /
computeJointTorqueRegressor, on tree-heavy robots: Solo-12 and Talos (floating base) and UR5 of
example-robot-data, and the bundled quadruped (rotors as bodies, gear couplings; Pinocchio sees
its spanning tree, test/oracle.py).

Usage: .venv/bin/python bench/whole_body.py
"""

import os
import sys

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))
sys.path.append(os.path.join(ROOT, 'test', 'algorithms'))  # after bench/: its whole_body.py

from dynamics_node import bundled_model, load_model  # noqa: E402
from conftest import published_file, random_state  # noqa: E402  (test helpers)
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from test_contacts import published  # noqa: E402  (a published URDF on a floating base)
from timing import interleaved_medians, Report  # noqa: E402

HEADING = 'Whole-body terms against Pinocchio'
ROUNDS, BATCH = 60, 10
ROBOTS = {'Solo-12': lambda: published('solo_description/robots/solo12.urdf', 'base_link'),
          'Talos': lambda: published('talos_data/robots/talos_reduced.urdf', 'base_link'),
          'UR5': lambda: published_file('ur_description/urdf/ur5_robot.urdf'),
          'quadruped_rotors': lambda: bundled_model('quadruped_rotors')}
# (our call, Pinocchio's) per column
PAIRS = (('A_g', 'ccrba'), ('bias', 'dccrba'), ('bias', 'cMTV'), ('CoM', 'centerOfMass'),
         ('J_c', 'jacobianCoM'), ('C_y', 'Coriolis'), ('KE', 'kinetic'), ('PE', 'potential'),
         ('Y_y', 'regressor'))


def calls(name, rng):
    """(nv/ny, {label: callable}) of our public calls and Pinocchio's at one random state."""
    description = ROBOTS[name]()
    model = load_model(description)
    model.warm_up()
    reference = KKTOracle(description)
    reference.set_layout(model.joint_names)
    q, yd, _ = random_state(model, rng)
    ydd = rng.normal(size=model.ny)
    pm, pd = reference.model, reference.data
    qp = reference.q_to_pin(q)
    vp = reference.v_to_pin(model.spanning_velocities(q, yd))
    ap = reference.v_to_pin(model.forward_dynamics(q, yd, model.inverse_dynamics(q, yd, ydd)))
    ours = {'A_g': lambda: model.centroidal_momentum_matrix(q),
            'bias': lambda: model.centroidal_bias(q, yd),
            'CoM': lambda: model.center_of_mass(q),
            'J_c': lambda: model.center_of_mass_jacobian(q),
            'C_y': lambda: model.coriolis_matrix(q, yd),
            'KE': lambda: model.kinetic_energy(q, yd),
            'PE': lambda: model.potential_energy(q),
            'Y_y': lambda: model.regressor(q, yd, ydd)}
    peers = {'ccrba': lambda: pin.ccrba(pm, pd, qp, vp),
             'dccrba': lambda: pin.dccrba(pm, pd, qp, vp),
             'cMTV': lambda: pin.computeCentroidalMomentumTimeVariation(pm, pd, qp, vp, ap),
             'centerOfMass': lambda: pin.centerOfMass(pm, pd, qp),
             'jacobianCoM': lambda: pin.jacobianCenterOfMass(pm, pd, qp),
             'Coriolis': lambda: pin.computeCoriolisMatrix(pm, pd, qp, vp),
             'kinetic': lambda: pin.computeKineticEnergy(pm, pd, qp, vp),
             'potential': lambda: pin.computePotentialEnergy(pm, pd, qp),
             'regressor': lambda: pin.computeJointTorqueRegressor(pm, pd, qp, vp, ap)}
    return f'{model.nv}/{model.ny}', {**ours, **peers}


def table(rng):
    rows = []
    for name in ROBOTS:
        size, timed = calls(name, rng)
        t = interleaved_medians(timed, ROUNDS, BATCH)
        rows.append([name, size] + [f'{t[ours]:.1f} / {t[peer]:.1f} = {t[ours] / t[peer]:.2f}'
                                    for ours, peer in PAIRS])
    return rows


HEADER = ('robot', 'nv/ny') + tuple(f'{ours} / {peer}' for ours, peer in PAIRS)
NOTE = (
    'Median microseconds per call from Python, ours / Pinocchio\'s = ratio, interleaved in one '
    'process at one random closed state per robot. Ours are the public calls (inputs checked, '
    'one compiled call each, a copy of the result): **A_g** centroidal_momentum_matrix, **bias** '
    'centroidal_bias (against dccrba, which also gives A_g and its rate, and '
    'computeCentroidalMomentumTimeVariation, **cMTV**, which gives h_g and its rate), **CoM** '
    'center_of_mass, **J_c** center_of_mass_jacobian, **C_y** coriolis_matrix, **KE** and '
    '**PE** kinetic_energy and potential_energy, **Y_y** regressor. Pinocchio runs on the same '
    'spanning tree (for quadruped_rotors its rotors are bodies and the gear couplings no '
    'constraint of Pinocchio\'s: ours also forms G and projects).')


def report_section(report, heading=HEADING, rng=None):
    report.section(heading, HEADER, table(np.random.default_rng(0) if rng is None else rng), NOTE)


if __name__ == '__main__':
    report_section(Report(HEADING))
