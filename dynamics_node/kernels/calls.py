"""The public calls of Model as single compiled entry points, on a FlatModel ``m``, its FlatData
``d`` and a CheckPlan ``c``, passed as one CallContext ``x`` (flat/checks.py), and for LCABA an
LcabaPlan ``p`` with its LcabaData ``w``.

Each entry point checks its inputs as validation.py does (lengths, finite entries within the bounds
of bounds.py, unit quaternions, closed loops and couplings, consistent spanning velocities and
accelerations; kernels/checks.py), runs its algorithm (the kernels, kernels/lcaba.py) and checks
that the results are finite: one call from Python instead of one per check, whose Python glue would
cost as much as a whole tree ABA. Inputs are float64 vectors
(model.py converts anything else once, up front). An entry point returns OK, or the rule code of
the first check that refuses (codes.py), in the order validation.py checks, with its details in
d.fault (argument, index, value): a bad input, a singular configuration, a non-finite result, or
(LCABA_REJECTED) an LCABA result that does not keep the constraints. Model raises the error the
code names (faults.py), or routes (forward_dynamics.py): nothing is run twice.

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
from .checks import (ACCELERATION_BOUND, beyond, constraint_violation, couplings_closed,
                     FORCE_BOUND, loops_closed, normalize_quaternions, POSITION_BOUND,
                     POSITION_TOLERANCE, unit_quaternions, VELOCITY_BOUND, VELOCITY_TOLERANCE,
                     velocity_violation, worst_constraint)
from .codes import (ACCELERATION_VIOLATION, FIRST, LCABA_NOT_POSITIVE, LCABA_REJECTED, LENGTH,
                    LIFT_SINGULAR, NOT_FINITE, OUT_OF_BOUND, POSITION_VIOLATION, QUATERNION,
                    SECOND, THIRD, VELOCITY_VIOLATION)
from .contact_dynamics import (contact_bias_forces as projected_bias_forces,
                               exact_forward_dynamics as exact_route,
                               inverse_dynamics as projected_inverse_dynamics)
from .crba import crba
from .efpa import efpa
from . import frames
from .kinematics import explicit_constraints, OK, update_transforms
from .lcaba import lcaba
from .rnea import rnea


key_on_helpers(__file__)

ROWS_IN_K = -1.0               # consistent(): the loop clusters' rows are in d.K, no LCABA measure
# positions(): the loops still to check after the algorithm (closed); nothing left to check
UNCLOSED, CLOSED = 1, 2


@njit(inline='always', error_model='numpy')
def fail(d, code, argument, index, value):
    """code, with its details in d.fault."""
    d.fault[0], d.fault[1], d.fault[2] = argument, index, value
    return code


@njit(inline='always', error_model='numpy')
def finite(x):
    """Every entry of the result x is finite (validation.check_finite)."""
    for value in x.flat:
        if not math.isfinite(value):
            return False
    return True


@njit(error_model='numpy')
def positions(m, d, c, q, closure=True):
    """validation.positions(check=closure): (code, known). q into d.q_checked, bounds, unit
    quaternions (normalized), couplings closed, d.Xup left at q, where the algorithms take it
    (their q None). known is UNCLOSED where the loops are to be checked after the algorithm
    (closed), CLOSED where nothing is left: without closure, or where q equals the positions
    complete_positions returned last (d.q_closed, NaN before: closed to completion's tolerance,
    within bounds, unit quaternions), whose checks are skipped."""
    if len(q) != len(d.q_checked):
        return fail(d, LENGTH, FIRST, 0, len(q)), CLOSED
    same = True
    for i in range(len(q)):
        d.q_checked[i] = q[i]
        same &= q[i] == d.q_closed[i]
    if same:              # normalized as the check would: the same input gives the same result
        normalize_quaternions(m, d.q_checked)
    else:
        i = beyond(d.q_checked, c.limits[POSITION_BOUND])
        if i >= 0:
            return fail(d, OUT_OF_BOUND, FIRST, i, q[i]), CLOSED
        body, norm = unit_quaternions(m, d.q_checked)
        if body >= 0:
            return fail(d, QUATERNION, FIRST, body, norm), CLOSED
    update_transforms(m, d, d.q_checked)
    if same or not closure:
        return OK, CLOSED
    if not couplings_closed(c, d.q_checked, c.limits[POSITION_TOLERANCE]):
        return violated(m, d, c), CLOSED
    return OK, UNCLOSED


@njit(error_model='numpy')
def violated(m, d, c):
    """POSITION_VIOLATION of the constraint farthest from closed at the checked q."""
    which, worst = worst_constraint(m, d, c, d.q_checked)
    return fail(d, POSITION_VIOLATION, FIRST, which, worst)


@njit(error_model='numpy')
def closed(m, d, c, known):
    """The loops of the checked q within tolerance (checks.loops_closed) at the loop ends the
    algorithm's constraint rows left, unless positions() left nothing to check: OK, else
    POSITION_VIOLATION."""
    if known == CLOSED or loops_closed(m, d, c, c.limits[POSITION_TOLERANCE], False):
        return OK
    return violated(m, d, c)


@njit(error_model='numpy')
def first(m, d, c, known, code):
    """The fault validation.py names before code, a later check's: loops of q open (unless
    positions() left nothing to check); else code as it is. For a refusal that comes after the
    loops' check in validation.py's order, but before it here (where the algorithm's rows check
    the loops)."""
    if known == UNCLOSED and not loops_closed(m, d, c, c.limits[POSITION_TOLERANCE], True):
        return violated(m, d, c)
    return code


@njit(error_model='numpy')
def first_with(m, d, c, known, v, code):
    """first(), then spanning velocities v off K at the checked q (checks.velocity_violation), for
    a fault of the algorithm (validation.py checks v before it runs)."""
    earlier = first(m, d, c, known, code)
    if earlier != code or len(v) == m.ny and m.ny != m.nv:
        return earlier
    velocity_violation(m, d, c, v)
    if c.worst[0] > c.limits[VELOCITY_TOLERANCE] * max(1.0, c.worst[2]):
        return fail(d, VELOCITY_VIOLATION, SECOND, c.worst[1], c.worst[0])
    return code


@njit(error_model='numpy')
def vector(m, d, x, argument, bound):
    """validation.vector of a velocity-, acceleration- or force-like x: nv (spanning) or ny
    (independent) entries within bound. OK, LENGTH or OUT_OF_BOUND."""
    n = len(x)
    if not (n == m.ny or n == m.nv):
        return fail(d, LENGTH, argument, 0, n)
    i = beyond(x, bound)
    if i >= 0:
        return fail(d, OUT_OF_BOUND, argument, i, x[i])
    return OK


@njit(error_model='numpy')
def independent(m, x, out):
    """The independent entries of a vector x that vector() accepted into out."""
    spanning = len(x) == m.nv
    for j in range(m.ny):
        out[j] = x[m.independent_v[j]] if spanning else x[j]


@njit(error_model='numpy')
def consistent(m, d, c, x, lcaba_violation):
    """validation.independent_velocities of a velocity-like x accepted by vector(): independent,
    or spanning with K x = 0 within tolerance at the checked q: max |K x| over the coupling rows
    and the loop clusters' active rows in d.K (the algorithm's kinematics built them;
    constraint_violation), or LCABA's measure over the rows it keeps, the same rows
    (flat.lcaba._kept_rows; ROWS_IN_K for the former). OK or VELOCITY_VIOLATION; OK without
    constraints (nv = ny: every velocity is independent)."""
    if len(x) == m.ny:
        return OK
    constraint_violation(m, d, c, x, lcaba_violation == ROWS_IN_K)
    worst = c.worst[0]
    if lcaba_violation > worst:
        worst = lcaba_violation
    if worst > c.limits[VELOCITY_TOLERANCE] * max(1.0, c.worst[2]):
        return fail(d, VELOCITY_VIOLATION, SECOND, c.worst[1], worst)
    return OK


@njit(error_model='numpy')
def velocities(m, d, c, known, v, u=None, bound=0.0):
    """v within bounds (nv or ny entries) and, where given, the call's third argument u within
    bound; v's independent entries into d.yd_checked: OK, else the first fault."""
    status = vector(m, d, v, SECOND, c.limits[VELOCITY_BOUND])
    if status == OK and u is not None:
        status = vector(m, d, u, THIRD, bound)
    if status != OK:
        return first(m, d, c, known, status)
    independent(m, v, d.yd_checked)
    return OK


@njit(error_model='numpy')
def checked(m, d, c, q, v, u=None, bound=0.0):
    """positions(), then velocities() where they pass: (code, known)."""
    status, known = positions(m, d, c, q)
    if status == OK:
        status = velocities(m, d, c, known, v, u, bound)
    return status, known


@njit(inline='always', error_model='numpy')
def singular(d, status):
    """A kernel's singular status with its details (d.info: cluster, value) in d.fault."""
    if status != OK:
        d.fault[0], d.fault[1], d.fault[2] = FIRST, d.info[0], d.info[1]
    return status


@njit(error_model='numpy')
def after(m, d, c, known, v, status, result, a=None):
    """The checks after an algorithm with velocities v (None: without) returned status: the loops,
    consistent spanning v, spanning accelerations a equal to G ydd + g (where given), a finite
    result."""
    if status != OK:
        if v is None:
            return first(m, d, c, known, status)
        return first_with(m, d, c, known, v, status)
    status = closed(m, d, c, known)
    if status == OK and v is not None:
        status = consistent(m, d, c, v, ROWS_IN_K)
    if status == OK and a is not None:
        status = accelerations(m, d, c, a, d.ydd_checked)
    if status == OK and not finite(result):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics(x, q, v, tau):
    """Model.forward_dynamics with the cluster ABA: spanning accelerations into d.qdd."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, tau, c.limits[FORCE_BOUND])
    if status != OK:
        return status
    status = singular(d, aba(m, d, None, d.yd_checked, tau, d.f_ext))
    return after(m, d, c, known, v, status, d.qdd)


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics(x, q, v, a):
    """Model.inverse_dynamics (bias and gravity forces: a, v zero): independent forces into d.tau.
    Spanning accelerations must equal G ydd + g (validation.py's VELOCITY_TOLERANCE, relative)."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, a, c.limits[ACCELERATION_BOUND])
    if status != OK:
        return status
    independent(m, a, d.ydd_checked)
    status = singular(d, rnea(m, d, None, d.yd_checked, d.ydd_checked, d.f_ext))
    return after(m, d, c, known, v, status, d.tau, a)


@njit(error_model='numpy')
def accelerations(m, d, c, a, ydd):
    """Spanning accelerations a equal to G ydd + g (validation.py's VELOCITY_TOLERANCE, relative),
    G and g those an algorithm's kinematics left: OK or ACCELERATION_VIOLATION (OK for independent
    a, and without constraints: nv = ny, G = 1, g = 0)."""
    if len(a) == m.ny:
        return OK
    spanning_accelerations(m, d, ydd)
    mismatch, scale = 0.0, 1.0
    for j in range(m.nv):
        mismatch, scale = max(mismatch, abs(a[j] - d.qdd[j])), max(scale, abs(a[j]))
    if not mismatch <= c.limits[VELOCITY_TOLERANCE] * scale:
        return fail(d, ACCELERATION_VIOLATION, THIRD, 0, mismatch)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def mass_matrix(x, q):
    """Model.mass_matrix: H_y into d.H."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    return after(m, d, c, known, None, singular(d, crba(m, d, None)), d.H)


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_osim(x, q, f):
    """Model.inverse_osim of the links of the FrameSet f (checked by the caller): Lambda^-1 into
    f.Omega."""
    m, d, c = x.m, x.d, x.c
    status, known = positions(m, d, c, q)
    if status != OK:
        return status
    return after(m, d, c, known, None, singular(d, efpa(m, d, None, f.body, f.X, f.T, f.Omega)),
                 f.Omega)


@njit(inline='always', error_model='numpy')
def accepted(w):
    """LCABA's residual within what the call accepts (forward_dynamics.accepted): max(tolerance,
    w.settings[3] max(1, ||qdd||_inf))."""
    scale = 1.0
    for value in w.qdd:
        scale = max(scale, abs(value))
    return w.result[1] <= max(w.settings[1], w.settings[3] * scale)


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_lcaba(x, q, v, tau):
    """Model.forward_dynamics with LCABA at the settings in w.settings: spanning accelerations into
    w.qdd; LCABA_REJECTED where its residual is beyond what the call accepts (accepted; Model then
    routes). Independent velocities are lifted to G yd (LIFT_SINGULAR at a singular
    configuration), independent forces act on their joints."""
    m, d, c, p, w = x.m, x.d, x.c, x.p, x.w
    status, known = checked(m, d, c, q, v, tau, c.limits[FORCE_BOUND])
    if status != OK:
        return status
    qd, tau_spanning = d.qd, d.tau_spanning
    if len(v) == m.nv:
        for j in range(m.nv):
            qd[j] = v[j]
    else:                                                  # qd = G v at the checked transforms
        status = explicit_constraints(m, d, v)
        if status != OK:
            return first(m, d, c, known,
                         fail(d, LIFT_SINGULAR, status, d.info[0], d.info[1]))
    for j in range(m.nv):
        tau_spanning[j] = tau[j] if len(tau) == m.nv else 0.0
    if len(tau) != m.nv:
        for j in range(m.ny):
            tau_spanning[m.independent_v[j]] = tau[j]
    mu, tolerance, max_iterations = w.settings[0], w.settings[1], int(w.settings[2])
    if lcaba(m, d, p, w, None, qd, tau_spanning, d.f_ext, mu, tolerance, max_iterations) != OK:
        return first_with(m, d, c, known, v, fail(d, LCABA_NOT_POSITIVE, FIRST, w.info[0], 0.0))
    status = closed(m, d, c, known)
    if status == OK:
        status = consistent(m, d, c, v, w.violation[0])
    if status == OK and not finite(w.qdd):
        status = NOT_FINITE
    if status == OK and not accepted(w):
        status = fail(d, LCABA_REJECTED, w.result[0], 0, w.result[1])
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def link_kinematics(x, q, v, n, poses, jacobians, biases):
    """Model.link_pose, link_poses, link_jacobian, link_bias_acceleration and link_kinematics: of
    the links d.link_selection[:n] (FlatData.select_links), what poses, jacobians and biases ask,
    into d.link_R, d.link_p, d.link_J and d.link_bias (frames.link_kinematics). Poses alone check q
    as validation.positions(check=False) does, without the loops; Jacobians and bias accelerations
    need them closed, and bias accelerations velocities v."""
    m, d, c = x.m, x.d, x.c
    moving = jacobians or biases
    status, known = positions(m, d, c, q, moving)
    if status != OK:
        return status
    if biases:
        status = velocities(m, d, c, known, v)
        if status != OK:
            return status
    status = frames.link_kinematics(m, d, None, d.yd_checked, n, poses, jacobians, biases)
    if status != OK:
        fail(d, status, FIRST, d.info[0], d.info[1])
        return first_with(m, d, c, known, v, status) if biases else first(m, d, c, known, status)
    status = closed(m, d, c, known)
    if status == OK and biases:
        status = consistent(m, d, c, v, ROWS_IN_K)
    if status == OK and (poses and not (finite(d.link_R[:n]) and finite(d.link_p[:n]))
                         or jacobians and not finite(d.link_J[:n])
                         or biases and not finite(d.link_bias[:n])):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def contact_bias_forces(x, b, q, v, weights):
    """Model.contact_bias_forces on the contacts of x's plan, into their ContactBuffers b
    (efforts, yd_c, ydd, the contact forces lam; contact_dynamics.contact_bias_forces): OK where
    q and v pass the checks, the loops are closed, v is consistent and the results are finite;
    else not OK (a check's code or a fault of the contact route, contact_dynamics.py, whose codes
    are not codes.py's): Model's checked path then names the error. weights: checked by the
    caller."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v)
    if status != OK:
        return status
    status = projected_bias_forces(m, d, x.p, x.w, b, None, d.yd_checked, d.f_ext, weights)
    status = after(m, d, c, known, v, status, b.efforts)
    if status == OK and not (finite(b.yd_c) and finite(b.ydd) and finite(b.lam)):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def forward_dynamics_exact(x, b, q, v, tau):
    """Model.forward_dynamics(q, v, tau, contacts, method='aba') on the contacts of x's plan: the
    exact route (contact_dynamics.exact_forward_dynamics), d.qdd and the contact forces b.lam. OK
    where q, v and tau pass the checks, the loops are closed, v is consistent and the results are
    finite; else not OK, as contact_bias_forces."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, tau, c.limits[FORCE_BOUND])
    if status != OK:
        return status
    status = exact_route(m, d, x.p, x.w, b, None, d.yd_checked, tau, d.f_ext)
    status = after(m, d, c, known, v, status, d.qdd)
    if status == OK and not finite(b.lam):
        status = NOT_FINITE
    return status


@njit(cache=True, nogil=True, error_model='numpy')
def inverse_dynamics_contacts(x, b, q, v, a, weights):
    """Model.inverse_dynamics(q, v, a, contacts) (bias_forces and gravity_forces: v, a zero) on
    the contacts of x's plan: projected inverse dynamics (contact_dynamics.inverse_dynamics),
    b.efforts and the contact forces b.lam; OK or not OK as contact_bias_forces."""
    m, d, c = x.m, x.d, x.c
    status, known = checked(m, d, c, q, v, a, c.limits[ACCELERATION_BOUND])
    if status != OK:
        return status
    independent(m, a, d.ydd_checked)
    status = projected_inverse_dynamics(m, d, x.p, x.w, b, None, d.yd_checked, d.ydd_checked,
                                        d.f_ext, weights)
    status = after(m, d, c, known, v, status, b.efforts, a)
    if status == OK and not finite(b.lam):
        status = NOT_FINITE
    return status
