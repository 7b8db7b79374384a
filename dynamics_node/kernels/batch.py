"""The batch calls (batch.py) as compiled loops: each kernel runs the fused call of one public call
(calls.py, whole_body_calls.py) on the rows of its inputs in turn on one workspace, and copies
each result into its row of out, until a row's call returns another code than OK. Returns that
code, or OK; done[0] the rows finished. With nogil, threads run them side by side, each on a
workspace of its own."""

from numba import njit

from .cache import key_on_helpers
from .calls import (forward_dynamics as fused_forward_dynamics,
                    forward_dynamics_lcaba as fused_forward_dynamics_lcaba,
                    inverse_dynamics as fused_inverse_dynamics, mass_matrix as fused_mass_matrix)
from .kinematics import OK
from .whole_body_calls import regressor as fused_regressor

key_on_helpers(__file__)


@njit(inline='always', error_model='numpy')
def copy_row(source, out, i):
    """out[i] = source (1-d)."""
    for j in range(len(source)):
        out[i, j] = source[j]


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
    H = x.d.H
    for i in range(len(q)):
        code = fused_mass_matrix(x, q[i])
        if code != OK:
            done[0] = i
            return code
        for r in range(H.shape[0]):
            copy_row(H[r], out[i], r)
    done[0] = len(q)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def regressor(x, w, q, v, a, out, done):
    """Model.regressor of each row (w: the workspace's WholeBodyBuffers)."""
    Y = w.Y
    for i in range(len(q)):
        code = fused_regressor(x, w, q[i], v[i], a[i])
        if code != OK:
            done[0] = i
            return code
        for r in range(Y.shape[0]):
            copy_row(Y[r], out[i], r)
    done[0] = len(q)
    return OK
