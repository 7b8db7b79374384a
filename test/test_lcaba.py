"""Proximal LCABA (Sathya & Carpentier 2025) against the cluster ABA, a dense regularised KKT
reference built from the independent oracle, and the singular and redundant loops where the cluster
ABA gives up."""

import numpy as np
import pytest
from scipy.optimize import brentq

from conftest import assert_close, random_state, robot, ROBOTS
from dynamics_node import bundled_model, load_model, ModelError, SingularConfigurationError
from dynamics_node.forward_dynamics import lcaba_is_cheaper
from dynamics_node.algorithms.kinematics import update_transforms
from dynamics_node.algorithms.lcaba import elimination_plan, lcaba, ProximalSettings
from mechanisms import parallel_chains
from oracle import KKTOracle

STATES = 3
# LCABA stops at |K qdd - k| < 1e-10 (ProximalSettings default); the remaining primal error is the
# round-off of the mu = 1e6 penalised elimination after one refinement, ~1e-10 of |qdd| on the
# robots.
LCABA_RTOL = 1e-8

# Bundled four-bar with the rocker as the independent joint: the crank and coupler are dependent,
# so the split is singular where they are collinear (the rocker's dead points).
FOUR_BAR = open(bundled_model('four_bar')).read()
ROCKER_DRIVEN = FOUR_BAR.replace(
    'type="continuous">', 'type="continuous" independent="false">', 1).replace(
    'name="rocker_joint" type="revolute" independent="false"',
    'name="rocker_joint" type="revolute"')

# The same four-bar closed Digit-style: the coupler is cut in two halves welded by a `fixed` loop.
# The loop frames are tilted, so all 6 rows are active, but the planar mechanism gives them rank 3
# (redundant), for 4 joints and 1 DoF.
TILT = (0.3, -0.2, 0.4)
LIMIT = '<limit lower="-7" upper="7" effort="5" velocity="20"/>'
REDUNDANT = f"""<robot name="welded_four_bar">
  <link name="base"/>
  <link name="crank"><inertial><origin xyz="0.035 0 0"/><mass value="0.12"/>
    <inertia ixx="7e-06" ixy="-2.8e-06" ixz="0" iyy="0.0001" iyz="0" izz="0.000106"/></inertial>\
</link>
  <link name="coupler_a"><inertial><origin xyz="0.07 0.002 0"/><mass value="0.09"/>
    <inertia ixx="4e-06" ixy="1e-07" ixz="0" iyy="0.00017" iyz="0" izz="0.00017"/></inertial>\
</link>
  <link name="coupler_b"><inertial><origin xyz="0.06 -0.001 0.001"/><mass value="0.09"/>
    <inertia ixx="1e-05" ixy="0" ixz="2e-08" iyy="0.00016" iyz="0" izz="0.00017"/></inertial>\
</link>
  <link name="rocker"><inertial><origin xyz="0.1 -0.002 0"/><mass value="0.14"/>
    <inertia ixx="6.7e-06" ixy="5.6e-06" ixz="1.1e-05" iyy="0.000565" iyz="-1.1e-07" \
izz="0.00057"/>
  </inertial></link>
  <joint name="crank_joint" type="continuous" independent="false"><parent link="base"/>\
<child link="crank"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="coupler_a_joint" type="revolute" independent="false"><parent link="crank"/>
    <child link="coupler_a"/><origin xyz="0.08 0 0.012"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <joint name="rocker_joint" type="revolute"><parent link="base"/><child link="rocker"/>
    <origin xyz="0.3 0 0.012"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <joint name="coupler_b_joint" type="revolute" independent="false"><parent link="rocker"/>
    <child link="coupler_b"/><origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <loop name="coupler_weld" type="fixed">
    <predecessor link="coupler_a"><origin xyz="0.14 0 0" rpy="{TILT[0]} {TILT[1]} {TILT[2]}"/>\
</predecessor>
    <successor link="coupler_b">
      <origin xyz="0.14 0 0" rpy="{TILT[0]} {TILT[1]} {TILT[2] + np.pi!r}"/>
    </successor>
  </loop>
</robot>"""


def _oracle(model, xml):
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    return reference


def four_bar_positions(model, crank, coupler, rocker):
    """q of the bundled four-bar's closed pose in model's layout (the welded variant's coupler_b
    turns by crank + coupler + pi - rocker on the rocker, so that its frame points back along the
    coupler)."""
    angles = {'crank_joint': crank, 'coupler_joint': coupler, 'coupler_a_joint': coupler,
              'rocker_joint': rocker, 'coupler_b_joint': crank + coupler + np.pi - rocker}
    return np.array([angles[name] for name in model.joint_names])


def dead_point(kind):
    """The crank angle where crank and coupler are stretched (coupler angle 0) or folded (pi),
    found by root finding on the bundled four-bar's closed poses; returns (crank, coupler,
    rocker)."""
    four_bar = robot('four_bar')
    target = {'stretched': 0.0, 'folded': np.pi}[kind]

    def offset(crank):
        return np.angle(np.exp(1j * (four_bar.complete_positions([crank])[1] - target)))

    grid = np.linspace(-np.pi, np.pi, 145)
    values = [offset(c) for c in grid]
    start = next(i for i in range(len(grid) - 1)
                 if values[i] * values[i + 1] < 0 and abs(values[i] - values[i + 1]) < 1.0)
    crank = brentq(offset, grid[start], grid[start + 1], xtol=1e-15)
    return tuple(four_bar.complete_positions([crank]))


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
            K, _ = con.evaluate(data.Xup, model.S, cluster.col, cluster.n, qd[v0:v1])
            force[v0:v1] += K.T @ multipliers[con.name]
    return force


def null_velocity(reference, q, rng):
    """Random spanning velocity with K v = 0 (consistent also at singular configurations)."""
    K = reference.constraint_jacobian(q)
    _, s, Vt = np.linalg.svd(K)
    rank = int(np.sum(s > 1e-9 * s[0]))
    return Vt[rank:].T @ rng.normal(size=K.shape[1] - rank)


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
