"""The public calls in one compiled call each (kernels/calls.py): taken for float64 vectors, equal
to Model's Python path (the same kernels after the NumPy checks; reached here with lists; bit for
bit but for LCABA's contracted multiply-adds), and every input the compiled checks do not accept is
referred to that path, which raises its error."""

import numpy as np
import pytest

from conftest import assert_close, random_state, robot, ROBOTS
from dynamics_node import bundled_model, Contact, load_model, model as model_module, ModelError
from dynamics_node.multibody.constraints import rows_at
from dynamics_node.algorithms.kinematics import update_transforms
from dynamics_node.algorithms.lcaba import ProximalSettings
from dynamics_node.bounds import VELOCITY_TOLERANCE
from singular_loops import dead_point, four_bar_positions, ROCKER_DRIVEN


def calls(model, q, v, tau, a, wrenches, links):
    """name -> call(q, v, tau, a) of every public method whose inputs those are."""
    return {
        'forward_dynamics': lambda q, v, tau, a: model.forward_dynamics(q, v, tau, wrenches),
        'forward_dynamics lcaba': lambda q, v, tau, a: model.forward_dynamics(
            q, v, tau, wrenches, method='lcaba',
            settings=ProximalSettings(mu=1e5, max_iterations=30)),
        'inverse_dynamics': lambda q, v, tau, a: model.inverse_dynamics(q, v, a, wrenches),
        'bias_forces': lambda q, v, tau, a: model.bias_forces(q, v, wrenches),
        'gravity_forces': lambda q, v, tau, a: model.gravity_forces(q),
        'mass_matrix': lambda q, v, tau, a: model.mass_matrix(q),
        'inverse_osim': lambda q, v, tau, a: model.inverse_osim(q, links),
        'link_jacobian': lambda q, v, tau, a: model.link_jacobian(q, links[0]),
        'link_bias_acceleration': lambda q, v, tau, a: model.link_bias_acceleration(q, v,
                                                                                    links[0]),
        'link_kinematics': lambda q, v, tau, a: _flat(model.link_kinematics(q, v, links)),
        'link_pose': lambda q, v, tau, a: _flat(model.link_pose(q, links[0])),
        'link_poses': lambda q, v, tau, a: _flat(model.link_poses(q)),
    }


def _flat(arrays):
    """The arrays of a link call as one vector."""
    return np.concatenate([np.reshape(x, -1) for x in arrays])


def python_path(call, *arrays):
    """The call with lists, which the compiled entry points refer to Model's Python path."""
    return call(*[list(x) for x in arrays])


@pytest.mark.parametrize('name', ROBOTS)
def test_compiled_calls_equal_the_python_path(name, rng, monkeypatch):
    model = robot(name)
    q, yd, wrenches = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    tau, ydd = rng.normal(size=model.ny), rng.normal(size=model.ny)
    a = model.forward_dynamics(q, v, tau)
    links = list(model.links[1::2])
    expected = {label: python_path(call, q, v, tau, a)
                for label, call in calls(model, q, v, tau, a, wrenches, links).items()}
    # q as complete_positions returned it last (checks skipped), then not
    for known in (True, False):
        if not known:
            random_state(model, rng)
        _compiled_calls_equal(name, model, q, v, yd, a, ydd, tau, wrenches, links, expected,
                              monkeypatch)


def _compiled_calls_equal(name, model, q, v, yd, a, ydd, tau, wrenches, links, expected,
                          monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(model_module, 'positions',
                      lambda *args, **kwargs: pytest.fail('the Python path ran'))
        for spanning in (True, False):
            x, y = (v, a) if spanning else (yd, ydd)
            for label, call in calls(model, q, x, tau, y, wrenches, links).items():
                result = call(q, x, tau, y)
                if spanning and 'lcaba' in label:
                    # LCABA contracts a * b + c into FMAs (kernels/lcaba.py), where LLVM decides
                    # per compiled caller: the fused call and the Python path's kernel may round
                    # differently.
                    assert_close(result, expected[label], f'{name}: {label}', 1e-13)
                elif spanning:
                    np.testing.assert_array_equal(result, expected[label], f'{name}: {label}')
                assert np.all(np.isfinite(result)), f'{name}: {label}'


def test_positions_complete_positions_returned_skip_the_position_checks(rng):
    """The workspace keeps the positions complete_positions returned last (closed then): equal
    positions skip the position checks in every fused call, any other positions get them, and a
    failed completion keeps the last ones."""
    model = load_model(bundled_model('six_bar'))
    engine = model._local.data.engine
    q = model.complete_positions([0.3])
    opened = _with(q, 1, q[1] + 0.1)
    yd, tau = np.ones(model.ny), np.ones(model.ny)
    checked = calls(model, q, yd, tau, tau, None, [model.links[-1]])
    for label in ('link_pose', 'link_poses'):                 # the loops are not theirs to check
        assert np.all(np.isfinite(checked.pop(label)(opened, yd, tau, tau))), label
    for label, call in checked.items():
        with pytest.raises(ModelError, match='violates constraint'):
            call(opened, yd, tau, tau)
    engine.closed_positions(opened)   # as if completion had returned it: the loop check is skipped
    for label, call in checked.items():
        assert np.all(np.isfinite(call(opened, yd, tau, tau))), label
    np.testing.assert_array_equal(model.complete_positions([0.3]), q)
    with pytest.raises(ModelError, match='violates constraint'):
        model.mass_matrix(opened)
    with pytest.raises(ModelError):
        model.complete_positions([np.nan])
    np.testing.assert_array_equal(engine.data.q_closed, q)


def test_skipped_checks_give_the_same_results(rng):
    """Positions complete_positions returned skip the checks, yet their quaternions are normalized
    as the checks do: a floating robot's results do not depend on whether the model completed its
    q before (LCABA's penalty turned the last bit of a quaternion into 4e-11 of its result)."""
    completed, fresh = (load_model(bundled_model('humanoid_belts')) for _ in range(2))
    q, yd, wrenches = random_state(completed, rng)
    for method in ('aba', 'lcaba'):
        np.testing.assert_array_equal(
            completed.forward_dynamics(q, yd, yd, wrenches, method=method),
            fresh.forward_dynamics(q, yd, yd, wrenches, method=method))
    np.testing.assert_array_equal(completed.inverse_dynamics(q, yd, yd, wrenches),
                                  fresh.inverse_dynamics(q, yd, yd, wrenches))


def test_the_fused_lcaba_call_takes_each_calls_settings(rng, monkeypatch):
    """FastPath keeps the last settings in its workspace, rewritten when another ProximalSettings
    object comes (they are frozen): alternating settings give each its own answer, that of the
    Python path."""
    model = robot('linkage_leg')
    q, yd, _ = random_state(model, rng)
    v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
    loose, default = ProximalSettings(mu=1e3, max_iterations=1), ProximalSettings()
    expected = {settings: python_path(
        lambda q, v, tau: model.forward_dynamics(q, v, tau, method='lcaba', settings=settings),
        q, v, tau) for settings in (loose, default)}
    assert not np.allclose(expected[loose], expected[default]), (
        'the settings change the answer here')
    monkeypatch.setattr(model_module, 'positions',
                        lambda *args, **kwargs: pytest.fail('the Python path ran'))
    for settings in (loose, default, loose, default):
        qdd = model.forward_dynamics(q, v, tau, method='lcaba', settings=settings)
        assert_close(qdd, expected[settings], f'mu {settings.mu:g}', 1e-13)


def test_other_array_types_take_the_python_path(rng):
    """float32, integer and 2-D arrays are converted (numba would reinterpret their bytes)."""
    model = robot('quadruped_rotors')
    q, yd, _ = random_state(model, rng)
    expected = model.bias_forces(q, yd)
    assert np.array_equal(model.bias_forces(q.reshape(1, -1), yd.reshape(-1, 1)), expected)
    assert np.allclose(model.bias_forces(q, yd.astype(np.float32)), expected, rtol=1e-6, atol=1e-6)
    assert np.array_equal(model.gravity_forces(q.astype('>f8')), model.gravity_forces(q))
    zero = np.zeros(model.ny, dtype=int)
    assert np.array_equal(model.inverse_dynamics(q, zero, zero), model.gravity_forces(q))


def _bad_inputs(model, q, v, yd, tau, a, rng):
    """label -> (q, v, tau, a) with one input the checks refuse."""
    quaternion = (model.idx_q[model.joint_type.index('floating')] + 3 if model.floating_base
                  else None)
    cases = {
        'q length': (q[:-1], v, tau, a), 'v length': (q, v[:-1], tau, a),
        'tau length': (q, v, tau[:-1], a),
        'a length': (q, v, tau, a[:-1]), 'q nan': (_with(q, 0, np.nan), v, tau, a),
        'q beyond bound': (_with(q, 1, 1e9), v, tau, a), 'v inf': (q, _with(v, 0, np.inf), tau, a),
        'v beyond bound': (q, _with(v, 0, 1e7), tau, a),
        'tau nan': (q, v, _with(tau, 0, np.nan), a),
        'a beyond bound': (q, v, tau, _with(a, 0, 1e9)),
        'q not closed': (q + 0.01 * rng.normal(size=q.size), v, tau, a),
        'a loop open': (_loop_opened(model, q), v, tau, a),
        'v inconsistent': (q, v + 0.01 * rng.normal(size=v.size), tau, a),
        'a inconsistent': (q, v, tau, a + 0.01 * rng.normal(size=a.size)),
        'independent v, q not closed': (q + 0.01 * rng.normal(size=q.size), yd, tau, a),
    }
    if quaternion is not None:
        cases['quaternion norm'] = (_with(q, quaternion, 3.0), v, tau, a)
    return cases


def _loop_opened(model, q):
    """q with a dependent joint of a loop cluster turned by 0.01 (couplings still closed), else
    q."""
    for c in model.cluster_list:
        if not c.linear:
            body = next(b for b in c.bodies if model.joint_role[b] == 'dependent')
            return _with(q, model.idx_q[body], q[model.idx_q[body]] + 0.01)
    return q


def _with(x, i, value):
    x = x.copy()
    x[i] = value
    return x


def _error(call, *arrays):
    try:
        result = call(*arrays)
    except ModelError as error:
        return type(error), str(error)
    return np.asarray(result)


@pytest.mark.parametrize('name', [name for name in ROBOTS
                                  if any(c.constraints for c in robot(name).cluster_list)])
def test_velocities_that_violate_one_constraint_row_are_refused(name, rng):
    """Spanning velocities off a single active constraint row (a coupling, a loop's, inside a loop
    cluster or not) by 100 times the tolerance: every method refuses them with the Python path's
    error. The fused LCABA call measures the violation on its own constraint rows, the cluster ABA
    and RNEA on their K."""
    model = robot(name)
    q, yd, wrenches = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    tau, a = rng.normal(size=model.ny), np.zeros(model.nv)
    data = model._local.data
    update_transforms(model, data, q)
    for cluster, (v0, v1) in zip(model.cluster_list, model.v_range):
        if not cluster.constraints:
            continue
        K = rows_at(model, data, cluster)[0][cluster.active_rows]
        for row in range(K.shape[0]):
            size = 100 * VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(v)))
            off = v.copy()
            # K off = K v + size e_row
            off[v0:v1] += np.linalg.pinv(K) @ (size * np.eye(K.shape[0])[row])
            for label, call in calls(model, q, off, tau, a, wrenches, [model.links[-1]]).items():
                if label in ('forward_dynamics', 'forward_dynamics lcaba', 'inverse_dynamics',
                             'bias_forces', 'link_bias_acceleration', 'link_kinematics'):
                    fast, python = (_error(call, q, off, tau, a),
                                    _error(python_path, call, q, off, tau, a))
                    assert (isinstance(fast, tuple)
                            and fast == python), f'{name}: {cluster.name} row {row}, {label}'


@pytest.mark.parametrize('name', ['linkage_leg', 'quadruped_rotors', 'parallel_ankle_leg'])
def test_refused_inputs_get_the_python_path_errors(name, rng):
    model = robot(name)
    q, yd, wrenches = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    tau = rng.normal(size=model.ny)
    a = model.forward_dynamics(q, v, tau)
    wrench_cases = {'good wrenches': None,
                    'bad wrench': {model.links[-1]: ((0, 0, np.nan), (0, 0, 0))}}
    for label, (qb, vb, taub, ab) in _bad_inputs(model, q, v, yd, tau, a, rng).items():
        for wrench_label, bad_wrenches in wrench_cases.items():
            for call_label, call in calls(model, q, v, tau, a, bad_wrenches or wrenches,
                                          ['no such link'] if wrench_label == 'bad wrench' else
                                          [model.links[-1]]).items():
                fast = _error(call, qb, vb, taub, ab)
                python = _error(lambda *arrays: python_path(call, *arrays), qb, vb, taub, ab)
                where = f'{name}: {label}, {wrench_label}, {call_label}'
                if isinstance(python, tuple) or isinstance(fast, tuple):
                    assert (isinstance(fast, tuple) and isinstance(python, tuple)
                            and fast == python), \
                        f'{where}: compiled {fast}, Python path {python}'
                else:
                    np.testing.assert_array_equal(fast, python, where)


def test_singular_configuration_falls_back_as_the_python_path(rng):
    """At a four-bar's dead point the compiled cluster ABA refers; 'auto' then falls back to
    LCABA."""
    model = load_model(ROCKER_DRIVEN)
    q = four_bar_positions(model, *dead_point('folded'))
    info = model.forward_dynamics(list(q), np.zeros(model.nv), np.ones(model.ny), info=True)
    assert info.method_used == 'lcaba' and info.fallback_reason
    np.testing.assert_array_equal(model.forward_dynamics(q, np.zeros(model.nv), np.ones(model.ny)),
                                  info.acceleration)


CONTACTS = {'quadruped_rotors': [Contact(foot, '3D')
                                 for foot in ('FL_foot', 'FR_foot', 'HL_foot', 'HR_foot')],
            'humanoid_belts': [Contact('left_foot_sole', '6D'), Contact('right_foot_sole', '6D')],
            'linkage_leg': [Contact('foot', '3D')]}


@pytest.mark.parametrize('name', CONTACTS)
def test_contact_bias_forces_in_one_call(name, rng, monkeypatch):
    """Contacts resolved before: contact_bias_forces is one compiled call (the Python checks do not
    run), equal to the NumPy engine's, and every input it refuses gets the error of the Python
    path, the NumPy engine's."""
    model, reference, contacts = robot(name), robot(name, compiled=False), CONTACTS[name]
    q, yd, _ = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    model.contact_bias_forces(q, v, contacts)                   # resolves them: the Python path
    expected = [reference.contact_bias_forces(q, x, contacts, info=True) for x in (v, yd)]
    with monkeypatch.context() as patch:
        patch.setattr(model_module, 'positions',
                      lambda *args, **kwargs: pytest.fail('the Python path ran'))
        for x, numpy in zip((v, yd), expected):
            info = model.contact_bias_forces(q, x, contacts, info=True)
            np.testing.assert_array_equal(model.contact_bias_forces(q, x, contacts), info.efforts)
            for field in ('efforts', 'velocities', 'accelerations', 'contact_forces',
                          'velocity_correction'):
                assert_close(getattr(info, field), getattr(numpy, field), f'{name}: {field}')
    tau = rng.normal(size=model.ny)
    a = model.forward_dynamics(q, v, tau)
    for label, (qb, vb, _, _) in _bad_inputs(model, q, v, yd, tau, a, rng).items():
        fast, python = (_error(lambda q, v: m.contact_bias_forces(q, v, contacts), qb, vb)
                        for m in (model, reference))
        if isinstance(fast, tuple) or isinstance(python, tuple):
            assert fast == python, f'{name}: {label}: compiled {fast}, NumPy {python}'
        else:
            assert_close(fast, python, f'{name}: {label}')
