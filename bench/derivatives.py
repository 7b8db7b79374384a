"""The derivative calls (dynamics_node/derivatives.py) next to Pinocchio's on the same spanning
tree and next to central differences of our own calls, in one process:
inverse_dynamics_derivatives / computeRNEADerivatives, forward_dynamics_derivatives /
computeABADerivatives, on the trees of example-robot-data (Solo-12 and Talos on a floating base,
UR5) and the bundled quadruped (its rotors bodies of Pinocchio's spanning tree); on every bundled
robot with loops, against one forward_dynamics call and against the 2 ny calls of central
differences of forward_dynamics (positions moved through complete_positions).

Usage: .venv/bin/python bench/derivatives.py
"""

import os
import sys

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))
sys.path.append(os.path.join(ROOT, 'test', 'algorithms'))

from dynamics_node import bundled_model, bundled_models, load_model  # noqa: E402
from conftest import published_file, random_state  # noqa: E402  (test helpers)
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from test_contacts import (held_state, published,  # noqa: E402
                           random_state as contacts_state, setup as contacts_setup)
from timing import interleaved_medians, Report  # noqa: E402

HEADING = 'Derivatives'
ROUNDS, BATCH = 20, 3
TREES = {'Solo-12': lambda: published('solo_description/robots/solo12.urdf', 'base_link'),
         'Talos': lambda: published('talos_data/robots/talos_reduced.urdf', 'base_link'),
         'UR5': lambda: published_file('ur_description/urdf/ur5_robot.urdf'),
         'quadruped_rotors': lambda: bundled_model('quadruped_rotors')}
TREE_HEADER = ('robot', 'nv/ny', 'ID derivatives / computeRNEADerivatives',
               'FD derivatives / computeABADerivatives')


def tree_row(name, rng):
    description = TREES[name]()
    model = load_model(description)
    model.warm_up()
    reference = KKTOracle(description)
    reference.set_layout(model.joint_names)
    q, yd, _ = random_state(model, rng)
    ydd, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    pm, pd = reference.model, reference.data
    qp = reference.q_to_pin(q)
    vp = reference.v_to_pin(model.spanning_velocities(q, yd))
    ap = reference.v_to_pin(model.forward_dynamics(q, yd, model.inverse_dynamics(q, yd, ydd)))
    taup = reference.v_to_pin(model.spanning_velocities(q, tau)) if model.ny == model.nv else \
        reference.v_to_pin(np.linalg.lstsq(np.eye(model.nv)[:, model.independent_v].T, tau,
                                           rcond=None)[0])
    t = interleaved_medians({
        'ID': lambda: model.inverse_dynamics_derivatives(q, yd, ydd),
        'FD': lambda: model.forward_dynamics_derivatives(q, yd, tau),
        'rnea': lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap),
        'aba': lambda: pin.computeABADerivatives(pm, pd, qp, vp, taup)}, ROUNDS, BATCH)
    return [name, f'{model.nv}/{model.ny}', f'{t["ID"]:.0f} / {t["rnea"]:.1f} = '
            f'{t["ID"] / t["rnea"]:.2f}', f'{t["FD"]:.0f} / {t["aba"]:.1f} = '
            f'{t["FD"] / t["aba"]:.2f}']


LOOP_HEADER = ('robot', 'nv/ny', 'FD derivatives', 'forward_dynamics', 'ratio',
               'central differences', 'ratio')


def loop_row(name, rng):
    model = load_model(bundled_model(name))
    model.warm_up()
    q, yd, _ = random_state(model, rng)
    tau = rng.normal(size=model.ny)
    y0, h = q[model.independent_q], 1e-6
    positioned = min(len(y0), model.ny)

    def central_differences():
        """2 ny forward_dynamics calls (and the positioned coordinates' completions)."""
        for l in range(positioned):
            for sign in (1.0, -1.0):
                y = y0.copy()
                y[l] += sign * h
                model.forward_dynamics(model.complete_positions(y), yd, tau)
        for l in range(model.ny):
            for sign in (1.0, -1.0):
                step = yd.copy()
                step[l] += sign * h
                model.forward_dynamics(q, step, tau)

    t = interleaved_medians({
        'derivatives': lambda: model.forward_dynamics_derivatives(q, yd, tau),
        'fd': lambda: model.forward_dynamics(q, yd, tau),
        'central': central_differences}, ROUNDS, BATCH)
    return [name, f'{model.nv}/{model.ny}', f'{t["derivatives"]:.0f}', f'{t["fd"]:.1f}',
            f'{t["derivatives"] / t["fd"]:.1f}', f'{t["central"]:.0f}',
            f'{t["derivatives"] / t["central"]:.2f}']


CONTACT_SETS = ('solo12 3D feet', 'talos 6D feet', 'quadruped_rotors 3D feet',
                'humanoid_belts 6D soles')
CONTACT_HEADER = ('robot and contacts', 'nv/ny', 'FD derivatives', 'forward_dynamics',
                  'constraintDynamics + Derivatives', 'ratio', 'projected ID derivatives',
                  'projected inverse_dynamics')


def contact_row(name, rng):
    """forward_dynamics_derivatives with contacts (the exact route's) next to one
    forward_dynamics call with them and Pinocchio's constraintDynamics followed by
    computeConstraintDynamicsDerivatives (LOCAL rigid contacts of
    test/algorithms/test_contacts.py)."""
    model, reference = contacts_setup(name, 'compiled')
    model.warm_up()
    q, yd, tau = contacts_state(model, rng)
    contacts, o = reference.contacts, reference.oracle
    models = pin.StdVec_RigidConstraintModel(reference.constraint_models)
    datas = pin.StdVec_RigidConstraintData([m.createData() for m in models])
    pd = o.model.createData()
    pin.initConstraintDynamics(o.model, pd, models, datas)
    qp, vp = o.q_to_pin(q), o.v_to_pin(model.spanning_velocities(q, yd))
    taup = np.zeros(model.nv)
    taup[model.independent_v] = tau                  # G^T taup = tau: G is 1 on its own rows
    taup, settings = o.v_to_pin(taup), pin.ProximalSettings(1e-14, 1e-12, 1)

    def pinocchio():
        pin.constraintDynamics(o.model, pd, qp, vp, taup, models, datas, settings)
        pin.computeConstraintDynamicsDerivatives(o.model, pd, models, datas)

    q_held, yd_held, ydd_held = held_state(model, contacts, rng)
    t = interleaved_medians({
        'derivatives': lambda: model.forward_dynamics_derivatives(q, yd, tau, contacts=contacts),
        'fd': lambda: model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba'),
        'pin': pinocchio,
        'projected': lambda: model.inverse_dynamics_derivatives(q_held, yd_held, ydd_held,
                                                                contacts=contacts),
        'id': lambda: model.inverse_dynamics(q_held, yd_held, ydd_held, contacts=contacts)},
        ROUNDS, BATCH)
    return [name, f'{model.nv}/{model.ny}', f'{t["derivatives"]:.0f}', f'{t["fd"]:.1f}',
            f'{t["pin"]:.1f}', f'{t["derivatives"] / t["pin"]:.2f}', f'{t["projected"]:.0f}',
            f'{t["id"]:.1f}']


def loop_robots():
    return [name for name in bundled_models()
            if any(not c.linear for c in load_model(bundled_model(name),
                                                    compiled=False).cluster_list)]


NOTE = (
    'Median microseconds per call from Python, interleaved in one process at one random closed '
    'state per robot. Ours are the public calls, inputs checked, one compiled call each '
    '(dynamics_node/kernels/derivatives.py), a copy of each result; FD derivatives include the '
    'forward dynamics they hold at. '
    'Pinocchio runs on the same spanning tree (for quadruped_rotors the gear couplings are no '
    'constraint of Pinocchio\'s: ours also forms G and projects). On the loop robots: all three '
    'first-order derivatives of forward dynamics against one compiled forward_dynamics call, and '
    'against central differences of that call (2 ny calls; the positions moved through '
    'complete_positions). With contacts: the derivatives of the exact route (one compiled call, '
    'dynamics_node/kernels/contact_derivatives.py: the exact route and its derivatives, which '
    'the ratio compares) next to one forward_dynamics call with method \'aba\' and to '
    'Pinocchio\'s constraintDynamics followed by computeConstraintDynamicsDerivatives on the '
    'same spanning tree with the same contacts; the derivatives of the projected inverse '
    'dynamics (one compiled call; Pinocchio has none) next to one inverse_dynamics call with the '
    'contacts, at a state that keeps them.')


def report_section(report, heading=HEADING, rng=None):
    rng = np.random.default_rng(0) if rng is None else rng
    report.heading(heading)
    report.table(TREE_HEADER, [tree_row(name, rng) for name in TREES])
    report.table(LOOP_HEADER, [loop_row(name, rng) for name in loop_robots()])
    report.table(CONTACT_HEADER, [contact_row(name, rng) for name in CONTACT_SETS])
    report.text(NOTE)


if __name__ == '__main__':
    report_section(Report(HEADING))
