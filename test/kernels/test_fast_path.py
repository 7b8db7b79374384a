"""The compiled fast path (flat/model.py, the kernels, engines/numba_engine.py) against the
readable NumPy reference (engines/numpy_engine.py: aba.py, rnea.py, crba.py, efpa.py, frames.py),
whatever Model's public methods dispatch to."""

import concurrent.futures
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit, typeof, types
from numba.core.errors import NumbaTypeError
from numba.core.runtime import _nrt_python, rtsys

from conftest import assert_close, random_state, robot
from dynamics_node import load_model, ModelError, SingularConfigurationError
from dynamics_node.kernels import borrowed
from dynamics_node.kernels.flat import lcaba as flat_lcaba
from dynamics_node.engines.numba_engine import FastPath
from dynamics_node.joint_types import TYPES
from dynamics_node.algorithms.kinematics import (explicit_constraint, forward_pass,
                                                 update_transforms)
from dynamics_node.algorithms.lcaba import ProximalSettings
from dynamics_node.engines.numpy_engine import ReferencePath
from dynamics_node.validation import external_forces
from fast_paths import EXTRA_MODELS, hinge, loop, model_and_fast_path, MODELS
from oracle import KKTOracle
from singular_loops import (dead_point, four_bar_positions, LCABA_RTOL, null_velocity, REDUNDANT,
                            ROCKER_DRIVEN)
from urdf_text import four_bar, joint, link, robot as urdf

# Both paths run the same algorithms with the operations reordered: they differ by round-off only.
RTOL = 1e-12
STATES = 3


class Reference(ReferencePath):
    """The NumPy algorithms on a fresh workspace, with the external forces of wrenches."""

    def __init__(self, model, wrenches=None):
        super().__init__(model, model.create_data())
        external_forces(model, self.data, wrenches)


def body_forces(model, wrenches):
    """f_ext (nb x 6, body coordinates) as the reference computes it."""
    return Reference(model, wrenches).data.f_ext


@pytest.mark.parametrize('name', MODELS)
def test_forward_dynamics(name, rng):
    model, fast = model_and_fast_path(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        reference = Reference(model, wrenches)
        for tau, kind in ((rng.normal(size=model.ny), 'independent'),
                          (rng.normal(size=model.nv), 'spanning')):
            f_ext = reference.data.f_ext
            ydd = reference.forward_dynamics(q, yd, tau, f_ext)
            qdd = reference.forward_dynamics(q, yd, tau, f_ext, spanning=True)
            assert_close(fast.forward_dynamics(q, yd, tau, f_ext), ydd, f'ydd ({kind} tau)', RTOL)
            assert_close(fast.forward_dynamics(q, yd, tau, f_ext, spanning=True), qdd,
                         f'qdd ({kind} tau)', RTOL)


@pytest.mark.parametrize('name', MODELS)
def test_inverse_dynamics_bias_and_gravity(name, rng):
    model, fast = model_and_fast_path(name)
    zero = np.zeros(model.ny)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        reference, ydd = Reference(model, wrenches), rng.normal(size=model.ny)
        f_ext = reference.data.f_ext
        assert_close(fast.inverse_dynamics(q, yd, ydd, f_ext),
                     reference.inverse_dynamics(q, yd, ydd, f_ext), 'tau_y', RTOL)
        assert_close(fast.bias(q, yd, f_ext), reference.inverse_dynamics(q, yd, zero, f_ext),
                     'C_y', RTOL)
        assert_close(fast.gravity(q), Reference(model).inverse_dynamics(q, zero, zero),
                     'gravity forces', RTOL)


@pytest.mark.parametrize('name', MODELS)
def test_mass_matrix_and_inverse_osim(name, rng):
    model, fast = model_and_fast_path(name)
    links = list(model.links[-1:]) + list(model.links[1:3])
    for _ in range(STATES):
        q, _, _ = random_state(model, rng)
        reference = Reference(model)
        assert_close(fast.mass_matrix(q), reference.mass_matrix(q), 'H_y', RTOL)
        assert_close(fast.inverse_osim(q, links), reference.inverse_osim(q, links), 'Lambda^-1',
                     RTOL)
        assert_close(fast.inverse_osim(q, links[0]), reference.inverse_osim(q, links[:1]),
                     'Lambda^-1 of one link', RTOL)


@pytest.mark.parametrize('name', MODELS)
def test_spanning_accelerations(name, rng):
    model, fast = model_and_fast_path(name)
    reference = Reference(model)
    for _ in range(STATES):
        q, yd, _ = random_state(model, rng)
        ydd = rng.normal(size=model.ny)
        assert_close(fast.spanning(q, yd, ydd), reference.spanning(q, yd, ydd), 'G ydd + g', RTOL)


@pytest.mark.parametrize('name', MODELS)
def test_link_kinematics(name, rng):
    """kernels/frames.py = algorithms/frames.py: every link's pose, Jacobian and bias acceleration
    from the engine's checked call and its fused call, and what each of Model's link calls asks,
    through the public calls of a compiled model (the fused call) and of a NumPy one."""
    model, fast = model_and_fast_path(name)
    numpy_model = (load_model(EXTRA_MODELS[name], compiled=False) if name in EXTRA_MODELS
                   else robot(name, compiled=False))
    links = model.links
    for _ in range(STATES):
        q, yd, _ = random_state(model, rng)
        v = model.spanning_velocities(q, yd)
        expected = Reference(model).link_kinematics(q, yd, links)
        for label, result in (('engine', fast.link_kinematics(q, yd, links)),
                              ('engine, every link', fast.link_kinematics(q, yd, None)),
                              ('fused', fast.link_call(q, v, links) == 0
                               and fast.link_results()),
                              ('public', model.link_kinematics(q, v, links)),
                              ('public NumPy', numpy_model.link_kinematics(q, yd, links))):
            for part, x, y in zip(('R', 'p', 'J', 'Jdot yd'), result, expected):
                assert_close(x, y, f'{name}, {label}: {part}', RTOL)
        R, p, J, bias = fast.link_kinematics(q, None, links, jacobians=False, biases=False)
        assert J is None and bias is None
        assert_close(np.concatenate((R.reshape(-1), p.reshape(-1))),
                     np.concatenate((expected[0].reshape(-1), expected[1].reshape(-1))),
                     f'{name}: poses alone', RTOL)
        for engine in (model, numpy_model):
            R, p = engine.link_poses(q)
            assert_close(R, expected[0], f'{name}: link_poses R', RTOL)
            assert_close(p, expected[1], f'{name}: link_poses p', RTOL)
            for e, frame in enumerate(links):
                R, p = engine.link_pose(q, frame)
                assert_close(R, expected[0][e], f'{name}: link_pose R of {frame}', RTOL)
                assert_close(p, expected[1][e], f'{name}: link_pose p of {frame}', RTOL)
                assert_close(engine.link_jacobian(q, frame), expected[2][e],
                             f'{name}: link_jacobian of {frame}', RTOL)
                assert_close(engine.link_bias_acceleration(q, v, frame), expected[3][e],
                             f'{name}: link_bias_acceleration of {frame}', RTOL)


def test_explicit_constraints_at_any_positions():
    """G and g of the compiled loop rows (output frame) = kinematics.explicit_constraint's (NCA
    frame) at random positions, closed or not (both are defined anywhere): a universal loop whose
    NCA is a body of its cluster and a spherical loop, on random axes and offsets."""
    rng = np.random.default_rng(11)

    def offset():
        return ' '.join(f'{x:.3f}' for x in rng.uniform(-0.5, 0.5, 3))

    def axis():
        a = rng.normal(size=3)
        return ' '.join(f'{x:.4f}' for x in a / np.linalg.norm(a))

    chains = [('G', 'base', False), ('B', 'base', True), ('C1', 'B', True), ('C2', 'C1', True),
              ('C3', 'C2', True), ('D1', 'B', True), ('D2', 'D1', True), ('E', 'D2', True)]
    model = load_model(urdf(link('base', ''), *(link(child) for child, _, _ in chains),
                            *(hinge(f'{child}_j', parent, child, axis(), offset(), dependent)
                              for child, parent, dependent in chains),
                            loop('u', 'universal', 'C3', offset(), 'E', offset(), axis='0 1 0',
                                 extra='<axis2 xyz="1 0 0"/>'),
                            loop('s', 'spherical', 'G', offset(), 'D2', offset())))
    (cluster,) = [c for c in model.cluster_list if c.constraints]
    (universal,) = [con for con in cluster.constraints if con.name == 'u']
    assert model.cluster_of[universal.nca] == cluster.index, (
        'the NCA of u is a body of its cluster')
    fast, data = FastPath(model), model.create_data()
    k, (v0, v1), (y0, y1) = (cluster.index, model.v_range[cluster.index],
                             model.y_range[cluster.index])
    compared = 0
    for _ in range(30):
        q = model.q_neutral.copy()
        for b in range(1, model.nb):
            q[model.idx_q[b]] = rng.uniform(-np.pi, np.pi)
        yd = rng.normal(size=model.ny)
        update_transforms(model, data, q)
        try:
            G, g, _ = explicit_constraint(model, data, k, yd[y0:y1])
        except SingularConfigurationError:
            continue
        fast.spanning(q, yd, np.zeros(model.ny))
        assert_close(fast.data.G[k, :cluster.m, :cluster.n].T, G, 'G', 1e-9)
        assert_close(fast.data.g[v0:v1], g, 'g', 1e-9)
        compared += 1
    assert compared >= 20


def assert_same_lcaba(model, fast, q, v, tau, wrenches, name):
    """Compiled LCABA = lcaba.py: accelerations, iterations, residual, multipliers. Both refine to
    the same tolerance; their eliminations differ in round-off (Cholesky factors vs inverses of
    D_i), which the mu-inflated H carries into the last refinement step, so qdd agrees to
    LCABA_RTOL (the multipliers, lambda += mu r, to mu times that)."""
    reference = Reference(model, wrenches)
    expected = reference.lcaba(q, v, tau, reference.data.f_ext, ProximalSettings())
    result = fast.lcaba(q, v, tau, reference.data.f_ext, ProximalSettings())
    assert_close(result.qdd, expected.qdd, f'{name}: qdd', LCABA_RTOL)
    assert (result.iterations == expected.iterations
            and result.converged == expected.converged), name
    assert result.residual < ProximalSettings().tolerance, (
        f'{name}: residual {result.residual:.1e}')
    assert list(result.multipliers) == list(expected.multipliers), f'{name}: constraints'
    for con, lam in expected.multipliers.items():
        assert_close(result.multipliers[con], lam, f'{name}: lambda {con}',
                     LCABA_RTOL * ProximalSettings().mu)


@pytest.mark.parametrize('name', MODELS)
def test_lcaba_and_the_cluster_algorithms_number_the_loops_alike(name):
    """LCABA's rows leave the ends of each loop where the closure check reads them
    (kinematics.set_loop_ends), under the loop's index in flat/model.py."""
    model, _ = model_and_fast_path(name)
    plan = flat_lcaba.lcaba_plan(model)
    lcaba_loops = [con.name for con, loop in zip(plan.constraints, plan.con_loop) if loop >= 0]
    assert [plan.con_loop[plan.constraints.index(con)] for con in plan.constraints
            if con.name in lcaba_loops] == list(range(len(lcaba_loops)))
    assert lcaba_loops == [con.name for c in model.cluster_list if not c.linear
                           for _, con, _, _ in c.loop_rows()]


def test_lcaba_keeps_the_active_rows(rng):
    """LCABA keeps a loop's rows that are not identically zero: 2 of the four-bar's revolute loop
    (5 rows: its plane's point constraint) and of each of linkage_leg's and six_bar's. Its
    multipliers still name all 5 rows, zero on the others, where lcaba.py, which keeps them all,
    finds zero too."""
    for name, loops in (('four_bar', [[2, 3]]), ('linkage_leg', [[2, 4]]),
                        ('six_bar', [[2, 3], [2, 3]])):
        model, fast = model_and_fast_path(name)
        plan = flat_lcaba.lcaba_plan(model)
        kept = [list(rows) for con, rows in zip(plan.constraints, plan.kept_rows) if con.rows == 5]
        assert (kept == loops
                and sorted(plan.con_rows[plan.con_loop >= 0]) == [2] * len(loops)), name
        q, yd, _ = random_state(model, rng)
        v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
        result = fast.lcaba(q, v, tau, np.zeros((model.nb, 6)), ProximalSettings())
        for con, rows in zip(plan.constraints, plan.kept_rows):
            dropped = np.setdiff1d(np.arange(con.rows), rows)
            assert (len(result.multipliers[con.name]) == con.rows
                    and not result.multipliers[con.name][dropped].any())
        assert_same_lcaba(model, fast, q, v, tau, {}, name)


@pytest.mark.parametrize('name', MODELS)
def test_lcaba(name, rng):
    model, fast = model_and_fast_path(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
        assert_same_lcaba(model, fast, q, v, tau, wrenches, name)


@pytest.mark.parametrize('kind', ['stretched', 'folded'])
@pytest.mark.parametrize('xml', [ROCKER_DRIVEN, REDUNDANT],
                         ids=['revolute_loop', 'redundant_weld'])
def test_lcaba_at_singular_and_redundant_loops(xml, kind, rng):
    """The dead points of singular_loops.py, where the cluster ABA raises, and a redundant weld
    loop."""
    model = load_model(xml)
    fast = FastPath(model)
    q = four_bar_positions(model, *dead_point(kind))
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    for _ in range(STATES):
        v, tau = null_velocity(reference, q, rng), rng.normal(size=model.nv)
        assert_same_lcaba(model, fast, q, v, tau,
                          {model.links[2]: (rng.normal(size=3), rng.normal(size=3))},
                          f'{kind} {model.name}')


def test_lcaba_of_a_body_without_inertia_about_its_axis_is_named():
    """A point mass on the axis of a leaf joint outside the loop: D = S^T H S = 0, though the body
    has mass (inside a loop the penalty would make it PD)."""
    point = ('<inertial><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" '
             'izz="0"/></inertial>')
    model = load_model(four_bar().replace('</robot>',
                                          link('tip', point) + joint('tip_joint', 'rocker', 'tip')
                                          + '</robot>'))
    fast = FastPath(model)
    q = model.complete_positions([0.3, 0.0])
    v = np.zeros(model.nv)
    with pytest.raises(ModelError,
                       match="joint 'tip_joint': D = S\\^T H S is not positive definite"):
        fast.lcaba(q, v, v, np.zeros((model.nb, 6)), ProximalSettings())


def test_a_massless_leaf_is_held_still_by_both_methods(rng):
    """A massless leaf outside the loop moves no inertia: both methods hold it still and agree."""
    model = load_model(four_bar().replace('</robot>',
                                          link('tip', '') + joint('tip_joint', 'rocker', 'tip')
                                          + '</robot>'))
    assert model.held_joint_names == ('tip_joint',) and 'tip_joint' in model.warnings[-1]
    q = model.complete_positions([0.3, 0.0])
    v, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    aba = model.forward_dynamics(q, v, tau, method='aba', info=True)
    lcaba = model.forward_dynamics(q, v, tau, method='lcaba', info=True)
    tip = model.idx_v[model.joint_names.index('tip_joint') + 1]
    assert aba.acceleration[tip] == 0.0 and lcaba.acceleration[tip] == 0.0
    assert aba.held_joints == lcaba.held_joints == ('tip_joint',)
    assert_close(lcaba.acceleration, aba.acceleration, 'LCABA against the cluster ABA', 1e-8)


def numpy_closure(model, q):
    """max |phi(q)| over every coupling and loop (constraints.py residuals)."""
    data = model.create_data()
    update_transforms(model, data, q)
    return max([0.0] + [float(np.max(np.abs(con.residual(data.Xup, lambda b: q[model.idx_q[b]]))))
                        for c in model.cluster_list for con in c.constraints])


@pytest.mark.parametrize('name', MODELS + ['redundant_weld'])
def test_compiled_state_checks(name, rng):
    """accept_positions accepts exactly below the NumPy residual (revolute, prismatic and fixed
    loops, couplings), normalizes quaternions; velocity_violation is the NumPy measure."""
    model = load_model(REDUNDANT) if name == 'redundant_weld' else model_and_fast_path(name)[0]
    fast = FastPath(model)
    reference = Reference(model)
    scalar = np.array([TYPES[model.joint_type[i]].quaternion_at < 0 for i in range(1, model.nb)
                       for _ in range(model.nq_body[i])])          # perturbed: not the quaternions
    for _ in range(STATES):
        if name == 'redundant_weld':
            q = four_bar_positions(
                model, *robot('four_bar').complete_positions([rng.uniform(-np.pi, np.pi)]))
        else:
            q, _, _ = random_state(model, rng)
        for x in (q, q + scalar * rng.normal(scale=1e-4, size=model.nq)):
            phi = numpy_closure(model, x)
            margin = 1e-9 * phi + 1e-14                    # round-off of the two residual formulas
            assert fast.accept_positions(x.copy(), True, phi + margin), (
                f'{name}: accept at {phi:.3e}')
            if phi > margin:
                assert not fast.accept_positions(x.copy(), True, phi - margin), (
                    f'{name}: refer below {phi:.3e}')
        v = (model.spanning_velocities(q, rng.normal(size=model.ny))
             + rng.normal(scale=1e-3, size=model.nv))
        assert fast.accept_positions(q.copy(), True, 1e-6), f'{name}: closed q accepted'
        update_transforms(model, reference.data, q)
        violation, cluster, scale = fast.velocity_violation(v)
        expected, expected_cluster, expected_scale = reference.velocity_violation(v)
        assert (abs(violation - expected) <= 1e-12 * max(1.0, expected)
                and cluster == expected_cluster), name
        assert scale == expected_scale, f'{name}: max |v|'


def test_quaternions_are_normalized_or_referred(rng):
    model, fast = model_and_fast_path('quadruped_rotors')
    q, _, _ = random_state(model, rng)
    i0 = model.idx_q[model.joint_type.index('floating')] + 3
    scaled = q.copy()
    scaled[i0:i0 + 4] *= 1 + 5e-6
    assert fast.accept_positions(scaled, False, 1e-6)
    assert_close(scaled, q, 'normalized quaternion', 1e-15)
    scaled[i0:i0 + 4] *= 1.1
    assert not fast.accept_positions(scaled, False, 1e-6), 'norm 1.1 referred to the NumPy check'


def test_borrowed_struct_types_are_not_those_of_plain_arrays():
    """numba keys its cache on the names of the argument types; a structref's name lists its
    fields' reprs. A structref of BorrowedArray fields (no reference counting) must not find code
    compiled for one of plain arrays (counted) there."""
    plain, counted = (types.Array(types.float64, 2, 'C'),
                      borrowed.BorrowedArray(types.float64, 2, 'C'))
    assert repr(plain) != repr(counted) and repr(counted) != repr(borrowed.INPUT_VECTOR)
    model, _ = model_and_fast_path('four_bar')
    assert all(isinstance(kind, borrowed.BorrowedArray)
               for kind in typeof(model.flat.ref).field_dict.values()
               if isinstance(kind, types.Array))


def test_gravity_is_settable(rng):
    model, fast = model_and_fast_path('quadruped_rotors')
    q, _, _ = random_state(model, rng)
    zero = np.zeros(model.ny)
    try:
        model.gravity = (1.0, -2.0, -3.0)
        fast.set_gravity(model.gravity)
        assert_close(fast.gravity(q), Reference(model).inverse_dynamics(q, zero, zero),
                     'gravity forces with custom gravity', RTOL)
    finally:
        model.gravity = (0.0, 0.0, -9.81)
        fast.set_gravity(model.gravity)


def test_repeated_and_interleaved_calls_reuse_the_workspace(rng):
    """As Pinocchio's test_multiple_calls: one workspace, the same answers call after call."""
    model, fast = model_and_fast_path('linkage_leg')
    q, yd, wrenches = random_state(model, rng)
    f_ext, tau = body_forces(model, wrenches), rng.normal(size=model.ny)
    first = fast.forward_dynamics(q, yd, tau, f_ext)
    for _ in range(20):
        fast.mass_matrix(random_state(model, rng)[0])
        np.testing.assert_array_equal(fast.forward_dynamics(q, yd, tau, f_ext), first,
                                      'ydd after reuse')


def test_inputs_of_any_layout(rng):
    """Strided and read-only float64 inputs use the one compiled signature."""
    model, fast = model_and_fast_path('six_bar')
    q, yd, wrenches = random_state(model, rng)
    f_ext, tau = body_forces(model, wrenches), rng.normal(size=model.ny)
    expected = fast.forward_dynamics(q, yd, tau, f_ext)
    strided = [np.repeat(x, 2, axis=0)[::2] for x in (q, yd, tau, f_ext)]
    for x in strided:
        x.setflags(write=False)
    assert_close(fast.forward_dynamics(*strided), expected, 'ydd from strided read-only inputs',
                 RTOL)


def test_fused_calls_take_float64_vectors_only(rng):
    """borrowed.INPUT_VECTOR refuses what numba's own unboxing would read as float64 or overrun:
    int64 and byte-swapped views of valid vectors (the very bytes the call accepts as float64),
    2-d, 0-d and 40-d arrays, lists, scalars, float32. The entry point then raises a TypeError
    (Model converts them and calls again). Strided, reversed and read-only float64 vectors are
    taken as they are."""
    model, fast = model_and_fast_path('six_bar')
    q, yd, _ = random_state(model, rng)
    v, a = model.spanning_velocities(q, yd), rng.normal(size=model.ny)
    x, d = fast._x, fast.data

    def result(code, out):
        assert code == 0, code
        return out.copy()
    calls = {'forward_dynamics': lambda q, v, a: result(fast._fused_forward_dynamics(x, q, v, a),
                                                        d.qdd),
             'inverse_dynamics': lambda q, v, a: result(fast._fused_inverse_dynamics(x, q, v, a),
                                                        d.tau),
             'mass_matrix': lambda q, v, a: result(fast._fused_mass_matrix(x, q), d.H)}
    for name, call in calls.items():
        expected = call(q, v, a)
        for position in range(1 if name == 'mass_matrix' else 3):
            valid = (q, v, a)[position]
            for label, bad in {'int64 view': valid.view(np.int64),
                               'byte-swapped view': valid.view('>f8'),
                               '2-d': valid.reshape(1, -1), 'column': valid.reshape(-1, 1),
                               '0-d': np.array(1.0), '40-d': np.zeros((1,) * 40),
                               'list': list(valid), 'scalar': 1.0,
                               'float32': valid.astype(np.float32)}.items():
                inputs = [q, v, a]
                inputs[position] = bad
                with pytest.raises(TypeError):
                    call(*inputs)
        strided = [np.repeat(x, 2)[::2] for x in (q, v, a)]
        for x_ in strided:
            x_.setflags(write=False)
        np.testing.assert_array_equal(call(*strided), expected,
                                      f'{name}: strided read-only inputs')
        reversed_ = [x_[::-1].copy()[::-1] for x_ in (q, v, a)]          # negative strides
        np.testing.assert_array_equal(call(*reversed_), expected, f'{name}: reversed views')


def test_threads_share_a_model(rng):
    """One workspace per calling thread (Model._local) and kernels that release the GIL: threads
    calling one model at once get what the same calls give one after another, LCABA with settings
    that alternate between threads included."""
    model = robot('linkage_leg')
    loose = ProximalSettings(mu=1e3, max_iterations=2)
    states = []
    for _ in range(64):
        q, yd, _ = random_state(model, rng)
        states.append((q, model.spanning_velocities(q, yd), rng.normal(size=model.nv),
                       rng.normal(size=model.ny)))

    def answers(state):
        q, v, tau, a = state
        return (model.forward_dynamics(q, v, tau),
                model.forward_dynamics(q, v, tau, method='lcaba', settings=loose),
                model.forward_dynamics(q, v, tau, method='lcaba'), model.inverse_dynamics(q, v, a),
                model.mass_matrix(q))

    expected = [answers(state) for state in states]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)                   # threads take turns as often as Python lets them
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            for _ in range(5):
                for got, want in zip(pool.map(answers, states), expected):
                    for x, y in zip(got, want):
                        np.testing.assert_array_equal(x, y)
    finally:
        sys.setswitchinterval(interval)


def test_borrowed_arrays_cannot_go_back_to_python():
    """A BorrowedArray has no meminfo: boxed, it would be an ndarray whose memory nobody owns.
    Returning one (or a view of one) is refused when the kernel compiles."""
    @njit
    def view(x):
        return borrowed.borrowed((x,))[0][1:]

    with pytest.raises(NumbaTypeError, match='cannot go back to Python'):
        view(np.zeros(3))


def test_the_first_lcaba_call_of_a_process_takes_its_settings():
    """The first fused call of a process compiles (or loads) the kernels and runs each once; that
    warm-up must not leave its own LCABA settings in the workspace for the call that started it. A
    fresh process whose positions come from the NumPy reference, so that nothing warmed up
    before."""
    script = textwrap.dedent('''
        import numpy as np
        from dynamics_node import bundled_model, load_model
        from dynamics_node.algorithms.lcaba import ProximalSettings
        reference = load_model(bundled_model('linkage_leg'), compiled=False)
        q = reference.complete_positions(np.full(reference.independent_q.size, 0.2))
        rng = np.random.default_rng(5)
        v, tau = (reference.spanning_velocities(q, rng.normal(size=reference.ny)),
                  rng.normal(size=reference.nv))
        settings = ProximalSettings(mu=1e3, max_iterations=50)
        model = load_model(bundled_model('linkage_leg'))
        first, second = (model.forward_dynamics(q, v, tau, method='lcaba', settings=settings)
                         for _ in range(2))
        expected = reference.forward_dynamics(q, v, tau, method='lcaba', settings=settings)
        print(np.max(np.abs(first - expected)), np.max(np.abs(second - expected)),
              np.max(np.abs(expected)))
    ''')
    run = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                         timeout=300, cwd=os.path.join(os.path.dirname(__file__), '..', '..'))
    assert run.returncode == 0, run.stderr[-2000:]
    first, second, scale = (float(x) for x in run.stdout.split())
    assert first <= 1e-9 * max(1.0, scale) and second <= 1e-9 * max(1.0, scale), run.stdout


@pytest.mark.parametrize('name', ['humanoid_belts', 'linkage_leg'])
def test_kernels_allocate_nothing(name, rng):
    """numba wraps each NumPy argument but the vectors (borrowed.INPUT_VECTOR) in one small MemInfo
    per call; any further allocation would be a buffer allocated inside a kernel. Couplings only,
    and a loop with a coupling."""
    model, fast = model_and_fast_path(name)
    q, yd, wrenches = random_state(model, rng)
    f_ext, x = body_forces(model, wrenches), rng.normal(size=model.ny)
    v, tau, q_copy = model.spanning_velocities(q, yd), rng.normal(size=model.nv), q.copy()
    calls = {'forward_dynamics': (lambda: fast.forward_dynamics(q, yd, x, f_ext), 1),
             'inverse_dynamics': (lambda: fast.inverse_dynamics(q, yd, x, f_ext), 1),
             'mass_matrix': (lambda: fast.mass_matrix(q), 0),
             'inverse_osim': (lambda: fast.inverse_osim(q, model.links[:4]), 4),
             'spanning': (lambda: fast.spanning(q, yd, x), 0),
             'lcaba': (lambda: fast.lcaba(q, v, tau, f_ext, ProximalSettings()), 1),
             'accept_positions': (lambda: fast.accept_positions(q_copy, True, 1e-6), 1),
             'velocity_violation': (lambda: fast.velocity_violation(v), 0),
             'fused_forward_dynamics': (lambda: fast._fused_forward_dynamics(fast._x, q, v, tau)
                                        == 0 or None, 0),
             'fused_forward_dynamics (LCABA)':
                 (lambda: fast.forward_dynamics_lcaba(q, v, tau, ProximalSettings(), np.inf)
                  == 0 or None, 0),
             'fused_inverse_dynamics': (lambda: fast._fused_inverse_dynamics(fast._x, q, yd, x)
                                        == 0 or None, 0),
             'fused_mass_matrix': (lambda: fast._fused_mass_matrix(fast._x, q) == 0 or None, 0),
             'fused_inverse_osim':
                 (lambda: fast.inverse_osim_call(q, tuple(model.links[:4]))[0] == 0 or None, 0),
             'link_kinematics': (lambda: fast.link_kinematics(q, yd, model.links), 0),
             'fused_link_kinematics': (lambda: fast.link_call(q, v, model.links) == 0 or None,
                                       0),
             'fused_link_kinematics (poses)':
                 (lambda: fast.link_call(q, None, None, jacobians=False, biases=False) == 0
                  or None, 0)}
    _nrt_python.memsys_enable_stats()
    try:
        for kernel, (call, arrays) in calls.items():
            result = call()
            assert (result is not None
                    or not kernel.startswith('checked')), f'{kernel}: the inputs are taken'
            before = rtsys.get_allocation_stats().alloc
            call()
            assert rtsys.get_allocation_stats().alloc - before == arrays, (
                f'allocations in {kernel}')
    finally:
        _nrt_python.memsys_disable_stats()


def test_singular_configuration_raises_in_both_paths():
    """A four-bar at its dead point (coupler and rocker aligned): the coupler and rocker columns of
    K are parallel, so the dependent joints are undetermined."""
    # ground 1 m: dead points where |tip - pivot| = 0.75
    model = load_model(four_bar(lengths=(0.3, 0.5, 0.25)))
    fast = FastPath(model)
    fast.warm_up()
    crank = np.arccos((1.09 - 0.75 ** 2) / 0.6)
    tip = 0.3 * np.array([np.cos(crank), np.sin(crank)])
    direction = np.arctan2(-tip[1], 1.0 - tip[0])          # from the crank tip to the rocker pivot
    q = np.zeros(model.nq)
    for name, angle in (('crank_joint', crank), ('coupler_joint', direction - crank),
                        ('rocker_joint', direction + np.pi)):
        q[model.joint_names.index(name)] = angle
    yd, x = np.ones(model.ny), np.ones(model.ny)
    with pytest.raises(SingularConfigurationError) as reference:
        forward_pass(model, model.create_data(), q, yd)
    conditioning = r'\(conditioning [^)]*\)'       # round-off at a singular pose: not compared
    message = conditioning.join(re.escape(part)
                                for part in re.split(conditioning, str(reference.value)))
    for call in (lambda: fast.forward_dynamics(q, yd, x), lambda: fast.inverse_dynamics(q, yd, x),
                 lambda: fast.mass_matrix(q), lambda: fast.inverse_osim(q, 'rocker'),
                 lambda: fast.spanning(q, yd, x), lambda: fast.link_kinematics(q, yd, ('rocker',)),
                 lambda: fast.link_kinematics(q, None, ('rocker',), biases=False)):
        with pytest.raises(SingularConfigurationError, match=message):
            call()
