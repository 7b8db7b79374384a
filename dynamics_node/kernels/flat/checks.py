"""What the compiled state checks (kernels/checks.py) and the compiled completion
(kernels/completion.py) need beyond the FlatModel, as flat arrays.

The loops in the order of FlatModel's loop fields (LOOP clusters in order, their loops in order)
with the data of LoopConstraint.residual: both loop frames on their bodies, the rows of the loop
type, the axis frame and a universal loop's axis2;
and every coupling as a sparse row of A q + b = 0; the sparse velocity rows A v = 0 of the
coupling-only clusters (LinearConstraints; those of LOOP clusters are rows of their K).
"""

import weakref

import numpy as np
from numba import njit
from numba.experimental import structref

from ...algorithms import completion
from ...joint_types import TYPES
from ...algorithms.completion import split_spin_column
from ...multibody.constraints import CouplingConstraint, LoopConstraint, TURNING
from ... import bounds
from ..borrowed import borrowed
from ..cache import key_on_helpers
from ..checks import ACROSS_AXIS, ALL, ALONG_AXIS, AXES_PERPENDICULAR, LOG, NONE, TURNED_AXIS
from ..completion import (CHUNK_STEPS_AT, CONTINUATION_STEP_AT, DEPENDENT, HALVINGS_AT,
                          INDEPENDENT, MAX_ITERATIONS_AT, SLOW_RATIO_AT, SLOW_STEPS_AT, SPLIT,
                          TOLERANCE_AT)
from .. import checks
from .model import _plucker_parts, _StructType

key_on_helpers(__file__)     # call_context takes Borrowed handles, frame_set borrows (borrowed.py)

# LoopConstraint.residual's rows by the loop type's constrained directions (constraints.py)
ROTATION_MODE = {'e1 e2': TURNED_AXIS, 'all': LOG, '': NONE, 'a1 x a2': AXES_PERPENDICULAR}
POSITION_MODE = {'all': ALL, 'e1 e2': ACROSS_AXIS, 'axis': ALONG_AXIS}

CHECK_FIELDS = {   # name: meaning, shape (nl loops, nr coupling rows)
    'rotation_mode': 'ROTATION_MODE of loop l (nl)',
    'position_mode': 'POSITION_MODE of loop l (nl)',
    'axis2': 'universal loop: its axis2 a2 in S (nl, 3)',
    'succ_E': 'rotation of ^SX_succ, loop frame S on the successor body (nl, 3, 3)',
    'succ_r': 'translation of ^SX_succ (nl, 3)',
    'frame': 'columns e1, e2, axis of the loop joint, frame P (nl, 3, 3)',
    'q_rows': 'coupling rows [q_rows[r], q_rows[r + 1]) of q_index, q_coefficient: every coupling '
              '(nr + 1)',
    'q_index': 'position index of each term',
    'q_coefficient': 'its coefficient; row r is sum coefficient q[index] + b[r] = 0',
    'b': 'offsets of the couplings (nr)',
    'v_rows': 'rows of v_index, v_coefficient: the couplings of coupling-only clusters '
              '(LinearConstraints.A_v)',
    'v_index': 'velocity index of each term',
    'v_coefficient': 'its coefficient; row r is sum coefficient v[index] = 0',
    'v_cluster': 'cluster index of each velocity row',
    'limits': 'bounds (bounds.py) and tolerances (validation.py) of the public calls, at the '
              'indices of compiled_checks (6)',
    'coupling_cluster': 'cluster of coupling row r of q_rows (nr)',
    'coupling_row': 'its row in the K (and phi) of its cluster (nr)',
    'independent_q': 'q entries of the independent positions (Model.independent_q)',
    'coupled_q': 'q entries solved as D q + d: the dependent joints of coupling-only clusters '
                 '(LinearConstraints)',
    'coupled_D': 'D (len(coupled_q), nq)',
    'coupled_d': 'd (len(coupled_q))',
    'role': 'per body: INDEPENDENT, DEPENDENT or SPLIT joint (Model.joint_role; 0 for the ground)',
    'completion_compiled': '1 where compiled_completion closes every loop cluster (dependent and '
                           'split joints revolute, prismatic or spherical, independent ones '
                           '1-DoF), else 0',
    'completion': 'completion.py constants at the indices of compiled_completion (7)',
    'reference': 'the reference configuration (Model.reference_positions) (nq)',
    'spin': 'per body: the local independent column of a split joint\'s idle spin '
            '(completion.split_spin_column), else -1',
}

SCRATCH_FIELDS = {
    'worst': 'largest velocity violation, its cluster index, largest velocity (3)',
    'rows': 'phi of the cluster being closed, all its rows; of every loop at its rows in '
            'accept_positions (R)',
    'phi': 'its active rows (R)',
    'trial': 'the active rows at a trial step (R)',
    'step': 'Newton step over the dependent columns (N)',
    'start': 'positions before a trial step (nq)',
    'target': 'positions the continuation moves to (nq)',
    'origin': 'positions it moves from (nq)',
    'entry': 'positions before a continuation (nq)',
    'saved': 'positions before a continuation step (nq)',
    'predicted': 'G_k dy, the predicted change of a cluster\'s joints per unit of the way (N)',
    'dy': 'the change of its independent joints per unit of the way (M)',
    'failure': 'the cluster, reason, fraction of the way and value of a failed completion (4)',
    'partial': 'the positions a failed continuation reached (nq)',
}


@structref.register
class CheckPlanType(_StructType):
    """numba type of CheckPlanRef."""


class CheckPlanRef(structref.StructRefProxy):
    """The kernels' view of a CheckPlan (its fields and a scratch workspace)."""


structref.define_proxy(CheckPlanRef, CheckPlanType, list(CHECK_FIELDS) + list(SCRATCH_FIELDS))


@njit(cache=True)
def _new_check_ref(*fields):
    return CheckPlanRef(*borrowed(fields))


@structref.register
class CallContextType(_StructType):
    """numba type of CallContextRef."""


class CallContextRef(structref.StructRefProxy):
    """A workspace's FlatModel, FlatData, CheckPlan, LcabaPlan and LcabaData views (m, d, c, p, w)
    as the one argument of the fused public calls and the completion (kernels/calls.py,
    kernels/completion.py): a call from Python unboxes one structref instead of three to five."""


structref.define_proxy(CallContextRef, CallContextType, ['m', 'd', 'c', 'p', 'w'])


@structref.register
class FrameSetType(_StructType):
    """numba type of FrameSetRef."""


class FrameSetRef(structref.StructRefProxy):
    """The links of an inverse_osim call as one argument: their bodies, ^frameX_body, the T buffer
    and the output Omega (efpa.efpa); FastPath.frame_set keeps the arrays alive."""


structref.define_proxy(FrameSetRef, FrameSetType, ['body', 'X', 'T', 'Omega'])


@njit(cache=True)
def frame_set(body, X, T, Omega):
    return FrameSetRef(*borrowed((body, X, T, Omega)))


@njit(cache=True)
def call_context(m, d, c, p, w):
    return CallContextRef(m, d, c, p, w)


_PLANS = weakref.WeakKeyDictionary()


def check_plan(model):
    """The model's CheckPlan, built once (the kernels' scratch is per workspace: create_ref)."""
    if model not in _PLANS:
        _PLANS[model] = CheckPlan(model)
    return _PLANS[model]


class CheckPlan:
    """The fields of CHECK_FIELDS as read-only arrays (attributes)."""

    def __init__(self, model):
        loops = [con for c in model.cluster_list if not c.linear for con in c.constraints
                 if isinstance(con, LoopConstraint)]
        nl = len(loops)
        cluster_index = {c.name: i for i, c in enumerate(model.cluster_list)}
        fields = {
            'rotation_mode': _ints([ROTATION_MODE[TYPES[con.kind].loop_rows[0]] for con in loops]),
            'position_mode': _ints([POSITION_MODE[TYPES[con.kind].loop_rows[1]] for con in loops]),
            'axis2': np.array([con.axis2 if con.rotation_rows == TURNING else np.zeros(3)
                               for con in loops], dtype=float).reshape(nl, 3),
            'succ_E': np.zeros((nl, 3, 3)), 'succ_r': np.zeros((nl, 3)),
            'frame': np.array([con.frame for con in loops]).reshape(nl, 3, 3),
            'v_cluster': np.array([cluster_index[name] for name in model.couplings.clusters],
                                  dtype=np.int64)}
        couplings = [con for c in model.cluster_list for con in c.constraints
                     if isinstance(con, CouplingConstraint)]
        A_q = np.zeros((len(couplings), model.nq))
        for row, con in enumerate(couplings):
            for body, coefficient in con.coefficients.items():
                A_q[row, model.idx_q[body]] += coefficient
        fields['b'] = np.array([con.offset for con in couplings], dtype=float)
        fields['q_rows'], fields['q_index'], fields['q_coefficient'] = _sparse_rows(A_q)
        fields['v_rows'], fields['v_index'], fields['v_coefficient'] = _sparse_rows(
            model.couplings.A_v)
        for index, con in enumerate(loops):
            fields['succ_E'][index], fields['succ_r'][index] = _plucker_parts(con.X_S_succ)
        fields.update(_completion_fields(model, couplings))
        fields['limits'] = np.zeros(6)
        for index, value in ((checks.POSITION_BOUND, bounds.POSITION),
                             (checks.VELOCITY_BOUND, bounds.VELOCITY),
                             (checks.ACCELERATION_BOUND, bounds.ACCELERATION),
                             (checks.FORCE_BOUND, bounds.FORCE),
                             (checks.POSITION_TOLERANCE, bounds.POSITION_TOLERANCE),
                             (checks.VELOCITY_TOLERANCE, bounds.VELOCITY_TOLERANCE)):
            fields['limits'][index] = value
        for value in fields.values():
            value.setflags(write=False)
        self.fields = fields
        self.__dict__.update(fields)
        self.loop_clusters = [c for c in model.cluster_list if not c.linear]
        self.nq = model.nq

    def create_ref(self):
        """The kernels' view with a fresh scratch workspace (one per thread), and that workspace
        (its 'worst' is the output of velocity_violation), which the caller keeps as long as the
        view."""
        R = max([1] + [sum(con.rows for con in c.constraints) for c in self.loop_clusters])
        N = max([1] + [c.n for c in self.loop_clusters])
        M = max([1] + [c.m for c in self.loop_clusters])
        scratch = {'worst': np.zeros(3), 'rows': np.zeros(R), 'phi': np.zeros(R),
                   'trial': np.zeros(R), 'step': np.zeros(N), 'predicted': np.zeros(N),
                   'dy': np.zeros(M), 'failure': np.zeros(4)}
        scratch.update({name: np.zeros(self.nq)
                        for name in ('start', 'target', 'origin', 'entry', 'saved', 'partial')})
        fields = ([self.fields[name] for name in CHECK_FIELDS]
                  + [scratch[name] for name in SCRATCH_FIELDS])
        return _new_check_ref(*fields), scratch


def _completion_fields(model, couplings):
    """The fields of compiled_completion: where the couplings' rows go in their clusters' phi, the
    explicit couplings, the joints' roles, whether the kernel can close the loops, and
    completion.py's constants."""
    row_of = {con.name: (c.index, row) for c in model.cluster_list for row, con in c.first_rows()}
    loop_joints = [(model.joint_type[b], model.joint_role[b])
                   for c in model.cluster_list if not c.linear for b in c.bodies]
    compiled = all(role in TYPES[kind].compiled_completion for kind, role in loop_joints)
    spin = np.full(model.nb, -1, dtype=np.int64)   # the idle free column of a split joint, else -1
    for cluster in model.cluster_list:
        for b in cluster.bodies:
            a = split_spin_column(model, cluster, b)
            if a is not None:
                spin[b] = a
    fields = {'coupling_cluster': _ints([row_of[con.name][0] for con in couplings]),
              'coupling_row': _ints([row_of[con.name][1] for con in couplings]),
              'independent_q': _ints(model.independent_q),
              'coupled_q': _ints(model.couplings.dependent),
              'coupled_D': np.array(model.couplings.D, dtype=float).reshape(-1, model.nq),
              'coupled_d': np.array(model.couplings.d, dtype=float),
              'role': _ints([{'independent': INDEPENDENT, 'dependent': DEPENDENT,
                              'split': SPLIT}.get(role, 0) for role in model.joint_role]),
              'completion_compiled': _ints([1 if compiled else 0]), 'completion': np.zeros(7),
              'spin': spin, 'reference': np.array(model.reference_positions, dtype=float)}
    for index, value in ((TOLERANCE_AT, completion.TOLERANCE),
                         (MAX_ITERATIONS_AT, completion.MAX_ITERATIONS),
                         (CONTINUATION_STEP_AT, completion.CONTINUATION_STEP),
                         (CHUNK_STEPS_AT, completion.CHUNK_STEPS),
                         (HALVINGS_AT, completion.HALVINGS),
                         (SLOW_RATIO_AT, completion.SLOW_RATIO),
                         (SLOW_STEPS_AT, completion.SLOW_STEPS)):
        fields['completion'][index] = value
    return fields


def _sparse_rows(A):
    """Row pointers, column indices and values of the non-zeros of A, row by row."""
    rows, columns = np.nonzero(A)
    return (np.searchsorted(rows, np.arange(A.shape[0] + 1)).astype(np.int64),
            columns.astype(np.int64), A[rows, columns].astype(float))


def _ints(values):
    return np.array(values, dtype=np.int64)
