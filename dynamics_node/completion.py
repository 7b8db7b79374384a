"""State completion: spanning positions from independent ones (seed 003 Sec. 1.2).

Coupling-only clusters are linear and solved explicitly (couplings.py); loops are solved by Newton's method on
phi(q) = 0 over the dependent joints, warm-started from the previous solution (the neutral position at
first). Steps are taken in velocity coordinates and mapped onto each joint's position manifold
(joints.retract: q <- q * exp(step) and renormalized for a spherical joint). A start on a singular
pose (e.g. all links of a four-bar aligned at q = 0) can stall Newton, so a failed solve is retried
from a few fixed, seeded restarts before the loop is reported as unreachable.
"""

import numpy as np

from .clusters import constraint_jacobian
from .errors import ModelError
from .joints import random_position, retract
from .kinematics import update_transforms

TOLERANCE = 1e-12              # max |phi| of a solved cluster, m or rad
MAX_ITERATIONS = 50
RESTARTS = 8                   # extra starts: dependent angles uniform in [-pi, pi], random quaternions, seeded


def complete_positions(model, data, q_independent):
    """Spanning q (nq) whose independent joints take q_independent and whose loops are closed."""
    q = (model.q_neutral if data.q_last is None else data.q_last).copy()
    independent = set(model.independent_joint_names)
    q_ind = np.asarray(q_independent, dtype=float).reshape(-1)
    cursor = 0
    for i in range(1, model.nb):
        if model.joint_names[i - 1] in independent:
            n = model.nq_body[i]
            q[model.idx_q[i]:model.idx_q[i] + n] = q_ind[cursor:cursor + n]
            cursor += n
    model.couplings.complete(q)
    for cluster in model.cluster_list:
        if not cluster.linear:
            _solve_cluster(model, data, cluster, q)
    data.q_last = q.copy()
    return q


def independent_position_size(model):
    """Length of the independent position vector (7 for a floating joint, 1 for the others)."""
    names = set(model.independent_joint_names)
    return sum(model.nq_body[i] for i in range(1, model.nb) if model.joint_names[i - 1] in names)


def _solve_cluster(model, data, cluster, q):
    dependent = [b for b in cluster.bodies if cluster.col[b] in set(cluster.dependent)]
    rng = np.random.default_rng(cluster.index)
    residual = _newton(model, data, cluster, q, dependent)
    for _ in range(RESTARTS):
        if residual <= TOLERANCE:
            return
        for b in dependent:
            q[_positions(model, b)] = random_position(model.joint_type[b], rng, np.pi)
        residual = _newton(model, data, cluster, q, dependent)
    if residual > TOLERANCE:
        raise ModelError(f'could not close the constraints {[c.name for c in cluster.constraints]} of cluster '
                         f'{cluster.name!r}: residual {residual:.3g} after {RESTARTS + 1} Newton solves; the '
                         'independent positions may be out of the mechanism\'s reach')


def _positions(model, body):
    return slice(model.idx_q[body], model.idx_q[body] + model.nq_body[body])


def _newton(model, data, cluster, q, dependent):
    """Damped Newton on the dependent joints (full steps near the solution, halved while a step does
    not reduce |phi|); returns the final max |phi|."""
    phi = _residual(model, data, cluster, q)
    for _ in range(MAX_ITERATIONS):
        if np.max(np.abs(phi)) <= TOLERANCE:
            break
        K, _ = constraint_jacobian(cluster, data.Xup, model.S, np.zeros(cluster.n))
        step = np.linalg.lstsq(K[cluster.active_rows][:, cluster.dependent], phi, rcond=None)[0]
        start, scale = [q[_positions(model, b)].copy() for b in dependent], 1.0
        while True:
            column = 0
            for b, q_b in zip(dependent, start):
                nv = model.nv_body[b]
                q[_positions(model, b)] = retract(model.joint_type[b], model.axis[b], q_b,
                                                  -scale * step[column:column + nv])
                column += nv
            trial = _residual(model, data, cluster, q)
            if np.linalg.norm(trial) < np.linalg.norm(phi) or scale < 1e-3:
                break
            scale *= 0.5
        phi = trial
    return np.max(np.abs(phi))


def _residual(model, data, cluster, q):
    update_transforms(model, data, q, cluster.bodies)
    return np.concatenate([c.residual(data.Xup, lambda b: q[model.idx_q[b]])
                           for c in cluster.constraints])[cluster.active_rows]
