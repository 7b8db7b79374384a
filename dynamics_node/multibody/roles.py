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
  ``model.warnings``. So is an idle spin: a passive coordinate of a loop cluster whose motion turns
  one rigid set of bodies about a line while every other body with inertia stays still (a rod
  between two ball joints about the line through their centres, the closure body between two
  coaxial joints). Such a motion changes nothing of the mechanism but the set's own orientation
  about that line; no motor and no contact should have to hold it, so its loops' constraint forces
  do, as the universal joint of a real rod end would: its force is carried, not demanded of the
  actuators (projected inverse dynamics with contacts), and it stays still.
"""

import numpy as np

from ..spatial import inverse_transform

# Relative tolerance of the idle-spin test: the twists of the moving bodies agree, and their pitch
# (the translation along the axis per turn) vanishes, to this fraction of their size.
IDLE_TOLERANCE = 1e-6


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


def idle_spins(model, data, candidates):
    """The candidate independent coordinates (passive ones of loop clusters) that are idle spins
    (module docstring), from the body velocities of unit motions at the positions of the last
    forward pass's transforms (data, the reference configuration): every body with inertia either
    does not move or moves with the same twist, a pure rotation (world coordinates, motion
    [angular; linear])."""
    from ..algorithms.frames import link_transforms
    from ..algorithms.kinematics import forward_pass
    idle = []
    for j in candidates:
        unit = np.zeros(model.ny)
        unit[j] = 1.0
        forward_pass(model, data, model.reference_positions, unit)
        X_root = link_transforms(model, data)
        twists = [inverse_transform(X_root[b]) @ data.v[b] for b in range(1, model.nb)
                  if np.any(model.inertia[b])]
        size = max(np.max(np.abs(twists), initial=0.0), 1e-300)
        moving = [t for t in twists if np.max(np.abs(t)) > IDLE_TOLERANCE * size]
        first = moving[0] if moving else None
        if (first is not None
                and all(np.max(np.abs(t - first)) <= IDLE_TOLERANCE * size for t in moving)
                and np.linalg.norm(first[:3]) > IDLE_TOLERANCE * size
                and abs(first[:3] @ first[3:]) <= IDLE_TOLERANCE * size ** 2):
            idle.append(j)
    return idle


def held_coordinates(model, clusters, spins=()):
    """(independent coordinates held still, spanning velocity entries locked with them): y_j is
    held where every body it moves (G's pattern, in-cluster descendants included) is inertia-free,
    and where it is one of spins (idle_spins); a spanning entry is locked where only held
    coordinates move it."""
    free = inertia_free_bodies(model.parent, model.inertia)
    held, locked = list(spins), []
    for cluster, (y0, _), (v0, _) in zip(clusters, model.y_range, model.v_range):
        moved_by = {}      # body -> coordinates moving it (through it or its in-cluster ancestors)
        for b in cluster.bodies:
            own = np.any(cluster.moves[cluster.col[b]:cluster.col[b] + model.nv_body[b]], axis=0)
            p = model.parent[b]
            moved_by[b] = own | moved_by[p] if p in moved_by else own
        for j in range(cluster.m):
            if y0 + j not in held and all(free[b] for b in cluster.bodies if moved_by[b][j]):
                held.append(y0 + j)
        mine = set(held)
        for c in range(cluster.n):
            moving = np.flatnonzero(cluster.moves[c])
            if moving.size and all(y0 + j in mine for j in moving):
                locked.append(v0 + c)
    return np.array(sorted(held), dtype=int), np.array(locked, dtype=int)
