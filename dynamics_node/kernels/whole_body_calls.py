"""The whole-body calls of Model (whole_body.py) as single compiled entry points, written as
calls.py writes the others: on a CallContext x, each checks its inputs in validation.py's order
(positions, then velocities and accelerations; the loops after the algorithm, at the rows its
kinematics built), runs its kernel (centroidal.py, coriolis.py, regressor.py) into the buffers
passed (a WholeBodyWorkspace: engines/whole_body_calls.py) and checks that the results are finite.
Returns OK or the rule code of the first check that refuses (codes.py), details in d.fault."""

from numba import njit

from .cache import key_on_helpers
from .calls import after, checked, first, finite, independent, positions, singular
from .centroidal import (center_of_mass as com_kernel, center_of_mass_jacobian as
                         com_jacobian_kernel, centroidal_bias, centroidal_momentum_matrix as
                         momentum_matrix_kernel, kinetic_energy as kinetic_kernel,
                         potential_energy as potential_kernel)
from .checks import ACCELERATION_BOUND
from .codes import NOT_FINITE
from .coriolis import coriolis_matrix as coriolis_kernel
from .kinematics import OK
from .regressor import regressor as regressor_kernel

key_on_helpers(__file__)


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass(x, q, com):
    """Model.center_of_mass(q): the CoM into com, from the transforms at q alone."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    com_kernel(m, d, d.q_checked, com)
    status = first(m, d, c, known, OK)          # no algorithm built loop rows: from transforms
    if status == OK and not finite(com):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def potential_energy(x, q, energy):
    """Model.potential_energy(q) into energy[0]."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    potential_kernel(m, d, d.q_checked, energy)
    status = first(m, d, c, known, OK)
    if status == OK and not finite(energy):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_momentum_matrix(x, q, A, com):
    """Model.centroidal_momentum_matrix(q): A_g into A, the CoM into com."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    status = singular(d, momentum_matrix_kernel(m, d, None, A, com))
    return after(m, d, c, known, None, status, A)


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass_jacobian(x, q, A, com, J):
    """Model.center_of_mass_jacobian(q): J_c into J (A_g into A, the CoM into com)."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    status = singular(d, com_jacobian_kernel(m, d, None, A, com, J))
    return after(m, d, c, known, None, status, J)


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_state(x, q, v, bias, momentum, com):
    """Model.centroidal_bias, centroidal_momentum and center_of_mass(q, v): dh_g/dt at ydd = 0
    into bias, h_g into momentum, the CoM into com."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, centroidal_bias(m, d, None, d.yd_checked, bias, momentum, com))
    status = after(m, d, c, known, v, status, bias)
    if status == OK and not (finite(momentum) and finite(com)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def kinetic_energy(x, q, v, energy):
    """Model.kinetic_energy(q, v) into energy[0]."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, kinetic_kernel(m, d, None, d.yd_checked, energy))
    return after(m, d, c, known, v, status, energy)


@njit(cache=True, nogil=True, error_model='numpy')
def coriolis_matrix(x, q, v, C, Gdot, Sdot, Idot, hc, U, F, F1, F2):
    """Model.coriolis_matrix(q, v): C_y into C (the other buffers: coriolis.CoriolisWorkspace)."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, coriolis_kernel(m, d, None, d.yd_checked, C, Gdot, Sdot, Idot, hc, U, F,
                                         F1, F2))
    return after(m, d, c, known, v, status, C)


@njit(cache=True, nogil=True, error_model='numpy')
def regressor(x, q, v, a, Y, F, unit):
    """Model.regressor(q, v, a): Y_y into Y (F, unit: regressor.RegressorWorkspace). Spanning a
    must equal G ydd + g, as inverse_dynamics asks."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, a, c.limits[ACCELERATION_BOUND])
    if status != OK:
        return status
    independent(m, a, d.ydd_checked)
    status = singular(d, regressor_kernel(m, d, None, d.yd_checked, d.ydd_checked, Y, F, unit))
    return after(m, d, c, known, v, status, Y, a)
