"""The robots users have: the patterns of published robot files, on both engines, against
independent references.

The robots (test/models/, written for these tests, each file's comment says what it reproduces):
  five_bar   five_bar_closure_body.urdf + .yaml: a planar 5-bar in Extended URDF, the closure body
             between two coaxial joints (closedloop1_A, closedloop1_B) welded by a 6d closure, open
             at q = 0;
  cassie     cassie_like_leg.urdf + .yaml: knee and ankle driven by rods with ball ends (SPHERICAL
             rod tops, 3d closures) and a foot bar closed by a 6d weld, open at q = 0;
  delta      delta_massless_rods.urdf: a delta robot whose parallelogram rods have no inertial;
  gripper    gripper_mimic_chain.urdf: a mimic chain listed leader last, a <mimic> on a fixed
             joint, a follower marked independent;
  arm        arm_massless_hand.urdf: a 7-DoF arm whose hand has no inertial and whose fingers
             follow one hand joint by mimics (that joint is held: forward dynamics keeps it still);
  oddities   inertia_oddities.urdf: an iCub-like point-mass inertia (zeros but a 2.4e-35 entry) on
             a moving link and a Tiago-like 1 mg link with a -3.5e-8 principal moment merged into a
             heavy body.

Every quantity is checked at STATES random closed states per robot: the independent positions are
the reference configuration's, the actuated coordinates moved by up to +-0.2 rad (+-0.05 m for
prismatic joints) and the passive ones left at their reference values; the library completes them.
Against the KKT oracle (test/oracle.py: Pinocchio's spanning tree plus a dense null-space solve,
which never imports the library) the tests check, on each engine:
  - completion: the loops closed (oracle residual), the independent positions kept, and the same
    positions as the oracle's own Gauss-Newton continuation from the reference configuration (the
    same assembly branch);
  - forward dynamics with method 'aba' (1e-9 relative) and 'lcaba' (1e-8: its proximal iterations
    stop at a residual of 1e-10), and method 'auto' staying on the cluster ABA at these regular
    states (every fallback to LCABA is counted and reported);
  - inverse dynamics, bias forces C_y, the mass matrix H_y = G^T H G and Lambda^-1 = J_y H_y^-1
    J_y^T.
The oracle reads the same files: an Extended URDF pair converted without the library (each closure
frame resolved through Pinocchio's frames of the plain URDF,
oracle.independent_oracle); the gripper with its ignored fixed-joint <mimic> removed
(the oracle, like Pinocchio, has no mimic on a fixed joint).

Held coordinates (the arm's hand joint): forward dynamics must equal Pinocchio's ABA on the arm
with the hand joints locked (pin.buildReducedModel; wrenches on the hand carried by the locked
hand), with zero acceleration on every hand joint, whatever force or velocity the hand joint is
given; Lambda^-1 is the locked arm's (the held column left out of G).

Also: completion returns the same positions for the same input whatever was completed before (100
other inputs, far and near, in between), and a four-bar 1e-6 rad from its dead point makes inverse
dynamics, bias forces, the mass matrix and Lambda^-1 raise SingularConfigurationError naming the
cluster, while forward dynamics with method 'auto' answers through LCABA; raising
amplification_limit accepts the pose.
"""

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close
from dynamics_node import bundled_model, load_model, ModelError, SingularConfigurationError
from published_robots import (four_bar, independent_positions, joint_of_q, NAMES, near_dead_point,
                              oracle, paths, robot, ROBOTS, seeded, states, STATES,
                              without_fixed_joint_mimics)

RTOL = 1e-9
# LCABA stops at |K qdd - k| < 1e-10 (ProximalSettings default): ~1e-10 of |qdd| left after its
# refinement.
LCABA_RTOL = 1e-8
CLOSURE_TOLERANCE = 1e-10       # oracle loop residual (m, rad) of a completed configuration

ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


def free_columns(model):
    """Independent velocity columns that are not held: G's columns the dynamics act through."""
    return np.setdiff1d(np.arange(model.ny), model.held_y)


def null_space(name, model, q):
    """G (nv x ny) of the oracle, with the library's independent velocity columns."""
    return oracle(name).null_space_G(q, model.independent_v)


# ---- references ---------------------------------------------------------------------------------

def oracle_completion(name, model, q_ind, steps=8, iterations=30):
    """The oracle's own completion: from the reference configuration, the independent positions
    moved to q_ind in `steps` equal steps, each followed by Gauss-Newton on the velocity directions
    that are not independent (least-squares steps integrated on the configuration manifold)."""
    reference = oracle(name)
    q = model.reference_positions
    start = q[model.independent_q].copy()
    free = np.setdiff1d(np.arange(model.nv), model.independent_v)
    for step in range(1, steps + 1):
        q[model.independent_q] = start + (q_ind - start) * step / steps
        for _ in range(iterations):
            residual = reference.loop_residual(q)
            if np.max(np.abs(residual), initial=0.0) < 1e-14:
                break
            dv = np.zeros(model.nv)
            dv[free] = -np.linalg.lstsq(reference.constraint_jacobian(q)[:, free], residual,
                                        rcond=None)[0]
            q = reference.integrate(q, dv)
    return q


def joint_position_errors(model, q, expected):
    """Per joint (split joints left out: their spin is free), the distance between two
    configurations: |difference| for scalar joints, the quaternion distance up to sign for
    spherical ones."""
    errors = {}
    for b, name in enumerate(model.joint_names, start=1):
        if name in model.split_joint_names:
            continue
        s = slice(model.idx_q[b], model.idx_q[b] + model.nq_body[b])
        a, e = q[s], expected[s]
        errors[name] = float(min(np.max(np.abs(a - e)), np.max(np.abs(a + e))) if a.size == 4
                             else np.max(np.abs(a - e)))
    return errors


def locked_hand_forward_dynamics(name, model, q, v, tau, wrenches):
    """Spanning accelerations of Pinocchio's ABA on the robot (its own URDF parser, 1-DoF joints)
    with every joint that only held coordinates move locked at q (pin.buildReducedModel); zero on
    the locked joints. Only for robots whose constraints all lie among the locked joints (the
    reduced tree has none)."""
    locked = {model.joint_names[int(np.searchsorted(model.idx_v[1:], i, side='right')) - 1]
              for i in model.locked_v}
    for c in oracle(name).constraints:
        assert (c['kind'] == 'mimic'
                and {c['joint'], c['master']} <= locked), 'constraints outside the locked joints'
    assert model.nq == model.nv, '1-DoF joints only'
    full = pin.buildModelFromXML(without_fixed_joint_mimics(paths(name)[0]))
    index = {joint: i for i, joint in enumerate(model.joint_names)}
    q_full = np.zeros(full.nq)
    for j in range(1, full.njoints):
        q_full[full.joints[j].idx_q] = q[index[full.names[j]]]
    reduced = pin.buildReducedModel(full, [full.getJointId(joint) for joint in sorted(locked)],
                                    q_full)
    kept = [index[reduced.names[j]] for j in range(1, reduced.njoints)]      # in Pinocchio's order
    assert [reduced.joints[j].idx_v for j in range(1, reduced.njoints)] == list(range(reduced.nv))
    f_ext = [pin.Force.Zero() for _ in range(reduced.njoints)]
    for link, (force, torque) in (wrenches or {}).items():
        frame = reduced.frames[reduced.getFrameId(link, pin.FrameType.BODY)]
        f_ext[frame.parentJoint] += frame.placement.act(
            pin.Force(np.asarray(force), np.asarray(torque)))
    qdd = np.zeros(model.nv)
    qdd[kept] = pin.aba(reduced, reduced.createData(), q[kept], v[kept], tau[kept],
                        pin.StdVec_Force(f_ext))
    return qdd


def oracle_forward_dynamics(name, model, q, v, tau, wrenches):
    """The oracle's constrained accelerations, solved in the library's independent coordinates: qdd
    = G ydd + g with G^T H G ydd = G^T (tau - C - H g), G and g from the oracle's constraint
    Jacobian, its columns of held coordinates (idle spins, held still by their loops) left out. The
    solution of its null-space KKT solve, but scaled by the coordinates: a rod's idle spin (4e-6 kg
    m^2 next to a 7 kg leg, cond(H_y) ~ 1e7) costs ~1e-9 of relative accuracy in an SVD basis that
    mixes it with the leg, none here."""
    reference = oracle(name)
    G = reference.null_space_G(q, model.independent_v)[:, free_columns(model)]
    g = reference.explicit_bias_g(q, v, model.independent_v)
    H = reference.mass_matrix(q)
    rhs = G.T @ (tau - reference.bias(q, v, wrenches) - H @ g)
    return G @ np.linalg.solve(G.T @ H @ G, rhs) + g


def expected_forward_dynamics(name, model, q, v, tau, wrenches):
    if set(model.held_joint_names) - set(model.idle_spin_joint_names):
        return locked_hand_forward_dynamics(name, model, q, v, tau, wrenches)
    return oracle_forward_dynamics(name, model, q, v, tau, wrenches)


# ---- every robot, both engines, against the oracle ----------------------------------------------

@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_completion_closes_the_loops_on_the_reference_branch(name, compiled):
    model, reference = robot(name, compiled), oracle(name)
    worst = {'residual': 0.0, 'independent': 0.0, 'branch': 0.0}
    for state in states(name, compiled):
        errors = {'residual': np.max(np.abs(reference.loop_residual(state.q)), initial=0.0),
                  'independent': np.max(np.abs(state.q[model.independent_q] - state.q_ind)),
                  'branch': max(joint_position_errors(model, state.q,
                                                      oracle_completion(name, model, state.q_ind))
                                .values())}
        worst = {key: max(worst[key], float(error)) for key, error in errors.items()}
    assert worst['residual'] < CLOSURE_TOLERANCE, f'loops left open by {worst["residual"]:.3e}'
    assert worst['independent'] == 0.0, (
        f'independent positions changed by {worst["independent"]:.3e}')
    assert worst['branch'] < 1e-9, (
        f'completion differs from the oracle\'s continuation by {worst["branch"]:.3e}')


@ENGINES
@pytest.mark.parametrize('method', ['aba', 'lcaba'])
@pytest.mark.parametrize('name', NAMES)
def test_forward_dynamics_matches_the_oracle(name, method, compiled):
    model = robot(name, compiled)
    for state in states(name, compiled):
        v = model.spanning_velocities(state.q, state.yd)
        expected = expected_forward_dynamics(name, model, state.q, v, state.tau, state.wrenches)
        qdd = model.forward_dynamics(state.q, state.yd, state.tau, state.wrenches, method=method)
        assert_close(qdd, expected, f'{name} qdd ({method})',
                     RTOL if method == 'aba' else LCABA_RTOL)


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_auto_forward_dynamics_takes_no_fallback_at_regular_states(name, compiled):
    """Method 'auto' starts with the cluster ABA on these robots (too small for LCABA to be
    cheaper, forward_dynamics.lcaba_is_cheaper) and stays on it at these regular states: every
    fallback is counted."""
    model = robot(name, compiled)
    assert not model.auto_lcaba
    fallbacks = []
    for state in states(name, compiled):
        info = model.forward_dynamics(state.q, state.yd, state.tau, state.wrenches, info=True)
        if info.method_used != 'aba' or info.fallback_reason:
            fallbacks.append(f'{info.method_used}: {info.fallback_reason}')
    assert not fallbacks, (
        f'{len(fallbacks)} of {STATES} calls fell back to LCABA; first: {fallbacks[0]}')


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_inverse_dynamics_matches_the_oracle(name, compiled):
    model, reference = robot(name, compiled), oracle(name)
    for state in states(name, compiled):
        G = null_space(name, model, state.q)
        v = G @ state.yd
        qdd = G @ state.ydd + reference.explicit_bias_g(state.q, v, model.independent_v)
        expected = reference.inverse_dynamics_projected(state.q, v, qdd, G, state.wrenches)
        assert_close(model.inverse_dynamics(state.q, state.yd, state.ydd, state.wrenches),
                     expected, f'{name} tau_y')


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_bias_forces_match_the_oracle(name, compiled):
    """C_y = G^T (H g + C(q, v)) - G^T J^T f: inverse dynamics at zero independent acceleration."""
    model, reference = robot(name, compiled), oracle(name)
    for state in states(name, compiled):
        G = null_space(name, model, state.q)
        v = G @ state.yd
        g = reference.explicit_bias_g(state.q, v, model.independent_v)
        expected = reference.inverse_dynamics_projected(state.q, v, g, G, state.wrenches)
        assert_close(model.bias_forces(state.q, state.yd, state.wrenches), expected, f'{name} C_y')


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_mass_matrix_matches_the_oracle(name, compiled):
    model, reference = robot(name, compiled), oracle(name)
    for state in states(name, compiled):
        G = null_space(name, model, state.q)
        H = model.mass_matrix(state.q)
        assert_close(H, G.T @ reference.mass_matrix(state.q) @ G, f'{name} H_y')
        free = free_columns(model)
        assert np.linalg.eigvalsh(H[np.ix_(free, free)]).min() > 0, (
            'H_y positive definite off the held columns')


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_inverse_osim_matches_the_oracle(name, compiled):
    model, reference = robot(name, compiled), oracle(name)
    links = list(ROBOTS[name].links)
    for state in states(name, compiled):
        G = null_space(name, model, state.q)[:, free_columns(model)]
        assert_close(model.inverse_osim(state.q, links), reference.osim_inverse(state.q, G, links),
                     f'{name} Lambda^-1')


# ---- what each pattern adds ---------------------------------------------------------------------

@pytest.mark.parametrize('name', ['five_bar', 'cassie'])
def test_extended_urdf_robots_are_open_at_zero_and_closed_at_their_reference(name):
    """Written open (closure frames apart at q = 0), assembled at load; the closure bodies' spins
    and the rods' spins are passive, the motors actuated."""
    model, reference = robot(name, False), oracle(name)
    assert np.max(np.abs(reference.loop_residual(model.q_neutral))) > 0.01
    assert np.max(np.abs(reference.loop_residual(model.reference_positions))) < CLOSURE_TOLERANCE
    expected = {'five_bar': (('motor_A', 'motor_B'), ()),
                'cassie': (('hip_roll', 'hip_yaw', 'hip_pitch', 'knee_motor', 'ankle_motor'),
                           ('knee_rod_top', 'ankle_rod_top'))}[name]
    assert model.actuated_joint_names == expected[0]
    assert model.split_joint_names == expected[1]
    spins = [joint for joint in model.passive_joint_names if joint not in model.split_joint_names]
    assert (len(spins) == 1
            and spins[0] in ('closedloop1_A', 'closedloop1_B')), model.passive_joint_names


def test_delta_rods_carry_no_inertia_and_the_motors_see_a_positive_definite_inertia():
    model = robot('delta', False)
    rods = [b for b in range(1, model.nb) if model.joint_names[b - 1].startswith('rod_')]
    assert len(rods) == 12 and all(not np.any(model.inertia[b]) for b in rods)
    assert model.independent_joint_names == ('motor_1', 'motor_2', 'motor_3')
    assert not model.held_joint_names and not model.warnings
    for state in states('delta', False):
        assert np.linalg.eigvalsh(model.mass_matrix(state.q)).min() > 1e-4


def test_gripper_ignores_the_fixed_joint_mimic_and_follows_the_chain():
    model = robot('gripper', False)
    assert any("'left_inner_finger_pad_joint'" in w and 'fixed' in w and 'ignored' in w
               for w in model.warnings)
    assert any("'right_outer_knuckle_joint'" in w and 'independent' in w for w in model.warnings)
    assert model.independent_joint_names == ('wrist_pitch', 'wrist_roll', 'finger_joint')
    hand = next(c for c in model.clusters if c.constraints)
    assert not any('left_inner_finger_pad_joint' in c for c in hand.constraints)
    q = model.complete_positions([0.1, -0.2, 0.4])
    at = dict(zip(model.joint_names, q))
    assert at['right_outer_knuckle_joint'] == pytest.approx(0.4, abs=1e-12)
    assert at['right_inner_finger_joint'] == pytest.approx(-0.4, abs=1e-12)     # through the chain
    assert at['left_inner_finger_joint'] == pytest.approx(-0.4 + 0.05, abs=1e-12)


def test_inertia_oddities_load_and_are_named():
    model = robot('oddities', False)
    for link, what in (('torso_lift_sensor_link', 'negative principal moment'),
                       ('eyes_tilt_link', 'zero principal moments')):
        assert any(f"'{link}'" in w and what in w for w in model.warnings), (link, model.warnings)
    with pytest.raises(ModelError, match='torso_lift_sensor_link'):
        load_model(paths('oddities')[0], strict=True)
    # The same -3.5e-8 moment on a body of its own (not merged into the torso) is refused.
    text = Path(paths('oddities')[0]).read_text().replace(
        '<joint name="torso_lift_sensor_joint" type="fixed">',
        '<joint name="torso_lift_sensor_joint" type="revolute"><axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/>')
    with pytest.raises(ModelError, match='torso_lift_sensor_joint.*principal moments'):
        load_model(text)


@ENGINES
def test_massless_hand_is_held_still(compiled):
    """The hand joint moves only links without inertia: forward dynamics (every method) keeps the
    whole hand still, ignores the force given to it, and moves the arm as Pinocchio's ABA with the
    hand locked."""
    model = robot('arm', compiled)
    assert model.held_joint_names == ('r_hand_close',)
    assert any("'r_hand_close'" in w and 'holds it still' in w for w in model.warnings)
    hand = [model.joint_names.index(j)
            for j in ('r_hand_close', 'index_distal_joint', 'middle_proximal_joint',
                      'middle_distal_joint', 'thumb_joint')]
    assert sorted(model.locked_v) == hand
    for state in states('arm', compiled):
        v = model.spanning_velocities(state.q, state.yd)
        expected = locked_hand_forward_dynamics('arm', model, state.q, v, state.tau,
                                                state.wrenches)
        info = model.forward_dynamics(state.q, state.yd, state.tau, state.wrenches, info=True)
        assert (info.method_used, info.fallback_reason) == ('aba', '')
        for method, qdd in (('auto', info.acceleration),
                            ('aba', model.forward_dynamics(state.q, state.yd, state.tau,
                                                           state.wrenches, method='aba')),
                            ('lcaba',
                             model.forward_dynamics(state.q, state.yd, state.tau, state.wrenches,
                                                    method='lcaba'))):
            assert np.all(qdd[hand] == 0.0), f'{method}: hand accelerations {qdd[hand]}'
            assert_close(qdd, expected, f'qdd ({method})', 1e-8)
        pushed = state.tau.copy()
        pushed[hand] += 100.0
        assert_close(model.forward_dynamics(state.q, state.yd, pushed, state.wrenches,
                                            method='aba'), expected,
                     'qdd with a force on the hand')


# ---- completion gives one answer per input ------------------------------------------------------

def fresh_model(name, compiled):
    """A newly loaded model (no completion before) of a robot here or a bundled one."""
    if name in ROBOTS:
        urdf, closures = paths(name)
        return load_model(urdf, compiled=compiled, closures=closures)
    return load_model(bundled_model(name), compiled=compiled)


@ENGINES
@pytest.mark.parametrize('name', ['five_bar', 'cassie', 'parallel_ankle_leg'])
def test_completion_is_deterministic(name, compiled):
    """One input, then 100 others (50 far, then a walk of small steps ending 5 mrad from it), then
    the first again: the same positions, on a model that completed nothing before too."""
    model, rng = fresh_model(name, compiled), seeded(name, 'determinism')
    first = independent_positions(model, rng)
    expected = model.complete_positions(first)
    others = [independent_positions(model, rng) for _ in range(50)]
    moving = np.array([joint_of_q(model, i) in model.actuated_joint_names
                       for i in model.independent_q], float)
    start = others[-1]
    others += [start + (first + 0.005 * moving - start) * k / 50 for k in range(1, 51)]
    for q_ind in others:
        model.complete_positions(q_ind)
    again = model.complete_positions(first)
    assert_close(again, expected, f'{name}: q again', 1e-9)
    fresh = fresh_model(name, compiled).complete_positions(first)
    assert_close(fresh, expected, f'{name}: q on a fresh model', 1e-9)


# ---- a four-bar next to its dead point ----------------------------------------------------------


@ENGINES
@pytest.mark.parametrize('side', [1, -1], ids=['upper', 'lower'])
def test_dead_point_is_refused_by_the_cluster_algorithms(compiled, side):
    model, reference = four_bar(compiled)
    assert model.independent_joint_names == ('crank_joint',)
    q, _, _, _ = near_dead_point(model, reference, side)
    cluster = model.clusters[0].name
    calls = {'inverse_dynamics': lambda: model.inverse_dynamics(q, [0.01], [0.2]),
             'bias_forces': lambda: model.bias_forces(q, [0.01]),
             'mass_matrix': lambda: model.mass_matrix(q),
             'inverse_osim': lambda: model.inverse_osim(q, ['rocker'])}
    for what, call in calls.items():
        with pytest.raises(SingularConfigurationError,
                           match=f"cluster '{cluster}'.*amplification_limit"):
            call()


@ENGINES
@pytest.mark.parametrize('side', [1, -1], ids=['upper', 'lower'])
def test_dead_point_forward_dynamics_falls_back_to_lcaba(compiled, side):
    model, reference = four_bar(compiled)
    q, v, tau, _ = near_dead_point(model, reference, side)
    with pytest.raises(SingularConfigurationError, match='amplification_limit'):
        model.forward_dynamics(q, v, tau, method='aba')
    info = model.forward_dynamics(q, v, tau, info=True)
    assert info.method_used == 'lcaba'
    assert ('amplification_limit' in info.fallback_reason
            and model.clusters[0].name in info.fallback_reason)
    assert np.all(np.isfinite(info.acceleration))
    assert info.constraint_residual < 1e-9
    # The KKT system is still regular here (G amplifies ~500x): LCABA's answer is the oracle's
    # (1e-12 observed).
    assert_close(info.acceleration, reference.forward_dynamics(q, v, tau),
                 'qdd near the dead point', RTOL)


@ENGINES
@pytest.mark.parametrize('side', [1, -1], ids=['upper', 'lower'])
def test_raised_amplification_limit_accepts_the_pose(compiled, side):
    model, reference = four_bar(compiled, amplification_limit=1e4)
    q, v, tau, amplification = near_dead_point(model, reference, side)
    assert amplification < model.amplification_limit * model.reference_amplification[0]
    G = reference.null_space_G(q, model.independent_v)
    # G amplifies ~500x here; the results still agree to ~1e-12 (observed), well within RTOL.
    assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G,
                 'H_y near the dead point')
    info = model.forward_dynamics(q, v, tau, info=True)
    assert (info.method_used, info.fallback_reason) == ('aba', '')
    assert_close(info.acceleration, reference.forward_dynamics(q, v, tau),
                 'qdd near the dead point')
    ydd = np.array([0.2])
    qdd = G @ ydd + reference.explicit_bias_g(q, v, model.independent_v)
    assert_close(model.inverse_dynamics(q, v, qdd),
                 reference.inverse_dynamics_projected(q, v, qdd, G), 'tau_y near the dead point')
