"""The Coriolis matrix C_y (algorithms/coriolis.py and its compiled twin kernels/coriolis.py)
against independent references.

- Trees (example-robot-data: Solo-12, Talos, UR5): Pinocchio's computeCoriolisMatrix.
- Every bundled robot (loops, couplings, rotors): C_y yd + gravity forces = bias forces;
  Hdot_y - 2 C_y skew-symmetric, Hdot_y by central differences of the mass matrix along completed
  motions; C_y = G^T C G + G^T H Gdot with Pinocchio's C and H on the spanning tree, G the oracle's
  and Gdot its central difference along the motion.
- On a loop the G^T H Gdot term is needed: without it both properties fail.
- The compiled kernel agrees with the NumPy algorithm to 1e-12.
"""

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, ROBOTS
from dynamics_node.algorithms.coriolis import coriolis_matrix
from dynamics_node.algorithms.crba import crba
from dynamics_node.kernels import coriolis as kernels
from whole_body import (bundled, compiled, data, FD_RTOL, Motion, spanning_G, state, tree,
                        TREES)

STATES = 3
RTOL = 1e-9
TWIN_RTOL = 1e-12


def checked_coriolis(model, q, yd):
    """C_y of the NumPy algorithm, after checking the compiled kernel's against it."""
    expected = coriolis_matrix(model, data(model), q, yd)
    run = compiled(model)
    w = kernels.CoriolisWorkspace(run.flat)
    run.call(kernels.coriolis_matrix, q, yd, w.C, w.Gdot, w.Sdot, w.Idot, w.hc, w.U, w.F, w.F1,
             w.F2)
    assert_close(w.C, expected, 'C_y (compiled)', TWIN_RTOL)
    return expected


def pinocchio_coriolis(reference, q, v):
    C = pin.computeCoriolisMatrix(reference.model, reference.data, reference.q_to_pin(q),
                                  reference.v_to_pin(v))
    return C[np.ix_(reference._vperm, reference._vperm)]


def assert_skew(M, scale, name, rtol):
    """|M + M^T| <= rtol * scale entrywise."""
    error = float(np.max(np.abs(M + M.T)))
    assert error <= rtol * scale, f'{name}: max |M + M^T| {error:.3e} > {rtol:.0e} * {scale:.3g}'


@pytest.mark.parametrize('name', TREES)
def test_trees_match_pinocchio(name, rng):
    model, reference = tree(name)
    for _ in range(STATES):
        q, yd, _ = state(model, rng)
        assert_close(checked_coriolis(model, q, yd), pinocchio_coriolis(reference, q, yd),
                     'C (computeCoriolisMatrix)')


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_bias_forces(name, rng):
    model, _ = bundled(name)
    for _ in range(STATES):
        q, yd, _ = state(model, rng)
        C = checked_coriolis(model, q, yd)
        assert_close(C @ yd + model.gravity_forces(q), model.bias_forces(q, yd),
                     'C_y yd + gravity = bias forces')


@pytest.mark.parametrize('name', ROBOTS)
def test_bundled_robots_skew_symmetry(name, rng):
    """Hdot_y - 2 C_y skew, Hdot_y by central differences along completed motions."""
    model, reference = bundled(name)
    work = data(model)
    for _ in range(STATES):
        motion = Motion(model, reference, rng)
        C = checked_coriolis(model, motion.q(0.0), motion.yd)
        H_dot = motion.rate(lambda q, _: crba(model, work, q))
        assert_skew(H_dot - 2 * C, max(np.max(np.abs(H_dot)), np.max(np.abs(C))),
                    'Hdot_y - 2 C_y', FD_RTOL)


def without_universal_joints(name):
    """Pinocchio 4.1's computeCoriolisMatrix misses the rate of a JointModelUniversal's motion
    subspace (its C v differs from nle - g by 1e-3 on ambidex_wrist's spanning tree), so the
    projection is checked where the oracle's tree has none."""
    return not any('Universal' in joint.shortname() for joint in bundled(name)[1].model.joints)


@pytest.mark.parametrize('name', [name for name in ROBOTS if without_universal_joints(name)])
def test_bundled_robots_project_the_tree(name, rng):
    """C_y = G^T C G + G^T H Gdot, Gdot by central differences of the oracle's G."""
    model, reference = bundled(name)
    for _ in range(STATES):
        motion = Motion(model, reference, rng)
        q = motion.q(0.0)
        G = spanning_G(model, reference, q)
        G_dot = motion.rate(lambda q, _: spanning_G(model, reference, q))
        expected = G.T @ (pinocchio_coriolis(reference, q, G @ motion.yd) @ G
                          + reference.mass_matrix(q) @ G_dot)
        assert_close(checked_coriolis(model, q, motion.yd), expected,
                     'C_y = G^T C G + G^T H Gdot', FD_RTOL)


def test_a_loop_needs_the_rate_of_G():
    """On linkage_leg G^T C G alone is neither skew against Hdot_y nor the bias forces."""
    model, reference = bundled('linkage_leg')
    motion = Motion(model, reference, np.random.default_rng(7), y0=np.array([0.8, 0.0]),
                    yd=np.array([1.0, 0.0]))            # the crank turns, the loop moves
    q = motion.q(0.0)
    G = spanning_G(model, reference, q)
    tree_part = G.T @ pinocchio_coriolis(reference, q, G @ motion.yd) @ G
    C = checked_coriolis(model, q, motion.yd)
    H_dot = motion.rate(lambda q, _: crba(model, data(model), q))
    scale = np.max(np.abs(H_dot))
    assert np.max(np.abs(C - tree_part)) > 1e-3 * scale
    assert np.max(np.abs(H_dot - 2 * tree_part + (H_dot - 2 * tree_part).T)) > 1e-3 * scale
    bias = model.bias_forces(q, motion.yd) - model.gravity_forces(q)
    assert np.max(np.abs(tree_part @ motion.yd - bias)) > 1e-3 * np.max(np.abs(bias))
