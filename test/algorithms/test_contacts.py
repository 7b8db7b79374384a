"""Contacts given per call (dynamics_node/contacts.py) against independent references.

- Trees (published robots of example-robot-data on a floating base: Solo-12 and ANYmal with 3D
  feet, Talos with 6D feet, link-to-link contacts): forward dynamics and contact forces against
  Pinocchio's constraintDynamics (RigidConstraintModel, LOCAL, zero Baumgarte gains), both methods.
- Robots with loops and couplings (the bundled quadruped_rotors and humanoid_belts, linkage_leg
  and parallel_ankle_leg put on a floating base): against a dense KKT solve written here from the
  oracle's spanning-tree H, C, loop rows (test/oracle.py) and Pinocchio's frame Jacobians and
  accelerations of the contact frames.
- Redundant contact sets: LCABA (and so 'auto') finite and within its tolerance, the exact route
  raises SingularConfigurationError.
- Inverse dynamics: H_y ydd + C_y = S^T tau + J_c^T lambda, the minimum (weighted) norm against a
  brute-force least squares over every solution, the round trip through forward dynamics, standing
  gravity torques against a solve with Pinocchio, motions no torques produce.
- Bias forces at measured velocities (contact_bias_forces): the velocities projected onto those
  that keep the contacts and the least accelerations that keep them, against dense least squares
  with Pinocchio's contact rows and the oracle's loop rows; the equation of motion; gravity_forces
  at rest and bias_forces where the velocities keep the contacts without drift; redundant sets.
- Bad inputs: ModelError naming what is wrong.
"""

import re
import tracemalloc

import numpy as np
import pinocchio as pin
import pytest

from conftest import published_file, random_independent_positions, SEED
from dynamics_node import (bounds, bundled_model, Contact, ContactBiasInfo, InverseDynamicsInfo,
                           load_model, ModelError, SingularConfigurationError)
from dynamics_node.contacts import robot_size
from dynamics_node.spatial import quaternion_matrix
from oracle import KKTOracle

STATES = 4
RTOL = 1e-9          # exact route (cluster ABA + EFPA) against the references
# contact forces: Talos holding its hands together (a 6D contact across both arms) is conditioned
# so that its forces agree to 1.1e-9 with Pinocchio's
FORCE_RTOL = 1e-8
LCABA_RTOL = 1e-7    # LCABA's proximal iterations stop at |K qdd - k| < 1e-10 (forces ~1e-8)
LOCAL = pin.ReferenceFrame.LOCAL


def published(path, root):
    """A URDF of example-robot-data put on a floating base (joint 'root_joint' from 'world'),
    without its <mimic> elements (Talos' grippers): a tree for Pinocchio."""
    with open(published_file(path)) as file:
        return floating(re.sub(r'<mimic[^>]*/>', '', file.read()), root)


def floating(text, root):
    """URDF text (or a file's) with a floating joint from a new 'world' link to its root link, a
    root link without inertial given 1 kg (a massless one and a hip joint along one of its axes
    would make the base's articulated inertia singular)."""
    if not text.lstrip().startswith('<'):
        with open(text) as file:
            text = file.read()
    text = re.sub(r'<\?xml[^>]*\?>', '', text).replace(
        f'<link name="{root}"/>', f'<link name="{root}"><inertial><mass value="1"/><inertia '
        'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')
    start = text.index('>', text.index('<robot')) + 1
    return (text[:start] + '<link name="world"/><joint name="root_joint" type="floating">'
            f'<parent link="world"/><child link="{root}"/></joint>' + text[start:])


def _turn(angle, axis):
    s = np.sin(angle / 2) * np.asarray(axis, float)
    return (float(s[0]), float(s[1]), float(s[2]), float(np.cos(angle / 2)))


OFFSET = ((0.01, -0.02, 0.015), _turn(0.4, (0.6, 0.0, 0.8)))
QUADRUPED_FEET = ('FL_foot', 'FR_foot', 'HL_foot', 'HR_foot')


def robots():
    """name -> (URDF+ text, contacts, reference): 'pinocchio' (trees) or 'kkt'."""
    linkage = floating(bundled_model('linkage_leg'), 'base')
    ankle = floating(bundled_model('parallel_ankle_leg'), 'pelvis')
    return {
        'solo12 3D feet': (lambda: published('solo_description/robots/solo12.urdf', 'base_link'),
                           [Contact(f'{leg}_FOOT', '3D', OFFSET)
                            for leg in ('FL', 'FR', 'HL', 'HR')], 'pinocchio'),
        'anymal 3D feet': (lambda: published('anymal_b_simple_description/robots/anymal.urdf',
                                             'base'),
                           [Contact(f'{leg}_FOOT', '3D') for leg in ('LF', 'RF', 'LH', 'RH')],
                           'pinocchio'),
        'talos 6D feet': (lambda: published('talos_data/robots/talos_reduced.urdf', 'base_link'),
                          [Contact('leg_left_6_link', '6D', OFFSET),
                           Contact('leg_right_6_link', '6D')], 'pinocchio'),
        'talos hands': (lambda: published('talos_data/robots/talos_reduced.urdf', 'base_link'),
                        [Contact('leg_left_6_link', '6D'),
                         Contact('arm_left_7_link', '6D', OFFSET, other='arm_right_7_link',
                                 other_placement=((0.0, 0.05, 0.0), _turn(0.3, (1, 0, 0)))),
                         Contact('arm_right_4_link', '3D', other='torso_2_link',
                                 other_placement=((0.1, -0.2, 0.1), _turn(0, (1, 0, 0))))],
                        'pinocchio'),
        'quadruped_rotors 3D feet': (lambda: bundled_model('quadruped_rotors'),
                                     [Contact(foot, '3D', OFFSET) for foot in QUADRUPED_FEET],
                                     'kkt'),
        'humanoid_belts 6D soles': (lambda: bundled_model('humanoid_belts'),
                                    [Contact('left_foot_sole', '6D', OFFSET),
                                     Contact('right_foot_sole', '6D'),
                                     Contact('left_hand', '3D', other='right_hand')], 'kkt'),
        'linkage_leg 3D foot': (lambda: linkage, [Contact('foot', '3D', OFFSET)], 'kkt'),
        'linkage_leg 6D foot': (lambda: linkage, [Contact('foot', '6D', OFFSET)], 'kkt'),
        'parallel_ankle_leg 6D foot': (lambda: ankle, [Contact('foot', '6D', OFFSET)], 'kkt'),
    }


ROBOTS = robots()
ENGINES = ('compiled', 'numpy')
_CACHE = {}


def setup(name, engine='compiled'):
    """(model, Reference) of a robot, built once per engine ('compiled': the numba kernels,
    'numpy': the NumPy algorithms)."""
    if (name, engine) not in _CACHE:
        source, contacts, _ = ROBOTS[name]
        text = source()
        model = load_model(text, compiled=engine == 'compiled')
        _CACHE[name, engine] = model, Reference(text, model, contacts)
    return _CACHE[name, engine]


class Reference:
    """The contacts on the oracle's Pinocchio model: frames at the placements, Pinocchio's own
    constraintDynamics, and the dense KKT system with the oracle's loops and couplings."""

    def __init__(self, text, model, contacts):
        self.oracle = o = KKTOracle(text)
        o.set_layout(model.joint_names)
        self.contacts, self.frames, self.constraint_models = contacts, [], []
        for i, c in enumerate(contacts):
            pair = [self._frame(f'c{i}', c.link, c.placement)]
            pair.append(self._frame(f'o{i}', c.other, c.other_placement) if c.other else None)
            self.frames.append(pair)
            joint2, placement2 = (0, pin.SE3.Identity()) if c.other is None else (
                o.model.frames[pair[1]].parentJoint, o.model.frames[pair[1]].placement)
            self.constraint_models.append(pin.RigidConstraintModel(
                pin.ContactType.CONTACT_6D if c.kind == '6D' else pin.ContactType.CONTACT_3D,
                o.model, o.model.frames[pair[0]].parentJoint, o.model.frames[pair[0]].placement,
                joint2, placement2, LOCAL))
        o.data = o.model.createData()

    def _frame(self, name, link, placement):
        o = self.oracle
        frame = o.model.frames[o._body_frame_id(link)]
        M = frame.placement * pin.SE3(quaternion_matrix(*placement[1]), np.array(placement[0]))
        return o.model.addFrame(pin.Frame(name, frame.parentJoint, 0, M, pin.FrameType.OP_FRAME))

    def pinocchio(self, q, v, tau, iterations=1):
        """(qdd, stacked contact forces) of pin.constraintDynamics (its proximal iterations refine
        the regularised KKT solve on ill-conditioned contact sets)."""
        o = self.oracle
        models = pin.StdVec_RigidConstraintModel(self.constraint_models)
        datas = pin.StdVec_RigidConstraintData([m.createData() for m in models])
        data = o.model.createData()
        pin.initConstraintDynamics(o.model, data, models, datas)
        qdd = pin.constraintDynamics(o.model, data, o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau),
                                     models, datas,
                                     pin.ProximalSettings(1e-14, 1e-12, iterations))
        return o.v_from_pin(qdd), np.array(data.lambda_c)

    def rows(self, q, v):
        """(J spanning, drift) of every contact, stacked: J qdd + drift = 0 (Pinocchio's
        semantics, written out from its frame Jacobians and accelerations at qdd = 0)."""
        o = self.oracle
        qp, vp = o.q_to_pin(q), o.v_to_pin(v)
        pin.computeJointJacobians(o.model, o.data, qp)
        pin.forwardKinematics(o.model, o.data, qp, vp, np.zeros(o.model.nv))
        pin.updateFramePlacements(o.model, o.data)
        Js, drifts = [], []
        for c, (f1, f2) in zip(self.contacts, self.frames):
            J1 = o.cols_from_pin(pin.getFrameJacobian(o.model, o.data, f1, LOCAL))
            if c.kind == '6D':
                a1 = pin.getFrameAcceleration(o.model, o.data, f1, LOCAL)
                J, drift = J1, a1.vector
                if f2 is not None:
                    X = o.data.oMf[f1].actInv(o.data.oMf[f2])          # c1 M c2
                    J2 = o.cols_from_pin(pin.getFrameJacobian(o.model, o.data, f2, LOCAL))
                    v1 = pin.getFrameVelocity(o.model, o.data, f1, LOCAL)
                    v2 = X.act(pin.getFrameVelocity(o.model, o.data, f2, LOCAL))
                    a2 = X.act(pin.getFrameAcceleration(o.model, o.data, f2, LOCAL))
                    J, drift = J1 - X.action @ J2, (a1 - a2 + v1.cross(v2)).vector
            else:
                a1 = pin.getFrameClassicalAcceleration(o.model, o.data, f1, LOCAL).linear
                J, drift = J1[:3], a1
                if f2 is not None:
                    R = o.data.oMf[f1].rotation.T @ o.data.oMf[f2].rotation
                    J2 = o.cols_from_pin(pin.getFrameJacobian(o.model, o.data, f2, LOCAL))
                    a2 = pin.getFrameClassicalAcceleration(o.model, o.data, f2, LOCAL).linear
                    J, drift = J1[:3] - R @ J2[:3], a1 - R @ a2
            Js.append(J)
            drifts.append(drift)
        return np.vstack(Js), np.concatenate(drifts)

    def kkt(self, q, v, tau):
        """(qdd, stacked contact forces) of the dense KKT system [[H, -A^T], [A, 0]] with A the
        oracle's loop rows and the contact rows, A qdd = [k; -drift]."""
        o = self.oracle
        H, C = o.mass_matrix(q), o.bias(q, v)
        K, k = o.constraint_jacobian(q), o.constraint_bias(q, v)
        J, drift = self.rows(q, v)
        A, b = np.vstack((K, J)), np.concatenate((k, -drift))
        n, m = H.shape[0], A.shape[0]
        M = np.block([[H, -A.T], [A, np.zeros((m, m))]])
        x = np.linalg.lstsq(M, np.concatenate((tau - C, b)), rcond=1e-13)[0]
        return x[:n], x[n + K.shape[0]:]


def random_state(model, rng):
    """Closed random q, independent velocities and forces."""
    q_ind = random_independent_positions(model, rng)
    q = model.complete_positions(q_ind)
    return q, rng.normal(size=model.ny), rng.normal(size=model.ny) * 5


def spanning(model, q, x):
    return model.spanning_velocities(q, x)


def relative(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


@pytest.mark.parametrize('engine', ENGINES)
@pytest.mark.parametrize('name', list(ROBOTS))
def test_forward_dynamics_against_references(name, engine):
    model, reference = setup(name, engine)
    rng = np.random.default_rng(SEED + 11)
    for _ in range(STATES):
        q, yd, tau_y = random_state(model, rng)
        v = spanning(model, q, yd)
        tau = np.zeros(model.nv)
        tau[model.independent_v] = tau_y
        if ROBOTS[name][2] == 'pinocchio':
            qdd_ref, forces_ref = reference.pinocchio(q, v, tau)
            assert relative(reference.kkt(q, v, tau)[0], qdd_ref) < RTOL, 'KKT = Pinocchio'
        else:
            qdd_ref, forces_ref = reference.kkt(q, v, tau)
        for method, rtol, force_rtol in (('aba', RTOL, FORCE_RTOL),
                                         ('lcaba', LCABA_RTOL, LCABA_RTOL),
                                         ('auto', LCABA_RTOL, LCABA_RTOL)):
            info = model.forward_dynamics(q, yd, tau_y, contacts=reference.contacts,
                                          method=method, info=True)
            assert info.method_used == ('aba' if method == 'aba' else 'lcaba')
            assert relative(info.acceleration, qdd_ref) < rtol, (method, 'qdd')
            assert relative(np.concatenate(info.contact_forces), forces_ref) < force_rtol, method
            assert [f.size for f in info.contact_forces] == [c.rows for c in reference.contacts]
            assert info.constraint_residual < 1e-8
            # without info: the fused compiled call once the contacts were resolved
            assert relative(model.forward_dynamics(q, v, tau, contacts=reference.contacts,
                                                   method=method), qdd_ref) < rtol, 'spanning'


def test_compiled_and_reference_models_agree():
    """LCABA and the exact route with contacts: the compiled kernels, first on the checked path
    (which builds the contacts' plan), then in one fused call each, agree with the NumPy
    algorithms to round-off."""
    text, contacts, _ = ROBOTS['quadruped_rotors 3D feet']
    compiled, numpy_model = load_model(text()), load_model(text(), compiled=False)
    fused = fused_calls(compiled)
    rng = np.random.default_rng(SEED)
    for _ in range(3):
        q, yd, tau = random_state(numpy_model, rng)
        expected = numpy_model.forward_dynamics(q, yd, tau, contacts=contacts, method='lcaba')
        for _ in range(2):
            assert relative(compiled.forward_dynamics(q, yd, tau, contacts=contacts,
                                                      method='lcaba'), expected) < LCABA_RTOL
        assert relative(compiled.forward_dynamics(q, yd, tau, contacts=tuple(contacts)),
                        expected) < LCABA_RTOL, 'a tuple of the same Contacts'
        expected = numpy_model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba')
        for _ in range(2):
            assert relative(compiled.forward_dynamics(q, yd, tau, contacts=contacts,
                                                      method='aba'), expected) < 1e-12
    assert fused.count('fused_forward_dynamics') == 5, 'the checked path once, then fused'


def fused_calls(model):
    """The routes of the contact calls that ran fused on model's workspace from now on (a list
    that grows)."""
    engine, routes = model._local.data.engine, []
    fused_contacts = engine.fused_contacts

    def counted(route, *arguments):
        result = fused_contacts(route, *arguments)
        if result is not None:
            routes.append(route)
        return result
    engine.fused_contacts = counted
    return routes


def test_many_contact_sets():
    """More contact sets than a workspace keeps plans for (numba_engine.CONTACT_SETS): each call
    still agrees with the NumPy algorithms, one foot at a time at ever new points."""
    from dynamics_node.engines.numba_engine import CONTACT_SETS
    text, _, _ = ROBOTS['quadruped_rotors 3D feet']
    compiled, numpy_model = load_model(text()), load_model(text(), compiled=False)
    q, yd, tau = random_state(numpy_model, np.random.default_rng(SEED + 5))
    for i in range(CONTACT_SETS + 3):
        contacts = [Contact(QUADRUPED_FEET[i % 4], '3D', ((0.001 * i, 0, 0), (0, 0, 0, 1))),
                    Contact(QUADRUPED_FEET[(i + 1) % 4], '6D')]
        expected = numpy_model.forward_dynamics(q, yd, tau, contacts=contacts)
        for _ in range(2):
            assert relative(compiled.forward_dynamics(q, yd, tau, contacts=contacts),
                            expected) < LCABA_RTOL, i
    assert len(compiled._local.data.engine._contact_sets) == CONTACT_SETS


def test_weighted_calls_run_fused_and_agree():
    """Projected inverse dynamics and the contact bias forces at given weights: one fused call
    each once the contacts were resolved, equal to the NumPy algorithms to round-off; refused
    weights leave the fused call, and the first fault in the order of the inputs is named."""
    text, contacts, _ = ROBOTS['humanoid_belts 6D soles']
    compiled, numpy_model = load_model(text()), load_model(text(), compiled=False)
    fused = fused_calls(compiled)
    rng = np.random.default_rng(SEED + 23)
    for _ in range(3):
        q, yd, _ = random_state(numpy_model, rng)
        weights = np.exp(rng.uniform(-2, 2, numpy_model.ny))
        held = numpy_model.contact_bias_forces(q, yd, contacts, weights=weights, info=True)
        for _ in range(2):
            info = compiled.contact_bias_forces(q, yd, contacts, weights=weights, info=True)
            assert relative(info.efforts, held.efforts) < 1e-12
            assert relative(info.velocities, held.velocities) < 1e-12
            expected = numpy_model.inverse_dynamics(q, held.velocities, held.accelerations,
                                                    contacts=contacts, weights=weights)
            assert relative(compiled.inverse_dynamics(q, held.velocities, held.accelerations,
                                                      contacts=contacts, weights=list(weights)),
                            expected) < 1e-12, 'weights as a list'
    assert fused.count('fused_bias_forces') == 5, 'the checked path once, then fused'
    assert fused.count('fused_inverse_dynamics') == 6, 'on the contacts resolved before'
    bad = -np.ones(compiled.ny)
    with pytest.raises(ModelError, match='expected positive weights'):
        compiled.contact_bias_forces(q, yd, contacts, weights=bad)
    with pytest.raises(ModelError, match='q has'):
        compiled.contact_bias_forces(q[:-1], yd, contacts, weights=bad)
    assert fused.count('fused_bias_forces') == 5


def held_state(model, contacts, rng):
    """A state that keeps the contacts: v in the null space of [G-rows of the contacts], a from
    forward dynamics with random forces."""
    q, _, tau = random_state(model, rng)
    J = contact_jacobian_y(model, q, contacts)
    N = null_space(J)
    yd = N @ rng.normal(size=N.shape[1]) if N.size else np.zeros(model.ny)
    info = model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba', info=True)
    return q, yd, info.acceleration[model.independent_v]


def contact_jacobian_y(model, q, contacts):
    """J_c (m x ny) from the independent reference: Pinocchio's contact rows times G."""
    _, reference = setup_for(model, contacts)
    G = np.column_stack([model.spanning_velocities(q, e) for e in np.eye(model.ny)])
    return reference.rows(q, np.zeros(model.nv))[0] @ G


_REFERENCES = {}


def setup_for(model, contacts):
    key = (id(model), tuple(contacts))
    if key not in _REFERENCES:
        name = next(n for (n, _), (m, _) in _CACHE.items() if m is model)
        _REFERENCES[key] = model, Reference(ROBOTS[name][0](), model, contacts)
    return _REFERENCES[key]


def null_space(A, rtol=1e-10):
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > rtol * max(1.0, s.max(initial=0.0))))
    return Vt[rank:].T


def brute_force_efforts(model, tau_id, J, weights):
    """min sum w tau_a^2 over every (tau_a, lambda) with tau_id = S^T tau_a + J^T lambda."""
    S = np.eye(model.ny)[model.actuated_y]
    A = np.hstack((S.T, J.T))
    x_p = np.linalg.lstsq(A, tau_id, rcond=1e-13)[0]
    assert np.max(np.abs(A @ x_p - tau_id)) < 1e-8 * max(1.0, np.max(np.abs(tau_id)))
    N = null_space(A)
    na = S.shape[0]
    w = np.sqrt(weights[model.actuated_y])
    z = np.linalg.lstsq(w[:, None] * N[:na], -w * x_p[:na], rcond=1e-13)[0]
    efforts = np.zeros(model.ny)
    efforts[model.actuated_y] = x_p[:na] + N[:na] @ z
    return efforts


@pytest.mark.parametrize('name', ['talos 6D feet', 'quadruped_rotors 3D feet',
                                  'humanoid_belts 6D soles', 'linkage_leg 6D foot',
                                  'parallel_ankle_leg 6D foot'])
@pytest.mark.parametrize('engine', ENGINES)
def test_projected_inverse_dynamics(name, engine):
    """The equation of motion, the minimum norm (brute force), the weighting and the round trip
    through forward dynamics."""
    model, reference = setup(name, engine)
    contacts = reference.contacts
    rng = np.random.default_rng(SEED + 5)
    for _ in range(2):
        q, yd, ydd = held_state(model, contacts, rng)
        info = model.inverse_dynamics(q, yd, ydd, contacts=contacts, info=True)
        assert isinstance(info, InverseDynamicsInfo)
        tau = info.efforts
        unactuated = np.setdiff1d(np.arange(model.ny), model.actuated_y)
        assert np.all(tau[unactuated] == 0.0)
        H, C = model.mass_matrix(q), model.bias_forces(q, yd)
        J = contact_jacobian_y(model, q, contacts)
        lam = np.concatenate(info.contact_forces)
        assert relative(H @ ydd + C, tau + J.T @ lam) < RTOL, 'H ydd + C = S^T tau + J^T lambda'
        tau_id = H @ ydd + C
        assert relative(tau, brute_force_efforts(model, tau_id, J, np.ones(model.ny))) < 1e-8
        weights = np.exp(rng.uniform(-2, 2, model.ny))
        weighted = model.inverse_dynamics(q, yd, ydd, contacts=contacts, weights=weights)
        assert relative(weighted, brute_force_efforts(model, tau_id, J, weights)) < 1e-8
        j = np.argmax(np.abs(weighted - tau))     # an effort the weights move: a free direction
        if abs(weighted[j] - tau[j]) > 1e-6 * max(1.0, np.max(np.abs(tau))):
            heavy = weights.copy()
            heavy[j] *= 100.0
            assert abs(model.inverse_dynamics(q, yd, ydd, contacts=contacts,
                                              weights=heavy)[j]) < abs(weighted[j])
        qdd = model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba')
        assert relative(qdd[model.independent_v], ydd) < 1e-8, 'round trip'


@pytest.mark.parametrize('engine', ENGINES)
def test_standing_quadruped_gravity_torques_against_pinocchio(engine):
    """A quadruped on four point feet, at rest: gravity_forces and bias_forces at v = 0 against
    the least-norm torques from Pinocchio's gravity vector and foot Jacobians."""
    model, reference = setup('solo12 3D feet', engine)
    contacts = reference.contacts
    o = reference.oracle
    q, _, _ = random_state(model, np.random.default_rng(SEED + 3))
    g = o.v_from_pin(pin.computeGeneralizedGravity(o.model, o.data, o.q_to_pin(q)))
    J = reference.rows(q, np.zeros(model.nv))[0]
    tau = model.gravity_forces(q, contacts=contacts)
    assert relative(tau, brute_force_efforts(model, g, J, np.ones(model.ny))) < RTOL
    assert np.array_equal(tau, model.bias_forces(q, np.zeros(model.ny), contacts=contacts))
    assert np.all(tau[:6] == 0.0)


def test_motion_no_torques_produce():
    """One point foot cannot hold a floating robot against gravity: ModelError with the
    residual; accelerations or velocities that break the contacts are refused."""
    model, _ = setup('quadruped_rotors 3D feet')
    q, yd, _ = random_state(model, np.random.default_rng(SEED))
    with pytest.raises(ModelError, match='no actuator torques produce this motion.*residual'):
        model.gravity_forces(q, contacts=Contact('FL_foot', '3D'))
    with pytest.raises(ModelError, match='a violates the contacts'):
        model.inverse_dynamics(q, np.zeros(model.ny), np.ones(model.ny),
                               contacts=[Contact('FL_foot', '3D')])
    with pytest.raises(ModelError, match='v moves the contacts'):
        model.inverse_dynamics(q, yd, np.zeros(model.ny), contacts=[Contact('FL_foot', '3D')])


@pytest.mark.parametrize('name, contacts', [
    ('quadruped_rotors 3D feet', [Contact(foot, '6D') for foot in QUADRUPED_FEET]),
    ('talos 6D feet', [Contact('leg_left_6_link', '6D'), Contact('leg_right_6_link', '6D'),
                       Contact('arm_left_7_link', '6D', other='arm_right_7_link'),
                       Contact('arm_left_7_link', '6D', ((0, 0.1, 0), (0, 0, 0, 1)),
                               other='arm_right_7_link',
                               other_placement=((0, 0.1, 0), (0, 0, 0, 1)))]),
])
@pytest.mark.parametrize('engine', ENGINES)
def test_redundant_contact_sets(name, contacts, engine):
    """Four 6D feet on 3-DoF legs; two hands holding each other at two points: LCABA stays
    finite and keeps the contacts, the exact route raises naming them."""
    model, _ = setup(name, engine)
    q, _, tau = random_state(model, np.random.default_rng(SEED + 2))
    J = contact_jacobian_y(model, q, contacts)
    assert np.linalg.matrix_rank(J) < J.shape[0], 'redundant'
    N = null_space(J)
    yd = N @ np.random.default_rng(SEED).normal(size=N.shape[1])
    info = model.forward_dynamics(q, yd, tau, contacts=contacts, method='lcaba', info=True)
    assert np.all(np.isfinite(info.acceleration))
    assert all(np.all(np.isfinite(f)) for f in info.contact_forces)
    assert info.constraint_residual < 1e-8
    with pytest.raises(SingularConfigurationError, match='contacts.*Delassus'):
        model.forward_dynamics(q, yd, tau, contacts=contacts, method='aba')
    assert np.array_equal(model.forward_dynamics(q, yd, tau, contacts=contacts),
                          info.acceleration), "'auto' is LCABA"


# States where LCABA with contacts stalls or runs out of iterations, found by a seeded search of
# random_state seeds against the exact route: two 6D feet on 3-DoF legs, an ill-conditioned
# Delassus matrix (condition numbers 1e9 to 4e11) that amplifies LCABA's residual into 1e-3 to
# 100 % errors of its accelerations. (robot, seed of random_state, contacts)
STALLS = [
    ('quadruped_rotors 3D feet', 245, [Contact('FL_foot', '6D'), Contact('FR_foot', '6D')]),
    ('quadruped_rotors 3D feet', 58, [Contact('FL_foot', '6D'), Contact('FR_foot', '6D')]),
    ('anymal 3D feet', 187, [Contact('LF_FOOT', '6D'), Contact('RH_FOOT', '6D')]),
    ('anymal 3D feet', 81, [Contact('LF_FOOT', '6D'), Contact('RF_FOOT', '6D')]),
]


def expected_motion(name, model, contacts, q, yd, tau_y):
    """(spanning q, v, tau, the reference's qdd): Pinocchio's constraintDynamics on trees, the
    dense KKT solve with loops."""
    _, reference = setup_for(model, contacts)
    v, tau = spanning(model, q, yd), np.zeros(model.nv)
    tau[model.independent_v] = tau_y
    if ROBOTS[name][2] == 'pinocchio':
        return v, tau, reference.pinocchio(q, v, tau, iterations=20)[0]
    return v, tau, reference.kkt(q, v, tau)[0]


@pytest.mark.parametrize('name, seed, contacts', STALLS)
@pytest.mark.parametrize('engine', ENGINES)
def test_auto_never_returns_an_unconverged_lcaba(name, seed, contacts, engine):
    """'lcaba' returns its iterate with the residual in info; 'auto' does not accept it
    (forward_dynamics.LCABA_RESIDUAL) and takes the exact route, on the checked path and the fused
    compiled call alike."""
    model, _ = setup(name, engine)
    q, yd, tau_y = random_state(model, np.random.default_rng(seed))
    v, tau, qdd_ref = expected_motion(name, model, contacts, q, yd, tau_y)
    lcaba = model.forward_dynamics(q, yd, tau_y, contacts=contacts, method='lcaba', info=True)
    assert relative(lcaba.acceleration, qdd_ref) > 1e-3 and lcaba.constraint_residual > 1e-6, \
        'LCABA stalls here, and says so'
    exact = model.forward_dynamics(q, yd, tau_y, contacts=contacts, method='aba')
    assert relative(exact, qdd_ref) < 1e-4, 'the exact route, as accurate as the conditioning lets'
    info = model.forward_dynamics(q, yd, tau_y, contacts=contacts, info=True)
    assert info.method_used == 'aba' and 'LCABA leaves the constraints violated by' in \
        info.fallback_reason
    assert np.array_equal(info.acceleration, exact)
    for _ in range(2):                  # the contacts resolved: the fused call refers to the above
        assert np.array_equal(model.forward_dynamics(q, v, tau, contacts=contacts), exact)
        assert np.array_equal(model.forward_dynamics(q, yd, tau_y, contacts=contacts,
                                                     method='lcaba'), lcaba.acceleration)


@pytest.mark.parametrize('engine', ENGINES)
def test_conflicting_redundant_contacts(engine):
    """Two 6D feet on one side of the quadruped: its hip axes line up, so that 1 of the 12 rows is
    redundant, and the random velocities make them conflict. The exact route finds its Delassus
    matrix singular by the residual, 'auto' says that no method keeps the contacts, 'lcaba'
    returns the least-squares accelerations (the dense KKT solve) with the residual in info."""
    model, _ = setup('quadruped_rotors 3D feet', engine)
    contacts = [Contact('FL_foot', '6D'), Contact('HL_foot', '6D')]
    q, yd, tau_y = random_state(model, np.random.default_rng(72))
    _, _, qdd_ref = expected_motion('quadruped_rotors 3D feet', model, contacts, q, yd, tau_y)
    assert np.linalg.matrix_rank(contact_jacobian_y(model, q, contacts), tol=1e-8) == 11
    with pytest.raises(SingularConfigurationError, match=r'Delassus.*miss the rows by'):
        model.forward_dynamics(q, yd, tau_y, contacts=contacts, method='aba')
    for _ in range(2):
        with pytest.raises(ModelError, match=r'no method keeps the constraints: LCABA leaves '
                                             r'.* violated by 0\.7.*method="lcaba"'):
            model.forward_dynamics(q, yd, tau_y, contacts=contacts)
    info = model.forward_dynamics(q, yd, tau_y, contacts=contacts, method='lcaba', info=True)
    assert relative(info.acceleration, qdd_ref) < 1e-8 and info.constraint_residual > 0.5


def points(n):
    """n 3D contacts spread over the quadruped's four feet, each at its own point."""
    return [Contact(QUADRUPED_FEET[i % 4], '3D', ((1e-3 * (i // 4), 0.0, 0.0), (0, 0, 0, 1)))
            for i in range(n)]


def peak_memory(call):
    """Bytes of NumPy's and Python's allocations at their peak during call() (tracemalloc), which
    may raise ModelError."""
    tracemalloc.start()
    try:
        call()
    except ModelError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_contact_calls_grow_linearly_up_to_the_bound():
    """Every contact call's memory grows linearly in the contact rows (4 times the rows, at most
    6 times the memory; a full SVD, a dense null space or Delassus matrix of the rows grows 16
    times), up to bounds.CONTACT_ROWS_PER_BODY per moving body; beyond it they are refused with
    ModelError before anything is built. The exact route refuses more rows than coordinates as
    redundant before it forms the Delassus matrix."""
    model, _ = setup('quadruped_rotors 3D feet')
    limit = bounds.CONTACT_ROWS_PER_BODY * (model.nb - 1)
    q, zero = model.reference_positions, np.zeros(model.ny)
    yd = np.random.default_rng(SEED).normal(size=model.ny)
    calls = {'gravity_forces': lambda c: model.gravity_forces(q, contacts=c),
             'bias_forces': lambda c: model.bias_forces(q, zero, contacts=c),
             'inverse_dynamics': lambda c: model.inverse_dynamics(q, zero, zero, contacts=c),
             'contact_bias_forces': lambda c: model.contact_bias_forces(q, yd, c),
             'forward_dynamics aba': lambda c: model.forward_dynamics(q, zero, zero, contacts=c,
                                                                      method='aba'),
             'forward_dynamics': lambda c: model.forward_dynamics(q, zero, zero, contacts=c)}
    small, large = points(limit // 12), points(limit // 3)
    for name, call in calls.items():
        for contacts in (small, large):          # buffers kept per contact set: built once
            peak_memory(lambda: call(contacts))
        assert peak_memory(lambda: call(large)) < 6 * peak_memory(lambda: call(small)) + 1e5, \
            name
    with pytest.raises(SingularConfigurationError,
                       match=rf'Delassus.*: {3 * len(small)} rows on {model.ny} coordinates'):
        calls['forward_dynamics aba'](small)
    huge = points(10_000)
    for name, call in calls.items():
        with pytest.raises(ModelError, match=r'10000 contacts have at least 30000 rows \(3 per '
                                             rf'3D contact, 6 per 6D\), more than the {limit} '):
            call(huge)
        assert peak_memory(lambda: call(huge)) < 1e5, name
    sixes = [Contact(c.link, '6D', c.placement) for c in points(limit // 6 + 1)]
    with pytest.raises(ModelError, match=rf'contacts\[:{limit // 6 + 1}\] have {limit + 6} '):
        model.gravity_forces(q, contacts=sixes)


@pytest.mark.parametrize('engine', ENGINES)
def test_unactuated_rows_are_judged_against_the_weight(engine):
    """Whether the contacts carry the floating base is judged relative to the robot's weight (its
    mass times gravity, times its reach for a moment: contacts.robot_size), whatever its largest
    torque: at 1e-10 of its mass the quadruped still cannot stand on one point foot, and stands
    on four."""
    text = open(bundled_model('quadruped_rotors')).read()
    light = re.sub(r'(mass value|ixx|ixy|ixz|iyy|iyz|izz)="([^"]+)"',
                   lambda m: f'{m.group(1)}="{float(m.group(2)) * 1e-10!r}"', text)
    for source, scale in ((text, 1.0), (light, 1e-10)):
        model = load_model(source, compiled=engine == 'compiled')
        q = model.complete_positions(random_independent_positions(
            model, np.random.default_rng(SEED)))
        mass, reach, _ = robot_size(model)
        assert abs(mass - 9.36 * scale) < 1e-9 * scale and 0.5 < reach < 0.7
        with pytest.raises(ModelError, match=r"no actuator torques produce this motion.*of the "
                                             r"robot's weight times its reach"):
            model.gravity_forces(q, contacts=Contact('FL_foot', '3D'))
        feet = [Contact(foot, '3D') for foot in QUADRUPED_FEET]
        tau = model.gravity_forces(q, contacts=feet)
        assert np.max(np.abs(tau)) > 0.1 * scale


def test_contacts_without_other_arguments_and_empty_lists():
    model, reference = setup('quadruped_rotors 3D feet')
    q, yd, tau = random_state(model, np.random.default_rng(SEED))
    assert np.array_equal(model.forward_dynamics(q, yd, tau, contacts=[]),
                          model.forward_dynamics(q, yd, tau))
    assert model.forward_dynamics(q, yd, tau, contacts=[], info=True).contact_forces == []
    one = Contact('FL_foot', '3D')
    assert np.array_equal(model.forward_dynamics(q, yd, tau, contacts=one),
                          model.forward_dynamics(q, yd, tau, contacts=[one]))
    assert np.array_equal(model.inverse_dynamics(q, yd, tau, contacts=[]),
                          model.inverse_dynamics(q, yd, tau))
    assert Contact('FL_foot') == Contact('FL_foot', '6D', ((0, 0, 0), (0, 0, 0, 1)))


BAD = [
    (lambda: Contact(5), 'Contact link must be a link name, got 5'),
    (lambda: Contact('FL_foot', '2D'), "kind '2D' is unknown; expected one of"),
    (lambda: Contact('FL_foot', kind=None), 'kind None is unknown'),
    (lambda: Contact('FL_foot', placement=((0, 0, 0), (0, 0, 0, 2))), 'has norm 2'),
    (lambda: Contact('FL_foot', placement=((0, 0, np.nan), (0, 0, 0, 1))),
     r'placement position\[2\] is nan'),
    (lambda: Contact('FL_foot', placement=((0, 0), (0, 0, 0, 1))),
     'placement position has 2 entries; expected 3'),
    (lambda: Contact('FL_foot', placement=(0, 0, 0)), r'must be \(\(x, y, z\), \(qx'),
    (lambda: Contact('FL_foot', placement='x' * 500), r'\(500 characters\)'),
    (lambda: Contact('FL_foot', other='FL_foot'), 'cannot be held to itself'),
    (lambda: Contact('FL_foot', other_placement=((0, 0, 0), (0, 0, 0, 1))), 'without other'),
    (lambda: Contact('FL_foot', other=3), 'other must be a link name'),
]


@pytest.mark.parametrize('make, message', BAD)
def test_bad_contacts_raise_on_construction(make, message):
    with pytest.raises(ModelError, match=message) as error:
        make()
    assert len(str(error.value)) < 400


@pytest.mark.parametrize('contacts, message', [
    ([Contact('nowhere')], r"contacts\[0\]: unknown link 'nowhere'; links are"),
    ([Contact('FL_foot', other='n' * 300)], r'\(300 characters\)'),
    ([Contact('FL_foot', '3D'), Contact('FL_foot', '6D')], r'contacts\[1\] holds the point'),
    ('FL_foot', 'contacts must be a Contact, a list of them or None'),
    ([('FL_foot', '3D')], r'contacts\[0\] must be a Contact'),
    (5, 'contacts must be a Contact'),
])
def test_bad_contacts_raise_on_use(contacts, message):
    model, _ = setup('quadruped_rotors 3D feet')
    q, yd, tau = random_state(model, np.random.default_rng(SEED))
    calls = (lambda: model.forward_dynamics(q, yd, tau, contacts=contacts),
             lambda: model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny),
                                            contacts=contacts),
             lambda: model.gravity_forces(q, contacts=contacts))
    for call in calls:
        with pytest.raises(ModelError, match=message):
            call()


def test_bad_inputs_after_the_contact_set_was_resolved():
    """A contact set resolved before takes the fused compiled call: the same inputs it refuses
    are then named by the checked path, and the other arguments are still checked."""
    model, reference = setup('quadruped_rotors 3D feet')
    feet = reference.contacts
    q, yd, tau = random_state(model, np.random.default_rng(SEED))
    model.forward_dynamics(q, yd, tau, contacts=feet)
    model.forward_dynamics(q, yd, tau, contacts=feet, method='aba')
    bad_q = q.copy()
    bad_q[-1] = np.nan
    for call, message in (
            *((lambda m=method: model.forward_dynamics(bad_q, yd, tau, contacts=feet, method=m),
               r'q\[.*\] is nan') for method in ('auto', 'aba')),
            *((lambda m=method: model.forward_dynamics(q, yd[:3], tau, contacts=feet, method=m),
               'v has 3 entries') for method in ('auto', 'aba')),
            *((lambda m=method: model.forward_dynamics(q, yd, tau * np.inf, contacts=feet,
                                                       method=m), 'tau')
              for method in ('auto', 'aba')),
            (lambda: model.forward_dynamics(q, yd, tau, contacts=feet, method='ABA'),
             "method 'ABA' is unknown"),
            (lambda: model.forward_dynamics(q, yd, tau, contacts=feet, settings=1e6),
             'settings must be a ProximalSettings'),
            (lambda: model.forward_dynamics(q, yd, tau, contacts=feet + [[1]]),
             r'contacts\[4\] must be a Contact')):
        with pytest.raises(ModelError, match=message):
            call()
    assert relative(model.forward_dynamics(q, yd, tau, contacts=tuple(feet)),
                    model.forward_dynamics(q, yd, tau, contacts=feet, method='lcaba',
                                           info=True).acceleration) < 1e-12


def test_same_body_and_bad_weights():
    model, _ = setup('humanoid_belts 6D soles')
    q, yd, tau = random_state(model, np.random.default_rng(SEED))
    with pytest.raises(ModelError, match='move as one body'):
        model.forward_dynamics(q, yd, tau, contacts=[Contact('left_foot', other='left_foot_sole')])
    contacts = [Contact('left_foot_sole'), Contact('right_foot_sole')]
    zero = np.zeros(model.ny)
    for weights, message in ((np.ones(3), 'weights has 3 entries'),
                             (-np.ones(model.ny), r'weights\[\d+\] is -1; expected positive'),
                             ([np.nan] * model.ny, r'weights\[0\] is nan')):
        with pytest.raises(ModelError, match=message):
            model.inverse_dynamics(q, zero, zero, contacts=contacts, weights=weights)


def independent_rows(model, reference, q, yd):
    """(J_y, drift_y): the contacts' rows J_y ydd + drift_y = 0 in independent coordinates, from
    Pinocchio's rows on spanning qdd (Reference.rows) with qdd = [K; E]^+ [k; ydd], K qdd = k the
    oracle's loop and coupling rows and E the independent entries."""
    o = reference.oracle
    v = model.spanning_velocities(q, yd)
    J, drift = reference.rows(q, v)
    K, k = o.constraint_jacobian(q), o.constraint_bias(q, v)
    lift = np.linalg.pinv(np.vstack((K, np.eye(model.nv)[model.independent_v])), rcond=1e-13)
    return J @ lift[:, K.shape[0]:], J @ lift[:, :K.shape[0]] @ k + drift


BIAS_ROBOTS = ['linkage_leg 6D foot', 'parallel_ankle_leg 6D foot', 'quadruped_rotors 3D feet',
               'humanoid_belts 6D soles']
# FL_foot held in 6D and again at a second point: 3 rows of 18 repeat, J_c has rank 15
REDUNDANT_FEET = [Contact('FL_foot', '6D'), Contact('FL_foot', '3D', OFFSET)] + [
    Contact(foot, '3D') for foot in QUADRUPED_FEET[1:]]


def bias_cases():
    return [(name, ROBOTS[name][1]) for name in BIAS_ROBOTS] + [
        ('quadruped_rotors 3D feet', REDUNDANT_FEET)]


@pytest.mark.parametrize('name, contacts', bias_cases())
@pytest.mark.parametrize('engine', ENGINES)
def test_contact_bias_forces_projection(name, contacts, engine):
    """The velocities keep the contacts and are the least change of the measured ones, the
    accelerations keep the contacts and are the least that do: against dense least squares."""
    model, _ = setup(name, engine)
    _, reference = setup_for(model, contacts)
    rng = np.random.default_rng(SEED + 17)
    for _ in range(STATES):
        q, yd, _ = random_state(model, rng)
        info = model.contact_bias_forces(q, yd, contacts, info=True)
        assert isinstance(info, ContactBiasInfo)
        J, _ = independent_rows(model, reference, q, yd)
        if contacts is REDUNDANT_FEET:
            assert np.linalg.matrix_rank(J, tol=1e-10 * np.abs(J).max()) == 15, 'redundant'
        yd_c = info.velocities
        assert np.max(np.abs(J @ yd_c)) < 1e-10 * max(1.0, np.max(np.abs(yd)))
        assert relative(yd_c, yd - np.linalg.pinv(J, rcond=1e-10) @ (J @ yd)) < 1e-10
        assert info.velocity_correction == np.max(np.abs(yd - yd_c)) > 1e-3
        J, drift = independent_rows(model, reference, q, yd_c)
        ydd = info.accelerations
        assert relative(J @ ydd, -drift) < 1e-9, 'the accelerations keep the contacts'
        assert relative(ydd, -np.linalg.pinv(J, rcond=1e-10) @ drift) < 1e-9, 'the least'
        assert np.array_equal(model.contact_bias_forces(q, spanning(model, q, yd), contacts),
                              info.efforts), 'spanning velocities'


@pytest.mark.parametrize('name, contacts', bias_cases())
@pytest.mark.parametrize('engine', ENGINES)
def test_contact_bias_forces_of_measured_accelerations(name, contacts, engine):
    """With measured accelerations a, the accelerations keep the contacts and are the least
    change of a that does (against dense least squares); the velocities are projected as without
    a; the efforts are the projected inverse dynamics there; a that keeps them is kept."""
    model, _ = setup(name, engine)
    _, reference = setup_for(model, contacts)
    rng = np.random.default_rng(SEED + 18)
    for _ in range(STATES):
        q, yd, _ = random_state(model, rng)
        a = rng.normal(size=model.ny)
        info = model.contact_bias_forces(q, yd, contacts, info=True, a=a)
        assert relative(info.velocities, model.contact_bias_forces(
            q, yd, contacts, info=True).velocities) < 1e-12
        J, drift = independent_rows(model, reference, q, info.velocities)
        ydd = info.accelerations
        assert relative(J @ ydd, -drift) < 1e-9, 'the accelerations keep the contacts'
        assert relative(ydd, a - np.linalg.pinv(J, rcond=1e-10) @ (J @ a + drift)) < 1e-9
        assert info.acceleration_correction == np.max(np.abs(a - ydd)) > 1e-3
        assert relative(info.efforts, model.inverse_dynamics(
            q, info.velocities, ydd, contacts=contacts)) < 1e-12
        kept = model.contact_bias_forces(q, info.velocities, contacts, info=True, a=ydd)
        assert kept.acceleration_correction < 1e-12 * max(1.0, np.max(np.abs(ydd)))
        assert relative(model.contact_bias_forces(q, yd, contacts, a=spanning(model, q, a)),
                        info.efforts) < 1e-12, 'spanning accelerations: their independent part'
    with pytest.raises(ModelError, match=r'^a has 2 entries'):
        model.contact_bias_forces(q, yd, contacts, a=[0.0, 1.0])
    with pytest.raises(ModelError, match=r'^a\[3\] is nan'):
        model.contact_bias_forces(q, yd, contacts, a=np.where(np.arange(model.ny) == 3, np.nan,
                                                              0.0))


@pytest.mark.parametrize('name, contacts', bias_cases())
@pytest.mark.parametrize('engine', ENGINES)
def test_contact_bias_forces_equation_of_motion(name, contacts, engine):
    """H_y ydd + C_y(yd_c) = S^T tau + J_c^T lambda, tau the projected inverse dynamics at
    (q, yd_c, ydd) (zero on the floating base and the passive coordinates)."""
    model, _ = setup(name, engine)
    rng = np.random.default_rng(SEED + 19)
    weights = np.exp(rng.uniform(-1, 1, model.ny))
    for _ in range(2):
        q, yd, _ = random_state(model, rng)
        info = model.contact_bias_forces(q, yd, contacts, weights=weights, info=True)
        tau, yd_c, ydd = info.efforts, info.velocities, info.accelerations
        assert np.all(tau[np.setdiff1d(np.arange(model.ny), model.actuated_y)] == 0.0)
        H, C = model.mass_matrix(q), model.bias_forces(q, yd_c)
        J = contact_jacobian_y(model, q, contacts)
        lam = np.concatenate(info.contact_forces)
        assert [f.size for f in info.contact_forces] == [c.rows for c in contacts]
        assert relative(H @ ydd + C, tau + J.T @ lam) < RTOL
        assert np.array_equal(tau, model.inverse_dynamics(q, yd_c, ydd, contacts=contacts,
                                                          weights=weights))


@pytest.mark.parametrize('name', BIAS_ROBOTS)
@pytest.mark.parametrize('engine', ENGINES)
def test_contact_bias_forces_at_rest_and_on_held_motions(name, engine):
    """gravity_forces at rest, bitwise; velocities that keep the contacts are kept (the
    accelerations then cancel the drift)."""
    model, reference = setup(name, engine)
    contacts = reference.contacts
    rng = np.random.default_rng(SEED + 23)
    q, yd, _ = held_state(model, contacts, rng)
    info = model.contact_bias_forces(q, np.zeros(model.nv), contacts, info=True)
    assert np.array_equal(info.efforts, model.gravity_forces(q, contacts=contacts))
    assert not np.any(info.velocities) and not np.any(info.accelerations)
    assert info.velocity_correction == 0.0
    info = model.contact_bias_forces(q, yd, contacts, info=True)
    assert info.velocity_correction < 1e-12 * max(1.0, np.max(np.abs(yd)))
    assert relative(info.efforts, model.inverse_dynamics(q, yd, info.accelerations,
                                                         contacts=contacts)) < 1e-12


@pytest.mark.parametrize('engine', ENGINES)
def test_contact_bias_forces_without_drift_equal_bias_forces(engine):
    """A humanoid standing on its soles and moving only joints off the soles' paths: the
    velocities keep the contacts with no drift, and the result is bias_forces': bitwise on the
    fused call, whose buffers bias_forces' fused call shares; to round-off on the first call,
    whose contact kernel has buffers of its own (LAPACK's results may round differently with
    their memory alignment)."""
    model, _ = setup('humanoid_belts 6D soles', engine)
    soles = [Contact('left_foot_sole', '6D', OFFSET), Contact('right_foot_sole', '6D')]
    rng = np.random.default_rng(SEED + 29)
    q, _, _ = random_state(model, rng)
    J = np.vstack([model.link_jacobian(q, c.link) for c in soles])
    free = np.flatnonzero(~np.any(J, axis=0))
    assert free.size >= 4, 'the arms and the head move off the soles\' paths'
    yd = np.zeros(model.ny)
    yd[free] = rng.normal(size=free.size)
    info = model.contact_bias_forces(q, yd, soles, info=True)
    assert np.array_equal(info.velocities, yd) and info.velocity_correction == 0.0
    assert not np.any(info.accelerations)
    expected = model.bias_forces(q, yd, contacts=soles)
    assert relative(info.efforts, expected) < 1e-13
    assert np.array_equal(model.contact_bias_forces(q, yd, soles), expected)


def test_contact_bias_forces_without_contacts():
    model, _ = setup('quadruped_rotors 3D feet')
    q, yd, _ = random_state(model, np.random.default_rng(SEED))
    for contacts in (None, []):
        info = model.contact_bias_forces(q, yd, contacts, info=True)
        assert relative(info.efforts, model.bias_forces(q, yd)) < 1e-12
        assert np.array_equal(info.velocities, yd) and info.contact_forces == []


ARM = """<robot name="arm"><link name="base"/>
<link name="upper"><inertial><mass value="1"/><origin xyz="0.25 0 0"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
<link name="lower"><inertial><mass value="1"/><origin xyz="0.25 0 0"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
<link name="tip"/>
<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
<axis xyz="0 0 1"/><limit effort="10" velocity="10" lower="-3" upper="3"/></joint>
<joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/><limit effort="10" velocity="10" lower="-3" upper="3"/>
</joint><joint name="tip" type="fixed"><parent link="lower"/><child link="tip"/>
<origin xyz="0.5 0 0"/></joint></robot>"""


def test_contact_bias_forces_bad_inputs():
    model, _ = setup('quadruped_rotors 3D feet')
    q, yd, _ = random_state(model, np.random.default_rng(SEED))
    feet = ROBOTS['quadruped_rotors 3D feet'][1]
    for call, message in (
            (lambda: model.contact_bias_forces(q, yd[:3], feet), 'v has 3 entries; expected'),
            (lambda: model.contact_bias_forces(q, [np.nan] * model.ny, feet), r'v\[0\] is nan'),
            (lambda: model.contact_bias_forces(q[:-1], yd, feet), 'q has'),
            (lambda: model.contact_bias_forces(q, yd, 'FL_foot'),
             'contacts must be a Contact, a list of them or None'),
            (lambda: model.contact_bias_forces(q, yd, [Contact('nowhere')]),
             r"contacts\[0\]: unknown link 'nowhere'"),
            (lambda: model.contact_bias_forces(q, yd, feet, weights=-np.ones(model.ny)),
             'expected positive weights'),
            (lambda: model.contact_bias_forces(q, yd, Contact('FL_foot', '3D')),
             'no actuator torques produce this motion')):
        with pytest.raises(ModelError, match=message):
            call()
    arm = load_model(ARM)
    straight = np.zeros(arm.nq)                  # the arm stretched out: J_c loses a row
    with pytest.raises(ModelError, match='no accelerations keep the contacts.*loses rank'):
        arm.contact_bias_forces(straight, [1.0, 0.0], Contact('tip', '3D'))
    info = arm.contact_bias_forces([0.0, 0.5], [1.0, 0.0], Contact('tip', '3D'), info=True)
    assert np.max(np.abs(info.velocities)) < 1e-15, 'a bent arm with its tip held cannot move'
    assert abs(info.velocity_correction - 1.0) < 1e-15
