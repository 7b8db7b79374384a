"""Clusters: strongly connected components of the constraint dependency digraph (Chignoli, Slotine
et al. 2024, Alg. 1-3).

Every loop or coupling adds two edges to the tree's parent->child edges: predecessor -> first body
of the NCA->successor path and successor -> first body of the NCA->predecessor path, so the bodies
whose motions must be solved together form one SCC. Each cluster then gets its constraint Jacobian
rows and its split into independent and dependent joints (Chignoli, Slotine et al. 2024,
Sec. III-C).
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError, quote
from ..joint_types import TYPES
from ..spatial import pose_transform
from .assembly import (ClusterPose, project, random_start, settle, START_SPANS,
                       TOLERANCE as CLOSURE_TOLERANCE)
from .constraints import (cluster_jacobian, CouplingConstraint, explicit_jacobian,
                          ImplicitConstraint, LoopConstraint)
from .elimination import elimination_plan, EliminationPlan
from .joints import neutral_position, retract
from .reference import reference_configuration

RANK_TOLERANCE = 1e-9          # relative singular-value threshold of the rank-revealing steps
RANK_SAMPLES = 4               # closed configurations at which structural ranks are measured
CLOSURE_STARTS = 16            # random starts from which they are sought
# Default of Model.amplification_limit: a configuration counts as singular where a loop cluster's
# amplification (the largest row sum of |G_k|: the speed of its fastest joint when every
# independent coordinate moves at unit speed) exceeds this multiple of its amplification at the
# reference configuration. Over the working range of the bundled and published linkages the
# amplification varies by a factor of 2 to 6; it grows as 1/sqrt(distance) towards a dead point,
# which a four-bar driven by its rocker reaches 1e-5 to 5e-4 rad away.
AMPLIFICATION_LIMIT = 20.0
# min |R_ii| / max |R_ii| of the QR of K_d below which a cluster's dependent joints are
# undetermined.
SINGULARITY_THRESHOLD = 1e-9


@dataclass
class Cluster:
    index: int
    name: str
    bodies: tuple              # tree body indices, parent before child
    parent: int                # parent cluster index, -1 for the ground
    output: dict               # body -> output body (its nearest ancestor outside the cluster)
    constraints: tuple
    col: dict                  # body -> first column in the cluster's spanning velocities
    n: int                     # spanning velocity dimension of the cluster joint
    independent: np.ndarray    # local columns of the independent coordinates (y_k)
    dependent: np.ndarray      # local columns of the dependent coordinates (loops: in elimination
    #                            order)
    active_rows: np.ndarray    # constraint rows that are not identically zero
    linear: bool               # only couplings: G constant, g = 0, positions solved directly
    elimination: EliminationPlan = None   # loop clusters: the sparse QR of K_d (active_rows,
    #                                       dependent)
    moves: np.ndarray = None   # moves[c, j]: independent coordinate j moves local column c (G's
    #                            pattern)
    closed: list = None        # loop clusters: closed configurations (body -> q) found at load
    reference: dict = None     # loop clusters: the reference (assembly) configuration, body -> q
    reference_neighbourhood: float = 1.0   # and neighbourhood_amplification there

    @property
    def m(self):
        return len(self.independent)

    def first_rows(self):
        """(first row in the stacked K, constraint) of each constraint, in order."""
        starts = np.cumsum([0] + [con.rows for con in self.constraints])
        return [(int(row), con) for row, con in zip(starts, self.constraints)]

    def loop_rows(self):
        """(first row in K, loop, positions of its rows among active_rows (consecutive), its active
        rows counted from its first) of each loop, in the order of the constraints."""
        loops = []
        for row, con in self.first_rows():
            if isinstance(con, LoopConstraint):
                mine = np.flatnonzero((self.active_rows >= row)
                                      & (self.active_rows < row + con.rows))
                loops.append((row, con, mine, self.active_rows[mine] - row))
        return loops


def build_constraints(spec, tree):
    """Loop and coupling constraints with the two digraph edges each one adds (Chignoli, Slotine
    et al. 2024, Alg. 3)."""
    constraints = []
    for loop in spec.loops:
        where = f'loop {quote(loop.name)}'
        A = tree.body_of(loop.predecessor, f'{where} <predecessor>')
        B = tree.body_of(loop.successor, f'{where} <successor>')
        nca = tree.nearest_common_ancestor(A, B)
        pred_path, succ_path = tree.path_from(nca, A), tree.path_from(nca, B)
        if not pred_path and not succ_path:
            raise ModelError(f'{where} joins links {quote(loop.predecessor)} and '
                             f'{quote(loop.successor)}, which are rigidly connected: it '
                             'constrains no joint')
        barred = [tree.bodies[b].joint for b in pred_path + succ_path
                  if not TYPES[tree.bodies[b].joint.type].in_loops]
        if barred:
            raise ModelError(f'{where} closes through {barred[0].type} joint '
                             f'{quote(barred[0].name)}; only 1-DoF joints can be part of a loop')
        pose_A = tree.link_frame[loop.predecessor][1] * loop.predecessor_origin
        pose_B = tree.link_frame[loop.successor][1] * loop.successor_origin
        constraint = LoopConstraint(loop.name, loop.type, loop.axis, nca, pred_path, succ_path,
                                    pose_transform(pose_A.R, pose_A.p),
                                    pose_transform(pose_B.R, pose_B.p), loop.axis2)
        constraints.append((constraint, _edges(A, B, pred_path, succ_path)))
    for coupling in spec.couplings:
        where = f'coupling {quote(coupling.name)}'
        A = tree.body_of(coupling.predecessor, f'{where} <predecessor>')
        B = tree.body_of(coupling.successor, f'{where} <successor>')
        nca = tree.nearest_common_ancestor(A, B)
        if nca in (A, B):
            raise ModelError(f'{where}: links {quote(coupling.predecessor)} and '
                             f'{quote(coupling.successor)} lie on one branch; a coupling relates '
                             'the joints of two branches below their nearest common ancestor')
        pred_path, succ_path = tree.path_from(nca, A), tree.path_from(nca, B)
        # Sum over the successor path = ratio * sum over the predecessor path (the published robot
        # files' direction, not Chignoli, Slotine et al. 2024 eq. (8)): rotor successor, ratio N,
        # spins N times its link.
        coefficients = {b: coupling.ratio for b in pred_path}
        coefficients.update({b: -1.0 for b in succ_path})
        _same_kind(where, tree, coefficients)
        constraints.append((CouplingConstraint(coupling.name, coefficients),
                            _edges(A, B, pred_path, succ_path)))
    joint_body = {tree.bodies[b].joint.name: b for b in range(1, len(tree.bodies))}
    for joint in mimicking(spec, joint_body):
        where = f'joint {quote(joint.name)} <mimic>'
        leader = joint.mimic.joint
        J, K = joint_body[leader], joint_body[joint.name]
        coefficients = {J: joint.mimic.multiplier, K: -1.0}
        _same_kind(where, tree, coefficients)
        top = tree.nearest_common_ancestor(tree.parent[J], tree.parent[K])
        constraints.append((CouplingConstraint(f'mimic:{joint.name}', coefficients,
                                               joint.mimic.offset),
                            _edges(J, K, tree.path_from(top, J), tree.path_from(top, K))))
    fixed = {j.name for j in spec.joints if j.type == 'fixed'}
    for implicit in spec.implicit:
        constraint = ImplicitConstraint.of(implicit, tree, joint_body, fixed)
        bodies = constraint.bodies
        top = tree.nearest_common_ancestor(*[tree.parent[b] for b in bodies])
        paths = [tree.path_from(top, b) for b in bodies]
        constraints.append((constraint, tuple(
            edge for i in range(len(bodies) - 1)
            for edge in _edges(bodies[i], bodies[i + 1], paths[i], paths[i + 1]))))
    return constraints


def mimicking(spec, joint_body):
    """The joints whose <mimic> is a constraint: a <mimic> on or of a fixed joint is ignored
    (mimic_warnings); one naming a joint that does not exist is refused."""
    fixed = {j.name for j in spec.joints if j.type == 'fixed'}
    joints = []
    for joint in spec.joints:
        if joint.mimic is None or joint.name in fixed or joint.mimic.joint in fixed:
            continue
        if joint.mimic.joint not in joint_body:
            raise ModelError(f'joint {quote(joint.name)} <mimic> names unknown joint '
                             f'{quote(joint.mimic.joint)}')
        joints.append(joint)
    return joints


def mimic_roles(spec, tree):
    """(followers, leaders): the names of the joints whose <mimic> is a constraint, and of the
    joints they follow that follow no other (a chain's first leader)."""
    joints = mimicking(spec, {tree.bodies[b].joint.name: b for b in range(1, len(tree.bodies))})
    followers = {j.name for j in joints}
    return followers, {j.mimic.joint for j in joints} - followers


def mimic_warnings(spec):
    """Warnings for the <mimic> elements the model ignores (on or of a fixed joint) and for mimic
    followers marked independent="true" (the mimic decides: they follow their leader)."""
    fixed = {j.name for j in spec.joints if j.type == 'fixed'}
    warnings = []
    for joint in spec.joints:
        if joint.mimic is None:
            continue
        if joint.name in fixed or joint.mimic.joint in fixed:
            which = ('is fixed' if joint.name in fixed
                     else f'mimics fixed joint {quote(joint.mimic.joint)}')
            warnings.append(f'joint {quote(joint.name)} {which}: its <mimic> is ignored')
        elif joint.independent is True:
            warnings.append(f'joint {quote(joint.name)} is marked independent but mimics joint '
                            f'{quote(joint.mimic.joint)}: it follows its leader')
    return warnings


def _edges(A, B, pred_path, succ_path):
    """The two dependency edges of a constraint; an empty branch (A is an ancestor of B, or the
    reverse) closes the other branch on itself."""
    first_p = pred_path[0] if pred_path else succ_path[0]
    first_s = succ_path[0] if succ_path else pred_path[0]
    return ((A, first_s), (B, first_p))


def _same_kind(where, tree, coefficients):
    kinds = {}
    for body in coefficients:
        joint = tree.bodies[body].joint
        if not TYPES[joint.type].kind:
            raise ModelError(f'{where} involves {joint.type} joint {quote(joint.name)}; only '
                             '1-DoF joints can be coupled')
        kinds.setdefault(TYPES[joint.type].kind, []).append(joint.name)
    if len(kinds) > 1:
        detail = '; '.join(f'{kind}: {quote(names)}' for kind, names in kinds.items())
        raise ModelError(f'{where} couples joints of different kinds ({detail}); a coupling '
                         'relates joints of one kind')


def strongly_connected_components(n, edges):
    """Tarjan's algorithm (iterative); returns each component as a sorted list of nodes."""
    adjacency = [[] for _ in range(n)]
    for a, b in edges:
        adjacency[a].append(b)
    index, low, on_stack = [-1] * n, [0] * n, [False] * n
    stack, components, counter = [], [], 0

    def visit(node):
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack[node] = True
        return node, iter(adjacency[node])

    for start in range(n):
        if index[start] >= 0:
            continue
        calls = [visit(start)]
        while calls:
            node, successors = calls[-1]
            for nxt in successors:
                if index[nxt] < 0:
                    calls.append(visit(nxt))
                    break
                if on_stack[nxt]:
                    low[node] = min(low[node], index[nxt])
            else:
                calls.pop()
                if calls:
                    low[calls[-1][0]] = min(low[calls[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack[member] = False
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def build_clusters(spec, tree, split=True):
    """Clusters in regular order (a parent cluster before its children), with their constraints
    and, with split, their independent/dependent split and reference configuration; raises
    ModelError on inconsistent URDF+."""
    constraints = build_constraints(spec, tree)
    followers, leaders = mimic_roles(spec, tree)
    nb = len(tree.bodies)
    edges = [(tree.parent[i], i) for i in range(1, nb)]
    for _, pair in constraints:
        edges.extend(pair)
    components = [c for c in strongly_connected_components(nb, edges) if c != [0]]
    components.sort(key=lambda c: c[0])
    cluster_of = np.zeros(nb, dtype=int) - 1
    for k, bodies in enumerate(components):
        cluster_of[bodies] = k
    owned = [[] for _ in components]
    for constraint, _ in constraints:
        owned[cluster_of[constraint.bodies[0]]].append(constraint)
    _check_dependent_flags(tree, components, owned)
    clusters = []
    for k, bodies in enumerate(components):
        output = {}
        for b in bodies:
            o = tree.parent[b]
            while o > 0 and cluster_of[o] == k:
                o = tree.parent[o]
            output[b] = o
        parents = {int(cluster_of[o]) for o in output.values()}
        if len(parents) != 1:
            raise ModelError('the cluster of links '
                             f'{quote([tree.bodies[b].link for b in bodies])} hangs from bodies '
                             'of several clusters; merge its constraints into one mechanism')
        col, n = {}, 0
        for b in bodies:
            col[b] = n
            n += TYPES[tree.bodies[b].joint.type].nv
        cluster = Cluster(k, tree.bodies[bodies[0]].link, tuple(bodies), parents.pop(), output,
                          tuple(owned[k]), col, n, np.arange(n), np.arange(0), np.arange(0),
                          all(isinstance(c, CouplingConstraint) for c in owned[k]),
                          moves=np.eye(n, dtype=bool))
        if owned[k] and split:
            # seeded per cluster: its split and reference do not depend on the rest of the robot
            _split_coordinates(cluster, tree, np.random.default_rng(0), followers, leaders)
        clusters.append(cluster)
    return clusters


def _check_dependent_flags(tree, components, owned):
    """A joint marked independent="false" must belong to a constrained cluster."""
    unconstrained = [tree.bodies[b].joint.name
                     for bodies, cons in zip(components, owned) if not cons
                     for b in bodies if tree.bodies[b].joint.independent is False]
    if unconstrained:
        raise ModelError(f'joints {unconstrained} are marked independent="false" but no <loop>, '
                         '<coupling> or <constraint> constrains them')


def _split_coordinates(cluster, tree, rng, followers, leaders):
    """Rank-revealing choice of the dependent joints (Chignoli, Slotine et al. 2024, Sec. III-C) on
    closed configurations (assembly.py): the number of dependent joints equals rank K there, and
    their columns K_d have full rank there. Joints marked independent="false" are dependent; joints
    marked "true" and the leaders of <mimic> joints stay independent; of the others, mimic
    followers are taken first, then the joints farthest from the cluster's root."""
    bodies = cluster.bodies
    jacobian = cluster_jacobian(cluster, tree)
    starts = [ClusterPose(cluster, tree, random_start(cluster, tree, rng))
              for _ in range(RANK_SAMPLES)]
    open_samples = [K for K in map(jacobian, starts) if np.all(np.isfinite(K))]
    if not open_samples:        # an implicit constraint's domain (finite at the zero position)
        open_samples = [jacobian(ClusterPose(cluster, tree, {
            b: neutral_position(tree.bodies[b].joint.type) for b in bodies}))]
    scale = max(1.0, max(np.abs(K).max() for K in open_samples))
    active = np.flatnonzero(np.max([np.abs(K).max(axis=1) for K in open_samples], axis=0)
                            > RANK_TOLERANCE * scale)
    joints = [tree.bodies[b].joint for b in bodies]
    names = [j.name for j in joints]
    describe = (f'cluster {quote(cluster.name)} (joints {quote(names)}, constraints '
                f'{quote([c.name for c in cluster.constraints])})')
    if cluster.linear:
        closed, samples = [], [K[active] for K in open_samples]        # constant K
    else:
        closed, samples = _closed_samples(cluster, tree, jacobian, active, rng, describe)
    # a multi-DoF joint (spherical, planar) is dependent as a whole where the rank allows, else in
    # the directions the loops fix (a rod with ball joints at both ends keeps its idle spin
    # independent); column_name[c] names the joint of local column c
    columns = [list(range(cluster.col[b], cluster.col[b] + TYPES[j.type].nv))
               for b, j in zip(bodies, joints)]
    column_name = [j.name for j in joints for _ in range(TYPES[j.type].nv)]
    marked = [c for j, cols in zip(joints, columns) if j.independent is False for c in cols]
    free = [(j, cols) for j, cols in zip(reversed(joints), reversed(columns))
            if (j.independent is None or j.name in followers) and j.name not in leaders]
    candidates = [cols for j, cols in free if j.name in followers] + \
        [cols for j, cols in free if j.name not in followers]
    # the samples where K, and the columns that may be dependent, have their largest rank: a closed
    # configuration can also be a singular one (folded rods, aligned axes), which says nothing of
    # the split
    pool = marked or [c for cols in candidates for c in cols]
    ranks = [(_rank(K), _rank(K[:, pool])) for K in samples]
    rank = max(ranks)[0]
    samples = [K for K, r in zip(samples, ranks) if r == max(ranks)]
    closed = [sample for sample, r in zip(closed, ranks) if r == max(ranks)]
    if marked:
        dependent = marked
        # marked ball joints of rods that spin idly: the directions the loops fix
        if len(marked) > rank:
            dependent = _choose(samples, rank,
                                [cols for j, cols in zip(reversed(joints), reversed(columns))
                                 if j.independent is False])
            if {column_name[c] for c in dependent} != {column_name[c] for c in marked}:
                dependent = marked   # a marked joint the loops do not determine at all
        if len(dependent) != rank:
            raise ModelError(f'{describe} has constraint rank {rank}, so it needs {rank} '
                             f'dependent joints, but {len(marked)} are marked '
                             f'independent="false": {_joint_list(column_name, marked)}')
    else:
        dependent = _choose(samples, rank, candidates)
        if len(dependent) != rank:
            raise ModelError(f'{describe} has constraint rank {rank} but only {len(dependent)} '
                             'coordinates of joints neither marked independent="true" nor leading '
                             'a <mimic> can be solved from it')
    if min(_rank(K[:, dependent]) for K in samples) < rank:
        raise ModelError(f'{describe}: the dependent joints {_joint_list(column_name, dependent)} '
                         'cannot be solved from the constraints (their Jacobian columns are rank '
                         'deficient); mark other joints independent="false"')
    cluster.dependent = np.array(dependent, dtype=int)
    if not cluster.linear:                     # the couplings alone: G constant, no QR at run time
        pattern = np.any([K[:, dependent] != 0.0
                          for K in samples + [K[active] for K in open_samples]], axis=0)
        cluster.elimination = elimination_plan(pattern)
        cluster.dependent = cluster.dependent[list(cluster.elimination.order)]
    cluster.independent = np.array([c for c in range(cluster.n) if c not in dependent], dtype=int)
    cluster.active_rows = active
    cluster.moves = _motion_pattern(cluster, samples)
    if not cluster.linear:
        cluster.closed = [q for q, _ in closed]
        cluster.reference, cluster.reference_neighbourhood = reference_configuration(
            cluster, tree, jacobian, closed, describe)


def _closed_samples(cluster, tree, jacobian, active, rng, describe):
    """(q per body, K at the active rows) at up to RANK_SAMPLES closed configurations of a loop
    cluster, projected from random starts near the zero position and farther (START_SPANS;
    assembly.project). Where none closes, the least-squares settling of the best start
    (assembly.settle) either closes, and the samples are sought near it, or tells how far the
    loops stay open together, which the error names with the loop farthest from closing."""
    closed, best = [], None

    def sample(pose):
        residual = project(pose, jacobian, active)
        if residual <= CLOSURE_TOLERANCE:
            closed.append((pose.q, jacobian(pose)[active]))
        return residual

    for start in range(CLOSURE_STARTS):
        pose = ClusterPose(cluster, tree,
                           random_start(cluster, tree, rng, START_SPANS[start % len(START_SPANS)]))
        residual = sample(pose)
        best = min(best or (residual, pose), (residual, pose), key=lambda x: x[0])
        if len(closed) == RANK_SAMPLES:
            break
    if not closed:
        pose = best[1]
        if settle(pose, jacobian, active) <= CLOSURE_TOLERANCE:
            closed.append((pose.q, jacobian(pose)[active]))
            for _ in range(CLOSURE_STARTS):
                if len(closed) == RANK_SAMPLES:
                    break
                sample(ClusterPose(cluster, tree, {
                    b: retract(tree.bodies[b].joint.type, tree.bodies[b].joint.axis, q_b,
                               START_SPANS[0] * rng.uniform(-1, 1, TYPES[
                                   tree.bodies[b].joint.type].nv))
                    for b, q_b in closed[0][0].items()}))
    if not closed:
        gaps = [np.max(np.abs(c.residual(pose.Xup, pose.position)))
                for c in cluster.constraints]
        worst = int(np.argmax(gaps))
        raise ModelError(
            f'{describe}: its loops close from none of {CLOSURE_STARTS} random starts (joint '
            f'angles up to {", ".join(f"{s:.3g}" for s in START_SPANS)} rad), and least squares '
            f'from the best leaves them open by {max(gaps):.3g} together, most at '
            f'{quote(cluster.constraints[worst].name)}: no closed configuration may exist; check '
            "that loop's frames and joint axes (a 6D loop that should be 3D?)")
    return closed, [K for _, K in closed]


def _motion_pattern(cluster, samples):
    """moves[c, j]: whether independent coordinate j moves local column c (G_k's pattern on the
    samples)."""
    moves = np.zeros((cluster.n, cluster.m), dtype=bool)
    moves[cluster.independent, np.arange(cluster.m)] = True
    for K in samples:
        G = explicit_jacobian(K, cluster.dependent, cluster.independent)
        moves[cluster.dependent] |= (np.abs(G)
                                     > RANK_TOLERANCE * max(1.0, np.abs(G).max(initial=0.0)))
    return moves


def _choose(samples, rank, candidates):
    """Greedy rank-revealing choice of at most rank dependent columns among the candidate joints'
    (in order): each joint whole where K_d keeps full rank at every sample, else the directions the
    loops fix (a split joint: an idle spin stays independent)."""
    dependent = []
    for cols in candidates:
        if len(dependent) + len(cols) <= rank and \
                min(_rank(K[:, dependent + cols]) for K in samples) == len(dependent) + len(cols):
            dependent.extend(cols)                           # the whole joint
        else:
            dependent.extend(_fixed_directions(samples, dependent, cols, rank))
        if len(dependent) == rank:
            break
    return sorted(dependent)


def _fixed_directions(samples, dependent, cols, rank):
    """The columns of a multi-DoF joint that the loops fix, by column pivoting: the column farthest
    from the span of the chosen ones first, while it adds rank. The free direction (a rod's spin
    about its own line) is then the column most aligned with it, so K_d stays well conditioned also
    for a rod lying nearly, not exactly, along a frame axis (in order, its almost idle column would
    be taken)."""
    K = samples[0]
    chosen, left = [], list(cols)
    while left and len(dependent) + len(chosen) < rank:
        Q = np.linalg.qr(K[:, dependent + chosen])[0]
        residual = np.linalg.norm(K[:, left] - Q @ (Q.T @ K[:, left]), axis=0)
        c = left.pop(int(np.argmax(residual)))
        if (min(_rank(K[:, dependent + chosen + [c]]) for K in samples)
                == len(dependent) + len(chosen) + 1):
            chosen.append(c)
    return chosen


def _joint_list(column_name, columns):
    """The joints of local columns, each once (a spherical joint has three columns)."""
    return list(dict.fromkeys(column_name[c] for c in columns))


def _rank(K):
    if K.size == 0:
        return 0
    s = np.linalg.svd(K, compute_uv=False)
    return int(np.sum(s > RANK_TOLERANCE * max(1.0, s[0])))
