"""Proximal LCABA (Sathya & Carpentier 2025) against the cluster ABA, a dense regularised KKT
reference built from the independent oracle, and the singular and redundant loops where the cluster
ABA gives up."""

import numpy as np
import pytest

from conftest import assert_close, random_state, robot, ROBOTS
from dynamics_node import bundled_model, load_model, ModelError, SingularConfigurationError
from dynamics_node.forward_dynamics import lcaba_is_cheaper
from dynamics_node.algorithms.kinematics import update_transforms
from dynamics_node.algorithms.lcaba import elimination_plan, lcaba, ProximalSettings
from dynamics_node.multibody.constraints import joint_positions
from mechanisms import parallel_chains
from oracle import KKTOracle
from singular_loops import (dead_point, four_bar_positions, LCABA_RTOL, null_velocity, REDUNDANT,
                            ROCKER_DRIVEN)

STATES = 3


def _oracle(model, xml):
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    return reference


def proximal_kkt(reference, q, v, tau, mu=1e6):
    """Dense regularised KKT reference from the oracle's H, C, K, k (the dual proximal point
    method, Sathya & Carpentier 2025 eqs. 8-11): repeat [[H, K^T], [K, -1/mu]] [qdd; lam] = [tau -
    C; k - lam_prev / mu] until lam settles. Every system is nonsingular for any K, and qdd
    converges to the least-constraint solution min |qdd - qdd_free|_H subject to K qdd = k, also
    for rank-deficient K."""
    H, C = reference.mass_matrix(q), reference.bias(q, v)
    K, k = reference.constraint_jacobian(q), reference.constraint_bias(q, v)
    n, m = K.shape[1], K.shape[0]
    A = np.block([[H, K.T], [K, -np.eye(m) / mu]])
    lam = np.zeros(m)
    for _ in range(100):
        x = np.linalg.solve(A, np.concatenate((tau - C, k - lam / mu)))
        settled = np.max(np.abs(x[n:] - lam)) < 1e-12 * max(1.0, np.max(np.abs(lam)))
        lam = x[n:]
        if settled:
            break
    return x[:n]


def constraint_forces(model, q, qd, multipliers):
    """sum_c K_c^T lambda_c (nv) with K_c in the rows of constraints.py (those of the
    multipliers)."""
    data = model.create_data()
    update_transforms(model, data, q)
    force = np.zeros(model.nv)
    for cluster, (v0, v1) in zip(model.cluster_list, model.v_range):
        for con in cluster.constraints:
            K, _ = con.evaluate(data.Xup, model.S, cluster.col, cluster.n, qd[v0:v1],
                                positions=joint_positions(model, data))
            force[v0:v1] += K.T @ multipliers[con.name]
    return force


def assert_constraint_forces(model, reference, q, v, tau, info, wrenches=None):
    """H qdd + C - tau = sum K^T lambda, to the precision of the dual update lambda += mu r (eq.
    33), which carries the round-off of r (~eps |K| |a|) times mu."""
    force = reference.mass_matrix(q) @ info.acceleration + reference.bias(q, v, wrenches) - tau
    error = np.max(np.abs(constraint_forces(model, q, v, info.multipliers) - force))
    bound = (100 * ProximalSettings().mu * np.finfo(float).eps
             * max(1.0, np.max(np.abs(info.acceleration))))
    assert error <= bound, f'K^T lambda: max error {error:.3e} > {bound:.3e}'


# ---- regular configurations: LCABA = cluster ABA on every bundled robot ----

@pytest.mark.parametrize('name', ROBOTS)
def test_lcaba_matches_cluster_aba(name, rng):
    model = robot(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
        expected = model.forward_dynamics(q, v, tau, wrenches, method='aba')
        info = model.forward_dynamics(q, v, tau, wrenches, method='lcaba', info=True)
        assert_close(info.acceleration, expected, 'qdd LCABA vs cluster ABA', LCABA_RTOL)
        assert info.method_used == 'lcaba' and info.fallback_reason == '', 'method reported'
        assert info.constraint_residual < ProximalSettings().tolerance, 'residual ||K qdd - k||'
        assert 1 <= info.iterations <= 5, f'iterations {info.iterations}'
        tau_y = tau[model.independent_v]
        lifted = model.forward_dynamics(q, yd, tau_y, wrenches, method='lcaba')
        assert_close(lifted, model.forward_dynamics(q, yd, tau_y, wrenches, method='aba'),
                     'qdd LCABA from independent inputs', LCABA_RTOL)


@pytest.mark.parametrize('name', ROBOTS)
def test_multipliers_are_constraint_forces(name, rng):
    """H qdd + C - tau = sum K^T lambda (oracle H, C; library rows K of constraints.py)."""
    model = robot(name)
    reference = _oracle(model, bundled_model(name))
    q, yd, wrenches = random_state(model, rng)
    v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
    info = model.forward_dynamics(q, v, tau, wrenches, method='lcaba', info=True)
    assert set(info.multipliers) == {con.name for c in model.cluster_list for con in c.constraints}
    assert_constraint_forces(model, reference, q, v, tau, info, wrenches)


@pytest.mark.parametrize('name', ROBOTS)
def test_auto_keeps_cluster_aba_where_it_works(name, rng):
    model = robot(name)
    q, yd, wrenches = random_state(model, rng)
    tau = rng.normal(size=model.ny)
    info = model.forward_dynamics(q, yd, tau, wrenches, info=True)
    if lcaba_is_cheaper(model):         # a loop cluster large enough for LCABA (the delta robot's)
        assert (info.method_used, info.fallback_reason) == ('lcaba', '')
        assert_close(info.acceleration, model.forward_dynamics(q, yd, tau, wrenches, method='aba'),
                     'qdd auto', LCABA_RTOL)
        return
    assert (info.method_used, info.fallback_reason, info.iterations,
            info.multipliers) == ('aba', '', 0, {})
    assert info.constraint_residual < 1e-9 * max(1.0, np.max(np.abs(info.acceleration))), (
        'ABA residual')
    assert_close(model.forward_dynamics(q, yd, tau, wrenches), info.acceleration, 'qdd auto')


@pytest.mark.parametrize('loop, method', [(6, 'aba'), (7, 'aba'), (8, 'lcaba'), (24, 'lcaba')])
def test_auto_picks_lcaba_for_large_loop_clusters(loop, method, rng):
    """The cost rule of method 'auto' (forward_dynamics.LCABA_CROSSOVER) on one closed chain of
    loop links."""
    xml, q = parallel_chains(1, loop)
    model = load_model(xml)
    yd, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    info = model.forward_dynamics(q, yd, tau, info=True)
    assert (info.method_used, info.fallback_reason) == (method, ''), f'{loop} links'
    assert_close(info.acceleration, model.forward_dynamics(q, yd, tau, method='aba'),
                 'qdd auto vs aba', LCABA_RTOL)


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_auto_never_returns_an_unconverged_lcaba(compiled, rng):
    """Where 'auto' starts with LCABA (a closed chain of 24 links), an iterate that does not keep
    the loops (one iteration) is not returned: 'auto' takes the cluster ABA, on the checked path
    and in the fused compiled call; 'lcaba' returns the iterate. At a dead point, where the
    cluster ABA cannot run, 'auto' retries LCABA at the largest penalty, else raises."""
    xml, q = parallel_chains(1, 24)
    model = load_model(xml, compiled=compiled)
    yd, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    one = ProximalSettings(max_iterations=1)
    iterate = model.forward_dynamics(q, yd, tau, method='lcaba', settings=one, info=True)
    exact = model.forward_dynamics(q, yd, tau, method='aba')
    assert iterate.constraint_residual > 1e-6 and model.auto_lcaba
    info = model.forward_dynamics(q, yd, tau, settings=one, info=True)
    assert info.method_used == 'aba' and info.fallback_reason.startswith(
        'LCABA leaves the constraints violated by')
    assert np.array_equal(info.acceleration, exact)
    for _ in range(2):
        assert np.array_equal(model.forward_dynamics(q, yd, tau, settings=one), exact)
        assert np.array_equal(model.forward_dynamics(q, yd, tau, method='lcaba', settings=one),
                              iterate.acceleration)
    four_bar = load_model(ROCKER_DRIVEN, compiled=compiled)
    q = four_bar_positions(four_bar, *dead_point('folded'))
    v, tau = np.zeros(four_bar.nv), np.ones(four_bar.ny)
    with pytest.raises(ModelError, match=r'no method keeps the constraints: cluster \'crank\' '
                                         r'is at a singular.*LCABA leaves.*at mu 1e\+09'):
        four_bar.forward_dynamics(q, v, tau, settings=one)
    info = four_bar.forward_dynamics(q, v, tau, settings=ProximalSettings(max_iterations=2),
                                     info=True)
    assert info.method_used == 'lcaba' and info.constraint_residual < 1e-10


# ---- singular and redundant loops: the cluster ABA raises, LCABA solves ----

@pytest.mark.parametrize('kind', ['stretched', 'folded'])
@pytest.mark.parametrize('xml', [ROCKER_DRIVEN, REDUNDANT],
                         ids=['revolute_loop', 'redundant_weld'])
def test_dead_point_falls_back_to_lcaba(xml, kind, rng):
    model = load_model(xml)
    assert model.independent_joint_names == ('rocker_joint',), 'rocker-driven variant'
    reference = _oracle(model, xml)
    q = four_bar_positions(model, *dead_point(kind))
    assert np.max(np.abs(reference.loop_residual(q))) < 1e-12, 'dead point is closed'
    v, tau = null_velocity(reference, q, rng), rng.normal(size=model.nv)
    with pytest.raises(SingularConfigurationError, match='singular configuration'):
        model.forward_dynamics(q, v, tau, method='aba')
    info = model.forward_dynamics(q, v, tau, info=True)
    assert info.method_used == 'lcaba', 'auto falls back'
    assert 'singular configuration' in info.fallback_reason, f'reason {info.fallback_reason!r}'
    qdd = info.acceleration
    assert np.all(np.isfinite(qdd)), 'finite qdd'
    K, k = reference.constraint_jacobian(q), reference.constraint_bias(q, v)
    assert np.max(np.abs(K @ qdd - k)) < 1e-9, 'oracle K qdd = k'
    assert info.constraint_residual < ProximalSettings().tolerance, 'reported residual'
    assert_close(qdd, proximal_kkt(reference, q, v, tau), 'qdd vs regularised KKT', LCABA_RTOL)
    assert_close(qdd, reference.forward_dynamics(q, v, tau), 'qdd vs null-space KKT', LCABA_RTOL)
    assert_constraint_forces(model, reference, q, v, tau, info)


def test_redundant_weld_at_regular_configurations(rng):
    """6 active rows of rank 3: the cluster ABA's rank-revealing split copes, LCABA agrees with
    it."""
    model = load_model(REDUNDANT)
    reference = _oracle(model, REDUNDANT)
    assert len(model.cluster_list[0].active_rows) == 6 and model.ny == 1, 'redundant structure'
    for crank in rng.uniform(-np.pi, np.pi, STATES):
        q = four_bar_positions(model, *robot('four_bar').complete_positions([crank]))
        assert reference.constraint_rank(q) == 3, 'rank of the 6 weld rows'
        v, tau = null_velocity(reference, q, rng), rng.normal(size=model.nv)
        qdd = model.forward_dynamics(q, v, tau, method='lcaba')
        assert_close(qdd, model.forward_dynamics(q, v, tau, method='aba'), 'qdd vs cluster ABA',
                     LCABA_RTOL)
        assert_close(qdd, proximal_kkt(reference, q, v, tau), 'qdd vs regularised KKT', LCABA_RTOL)


def test_independent_velocities_cannot_be_lifted_at_a_dead_point():
    model = load_model(ROCKER_DRIVEN)
    q = four_bar_positions(model, *dead_point('stretched'))
    with pytest.raises(SingularConfigurationError, match='pass the 3 spanning velocities'):
        model.forward_dynamics(q, [0.0], [0.0])


# ---- settings, elimination order, reuse ----

@pytest.mark.parametrize('field, value', [('mu', 0.0), ('mu', np.inf), ('tolerance', -1e-10),
                                          ('max_iterations', 0), ('max_iterations', 2.5)])
def test_settings_validate_themselves(field, value):
    with pytest.raises(ModelError, match=f'ProximalSettings.{field} is'):
        ProximalSettings(**{field: value})


def test_unknown_method_is_named():
    model = robot('four_bar')
    q = model.complete_positions([0.3])
    expected = r"method 'prox' is unknown; expected one of \['auto', 'aba', 'lcaba'\]"
    with pytest.raises(ModelError, match=expected):
        model.forward_dynamics(q, [0.0], [0.0], method='prox')


def _chain_link(name, parent):
    inertia = 'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"'
    return (f'<link name="{name}"><inertial><mass value="1"/><inertia {inertia}/></inertial>'
            f'</link><joint name="j{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{name}"/><origin xyz="0.3 0.05 0"/><axis xyz="0 0 1"/></joint>')


def _loop(a, b):
    return (f'<loop name="{a}_{b}" type="revolute"><predecessor link="{a}"/><successor '
            f'link="{b}"/><axis xyz="0 0 1"/></loop>')


# Sathya & Carpentier 2025 Fig. 4: 11 links, branches 3-4-5-6, 3-7-8 and 3-9-10-11, cut joints 6-8
# and 8-11.
FIG4_TREE = {'l1': 'base', 'l2': 'l1', 'l3': 'l2', 'l4': 'l3', 'l5': 'l4', 'l6': 'l5', 'l7': 'l3',
             'l8': 'l7', 'l9': 'l3', 'l10': 'l9', 'l11': 'l10'}
FIG4 = ('<robot name="fig4"><link name="base"/>'
        + ''.join(_chain_link(n, p) for n, p in FIG4_TREE.items())
        + _loop('l6', 'l8') + _loop('l8', 'l11') + '</robot>')


def test_minimum_degree_order_of_seed_fig4():
    """Min-degree keeps every eliminated leaf at one neighbour; eliminating link 8 first would
    couple 6 and 11 and give the leaves two (Sathya & Carpentier 2025 Sec. IV-B)."""
    model = load_model(FIG4)
    plan = elimination_plan(model)
    body = {link: model.link_frame[link][0] for link in FIG4_TREE}
    assert sorted(plan.order) == list(range(1, model.nb)), 'every body eliminated once'
    assert max(len(plan.neighbours[i]) for i in plan.order) == 1, 'm_c = 1'
    position = {link: plan.order.index(b) for link, b in body.items()}
    assert position['l8'] > max(position['l6'], position['l11']), 'link 8 after both loop ends'
    assert plan.neighbours[body['l7']] == (body['l3'],), 'parent is a neighbour (eq. 34 case)'
    assert elimination_plan(model) is plan, 'computed once per model'


def test_repeated_calls_reuse_data(rng):
    model = robot('linkage_leg')
    q, yd, _ = random_state(model, rng)
    v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
    data = model.create_data()
    first = lcaba(model, data, q, v, tau).qdd
    for _ in range(20):
        assert np.array_equal(lcaba(model, data, q, v, tau).qdd, first), 'same data, same result'
    result = lcaba(model, model.create_data(), q, v, tau,
                   ProximalSettings(mu=1e5, max_iterations=1))
    assert (result.iterations == 1 and not result.converged
            and result.residual > 0), 'max_iterations honoured'
