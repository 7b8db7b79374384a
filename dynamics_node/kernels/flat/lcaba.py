"""The LCABA plan (Sathya & Carpentier 2025) compiled into flat arrays for the kernels of
kernels/lcaba.py.

``LcabaPlan(model, contacts)`` flattens what lcaba.py keeps in Python objects: the minimum-degree
elimination order and neighbour sets of ``elimination_plan``, the sparsity of the cost-to-go H (one
6x6 block per unordered pair of bodies that the constraints and the fill-in of eqs. 30c-30d, 34
ever couple, stored as H[min, max]), and the cut constraints as rows on bodies (entries): a loop
has two entries, its predecessor-side end A and successor-side end B (lcaba.cut_rows); a coupling
one per joint body and per parent body; a contact (algorithms/contacts.ContactFrames, given per
call, after the model's constraints) two, its body1 and body2. Entries on the ground (body 0) are
folded into k (eq. 35). A loop keeps its rows that are not identically zero, as the cluster ABA
does (_kept_rows; lcaba.py keeps all). ``create_data()`` preallocates every buffer the kernel
writes, so that a call allocates nothing.
"""

import weakref

import numpy as np
from numba import njit
from numba.experimental import structref

from ...algorithms.lcaba import elimination_plan
from ...multibody.constraints import CouplingConstraint, ImplicitConstraint, TURNING
from ..borrowed import borrowed
from ..cache import key_on_helpers
from .model import _plucker_parts, _StructType

key_on_helpers(__file__)                 # the field types come from borrowed.py

# name: meaning, shape (nb bodies, ncon constraints, ne entries, nl loops, nt terms, nk contacts)
PLAN_FIELDS = {
    'order': 'bodies in elimination order S^E (nb - 1)',
    'n_neighbours': 'size of N_i at the elimination of body i (nb)',
    'neighbours': 'N_i, first n_neighbours[i] entries (nb, N)',
    'slot': 'block of H[j, k] in data.H, -1 where H never couples j and k; H[i, i] is block i - 1 '
            '(nb, nb)',
    'idx_v': 'first spanning velocity of the joint of body i (nb)',
    'S': 'S[i, j]: column j of the motion subspace S_i of the joint of body i, body coordinates '
         '(nb, 6, 6)',
    'free': 'free[i, j]: 1.0, or 0.0 where column j of the joint of body i is locked '
            '(Model.locked_v) (nb, 6)',
    'con_rows': 'rows of constraint c that LCABA keeps (_kept_rows; ncon)',
    'con_row0': 'first row of constraint c in the multipliers (ncon)',
    'con_entries': 'entries [e0, e1) of constraint c (ncon, 2)',
    'con_loop': 'loop index of constraint c, -1 for a coupling or a contact (ncon)',
    'con_implicit': 'first implicit row (FlatModel implicit fields) of implicit constraint c, -1 '
                    'for the others (ncon)',
    'con_contact': 'contact index of constraint c, -1 for a loop or a coupling (ncon)',
    'con_terms': 'coupling terms [t0, t1) of constraint c (ncon, 2)',
    'entry_body': 'body of entry e (ne)',
    'loop_PsiT': 'kept rows Psi^T ^PX_pred of loop l, predecessor-body coordinates (nl, 6, 6)',
    'loop_universal': '1 for a universal loop whose first row, turning with both frames, is kept '
                      '(nl)',
    'loop_pred_E': 'rotation of ^PX_pred (nl, 3, 3)',
    'loop_succ_E': 'rotation of ^SX_succ (nl, 3, 3)',
    'loop_a1': 'universal loop: its axis a1 in P (nl, 3)',
    'loop_a2': 'universal loop: its axis2 a2 in S (nl, 3)',
    'loop_path': 'bodies below the NCA to the predecessor [0] and successor [1] end (nl, 2, P)',
    'loop_path_len': 'lengths of the two paths (nl, 2)',
    'term_body': 'joint body of coupling term t, or of implicit constraint variable t (nt)',
    'term_coefficient': 'coefficient of its joint velocity (nt)',
    'term_entry': 'entries of the joint body [0] and of its parent [1] (nt, 2)',
    'contact_E1': 'rotation of ^c1X_body1, the contact frame on its link\'s body (nk, 3, 3)',
    'contact_r1': 'translation of ^c1X_body1 (nk, 3)',
    'contact_E2': 'rotation of ^c2X_body2, the frame it is held to (nk, 3, 3; the world: unused)',
    'contact_r2': 'translation of ^c2X_body2 (nk, 3)',
    'contact_world': '1 where contact n is held to the world (body2 = 0, c2 = c1) (nk)',
    'contact_path': 'bodies below the NCA of body1 and body2 to body1 [0] and body2 [1] '
                    '(nk, 2, P)',
    'contact_path_len': 'lengths of the two paths (nk, 2)',
}

DATA_FIELDS = {    # name: meaning, shape
    'H': 'blocks of the cost-to-go H[min, max], ground frame (n_slots, 6, 6)',
    'f': 'forces of the cost-to-go, eliminated bodies folded in, ground frame (nb, 6)',
    'f_tree': 'f_ext - v x* I v, the tree part of the gradient (nb, 6)',
    'c': 'c_i = v_i x S_i qd_i, ground frame (nb, 6)',
    'K': 'rows (first con_rows) of entry e on its body acceleration, ground frame (ne, 6, 6)',
    'k': 'right-hand side of constraint c, ground entries folded in (ncon, 6)',
    'r': 'residual K a - k of constraint c (ncon, 6)',
    'lam': 'multipliers, the paper sign (rows)',
    'L': 'Cholesky factor L_i of D_i = S_i^T H_ii S_i, stored with 1/L_jj on its diagonal '
         '(nb, 6, 6)',
    'Z': 'Z[i, j]: row j of L_i^-1 U_i^T, U_i = H_ii S_i (nb, 6, 6)',
    'Y': 'Y[i, 6 n + j]: row j of L_i^-1 (H_{i,N_n} S_i)^T, neighbour n (nb, 6 N, 6)',
    'ubar': 'L_i^-1 u_i (nb, 6)',
    'a': 'body accelerations, ground frame (nb, 6)',
    'da': 'change of the body accelerations of a reduced sweep (nb, 6)',
    'qdd': 'spanning accelerations (nv)',
    'zero_c': 'zeros (nb, 6): no velocity product in a reduced sweep',
    'z': 'scratch of a rollout: L_i^T qdd_i, then qdd_i (6)',
    'result': 'iterations, residual ||K qdd - k||_inf, converged (3)',
    'info': 'body of a D_i that is not positive definite (1)',
    'violation': 'max |K qd| over the kept rows at the call\'s qd, for the velocity check of a '
                 'fused call (1)',
    'settings': 'mu, tolerance and max_iterations of the fused call, and the residual it accepts '
                'relative to max(1, ||qdd||_inf) (forward_dynamics.LCABA_RESIDUAL, inf: any) (4; '
                'FastPath writes them when they change)',
    'X0_E': 'rotation of ^iX_0, body i from the ground frame (nb, 3, 3)',
    'X0_r': 'translation of ^iX_0 (nb, 3)',
    'So': 'So[i, j]: column j of S_i in the ground frame (nb, 6, 6)',
    'rigid_o': 'the inertia of body i in the ground frame, as the 10 parameters of '
               'FlatModel.rigid_inertia (nb, 10)',
}


@structref.register
class LcabaPlanType(_StructType):
    """numba type of LcabaPlanRef."""


@structref.register
class LcabaDataType(_StructType):
    """numba type of LcabaDataRef."""


class LcabaPlanRef(structref.StructRefProxy):
    """The kernel's view of an LcabaPlan."""


class LcabaDataRef(structref.StructRefProxy):
    """The kernel's view of an LcabaData."""


structref.define_proxy(LcabaPlanRef, LcabaPlanType, list(PLAN_FIELDS))
structref.define_proxy(LcabaDataRef, LcabaDataType, list(DATA_FIELDS))


@njit(cache=True)
def _new_plan_ref(*fields):
    return LcabaPlanRef(*borrowed(fields))


@njit(cache=True)
def _new_data_ref(*fields):
    return LcabaDataRef(*borrowed(fields))


_PLANS = weakref.WeakKeyDictionary()


def lcaba_plan(model):
    """The model's LcabaPlan, built once and shared by threads."""
    if model not in _PLANS:
        _PLANS[model] = LcabaPlan(model)
    return _PLANS[model]


class LcabaPlan:
    """The fields of PLAN_FIELDS as read-only arrays (attributes), ``ref`` for the kernel and the
    constraints in the order of the multipliers: the model's loops and couplings, then the
    contacts (ContactFrames) the plan was built with."""

    def __init__(self, model, contacts=()):
        plan = elimination_plan(model, contacts)
        self.constraints, self.held, self.contacts = plan.constraints, plan.held, tuple(contacts)
        self.kept_rows = _kept_rows(model, plan.constraints)
        fields = {**_elimination_fields(model, plan),
                  **_constraint_fields(model, plan.constraints, self.kept_rows, contacts)}
        fields['slot'] = _slots(model, plan, fields)
        for value in fields.values():
            value.setflags(write=False)
        self.__dict__.update(fields)
        self.fields = fields                # the owner of the arrays the ref borrows (borrowed.py)
        self.nb, self.nv, self.rows = model.nb, model.nv, int(self.con_rows.sum())
        self.n_slots = int(self.slot.max()) + 1
        self.ref = _new_plan_ref(*(fields[name] for name in PLAN_FIELDS))

    def create_data(self):
        """A fresh workspace for the kernel (one per thread)."""
        return LcabaData(self)

    def multipliers(self, lam):
        """{constraint name: lambda} with H qdd + C - tau = sum K^T lambda (lcaba.LcabaResult);
        zero on the rows LCABA does not keep."""
        named = {}
        for con, r0, kept in zip(self.constraints, self.con_row0, self.kept_rows):
            named[con.name] = -lam[r0:r0 + len(kept)]
            if len(kept) < con.rows:
                named[con.name] = np.zeros(con.rows)
                named[con.name][kept] = -lam[r0:r0 + len(kept)]
        named.update({con.name: np.zeros(con.rows) for con in self.held})
        return named

    def contact_forces(self, lam):
        """The force of each contact (ContactFrames.cut_rows' rows), H qdd + C = tau + sum J_c^T
        lambda_c."""
        r0 = self.con_row0[len(self.constraints):]
        return tuple(-lam[r:r + contact.rows] for r, contact in zip(r0, self.contacts))


class LcabaData:
    """The buffers of DATA_FIELDS (attributes), and ``ref`` for the kernel."""

    def __init__(self, plan):
        nb, ne, ncon, N = (
            plan.nb, len(plan.entry_body), len(plan.con_rows), plan.neighbours.shape[1])
        shapes = {
            'H': (plan.n_slots, 6, 6), 'f': (nb, 6), 'f_tree': (nb, 6), 'c': (nb, 6),
            'K': (ne, 6, 6), 'k': (ncon, 6), 'r': (ncon, 6), 'lam': (plan.rows,), 'L': (nb, 6, 6),
            'Z': (nb, 6, 6), 'Y': (nb, 6 * N, 6), 'ubar': (nb, 6), 'a': (nb, 6), 'da': (nb, 6),
            'qdd': (plan.nv,), 'zero_c': (nb, 6), 'z': (6,), 'result': (3,), 'info': (1,),
            'violation': (1,), 'settings': (4,), 'X0_E': (nb, 3, 3), 'X0_r': (nb, 3),
            'So': (nb, 6, 6), 'rigid_o': (nb, 10),
        }
        fields = {name: np.zeros(shapes[name]) for name in DATA_FIELDS}
        self.__dict__.update(fields)
        self.fields = fields                   # the owner of the arrays the ref borrows
        self.ref = _new_data_ref(*(fields[name] for name in DATA_FIELDS))


def _elimination_fields(model, plan):
    N = max([1] + [len(n) for n in plan.neighbours])
    neighbours = np.zeros((model.nb, N), dtype=np.int64)
    for i, n in enumerate(plan.neighbours):
        neighbours[i, :len(n)] = n
    S, free = np.zeros((model.nb, 6, 6)), np.zeros((model.nb, 6))
    for i in range(1, model.nb):
        S[i, :model.nv_body[i]] = model.S[i].T
        free[i, model.free_joint_columns[i]] = 1.0
    return {'order': _ints(plan.order), 'n_neighbours': _ints([len(n) for n in plan.neighbours]),
            'neighbours': neighbours, 'idx_v': _ints(model.idx_v), 'S': S, 'free': free}


def _constraint_fields(model, constraints, kept_rows, contacts):
    rows, entries, loops, terms, bodies, PsiT, paths, universal = [], [], [], [], [], [], [], []
    implicit, first_row = [], _implicit_rows(model)
    for con, kept in zip(constraints, kept_rows):
        e0, t0 = len(bodies), len(terms)
        implicit.append(first_row.get(id(con), -1))
        if isinstance(con, ImplicitConstraint):          # a variable per term, as a coupling's
            for j in con.bodies:
                terms.append((j, 0.0, [_entry(bodies, e0, b) for b in (j, int(model.parent[j]))]))
            loops.append(-1)
        elif isinstance(con, CouplingConstraint):
            for j, coefficient in con.coefficients.items():
                terms.append((j, coefficient,
                              [_entry(bodies, e0, b) for b in (j, int(model.parent[j]))]))
            loops.append(-1)
        else:
            bodies += [_end(con.pred_path, con.nca), _end(con.succ_path, con.nca)]
            loops.append(len(PsiT))
            PsiT.append(np.zeros((6, 6)))
            PsiT[-1][:len(kept)] = (con.Psi.T @ con.X_P_pred)[kept]
            paths.append((con.pred_path, con.succ_path))
            turning = con.rotation_rows == TURNING and len(kept) > 0 and kept[0] == 0
            universal.append((turning, _plucker_parts(con.X_P_pred)[0], con.X_S_succ[:3, :3],
                              con.frame[:, 2],
                              con.axis2 if con.rotation_rows == TURNING else np.zeros(3)))
        rows.append(len(kept))
        entries.append((e0, len(bodies), t0, len(terms)))
    for contact in contacts:
        entries.append((len(bodies), len(bodies) + 2, len(terms), len(terms)))
        bodies += [contact.body1, contact.body2]
        rows.append(contact.rows)
        loops.append(-1)
    loop_path, loop_path_len = _packed_paths(paths)
    return {
        'con_rows': _ints(rows), 'con_row0': _ints(np.cumsum([0] + rows[:-1])[:len(rows)]),
        'con_entries': _ints([e[:2] for e in entries]).reshape(-1, 2), 'con_loop': _ints(loops),
        'con_terms': _ints([e[2:] for e in entries]).reshape(-1, 2), 'entry_body': _ints(bodies),
        'loop_PsiT': np.array(PsiT).reshape(-1, 6, 6), 'loop_path': loop_path,
        'loop_path_len': loop_path_len, 'term_body': _ints([t[0] for t in terms]),
        'term_coefficient': np.array([t[1] for t in terms], dtype=float),
        'term_entry': _ints([t[2] for t in terms]).reshape(-1, 2),
        'loop_universal': _ints([u[0] for u in universal]),
        'loop_pred_E': np.array([u[1] for u in universal]).reshape(-1, 3, 3),
        'loop_succ_E': np.array([u[2] for u in universal]).reshape(-1, 3, 3),
        'loop_a1': np.array([u[3] for u in universal]).reshape(-1, 3),
        'loop_a2': np.array([u[4] for u in universal], dtype=float).reshape(-1, 3),
        'con_contact': _ints([-1] * len(constraints) + list(range(len(contacts)))),
        'con_implicit': _ints(implicit + [-1] * len(contacts)),
        **_contact_fields(model, contacts),
    }


def _implicit_rows(model):
    """{id(constraint): its first row among the implicit rows of the FlatModel} (its rows in
    order, as flat/model.py numbers them)."""
    first, row = {}, 0
    for c in model.cluster_list:
        for con in c.constraints:
            if isinstance(con, ImplicitConstraint):
                first[id(con)] = row
                row += con.rows
    return first


def _contact_fields(model, contacts):
    """The contacts' frames and the paths of their two bodies below their nearest common
    ancestor (the ground for a contact with the world)."""
    contact_path, contact_path_len = _packed_paths(
        [_paths_below_common_ancestor(model, c.body1, c.body2) for c in contacts])
    first = [_plucker_parts(c.X1) for c in contacts]
    second = [_plucker_parts(np.eye(6) if c.X2 is None else c.X2) for c in contacts]
    return {
        'contact_E1': np.array([E for E, _ in first], dtype=float).reshape(-1, 3, 3),
        'contact_r1': np.array([r for _, r in first], dtype=float).reshape(-1, 3),
        'contact_E2': np.array([E for E, _ in second], dtype=float).reshape(-1, 3, 3),
        'contact_r2': np.array([r for _, r in second], dtype=float).reshape(-1, 3),
        'contact_world': _ints([c.X2 is None for c in contacts]),
        'contact_path': contact_path, 'contact_path_len': contact_path_len,
    }


def _packed_paths(pairs):
    """Pairs of body paths as one (n, 2, P) array, zero-padded, and their lengths (n, 2)."""
    P = max([1] + [len(path) for pair in pairs for path in pair])
    packed = np.zeros((len(pairs), 2, P), dtype=np.int64)
    lengths = np.zeros((len(pairs), 2), dtype=np.int64)
    for index, pair in enumerate(pairs):
        for side, path in enumerate(pair):
            packed[index, side, :len(path)] = path
            lengths[index, side] = len(path)
    return packed, lengths


def _paths_below_common_ancestor(model, body1, body2):
    """The bodies from below the nearest common ancestor of body1 and body2 down to each."""
    chains = []
    for body in (body1, body2):
        chain = [body]
        while chain[-1] > 0:
            chain.append(int(model.parent[chain[-1]]))
        chains.append(chain[::-1])                   # from the ground down
    common = 0
    while (common < min(map(len, chains)) and chains[0][common] == chains[1][common]):
        common += 1
    return chains[0][common:], chains[1][common:]


def _kept_rows(model, constraints):
    """The rows of each constraint that LCABA keeps: a loop's active rows
    (clusters.Cluster.loop_rows), those not identically zero; the others have K = 0 and k = 0 at
    every state (a planar revolute loop keeps 2 of its 5). A coupling's one row."""
    active = {id(con): rows for c in model.cluster_list if not c.linear
              for _, con, _, rows in c.loop_rows()}
    return [active.get(id(con), np.arange(con.rows)) for con in constraints]


def _entry(bodies, e0, body):
    """Entry of body within the constraint whose entries start at e0 (added on first use)."""
    if body not in bodies[e0:]:
        bodies.append(body)
    return e0 + bodies[e0:].index(body)


def _end(path, nca):
    return path[-1] if path else nca


def _slots(model, plan, fields):
    """Block index of every pair of bodies H ever couples: the diagonal (first, in body order), the
    bodies of one constraint (the penalty, eq. 25) and the fill-in of the elimination
    (eqs. 30c, 30d, 34)."""
    pairs = {(i, i) for i in range(1, model.nb)}
    for e0, e1 in fields['con_entries']:
        moving = [b for b in fields['entry_body'][e0:e1] if b > 0]
        pairs |= {(min(a, b), max(a, b)) for a in moving for b in moving}
    for i in plan.order:
        p, N = int(model.parent[i]), plan.neighbours[i]
        pairs |= {(min(p, j), max(p, j)) for j in N if p > 0}
        pairs |= {(min(j, k), max(j, k)) for j in N for k in N}
    slot = -np.ones((model.nb, model.nb), dtype=np.int64)
    for index, (a, b) in enumerate(sorted(pairs, key=lambda pair: (pair[0] != pair[1], pair))):
        slot[a, b] = slot[b, a] = index
    return slot


def _ints(values):
    return np.array(values, dtype=np.int64)
