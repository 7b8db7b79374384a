"""A Model compiled into flat arrays for the numba kernels (model/data split, as in Pinocchio).

``FlatModel(model)`` turns the readable Model (Python tuples, dicts and constraint objects) into
read-only NumPy arrays, once. ``FlatModel.create_data()`` preallocates every buffer the kernels
write, so that a kernel call allocates nothing. The kernels receive both as numba structrefs
(``.ref``): a structref crosses the Python/numba boundary as one pointer, whatever its number of
fields.

Transforms are stored as pairs (E, r): X = [[E, 0], [-E rx, E]] (Featherstone & Orin 2000), the
Plucker transform of spatial.py. Per-cluster quantities are padded to the largest cluster (N
spanning, M independent velocities). Every cluster hangs from ONE output body (ModelError
otherwise), so ^kX_parent (Chignoli et al. 2023, eq. 17) has a single block column: with clusters
formed as strongly connected components (Chignoli, Slotine et al. 2024, Alg. 3) a constraint enters
a cluster below its nearest common ancestor, and a second parent of the cluster's roots would lie
on a cycle through the cluster.
"""

import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

from ...algorithms.aba import D_CONDITION_LIMIT
from ...algorithms.kinematics import SINGULARITY_THRESHOLD
from ...errors import ModelError, quote
from ...joint_types import REVOLUTE, TYPES
from ...multibody.constraints import CouplingConstraint, TURNING
from ...multibody.joints import plane_frame
from ...spatial import skew
from ..borrowed import borrowed
from ..cache import key_on_helpers
from ..kinematics import COUPLED, LOOP, SINGLE
from .implicit import IMPLICIT_FIELDS, implicit_fields

key_on_helpers(__file__)                 # the field types come from borrowed.py


MODEL_FIELDS = {   # name: meaning, shape (nb bodies with 0 the ground, nc clusters, nl loops,
    #                                  L links of Model.links)
    'joint': 'joint code of body i, -1 for the ground (nb)',
    'parent': 'parent body (nb)',
    'cluster': 'cluster of body i, -1 for the ground (nb)',
    'joint_nq': 'number of positions of the joint of body i, 0 for the ground (nb)',
    'quaternion_at': 'position index of the unit quaternion of the joint of body i (its first '
                     'entry), -1 for none (nb)',
    'idx_q': 'first position index of the joint of body i (nb)',
    'col': 'first column of the joint of body i within its cluster velocities (nb)',
    'axes': 'rows e1, e2, axis of the joint axis frame (joints.plane_frame), body coordinates '
            '(nb, 3, 3)',
    'coordinate_axis': 'a if the joint of body i is revolute about +-e_a (a = 0, 1, 2), else -1 '
                       '(nb)',
    'tree_E': 'rotation of X_tree, ^jointX_parent (nb, 3, 3)',
    'tree_r': 'translation of X_tree, parent coordinates (nb, 3)',
    'inertia': 'spatial inertia, body coordinates (nb, 6, 6)',
    'rigid_inertia': 'inertia as 10 rigid-body parameters: mass m, first moment h = m c, '
                     'rotational inertia about the body origin (upper triangle xx xy xz yy yz zz) '
                     '(nb, 10)',
    'leaf': '1 if no cluster hangs from body i, so that its articulated inertia is its rigid-body '
            'inertia (nb)',
    'kind': 'SINGLE, COUPLED or LOOP (nc)',
    'output': 'the output body of cluster k, 0 for the ground (nc)',
    'body_range': 'bodies [b0, b1) of cluster k (nc, 2)',
    'v_range': 'spanning velocities [v0, v1) of cluster k (nc, 2)',
    'y_range': 'independent velocities [y0, y1) of cluster k (nc, 2)',
    'y_support': 'independent velocities of cluster k and its ancestors (nc); a frame\'s packed '
                 'rows (efpa.frame_propagators) of cluster k are '
                 '[y_support[k] - m_k, y_support[k])',
    'parent_y': 'expanded parent of each independent velocity (H_y\'s sparsity, dense.'
                'tree_factor): the one before it in its cluster, else the last above, or -1 (ny)',
    'G_const': 'G_const[k, j]: column j of G_k of SINGLE (identity) and COUPLED clusters, the '
               'initial data.G (nc, M, N)',
    'K_const': 'constant (coupling) rows of K_k among its active rows, zero on the rows of loops '
               '(nc, R, N)',
    'active': 'constraint rows that are not identically zero, first n_active[k] entries (nc, R)',
    'n_active': 'number of active rows of cluster k (nc)',
    'dependent': 'local columns of the dependent joints in elimination order, first n - m entries '
                 '(nc, N)',
    'qr_rows': 'active rows reflected at step p of the sparse QR of K_d, pivot first '
               '(elimination.py; nc, N, R)',
    'qr_n_rows': 'their number (nc, N)',
    'qr_cols': 'the later steps whose columns step p changes (nc, N, N)',
    'qr_n_cols': 'their number (nc, N)',
    'independent': 'local columns of the independent joints, first m entries (nc, N)',
    'loop_range': 'loops [l0, l1) of cluster k (nc, 2)',
    'loop_row': 'first row of loop l among all the rows (phi) of its cluster (nl)',
    'loop_active': 'rows [loop_active[l, 0], loop_active[l, 1]) of loop l among the active rows '
                   'of its cluster (its rows of K) (nl, 2)',
    'loop_Psi': 'loop_Psi[l, j]: constrained direction of the j-th active row of loop l, frame P '
                '(nl, 6, 6)',
    'loop_E': 'rotation of ^PX_pred, the loop frame P on the predecessor body (nl, 3, 3)',
    'loop_r': 'translation of ^PX_pred (nl, 3)',
    'loop_universal': '1 for a universal loop whose first row (along a1 x a2, turning with both '
                      'frames) is active, else 0 (nl)',
    'loop_axes': 'universal loop: axis a1 in predecessor-body [0] and axis2 a2 in successor-body '
                 'coordinates [1] (nl, 2, 3)',
    'loop_path': 'bodies below the NCA to the predecessor [0] and successor [1] (nl, 2, P)',
    'loop_path_len': 'lengths of the two paths (nl, 2)',
    'loop_ends': 'the predecessor [0] and successor [1] bodies (the NCA where a path is empty) '
                 '(nl, 2)',
    'loop_cluster': 'the cluster of loop l (nl)',
    'gravity': 'gravity acceleration in the root frame, m/s^2, writable (3)',
    'amplification_bound': 'largest row sum of |G_k| of a regular configuration of LOOP cluster '
                           'k, writable (Model.amplification_bound) (nc)',
    'singularity_threshold': 'kinematics.SINGULARITY_THRESHOLD, relative |R_ii| of a singular '
                             'split',
    'd_condition_limit': 'aba.D_CONDITION_LIMIT, reciprocal condition of an ill-conditioned D_k',
    'nv': 'spanning velocity dimension',
    'ny': 'independent velocity dimension',
    'independent_v': 'spanning velocity index of each independent velocity (ny)',
    'free_y': '1.0 for each independent velocity, 0.0 for the held ones (Model.held_y), which '
              'stay still (ny)',
    'link_body': 'the body of each link of Model.links (L)',
    'link_E': 'rotation of ^linkX_body, the link frame on its body (L, 3, 3)',
    'link_r': 'translation of ^linkX_body (L, 3)',
    **IMPLICIT_FIELDS,
}

DATA_FIELDS = {    # name: meaning, shape
    'Xup_E': 'rotation of ^iX_parent(i) (nb, 3, 3)',
    'Xup_r': 'translation of ^iX_parent(i) (nb, 3)',
    'Xo_E': 'rotation of ^iX_output(i), the block of ^kX_parent(k) (nb, 3, 3)',
    'Xo_r': 'translation of ^iX_output(i) (nb, 3)',
    'S': 'S[i, j]: rows of body i of column j of the cluster motion subspace S_k (nb, M, 6)',
    'U': 'U[i, j]: rows of body i of column j of U_k = I^A_k S_k, or Ic_k S_k in the CRBA '
         '(nb, M, 6)',
    'v': 'body velocities, body coordinates (nb, 6)',
    'a': 'body accelerations (nb, 6)',
    'f': 'body forces (RNEA) or articulated bias forces p^A (ABA) (nb, 6)',
    'c': 'rows of body i of the cluster bias c_k (nb, 6)',
    'IA': 'articulated inertias (ABA, EFPA), block diagonal per cluster; a leaf\'s is read from '
          'rigid_inertia instead (nb, 6, 6)',
    'Ic': 'composite rigid-body inertias (CRBA), as rigid_inertia (nb, 10)',
    'G': 'G[k, j]: column j of the explicit constraint Jacobian G_k (nc, M, N)',
    'g': 'explicit constraint bias g, spanning (nv)',
    'qd': 'spanning velocities G yd (nv)',
    'qdd': 'spanning accelerations G ydd + g (nv)',
    'L': 'Cholesky factor L_k of D_k = S_k^T I^A_k S_k, stored with 1/L_jj on its diagonal '
         '(nc, M, M)',
    'V': 'V[k, j]: column j of V_k = (^kX_parent^T U_k) L_k^-T, rows of the output body '
         '(nc, M, 6)',
    'u': 'u = tau_y - S^T p^A (ny)',
    'z': 'scratch vector of a cluster (M)',
    'F': 'scratch force columns at one body (M, 6)',
    'SL': 'rows j of S_k L_k^-T at one body (M, 6)',
    'E3': 'scratch rotation (3, 3)',
    'tau': 'independent forces (ny)',
    'ydd': 'independent accelerations (ny)',
    'H': 'mass matrix H_y (ny, ny)',
    'K': 'K[k]: the active constraint rows of LOOP cluster k over its spanning velocities '
         '(nc, R, N)',
    'QR': 'sparse QR of the dependent columns of the current LOOP cluster\'s K, carrying the '
          'others and then k (R, N + 1)',
    'beta': 'Householder coefficients (N)',
    'joint_o': 'joint_o[i, j]: joint column j of body i of a LOOP cluster in its output frame, '
               '^iX_output^-1 S_i (nb, 6, 6)',
    'Psi_o': 'Psi_o[l, j]: direction of the j-th active row of loop l in its cluster\'s output '
             'frame (nl, 6, 6)',
    'loop_a': 'universal loop l: a1 [0] and a2 [1] in its cluster\'s output frame (nl, 2, 3)',
    'end_E': 'rotations of the transforms to the predecessor [0] and successor [1] bodies of loop '
             'l from one frame (its cluster\'s output frame or its NCA\'s; '
             'kinematics.set_loop_ends) (nl, 2, 3, 3)',
    'end_r': 'their translations (nl, 2, 3)',
    'q_body': 'the position of the joint of body i (its first coordinate) at the last '
              'body_transforms, which the implicit constraints read (nb)',
    'jet': 'multi-dual components of the nodes of one tape (or value and gradient), then two '
           'scratch rows (kernels/expressions.py) (longest tape + 2, max(8, V + 1))',
    'directions': 'up to three directions over the variables of one implicit constraint (3, V: '
                  'the most variables of one)',
    'w6': 'scratch spatial vector (6)',
    'info': 'details of the last non-zero status: cluster, conditioning (2)',
    'fault': 'details of the rule code a fused call returned: argument, index, value '
             '(kernels/codes.py) (3)',
    'zero_y': 'zeros (ny), for calls without velocities or accelerations',
    'zero_f': 'zeros (nb, 6), for calls without external forces',
    'f_ext': 'external forces of the public calls, body coordinates (nb, 6): the workspace\'s '
             '(model.Data.f_ext)',
    'q_checked': 'positions of the current public call, checked, unit quaternions (nq; '
                 'kernels/calls.py)',
    'q_closed': 'the positions complete_positions returned last (closed to its tolerance, within '
                'bounds, unit quaternions), NaN before (nq): equal positions skip the position '
                'checks (calls.positions)',
    'yd_checked': 'its independent velocities (ny)',
    'ydd_checked': 'its independent accelerations (ny)',
    'tau_spanning': 'spanning forces of an LCABA call (nv)',
    'root_E': 'rotation of ^iX_root, the ground\'s the identity (frames.link_transforms) '
              '(nb, 3, 3)',
    'root_r': 'translation of ^iX_root (nb, 3)',
    'link_selection': 'the links of a link call, indices into Model.links, first n entries: a '
                      'call names each link at most once (int, L)',
    'link_R': 'row e: orientation R of link link_selection[e] in the root frame (L, 3, 3)',
    'link_p': 'its origin p in the root frame (L, 3)',
    'link_J': 'its Jacobian, [linear; angular] rows in the link frame (L, 6, ny)',
    'link_bias': 'its bias acceleration Jdot yd, [linear; angular] in the link frame '
                 '(L, 6)',
}


class _StructType(types.StructRef):
    def preprocess_fields(self, fields):
        # ny as int64, not a literal
        return tuple((name, types.unliteral(t)) for name, t in fields)


@structref.register
class FlatModelType(_StructType):
    """numba type of FlatModelRef."""


@structref.register
class FlatDataType(_StructType):
    """numba type of FlatDataRef."""


class FlatModelRef(structref.StructRefProxy):
    """The kernels' view of a FlatModel."""


class FlatDataRef(structref.StructRefProxy):
    """The kernels' view of a FlatData."""


structref.define_proxy(FlatModelRef, FlatModelType, list(MODEL_FIELDS))
structref.define_proxy(FlatDataRef, FlatDataType, list(DATA_FIELDS))


@njit(cache=True)
def _new_model_ref(*fields):
    return FlatModelRef(*borrowed(fields))


@njit(cache=True)
def _new_data_ref(*fields):
    return FlatDataRef(*borrowed(fields))


class FlatModel:
    """The fields of MODEL_FIELDS as read-only arrays (attributes), and ``ref`` for the kernels."""

    def __init__(self, model):
        fields = {**_body_fields(model), **_cluster_fields(model), **_loop_fields(model),
                  **implicit_fields(model), **_link_fields(model),
                  'independent_v': _ints(model.independent_v),
                  'free_y': np.where(np.isin(np.arange(model.ny), model.held_y), 0.0, 1.0)}
        for value in fields.values():
            value.setflags(write=False)
        fields['gravity'] = np.array(model.gravity, dtype=float)
        fields['amplification_bound'] = np.array(model.amplification_bound, dtype=float)
        fields['singularity_threshold'], fields['d_condition_limit'] = (
            SINGULARITY_THRESHOLD, D_CONDITION_LIMIT)
        fields['nv'], fields['ny'] = model.nv, model.ny
        self.__dict__.update(fields)
        self.fields = fields                # the owner of the arrays the ref borrows (borrowed.py)
        self.nb, self.nc, self.nq = len(self.parent), len(self.kind), model.nq
        self.M, self.N = self.G_const.shape[1:]
        self.longest_tape = int(np.max(np.diff(self.implicit_tape, axis=1), initial=1))
        self.most_variables = int(np.max(np.diff(self.implicit_vars, axis=1), initial=1))
        self.link_index = {link: i for i, link in enumerate(model.links)}   # into Model.links
        self.ref = _new_model_ref(*(fields[name] for name in MODEL_FIELDS))

    def create_data(self, f_ext=None):
        """A fresh workspace for the kernels (one per thread), with f_ext (nb x 6) as its external
        forces."""
        return FlatData(self, f_ext)


class FlatData:
    """The buffers of DATA_FIELDS (attributes), and ``ref`` for the kernels; the links of a link
    call in and its results out (select_links, link_results)."""

    def __init__(self, flat, f_ext=None):
        nb, nc, N, M, nl, L = (flat.nb, flat.nc, flat.N, flat.M, len(flat.loop_row),
                               len(flat.link_body))
        R = flat.K_const.shape[1]
        shapes = {
            'Xup_E': (nb, 3, 3), 'Xup_r': (nb, 3), 'Xo_E': (nb, 3, 3), 'Xo_r': (nb, 3),
            'S': (nb, M, 6), 'U': (nb, M, 6), 'v': (nb, 6), 'a': (nb, 6), 'f': (nb, 6),
            'c': (nb, 6), 'IA': (nb, 6, 6), 'Ic': (nb, 10), 'G': (nc, M, N), 'g': (flat.nv,),
            'qd': (flat.nv,), 'qdd': (flat.nv,), 'L': (nc, M, M), 'V': (nc, M, 6), 'u': (flat.ny,),
            'z': (M,), 'F': (M, 6), 'SL': (M, 6), 'E3': (3, 3), 'tau': (flat.ny,),
            'ydd': (flat.ny,), 'H': (flat.ny, flat.ny), 'K': (nc, R, N), 'QR': (R, N + 1),
            'beta': (N,), 'joint_o': (nb, 6, 6), 'Psi_o': (nl, 6, 6), 'loop_a': (nl, 2, 3),
            'end_E': (nl, 2, 3, 3), 'end_r': (nl, 2, 3), 'q_body': (nb,),
            'jet': (flat.longest_tape + 2, max(8, flat.most_variables + 1)),
            'directions': (3, max(1, flat.most_variables)),
            'w6': (6,), 'info': (2,), 'fault': (3,),
            'zero_y': (flat.ny,), 'zero_f': (nb, 6), 'f_ext': (nb, 6), 'q_checked': (flat.nq,),
            'q_closed': (flat.nq,), 'yd_checked': (flat.ny,), 'ydd_checked': (flat.ny,),
            'tau_spanning': (flat.nv,), 'root_E': (nb, 3, 3), 'root_r': (nb, 3),
            'link_selection': (L,), 'link_R': (L, 3, 3), 'link_p': (L, 3),
            'link_J': (L, 6, flat.ny), 'link_bias': (L, 6),
        }
        fields = {name: np.zeros(shapes[name], dtype=np.int64 if name == 'link_selection'
                                 else float) for name in DATA_FIELDS}
        fields['G'][:] = flat.G_const          # LOOP clusters overwrite theirs at every call
        fields['q_closed'][:] = np.nan
        fields['root_E'][0] = np.eye(3)
        if f_ext is not None:
            fields['f_ext'] = f_ext
        self.__dict__.update(fields)
        self.fields = fields                   # the owner of the arrays the ref borrows
        self.ref = _new_data_ref(*(fields[name] for name in DATA_FIELDS))
        self._link_index, self._every_link = flat.link_index, np.arange(L)

    def select_links(self, links):
        """The number n of links (link names; None for every link) written into link_selection,
        or -1 where one of them is not a link name of the model, or where they outnumber the
        model's links (the rows of the results; a checked list names each link once)."""
        selection, index = self.link_selection, self._link_index
        if links is None:
            selection[:] = self._every_link
            return len(selection)
        if len(links) > len(selection):
            return -1
        for e, link in enumerate(links):
            i = index.get(link) if type(link) is str else None     # a str subclass: checked path
            if i is None:
                return -1
            selection[e] = i
        return len(links)

    def link_results(self, n, poses, jacobians, biases):
        """Copies of the results of the last link call of n links: (R, p, J, bias), those it was
        not asked None."""
        return (self.link_R[:n].copy() if poses else None,
                self.link_p[:n].copy() if poses else None,
                self.link_J[:n].copy() if jacobians else None,
                self.link_bias[:n].copy() if biases else None)


def _body_fields(model):
    nb = model.nb
    joint = np.array([-1] + [TYPES[t].code for t in model.joint_type[1:]])
    col = np.zeros(nb, dtype=np.int64)
    for c in model.cluster_list:
        for b in c.bodies:
            col[b] = c.col[b]
    tree = [_plucker_parts(X) for X in model.X_tree]
    inertia = np.array(model.inertia, dtype=float)
    axes = np.array([np.eye(3)] + [plane_frame(a).T for a in model.axis[1:]], dtype=float)
    size = np.abs(axes[:, 2])
    aligned = ((joint == REVOLUTE) & (np.count_nonzero(size, axis=1) == 1)
               & (size.max(axis=1) == 1.0))
    coordinate_axis = np.where(aligned, size.argmax(axis=1), -1)
    return {
        'joint': joint.astype(np.int64), 'parent': _ints(model.parent),
        'cluster': _ints(model.cluster_of), 'idx_q': _ints(model.idx_q), 'col': col, 'axes': axes,
        'coordinate_axis': coordinate_axis.astype(np.int64),
        'joint_nq': _ints(model.nq_body),
        'quaternion_at': _ints([-1] + [model.idx_q[i] + TYPES[t].quaternion_at
                                       if TYPES[t].quaternion_at >= 0 else -1
                                       for i, t in enumerate(model.joint_type[1:], 1)]),
        'tree_E': np.array([E for E, _ in tree]), 'tree_r': np.array([r for _, r in tree]),
        'inertia': inertia, 'rigid_inertia': _rigid_parameters(inertia),
    }


def _link_fields(model):
    """The frame ^linkX_body of every link of Model.links on its body."""
    frames = [model.link_frame[link] for link in model.links]
    parts = [_plucker_parts(X) for _, X in frames]
    return {'link_body': _ints([body for body, _ in frames]),
            'link_E': np.array([E for E, _ in parts]).reshape(-1, 3, 3),
            'link_r': np.array([r for _, r in parts]).reshape(-1, 3)}


def _rigid_parameters(inertia):
    """m, h, Ibar (upper triangle) of spatial inertias [[Ibar, h x], [-h x, m 1]]
    (spatial.spatial_inertia; lumped fixed links add round-off, hence the averages)."""
    m = np.trace(inertia[:, 3:, 3:], axis1=1, axis2=2) / 3
    hx = (inertia[:, :3, 3:] - inertia[:, 3:, :3]) / 2
    h = np.stack((hx[:, 2, 1], hx[:, 0, 2], hx[:, 1, 0]), axis=1)
    Ibar = (inertia[:, :3, :3] + inertia[:, :3, :3].transpose(0, 2, 1)) / 2
    rebuilt = np.zeros_like(inertia)
    rebuilt[:, :3, :3] = Ibar
    rebuilt[:, :3, 3:] = [skew(x) for x in h]
    rebuilt[:, 3:, :3] = -rebuilt[:, :3, 3:]
    rebuilt[:, 3:, 3:] = m[:, None, None] * np.eye(3)
    assert np.allclose(rebuilt, inertia, rtol=0.0,
                       atol=1e-12 * max(1.0, np.abs(inertia).max())), 'rigid bodies'
    return np.column_stack((m, h, Ibar[:, [0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))


def _cluster_fields(model):
    clusters = model.cluster_list
    nc = len(clusters)
    N = max(c.n for c in clusters)
    M = max(c.m for c in clusters)
    R = max([1] + [sum(con.rows for con in c.constraints) for c in clusters if not c.linear])
    fields = {
        'kind': np.zeros(nc, dtype=np.int64), 'output': np.zeros(nc, dtype=np.int64),
        'body_range': _ints(model.body_range), 'v_range': _ints(model.v_range),
        'y_range': _ints(model.y_range), 'y_support': np.zeros(nc, dtype=np.int64),
        'parent_y': np.zeros(model.ny, dtype=np.int64),
        'G_const': np.zeros((nc, M, N)), 'K_const': np.zeros((nc, R, N)),
        'active': np.zeros((nc, R), dtype=np.int64), 'n_active': np.zeros(nc, dtype=np.int64),
        'dependent': np.zeros((nc, N), dtype=np.int64),
        'independent': np.zeros((nc, N), dtype=np.int64),
        'qr_rows': np.zeros((nc, N, R), dtype=np.int64),
        'qr_n_rows': np.zeros((nc, N), dtype=np.int64),
        'qr_cols': np.zeros((nc, N, N), dtype=np.int64),
        'qr_n_cols': np.zeros((nc, N), dtype=np.int64),
    }
    for k, c in enumerate(clusters):
        outputs = set(c.output.values())
        if len(outputs) != 1:
            raise ModelError(f'cluster {quote(c.name)} hangs from several bodies '
                             f'{sorted(outputs)}; the compiled algorithms need one output body '
                             'per cluster')
        fields['output'][k] = outputs.pop()
        fields['kind'][k] = SINGLE if not c.constraints else COUPLED if c.linear else LOOP
        if c.linear:
            fields['G_const'][k, :c.m, :c.n] = model.G_constant[k].T
        fields['dependent'][k, :len(c.dependent)] = c.dependent
        fields['independent'][k, :c.m] = c.independent
        if fields['kind'][k] == LOOP:
            _coupling_rows(c, k, fields)
            _elimination(c.elimination, k, fields)
    parent, ranges = (np.array([model.cluster_of[o] for o in fields['output']]),  # -1: ground
                      fields['body_range'])
    assert np.all(parent < np.arange(nc)), 'a parent cluster precedes its children'
    assert (ranges[0, 0] == 1 and np.array_equal(ranges[1:, 0], ranges[:-1, 1])
            and ranges[-1, 1] == model.nb), 'bodies numbered cluster by cluster'
    last = np.zeros(nc, dtype=np.int64)         # the last independent velocity at or above k
    for k, (y0, y1) in enumerate(fields['y_range']):
        fields['y_support'][k] = ((fields['y_support'][parent[k]] if parent[k] >= 0 else 0)
                                  + clusters[k].m)
        above = last[parent[k]] if parent[k] >= 0 else -1
        fields['parent_y'][y0:y1] = np.arange(y0 - 1, y1 - 1)
        fields['parent_y'][y0:y1][:1] = above       # a cluster's first: the last above it
        last[k] = max(y1 - 1, above)
    fields['leaf'] = np.isin(np.arange(model.nb), fields['output'], invert=True).astype(np.int64)
    return fields


def _coupling_rows(cluster, k, fields):
    """K_const: the coupling rows of a LOOP cluster among its active rows; the active rows."""
    K = np.zeros((sum(con.rows for con in cluster.constraints), cluster.n))
    for row, con in cluster.first_rows():
        if isinstance(con, CouplingConstraint):
            K[row] = con.evaluate(None, None, cluster.col, cluster.n, None)[0][0]
    active = cluster.active_rows
    fields['n_active'][k] = len(active)
    fields['active'][k, :len(active)] = active
    fields['K_const'][k, :len(active), :cluster.n] = K[active]


def _elimination(plan, k, fields):
    """The steps of a LOOP cluster's sparse QR (elimination.py)."""
    for p, (rows, columns) in enumerate(zip(plan.rows, plan.columns)):
        fields['qr_n_rows'][k, p], fields['qr_n_cols'][k, p] = len(rows), len(columns)
        fields['qr_rows'][k, p, :len(rows)] = rows
        fields['qr_cols'][k, p, :len(columns)] = columns


def _loop_fields(model):
    """The loops of LOOP clusters, grouped by cluster (rows of LoopConstraint, constraints.py)."""
    loops, ranges = [], np.zeros((len(model.cluster_list), 2), dtype=np.int64)
    for k, c in enumerate(model.cluster_list):
        ranges[k, 0] = len(loops)
        if not c.linear:
            loops += c.loop_rows()
        ranges[k, 1] = len(loops)
    nl = len(loops)
    P = max([1] + [max(len(con.pred_path), len(con.succ_path)) for _, con, _, _ in loops])
    fields = {
        'loop_range': ranges, 'loop_row': np.zeros(nl, dtype=np.int64),
        'loop_Psi': np.zeros((nl, 6, 6)), 'loop_active': np.zeros((nl, 2), dtype=np.int64),
        'loop_E': np.zeros((nl, 3, 3)), 'loop_r': np.zeros((nl, 3)),
        'loop_path': np.zeros((nl, 2, P), dtype=np.int64),
        'loop_path_len': np.zeros((nl, 2), dtype=np.int64),
        'loop_ends': np.zeros((nl, 2), dtype=np.int64),
        'loop_cluster': np.repeat(np.arange(len(ranges)),
                                  ranges[:, 1] - ranges[:, 0]).astype(np.int64),
        'loop_universal': np.zeros(nl, dtype=np.int64), 'loop_axes': np.zeros((nl, 2, 3)),
    }
    for index, (row, con, mine, rows) in enumerate(loops):
        fields['loop_row'][index] = row
        fields['loop_active'][index] = (mine[0], mine[-1] + 1) if mine.size else (0, 0)
        fields['loop_Psi'][index, :mine.size] = con.Psi.T[rows]
        fields['loop_E'][index], fields['loop_r'][index] = _plucker_parts(con.X_P_pred)
        if con.rotation_rows == TURNING and rows.size and rows[0] == 0:
            fields['loop_universal'][index] = 1
            fields['loop_axes'][index] = (con.X_P_pred[:3, :3].T @ con.frame[:, 2],
                                          con.X_S_succ[:3, :3].T @ con.axis2)
        for side, path in enumerate((con.pred_path, con.succ_path)):
            fields['loop_path'][index, side, :len(path)] = path
            fields['loop_path_len'][index, side] = len(path)
            fields['loop_ends'][index, side] = path[-1] if path else con.nca
    return fields


def _plucker_parts(X):
    """(E, r) of a Plucker motion transform X = [[E, 0], [-E rx, E]]."""
    E = X[:3, :3]
    rx = -E.T @ X[3:, :3]
    return E, np.array((rx[2, 1], rx[0, 2], rx[1, 0]))


def _ints(values):
    return np.array(values, dtype=np.int64)
