"""Our LCABA (compiled) against Pinocchio's lcaba and constraintDynamics (C++) on the same closed
loops.

Only mechanisms whose loops both libraries express as the same constraint are compared, and the
accelerations are checked to agree before anything is timed:
- a `fixed` loop is Pinocchio's CONTACT_6D between the two loop frames (LOCAL);
- a revolute loop of a planar mechanism (all joint axes normal to the plane) is a CONTACT_3D point
  constraint: its 2 rotation rows vanish identically there, so both leave the same motions. (For a
  spatial mechanism a revolute loop is NOT a point constraint; none is used here.)
- a spherical loop (delta's rods) is a CONTACT_3D point constraint: the origins coincide, the
  rotation is free.
Times are medians of many calls in microseconds (interleaved, bench/run.py), penalty mu = 1e6
(Pinocchio's mu = 1e-6): our kernels (FastPath) and our public forward_dynamics (inputs checked,
loops verified).

Usage: .venv/bin/python bench/lcaba_vs_pinocchio.py
"""

import os
import sys
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, os.path.join(HERE, '..', 'test'))

from dynamics_node import bundled_model, load_model  # noqa: E402
from dynamics_node.algorithms.lcaba import ProximalSettings  # noqa: E402
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from timing import interleaved_medians, print_table  # noqa: E402

MU = 1e6
TOLERANCE = 1e-10
AGREEMENT = 1e-6          # relative; Pinocchio's lcaba keeps ~1e-8 at mu = 1e6 (no refinement)
CONTACT = {'fixed': pin.ContactType.CONTACT_6D, 'revolute': pin.ContactType.CONTACT_3D,
           'spherical': pin.ContactType.CONTACT_3D}


def welded_cycle(n, planar=False, seed=0):
    """A single loop of n revolute links (Sathya & Carpentier 2025 Fig. 6): two branches of n/2
    links hang from the ground and their tips are welded by a `fixed` loop, closed at a random q.
    Spatial: random axes (6 independent rows). Planar: every axis along z, so the 6 weld rows
    (tilted loop frame) have rank 3, redundant like Digit's welded leg loops. Returns (URDF+ text,
    q)."""
    rng = np.random.default_rng(seed)
    inertia = 'ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.025"'
    limit = '<limit lower="-9" upper="9" effort="1" velocity="1"/>'
    links, joints = ['<link name="ground"/>'], []
    tips = []
    for branch in 'ab':
        parent = 'ground'
        for i in range(n // 2):
            name = f'{branch}{i}'
            axis = np.array([0.0, 0.0, 1.0]) if planar else rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            rpy = np.zeros(3) if planar else rng.uniform(-0.5, 0.5, 3)
            links.append(f'<link name="{name}"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>'
                         f'<inertia {inertia}/></inertial></link>')
            xyz = (0.2, 0.3 if (branch, i) == ('b', 0) else 0.0, 0.0)
            joints.append(f'<joint name="j_{name}" type="revolute"><parent link="{parent}"/>'
                          f'<child link="{name}"/><origin xyz="{_text(xyz)}" rpy="{_text(rpy)}"/>'
                          f'<axis xyz="{_text(axis)}"/>{limit}</joint>')
            parent = name
        tips.append(parent)
    tree = '<robot name="welded_cycle">' + ''.join(links + joints)
    open_chain = load_model(tree + '</robot>')
    q = rng.uniform(-0.5, 0.5, open_chain.nq)
    (R_a, p_a), (R_b, p_b) = (open_chain.link_pose(q, tip) for tip in tips)
    tilt = rng.uniform(-1, 1, 3)
    R, p = R_b.T @ R_a @ pin.rpy.rpyToMatrix(tilt), R_b.T @ (p_a - p_b)   # frame P seen from tip b
    loop = (f'<loop name="weld" type="fixed"><predecessor link="{tips[0]}"><origin '
            f'rpy="{_text(tilt)}"/></predecessor><successor link="{tips[1]}"><origin '
            f'xyz="{_text(p)}" rpy="{_text(pin.rpy.matrixToRpy(R))}"/></successor></loop>')
    return tree + loop + '</robot>', q


def _text(values):
    return ' '.join(repr(float(x)) for x in values)


def four_bar_case(name, crank):
    model = load_model(bundled_model(name))
    return open(bundled_model(name)).read(), model.complete_positions([crank])


def leg_linkage_case():
    """linkage_leg.urdf (a knee four-bar and an ankle) without its knee motor's rotor and gear,
    which Pinocchio's constraints cannot express; returns (URDF+ text, closed q)."""
    robot = ElementTree.parse(bundled_model('linkage_leg')).getroot()
    for element in list(robot):
        if element.get('name') in ('motor_rotor', 'motor_rotor_joint', 'knee_gear'):
            robot.remove(element)
    text = ElementTree.tostring(robot, encoding='unicode')
    return text, load_model(text).complete_positions([0.7, 0.3])


def mechanisms():
    yield 'four_bar (revolute loop = 3D)', *four_bar_case('four_bar', 0.7)
    yield 'six_bar (2 revolute loops = 3D)', *four_bar_case('six_bar', 0.7)
    yield 'leg linkage (revolute loop = 3D)', *leg_linkage_case()
    yield 'delta (5 spherical loops = 3D)', open(bundled_model('delta')).read(), \
        load_model(bundled_model('delta')).complete_positions([0.3, -0.2, 0.4])
    yield 'planar welded cycle n=8 (6D, rank 3)', *welded_cycle(8, planar=True)
    for n in (8, 16, 32):
        yield f'welded cycle n={n} (fixed = 6D)', *welded_cycle(n)


class PinocchioCase:
    """Pinocchio model of the spanning tree with one rigid constraint per loop (and those
    more_constraints adds), and one Data per algorithm (a constraintDynamics call on a Data that
    lcaba used returned wrong accelerations)."""

    def __init__(self, xml, joint_names):
        self.reference = KKTOracle(xml)
        self.reference.set_layout(joint_names)
        model = self.model = self.reference.model
        self.constraints = pin.StdVec_RigidConstraintModel()
        for c in self.reference.constraints:
            P, S = model.frames[c['pred_frame']], model.frames[c['succ_frame']]
            self.constraints.append(pin.RigidConstraintModel(
                CONTACT[c['type']], model, P.parentJoint, P.placement, S.parentJoint, S.placement,
                pin.ReferenceFrame.LOCAL))
        self.constraints.extend(self.more_constraints())
        self.lcaba_data, self.lcaba_cdata = self._data()
        pin.computeJointMinimalOrdering(model, self.lcaba_data, self.constraints)
        self.cd_data, self.cd_cdata = self._data()
        pin.initConstraintDynamics(model, self.cd_data, self.constraints, self.cd_cdata)
        self.rows = sum(c.residualSize() for c in self.constraints)

    def more_constraints(self):
        """RigidConstraintModels besides the loops' (none here)."""
        return []

    def _data(self):
        cdata = pin.StdVec_RigidConstraintData()
        for c in self.constraints:
            cdata.append(c.createData())
        return self.model.createData(), cdata

    def lcaba(self, q, v, tau, settings):
        return pin.lcaba(self.model, self.lcaba_data, q, v, tau, self.constraints,
                         self.lcaba_cdata, settings)

    def constraint_dynamics(self, q, v, tau, settings):
        return pin.constraintDynamics(self.model, self.cd_data, q, v, tau, self.constraints,
                                      self.cd_cdata, settings)


def lcaba_kernel(fast, q, v, tau, f_ext, settings):
    """Our compiled LCABA timed as the C-ABA column times the cluster ABA
    (FastPath.forward_dynamics): the kernel's call and the copy of qdd, without the LcabaResult of
    FastPath.lcaba (about 0.7 us)."""
    m, d, p, w = fast._m, fast._d, fast._p, fast._w
    mu, tolerance, iterations = settings.mu, settings.tolerance, settings.max_iterations

    def call():
        fast._lcaba(m, d, p, w, q, v, tau, f_ext, mu, tolerance, iterations)
        return fast.lcaba_data.qdd.copy()
    return call


def compare(label, xml, q, rng):
    """One row: agreement, iterations and median times of ours and Pinocchio's on one mechanism."""
    model = load_model(xml)
    fast = model._local.data.engine
    fast.warm_up()
    f_ext = np.zeros((model.nb, 6))
    yd = rng.normal(size=model.ny)
    v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
    settings = ProximalSettings(mu=MU, tolerance=TOLERANCE)
    ours = fast.lcaba(q, v, tau, f_ext, settings)

    pinocchio = PinocchioCase(xml, model.joint_names)
    to_pin = pinocchio.reference
    qp, vp, taup = to_pin.q_to_pin(q), to_pin.v_to_pin(v), to_pin.v_to_pin(tau)
    pin_settings = pin.ProximalSettings(TOLERANCE, 1.0 / MU, 50)
    scale = max(1.0, np.max(np.abs(ours.qdd)))
    qdd_lcaba = to_pin.v_from_pin(pinocchio.lcaba(qp, vp, taup, pin_settings))
    pin_iterations = pin_settings.iter
    qdd_cd = to_pin.v_from_pin(pinocchio.constraint_dynamics(qp, vp, taup, pin_settings))
    agree_lcaba, agree_cd = (np.max(np.abs(qdd - ours.qdd)) / scale for qdd in (qdd_lcaba, qdd_cd))
    if max(agree_lcaba, agree_cd) > AGREEMENT:
        raise SystemExit(f'{label}: accelerations disagree (lcaba {agree_lcaba:.1e}, '
                         f'constraintDynamics {agree_cd:.1e}); not timing different problems')

    calls = {'lcaba': lcaba_kernel(fast, q, v, tau, f_ext, settings),
             'FD lcaba': lambda: model.forward_dynamics(q, v, tau, method='lcaba',
                                                        settings=settings),
             'pin.lcaba': lambda: pinocchio.lcaba(qp, vp, taup, pin_settings),
             'pin.cD': lambda: pinocchio.constraint_dynamics(qp, vp, taup, pin_settings)}
    try:
        fast.forward_dynamics(q, yd, tau)
        calls['C-ABA'] = lambda: fast.forward_dynamics(q, yd, tau)
        calls['FD auto'] = lambda: model.forward_dynamics(q, v, tau)
    except Exception:             # a singular cluster: the cluster ABA does not apply
        pass
    t = interleaved_medians(calls, 100, 20)
    rows = fast.plan.rows                     # the rows our LCABA keeps (flat.lcaba._kept_rows)
    cell = lambda key: f'{t[key]:.2f}' if key in t else '-'  # noqa: E731
    ratio = lambda key, peer: f'{t[key] / t[peer]:.2f}' if key in t else '-'  # noqa: E731
    return (label, model.nv, f'{rows}/{pinocchio.rows}', f'{max(agree_lcaba, agree_cd):.0e}',
            f'{ours.iterations}/{pin_iterations}', cell('lcaba'), cell('pin.lcaba'),
            ratio('lcaba', 'pin.lcaba'), cell('C-ABA'), cell('FD auto'), cell('FD lcaba'),
            cell('pin.cD'), ratio('FD auto', 'pin.cD'), ratio('FD lcaba', 'pin.cD'))


HEADER = ('mechanism', 'nv', 'rows ours/pin', 'agree', 'iter ours/pin', 'LCABA us', 'pin.lcaba us',
          'ratio', 'C-ABA us', 'FD auto us', 'FD lcaba us', 'pin.cD us', 'auto/cD', 'lcaba/cD')
NOTE = (f'mu = {MU:g} (Pinocchio mu = {1 / MU:g}), tolerance {TOLERANCE:g}; agree = max |qdd - '
        'qdd_ours| / max(1, |qdd_ours|) over pin.lcaba and constraintDynamics (cD, '
        'proxLTL).\nLCABA, C-ABA: our compiled kernels; FD auto / FD lcaba: the public '
        'Model.forward_dynamics (inputs checked, loop closure verified).')


def loop_table(rng):
    return [compare(label, xml, q, rng) for label, xml, q in mechanisms()]


def main():
    print_table(HEADER, loop_table(np.random.default_rng(0)))
    print('\n' + NOTE)


if __name__ == '__main__':
    main()
