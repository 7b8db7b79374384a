"""The reference (assembly) configuration of a loop cluster: near the zero position, where the
robot's designer assembled it, and well away from a singularity, so that Model.amplification_limit,
relative to it, means what it says; and the amplification of its neighbourhood (probes that move
each independent coordinate alone, the loops closed again by continuation)."""

import numpy as np

from ..errors import ModelError
from ..joint_types import TYPES
from .assembly import ClusterPose, project, START_SPANS, TOLERANCE as CLOSURE_TOLERANCE
from .constraints import amplification, cluster_jacobian, explicit_jacobian
from .joints import neutral_position, retract

# Smallest min |R_ii| / max |R_ii| of the QR of K_d at a reference configuration (well away from a
# singularity, so that the amplification there is a fair yardstick).
REFERENCE_CONDITIONING = 1e-6
# Turns (rad) of the zero position from which the reference configuration is sought where the zero
# position is singular (a four-bar with all bars aligned).
REFERENCE_TURNS = (0.1, 0.1, 0.3, 0.3)
REFERENCE_MARGIN = 2.0         # a closed zero position is the reference if its amplification is at
#                                most this multiple of the smallest found
REFERENCE_STARTS = 8           # random starts near a zero position that does not close
# A reference's neighbourhood: every independent coordinate moved alone by +-REFERENCE_PROBE rad
# (REFERENCE_PROBE_LENGTH m for a prismatic joint), the loops closed again; the neighbourhoods of
# at most REFERENCE_CANDIDATES closed configurations are measured (_most_regular).
REFERENCE_PROBE, REFERENCE_PROBE_LENGTH = 0.05, 0.005
REFERENCE_CANDIDATES = 4
PROBE_STEP, PROBE_STEPS = 0.1, 4   # a probe's continuation: the largest predicted joint motion
#                                    per step (rad or m), and its steps
PROBE_ITERATIONS = 12          # Newton steps that close the loops again at each
WALK_PROBES = 64               # probes walked away from a nearby singularity (_walk_away)


def reference_configuration(cluster, tree, jacobian, closed, describe):
    """(q, neighbourhood amplification) of a loop cluster's reference (assembly) configuration,
    body -> q: near the zero position, where the robot's designer assembled it, and well away
    from a singularity, so that Model.amplification_limit, relative to the reference, means what
    it says and the robot can move around it. The zero position where the loops close there and
    its amplification is within REFERENCE_MARGIN of the smallest found; else, of the closed
    configurations found whose amplification is (_most_regular), the nearest to the zero position
    whose neighbourhood (neighbourhood_amplification) stays within REFERENCE_MARGIN of its
    amplification. Found: the closed samples and the configurations that minimum-norm
    Gauss-Newton steps reach from the zero position and from it turned by REFERENCE_TURNS; where
    none of them has such a neighbourhood, also from REFERENCE_STARTS random starts near the zero
    position, and then the one of the smallest neighbourhood amplification, walked away from the
    singularity nearby where its neighbourhood still is not such (_walk_away). Seeded per cluster:
    a cluster's reference does not depend on the rest of the robot or scene."""
    zero = {b: neutral_position(tree.bodies[b].joint.type) for b in cluster.bodies}
    rng = np.random.default_rng(0)
    rows = cluster.active_rows

    def reached(starts):
        for start in starts:
            pose = ClusterPose(cluster, tree, start)
            if project(pose, jacobian, rows) <= CLOSURE_TOLERANCE:
                K = jacobian(pose)[rows]
                gain = (amplification(K, cluster.dependent, cluster.independent)
                        if regular(cluster, K) else np.inf)
                yield pose.q, gain

    def near_zero(turns):
        for turn in turns:
            start = {}
            for b, q_b in zero.items():
                joint = tree.bodies[b].joint
                start[b] = retract(joint.type, joint.axis, q_b,
                                   turn * rng.uniform(-1, 1, TYPES[joint.type].nv))
            yield start

    found = [(q, amplification(K, cluster.dependent, cluster.independent)
              if regular(cluster, K) else np.inf) for q, K in closed]
    zero_closes = np.max(np.abs(ClusterPose(cluster, tree, zero).residual(rows))) <= \
        CLOSURE_TOLERANCE
    found += reached([zero, *near_zero(REFERENCE_TURNS)])
    smallest = min(gain for _, gain in found)
    if smallest == np.inf:
        raise ModelError(f'{describe}: every closed configuration found at load is (nearly) '
                         'singular; its joint axes may be misaligned')
    if zero_closes and found[len(closed)][1] <= REFERENCE_MARGIN * smallest:
        q = found[len(closed)][0]
        return q, neighbourhood_amplification(cluster, tree, q)
    q, gain, around = _most_regular(cluster, tree, found, zero)
    if around > REFERENCE_MARGIN * gain:
        found += reached(near_zero(START_SPANS[i % 2] for i in range(REFERENCE_STARTS)))
        q, gain, around = _most_regular(cluster, tree, found, zero)
    if around > REFERENCE_MARGIN * gain:
        q, gain = _walk_away(cluster, tree, q, gain)
        around = neighbourhood_amplification(cluster, tree, q)
    return q, around


def _most_regular(cluster, tree, found, zero):
    """(q, amplification, neighbourhood amplification) of the configuration found (q, gain) that
    reference_configuration takes: of those whose amplification is within REFERENCE_MARGIN of the
    smallest, nearest to the zero position first, the first whose neighbourhood stays within
    REFERENCE_MARGIN of its own amplification, else (of the REFERENCE_CANDIDATES nearest) the one
    of the smallest neighbourhood amplification."""
    smallest = min(gain for _, gain in found)
    fair = sorted((x for x in found if x[1] <= REFERENCE_MARGIN * smallest),
                  key=lambda x: sum(np.sum((x[0][b] - zero[b]) ** 2) for b in cluster.bodies))
    best = (None, np.inf, np.inf)
    for q, gain in fair[:REFERENCE_CANDIDATES]:
        around = neighbourhood_amplification(cluster, tree, q, best[2])
        if best[0] is None or around < best[2]:
            best = (q, gain, around)
        if around <= REFERENCE_MARGIN * gain:
            break
    return best


def neighbourhood_amplification(cluster, tree, q, beyond=np.inf):
    """The largest amplification along the probes of q (_probes); inf where one meets a
    singularity or does not close, or where it exceeds beyond (no need to look further)."""
    largest = 1.0
    for _, gain in _probes(cluster, tree, q):
        largest = max(largest, gain)
        if largest >= beyond:
            return np.inf
    return largest


def _walk_away(cluster, tree, q, gain):
    """(q, amplification) reached from q, of amplification gain, by moving to the end of the first
    probe whose largest amplification is smaller, again and again, within WALK_PROBES probes in
    all: a descent of the amplification over the closed configurations, away from a nearby
    singularity."""
    probes = 0
    while probes < WALK_PROBES:
        for end, largest in _probes(cluster, tree, q):
            probes += 1
            if largest < gain:
                q, gain = end, largest
                break
            if probes == WALK_PROBES:
                break
        else:
            break                     # no probe lowers it: a local minimum
    return q, gain


def _probes(cluster, tree, q):
    """For each independent coordinate moved alone by +REFERENCE_PROBE and by -REFERENCE_PROBE
    (rad; REFERENCE_PROBE_LENGTH for a prismatic joint) from q: (the closed configuration reached,
    the largest amplification on the way), or (None, inf) where the way meets a singularity or
    does not close. The way: at most PROBE_STEPS continuation steps, each moving no joint by more
    than PROBE_STEP to first order, corrected by Newton's method on the dependent joints (ended
    where it does not halve the residual)."""
    rows, dependent, independent = cluster.active_rows, cluster.dependent, cluster.independent
    jacobian = cluster_jacobian(cluster, tree)
    pose = ClusterPose(cluster, tree, q)
    kinds = [TYPES[tree.bodies[b].joint.type].kind for b in cluster.bodies
             for _ in range(TYPES[tree.bodies[b].joint.type].nv)]
    for column in independent:
        probe = REFERENCE_PROBE_LENGTH if kinds[column] == 'translational' else REFERENCE_PROBE
        for sign in (1.0, -1.0):
            pose.restore(q)
            K, left, largest = jacobian(pose)[rows], probe, 1.0
            for _ in range(PROBE_STEPS):
                step = np.zeros(cluster.n)
                step[column], step[dependent] = 1.0, explicit_jacobian(K, dependent,
                                                                       [column])[:, 0]
                length = min(left, PROBE_STEP / np.max(np.abs(step)))
                pose.move(step, -sign * length)
                previous = np.inf
                for _ in range(PROBE_ITERATIONS):
                    phi = pose.residual(rows)
                    worst = np.max(np.abs(phi))
                    if worst <= CLOSURE_TOLERANCE or worst > 0.5 * previous:
                        break           # closed, or Newton's method does not converge
                    previous = worst
                    step = np.zeros(cluster.n)
                    step[dependent] = np.linalg.lstsq(jacobian(pose)[rows][:, dependent],
                                                      phi, rcond=None)[0]
                    pose.move(step, 1.0)
                K, left = jacobian(pose)[rows], left - length
                if np.max(np.abs(pose.residual(rows))) > CLOSURE_TOLERANCE \
                        or not regular(cluster, K):
                    largest = np.inf
                    break
                largest = max(largest, amplification(K, dependent, independent))
                if left <= 0.0:
                    break
            yield (None if largest == np.inf else dict(pose.q)), largest


def regular(cluster, K):
    """Whether the dependent columns of K (active rows, at a closed configuration) determine the
    dependent joints well enough for a reference configuration (REFERENCE_CONDITIONING)."""
    diagonal = np.abs(np.diag(np.linalg.qr(K[:, cluster.dependent], mode='r')))
    return not diagonal.size or diagonal.min() > REFERENCE_CONDITIONING * max(diagonal.max(), 1.0)
