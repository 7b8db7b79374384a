"""What the independent coordinates are to a robot's drivers and to forward dynamics.

- Actuated or passive. A file names the coordinates its drivers move: URDF+ ``independent="true"``,
  an Extended URDF's ``name_mot``, the leader a ``<mimic>`` names. In a constrained cluster that
  names some, the other independent coordinates are passive: no driver publishes them (the spin of
  a closure body between two coaxial joints, a rod's spin about its own line). So is the free
  direction of a split joint everywhere. A passive coordinate takes its reference position and zero
  velocity in the node.
- Held. A coordinate whose motion moves only bodies without inertia (links and everything below
  them), and that no constraint determines (the joints of a massless hand), has no dynamics:
  forward dynamics holds it still (zero acceleration, its force ignored), and the load names it in
  ``model.warnings``.
"""

import numpy as np


def passive_joints(tree, clusters, roles, leaders):
    """Names of the passive independent joints (module docstring), per cluster in body order."""
    passive = []
    for cluster in clusters:
        if not cluster.constraints:
            continue
        joints = [tree.bodies[b].joint for b in cluster.bodies]
        named = any(j.independent is True or j.name in leaders
                    for j, b in zip(joints, cluster.bodies)
                    if roles[b] == 'independent')
        for joint, b in zip(joints, cluster.bodies):
            if roles[b] == 'split' or (roles[b] == 'independent' and named
                                       and joint.independent is not True
                                       and joint.name not in leaders):
                passive.append(joint.name)
    return passive


def inertia_free_bodies(parent, inertia):
    """Per body: it and every body below it carry no inertia (all 36 entries exactly zero)."""
    free = np.array([not np.any(I) for I in inertia])
    for i in range(len(parent) - 1, 0, -1):          # children after parents: tips first
        if not free[i]:
            free[parent[i]] = False
    free[0] = False
    return free


def held_coordinates(model, clusters):
    """(independent coordinates held still, spanning velocity entries locked with them): y_j is
    held where every body it moves (G's pattern, in-cluster descendants included) is inertia-free;
    a spanning entry is locked where only held coordinates move it."""
    free = inertia_free_bodies(model.parent, model.inertia)
    held, locked = [], []
    for cluster, (y0, _), (v0, _) in zip(clusters, model.y_range, model.v_range):
        moved_by = {}      # body -> coordinates moving it (through it or its in-cluster ancestors)
        for b in cluster.bodies:
            own = np.any(cluster.moves[cluster.col[b]:cluster.col[b] + model.nv_body[b]], axis=0)
            p = model.parent[b]
            moved_by[b] = own | moved_by[p] if p in moved_by else own
        for j in range(cluster.m):
            if all(free[b] for b in cluster.bodies if moved_by[b][j]):
                held.append(y0 + j)
        mine = set(held)
        for c in range(cluster.n):
            moving = np.flatnonzero(cluster.moves[c])
            if moving.size and all(y0 + j in mine for j in moving):
                locked.append(v0 + c)
    return np.array(held, dtype=int), np.array(locked, dtype=int)
