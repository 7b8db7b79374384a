"""The test robots of published patterns (test/models/, test/published_robots.py) timed next to
Pinocchio.

Per robot, in one process, median microseconds of our public calls (compiled engine, inputs
checked, loops verified: the positions are not the last completed ones, so every check runs) next
to Pinocchio (C++) on the same robot's spanning tree:
  FD    Model.forward_dynamics(q, yd, tau), method 'auto'   vs  pin.constraintDynamics with the
        loops as RigidConstraintModels (a 6d weld = CONTACT_6D, a 3d closure or spherical loop =
        CONTACT_3D, both LOCAL, proximal mu = 1e-6, tolerance 1e-10 as bench/lcaba_vs_pinocchio.py;
        its iterations in 'cD it'); skipped where a constraint is a <mimic> (Pinocchio has no rigid
        constraint for it). A robot without loops gets an empty constraint list. The accelerations
        are checked to agree (1e-6 relative) before anything is timed.
  ID    Model.inverse_dynamics(q, yd, ydd)                  vs  pin.rnea on the spanning tree
  H_y   Model.mass_matrix(q)                                vs  pin.crba on the spanning tree
The ratios are ours / Pinocchio's. Each time is the median over STATES random closed states (the
tests' states: the reference configuration, actuated coordinates moved by up to 0.2 rad) of
interleaved medians. 'LCABA FD' counts the calls of method 'auto', at STATES_COUNTED states, that
fell back to LCABA.

Usage: .venv/bin/python bench/published_patterns.py
"""

import os
import sys

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, os.path.join(HERE, '..', 'test'))

from dynamics_node import load_model, ModelError  # noqa: E402
from published_robots import (independent_positions, NAMES, oracle, paths,  # noqa: E402
                              seeded)
from timing import interleaved_medians, print_table  # noqa: E402

STATES = 5
STATES_COUNTED = 50
ROUNDS, BATCH = 60, 20
AGREEMENT = 1e-6
CONTACT = {'fixed': pin.ContactType.CONTACT_6D, 'spherical': pin.ContactType.CONTACT_3D}
LABEL = {'five_bar': '(a) 5-bar, Extended URDF', 'cassie': '(b) Cassie-like leg',
         'delta': '(c) delta, massless rods',
         'gripper': '(d) gripper mimic chain', 'arm': '(e) arm, massless hand',
         'oddities': '(f) inertia oddities'}


class Peer:
    """Pinocchio's spanning tree of a robot (the tests' oracle) and its loops as rigid
    constraints."""

    def __init__(self, name):
        self.reference = oracle(name)
        self.model = self.reference.model
        self.data = self.model.createData()
        self.expressible = all(c['kind'] == 'loop' and c['type'] in CONTACT
                               for c in self.reference.constraints)
        if self.expressible:
            self.constraints = pin.StdVec_RigidConstraintModel()
            for c in self.reference.constraints:
                P, S = self.model.frames[c['pred_frame']], self.model.frames[c['succ_frame']]
                self.constraints.append(pin.RigidConstraintModel(
                    CONTACT[c['type']], self.model, P.parentJoint, P.placement, S.parentJoint,
                    S.placement, pin.ReferenceFrame.LOCAL))
            self.cd_data = self.model.createData()
            self.cd_cdata = pin.StdVec_RigidConstraintData()
            for c in self.constraints:
                self.cd_cdata.append(c.createData())
            pin.initConstraintDynamics(self.model, self.cd_data, self.constraints, self.cd_cdata)
            self.settings = pin.ProximalSettings(1e-10, 1e-6, 50)  # as bench/lcaba_vs_pinocchio.py

    def constraint_dynamics(self, q, v, tau):
        return pin.constraintDynamics(self.model, self.cd_data, q, v, tau, self.constraints,
                                      self.cd_cdata, self.settings)


def measure(name):
    urdf, closures = paths(name)
    model = load_model(urdf, closures=closures)
    model.warm_up()
    peer, to_pin = Peer(name), oracle(name)
    rng = seeded(name, 'bench')
    positions = [model.complete_positions(independent_positions(model, rng))
                 for _ in range(max(STATES, STATES_COUNTED))]
    fallbacks, refused = 0, set()
    for q in positions[:STATES_COUNTED]:
        try:
            info = model.forward_dynamics(q, rng.normal(size=model.ny), rng.normal(size=model.ny),
                                          info=True)
            fallbacks += info.fallback_reason != ''
        except ModelError as error:
            fallbacks += 1
            refused.add(str(error))
    # the timed q get every check
    model.complete_positions(independent_positions(model, rng))
    times, iterations = [], []
    for q in positions[:STATES]:
        yd, ydd, tau = (rng.normal(size=model.ny), rng.normal(size=model.ny),
                        rng.normal(size=model.ny))
        v, tau_v = model.spanning_velocities(q, yd), np.zeros(model.nv)
        tau_v[model.independent_v] = tau                                   # the same G^T tau
        qp, vp, ap, taup = (to_pin.q_to_pin(q), to_pin.v_to_pin(v),
                            to_pin.v_to_pin(rng.normal(size=model.nv)), to_pin.v_to_pin(tau_v))
        calls = {'FD': lambda: model.forward_dynamics(q, yd, tau),
                 'ID': lambda: model.inverse_dynamics(q, yd, ydd),
                 'H_y': lambda: model.mass_matrix(q),
                 'pin.rnea': lambda: pin.rnea(peer.model, peer.data, qp, vp, ap),
                 'pin.crba': lambda: pin.crba(peer.model, peer.data, qp)}
        if refused:
            del calls['FD']                                                # nothing to time
        if peer.expressible and not refused:
            ours = model.forward_dynamics(q, yd, tau)
            theirs = to_pin.v_from_pin(peer.constraint_dynamics(qp, vp, taup))
            iterations.append(peer.settings.iter)
            agreement = np.max(np.abs(theirs - ours)) / max(1.0, np.max(np.abs(ours)))
            if agreement > AGREEMENT:
                raise SystemExit(f'{name}: accelerations disagree with constraintDynamics '
                                 f'({agreement:.1e}); not timing different problems')
            calls['pin.cD'] = lambda: peer.constraint_dynamics(qp, vp, taup)
        times.append(interleaved_medians(calls, ROUNDS, BATCH))
    t = {key: float(np.median([sample[key] for sample in times])) for key in times[0]}
    cell = lambda key: f'{t[key]:.2f}' if key in t else '-'                    # noqa: E731
    ratio = lambda key, peer: (f'{t[key] / t[peer]:.2f}' if key in t and peer in t  # noqa: E731
                               else '-')
    cd_iterations = f'{min(iterations)}-{max(iterations)}' if iterations else '-'
    return (LABEL[name], model.nv, model.ny, cell('FD'), cell('pin.cD'), cd_iterations,
            ratio('FD', 'pin.cD'), cell('ID'), cell('pin.rnea'), ratio('ID', 'pin.rnea'),
            cell('H_y'), cell('pin.crba'), ratio('H_y', 'pin.crba'),
            f'{fallbacks}/{STATES_COUNTED}' + (' (raised)' if refused else '')), refused


HEADER = ('robot', 'nv', 'ny', 'FD us', 'pin.cD us', 'cD it', 'FD/cD', 'ID us', 'pin.rnea us',
          'ID/rnea', 'H_y us', 'pin.crba us', 'H_y/crba', 'LCABA FD')


def main():
    rows, notes = [], []
    for name in NAMES:
        row, refused = measure(name)
        rows.append(row)
        notes += [f'{LABEL[name]}: forward dynamics (method auto) raised: {error}'
                  for error in sorted(refused)]
    print_table(HEADER, rows)
    print('\n'.join([''] + notes))
    print(f'\nMedians over {STATES} closed states of interleaved medians ({ROUNDS} rounds of '
          f'{BATCH} calls); our public calls on the compiled engine with every check; pin.cD: '
          "constraintDynamics with the loops as rigid constraints ('-': a <mimic> it cannot "
          "express). LCABA FD: calls of method 'auto' that fell back to LCABA, of "
          f'{STATES_COUNTED} ("raised": the fallback raised too, FD not timed).')


if __name__ == '__main__':
    main()
