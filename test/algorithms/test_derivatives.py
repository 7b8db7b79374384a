"""Derivatives of cluster inverse and forward dynamics (algorithms/derivatives.py) against
independent references.

- Trees (example-robot-data: Solo-12, Talos, UR5): Pinocchio's computeRNEADerivatives and
  computeABADerivatives, the free-flyer perturbed on the right in its tangent space as
  pinocchio.integrate, to 1e-9.
- Every bundled robot and the published-pattern test robots (loops, couplings, rotors): central
  differences of the KKT oracle's tau_y = G^T (H (G ydd + g) + C) along completed motions (the
  dependent joints following), to 1e-6 relative; H_y against the oracle's G^T H G.
- The loops' third-order bias term against central differences of the second-order one.
"""

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, random_independent_positions, ROBOTS
from dynamics_node.algorithms import derivatives
from dynamics_node.algorithms.aba import aba
from dynamics_node.algorithms.kinematics import forward_pass, update_transforms
from dynamics_node.multibody.constraints import bias_rate, joint_positions, rows_at
from dynamics_node.multibody.joints import retract
from dynamics_node.contacts import resolve as contact_frames
from test_contacts import (brute_force_efforts, held_state, random_state as contacts_state,
                           Reference as ContactReference, setup as contacts_setup)
import published_robots
from bipeds import MODELS, stance, two_legs
from dynamics_node import Contact, load_model
from oracle import KKTOracle
from whole_body import bundled, data, spanning_G, state, tree, TREES

STATES = 2
RTOL = 1e-9
FD_RTOL = 1e-6
STEP = 1e-3


def pinocchio_derivatives(derivatives_of, reference, q, v, x):
    """Pinocchio's computeRNEADerivatives or computeABADerivatives at q, v and a or tau, in the
    model's layout, the third matrix (M or M^-1, upper triangle) made symmetric."""
    first, second, third = (np.array(m) for m in derivatives_of(
        reference.model, reference.data, reference.q_to_pin(q), reference.v_to_pin(v),
        reference.v_to_pin(x)))
    third = np.triu(third) + np.triu(third, 1).T
    order = np.ix_(reference._vperm, reference._vperm)
    return first[order], second[order], third[order]


@pytest.mark.parametrize('name', TREES)
def test_trees_inverse_dynamics_match_pinocchio(name, rng):
    model, reference = tree(name)
    work = data(model)
    for _ in range(STATES):
        q, yd, ydd = state(model, rng)
        expected = pinocchio_derivatives(pin.computeRNEADerivatives, reference, q, yd, ydd)
        actual = derivatives.inverse_dynamics_derivatives(model, work, q, yd, ydd)
        for x, y, what in zip(actual, expected, ('dtau/dq', 'dtau/dv', 'H')):
            assert_close(x, y, f'{what} (computeRNEADerivatives)', RTOL)


@pytest.mark.parametrize('name', TREES)
def test_trees_forward_dynamics_match_pinocchio(name, rng):
    model, reference = tree(name)
    work = data(model)
    for _ in range(STATES):
        q, yd, tau = state(model, rng)
        forward_pass(model, work, q, yd)
        ydd = aba(model, work, q, yd, tau)
        expected = pinocchio_derivatives(pin.computeABADerivatives, reference, q, yd, tau)
        actual = derivatives.forward_dynamics_derivatives(model, work, q, yd, ydd)
        for x, y, what in zip(actual, expected, ('dydd/dq', 'dydd/dv', 'H^-1')):
            assert_close(x, y, f'{what} (computeABADerivatives)', RTOL)


def oracle_tau_y(model, reference, q, yd, ydd):
    """tau_y = G^T (H (G ydd + g) + C) of the KKT oracle at q."""
    G = reference.null_space_G(q, model.independent_v)
    v = G @ yd
    g = reference.explicit_bias_g(q, v, model.independent_v)
    return reference.inverse_dynamics_projected(q, v, G @ ydd + g, G)


def position_of_y(model):
    """{y: index into the independent positions} of the positioned scalar coordinates."""
    y_of_v = {int(v): y for y, v in enumerate(model.independent_v)}
    out = {}
    for n, i in enumerate(model.independent_q):
        body = int(np.searchsorted(model.idx_q[1:], i, side='right'))
        if model.nq_body[body] == 1:
            out[y_of_v[int(model.idx_v[body])]] = n
    return out


def central(f, h=STEP):
    """d/dt f(t) at 0, fourth-order central difference."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def completed_state(model, reference, rng):
    y0 = random_independent_positions(model, rng)
    return y0, model.complete_positions(y0), rng.normal(size=model.ny), rng.normal(size=model.ny)


def moved(model, reference, y0, q0, l, t):
    """The closed positions reached by moving independent coordinate l by t: a positioned scalar
    coordinate through complete_positions, any other (a free-flyer's, a spherical joint's, an idle
    spin's) along G e_l with Pinocchio's integrate, closed to first order, which a central
    difference does not see."""
    where = position_of_y(model).get(l)
    if where is None:
        return reference.integrate(q0, spanning_G(model, reference, q0)[:, l] * t)
    y = y0.copy()
    y[where] += t
    return model.complete_positions(y)


def assert_inverse_dynamics_derivatives(model, reference, y0, q, yd, ydd):
    """The NumPy algorithm's derivatives against the oracle: H_y against G^T H G, the others
    against central differences of tau_y along completed motions."""
    work = data(model)
    d_y, d_yd, H_y = derivatives.inverse_dynamics_derivatives(model, work, q, yd, ydd)
    G = spanning_G(model, reference, q)
    assert_close(H_y, G.T @ reference.mass_matrix(q) @ G, 'H_y (oracle G^T H G)', RTOL)
    eye = np.eye(model.ny)
    expected_yd = np.column_stack([central(lambda t: oracle_tau_y(
        model, reference, q, yd + t * eye[l], ydd)) for l in range(model.ny)])
    assert_close(d_yd, expected_yd, 'dtau_y/dyd (central differences)', FD_RTOL)
    expected_y = np.column_stack([central(lambda t: oracle_tau_y(
        model, reference, moved(model, reference, y0, q, l, t), yd, ydd))
        for l in range(model.ny)])
    assert_close(d_y, expected_y, 'dtau_y/dy (central differences)', FD_RTOL)


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_match_central_differences(name, rng):
    model, reference = bundled(name)
    assert_inverse_dynamics_derivatives(model, reference, *completed_state(model, reference, rng))


@pytest.mark.parametrize('name', published_robots.NAMES)
def test_published_pattern_robots_match_central_differences(name):
    """The test robots of published patterns (Extended URDF pairs, massless rods, mimic chains,
    idle spins of split joints), at their seeded closed states."""
    model, reference = published_robots.robot(name, False), published_robots.oracle(name)
    state = published_robots.states(name, False)[0]
    assert_inverse_dynamics_derivatives(model, reference, state.q_ind, state.q, state.yd,
                                        state.ydd)


BIPEDS = {'cassie (Extended URDF legs)': (lambda: two_legs('cassie_like_leg', 0.12, -0.02),
                                          ('left_foot', 'right_foot')),
          'wl16 (Stewart legs)': (lambda: two_legs('stewart_leg', 0.15, -0.05),
                                  ('left_sole', 'right_sole')),
          'digit': (lambda: (MODELS / 'digit_like_biped.urdf').read_text(),
                    ('left_sole', 'right_sole'))}


@pytest.mark.parametrize('name', BIPEDS)
def test_bipeds_match_central_differences(name, rng):
    """Floating bipeds with loop knees and ankles: inverse dynamics free, forward dynamics on
    their 6D feet."""
    text, soles = BIPEDS[name][0](), BIPEDS[name][1]
    model, reference = load_model(text, compiled=False), KKTOracle(text)
    reference.set_layout(model.joint_names)
    q = stance(model, rng)
    yd, ydd = 0.3 * rng.normal(size=model.ny), rng.normal(size=model.ny)
    assert_inverse_dynamics_derivatives(model, reference, q[model.independent_q], q, yd, ydd)
    feet = [Contact(link, '6D') for link in soles]
    assert_constrained_derivatives(model, ContactReference(text, model, feet),
                                   q[model.independent_q], q, yd, rng.normal(size=model.ny))


CONTACT_TREES = ('solo12 3D feet', 'talos 6D feet', 'talos hands')


@pytest.mark.parametrize('name', CONTACT_TREES)
def test_trees_with_contacts_match_pinocchio(name, rng):
    """computeConstraintDynamicsDerivatives after constraintDynamics (LOCAL rigid contacts)."""
    model, reference = contacts_setup(name, 'numpy')
    o = reference.oracle
    for _ in range(STATES):
        q, yd, tau = contacts_state(model, rng)
        result = model.forward_dynamics(q, yd, tau, contacts=reference.contacts, method='aba',
                                        info=True)
        ydd = result.acceleration[model.independent_v]
        actual = derivatives.constrained_forward_dynamics_derivatives(
            model, data(model), q, yd, ydd, contact_frames(model, reference.contacts),
            result.contact_forces)
        models = pin.StdVec_RigidConstraintModel(reference.constraint_models)
        datas = pin.StdVec_RigidConstraintData([m.createData() for m in models])
        pdata = o.model.createData()
        pin.initConstraintDynamics(o.model, pdata, models, datas)
        pin.constraintDynamics(o.model, pdata, o.q_to_pin(q), o.v_to_pin(yd), o.v_to_pin(tau),
                               models, datas, pin.ProximalSettings(1e-14, 1e-12, 1))
        pin.computeConstraintDynamicsDerivatives(o.model, pdata, models, datas)
        order = np.ix_(o._vperm, o._vperm)
        expected = (pdata.ddq_dq[order], pdata.ddq_dv[order], pdata.ddq_dtau[order])
        for x, y, what in zip(actual, expected, ('dydd/dq', 'dydd/dv', 'dydd/dtau')):
            assert_close(x, y, f'{what} (computeConstraintDynamicsDerivatives)', RTOL)


CONTACT_LOOPS = ('quadruped_rotors 3D feet', 'humanoid_belts 6D soles', 'linkage_leg 3D foot',
                 'linkage_leg 6D foot', 'parallel_ankle_leg 6D foot')


def held_kkt(model, reference, q, v, tau):
    """The dense KKT solve's qdd (test_contacts.Reference.kkt) with the held coordinates' rows
    e_i^T qdd = 0 added (idle spins of massless rods, which the library holds still)."""
    oracle = reference.oracle
    H, C = oracle.mass_matrix(q), oracle.bias(q, v)
    K, k = oracle.constraint_jacobian(q), oracle.constraint_bias(q, v)
    J, drift = reference.rows(q, v)
    held = np.eye(model.nv)[model.independent_v[model.held_y]]
    A = np.vstack((K, J, held))
    b = np.concatenate((k, -drift, np.zeros(len(held))))
    n, m = H.shape[0], A.shape[0]
    M = np.block([[H, -A.T], [A, np.zeros((m, m))]])
    return np.linalg.lstsq(M, np.concatenate((tau - C, b)), rcond=1e-13)[0][:n]


def assert_constrained_derivatives(model, reference, y0, q, yd, tau_y):
    """Central differences of the dense KKT solve (the oracle's loop rows and Pinocchio's contact
    rows) along completed motions, tau_y held (tau zero on the dependent coordinates)."""
    oracle = reference.oracle

    def ydd(q, yd, tau_y):
        tau = np.zeros(model.nv)
        tau[model.independent_v] = tau_y
        G = spanning_G(model, oracle, q)
        return held_kkt(model, reference, q, G @ yd, tau)[model.independent_v]

    result = model.forward_dynamics(q, yd, tau_y, contacts=reference.contacts, method='aba',
                                    info=True)
    actual = derivatives.constrained_forward_dynamics_derivatives(
        model, data(model), q, yd, result.acceleration[model.independent_v],
        contact_frames(model, reference.contacts), result.contact_forces)
    eye = np.eye(model.ny)
    expected = (
        np.column_stack([central(lambda t: ydd(moved(model, oracle, y0, q, l, t), yd, tau_y))
                         for l in range(model.ny)]),
        np.column_stack([central(lambda t: ydd(q, yd + t * eye[l], tau_y))
                         for l in range(model.ny)]),
        np.column_stack([ydd(q, yd, tau_y + eye[l]) - ydd(q, yd, tau_y)
                         for l in range(model.ny)]))
    for x, y, what in zip(actual, expected, ('dydd/dy', 'dydd/dyd', 'dydd/dtau')):
        assert_close(x, y, f'{what} (central differences of the KKT solve)', FD_RTOL)


@pytest.mark.parametrize('name', CONTACT_LOOPS)
def test_loops_with_contacts_match_central_differences(name, rng):
    model, reference = contacts_setup(name, 'numpy')
    y0 = random_independent_positions(model, rng)
    assert_constrained_derivatives(model, reference, y0, model.complete_positions(y0),
                                   0.3 * rng.normal(size=model.ny), rng.normal(size=model.ny))


def fused_calls(model, monkeypatch):
    """A list that records, per contact route the model calls, whether it ran as one compiled
    call (its engine's fused_contacts)."""
    engine, fused = model._local.data.engine, []
    calls = engine.fused_contacts

    def counted(route, *arguments):
        result = calls(route, *arguments)
        fused.append(result is not None)
        return result
    monkeypatch.setattr(engine, 'fused_contacts', counted)
    return fused


@pytest.mark.parametrize('name', CONTACT_TREES + CONTACT_LOOPS)
def test_compiled_contact_derivatives_equal_the_algorithm(name, rng, monkeypatch):
    """forward_dynamics_derivatives with contacts, one compiled call (kernels/
    contact_derivatives.py; a contact set's first call resolves the set by the route first),
    equals the NumPy algorithm's, with a wrench on a link; info's ydd is the exact route's."""
    model, reference = contacts_setup(name, 'compiled')
    algorithm = contacts_setup(name, 'numpy')[0]
    fused, contacts = fused_calls(model, monkeypatch), reference.contacts
    for _ in range(STATES):
        q, yd, tau = contacts_state(model, rng)
        wrenches = {model.links[-1]: (rng.normal(size=3), rng.normal(size=3))}
        expected = algorithm.forward_dynamics_derivatives(q, yd, tau, wrenches, contacts,
                                                          info=True)
        for _ in range(2):
            actual = model.forward_dynamics_derivatives(q, yd, tau, wrenches, contacts, info=True)
            assert fused[-1], 'the call with contacts was not one compiled call'
            for x, y, what in zip(actual, expected, expected._fields):
                assert_close(x, y, f'{what} (compiled)', 1e-10)


PROJECTED = ('talos 6D feet', 'quadruped_rotors 3D feet', 'humanoid_belts 6D soles',
             'linkage_leg 6D foot', 'parallel_ankle_leg 6D foot')


@pytest.mark.parametrize('name', PROJECTED)
def test_projected_inverse_dynamics_match_central_differences(name):
    """The efforts of least weighted norm, by brute force on the oracle's tau_id and contact
    Jacobian, differentiated centrally along completed motions."""
    model, reference = contacts_setup(name, 'numpy')
    oracle, contacts = reference.oracle, reference.contacts
    rng = np.random.default_rng(11)
    q, yd, ydd = held_state(model, contacts, rng)
    weights = np.exp(rng.uniform(-1, 1, model.ny))

    def efforts(q, yd, ydd):
        G = spanning_G(model, oracle, q)
        J = reference.rows(q, G @ yd)[0] @ G
        return brute_force_efforts(model, oracle_tau_y(model, oracle, q, yd, ydd), J, weights)

    actual = model.inverse_dynamics_derivatives(q, yd, ydd, contacts=contacts, weights=weights)
    eye = np.eye(model.ny)
    y0 = q[model.independent_q]
    expected = (
        np.column_stack([central(lambda t: efforts(moved(model, oracle, y0, q, l, t), yd, ydd))
                         for l in range(model.ny)]),
        np.column_stack([central(lambda t: efforts(q, yd + t * eye[l], ydd))
                         for l in range(model.ny)]),
        np.column_stack([central(lambda t: efforts(q, yd, ydd + t * eye[l]))
                         for l in range(model.ny)]))
    for x, y, what in zip(actual, expected, ('dtau/dy', 'dtau/dyd', 'dtau/dydd')):
        assert_close(x, y, f'{what} (central differences of the least-norm efforts)', FD_RTOL)


@pytest.mark.parametrize('name', PROJECTED)
def test_compiled_projected_derivatives_equal_the_algorithm(name, monkeypatch):
    """inverse_dynamics_derivatives with contacts, one compiled call (from a contact set's first
    call), equals the NumPy algorithm's, at unit and at other weights and with a wrench."""
    model, reference = contacts_setup(name, 'compiled')
    algorithm = contacts_setup(name, 'numpy')[0]
    fused, contacts = fused_calls(model, monkeypatch), reference.contacts
    rng = np.random.default_rng(12)
    q, yd, ydd = held_state(model, contacts, rng)
    wrenches = {model.links[-1]: (rng.normal(size=3), rng.normal(size=3))}
    for weights in (None, np.exp(rng.uniform(-1, 1, model.ny))):
        expected = algorithm.inverse_dynamics_derivatives(q, yd, ydd, wrenches, contacts,
                                                          weights)
        for _ in range(2):
            actual = model.inverse_dynamics_derivatives(q, yd, ydd, wrenches, contacts, weights)
            assert fused[-1], 'the call with contacts was not one compiled call'
            for x, y, what in zip(actual, expected, expected._fields):
                assert_close(x, y, f'{what} (compiled)', 1e-10)


@pytest.mark.parametrize('name', [n for n in ROBOTS if any(
    not c.linear for c in bundled(n)[0].cluster_list)])
def test_bias_rate_matches_central_differences(name, rng):
    """The loops' third-order term d/ddelta k(u, w) (constraints.bias_rate) against central
    differences of the bilinear bias k(u, w) as the cluster's joints move along delta (each by
    retract: child-frame steps), u and w held, at random directions."""
    model, _ = bundled(name)
    work = data(model)
    q0 = model.complete_positions(random_independent_positions(model, rng))
    for cluster in model.cluster_list:
        if cluster.linear:
            continue
        delta, u, w = (rng.normal(size=cluster.n) for _ in range(3))

        def bias(t):
            q = q0.copy()
            for b in cluster.bodies:
                q0_b, c0 = model.idx_q[b], cluster.col[b]
                q[q0_b:q0_b + model.nq_body[b]] = retract(
                    model.joint_type[b], model.axis[b], q0[q0_b:q0_b + model.nq_body[b]],
                    t * delta[c0:c0 + model.nv_body[b]])
            update_transforms(model, work, q)
            return rows_at(model, work, cluster, w, u)[1]

        expected = central(bias)
        update_transforms(model, work, q0)
        actual = bias_rate(cluster, work.Xup, model.S, delta, u, w, joint_positions(model, work))
        assert_close(actual, expected, f'bias_rate of cluster {cluster.name}', FD_RTOL)
