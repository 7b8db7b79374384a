"""The whole-body calls (kernels/whole_body_calls.py) on one FastPath workspace: their result
buffers (the kernels' CentroidalWorkspace, CoriolisWorkspace, RegressorWorkspace), one compiled
call each returning a rule code, as every entry point of the engine contract (contract.py)."""

from numba import types

from ..kernels import whole_body_calls as kernels
from ..kernels.centroidal import CentroidalWorkspace
from ..kernels.coriolis import CoriolisWorkspace
from ..kernels.regressor import RegressorWorkspace

KERNELS = {'fused_' + kernel.__name__: kernel for kernel in
           (kernels.center_of_mass, kernels.potential_energy, kernels.centroidal_momentum_matrix,
            kernels.center_of_mass_jacobian, kernels.centroidal_state, kernels.kinetic_energy,
            kernels.coriolis_matrix, kernels.regressor)}


def signatures(context, vector):
    """The kernels' signatures: the CallContext's type, float64 input vectors and C-contiguous
    float64 buffers."""
    b1, b2, b3 = (types.Array(types.float64, n, 'C') for n in (1, 2, 3))
    return {'fused_center_of_mass': (context, vector, b1),
            'fused_potential_energy': (context, vector, b1),
            'fused_centroidal_momentum_matrix': (context, vector, b2, b1),
            'fused_center_of_mass_jacobian': (context, vector, b2, b1, b2),
            'fused_centroidal_state': (context, vector, vector, b1, b1, b1),
            'fused_kinetic_energy': (context, vector, vector, b1),
            'fused_coriolis_matrix': (context, vector, vector, b2, b3, b3, b3, b2, b3, b2, b2,
                                      b2),
            'fused_regressor': (context, vector, vector, vector, b2, b2, b1)}


class WholeBodyCalls:
    """Model's whole-body calls on FastPath fast: each method returns a rule code, its results
    in com, A (A_g), J (J_c), momentum (h_g), bias, energy, C (C_y) and Y (Y_y) until the next
    call."""

    def __init__(self, fast):
        self.fast = fast
        centroidal = CentroidalWorkspace(fast.flat)
        self.com, self.A, self.J = centroidal.com, centroidal.A, centroidal.J
        self.momentum, self.bias, self.energy = (centroidal.momentum, centroidal.bias,
                                                 centroidal.energy)
        w = self._coriolis = CoriolisWorkspace(fast.flat)
        self.C = w.C
        self._regressor = RegressorWorkspace(fast.flat)
        self.Y = self._regressor.Y

    def center_of_mass(self, q):
        return self.fast._fused_center_of_mass(self.fast._x, q, self.com)

    def potential_energy(self, q):
        return self.fast._fused_potential_energy(self.fast._x, q, self.energy)

    def centroidal_momentum_matrix(self, q):
        return self.fast._fused_centroidal_momentum_matrix(self.fast._x, q, self.A, self.com)

    def center_of_mass_jacobian(self, q):
        return self.fast._fused_center_of_mass_jacobian(self.fast._x, q, self.A, self.com, self.J)

    def centroidal_state(self, q, v):
        return self.fast._fused_centroidal_state(self.fast._x, q, v, self.bias, self.momentum,
                                                 self.com)

    def kinetic_energy(self, q, v):
        return self.fast._fused_kinetic_energy(self.fast._x, q, v, self.energy)

    def coriolis_matrix(self, q, v):
        w = self._coriolis
        return self.fast._fused_coriolis_matrix(self.fast._x, q, v, w.C, w.Gdot, w.Sdot, w.Idot,
                                                w.hc, w.U, w.F, w.F1, w.F2)

    def regressor(self, q, v, a):
        w = self._regressor
        return self.fast._fused_regressor(self.fast._x, q, v, a, w.Y, w.F, w.unit)
