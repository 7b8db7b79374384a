"""The model's layout, built once at load: the bodies, joints and links of the spanning tree,
the index ranges of q, v and y (bodies numbered cluster by cluster, parent clusters first, Chignoli
et al. 2023 Sec. 1.3, so that the bodies, spanning and independent velocities of cluster k are
contiguous), the independent, split, actuated, passive and held coordinates, the reference
configuration, and ClusterInfo, each cluster as a reader sees it. q and v follow ``joint_names``;
y (independent velocities) follows ``independent_joint_names``."""

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .algorithms.frames import world_twists
from .algorithms.kinematics import forward_pass, update_transforms
from .errors import first_repeated, ModelError, quote
from .joint_types import NQ, NV
from .multibody.clusters import mimic_roles, mimic_warnings
from .multibody.constraints import (amplification, CouplingConstraint, ImplicitConstraint,
                                    LoopConstraint, rows_at)
from .multibody.reference import neighbourhood_amplification, REFERENCE_PROBE, regular
from .multibody.couplings import LinearConstraints
from .multibody.joints import motion_subspace, neutral_position
from .multibody.roles import held_coordinates, idle_spin, passive_joints
from .spatial import pose_transform
from .engines.numpy_engine import ReferencePath
from .validation import positions, vector
from . import bounds
from .data import Data


@dataclass(frozen=True)
class ClusterInfo:
    """Readable description of one cluster."""

    name: str
    parent: str                    # name of the parent cluster, '' for the ground
    links: tuple                   # links moving with the cluster's bodies (fixed links included)
    joints: tuple                  # spanning-tree joints of the cluster
    independent_joints: tuple
    dependent_joints: tuple
    constraints: tuple             # names of its <loop>/<coupling>/<mimic> constraints

    def __str__(self):
        text = f'{self.name}: joints {list(self.joints)}'
        if self.constraints:
            text += (f', constraints {list(self.constraints)}, independent '
                     f'{list(self.independent_joints)}, dependent {list(self.dependent_joints)}')
        return text


def lay_out(model, spec, tree, clusters):
    """The layout of model (attributes, read-only arrays) from its spanning tree and clusters."""
    model.name = spec.name
    model.warnings = list(spec.warnings) + mimic_warnings(spec)  # loadable oddities
    model.nb = len(tree.bodies)                       # bodies incl. the ground (body 0)
    model.root_link = tree.root_link
    model.parent = frozen(tree.parent)               # parent body of each body
    model.joint_type = tuple([None] + [b.joint.type for b in tree.bodies[1:]])
    model.axis = frozen([np.zeros(3)] + [b.joint.axis for b in tree.bodies[1:]])
    model.X_tree = frozen([b.X_tree for b in tree.bodies])      # ^{joint frame}X_{parent body}
    model.inertia = frozen([b.inertia for b in tree.bodies])    # spatial inertia, body
    #                                                             coordinates
    model.S = tuple([None] + [frozen(motion_subspace(b.joint.type, b.joint.axis))
                              for b in tree.bodies[1:]])         # motion subspace, body
    #                                                             coordinates
    model.body_links = tuple(tuple(b.links) for b in tree.bodies)
    # link -> (body, X_link_body)
    model.link_frame = {link: (b, frozen(pose_transform(pose.R, pose.p)))
                        for link, (b, pose) in tree.link_frame.items()}
    model.joint_names = tuple(b.joint.name for b in tree.bodies[1:])
    model.effort_limits = {b.joint.name: b.joint.effort for b in tree.bodies[1:]
                           if b.joint.effort > 0.0}
    nq = [0] + [NQ[t] for t in model.joint_type[1:]]
    nv = [0] + [NV[t] for t in model.joint_type[1:]]
    model.idx_q = frozen(np.cumsum([0] + nq[:-1]))  # first position index of each body's joint
    model.idx_v = frozen(np.cumsum([0] + nv[:-1]))  # first velocity index of each body's joint
    model.nq_body, model.nv_body = tuple(nq), tuple(nv)
    model.nq, model.nv = int(sum(nq)), int(sum(nv))
    model.q_neutral = frozen(np.concatenate(
        [np.zeros(0)] + [neutral_position(t) for t in model.joint_type[1:]]))
    model.cluster_list = tuple(clusters)
    model.cluster_of = np.zeros(model.nb, dtype=int) - 1
    y0 = 0
    ranges = []
    for c in clusters:
        model.cluster_of[list(c.bodies)] = c.index
        ranges.append((c.bodies[0], c.bodies[-1] + 1, int(model.idx_v[c.bodies[0]]), y0))
        y0 += c.m
    model.cluster_of = frozen(model.cluster_of)
    model.body_range = tuple((b0, b1) for b0, b1, _, _ in ranges)          # bodies of cluster k
    model.v_range = tuple((v0, v0 + c.n) for (_, _, v0, _), c in zip(ranges, clusters))
    model.y_range = tuple((y, y + c.m) for (_, _, _, y), c in zip(ranges, clusters))
    model.ny = y0
    model.independent_v = frozen(np.concatenate(
        [v0 + c.independent for (v0, _), c in zip(model.v_range, clusters)]).astype(int))
    model.joint_role = _joint_roles(clusters, nv)     # per body: 'independent', 'dependent' or
    #                                                  'split'
    model.independent_joint_names = tuple(
        model.joint_names[b - 1] for c in clusters for b in c.bodies
        if model.joint_role[b] != 'dependent')
    # partly dependent: their free directions are in y
    model.split_joint_names = tuple(
        model.joint_names[b - 1] for c in clusters for b in c.bodies
        if model.joint_role[b] == 'split')
    # q entries of the independent positions (not split joints)
    model.independent_q = frozen(np.array(
        [model.idx_q[b] + k for b in range(1, model.nb) if model.joint_role[b] == 'independent'
         for k in range(model.nq_body[b])], dtype=int))
    # joint -> (first entry, size) of its positions in the independent positions
    # (complete_positions' vector), and -> its first entry in y (split joints included)
    named = [b for b in range(1, model.nb) if model.joint_role[b] == 'independent']
    starts = np.cumsum([0] + [model.nq_body[b] for b in named])
    model.independent_positions_index = MappingProxyType(
        {model.joint_names[b - 1]: (int(start), model.nq_body[b])
         for b, start in zip(named, starts)})
    entries = {int(v): y for y, v in enumerate(model.independent_v)}
    model.independent_velocities_index = MappingProxyType(
        {model.joint_names[b - 1]: next(entries[v] for v in range(
            model.idx_v[b], model.idx_v[b] + model.nv_body[b]) if v in entries)
         for b in range(1, model.nb) if model.joint_role[b] != 'dependent'})
    model.Sbar = tuple(frozen(_block_diagonal([model.S[b] for b in c.bodies]))
                       for c in clusters)
    # every floating joint, in joint_names order (a robot's base, and in a scene those of
    # every floating robot and free object: description/compose.py); the first is the base's
    model.floating_joint_names = tuple(name for name, kind in zip(model.joint_names,
                                                                  model.joint_type[1:])
                                       if kind == 'floating')
    model.floating_base_joint = next(iter(model.floating_joint_names), '')
    model.floating_base = bool(model.floating_joint_names)
    model.clusters = tuple(describe(model, c, tree) for c in clusters)
    # q-dependent K
    model.loop_bodies = tuple(b for c in clusters if not c.linear for b in c.bodies)
    # (constraint, cluster) names as the position checks number them (kernels/checks.py
    # worst_constraint): the loops, every coupling, then the implicit constraints
    model.checked_constraints = tuple(
        (con.name, c.name) for kind in (LoopConstraint, CouplingConstraint, ImplicitConstraint)
        for c in clusters for con in c.constraints if isinstance(con, kind))
    model.couplings = LinearConstraints(model)       # the coupling-only clusters as A q + b = 0
    model.passive_joint_names = tuple(passive_joints(tree, clusters, model.joint_role,
                                                     mimic_roles(spec, tree)[1]))
    passive, kind = (set(model.passive_joint_names),
                     dict(zip(model.joint_names, model.joint_type[1:])))
    model.actuated_joint_names = tuple(name for name in model.independent_joint_names
                                       if name not in passive and kind[name] != 'floating')
    actuated = set(model.actuated_joint_names)     # their entries of y (contacts.py)
    model.actuated_y = frozen(np.array(
        [y for y, v in enumerate(model.independent_v)
         if model.joint_names[_body_of_entry(model.idx_v, v) - 1] in actuated], dtype=int))
    model.G_constant = model.couplings.G             # constant G_k of coupling-only clusters


def hold(model, clusters):
    """The coordinates the loops hold (roles.py): the idle spins, unit motions at the reference
    configuration, and those that move only bodies without inertia."""
    data = Data(model)
    passive_y = np.setdiff1d(np.arange(model.ny), model.actuated_y)
    spins = []
    for y in passive_y:
        if not model.cluster_list[cluster_of_y(model, y)].linear:
            forward_pass(model, data, model._reference_positions, np.eye(model.ny)[y])
            if idle_spin(model, *world_twists(model, data)):
                spins.append(y)
    model.held_y, model.locked_v = (frozen(x) for x in held_coordinates(model, clusters, spins))
    # what contacts must carry: neither actuated nor held (the floating base, passive joints)
    model.unactuated_y = frozen(np.setdiff1d(passive_y, model.held_y))
    model.free_columns = tuple(np.setdiff1d(np.arange(y1 - y0), model.held_y - y0)
                               for y0, y1 in model.y_range)
    model.free_joint_columns = tuple(
        np.flatnonzero(~np.isin(np.arange(model.idx_v[i], model.idx_v[i] + model.nv_body[i]),
                                model.locked_v))
        for i in range(model.nb))
    model.idle_spin_joint_names = tuple(dict.fromkeys(
        model.joint_names[_body_of_entry(model.idx_v, v) - 1]
        for v in model.independent_v[spins]))
    model.held_joint_names = tuple(dict.fromkeys(
        model.joint_names[_body_of_entry(model.idx_v, v) - 1]
        for v in model.independent_v[model.held_y]))
    model.warnings += [f'joint {quote(name)} moves only bodies without inertia and no '
                       'constraint determines it: forward dynamics holds it still'
                       for name in model.held_joint_names
                       if name not in model.idle_spin_joint_names]


def reference(model, clusters, tree, given):
    """The reference positions (given ones checked: closed, regular; else each loop cluster's
    reference configuration with the couplings solved), each cluster's amplification there and
    the largest in its neighbourhood (reference.neighbourhood_amplification)."""
    data = Data(model)
    data.engine = ReferencePath(model, data)        # the NumPy checks: nothing compiles at load
    if given is None:
        q = model.q_neutral.copy()
        for c in clusters:
            for b, q_b in (c.reference or {}).items():
                q[model.idx_q[b]:model.idx_q[b] + model.nq_body[b]] = q_b
        model.couplings.complete(q)
    else:
        q = positions(model, data, given)
    update_transforms(model, data, q, model.loop_bodies)
    gains, around = np.ones(len(clusters)), np.ones(len(clusters))
    for c in clusters:
        if not c.linear:
            K = rows_at(model, data, c)[0][c.active_rows]
            if not regular(c, K):
                raise ModelError(f'reference_positions: cluster {quote(c.name)} is (nearly) '
                                 'singular there; give a regular closed configuration')
            gains[c.index] = amplification(K, c.dependent, c.independent)
            around[c.index] = c.reference_neighbourhood if given is None else \
                neighbourhood_amplification(c, tree, {
                    b: q[model.idx_q[b]:model.idx_q[b] + model.nq_body[b]] for b in c.bodies})
    return frozen(q), frozen(gains), around


def cluster_of_y(model, y):
    """The index of the cluster whose independent velocities hold entry y."""
    return next(k for k, (y0, y1) in enumerate(model.y_range) if y0 <= y < y1)


def describe(model, c, tree):
    joints = tuple(model.joint_names[b - 1] for b in c.bodies)
    role = model.joint_role
    return ClusterInfo(c.name, model.cluster_list[c.parent].name if c.parent >= 0 else '',
                       tuple(link for b in c.bodies for link in model.body_links[b]), joints,
                       tuple(model.joint_names[b - 1] for b in c.bodies
                             if role[b] != 'dependent'),
                       tuple(model.joint_names[b - 1] for b in c.bodies
                             if role[b] != 'independent'),
                       tuple(con.name for con in c.constraints))


def _joint_roles(clusters, nv):
    """Per body (None for the ground): 'independent' or 'dependent' where all its joint's velocity
    columns are, else 'split' (a spherical joint whose idle spin the loops leave free)."""
    roles = [None] * len(nv)
    for c in clusters:
        dependent = set(c.dependent)
        for b in c.bodies:
            n = len(dependent & set(range(c.col[b], c.col[b] + nv[b])))
            roles[b] = 'dependent' if n == nv[b] else 'independent' if n == 0 else 'split'
    return tuple(roles)


def near_singularity(cluster, around, bound):
    """The load warning of a loop cluster whose reference lies near a singularity: in its
    neighbourhood the amplification exceeds half its bound."""
    found = (f'a configuration {REFERENCE_PROBE:g} rad from it is singular' if around == np.inf
             else f'{REFERENCE_PROBE:g} rad from it the amplification reaches {around:.3g}, over '
             f'half of its bound {bound:.3g}')
    return (f'cluster {quote(cluster.name)}: its reference configuration lies near a singularity '
            f'({found}), so inputs near it may be refused as singular; pass reference_positions '
            'at a configuration inside the working range, or raise amplification_limit')


def _body_of_entry(starts, i):
    """The body whose joint holds entry i of a vector laid out by starts (idx_q or idx_v)."""
    return int(np.searchsorted(starts[1:], i, side='right'))


def frozen(values):
    """A read-only array, so that an accidental write into the model fails loudly."""
    array = np.array(values)
    array.setflags(write=False)
    return array


def _block_diagonal(blocks):
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    M = np.zeros((rows, cols))
    r = c = 0
    for b in blocks:
        M[r:r + b.shape[0], c:c + b.shape[1]] = b
        r += b.shape[0]
        c += b.shape[1]
    return M


def independent_positions(model, by_name):
    """The independent positions (Model.complete_positions' vector) of a mapping of the actuated
    and floating joints' positions, the passive ones at their reference positions."""
    index = model.independent_positions_index
    unknown = [name for name in by_name if name not in index]
    if unknown:
        name = unknown[0]
        why = ('its position follows from the loops' if name in model.joint_names else
               'no joint of the model has this name')
        raise ModelError(f'q_independent names joint {quote(name)}: {why}; name the actuated '
                         f'joints {quote(list(model.actuated_joint_names))}')
    missing = [name for name in model.actuated_joint_names + model.floating_joint_names
               if name not in by_name]
    if missing:
        raise ModelError(f'q_independent misses the joints {quote(missing)}; name every '
                         'actuated and floating joint (the passive ones take their reference '
                         'positions)')
    q_ind = model.reference_positions[model.independent_q]
    for name, value in by_name.items():
        start, size = index[name]
        q_ind[start:start + size] = vector(value, f'q_independent[{name!r}]',
                                           {size: 'positions'}, bounds.POSITION)
    return q_ind


def checked_link(model, link):
    """link, a link name of the model, else ModelError."""
    if not isinstance(link, str) or link not in model.link_frame:
        raise ModelError(f'unknown link {quote(link)}; links are '
                         f'{quote(sorted(model.link_frame))}')
    return link


def checked_links(model, links, empty=False):
    """Distinct link names of the model (a name alone is a list of one; none only where empty
    is allowed), in time linear in their number."""
    if isinstance(links, str):
        return [checked_link(model, links)]
    try:
        links = [checked_link(model, link) for link in links]
    except TypeError:
        raise ModelError('links must be a link name or a list of them, got '
                         f'{quote(links)}') from None
    if not links and not empty:
        raise ModelError('links is empty; name at least one link')
    if len(set(links)) < len(links):
        duplicate = first_repeated(links)
        raise ModelError(f'link {quote(duplicate)} is named twice in links; name each link '
                         'once')
    return links


def checked_amplification_limit(value):
    """Model.amplification_limit from a value, else ModelError."""
    limit = vector(value, 'amplification_limit', {1: 'a ratio'}, bounds.AMPLIFICATION)[0]
    if limit < 1.0:
        raise ModelError(f'amplification_limit is {limit:g}; expected a ratio of at least 1 (G\'s '
                         'independent rows are the identity)')
    return float(limit)
