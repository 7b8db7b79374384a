"""out=: forward_dynamics, inverse_dynamics, bias_forces, gravity_forces and mass_matrix write
their result into the caller's array and return it, equal to the call without out, on both
engines and on every route (the common call, wrenches, info, LCABA, contacts); an out that is not
a writable float64 NumPy array of the result's shape raises ModelError and stays as it was."""

import numpy as np
import pytest

from conftest import random_state, robot
from dynamics_node import Contact, ModelError
from dynamics_node.algorithms.lcaba import ProximalSettings

FEET = [Contact(foot, '3D') for foot in ('FL_foot', 'FR_foot', 'HL_foot', 'HR_foot')]


def array_calls(model, q, v, tau, a, wrenches):
    """name -> call(out) of each public call with out=, with the length of its result."""
    ny = model.ny
    return {
        'forward_dynamics': (lambda out=None: model.forward_dynamics(q, v, tau, out=out),
                             model.nv),
        'forward_dynamics wrenches': (lambda out=None: model.forward_dynamics(
            q, v, tau, wrenches, out=out), model.nv),
        'forward_dynamics lcaba': (lambda out=None: model.forward_dynamics(
            q, v, tau, method='lcaba', settings=ProximalSettings(mu=1e6), out=out), model.nv),
        'inverse_dynamics': (lambda out=None: model.inverse_dynamics(q, v, a, out=out), ny),
        'inverse_dynamics wrenches': (lambda out=None: model.inverse_dynamics(
            q, v, a, wrenches, out=out), ny),
        'inverse_dynamics weights': (lambda out=None: model.inverse_dynamics(
            q, v, a, weights=np.ones(ny), out=out), ny),
        'bias_forces': (lambda out=None: model.bias_forces(q, v, out=out), ny),
        'gravity_forces': (lambda out=None: model.gravity_forces(q, out=out), ny),
        'mass_matrix': (lambda out=None: model.mass_matrix(q, out=out), (ny, ny)),
    }


@pytest.mark.parametrize('compiled', (True, False))
@pytest.mark.parametrize('name', ('linkage_leg', 'quadruped_rotors'))
def test_out_holds_the_result(name, compiled, rng):
    model = robot(name, compiled)
    q, yd, wrenches = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    tau = rng.normal(size=model.ny)
    a = model.forward_dynamics(q, v, tau)
    for label, (call, shape) in array_calls(model, q, v, tau, a, wrenches).items():
        expected = call()
        out = np.full(shape, np.nan)
        assert call(out) is out, label
        np.testing.assert_array_equal(out, expected, err_msg=label)
        strided = np.full((2,) + np.shape(out), np.nan)[0]      # any layout
        if strided.ndim == 1:
            strided = np.full(2 * len(out), np.nan)[::2]
        np.testing.assert_array_equal(call(strided), expected, err_msg=label)


@pytest.mark.parametrize('compiled', (True, False))
def test_out_with_contacts_and_info(compiled, rng):
    model = robot('quadruped_rotors', compiled)
    q, _, _ = random_state(model, rng)
    v, tau = np.zeros(model.nv), rng.normal(size=model.ny)
    for method in ('aba', 'lcaba'):
        info = model.forward_dynamics(q, v, tau, contacts=FEET, method=method, info=True)
        out = np.empty(model.nv)
        result = model.forward_dynamics(q, v, tau, contacts=FEET, method=method, info=True,
                                        out=out)
        np.testing.assert_array_equal(result.acceleration, info.acceleration)
        np.testing.assert_array_equal(out, info.acceleration)
        assert model.forward_dynamics(q, v, tau, contacts=FEET, method=method, out=out) is out
    a = model.forward_dynamics(q, v, tau, contacts=FEET, method='aba')
    expected = model.inverse_dynamics(q, v, a, contacts=FEET, info=True)
    out = np.empty(model.ny)
    result = model.inverse_dynamics(q, v, a, contacts=FEET, info=True, out=out)
    np.testing.assert_array_equal(result.efforts, expected.efforts)
    np.testing.assert_array_equal(out, expected.efforts)
    for call in (lambda out: model.gravity_forces(q, contacts=FEET, out=out),
                 lambda out: model.bias_forces(q, v, contacts=FEET, out=out)):
        out = np.empty(model.ny)
        assert call(out) is out
        np.testing.assert_array_equal(out, call(None))


@pytest.mark.parametrize('compiled', (True, False))
def test_bad_out_raises_and_keeps_it(compiled, rng):
    model = robot('linkage_leg', compiled)
    q, yd, wrenches = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    tau = rng.normal(size=model.ny)
    a = model.forward_dynamics(q, v, tau)
    for label, (call, shape) in array_calls(model, q, v, tau, a, wrenches).items():
        shape = (shape,) if isinstance(shape, int) else shape
        read_only = np.zeros(shape)
        read_only.flags.writeable = False
        bad = [np.zeros((shape[0] + 1,) + shape[1:]), np.zeros(shape + (2,)),
               np.zeros(shape[0] * shape[-1] + 1), np.zeros(shape, dtype=np.float32),
               np.zeros(shape, dtype=np.int64), np.zeros(shape).tolist(), 3.0, 'out',
               np.ma.zeros(shape), read_only]
        for out in bad:
            before = np.copy(out) if isinstance(out, np.ndarray) else out
            with pytest.raises(ModelError, match=r'^out is .*; expected a writable float64 '
                                                 r'NumPy array of shape'):
                call(out)
            if isinstance(out, np.ndarray):
                np.testing.assert_array_equal(out, before, err_msg=label)


@pytest.mark.parametrize('compiled', (True, False))
def test_inputs_are_refused_before_out(compiled):
    """A bad input names itself, whatever out is; out is left as it was."""
    model = robot('linkage_leg', compiled)
    out = np.full(model.nv, 7.0)
    with pytest.raises(ModelError, match='^q has'):
        model.forward_dynamics(np.zeros(model.nq + 1), np.zeros(model.nv), np.zeros(model.nv),
                               out=out)
    with pytest.raises(ModelError, match='^q has'):
        model.inverse_dynamics(np.zeros(model.nq + 1), np.zeros(model.nv), np.zeros(model.nv),
                               out=np.zeros(1))
    np.testing.assert_array_equal(out, 7.0)
