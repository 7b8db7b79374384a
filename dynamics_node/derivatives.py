"""The first-order derivatives of a Model's dynamics (Derivatives, a base of Model), with respect
to the independent coordinates (algorithms/derivatives.py).

A position perturbation dy moves the independent joints and the loops' dependent joints follow on
the reference branch (dq/dy = G); a floating base (or a spherical joint) is perturbed on the right
in its tangent space, M exp(dy), as pinocchio.integrate. The derivatives hold yd and ydd (or tau_y)
while the positions move, so that v = G yd and the loops' bias g change with them; dydd/dtau is
with respect to tau_y (it is H_y^-1).
"""

from collections import namedtuple

import numpy as np

from .algorithms import derivatives
from . import contacts as contact_routes
from .errors import LCABA_ADVICE, ModelError, SingularConfigurationError
from .faults import FORWARD_DERIVATIVES, INVERSE_DERIVATIVES
from .kernels.codes import OK
from .validation import (accepted_weights, check_finite, checked_weights, external_forces,
                         independent_velocities, positions, vector)
from . import bounds

InverseDynamicsDerivatives = namedtuple('InverseDynamicsDerivatives', 'dtau_dy dtau_dyd H')
InverseDynamicsDerivatives.__doc__ = """dtau_y/dy, dtau_y/dyd and H_y = dtau_y/dydd, ny x ny
each, rows and columns in independent_joint_names order."""
ForwardDynamicsDerivatives = namedtuple('ForwardDynamicsDerivatives', 'dydd_dy dydd_dyd H_inv')
ForwardDynamicsDerivatives.__doc__ = """dydd/dy, dydd/dyd and dydd/dtau_y = H_y^-1, ny x ny
each."""
ForwardDynamicsDerivativesInfo = namedtuple('ForwardDynamicsDerivativesInfo',
                                            ForwardDynamicsDerivatives._fields + ('ydd',))
ForwardDynamicsDerivativesInfo.__doc__ = """The ForwardDynamicsDerivatives and the independent
accelerations ydd (ny) at which they hold."""


def accepted_wrenches(model, data, wrenches):
    """True once the wrenches are the workspace's external forces (validation.external_forces),
    False where they are refused: a fused call then leaves the checked path to name the first
    fault in the order of the inputs, as validation.accepted_weights does for weights."""
    try:
        external_forces(model, data, wrenches)
        return True
    except ModelError:
        return False


def accepted(entry, q, v, x):
    """The common call: True where the compiled entry (a whole-body call) returns OK on float64
    vectors; False where it declines, or takes inputs of other types, which the checked path
    then converts or names."""
    try:
        return entry(q, v, x) == OK
    except TypeError:
        return False


def computed(buffers, ydd, info):
    """ForwardDynamicsDerivatives (with info, ForwardDynamicsDerivativesInfo) of copies of a
    compiled call's buffers fd_y, fd_yd, H_inv and of ydd."""
    result = (buffers.fd_y.copy(), buffers.fd_yd.copy(), buffers.H_inv.copy())
    if info:
        return ForwardDynamicsDerivativesInfo(*result, ydd.copy())
    return ForwardDynamicsDerivatives(*result)


def without_lcaba_advice(error):
    """A singular configuration's error without its advice to take LCABA, which has no
    derivatives here."""
    return SingularConfigurationError(str(error).removesuffix(LCABA_ADVICE))


class Derivatives:
    """Model's derivative calls (module docstring)."""

    def inverse_dynamics_derivatives(self, q, v, a, wrenches=None, contacts=None, weights=None):
        """InverseDynamicsDerivatives (dtau_y/dy, dtau_y/dyd, dtau_y/dydd = H_y) of
        inverse_dynamics at spanning positions q (loops closed), velocities v and accelerations a
        (spanning, consistent, or independent) and wrenches {link: (force, torque)} (link frame,
        held in it as the link moves).

        contacts (a Contact or a list of them, which v and a keep): the derivatives of the
        projected inverse dynamics' efforts (inverse_dynamics with contacts and weights), the
        third then dtau/dydd; SingularConfigurationError for a redundant contact set, whose
        forces are not determined."""
        data = self._local.data
        if wrenches is contacts is weights is None and not data.f_ext_set:     # the common call
            calls = data.whole_body
            if accepted(calls.inverse_dynamics_derivatives, q, v, a):
                return InverseDynamicsDerivatives(calls.d_y.copy(), calls.d_yd.copy(),
                                                  calls.d_ydd.copy())
        try:
            return self._inverse_dynamics_derivatives(q, v, a, wrenches, contacts, weights)
        except SingularConfigurationError as error:
            raise without_lcaba_advice(error) from None

    def _inverse_dynamics_derivatives(self, q, v, a, wrenches, contacts, weights):
        data = self._local.data
        arguments = (q, v, a)
        if contacts is not None:                  # contacts resolved before: one compiled call
            fused = self._fused_inverse_derivatives(data, q, v, a, wrenches, contacts, weights)
            if fused is not None:
                return fused
        frames = None if contacts is None else contact_routes.resolve(self, contacts)
        if not frames:
            if contacts is not None:                   # no contacts: weights still checked
                checked_weights(self, weights)
            external_forces(self, data, wrenches)
            calls = data.whole_body
            self._whole_body(calls, calls.inverse_dynamics_derivatives, INVERSE_DERIVATIVES,
                             arguments)
            return InverseDynamicsDerivatives(calls.d_y.copy(), calls.d_yd.copy(),
                                              calls.d_ydd.copy())
        result = self.inverse_dynamics(q, v, a, wrenches, contacts, info=True, weights=weights)
        fused = self._fused_inverse_derivatives(data, q, v, a, wrenches, contacts,
                                                weights)              # the set now resolved
        if fused is not None:
            return fused
        q, yd, ydd = self._checked_state(data, q, v, a)
        external_forces(self, data, wrenches)
        derivative = derivatives.projected_inverse_dynamics_derivatives(
            self, data, q, yd, ydd, frames, result.efforts,
            result.contact_forces, checked_weights(self, weights))
        check_finite(self, INVERSE_DERIVATIVES.what,
                     lambda: INVERSE_DERIVATIVES.inputs(self, arguments), *derivative)
        return InverseDynamicsDerivatives(*derivative)

    def forward_dynamics_derivatives(self, q, v, tau, wrenches=None, contacts=None, info=False):
        """ForwardDynamicsDerivatives (dydd/dy, dydd/dyd, dydd/dtau_y = H_y^-1) of the cluster
        ABA's accelerations at q, v and generalized forces tau (spanning, projected with G^T, or
        independent); info: a ForwardDynamicsDerivativesInfo, which adds ydd.

        contacts (a Contact or a list of them): the derivatives of the exact route's constrained
        accelerations (forward_dynamics with method 'aba'), dydd/dtau_y then the constrained
        H^-1 - H^-1 J^T D^-1 J H^-1; a redundant contact set is refused by name, as that route
        refuses it."""
        data = self._local.data
        if wrenches is contacts is None and info is False and not data.f_ext_set:  # common call
            calls = data.whole_body
            if accepted(calls.forward_dynamics_derivatives, q, v, tau):
                return computed(calls, calls.ydd, False)
        try:
            return self._forward_dynamics_derivatives(q, v, tau, wrenches, contacts, info)
        except SingularConfigurationError as error:
            raise without_lcaba_advice(error) from None

    def _forward_dynamics_derivatives(self, q, v, tau, wrenches, contacts, info):
        data = self._local.data
        arguments = (q, v, tau)
        if contacts is not None:                  # contacts resolved before: one compiled call
            fused = self._fused_forward_derivatives(data, q, v, tau, wrenches, contacts, info)
            if fused is not None:
                return fused
        frames = None if contacts is None else contact_routes.resolve(self, contacts)
        if not frames:
            external_forces(self, data, wrenches)
            calls = data.whole_body
            self._whole_body(calls, calls.forward_dynamics_derivatives, FORWARD_DERIVATIVES,
                             arguments)
            return computed(calls, calls.ydd, info)
        exact = self.forward_dynamics(q, v, tau, wrenches, contacts, method='aba', info=True)
        fused = self._fused_forward_derivatives(data, q, v, tau, wrenches, contacts,
                                                info)                 # the set now resolved
        if fused is not None:
            return fused
        q, yd, _ = self._checked_state(data, q, v, tau)
        external_forces(self, data, wrenches)
        ydd = exact.acceleration[self.independent_v]
        result = derivatives.constrained_forward_dynamics_derivatives(
            self, data, q, yd, ydd, frames, exact.contact_forces)
        check_finite(self, FORWARD_DERIVATIVES.what,
                     lambda: FORWARD_DERIVATIVES.inputs(self, arguments), *result)
        if info:
            return ForwardDynamicsDerivativesInfo(*result, ydd)
        return ForwardDynamicsDerivatives(*result)

    def _fused_inverse_derivatives(self, data, q, v, a, wrenches, contacts, weights):
        """The projected inverse dynamics' derivatives in one compiled call, where the engine has
        it for contacts resolved before and the weights and wrenches are accepted; else None."""
        w = accepted_weights(self, weights)
        if w is False or not accepted_wrenches(self, data, wrenches):
            return None
        fused = data.engine.fused_contacts('fused_inverse_dynamics_derivatives', contacts,
                                           q, v, a, w)
        if fused is None:
            return None
        b = fused[0].buffers
        return InverseDynamicsDerivatives(b.dtau_y.copy(), b.dtau_yd.copy(), b.dtau_ydd.copy())

    def _fused_forward_derivatives(self, data, q, v, tau, wrenches, contacts, info):
        """The exact route's derivatives in one compiled call, as _fused_inverse_derivatives."""
        if not accepted_wrenches(self, data, wrenches):
            return None
        fused = data.engine.fused_contacts('fused_forward_dynamics_derivatives', contacts,
                                           q, v, tau)
        if fused is None:
            return None
        return computed(fused[0].derivative_buffers, fused[0].ydd, info)

    def _checked_state(self, data, q, v, x):
        """q, yd and the independent part of x, after a call with contacts checked these inputs
        (spanning accelerations among them keep the loops)."""
        sizes = {self.nv: 'spanning', self.ny: 'independent'}
        q = positions(self, data, q)
        yd = independent_velocities(self, data, vector(v, 'v', sizes, bounds.VELOCITY))
        x = np.asarray(x, dtype=float)
        return q, yd, x if x.size == self.ny else x[self.independent_v]
