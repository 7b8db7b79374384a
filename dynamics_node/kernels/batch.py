"""The batch calls (batch.py) as compiled loops: each kernel runs the fused call of one public call
(calls.py, whole_body_calls.py) on the rows of its inputs in turn on one workspace, and copies
each result, flattened by rows, into its row of out, until a row's call returns another code than
OK. Returns that code, or OK; done[0] the rows finished. With nogil, threads run them side by side,
each on a workspace of its own."""

from numba import njit

from .cache import key_on_helpers
from .completion import complete, PARTIAL
from .calls import (contact_bias_forces as fused_contact_bias_forces,
                    forward_dynamics as fused_forward_dynamics,
                    forward_dynamics_lcaba as fused_forward_dynamics_lcaba,
                    inverse_dynamics as fused_inverse_dynamics, mass_matrix as fused_mass_matrix)
from .kinematics import OK
from .whole_body_calls import (center_of_mass as fused_center_of_mass,
                               center_of_mass_jacobian as fused_center_of_mass_jacobian,
                               centroidal_momentum_matrix as fused_centroidal_momentum_matrix,
                               centroidal_state as fused_centroidal_state,
                               coriolis_matrix as fused_coriolis_matrix,
                               kinetic_energy as fused_kinetic_energy,
                               potential_energy as fused_potential_energy,
                               regressor as fused_regressor)

key_on_helpers(__file__)

# the terms of whole_body_at_positions, then of whole_body_at_states
CENTER_OF_MASS, POTENTIAL_ENERGY, MOMENTUM_MATRIX, COM_JACOBIAN = range(4)
MOMENTUM, CENTROIDAL_BIAS, KINETIC_ENERGY, CORIOLIS = range(4)
TERMS = {   # Batch's whole-body calls: (their kernel, the term)
    'center_of_mass': ('whole_body_at_positions', CENTER_OF_MASS),
    'potential_energy': ('whole_body_at_positions', POTENTIAL_ENERGY),
    'centroidal_momentum_matrix': ('whole_body_at_positions', MOMENTUM_MATRIX),
    'center_of_mass_jacobian': ('whole_body_at_positions', COM_JACOBIAN),
    'centroidal_momentum': ('whole_body_at_states', MOMENTUM),
    'centroidal_bias': ('whole_body_at_states', CENTROIDAL_BIAS),
    'kinetic_energy': ('whole_body_at_states', KINETIC_ENERGY),
    'coriolis_matrix': ('whole_body_at_states', CORIOLIS)}


@njit(inline='always', error_model='numpy')
def copy_row(source, out, i):
    """out[i] = source (1-d)."""
    for j in range(len(source)):
        out[i, j] = source[j]


@njit(inline='always', error_model='numpy')
def copy_matrix(source, out, i):
    """out[i] = source (2-d) flattened by rows."""
    columns = source.shape[1]
    for r in range(source.shape[0]):
        for j in range(columns):
            out[i, r * columns + j] = source[r, j]


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics(x, lcaba, q, v, tau, out, done):
    """Model.forward_dynamics of each row: the cluster ABA's fused call, or LCABA's (at the
    workspace's settings) where method 'auto' starts with it (lcaba)."""
    for i in range(len(q)):
        if lcaba:
            code = fused_forward_dynamics_lcaba(x, q[i], v[i], tau[i])
        else:
            code = fused_forward_dynamics(x, q[i], v[i], tau[i])
        if code != OK:
            done[0] = i
            return code
        copy_row(x.w.qdd if lcaba else x.d.qdd, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics(x, q, v, a, out, done):
    """Model.inverse_dynamics of each row (bias_forces: a zero)."""
    for i in range(len(q)):
        code = fused_inverse_dynamics(x, q[i], v[i], a[i])
        if code != OK:
            done[0] = i
            return code
        copy_row(x.d.tau, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def mass_matrix(x, q, out, done):
    """Model.mass_matrix of each row."""
    for i in range(len(q)):
        code = fused_mass_matrix(x, q[i])
        if code != OK:
            done[0] = i
            return code
        copy_matrix(x.d.H, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def regressor(x, w, q, v, a, out, done):
    """Model.regressor of each row (w: the workspace's WholeBodyBuffers)."""
    for i in range(len(q)):
        code = fused_regressor(x, w, q[i], v[i], a[i])
        if code != OK:
            done[0] = i
            return code
        copy_matrix(w.Y, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def whole_body_at_positions(x, w, term, q, out, done):
    """The whole-body term of each row: CENTER_OF_MASS, POTENTIAL_ENERGY, MOMENTUM_MATRIX (A_g)
    or COM_JACOBIAN (w: the workspace's WholeBodyBuffers)."""
    for i in range(len(q)):
        if term == CENTER_OF_MASS:
            code = fused_center_of_mass(x, w, q[i])
        elif term == POTENTIAL_ENERGY:
            code = fused_potential_energy(x, w, q[i])
        elif term == MOMENTUM_MATRIX:
            code = fused_centroidal_momentum_matrix(x, w, q[i])
        else:
            code = fused_center_of_mass_jacobian(x, w, q[i])
        if code != OK:
            done[0] = i
            return code
        if term == CENTER_OF_MASS:
            copy_row(w.com, out, i)
        elif term == POTENTIAL_ENERGY:
            copy_row(w.energy, out, i)
        elif term == MOMENTUM_MATRIX:
            copy_matrix(w.A, out, i)
        else:
            copy_matrix(w.J, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def whole_body_at_states(x, w, term, q, v, out, done):
    """The whole-body term of each row: MOMENTUM (h_g), CENTROIDAL_BIAS, KINETIC_ENERGY or
    CORIOLIS (C_y)."""
    for i in range(len(q)):
        if term == MOMENTUM or term == CENTROIDAL_BIAS:
            code = fused_centroidal_state(x, w, q[i], v[i])
        elif term == KINETIC_ENERGY:
            code = fused_kinetic_energy(x, w, q[i], v[i])
        else:
            code = fused_coriolis_matrix(x, w, q[i], v[i])
        if code != OK:
            done[0] = i
            return code
        if term == MOMENTUM:
            copy_row(w.momentum, out, i)
        elif term == CENTROIDAL_BIAS:
            copy_row(w.bias, out, i)
        elif term == KINETIC_ENERGY:
            copy_row(w.energy, out, i)
        else:
            copy_matrix(w.C, out, i)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def contact_bias_forces(x, b, weights, q, v, out, done):
    """Model.contact_bias_forces of each row on the contacts of x's plan (b: their
    ContactBuffers; weights checked by the caller)."""
    for i in range(len(q)):
        code = fused_contact_bias_forces(x, b, q[i], v[i], weights)
        if code != OK:
            done[0] = i
            return code
        copy_row(b.efforts, out, i)
    done[0] = len(q)
    return OK


@njit(inline='always', error_model='numpy')
def complete_row(x, resumes, q_independent, start, tracked, q):
    """The compiled completion into q, resumed while PARTIAL, resumes times at most, as the
    single call resumes it."""
    code = complete(x, q_independent, start, tracked, q, False)
    for _ in range(resumes):
        if code != PARTIAL:
            break
        code = complete(x, q_independent, start, tracked, q, True)
    return code


@njit(cache=True, nogil=True, error_model='numpy')
def complete_positions(x, resumes, previous, tracked, q_independent, out, done):
    """Model.complete_positions (no time budget) of each row, each tracked from the row before,
    the first from previous where tracked (else from the reference). The rows and out are of
    any layout, as the single call's vectors: the completion compiles to the same arithmetic."""
    q = x.d.q_checked
    for i in range(len(q_independent)):
        if i == 0:
            code = complete_row(x, resumes, q_independent[i], previous, tracked, q)
        else:
            code = complete_row(x, resumes, q_independent[i], out[i - 1], True, q)
        if code != OK:
            done[0] = i
            return code
        copy_row(q, out, i)
    done[0] = len(q_independent)
    return OK
