"""State completion: spanning positions from independent ones (seed 003 Sec. 1.2).

Coupling-only clusters are linear and solved explicitly (couplings.py); loops are solved by Newton's method on
phi(q) = 0 over the dependent joints. Steps are taken in velocity coordinates and mapped onto each joint's
position manifold (joints.retract: q <- q * exp(step), renormalized, for a spherical joint).

To stay on the assembly branch of the previous solution (the neutral position at first), a cluster's
independent joints move there from their previous values in continuation steps of at most
CONTINUATION_STEP, each closed by Newton from the last. A start on a singular pose (e.g. all links of
a four-bar aligned at q = 0) can stall Newton, so a failed solve is retried from the previous and the
neutral positions (always) and from seeded random restarts until a time budget is spent (none begins
after it, and the continuation takes its remaining distance in one step); then the loop is reported as
unreachable. A solve is bounded (MAX_ITERATIONS) and stops early once it stalls (a least-squares
minimum with |phi| > 0: the pose is out of reach from there), so an unreachable pose costs
milliseconds. The budget never cuts a Newton solve short, so whether a pose near the previous one is
reached does not depend on the machine's load.
"""

import time

import numpy as np

from .clusters import constraint_jacobian
from .errors import ModelError, quote
from .joints import QUATERNION_AT, random_position, retract
from .kinematics import update_transforms

TOLERANCE = 1e-12              # max |phi| of a solved cluster, m or rad
MAX_ITERATIONS = 50            # Newton iterations per start
CONTINUATION_STEP = 0.1        # largest change of an independent coordinate per Newton solve, rad or m
MAX_CONTINUATION_STEPS = 100   # farther jumps (over 10 rad or m) start from the neutral position instead
RESTARTS = 8                   # extra starts at most: dependent angles uniform in [-pi, pi], random quaternions
SLOW_RATIO, SLOW_STEPS = 0.9, 3    # a start crawling this slowly is abandoned (see _newton)
# Default time budget of one completion, checked between Newton solves (a 0.6 rad jump of the delta
# robot takes ~20 ms on the NumPy path).
BUDGET_MS = 200.0
MAX_BUDGET_MS = 1e4            # budget_ms accepted up to 10 s


def complete_positions(model, data, q_independent, budget_ms=BUDGET_MS):
    """Spanning q (nq) whose independent joints take q_independent and whose loops are closed. Starts
    from data.q_last, which the caller updates once the whole call has succeeded."""
    deadline = time.perf_counter() + 1e-3 * budget_ms
    previous = model.q_neutral if data.q_last is None else data.q_last
    q = previous.copy()
    q[model.independent_q] = q_independent            # a split joint's free spin keeps its value
    model.couplings.complete(q)
    if model.loop_bodies:
        for cluster in model.cluster_list:
            if not cluster.linear:
                _solve_cluster(model, data, cluster, q, previous, deadline, budget_ms)
    return q


def _solve_cluster(model, data, cluster, q, previous, deadline, budget_ms):
    """Close the loops of cluster in q, whose independent joints hold their targets and whose dependent
    joints start from previous (by continuation, then directly) and from the neutral position, whatever
    the budget; then from seeded random restarts while the budget lasts."""
    dependent = [b for b in cluster.bodies if model.joint_role[b] != 'independent']
    target = q.copy()
    residual = _continuation(model, data, cluster, q, previous, target, dependent, deadline)
    solves = 1
    rng = np.random.default_rng(cluster.index)
    for restart in range(RESTARTS + 2):
        if residual <= TOLERANCE or (restart >= 2 and time.perf_counter() > deadline):
            break
        q[:] = target             # the independent joints back at their targets
        for b in dependent:       # straight from the previous pose, from the neutral one, then random
            start = previous if restart == 0 else model.q_neutral if restart == 1 else None
            q[_positions(model, b)] = random_position(model.joint_type[b], rng, np.pi) if start is None else \
                start[_positions(model, b)]
        residual = _newton(model, data, cluster, q, dependent)
        solves += 1
    if residual > TOLERANCE:
        raise ModelError(f'could not close the constraints {quote([c.name for c in cluster.constraints])} of '
                         f'cluster {quote(cluster.name)}: residual {residual:.3g} after {solves} Newton solves '
                         f'(budget {budget_ms:g} ms); the independent positions may be out of the '
                         "mechanism's reach")


def _continuation(model, data, cluster, q, previous, target, dependent, deadline):
    """Move the independent joints from previous to target in equal steps of at most CONTINUATION_STEP
    (quaternions by normalized interpolation), closing the loops after each; once past the deadline, the
    rest in one step. Returns the max |phi| of the last solve (above TOLERANCE where one fails; inf for a
    jump of more than MAX_CONTINUATION_STEPS steps, which is no continuation of the previous pose)."""
    independent = [(b, _positions(model, b), model.joint_type[b]) for b in cluster.bodies if b not in dependent]
    jump = max([_distance(kind, previous[s], target[s]) for _, s, kind in independent], default=0.0)
    steps = max(1, int(np.ceil(jump / CONTINUATION_STEP)))
    if steps > MAX_CONTINUATION_STEPS:
        return np.inf
    for b in dependent:
        q[_positions(model, b)] = previous[_positions(model, b)]
    for t in np.arange(1, steps + 1) / steps:
        if time.perf_counter() > deadline:
            t = 1.0
        for _, s, kind in independent:
            q[s] = _interpolate(kind, previous[s], target[s], t)
        residual = _newton(model, data, cluster, q, dependent, patient=True)
        if residual > TOLERANCE or t == 1.0:
            break
    return residual


def _distance(kind, a, b):
    """Largest change of a coordinate from position a to b (a quaternion's by its rotation angle)."""
    if kind not in QUATERNION_AT:
        return np.max(np.abs(b - a))
    at = QUATERNION_AT[kind]
    turn = 2.0 * np.arccos(min(1.0, abs(a[at:at + 4] @ b[at:at + 4])))
    return max(turn, np.max(np.abs(b[:at] - a[:at]), initial=0.0))


def _interpolate(kind, a, b, t):
    """The position a fraction t of the way from a to b."""
    x = (1.0 - t) * a + t * b
    if kind in QUATERNION_AT:
        at = QUATERNION_AT[kind]
        side = 1.0 if a[at:at + 4] @ b[at:at + 4] >= 0.0 else -1.0      # the nearer of b and -b
        turned = (1.0 - t) * a[at:at + 4] + t * side * b[at:at + 4]
        x[at:at + 4] = turned / np.linalg.norm(turned)
    return x


def _positions(model, body):
    return slice(model.idx_q[body], model.idx_q[body] + model.nq_body[body])


def _newton(model, data, cluster, q, dependent, patient=False):
    """Damped Newton on the dependent joints (full steps near the solution, halved while a step does
    not reduce |phi|); returns the final max |phi|. A start is abandoned once it stalls: no decrease
    down to a 1/1000 step, or (unless patient: a continuation step, which starts next to a closed pose
    and may need a few damped steps) SLOW_STEPS steps in a row that cut |phi| by less than SLOW_RATIO
    (Newton converges quadratically near a closed loop; crawling means a least-squares minimum with
    phi != 0, i.e. out of reach from here)."""
    phi = _residual(model, data, cluster, q)
    slow = 0
    for _ in range(MAX_ITERATIONS):
        if np.max(np.abs(phi)) <= TOLERANCE or (slow == SLOW_STEPS and not patient):
            break
        K, _ = constraint_jacobian(cluster, data.Xup, model.S)
        step = np.zeros(cluster.n)                     # over the cluster's columns, zero on independent ones
        step[cluster.dependent] = np.linalg.lstsq(K[cluster.active_rows][:, cluster.dependent], phi, rcond=None)[0]
        start, scale = [q[_positions(model, b)].copy() for b in dependent], 1.0
        while True:
            for b, q_b in zip(dependent, start):
                c = cluster.col[b]
                q[_positions(model, b)] = retract(model.joint_type[b], model.axis[b], q_b,
                                                  -scale * step[c:c + model.nv_body[b]])
            trial = _residual(model, data, cluster, q)
            if np.linalg.norm(trial) < np.linalg.norm(phi):
                break
            if scale < 1e-3:
                for b, q_b in zip(dependent, start):
                    q[_positions(model, b)] = q_b
                return np.max(np.abs(phi))
            scale *= 0.5
        slow = slow + 1 if np.linalg.norm(trial) > SLOW_RATIO * np.linalg.norm(phi) else 0
        phi = trial
    return np.max(np.abs(phi))


def _residual(model, data, cluster, q):
    update_transforms(model, data, q, cluster.bodies)
    return np.concatenate([c.residual(data.Xup, lambda b: q[model.idx_q[b]])
                           for c in cluster.constraints])[cluster.active_rows]
