"""The compiled contact routes (kernels/contact_dynamics.py) of one contact set on one FastPath
workspace: projected inverse dynamics, contact bias forces and the exact route, one compiled call
each on the contacts' ContactBuffers (kernels/flat/contacts.py). A call returns OK or a fault of
kernels/contact_dynamics.py, which contacts.py names; the kinematics' statuses are raised here, as
every FastPath call raises them. Results stay in the buffers until the next call."""

import numpy as np

from ..algorithms.contacts import DELASSUS_CONDITION_LIMIT, DELASSUS_RESIDUAL_LIMIT
from ..bounds import VELOCITY_TOLERANCE
from ..contacts import (PSEUDOINVERSE_CUTOFF, RANK_CUTOFF, robot_size, STANDARD_GRAVITY,
                        UNACTUATED_TOLERANCE)
from ..kernels import contact_dynamics as kernels
from ..kernels.borrowed import Borrowed
from ..kernels.flat.contacts import ContactBuffers

FAULTS = frozenset((kernels.MOVES, kernels.VIOLATES, kernels.UNACTUATED,
                    kernels.NO_ACCELERATIONS, kernels.SINGULAR_DELASSUS, kernels.MISSES_ROWS))
KERNELS = {'contact_inverse_dynamics': kernels.inverse_dynamics,
           'contact_bias_forces': kernels.contact_bias_forces,
           'exact_forward_dynamics': kernels.exact_forward_dynamics}


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


def signatures(fast, model_type, data_type, forces, vector):
    """The kernels' signatures on FastPath fast (typed from its own plan's buffers)."""
    p, w = fast._p.numba_type, fast._w.numba_type
    b = Borrowed(buffers(fast.model, fast.plan).ref).numba_type
    head = (model_type, data_type, p, w, b)
    return {'contact_inverse_dynamics': head + (vector, vector, vector, forces, vector),
            'contact_bias_forces': head + (vector, vector, forces, vector),
            'exact_forward_dynamics': head + (vector, vector, vector, forces)}


class ContactCalls:
    """The compiled routes of the contacts of a numba_engine._ContactSet entry on FastPath fast;
    ``buffers`` holds the results (efforts, lam, yd_c, ydd, gap, info) and fast.data.qdd the
    exact route's accelerations."""

    def __init__(self, fast, entry):
        self.fast, self.entry = fast, entry
        self.buffers = buffers(fast.model, entry.plan)
        self.qdd = fast.data.qdd                 # the exact route's spanning accelerations
        self._b = Borrowed(self.buffers.ref)

    def inverse_dynamics(self, q, yd, ydd, f_ext, weights):
        fast, entry = self.fast, self.entry
        return self._status(fast._contact_inverse_dynamics(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, ydd, f_ext, weights))

    def contact_bias_forces(self, q, yd, f_ext, weights):
        fast, entry = self.fast, self.entry
        return self._status(fast._contact_bias_forces(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, f_ext, weights))

    def forward_dynamics(self, q, yd, tau, f_ext):
        fast, entry = self.fast, self.entry
        return self._status(fast._exact_forward_dynamics(
            fast._m, fast._d, entry.p, entry.w_ref, self._b, q, yd, tau, f_ext))

    def _status(self, status):
        if status and status not in FAULTS:
            self.fast._raise(status)
        return status
