"""The public calls of Model as single compiled entry points, on a FlatModel ``m``, its FlatData
``d`` and a CheckPlan ``c``, passed as one CallContext ``x`` (flat/checks.py), and for LCABA an
LcabaPlan ``p`` with its LcabaData ``w``.

Each entry point checks its inputs as validation.py does (lengths, finite entries within the bounds
of bounds.py, unit quaternions, closed loops and couplings, consistent spanning velocities and
accelerations; kernels/checks.py), runs its algorithm (the kernels, kernels/lcaba.py) and checks
that the results are finite: one call from Python instead of one per check, whose Python glue would
cost as much as a whole tree ABA. Inputs are float64 vectors
(model.py makes sure of it). An entry point returns OK, or REFER for anything it does not accept:
an input a check refuses, a singular configuration or a non-finite result. Model then takes its
Python path, which names the error (or falls back to LCABA): the compiled path only ever accepts.

Checks and algorithm share their work: the position check leaves d.Xup at q, where the algorithms
start (q None); the loops are checked after the algorithm, at the transforms to each loop's ends
its constraint rows computed (closed); the cluster ABA and RNEA check spanning velocities after
they ran, against the K their kinematics built (constraint_violation; the same rows and criterion
as velocity_violation), LCABA against the constraint rows it built (kernels.lcaba.coupling_rows and
loop_rows).

Positions equal to those complete_positions returned last (d.q_closed, kept by the workspace:
FastPath.closed_positions) were closed to completion's tolerance, within bounds, with unit
quaternions: they skip the position checks, the re-validation a state the model produced can do
without (a caller who changed q changed its values, which then get every check).

Checked inputs are kept in d (q_checked: q with its quaternions normalized; yd_checked,
ydd_checked: independent velocities and accelerations; qd and tau_spanning: LCABA's spanning
inputs). The external forces are the workspace's d.f_ext (validation.external_forces), not an
argument: one array fewer to unbox. The input vectors are borrowed.INPUT_VECTOR: the caller holds
them, and the kernels pass them on uncounted.
"""

import math

from numba import njit

from .aba import aba, spanning_accelerations
from .cache import key_on_helpers
from .checks import (ACCELERATION_BOUND, accept_positions, all_within, constraint_violation,
                     couplings_closed, FORCE_BOUND, loops_closed, normalize_quaternions,
                     POSITION_BOUND,
                     POSITION_TOLERANCE, REFER, VELOCITY_BOUND, VELOCITY_TOLERANCE)
from .crba import crba
from .efpa import efpa
from . import frames
from .kinematics import explicit_constraints, OK, update_transforms
from .lcaba import lcaba
from .rnea import rnea


key_on_helpers(__file__)

ROWS_IN_K = -1.0               # consistent(): the loop clusters' rows are in d.K, no LCABA measure
# positions(): refused; checked but for the loops; known closed
REFUSED, UNCLOSED, CLOSED = 0, 1, 2


@njit(inline='always', error_model='numpy')
def finite(x):
    """Every entry of the result x is finite (validation.check_finite)."""
    for value in x.flat:
        if not math.isfinite(value):
            return False
    return True


@njit(error_model='numpy')
def positions(m, d, c, q, closure=True):
    """validation.positions(check=True): q into d.q_checked, quaternions normalized, couplings
    closed, d.Xup left at q, where the algorithms take it (their q None). Returns REFUSED;
    UNCLOSED, the loops to be checked after the algorithm (closed); or CLOSED where q equals the
    positions complete_positions returned last (d.q_closed, NaN before: closed to completion's
    tolerance, within bounds, unit quaternions). Without closure, as
    validation.positions(check=False): bounds and unit quaternions only (UNCLOSED, nothing to check
    after)."""
    if len(q) != len(d.q_checked):
        return REFUSED
    same = True
    for i in range(len(q)):
        d.q_checked[i] = q[i]
        same &= q[i] == d.q_closed[i]
    if not (same or accept_positions(m, d, c, d.q_checked, False, 0.0, c.limits[POSITION_BOUND])):
        return REFUSED
    if same:              # normalized as the check would: the same input gives the same result
        normalize_quaternions(m, d.q_checked)
    update_transforms(m, d, d.q_checked)
    if same:
        return CLOSED
    if not closure or couplings_closed(c, d.q_checked, c.limits[POSITION_TOLERANCE]):
        return UNCLOSED
    return REFUSED


@njit(inline='always', error_model='numpy')
def closed(m, d, c, known):
    """The loops of the checked q within tolerance (checks.loops_closed) at the loop ends the
    algorithm's constraint rows left, unless positions() knew q closed."""
    return known == CLOSED or loops_closed(m, d, c, c.limits[POSITION_TOLERANCE], False)


@njit(error_model='numpy')
def motion(m, x, bound, out):
    """validation.vector of a velocity-like x (nv spanning or ny independent): its independent
    entries into out (consistent() checks spanning x)."""
    n = len(x)
    if not ((n == m.nv or n == m.ny) and all_within(x, bound)):
        return False
    independent = n == m.ny and m.ny != m.nv
    for j in range(m.ny):
        out[j] = x[j] if independent else x[m.independent_v[j]]
    return True


@njit(error_model='numpy')
def consistent(m, d, c, x, lcaba_violation):
    """validation.independent_velocities of a velocity-like x accepted by motion(): independent, or
    spanning with K x = 0 within tolerance at the checked q: max |K x| over the coupling rows and
    the loop clusters' active rows in d.K (the algorithm's kinematics built them;
    constraint_violation), or LCABA's measure over the rows it keeps, the same rows
    (flat.lcaba._kept_rows; ROWS_IN_K for the former)."""
    if len(x) == m.ny and m.ny != m.nv:
        return True
    constraint_violation(m, d, c, x, lcaba_violation == ROWS_IN_K)
    return not (max(c.worst[0], lcaba_violation)
                > c.limits[VELOCITY_TOLERANCE] * max(1.0, c.worst[2]))


@njit(inline='always', error_model='numpy')
def generalized(m, x, bound):
    """validation.vector of spanning (nv) or independent (ny) forces or accelerations."""
    return (len(x) == m.nv or len(x) == m.ny) and all_within(x, bound)


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics(x, q, v, tau):
    """Model.forward_dynamics with the cluster ABA: spanning accelerations into d.qdd."""
    m, d, c = x.m, x.d, x.c
    known = positions(m, d, c, q)
    if not (known != REFUSED and motion(m, v, c.limits[VELOCITY_BOUND], d.yd_checked)
            and generalized(m, tau, c.limits[FORCE_BOUND])):
        return REFER
    if aba(m, d, None, d.yd_checked, tau, d.f_ext) != OK or not closed(m, d, c, known) \
            or not consistent(m, d, c, v, ROWS_IN_K) or not finite(d.qdd):
        return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics(x, q, v, a):
    """Model.inverse_dynamics (bias and gravity forces: a, v zero): independent forces into d.tau.
    Spanning accelerations must equal G ydd + g (validation.py's VELOCITY_TOLERANCE, relative)."""
    m, d, c = x.m, x.d, x.c
    ydd = d.ydd_checked
    known = positions(m, d, c, q)
    if not (known != REFUSED and motion(m, v, c.limits[VELOCITY_BOUND], d.yd_checked)
            and motion(m, a, c.limits[ACCELERATION_BOUND], ydd)):
        return REFER
    if rnea(m, d, None, d.yd_checked, ydd, d.f_ext) != OK or not closed(m, d, c, known) \
            or not consistent(m, d, c, v, ROWS_IN_K) or not finite(d.tau):
        return REFER
    if len(a) == m.nv:                         # G and g are those of q, yd since rnea's kinematics
        spanning_accelerations(m, d, ydd)
        mismatch, scale = 0.0, 1.0
        for j in range(m.nv):
            mismatch, scale = max(mismatch, abs(a[j] - d.qdd[j])), max(scale, abs(a[j]))
        if not mismatch <= c.limits[VELOCITY_TOLERANCE] * scale:
            return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def mass_matrix(x, q):
    """Model.mass_matrix: H_y into d.H."""
    m, d, c = x.m, x.d, x.c
    known = positions(m, d, c, q)
    if known == REFUSED or crba(m, d, None) != OK or not closed(m, d, c, known) or not finite(d.H):
        return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_osim(x, q, f):
    """Model.inverse_osim of the links of the FrameSet f (checked by the caller): Lambda^-1 into
    f.Omega."""
    m, d, c = x.m, x.d, x.c
    known = positions(m, d, c, q)
    if known == REFUSED or efpa(m, d, None, f.body, f.X, f.T, f.Omega) != OK \
            or not closed(m, d, c, known) or not finite(f.Omega):
        return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_lcaba(x, q, v, tau):
    """Model.forward_dynamics with LCABA at the settings in w.settings: spanning accelerations into
    w.qdd. Independent velocities are lifted to G yd (refused at a singular configuration),
    independent forces act on their joints."""
    m, d, c, p, w = x.m, x.d, x.c, x.p, x.w
    known = positions(m, d, c, q)
    if not (known != REFUSED and generalized(m, tau, c.limits[FORCE_BOUND])
            and motion(m, v, c.limits[VELOCITY_BOUND], d.yd_checked)):
        return REFER
    qd, tau_spanning = d.qd, d.tau_spanning
    if len(v) == m.nv:
        for j in range(m.nv):
            qd[j] = v[j]
    elif explicit_constraints(m, d, v) != OK:                  # qd = G v at the checked transforms
        return REFER
    for j in range(m.nv):
        tau_spanning[j] = tau[j] if len(tau) == m.nv else 0.0
    if len(tau) != m.nv:
        for j in range(m.ny):
            tau_spanning[m.independent_v[j]] = tau[j]
    mu, tolerance, max_iterations = w.settings[0], w.settings[1], int(w.settings[2])
    if lcaba(m, d, p, w, None, qd, tau_spanning, d.f_ext, mu, tolerance, max_iterations) != OK \
            or not closed(m, d, c, known) or not consistent(m, d, c, v, w.violation[0]) \
            or not finite(w.qdd):
        return REFER
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def link_kinematics(x, q, v, n, poses, jacobians, biases):
    """Model.link_pose, link_poses, link_jacobian, link_bias_acceleration and link_kinematics: of
    the links d.link_selection[:n] (FlatData.select_links), what poses, jacobians and biases ask,
    into d.link_R, d.link_p, d.link_J and d.link_bias (frames.link_kinematics). Poses alone check q
    as validation.positions(check=False) does, without the loops; Jacobians and bias accelerations
    need them closed, and bias accelerations velocities v."""
    m, d, c = x.m, x.d, x.c
    moving = jacobians or biases
    known = positions(m, d, c, q, moving)
    if known == REFUSED or biases and not motion(m, v, c.limits[VELOCITY_BOUND], d.yd_checked):
        return REFER
    if frames.link_kinematics(m, d, None, d.yd_checked, n, poses, jacobians, biases) != OK \
            or moving and not closed(m, d, c, known) \
            or biases and not consistent(m, d, c, v, ROWS_IN_K):
        return REFER
    if poses and not (finite(d.link_R[:n]) and finite(d.link_p[:n])) \
            or jacobians and not finite(d.link_J[:n]) or biases and not finite(d.link_bias[:n]):
        return REFER
    return OK
