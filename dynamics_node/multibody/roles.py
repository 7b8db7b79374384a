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
  ``model.warnings``. So is an idle spin: a passive coordinate of a loop cluster whose motion moves
  bodies with inertia but no joint: wherever two bodies that move differently meet (at a joint or a
  loop), the point stays where it is, so bodies only turn about lines through their joints (a rod
  between two ball joints about the line through their centres, also where it is cut in halves
  welded together; the closure body between two coaxial joints). Such a motion changes nothing of
  the mechanism's shape; no motor and no contact should have to hold it, so its loops'
  constraint forces do, as the universal joint of a real rod end would: its force is carried, not
  demanded of the actuators (projected inverse dynamics with contacts), and it stays still.
"""

import numpy as np

from .constraints import LoopConstraint, translation_of

# Relative tolerance of the idle-spin test: joint points move by less than this fraction of the
# largest velocity of the motion.
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


def idle_spin(model, X_root, twists):
    """Whether a motion of the bodies is an idle spin (module docstring): some body with inertia
    moves, yet no joint does: where two bodies that move differently meet (a body's joint frame on
    it and its parent, a loop's frames), the point stays still. X_root: ^iX_root of every body;
    twists: their velocities in root coordinates (motion [angular; linear], the linear part at the
    root's origin)."""
    size = max(np.max(np.abs(twists[1:]), initial=0.0), 1e-300)
    if not any(np.max(np.abs(twists[b])) > IDLE_TOLERANCE * size
               for b in range(1, model.nb) if np.any(model.inertia[b])):
        return False
    meetings = [(b, model.parent[b], translation_of(X_root[b])) for b in range(1, model.nb)]
    for cluster in model.cluster_list:
        for loop in cluster.constraints:
            if isinstance(loop, LoopConstraint):
                ends = [(path[-1] if path else loop.nca, X_frame)
                        for path, X_frame in ((loop.pred_path, loop.X_P_pred),
                                              (loop.succ_path, loop.X_S_succ))]
                meetings += [(ends[0][0], ends[1][0], translation_of(X_frame @ X_root[body]))
                             for body, X_frame in ends]
    for a, b, point in meetings:
        if np.max(np.abs(twists[a] - twists[b])) <= IDLE_TOLERANCE * size:
            continue                      # moving as one
        for body in (a, b):
            omega, velocity = twists[body][:3], twists[body][3:]
            if np.max(np.abs(velocity + np.cross(omega, point))) > IDLE_TOLERANCE * size:
                return False
    return True


def held_coordinates(model, clusters, spins=()):
    """(independent coordinates held still, spanning velocity entries locked with them): y_j is
    held where every body it moves (G's pattern, in-cluster descendants included) is inertia-free,
    and where it is one of spins (idle_spin); a spanning entry is locked where only held
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
