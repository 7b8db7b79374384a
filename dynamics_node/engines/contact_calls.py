"""The compiled contact routes (kernels/contact_dynamics.py) of one contact set on one FastPath
workspace: projected inverse dynamics, contact bias forces and the exact route, one compiled call
each on the contacts' ContactBuffers (kernels/flat/contacts.py). A call returns OK or a fault of
kernels/contact_dynamics.py, which contacts.py names; the kinematics' statuses are raised here, as
every FastPath call raises them. Results stay in the buffers until the next call. ContactSet holds
a contact set's LCABA plan and workspace in one FastPath."""

import numpy as np

from ..algorithms.contacts import DELASSUS_CONDITION_LIMIT, DELASSUS_RESIDUAL_LIMIT
from ..bounds import VELOCITY_TOLERANCE
from ..contacts import (PSEUDOINVERSE_CUTOFF, RANK_CUTOFF, robot_size, STANDARD_GRAVITY,
                        UNACTUATED_TOLERANCE)
from ..kernels import calls, contact_dynamics as kernels, whole_body_calls
from ..kernels.borrowed import Borrowed
from ..kernels.flat.checks import call_context
from ..kernels.flat.contacts import ContactBuffers
from ..kernels.flat.lcaba import LcabaPlan
from ..kernels.flat.whole_body import WholeBodyBuffers
from ..spatial import SWAP_LINEAR_ANGULAR

FAULTS = frozenset((kernels.MOVES, kernels.VIOLATES, kernels.UNACTUATED,
                    kernels.NO_ACCELERATIONS, kernels.SINGULAR_DELASSUS, kernels.MISSES_ROWS))
KERNELS = {'contact_inverse_dynamics': kernels.inverse_dynamics,
           'contact_bias_forces': kernels.contact_bias_forces,
           'exact_forward_dynamics': kernels.exact_forward_dynamics,
           'fused_contact_bias_forces': calls.contact_bias_forces,
           'fused_forward_dynamics_exact': calls.forward_dynamics_exact,
           'fused_inverse_dynamics_contacts': calls.inverse_dynamics_contacts,
           'fused_forward_dynamics_derivatives_contacts':
               whole_body_calls.forward_dynamics_derivatives_contacts,
           'fused_inverse_dynamics_derivatives_contacts':
               whole_body_calls.inverse_dynamics_derivatives_contacts}


def buffers(model, plan):
    """ContactBuffers of the contacts of plan, with the tolerances of contacts.py and the robot's
    size (contacts.robot_size)."""
    mass, reach, rotational = robot_size(model)
    limits = np.zeros(kernels.LIMITS)
    for index, value in ((kernels.VELOCITY_TOLERANCE, VELOCITY_TOLERANCE),
                         (kernels.RANK_CUTOFF, RANK_CUTOFF),
                         (kernels.PSEUDOINVERSE_CUTOFF, PSEUDOINVERSE_CUTOFF),
                         (kernels.UNACTUATED_TOLERANCE, UNACTUATED_TOLERANCE),
                         (kernels.DELASSUS_CONDITION_LIMIT, DELASSUS_CONDITION_LIMIT),
                         (kernels.DELASSUS_RESIDUAL_LIMIT, DELASSUS_RESIDUAL_LIMIT),
                         (kernels.MASS, mass), (kernels.REACH, reach),
                         (kernels.STANDARD_GRAVITY, STANDARD_GRAVITY)):
        limits[index] = value
    return ContactBuffers(model, plan, limits, rotational[model.unactuated_y])


def buffers_type(fast):
    """numba type of the handle of a ContactBuffers (ContactCalls._b), typed from FastPath fast's
    own plan's."""
    return Borrowed(buffers(fast.model, fast.plan).ref).numba_type


def signatures(fast, model_type, data_type, forces, vector, whole_body):
    """The kernels' signatures on FastPath fast (typed from its own plan's buffers; whole_body:
    the type of a WholeBodyBuffers' handle)."""
    p, w = fast._p.numba_type, fast._w.numba_type
    b = buffers_type(fast)
    head = (model_type, data_type, p, w, b)
    return {'contact_inverse_dynamics': head + (vector, vector, vector, forces, vector),
            'contact_bias_forces': head + (vector, vector, forces, vector),
            'exact_forward_dynamics': head + (vector, vector, vector, forces),
            'fused_contact_bias_forces': (fast._x.numba_type, b, vector, vector, vector),
            'fused_forward_dynamics_exact': (fast._x.numba_type, b, vector, vector, vector),
            'fused_inverse_dynamics_contacts': (fast._x.numba_type, b, vector, vector, vector,
                                                vector),
            'fused_forward_dynamics_derivatives_contacts': (fast._x.numba_type, whole_body, b,
                                                            vector, vector, vector),
            'fused_inverse_dynamics_derivatives_contacts': (fast._x.numba_type, whole_body, b,
                                                            vector, vector, vector, vector)}


class ContactCalls:
    """The compiled routes of the contacts of a ContactSet entry on FastPath fast;
    ``buffers`` holds the results (efforts, lam, yd_c, ydd, gap, info) and fast.data.qdd the
    exact route's accelerations."""

    def __init__(self, fast, entry):
        self.fast, self.entry = fast, entry
        self.buffers = buffers(fast.model, entry.plan)
        self.qdd = fast.data.qdd                 # the exact route's spanning accelerations
        self.ydd = fast.data.ydd                 # and its independent ones, with derivatives
        self._b = Borrowed(self.buffers.ref)
        self.unit_weights = np.ones(fast.model.ny)
        self.derivative_buffers = self._w = None     # the derivatives' WholeBodyBuffers, at
        #                                              first use

    def inverse_dynamics(self, q, yd, ydd, f_ext, weights):
        fast, entry = self.fast, self.entry
        return self._status(fast._contact_inverse_dynamics(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, ydd, f_ext, weights))

    def contact_bias_forces(self, q, yd, f_ext, weights):
        fast, entry = self.fast, self.entry
        return self._status(fast._contact_bias_forces(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, f_ext, weights))

    # the whole public call in one compiled call each (calls.py), on inputs as Model got them,
    # weights checked (None: ones): OK, else not OK (Model's checked path names the error); the
    # results in buffers (and qdd)

    def fused_bias_forces(self, q, v, weights=None):
        """Model.contact_bias_forces(q, v, contacts, weights)."""
        return self.fast._fused_contact_bias_forces(
            self.entry.context, self._b, q, v, self.unit_weights if weights is None else weights)

    def fused_inverse_dynamics(self, q, v, a, weights=None):
        """Model.inverse_dynamics(q, v, a, contacts, weights=weights) (bias_forces,
        gravity_forces)."""
        return self.fast._fused_inverse_dynamics_contacts(
            self.entry.context, self._b, q, v, a,
            self.unit_weights if weights is None else weights)

    def fused_forward_dynamics(self, q, v, tau):
        """Model.forward_dynamics(q, v, tau, contacts, method='aba')."""
        return self.fast._fused_forward_dynamics_exact(self.entry.context, self._b, q, v, tau)

    def fused_forward_dynamics_derivatives(self, q, v, tau):
        """Model.forward_dynamics_derivatives(q, v, tau, contacts): the results in
        derivative_buffers (fd_y, fd_yd, H_inv) and ydd."""
        return self.fast._fused_forward_dynamics_derivatives_contacts(
            self.entry.context, self._derivatives(), self._b, q, v, tau)

    def fused_inverse_dynamics_derivatives(self, q, v, a, weights=None):
        """Model.inverse_dynamics_derivatives(q, v, a, contacts, weights): the results in buffers
        (dtau_y, dtau_yd, dtau_ydd)."""
        return self.fast._fused_inverse_dynamics_derivatives_contacts(
            self.entry.context, self._derivatives(), self._b, q, v, a,
            self.unit_weights if weights is None else weights)

    def _derivatives(self):
        """The handle of the derivatives' WholeBodyBuffers with the contacts' rows, made at first
        use (the other whole-body buffers shared with the workspace's)."""
        if self.derivative_buffers is None:
            fast = self.fast
            self.derivative_buffers = WholeBodyBuffers(
                fast.flat, self.buffers.rows, fast.whole_body().buffers)
            self._w = Borrowed(self.derivative_buffers.ref)
        return self._w

    def forward_dynamics(self, q, yd, tau, f_ext):
        fast, entry = self.fast, self.entry
        return self._status(fast._exact_forward_dynamics(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, tau, f_ext))

    def _status(self, status):
        if status and status not in FAULTS:
            self.fast._raise(status)
        return status


class ContactSet:
    """LCABA's plan with contacts (flat/lcaba.py) and its workspace in one FastPath, with the
    kernel handles, the fused calls' context and the buffers of contact_state and delassus."""

    def __init__(self, fast, contacts):
        model, self.frames = fast.model, contacts
        self.plan = plan = LcabaPlan(model, contacts)
        self.w = plan.create_data()
        self.p, self.w_ref = Borrowed(plan.ref), Borrowed(self.w.ref)
        self.context = Borrowed(call_context(fast._m, fast._d, fast._c, self.p, self.w_ref))
        self.settings = self.residual = None      # the ProximalSettings and accepted residual in
        #                                           w.settings
        self.calls = None                         # contact_calls.ContactCalls, at first use
        self.J, self.out = np.zeros((plan.rows, model.ny)), np.zeros((2, plan.rows))
        self.row0 = int(plan.con_row0[len(plan.constraints)])
        moving = sorted({b for c in contacts for b in (c.body1, c.body2) if b > 0})
        self.slot = {b: 6 * i for i, b in enumerate(moving)}
        n = len(moving)
        self.bodies = (np.array(moving, dtype=np.int64), np.tile(np.eye(6), (n, 1, 1)),
                       np.zeros((n, model.ny, 6)), np.zeros((6 * n, 6 * n)))
        # every row of every entry: (row among the contacts', entry, its row, body)
        pairs = [(int(plan.con_row0[c]) - self.row0 + j, e, j, int(plan.entry_body[e]))
                 for c in range(len(plan.constraints), len(plan.con_rows))
                 for e in range(*plan.con_entries[c]) for j in range(plan.con_rows[c])]
        self.row, self.entry, self.entry_row, self.body = (
            np.array(column, dtype=np.int64).reshape(-1) for column in zip(*pairs))
        self.moving = self.body > 0
        slots = [self.slot[b] for b in self.body[self.moving]]
        self.columns = np.array(slots, dtype=np.int64)[:, None] + np.arange(6)

    def pressing(self):
        """P (m x 6 bodies) with P Omega P^T the Delassus matrix: the rows K^b of each body, their
        columns in EFPA's [linear; angular] order."""
        P = np.zeros((self.plan.rows - self.row0, len(self.slot) * 6))
        m = self.moving
        P[self.row[m][:, None], self.columns] = (
            self.w.K[self.entry[m], self.entry_row[m]] @ SWAP_LINEAR_ANGULAR)
        return P

    def wrenches(self, forces):
        """sum_b K^b^T lambda (nb x 6) of the contact forces (m), on the rows in w.K."""
        f = np.zeros((self.plan.nb, 6))
        np.add.at(f, self.body, forces[self.row][:, None] * self.w.K[self.entry, self.entry_row])
        f[0] = 0.0                                 # the ground carries what it must
        return f
