"""The inertial-parameter regressor (algorithms/regressor.py and its compiled twin
kernels/regressor.py) and the base parameters, against independent references.

- Trees (example-robot-data: Solo-12, Talos, UR5): Pinocchio's computeJointTorqueRegressor and
  Inertia.toDynamicParameters, blocks matched by joint name.
- Every bundled robot (loops, couplings, rotors as bodies): Y_y pi = inverse dynamics at random
  closed states; Y_y = G^T Y(q, G yd, G ydd + g) with Pinocchio's regressor on the spanning tree
  where it has one Pinocchio joint per body (no universal joint, which the library splits in two
  bodies).
- Base parameters: the rank and the kept columns are the same for stacks of random states with
  twice and four times as many rows as parameters, and the kept columns with the combinations B
  reproduce the torques of states outside the stack.
- The compiled kernel agrees with the NumPy algorithm to 1e-12.
"""

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, ROBOTS
from dynamics_node.algorithms.regressor import base_parameters, inertial_parameters, regressor
from dynamics_node.kernels import regressor as kernels
from whole_body import bundled, compiled, data, spanning_G, state, tree, TREES

STATES = 3
RTOL = 1e-9
TWIN_RTOL = 1e-12


def checked_regressor(model, q, yd, ydd):
    """Y_y of the NumPy algorithm, after checking the compiled kernel's against it."""
    expected = regressor(model, data(model), q, yd, ydd)
    run = compiled(model)
    w = kernels.RegressorWorkspace(run.flat)
    run.call(kernels.regressor, q, yd, ydd, w.Y, w.F, w.unit)
    assert_close(w.Y, expected, 'Y_y (compiled)', TWIN_RTOL)
    return expected


def pinocchio_blocks(model, reference):
    """Pinocchio's regressor columns in the model's body order (joint names)."""
    joints = [reference.model.getJointId(name) for name in model.joint_names]
    return np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in joints])


def pinocchio_regressor(model, reference, q, v, a):
    Y = pin.computeJointTorqueRegressor(reference.model, reference.data, reference.q_to_pin(q),
                                        reference.v_to_pin(v), reference.v_to_pin(a))
    return Y[reference._vperm][:, pinocchio_blocks(model, reference)]


@pytest.mark.parametrize('name', TREES)
def test_trees_match_pinocchio(name, rng):
    model, reference = tree(name)
    expected = np.concatenate([reference.model.inertias[reference.model.getJointId(joint)]
                               .toDynamicParameters() for joint in model.joint_names])
    assert_close(inertial_parameters(model), expected, 'parameters (toDynamicParameters)')
    for _ in range(STATES):
        q, yd, ydd = state(model, rng)
        assert_close(checked_regressor(model, q, yd, ydd),
                     pinocchio_regressor(model, reference, q, yd, ydd),
                     'Y (computeJointTorqueRegressor)')


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_reproduce_inverse_dynamics(name, rng):
    model, _ = bundled(name)
    pi = inertial_parameters(model)
    assert pi.size == 10 * (model.nb - 1)
    for _ in range(STATES):
        q, yd, ydd = state(model, rng)
        assert_close(checked_regressor(model, q, yd, ydd) @ pi,
                     model.inverse_dynamics(q, yd, ydd), 'Y_y pi = inverse dynamics')


def one_joint_per_body(name):
    model, reference = bundled(name)
    return reference.model.njoints - 1 == model.nb - 1


@pytest.mark.parametrize('name', [name for name in ROBOTS if one_joint_per_body(name)])
def test_bundled_robots_project_the_tree(name, rng):
    """Y_y = G^T Y(q, G yd, G ydd + g)."""
    model, reference = bundled(name)
    for _ in range(STATES):
        q, yd, ydd = state(model, rng)
        G = spanning_G(model, reference, q)
        v = G @ yd
        a = G @ ydd + reference.explicit_bias_g(q, v, model.independent_v)
        assert_close(checked_regressor(model, q, yd, ydd),
                     G.T @ pinocchio_regressor(model, reference, q, v, a), 'Y_y = G^T Y')


def stacked(model, rng, states):
    """The regressors and torques of random closed states, stacked."""
    rows, torques = [], []
    for _ in range(states):
        q, yd, ydd = state(model, rng)
        rows.append(regressor(model, data(model), q, yd, ydd))
        torques.append(model.inverse_dynamics(q, yd, ydd))
    return np.vstack(rows), np.concatenate(torques)


@pytest.mark.parametrize('name', ROBOTS)
def test_base_parameters(name, rng):
    model, _ = bundled(name)
    pi = inertial_parameters(model)
    states = -(-2 * pi.size // model.ny)           # twice as many rows as parameters
    rank, kept, B = base_parameters(stacked(model, rng, states)[0])
    rank_more, kept_more, _ = base_parameters(stacked(model, rng, 2 * states)[0])
    assert (rank, list(kept)) == (rank_more, list(kept_more)), 'the same base for more states'
    assert 0 < rank < pi.size and B.shape == (rank, pi.size)
    W, tau = stacked(model, rng, 4)                 # states the base was not computed from
    assert_close(W[:, kept] @ (B @ pi), tau, 'W_kept beta = inverse dynamics')


def test_base_parameters_skip_round_off_columns(rng):
    """A column of round-off (1e-17 of the others) is no base parameter, and takes nothing of a
    real column proportional to it after it: W pi = W_kept beta still."""
    d, c = rng.normal(size=(2, 40))
    W = np.column_stack([d, 1e-17 * c, c])
    rank, kept, B = base_parameters(W)
    assert rank == 2 and list(kept) == [0, 2]
    pi = rng.normal(size=3)
    np.testing.assert_allclose(W[:, kept] @ (B @ pi), W @ pi, rtol=1e-12, atol=1e-12)
