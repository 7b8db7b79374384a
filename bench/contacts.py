"""Contacts given per call (dynamics_node/contacts.py), every route next to Pinocchio's
constraintDynamics on the same system and contacts, in one process: the node's stream output with
contacts (Model.contact_bias_forces, info=True, as stream.py calls it), projected inverse dynamics
at the velocities and accelerations that output keeps the contacts with, the exact route
(forward_dynamics method='aba') and LCABA (method='lcaba', default settings), on the bundled
quadruped (four 3D feet) and humanoid (two 6D soles) and the systems of Table II
(bench/table_ii.py). Pinocchio sees the spanning tree with every loop and contact as a
RigidConstraintModel (table_ii.Peer; the bundled robots: their contacts alone, test_contacts'
Reference, their gear and belt couplings are no Pinocchio constraint), one proximal iteration at
mu = 1e-12: the exact KKT solve.

Usage: .venv/bin/python bench/contacts.py
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

from dynamics_node import bundled_model, Contact, load_model, ModelError  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: closed random state)
from table_ii import contacts_at, medians, Peer, systems  # noqa: E402
from test_contacts import Reference  # noqa: E402  (test helper: the contacts on Pinocchio)
from timing import Report  # noqa: E402

HEADING = 'Contacts: the stream output, projected inverse dynamics, the exact route and LCABA'
FEET = ('FL_foot', 'FR_foot', 'HL_foot', 'HR_foot')
SECONDS = 3.0                   # of interleaved rounds per system
COLUMNS = ('stream', 'projected ID', 'exact', 'LCABA', 'pin.cD')


def bundled():
    """name -> (description, contacts)."""
    return {'quadruped_rotors 3D feet': (bundled_model('quadruped_rotors'),
                                         [Contact(foot, '3D') for foot in FEET]),
            'humanoid_belts 6D soles': (bundled_model('humanoid_belts'),
                                        [Contact('left_foot_sole', '6D'),
                                         Contact('right_foot_sole', '6D')])}


class ContactsOnly:
    """Pinocchio's spanning tree with the contacts alone (test_contacts.Reference), as Peer."""

    def __init__(self, description, model, contacts):
        reference = Reference(description, model, contacts)
        self.reference, self.model = reference.oracle, reference.oracle.model
        self.constraints = pin.StdVec_RigidConstraintModel(reference.constraint_models)
        self.cdata = pin.StdVec_RigidConstraintData([c.createData() for c in self.constraints])
        self.data = self.model.createData()
        pin.initConstraintDynamics(self.model, self.data, self.constraints, self.cdata)
        self.rows = sum(c.residualSize() for c in self.constraints)

    def constraint_dynamics(self, q, v, tau, settings):
        return pin.constraintDynamics(self.model, self.data, q, v, tau, self.constraints,
                                      self.cdata, settings)


def measure(name, description, contacts, rng, seconds, peer_type=Peer):
    """A row of the table; contacts: a list of Contacts or a function of (model, q)."""
    model = load_model(description)
    model.warm_up()
    q, yd, _ = random_state(model, rng)
    tau = rng.normal(size=model.ny) * 5
    if callable(contacts):
        contacts = contacts(model, q)
    peer = peer_type(description, model, contacts)
    o = peer.reference
    spanning_tau = np.zeros(model.nv)
    spanning_tau[model.independent_v] = tau
    qp, vp = o.q_to_pin(q), o.v_to_pin(model.spanning_velocities(q, yd))
    taup = o.v_to_pin(spanning_tau)
    settings = pin.ProximalSettings(1e-12, 1e-12, 1)
    calls, missing = {}, {}
    try:
        held = model.contact_bias_forces(q, yd, contacts, info=True)
        calls['stream'] = lambda: model.contact_bias_forces(q, yd, contacts, info=True)
        calls['projected ID'] = lambda: model.inverse_dynamics(
            q, held.velocities, held.accelerations, contacts=contacts)
    except ModelError as error:                 # no torques hold the system on these contacts
        missing['stream'] = missing['projected ID'] = str(error).split(':')[0]
    try:
        model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba')
        calls['exact'] = lambda: model.forward_dynamics(q, yd, tau, contacts=contacts,
                                                        method='aba')
    except ModelError:
        missing['exact'] = 'singular'
    calls['LCABA'] = lambda: model.forward_dynamics(q, yd, tau, contacts=contacts,
                                                    method='lcaba')
    calls['pin.cD'] = lambda: peer.constraint_dynamics(qp, vp, taup, settings)
    t, _ = medians(calls, seconds)
    cells = [f'{t[c]:.1f}' if c in t else missing[c] for c in COLUMNS]
    ratios = [f'{t[a] / t[b]:.2f}' if a in t and b in t else '-'
              for a, b in (('stream', 'pin.cD'), ('projected ID', 'pin.cD'),
                           ('exact', 'LCABA'), ('exact', 'pin.cD'))]
    return [name, f'{model.nv}/{model.ny}', peer.rows] + cells + ratios


def table(rng, seconds=SECONDS):
    rows = [measure(name, description, contacts, rng, seconds, ContactsOnly)
            for name, (description, contacts) in bundled().items()]
    for name, (description, world, held) in systems().items():
        if description is not None:
            rows.append(measure(name, description,
                                lambda model, q, w=world, h=held: contacts_at(model, q, w, h),
                                rng, seconds))
    return rows


HEADER = ('system', 'nv/ny', 'rows') + tuple(f'{c} us' for c in COLUMNS) + (
    'stream/cD', 'ID/cD', 'exact/LCABA', 'exact/cD')
NOTE = (
    'Median microseconds per public call from Python (inputs checked), interleaved in one '
    'process, one random closed state per system. **stream**: '
    'Model.contact_bias_forces(q, v, contacts, info=True), what the node computes per '
    'message with stream.contacts (the velocities '
    'projected onto those that keep the contacts, the least accelerations that keep them, '
    'projected inverse dynamics there: one compiled call); **projected ID**: '
    'Model.inverse_dynamics(q, v, a, contacts=...) at those velocities and accelerations (one '
    'compiled call); **exact**: forward_dynamics(method=\'aba\'): the cluster ABA, the '
    'Delassus matrix from the EFPA on its articulated inertias, its force passes again with the '
    'contact forces, one compiled call; **LCABA**: method=\'lcaba\', default '
    'settings (converged); **pin.cD**: pinocchio.constraintDynamics on the spanning tree with '
    'the loops and contacts as RigidConstraintModels (LOCAL), ProximalSettings(1e-12, 1e-12, 1). '
    'rows: loop and contact rows Pinocchio solves. A system on which no actuator torques hold '
    'the contacts (a floating base with no foot on the ground) has no projected dynamics; a '
    'redundant contact set has no exact route.')


def report_section(report, heading=HEADING, rng=None, seconds=SECONDS):
    rows = table(np.random.default_rng(0) if rng is None else rng, seconds)
    report.heading(heading)
    report.text('Every contact route on the bundled legged robots and the systems of Table II '
                '(section 4).')
    report.table(HEADER, rows)
    report.text(NOTE)


if __name__ == '__main__':
    report_section(Report(HEADING))
