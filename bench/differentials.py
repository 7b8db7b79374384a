"""Tello (the bundled tello_humanoid and tello_legs: geared hips and arms, four differentials as
implicit constraints) in the benchmark of Chignoli et al.'s cluster-algorithms paper: our cluster
ABA, RNEA and EFPA next to the projection and Lagrange-multiplier methods, built here on
Pinocchio's spanning tree (crba, rnea, frame Jacobians) with the differentials' K and k given
(computed once by the KKT oracle, test/tello.py: CasADi functions of the published derivation),
and next to the paper's relative timings for the Tello Humanoid (its Tables II-IV, C++).

Usage: .venv/bin/python bench/differentials.py
"""

import os
import sys

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from dynamics_node import bundled_model, load_model  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: consistent random state)
from tello import tello_oracle  # noqa: E402  (test-only: the oracle with the differentials)
from timing import interleaved_medians, Report  # noqa: E402

HEADING = 'Tello: the differentials against the projection and Lagrange-multiplier methods'
ROUNDS, BATCH = 40, 10
ROBOTS = ('tello_humanoid', 'tello_legs')
# Chignoli et al., Tables II-IV, Tello Humanoid: percent added to the cluster algorithm's time
PAPER = {'FD projection': 22.2, 'FD Lagrange': 82.7, 'ID projection': 22.4,
         'Linv projection': 7.8}
HEADER = ('robot', 'nv/ny', 'FD us', 'projection', 'Lagrange', 'ID us', 'projection',
          'Linv us', 'projection')


def calls(name, rng):
    """Our public calls and the dense methods on Pinocchio's spanning tree, at one random closed
    state; the dense methods' results checked against ours."""
    model = load_model(bundled_model(name))
    model.warm_up()
    reference = tello_oracle(bundled_model(name), model.joint_names)
    tree, data = reference.model, reference.model.createData()
    q, yd, _ = random_state(model, rng)
    tau_y, ydd = rng.normal(size=model.ny), rng.normal(size=model.ny)
    feet = [link for link in model.links if link.endswith('foot')]
    v = model.spanning_velocities(q, yd)
    qp, vp = reference.q_to_pin(q), reference.v_to_pin(v)
    y, dependent = model.independent_v, np.setdiff1d(np.arange(model.nv), model.independent_v)
    frames = [reference._body_frame_id(link) for link in feet]
    perm = reference._vperm

    K, k = reference.constraint_jacobian(q), reference.constraint_bias(q, v)   # given, untimed

    def explicit():
        """G and g from K and k: K_d G_d = -K_i, K_d g_d = k."""
        G, g = np.zeros((model.nv, model.ny)), np.zeros(model.nv)
        G[y, np.arange(model.ny)] = 1.0
        solution = np.linalg.solve(K[:, dependent], np.column_stack((-K[:, y], k)))
        G[dependent], g[dependent] = solution[:, :-1], solution[:, -1]
        return G, g

    def mass_and_bias():
        H = pin.crba(tree, data, qp)
        H = np.triu(H) + np.triu(H, 1).T
        return H[np.ix_(perm, perm)], pin.rnea(tree, data, qp, vp, np.zeros(tree.nv))[perm]

    def fd_projection():
        (H, C), (G, g) = mass_and_bias(), explicit()
        return G @ np.linalg.solve(G.T @ H @ G, tau_y - G.T @ (H @ g + C)) + g

    tau = np.linalg.lstsq(explicit()[0].T, tau_y, rcond=None)[0]    # spanning, G^T tau = tau_y

    def fd_lagrange():
        H, C = mass_and_bias()
        m = K.shape[0]
        A = np.block([[H, K.T], [K, np.zeros((m, m))]])
        return np.linalg.solve(A, np.concatenate((tau - C, k)))[:model.nv]

    def id_projection():
        G, g = explicit()
        a = reference.v_to_pin(G @ ydd + g)
        return G.T @ pin.rnea(tree, data, qp, vp, a)[perm]

    def linv_projection():
        (H, _), (G, _) = mass_and_bias(), explicit()
        pin.computeJointJacobians(tree, data, qp)
        pin.updateFramePlacements(tree, data)
        J = np.vstack([pin.getFrameJacobian(tree, data, f, pin.ReferenceFrame.LOCAL)[:, perm]
                       for f in frames]) @ G
        return J @ np.linalg.solve(G.T @ H @ G, J.T)

    ours = {'FD': lambda: model.forward_dynamics(q, yd, tau_y),
            'ID': lambda: model.inverse_dynamics(q, yd, ydd),
            'Linv': lambda: model.inverse_osim(q, feet)}
    dense = {'FD projection': fd_projection, 'FD Lagrange': fd_lagrange,
             'ID projection': id_projection, 'Linv projection': linv_projection}
    for label, expected in (('FD projection', 'FD'), ('FD Lagrange', 'FD'),
                            ('ID projection', 'ID'), ('Linv projection', 'Linv')):
        value, ours_value = dense[label](), ours[expected]()
        scale = max(1.0, np.max(np.abs(ours_value)))
        assert np.max(np.abs(value - ours_value)) <= 1e-8 * scale, f'{name} {label} disagrees'
    return model, {**ours, **dense}


def row(name, rng):
    model, functions = calls(name, rng)
    t = interleaved_medians(functions, ROUNDS, BATCH)
    return [name, f'{model.nv}/{model.ny}', f'{t["FD"]:.1f}',
            f'{t["FD projection"]:.0f} (+{100 * (t["FD projection"] / t["FD"] - 1):.0f}%)',
            f'{t["FD Lagrange"]:.0f} (+{100 * (t["FD Lagrange"] / t["FD"] - 1):.0f}%)',
            f'{t["ID"]:.1f}',
            f'{t["ID projection"]:.0f} (+{100 * (t["ID projection"] / t["ID"] - 1):.0f}%)',
            f'{t["Linv"]:.1f}',
            f'{t["Linv projection"]:.0f} (+{100 * (t["Linv projection"] / t["Linv"] - 1):.0f}%)']


NOTE = (
    'Median microseconds per call from Python, interleaved in one process, one random closed '
    'state per robot. Ours: the public forward_dynamics (cluster ABA), inverse_dynamics (cluster '
    'RNEA) and inverse_osim of the two feet (cluster EFPA), inputs checked, one compiled call '
    'each; the differentials\' residual tapes are evaluated in the kernels (multi-dual numbers). '
    'Projection: H by pin.crba and C by pin.rnea on the spanning tree, G and g from the '
    'differentials\' and gears\' K and k, then G^T H G solved (FD), G^T rnea(G ydd + g) (ID), '
    'J_y (G^T H G)^-1 J_y^T (Lambda^-1); Lagrange: the dense KKT system. K and k are given to '
    'them, computed once outside the timing (by the oracle\'s CasADi functions): a lower bound '
    'of the dense methods\' cost, whose Pinocchio calls run in C++ and whose solves in NumPy. '
    'Every dense result equals ours to 1e-8. The paper (Chignoli et al., Tables II-IV, Tello '
    'Humanoid, C++): projection +'
    f'{PAPER["FD projection"]}% and Lagrange multipliers +{PAPER["FD Lagrange"]}% over the '
    f'C-ABA, projected RNEA +{PAPER["ID projection"]}% over the C-RNEA, projected EFPA '
    f'+{PAPER["Linv projection"]}% over the C-EFPA.')


def report_section(report, heading=HEADING, rng=None):
    rng = np.random.default_rng(0) if rng is None else rng
    report.heading(heading)
    report.table(HEADER, [row(name, rng) for name in ROBOTS])
    report.text(NOTE)


if __name__ == '__main__':
    report_section(Report(HEADING))
