"""The buffers of the contact kernels (kernels/contact_dynamics.py) for one contact set on one
workspace: the contacts' rows in the LcabaPlan built with them (flat/lcaba.py), the Delassus
matrix's bodies and every scratch of the dense solves, preallocated so that a call allocates
nothing. ``ContactBuffers(model, plan, limits)`` builds them; ``ref`` is the kernels' view."""

import numpy as np
from numba import njit
from numba.experimental import structref

from ..borrowed import borrowed
from ..cache import key_on_helpers
from .model import _StructType

key_on_helpers(__file__)

# name: meaning, shape (m contact rows, P plan rows, n moving bodies of the contacts, ne plan
# entries, nu unactuated and na actuated coordinates, k = max(m, nu, 1), r = min(m, ny) the
# largest rank of J_c, md = m where m <= ny, else 0: the exact route refuses more rows)
FIELDS = {
    'sizes': 'first contact row in the plan, m, n (3; int)',
    'limits': 'the tolerances and the robot size (contact_dynamics.LIMITS)',
    'actuated': 'actuated independent coordinates (na; int)',
    'unactuated': 'unactuated independent coordinates (nu; int)',
    'rotational': '1.0 where an unactuated coordinate\'s force is a moment (nu)',
    'entry_slot': 'Delassus body of plan entry e, -1 on the ground or outside the contacts '
                  '(ne; int)',
    'body': 'the moving bodies of the contacts (n; int)',
    'X': 'identities: EFPA frames at the body origins (n, 6, 6)',
    'T': 'EFPA scratch (n, ny, 6)',
    'Omega': 'Lambda^-1 of the bodies (6 n, 6 n)',
    'J': 'rows of the plan in independent coordinates, the contacts\' from sizes[0] (P, ny)',
    'out': 'residual K a - k and velocity K v of the plan\'s rows (2, P)',
    'QR': 'J_c^T (ny x m) by columns (dense.py), factored with column pivoting (m, ny)',
    'beta': 'its reflectors (m)',
    'perm': 'its column order (m; int)',
    'Vu': 'the unactuated rows of V, the leading r columns of its Q: an orthonormal basis of '
          'the range of J_c^T (nu, m)',
    'Au': 'V_u^T by columns, factored (nu, r)',
    'beta_u': 'its reflectors (nu)',
    'perm_u': 'its column order (nu; int)',
    'N': 'null space of the unactuated rows in that basis (r, r)',
    'M': 'weighted actuated rows of the null space by columns, factored (r, na)',
    'beta_m': 'its reflectors (r)',
    'perm_m': 'its column order (r; int)',
    'B': 'scratch of the least-norm solves, by columns (r, k)',
    'beta_b': 'its reflectors (r)',
    'perm_b': 'its column order (r; int)',
    'Y': 'P Lambda^-1 of the Delassus matrix (md, 6 n)',
    'D': 'the Delassus matrix J_c H_y^-1 J_c^T (md, md)',
    'L': 'its Cholesky factor (md, md)',
    'JM': 'J_c H_y^-1 of the derivatives (contact_derivatives.py; m, ny)',
    'Z_rates': 'their scratch (m, ny)',
    'kept': 'the free coordinates, first nk (ny; int)',
    'kkt': 'the projected inverse dynamics\' optimality conditions by columns, factored '
           '(na + m + ny, na + m + ny)',
    'beta_k': 'its reflectors (na + m + ny)',
    'perm_k': 'its column order (na + m + ny; int)',
    'kkt_u': 'a right-hand side (na + m + ny)',
    'kkt_x': 'a solution (na + m + ny)',
    'kkt_rows': 'the efforts\' rows of its inverse (na, na + m + ny)',
    'mu': 'the multipliers of the free coordinates\' rows (ny)',
    'turning': 'd(J mu)/dq of the spanning tree (m, nv)',
    'dJ_mu': 'd(J mu)/dy (m, ny)',
    'dtau_y': 'd tau/dy of the projected efforts (ny, ny)',
    'dtau_yd': 'd tau/dyd (ny, ny)',
    'dtau_ydd': 'd tau/dydd (ny, ny)',
    'f': 'external forces plus the contact forces on the bodies (nb, 6)',
    'c': 'coordinates of J_c^T lambda in V (r)',
    't': 'scratch (max(ny, k))',
    'x': 'scratch (max(ny, k))',
    'y': 'scratch (max(ny, k))',
    'rhs': 'scratch (max(na, 1))',
    'efforts': 'the projected efforts (ny)',
    'lam': 'the contact forces, stacked (m)',
    'yd_c': 'the projected velocities (ny)',
    'ydd': 'the accelerations that keep the contacts (ny)',
    'gap': 'J_u^T lambda - tau_id,u of the unactuated rows (nu)',
    'info': 'the value a fault or a result reports (2)',
}
INTEGERS = {'sizes', 'actuated', 'unactuated', 'entry_slot', 'body', 'perm', 'perm_u', 'perm_m',
            'perm_b', 'kept', 'perm_k'}


@structref.register
class ContactBuffersType(_StructType):
    """numba type of ContactBuffersRef."""


class ContactBuffersRef(structref.StructRefProxy):
    """The kernels' view of a ContactBuffers."""


structref.define_proxy(ContactBuffersRef, ContactBuffersType, list(FIELDS))


@njit(cache=True)
def _new_ref(*fields):
    return ContactBuffersRef(*borrowed(fields))


class ContactBuffers:
    """The arrays of FIELDS (attributes) of the contacts of plan (an LcabaPlan built with them),
    and ``ref`` for the kernels; limits: contact_dynamics.LIMITS' values, rotational: per
    unactuated coordinate."""

    def __init__(self, model, plan, limits, rotational):
        first = len(plan.constraints)
        row0 = int(plan.con_row0[first]) if len(plan.con_rows) > first else plan.rows
        m, ny, nb = plan.rows - row0, model.ny, model.nb
        moving = sorted({int(b) for c in range(first, len(plan.con_rows))
                         for b in plan.entry_body[slice(*plan.con_entries[c])] if b > 0})
        slot = -np.ones(len(plan.entry_body), dtype=np.int64)
        for c in range(first, len(plan.con_rows)):
            for e in range(*plan.con_entries[c]):
                if plan.entry_body[e] > 0:
                    slot[e] = moving.index(int(plan.entry_body[e]))
        n, na, nu = len(moving), len(model.actuated_y), len(model.unactuated_y)
        k, r, wide = max(m, nu, 1), min(m, ny), max(ny, m, nu, 1)
        md = m if m <= ny else 0
        values = {
            'sizes': [row0, m, n], 'limits': limits, 'actuated': model.actuated_y,
            'unactuated': model.unactuated_y, 'rotational': rotational, 'entry_slot': slot,
            'body': moving, 'X': np.tile(np.eye(6), (n, 1, 1)),
        }
        shapes = {
            'T': (n, ny, 6), 'Omega': (6 * n, 6 * n), 'J': (plan.rows, ny), 'out': (2, plan.rows),
            'QR': (m, ny), 'beta': (m,), 'perm': (m,), 'Vu': (nu, m), 'Au': (nu, r),
            'beta_u': (nu,), 'perm_u': (nu,), 'N': (r, r), 'M': (r, na), 'beta_m': (r,),
            'perm_m': (r,), 'B': (r, k), 'beta_b': (r,), 'perm_b': (r,), 'Y': (md, 6 * n),
            'D': (md, md), 'L': (md, md), 'JM': (m, ny), 'Z_rates': (m, ny),
            'kept': (ny,), 'kkt': (na + m + ny, na + m + ny), 'beta_k': (na + m + ny,),
            'perm_k': (na + m + ny,), 'kkt_u': (na + m + ny,), 'kkt_x': (na + m + ny,),
            'kkt_rows': (na, na + m + ny),
            'mu': (ny,), 'turning': (m, model.nv), 'dJ_mu': (m, ny),
            'dtau_y': (ny, ny), 'dtau_yd': (ny, ny), 'dtau_ydd': (ny, ny), 'f': (nb, 6),
            'c': (r,), 't': (wide,),
            'x': (wide,), 'y': (wide,), 'rhs': (max(na, 1),), 'efforts': (ny,), 'lam': (m,),
            'yd_c': (ny,), 'ydd': (ny,), 'gap': (nu,), 'info': (2,),
        }
        fields = {name: np.zeros(shapes[name], dtype=np.int64 if name in INTEGERS else float)
                  for name in shapes}
        fields.update({name: np.array(value, dtype=np.int64 if name in INTEGERS else float)
                       for name, value in values.items()})
        fields = {name: fields[name] for name in FIELDS}
        self.__dict__.update(fields)
        self.fields = fields                   # the owner of the arrays the ref borrows
        self.rows = m
        self.ref = _new_ref(*(fields[name] for name in FIELDS))
