"""State completion: spanning positions from independent ones (seed 003 Sec. 1.2).

Coupling-only clusters are linear and solved explicitly (couplings.py); loops are solved by Newton's method on
phi(q) = 0 over the dependent joints, warm-started from the previous solution. A start on a singular
pose (e.g. all links of a four-bar aligned at q = 0) can stall Newton, so a failed solve is retried
from seeded restarts until a time budget is spent (no restart begins after it); then the loop is reported
as unreachable. A solve is bounded (MAX_ITERATIONS) and stops early once it stalls (a least-squares
minimum with |phi| > 0: the pose is out of reach from there), so an unreachable pose costs milliseconds.
The budget never cuts a solve short, so whether a pose is reached from the warm start does not depend
on the machine's load.
"""

import time

import numpy as np

from .clusters import constraint_jacobian
from .errors import ModelError, quote
from .kinematics import update_transforms

TOLERANCE = 1e-12              # max |phi| of a solved cluster, m or rad
MAX_ITERATIONS = 50            # Newton iterations per start
RESTARTS = 8                   # extra starts at most: dependent joints uniform in [-pi, pi], seeded
SLOW_RATIO, SLOW_STEPS = 0.9, 3    # a start crawling this slowly is abandoned (see _newton)
BUDGET_MS = 50.0               # default time budget of one completion, checked before each restart
MAX_BUDGET_MS = 1e4            # budget_ms accepted up to 10 s


def complete_positions(model, data, q_independent, budget_ms=BUDGET_MS):
    """Spanning q (nq) whose independent joints take q_independent and whose loops are closed. Starts
    from data.q_last, which the caller updates once the whole call has succeeded."""
    deadline = time.perf_counter() + 1e-3 * budget_ms
    q = np.zeros(model.nq) if data.q_last is None else data.q_last.copy()
    independent = set(model.independent_joint_names)
    cursor = 0
    for i in range(1, model.nb):
        if model.joint_names[i - 1] in independent:
            n = model.nq_body[i]
            q[model.idx_q[i]:model.idx_q[i] + n] = q_independent[cursor:cursor + n]
            cursor += n
    model.couplings.complete(q)
    for cluster in model.cluster_list:
        if not cluster.linear:
            _solve_cluster(model, data, cluster, q, deadline, budget_ms)
    return q


def independent_position_size(model):
    """Length of the independent position vector (7 for a floating joint, 1 for the others)."""
    names = set(model.independent_joint_names)
    return sum(model.nq_body[i] for i in range(1, model.nb) if model.joint_names[i - 1] in names)


def _solve_cluster(model, data, cluster, q, deadline, budget_ms):
    """Newton from the warm start, then from seeded restarts while the budget lasts."""
    dependent = [model.idx_q[b] for b in cluster.bodies if cluster.col[b] in set(cluster.dependent)]
    restarts = np.random.default_rng(cluster.index).uniform(-np.pi, np.pi, (RESTARTS, len(dependent)))
    residual = _newton(model, data, cluster, q, dependent)
    solves = 1
    for start in restarts:
        if residual <= TOLERANCE or time.perf_counter() > deadline:
            break
        q[dependent] = start
        residual = _newton(model, data, cluster, q, dependent)
        solves += 1
    if residual > TOLERANCE:
        raise ModelError(f'could not close the constraints {quote([c.name for c in cluster.constraints])} of '
                         f'cluster {quote(cluster.name)}: residual {residual:.3g} after {solves} Newton solves '
                         f'(budget {budget_ms:g} ms); the independent positions may be out of the '
                         "mechanism's reach")


def _newton(model, data, cluster, q, dependent):
    """Damped Newton on the dependent joints (full steps near the solution, halved while a step does
    not reduce |phi|); returns the final max |phi|. A start is abandoned once it stalls: no decrease
    down to a 1/1000 step, or SLOW_STEPS steps in a row that cut |phi| by less than SLOW_RATIO (Newton
    converges quadratically near a closed loop; crawling means a least-squares minimum with phi != 0,
    i.e. out of reach from here)."""
    phi = _residual(model, data, cluster, q)
    slow = 0
    for _ in range(MAX_ITERATIONS):
        if np.max(np.abs(phi)) <= TOLERANCE or slow == SLOW_STEPS:
            break
        K, _ = constraint_jacobian(cluster, data.Xup, model.S, np.zeros(cluster.n))
        step = np.linalg.lstsq(K[cluster.active_rows][:, cluster.dependent], phi, rcond=None)[0]
        start, scale = q[dependent].copy(), 1.0
        while True:
            q[dependent] = start - scale * step
            trial = _residual(model, data, cluster, q)
            if np.linalg.norm(trial) < np.linalg.norm(phi):
                break
            if scale < 1e-3:
                q[dependent] = start
                return np.max(np.abs(phi))
            scale *= 0.5
        slow = slow + 1 if np.linalg.norm(trial) > SLOW_RATIO * np.linalg.norm(phi) else 0
        phi = trial
    return np.max(np.abs(phi))


def _residual(model, data, cluster, q):
    update_transforms(model, data, q, cluster.bodies)
    return np.concatenate([c.residual(data.Xup, lambda b: q[model.idx_q[b]])
                           for c in cluster.constraints])[cluster.active_rows]
