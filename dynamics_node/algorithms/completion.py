"""State completion: spanning positions from independent ones on the reference assembly branch
(Chignoli et al. 2023, Sec. 1.2).

Coupling-only clusters are linear and solved explicitly (couplings.py). Each loop cluster is closed
by predictor-corrector continuation: its independent coordinates move along the straight line from
a start (a closed configuration on the branch) to their targets; each step predicts the dependent
joints to first order (q_d + G_d dy) and corrects them by Newton's method on phi(q) = 0. No step
moves a coordinate by more than CONTINUATION_STEP (as predicted), and every configuration reached
must be regular (a well-conditioned K_d and an amplification max_r sum_j |G_rj| within
Model.amplification_limit), so the continuation never crosses a singularity: it stays on the
assembly branch of its start.

Completion is a function of its input and the reference branch: the continuation from the reference
configuration (Model.reference_positions) along the straight line to the input. A completion within
one continuation step of the last one of the workspace (a stream of joint states) tracks the
mechanism from it instead, in that one step: wherever the branch is a single-valued function of the
independent coordinates (mechanisms whose assembly modes are separated by singularities) that gives
the same positions, faster. Mechanisms that can change assembly mode without crossing a singularity
(cuspidal ones, e.g. some five-bars) follow their motion when tracked around a cusp in small steps,
as the robot itself does; any larger jump starts from the reference again. Where the continuation
from the reference fails (its path meets a singularity, or Newton's method does not close a step
even when halved), the positions are off the reference branch (out of the mechanism's reach, or
reachable only through a singularity) and a ModelError names the cluster and where the continuation
stopped.

The spin of a split joint (a rod's ball joint: the rod turns about its own line), which no input
sets, is turned to the rotation nearest the reference configuration's (canonical_spins), so it too
depends only on the input. A library call is bounded by steps alone (MAX_CONTINUATION_STEPS,
HALVINGS, MAX_ITERATIONS), so its outcome never depends on the machine's load; a caller that must
answer in time (the node's stream) gives budget_ms, and the continuation from the reference then
stops once that many milliseconds are spent (checked between its steps).
"""

import time

import numpy as np

from ..errors import ModelError, quote, SingularConfigurationError
from ..multibody.clusters import SINGULARITY_THRESHOLD
from ..multibody.constraints import rows_at, explicit_jacobian
from ..joint_types import TYPES
from ..multibody.joints import retract
from ..spatial import matrix_quaternion, quaternion_matrix, rotation_about, rotation_log
from .kinematics import update_transforms

TOLERANCE = 1e-12              # max |phi| of a solved cluster, m or rad
MAX_ITERATIONS = 50            # Newton iterations per continuation step
CONTINUATION_STEP = 0.1        # largest predicted change of a coordinate per step, rad or m
MAX_CONTINUATION_STEPS = 400   # steps per continuation (40 rad of the fastest joint)
CHUNK_STEPS = 25               # steps per call of the compiled continuation, between which the
#                                budget is checked
HALVINGS = 6                   # a step that does not close, or leaves the regular region, is
#                                halved this often
# Newton's method converges quadratically from a predicted step: SLOW_STEPS iterations in a row
# that cut |phi| by less than SLOW_RATIO end it, and the step is halved.
SLOW_RATIO, SLOW_STEPS = 0.5, 3
MAX_BUDGET_MS = 1e4            # budget_ms accepted up to 10 s


def complete_positions(model, data, q_independent, budget_ms=None):
    """Spanning q (nq) whose independent joints take q_independent and whose loops are closed on
    the reference branch (module docstring). Tracks from data.q_last, which the caller updates once
    the whole call has succeeded. A continuation whose budget runs out leaves what it reached in
    data.pending: the next call on positions within CONTINUATION_STEP of those finishes it first
    (within its own budget) and tracks from its result, so that a stream of nearby positions gets
    there over a few calls."""
    deadline = None if budget_ms is None else time.perf_counter() + 1e-3 * budget_ms
    pending, data.pending = data.pending, None
    if pending is not None and (np.max(np.abs(q_independent - pending[0]), initial=0.0)
                                <= CONTINUATION_STEP):
        data.q_last = _complete(model, data, pending[0], deadline, pending[1:])
    return _complete(model, data, q_independent, deadline)


def _complete(model, data, q_independent, deadline, resume=None):
    """complete_positions, or with resume = (positions, cluster, its partial configuration) of an
    interrupted completion of q_independent, the rest of it."""
    reference = model.reference_positions
    if resume is None:
        q, first = (reference if data.q_last is None else data.q_last).copy(), 0
        q[model.independent_q] = q_independent
        model.couplings.complete(q)
    else:
        q, first, partial = resume[0].copy(), resume[1], resume[2]
    for cluster in model.cluster_list[first:]:
        if cluster.linear:
            continue
        if resume is not None and cluster.index == first:
            failure = continuation(model, data, cluster, q, partial, deadline=deadline)
        else:
            tracked = data.q_last is not None and not continuation(
                model, data, cluster, q, data.q_last, steps=1)
            failure = None if tracked else continuation(model, data, cluster, q, reference,
                                                        deadline=deadline)
        if failure:
            if failure[0] == 'budget':
                data.pending = (np.array(q_independent, dtype=float), q.copy(), cluster.index,
                                data.partial)
            raise failure_error(model, cluster, *failure)
        canonical_spins(model, data, cluster, q)
    return q


def failure_error(model, cluster, reason, t, value):
    """The error of a completion whose continuation from the reference failed (continuation's
    reasons): SingularConfigurationError where it met a singular configuration, else ModelError."""
    why = {'start': f'the reference configuration does not close (residual {value:.3g})',
           'steps': f'still {1.0 - t:.3g} of the way to go after {value:g} steps',
           'singular': f'a singular configuration {t:.3g} of the way (amplification {value:.3g} '
                       f'exceeds {model.amplification_bound[cluster.index]:.3g}: '
                       'amplification_limit)',
           'residual': f"Newton's method leaves a residual of {value:.3g} {t:.3g} of the way",
           'budget': f'the budget ran out {t:.3g} of the way'}[reason]
    then = {'singular': 'the positions lie beyond a singularity from the reference '
                        'configuration: raise amplification_limit, or give reference_positions on '
                        'their side',
            'budget': 'the next call on nearby positions goes on from there'}.get(
                reason, "the independent positions may be out of the mechanism's reach")
    message = (f'cannot close the constraints {quote([c.name for c in cluster.constraints])} of '
               f'cluster {quote(cluster.name)} on the reference assembly branch: {why}; {then}')
    return SingularConfigurationError(message) if reason == 'singular' else ModelError(message)


def continuation(model, data, cluster, q, start, steps=MAX_CONTINUATION_STEPS, deadline=None):
    """Close cluster in q, whose independent joints hold their targets, by continuation from the
    closed configuration start in at most steps steps (module docstring); its dependent joints end
    in q. Returns None, or why it failed as (reason, fraction of the way, residual, amplification
    or steps) with q as it was and where it stopped in data.partial."""
    entry = q.copy()
    failure = _continue(model, data, cluster, q, start, steps, deadline)
    if failure:
        data.partial = q.copy()     # where it stopped: closed and regular where the budget ran out
        q[:] = entry
    return failure


def _continue(model, data, cluster, q, start, limit, deadline):
    independent = [b for b in cluster.bodies if model.joint_role[b] == 'independent']
    moving = [b for b in cluster.bodies if model.joint_role[b] != 'independent']
    target = {b: q[_positions(model, b)].copy() for b in independent}
    for b in cluster.bodies:
        q[_positions(model, b)] = start[_positions(model, b)]
    origin = {b: q[_positions(model, b)].copy() for b in independent}
    dy = np.zeros(cluster.m)  # independent displacement, velocity coordinates, per unit of the way
    for b in independent:
        c = list(cluster.independent).index(cluster.col[b])
        dy[c:c + model.nv_body[b]] = _displacement(model.joint_type[b], origin[b], target[b])
    bound = model.amplification_bound[cluster.index]
    residual = _newton(model, data, cluster, q, moving)
    G, amplification = explicit(model, data, cluster)
    if residual > TOLERANCE or G is None or amplification > bound:
        return 'start', 0.0, residual
    t, steps = 0.0, 0
    while t < 1.0:
        if steps == limit:
            return 'steps', t, steps
        if deadline is not None and steps > 0 and time.perf_counter() > deadline:
            return 'budget', t, 0.0
        predicted = G @ dy
        dt = min(1.0 - t, CONTINUATION_STEP / max(np.max(np.abs(dy), initial=0.0),
                                                  np.max(np.abs(predicted)), 1e-300))
        saved = q.copy()
        for _ in range(HALVINGS + 1):
            for b in independent:
                q[_positions(model, b)] = _interpolate(model.joint_type[b], origin[b], target[b],
                                                       t + dt)
            for b in moving:
                c = cluster.col[b]
                q[_positions(model, b)] = retract(model.joint_type[b], model.axis[b],
                                                  saved[_positions(model, b)],
                                                  dt * predicted[c:c + model.nv_body[b]])
            residual = _newton(model, data, cluster, q, moving)
            if residual <= TOLERANCE:
                G_next, amplification = explicit(model, data, cluster)
                if G_next is not None and amplification <= bound:
                    break
            q[:] = saved
            dt *= 0.5
        else:
            return (('singular', t, amplification) if residual <= TOLERANCE
                    else ('residual', t, residual))
        G, t, steps = G_next, t + dt, steps + 1
    return None


def explicit(model, data, cluster):
    """(G over the cluster's columns, amplification) at the cluster's transforms in data.Xup;
    (None, inf) where K_d is singular (kinematics.explicit_constraint's threshold) or K is not
    finite (an implicit constraint outside its domain)."""
    K = rows_at(model, data, cluster)[0][cluster.active_rows]
    if not np.all(np.isfinite(K)):
        return None, np.inf
    diagonal = np.abs(np.diag(np.linalg.qr(K[:, cluster.dependent], mode='r')))
    if diagonal.size and diagonal.min() <= SINGULARITY_THRESHOLD * max(diagonal.max(), 1.0):
        return None, np.inf
    G = np.zeros((cluster.n, cluster.m))
    G[cluster.independent] = np.eye(cluster.m)
    G[cluster.dependent] = explicit_jacobian(K, cluster.dependent, cluster.independent)
    return G, max(1.0, float(np.abs(G).sum(axis=1).max()))


def canonical_spins(model, data, cluster, q):
    """Turn each split joint of cluster whose free direction spins it alone (split_spin_column) to
    the rotation nearest the reference configuration's: R exp(theta d^), d the unit direction of
    its column of G at q, theta maximizing trace(R_ref^T R exp(theta d^))."""
    for b in cluster.bodies:
        a = split_spin_column(model, cluster, b)
        if a is None:
            continue
        s = _positions(model, b)
        update_transforms(model, data, q, cluster.bodies)
        G = explicit(model, data, cluster)[0]
        c = cluster.col[b]
        d = G[c:c + 3, a] / np.linalg.norm(G[c:c + 3, a])
        M = quaternion_matrix(*model.reference_positions[s]).T @ quaternion_matrix(*q[s])
        d_hat = np.array([[0.0, -d[2], d[1]], [d[2], 0.0, -d[0]], [-d[1], d[0], 0.0]])
        theta = np.arctan2(np.trace(M @ d_hat), np.trace(M) - d @ M @ d)
        turned = matrix_quaternion(quaternion_matrix(*q[s]) @ rotation_about(d, theta))
        q[s] = turned if turned @ q[s] >= 0.0 else -turned


def split_spin_column(model, cluster, body):
    """The local independent column of the free direction of a split joint that moves that joint
    alone (a rod's spin about its own line), or None."""
    if model.joint_role[body] != 'split':
        return None
    c0, c1 = cluster.col[body], cluster.col[body] + model.nv_body[body]
    free = [a for a, column in enumerate(cluster.independent) if c0 <= column < c1]
    if len(free) != 1 or cluster.moves[:c0, free[0]].any() or cluster.moves[c1:, free[0]].any():
        return None
    return free[0]


def _displacement(kind, a, b):
    """The change from position a to b in velocity coordinates (a quaternion's as the rotation
    vector in the child frame; a planar joint's as x y theta, which only the step size uses)."""
    at = TYPES[kind].quaternion_at
    if at >= 0:
        return rotation_log(quaternion_matrix(*a[at:at + 4]).T @ quaternion_matrix(*b[at:at + 4]))
    return b - a


def _interpolate(kind, a, b, t):
    """The position a fraction t of the way from a to b."""
    x = (1.0 - t) * a + t * b
    at = TYPES[kind].quaternion_at
    if at >= 0:
        side = 1.0 if a[at:at + 4] @ b[at:at + 4] >= 0.0 else -1.0      # the nearer of b and -b
        turned = (1.0 - t) * a[at:at + 4] + t * side * b[at:at + 4]
        x[at:at + 4] = turned / np.linalg.norm(turned)
    return x


def _positions(model, body):
    return slice(model.idx_q[body], model.idx_q[body] + model.nq_body[body])


def _newton(model, data, cluster, q, moving):
    """Damped Newton on the dependent joints (full steps near the solution, halved while a step
    does not reduce |phi|; SLOW_STEPS slow steps end it); returns the final max |phi| (inf
    where phi is not finite: an implicit constraint outside its domain)."""
    phi = _residual(model, data, cluster, q)
    if not np.all(np.isfinite(phi)):
        return np.inf
    slow = 0
    for _ in range(MAX_ITERATIONS):
        if np.max(np.abs(phi)) <= TOLERANCE or slow == SLOW_STEPS:
            break
        K, _ = rows_at(model, data, cluster)
        if not np.all(np.isfinite(K)):
            break
        step = np.zeros(cluster.n)           # over the cluster's columns, zero on independent ones
        step[cluster.dependent] = np.linalg.lstsq(K[cluster.active_rows][:, cluster.dependent],
                                                  phi, rcond=None)[0]
        start, scale = [q[_positions(model, b)].copy() for b in moving], 1.0
        while True:
            for b, q_b in zip(moving, start):
                c = cluster.col[b]
                q[_positions(model, b)] = retract(model.joint_type[b], model.axis[b], q_b,
                                                  -scale * step[c:c + model.nv_body[b]])
            trial = _residual(model, data, cluster, q)
            if np.linalg.norm(trial) < np.linalg.norm(phi):
                break
            if scale < 1e-3:
                for b, q_b in zip(moving, start):
                    q[_positions(model, b)] = q_b
                _residual(model, data, cluster, q)
                return np.max(np.abs(phi))
            scale *= 0.5
        slow = slow + 1 if np.linalg.norm(trial) > SLOW_RATIO * np.linalg.norm(phi) else 0
        phi = trial
    return np.max(np.abs(phi))


def _residual(model, data, cluster, q):
    update_transforms(model, data, q, cluster.bodies)
    return np.concatenate([c.residual(data.Xup, lambda b: q[model.idx_q[b]])
                           for c in cluster.constraints])[cluster.active_rows]
