"""Closed configurations of a loop cluster: Gauss-Newton projection onto phi(q) = 0.

A loop cluster's structure (the rank of its constraints, which joints they determine, the pattern
of its explicit Jacobian G) is measured where the mechanism is assembled, never at open
configurations: there the two coaxial joints of a closure body look independent, at every closed
state they are not. Chignoli, Slotine et al. 2024 (Sec. III-C) chooses the split by rank; the rank
that counts is the one on the constraint manifold. ``project`` moves every coordinate of a cluster
by minimum-norm Gauss-Newton steps, dq = -K^+ phi, from a start to a closed configuration near it;
the load takes its rank samples from random starts and the reference pose from the zero position
(clusters.py). Where no start closes, ``settle`` minimizes |phi|^2 from the best of them.
"""

import numpy as np

from ..joint_types import NV
from .joints import joint_transform, random_position, retract

TOLERANCE = 1e-11              # max |phi| of a closed configuration, m or rad
START_SPANS = (0.3, 1.0, np.pi)  # rad: the starts' joint angles, uniform in [-span, span] by turns
MAX_STEPS = 60                 # Gauss-Newton steps per start
STALL_STEPS = 6                # steps in a row that cut |phi| by less than STALL_RATIO end a start
STALL_RATIO = 0.9
MAX_STEP = 0.5                 # largest change of a coordinate per step, rad or m (a trust region)
SETTLE_STEPS = 400             # Levenberg-Marquardt steps of settle


class ClusterPose:
    """Positions q[b] and transforms Xup[b] of the bodies b of one cluster of a spanning tree."""

    def __init__(self, cluster, tree, q):
        self.cluster, self.tree = cluster, tree
        self.q = {b: np.array(q[b], dtype=float) for b in cluster.bodies}
        self.Xup = {}
        self._update()

    def residual(self, rows):
        """phi at the active rows of the cluster's constraints."""
        phi = np.concatenate([c.residual(self.Xup, self.position)
                              for c in self.cluster.constraints])
        return phi[rows]

    def position(self, body):
        """The (first) coordinate of a body's joint."""
        return self.q[body][0]

    def move(self, dv, scale):
        """q <- q (+) (-scale dv) for the cluster's spanning velocity step dv (joints.retract)."""
        for b in self.cluster.bodies:
            joint = self.tree.bodies[b].joint
            c = self.cluster.col[b]
            self.q[b] = retract(joint.type, joint.axis, self.q[b],
                                -scale * dv[c:c + NV[joint.type]])
        self._update()

    def restore(self, q):
        self.q = dict(q)
        self._update()

    def _update(self):
        for b in self.cluster.bodies:
            joint = self.tree.bodies[b].joint
            self.Xup[b] = (joint_transform(joint.type, joint.axis, self.q[b])
                           @ self.tree.bodies[b].X_tree)


def project(pose, jacobian, rows):
    """Move pose to a closed configuration by damped minimum-norm Gauss-Newton steps over all of
    the cluster's coordinates (jacobian(pose): K over them); returns the final max |phi| (at most
    TOLERANCE where it closed; inf where an implicit constraint is not finite at the start)."""
    phi = pose.residual(rows)
    if not np.all(np.isfinite(phi)):
        return np.inf
    slow = 0
    for _ in range(MAX_STEPS):
        worst = np.max(np.abs(phi), initial=0.0)
        if worst <= TOLERANCE or slow == STALL_STEPS:
            return worst
        K = jacobian(pose)[rows]
        if not np.all(np.isfinite(K)):
            return worst
        dv = np.linalg.lstsq(K, phi, rcond=None)[0]
        start, scale = dict(pose.q), min(1.0, MAX_STEP / max(np.max(np.abs(dv)), 1e-300))
        while True:
            pose.move(dv, scale)
            trial = pose.residual(rows)
            if np.linalg.norm(trial) < np.linalg.norm(phi):
                break
            pose.restore(start)
            if scale < 1e-4:
                return worst
            scale *= 0.5
        slow = slow + 1 if np.linalg.norm(trial) > STALL_RATIO * np.linalg.norm(phi) else 0
        phi = trial
    return np.max(np.abs(phi), initial=0.0)


def random_start(cluster, tree, rng, span=np.pi):
    """Random positions of a cluster's joints (joints.random_position: angles within span,
    displacements within 0.3 m, uniform quaternions)."""
    return {b: random_position(tree.bodies[b].joint.type, rng, span) for b in cluster.bodies}


def settle(pose, jacobian, rows):
    """Move pose to a minimum of |phi|^2 by Levenberg-Marquardt steps (Marquardt's scaling by the
    diagonal of K^T K), where the projection stalls: a closed configuration if one lies downhill,
    else the smallest residual the loops can reach together, which shows whether they can close
    at all. Returns the final max |phi| (inf where it is not finite at the start)."""
    phi = pose.residual(rows)
    if not np.all(np.isfinite(phi)):
        return np.inf
    damping = 1e-3
    for _ in range(SETTLE_STEPS):
        if np.max(np.abs(phi), initial=0.0) <= TOLERANCE or damping > 1e12:
            break
        K = jacobian(pose)[rows]
        if not np.all(np.isfinite(K)):
            break
        normal = K.T @ K
        dv = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), K.T @ phi)
        start = dict(pose.q)
        pose.move(dv, 1.0)
        trial = pose.residual(rows)
        if trial @ trial < phi @ phi:
            phi, damping = trial, max(damping / 3.0, 1e-12)
        else:
            pose.restore(start)
            damping *= 4.0
    return np.max(np.abs(phi), initial=0.0)
