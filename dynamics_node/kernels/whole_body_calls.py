"""The whole-body and derivative calls of Model (whole_body.py, derivatives.py) as single compiled
entry points, written as calls.py writes the others: on a CallContext x, each checks its inputs in
validation.py's order (positions, then velocities and accelerations; the loops after the
algorithm, at the rows its kinematics built), runs its kernel (centroidal.py, coriolis.py,
regressor.py, derivatives.py) into the buffers
of w (flat/whole_body.py's WholeBodyBuffers) and checks that the results are finite.
Returns OK or the rule code of the first check that refuses (codes.py), details in d.fault."""

from numba import njit

from .cache import key_on_helpers
from .calls import (after, checked, first, finite, forward_dynamics_exact, independent,
                    inverse_dynamics_contacts, positions, singular)
from .centroidal import (center_of_mass as com_kernel, center_of_mass_jacobian as
                         com_jacobian_kernel, centroidal_bias, centroidal_momentum_matrix as
                         momentum_matrix_kernel, kinetic_energy as kinetic_kernel,
                         potential_energy as potential_kernel)
from .checks import ACCELERATION_BOUND, FORCE_BOUND
from .codes import NOT_FINITE
from .contact_derivatives import (constrained_forward_dynamics_derivatives,
                                  projected_inverse_dynamics_derivatives)
from .coriolis import coriolis_matrix as coriolis_kernel
from .derivatives import (forward_dynamics_derivatives as forward_derivatives_kernel,
                          inverse_dynamics_derivatives as inverse_derivatives_kernel)
from .kinematics import OK
from .regressor import regressor as regressor_kernel

key_on_helpers(__file__)


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass(x, w, q):
    """Model.center_of_mass(q): the CoM into w.com, from the transforms at q alone."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    com_kernel(m, d, d.q_checked, w.com)
    status = first(m, d, c, known, OK)          # no algorithm built loop rows: from transforms
    if status == OK and not finite(w.com):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def potential_energy(x, w, q):
    """Model.potential_energy(q) into w.energy[0]."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    potential_kernel(m, d, d.q_checked, w.energy)
    status = first(m, d, c, known, OK)
    if status == OK and not finite(w.energy):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_momentum_matrix(x, w, q):
    """Model.centroidal_momentum_matrix(q): A_g into w.A, the CoM into w.com."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    status = singular(d, momentum_matrix_kernel(m, d, None, w.A, w.com))
    return after(m, d, c, known, None, status, w.A)


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass_jacobian(x, w, q):
    """Model.center_of_mass_jacobian(q): J_c into w.J (the CoM into w.com)."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    status = singular(d, com_jacobian_kernel(m, d, None, w.com, w.J))
    return after(m, d, c, known, None, status, w.J)


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_state(x, w, q, v):
    """Model.centroidal_bias, centroidal_momentum and center_of_mass(q, v): dh_g/dt at ydd = 0
    into w.bias, h_g into w.momentum, the CoM into w.com."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, centroidal_bias(m, d, None, d.yd_checked, w.bias, w.momentum, w.com))
    status = after(m, d, c, known, v, status, w.bias)
    if status == OK and not (finite(w.momentum) and finite(w.com)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def kinetic_energy(x, w, q, v):
    """Model.kinetic_energy(q, v) into w.energy[0]."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, kinetic_kernel(m, d, None, d.yd_checked, w.energy))
    return after(m, d, c, known, v, status, w.energy)


@njit(cache=True, nogil=True, error_model='numpy')
def coriolis_matrix(x, w, q, v):
    """Model.coriolis_matrix(q, v): C_y into w.C (the other buffers: coriolis.CoriolisWorkspace).
    """
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = singular(d, coriolis_kernel(m, d, None, d.yd_checked, w.C, w.Gdot, w.Sdot, w.Idot,
                                         w.hc, w.U, w.F, w.F1, w.F2))
    return after(m, d, c, known, v, status, w.C)


@njit(cache=True, nogil=True, error_model='numpy')
def regressor(x, w, q, v, a):
    """Model.regressor(q, v, a): Y_y into w.Y (the other buffers: regressor.RegressorWorkspace).
    Spanning a must equal G ydd + g, as inverse_dynamics asks."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, a, c.limits[ACCELERATION_BOUND])
    if status != OK:
        return status
    independent(m, a, d.ydd_checked)
    status = singular(d, regressor_kernel(m, d, None, d.yd_checked, d.ydd_checked, w.Y,
                                          w.F_parameter, w.unit))
    return after(m, d, c, known, v, status, w.Y, a)


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics_derivatives(x, w, q, v, a):
    """Model.inverse_dynamics_derivatives(q, v, a) without contacts: dtau_y/dy, dtau_y/dyd and
    H_y into w.d_y, w.d_yd, w.d_ydd (derivatives.py), with the workspace's external forces.
    Spanning a must equal G ydd + g, as inverse_dynamics asks."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, a, c.limits[ACCELERATION_BOUND])
    if status != OK:
        return status
    independent(m, a, d.ydd_checked)
    status = singular(d, inverse_derivatives_kernel(m, d, None, d.yd_checked, d.ydd_checked, w,
                                                    d.f_ext))
    status = after(m, d, c, known, v, status, w.d_y, a)
    if status == OK and not (finite(w.d_yd) and finite(w.d_ydd)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_derivatives(x, w, q, v, tau):
    """Model.forward_dynamics_derivatives(q, v, tau) without contacts: ydd into d.ydd, dydd/dy,
    dydd/dyd and H_y^-1 into w.fd_y, w.fd_yd, w.H_inv (derivatives.py), with the workspace's
    external forces."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, tau, c.limits[FORCE_BOUND])
    if status != OK:
        return status
    status = singular(d, forward_derivatives_kernel(m, d, None, d.yd_checked, tau, w, d.f_ext))
    status = after(m, d, c, known, v, status, w.fd_y)
    if status == OK and not (finite(w.fd_yd) and finite(w.H_inv) and finite(d.ydd)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_derivatives_contacts(x, w, b, q, v, tau):
    """Model.forward_dynamics_derivatives(q, v, tau, contacts) on the contacts of x's plan (their
    ContactBuffers b, w made with their rows): the exact route's fused call
    (calls.forward_dynamics_exact), then ydd into d.ydd and its derivatives into w.fd_y, w.fd_yd,
    w.H_inv (contact_derivatives.constrained_forward_dynamics_derivatives), with the workspace's
    external forces. OK, else not OK as calls.contact_bias_forces: Model's checked path names the
    error."""
    status = forward_dynamics_exact(x, b, q, v, tau)
    if status == OK:
        status = singular(x.d, constrained_forward_dynamics_derivatives(
            x.m, x.d, x.p, w, b, x.d.yd_checked))
    if status == OK and not (finite(w.fd_y) and finite(w.fd_yd) and finite(w.H_inv)
                             and finite(x.d.ydd)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics_derivatives_contacts(x, w, b, q, v, a, weights):
    """Model.inverse_dynamics_derivatives(q, v, a, contacts, weights) on the contacts of x's plan
    (their ContactBuffers b, w made with their rows): projected inverse dynamics' fused call
    (calls.inverse_dynamics_contacts), then the derivatives of its efforts into b.dtau_y,
    b.dtau_yd, b.dtau_ydd (contact_derivatives.projected_inverse_dynamics_derivatives), with the
    workspace's external forces; OK or not OK as forward_dynamics_derivatives_contacts. weights:
    checked by the caller."""
    status = inverse_dynamics_contacts(x, b, q, v, a, weights)
    if status == OK:
        status = singular(x.d, projected_inverse_dynamics_derivatives(
            x.m, x.d, x.p, x.w, w, b, x.d.yd_checked, x.d.ydd_checked, weights))
    if status == OK and not (finite(b.dtau_y) and finite(b.dtau_yd) and finite(b.dtau_ydd)):
        status = NOT_FINITE
    return status
