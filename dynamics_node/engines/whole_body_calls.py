"""The whole-body and derivative calls (kernels/whole_body_calls.py) on one FastPath workspace:
their buffers (the kernels' WholeBodyBuffers) and one compiled call each, bound to the workspace's
context and buffers, returning a rule code, as every entry point of the engine contract
(contract.py)."""

import functools

from numba import typeof

from ..kernels import whole_body_calls as kernels
from ..kernels.borrowed import Borrowed
from ..kernels.flat.whole_body import WholeBodyBuffers

INPUTS = {'center_of_mass': 1, 'potential_energy': 1, 'centroidal_momentum_matrix': 1,
          'center_of_mass_jacobian': 1, 'centroidal_state': 2, 'kinetic_energy': 2,
          'coriolis_matrix': 2, 'regressor': 3,                 # q; q, v; q, v, a
          'inverse_dynamics_derivatives': 3, 'forward_dynamics_derivatives': 3}
KERNELS = {'fused_' + name: getattr(kernels, name) for name in INPUTS}


def buffers_type(fast):
    """numba type of the handle of a WholeBodyBuffers (WholeBodyCalls.handle)."""
    return typeof(Borrowed(WholeBodyBuffers(fast.flat).ref))


def signatures(fast, context, vector):
    """The kernels' signatures: the CallContext's type, the buffers' and float64 input vectors."""
    buffers = buffers_type(fast)
    return {'fused_' + name: (context, buffers) + (vector,) * n for name, n in INPUTS.items()}


class WholeBodyCalls:
    """Model's whole-body and derivative calls on FastPath fast: each attribute of INPUTS' names
    takes the inputs and returns a rule code, its results in com, A (A_g), J (J_c), momentum
    (h_g), bias, energy, C (C_y), Y (Y_y), d_y, d_yd, d_ydd (inverse dynamics derivatives), fd_y,
    fd_yd, H_inv and ydd (forward dynamics derivatives) until the next call, its fault in
    fault."""

    def __init__(self, fast):
        buffers = self.buffers = WholeBodyBuffers(fast.flat)    # keeps the arrays the ref borrows
        self.com, self.A, self.J, self.momentum, self.bias, self.energy, self.C, self.Y = (
            buffers.com, buffers.A, buffers.J, buffers.momentum, buffers.bias, buffers.energy,
            buffers.C, buffers.Y)
        self.d_y, self.d_yd, self.d_ydd, self.fd_y, self.fd_yd, self.H_inv = (
            buffers.d_y, buffers.d_yd, buffers.d_ydd, buffers.fd_y, buffers.fd_yd, buffers.H_inv)
        self.ydd = fast.data.ydd
        self.fault = fast.data.fault
        handle = self.handle = Borrowed(buffers.ref)
        for name in INPUTS:
            entry = getattr(fast, '_fused_' + name)
            setattr(self, name, functools.partial(entry, fast._x, handle))
