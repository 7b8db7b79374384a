"""Forward dynamics by method: the routes of Model.forward_dynamics (route: from the rule codes of
the engine's calls; auto_lcaba and lcaba_info for the contact routes) and the report it
returns."""

from dataclasses import dataclass, field, replace

import numpy as np

from .algorithms.kinematics import update_transforms
from .algorithms.lcaba import DEFAULT_SETTINGS, MAX_MU, ProximalSettings
from .errors import ModelError, quote, SingularConfigurationError
from .faults import error, FORWARD, FORWARD_LCABA, vectors
from .kernels.codes import (LCABA_REJECTED, LENGTH, NOT_FINITE, OK, OUT_OF_BOUND,
                            POSITION_VIOLATION, QUATERNION, SINGULAR)
from .multibody.constraints import rows_at
from .validation import all_finite, external_forces, independent_velocities

AUTO = 'auto'                      # the default method; Model checks any other object passed as
#                                    method
METHODS = (AUTO, 'aba', 'lcaba')
# Cost model of method 'auto', measured on Chignoli et al. 2023-style parallel chains, welded
# cycles and the bundled loop robots (bench/auto_crossover.py): the cluster ABA's work on a loop
# cluster of n_k bodies with m_k degrees of freedom grows as n_k m_k (its S_k, U_k and the split of
# its constraints), LCABA's as the number of bodies nb. LCABA is cheaper where sum_k n_k m_k over
# the loop clusters exceeds this factor times nb: public FD LCABA / cluster ABA 1.11-1.13 at factor
# 4, 1.01-1.08 at 5, 0.96-1.03 at 6 (one planar closed chain of 8 links, nested ones, a welded
# cycle of 12), 0.94-0.95 at 7, 0.90 at 8, 0.71-0.78 at 10; the delta robot's 16-body, 3-DoF
# cluster (3) 1.04-1.07 and the bundled loop robots (0.8-2) 1.16-1.23.
LCABA_CROSSOVER = 5.0
# Method 'auto' returns LCABA's accelerations only where they keep the constraint rows (loops,
# couplings, contacts): ||K qdd - k||_inf <= max(tolerance, LCABA_RESIDUAL max(1, ||qdd||_inf)),
# tolerance that of the ProximalSettings (accepted). LCABA's stopping rule, min(||dqdd||_inf,
# ||K qdd - k||_inf) < tolerance or max_iterations, also ends iterations that stall or run out: on
# ill-conditioned contact sets (two 6D feet on 3-DoF legs) with residuals of 1e-7 to 1e-1 relative
# to max(1, ||qdd||_inf) 5e-11 to 1e-6, where the Delassus matrix J H^-1 J^T amplifies a residual
# 1e4 to 1e5 times into the accelerations (errors 1e-6 to 99 %). Converged results stay below
# the tolerance, or below 1e-13 relative where round-off bounds them (1500 random states of the
# robots of test/algorithms/test_contacts.py).
LCABA_RESIDUAL = 1e-12


@dataclass(frozen=True)
class ForwardDynamicsInfo:
    acceleration: np.ndarray           # spanning qdd (nv)
    method_used: str                   # 'aba' (cluster ABA) or 'lcaba'
    # why method 'auto' left the method it started with ('' if it did not): a singular cluster, an
    # LCABA result beyond LCABA_RESIDUAL
    fallback_reason: str = ''
    constraint_residual: float = 0.0   # ||K qdd - k||_inf over every loop, coupling, contact row
    iterations: int = 0                # LCABA outer iterations (0 for the cluster ABA)
    # LCABA: constraint name -> lambda, with H qdd + C - tau = sum K^T lambda (the constraint
    # forces, in the rows of constraints.py). Left empty for the cluster ABA, which never forms
    # them.
    multipliers: dict = field(default_factory=dict)
    # Independent joints whose motion moves only bodies without inertia (Model.held_joint_names):
    # both methods hold them still (zero acceleration, their forces ignored).
    held_joints: tuple = ()
    # Per contact of the call (contacts.Contact, in their order): the force the world or the other
    # link applies on the contact's link, in the contact frame ([force; torque] for 6D).
    contact_forces: list = field(default_factory=list)


def check_method(method):
    if not isinstance(method, str) or method not in METHODS:
        raise ModelError(f'forward dynamics method {quote(method)} is unknown; expected one of '
                         f'{list(METHODS)}')


def check_settings(settings):
    if settings is not None and not isinstance(settings, ProximalSettings):
        raise ModelError(f'settings must be a ProximalSettings or None, got {quote(settings)}')


def lcaba_is_cheaper(model):
    """Method 'auto' starts with LCABA instead of the cluster ABA (LCABA_CROSSOVER); Model keeps
    the answer as ``auto_lcaba``."""
    work = sum(len(c.bodies) * c.m for c in model.cluster_list if not c.linear)
    return work > LCABA_CROSSOVER * (model.nb - 1)


def aba_info(model, data, q, yd, qdd):
    """Report on a cluster-ABA solution: the residual of K qdd = k, couplings as one product
    (k = 0) and loop clusters from their rows at qd = G yd."""
    residual = model.couplings.worst_velocity_violation(qdd)[0]
    if model.loop_bodies:
        qd = data.engine.spanning(q, np.zeros(model.ny), yd)   # G yd (g vanishes at zero velocity)
        update_transforms(model, data, q, model.loop_bodies)   # the compiled checks leave data.Xup
        #                                                        as it was
        for cluster, (v0, v1) in zip(model.cluster_list, model.v_range):
            if not cluster.linear:
                K, k = rows_at(model, data, cluster, qd[v0:v1])
                residual = max(residual, float(np.max(np.abs(K @ qdd[v0:v1] - k))))
    return ForwardDynamicsInfo(qdd, 'aba', constraint_residual=residual,
                               held_joints=model.held_joint_names)


def accepted(info, settings):
    """Whether an LCABA result keeps the constraint rows as method 'auto' requires
    (LCABA_RESIDUAL)."""
    scale = max(1.0, float(np.max(np.abs(info.acceleration), initial=0.0)))
    return info.constraint_residual <= max(settings.tolerance, LCABA_RESIDUAL * scale)


def auto_lcaba(model, data, q, v, tau, settings, exact=None, fallback_reason='', multipliers=True,
               contacts=()):
    """Method 'auto' where it takes LCABA (lcaba_info's arguments): its result where accepted,
    else that of exact() (the cluster ABA, or with contacts their exact route; None where it
    cannot run: a singular cluster), else LCABA at the largest penalty MAX_MU, which converges
    where a smaller one stalls; ModelError naming the residual where none keeps the rows."""
    settings = settings or DEFAULT_SETTINGS
    info = lcaba_info(model, data, q, v, tau, settings, fallback_reason, multipliers, contacts)
    if accepted(info, settings):
        return info
    reasons = [fallback_reason] if fallback_reason else []
    reasons.append(f'LCABA leaves the constraints violated by {info.constraint_residual:.3g} '
                   f'after {info.iterations} iterations (mu {settings.mu:g})')
    if exact is not None:
        try:
            return replace(exact(), fallback_reason=reasons[-1])
        except SingularConfigurationError as error:
            reasons.append(f'the exact route: {error}')
    if settings.mu < MAX_MU:
        stiff = replace(settings, mu=MAX_MU)
        info = lcaba_info(model, data, q, v, tau, stiff, '; '.join(reasons), multipliers,
                          contacts)
        if accepted(info, stiff):
            return info
        reasons.append(f'at mu {MAX_MU:g} by {info.constraint_residual:.3g}')
    raise ModelError(f'forward dynamics: no method keeps the constraints: {"; ".join(reasons)}. '
                     'Redundant contacts or loops have no solution where the velocities do not '
                     'keep them: pass velocities that do, or method="lcaba" for its iterate '
                     '(residual in info)')


def lcaba_info(model, data, q, v, tau, settings=None, fallback_reason='', multipliers=True,
               contacts=()):
    """LCABA (Sathya & Carpentier 2025) from the public inputs, v and tau validated
    (validation.vector); data.Xup at q and data.f_ext set beforehand; contacts
    (algorithms/contacts.ContactFrames) as further cut constraints."""
    qd = _spanning_velocities(model, data, q, v)
    tau = _spanning_forces(model, tau)
    settings = settings or DEFAULT_SETTINGS
    result = data.engine.lcaba(q, qd, tau, data.f_ext, settings, multipliers, contacts)
    return ForwardDynamicsInfo(result.qdd, 'lcaba', fallback_reason, result.residual,
                               result.iterations, result.multipliers, model.held_joint_names,
                               list(result.contact_forces))


def _spanning_velocities(model, data, q, v):
    """Spanning v as given (checked against K v = 0), or G yd lifted from independent ones."""
    yd = independent_velocities(model, data, v)
    if v.size == model.nv:
        return v
    try:
        # G yd (g vanishes at zero velocity)
        return data.engine.spanning(q, np.zeros(model.ny), yd)
    except SingularConfigurationError as error:
        raise SingularConfigurationError(
            f'v holds the {model.ny} independent velocities, which cannot be lifted to spanning '
            f'ones at this singular configuration ({error}); pass the {model.nv} spanning '
            'velocities instead') from None


def _spanning_forces(model, tau):
    """Spanning tau (nv) as given; independent forces (ny) act on the independent joints alone,
    which gives the same G^T tau because the independent rows of G are the identity."""
    if tau.size == model.nv:
        return tau
    spanning = np.zeros(model.nv)
    spanning[model.independent_v] = tau
    return spanning


def call(data, entry, call_, arguments):
    """The rule code of a public call's entry point (contract.Engine.attach) on arguments, those
    that are not float64 vectors converted once (faults.vectors)."""
    try:
        return entry(data.context, *arguments)
    except TypeError:                    # NotAFloat64Vector: a list, an int or float32 array, ...
        return entry(data.context, *vectors(call_, arguments))


def set_wrenches(model, data, wrenches, entry, call_, arguments):
    """data.f_ext from wrenches (validation.external_forces); a refused wrench is named after the
    faults of the call's other inputs that validation.py checks before it."""
    try:
        external_forces(model, data, wrenches)
    except ModelError as wrench_error:
        raise_first(model, data, entry, call_, arguments, wrench_error)


def raise_first(model, data, entry, call_, arguments, later):
    """Raises the error of an input fault the call's entry point finds in arguments before the
    error later (a wrench's, a link's), else later."""
    external_forces(model, data, None)
    code = call(data, entry, call_, arguments)
    if code in (LENGTH, OUT_OF_BOUND, QUATERNION, POSITION_VIOLATION):
        raise error(model, code, data.fault, call_, arguments) from None
    raise later


def lcaba_call(data, arguments, settings, residual):
    """The rule code of the fused LCABA call (Engine.forward_dynamics_lcaba)."""
    try:
        return data.engine.forward_dynamics_lcaba(*arguments, settings, residual)
    except TypeError:
        return data.engine.forward_dynamics_lcaba(*vectors(FORWARD, arguments), settings,
                                                  residual)


def route(model, data, arguments, method, settings, info):
    """Model.forward_dynamics without contacts, wrenches in data.f_ext: the method's entry point,
    and from the rule codes it returns the routes of method 'auto' (auto_lcaba's, on the compiled
    calls): a singular cluster to LCABA, an LCABA result beyond LCABA_RESIDUAL to the exact route
    (the cluster ABA where it was not tried), else to LCABA at the largest penalty MAX_MU."""
    check_method(method)
    check_settings(settings)
    settings = settings or DEFAULT_SETTINGS
    residual = LCABA_RESIDUAL if method == AUTO else np.inf
    reasons, tried = [], method == 'aba' or method == AUTO and not model.auto_lcaba
    if tried:
        code = call(data, data.forward_dynamics_entry, FORWARD, arguments)
        if code == OK:
            return _aba_result(model, data, info)
        if code not in SINGULAR or method == 'aba':
            raise error(model, code, data.fault, FORWARD, arguments)
        reasons.append(str(error(model, code, data.fault, FORWARD, arguments)))
    code = lcaba_call(data, arguments, settings, residual)
    if code == LCABA_REJECTED:
        reasons.append(f'LCABA leaves the constraints violated by {data.fault[2]:.3g} after '
                       f'{int(data.fault[0])} iterations (mu {settings.mu:g})')
        if not tried:
            code = call(data, data.forward_dynamics_entry, FORWARD, arguments)
            if code == OK:
                result = _aba_result(model, data, True)
                result = replace(result, fallback_reason=reasons[-1])
                return result if info else result.acceleration
            if code not in SINGULAR:
                raise error(model, code, data.fault, FORWARD, arguments)
            exact = error(model, code, data.fault, FORWARD, arguments)
            reasons.append(f'the exact route: {exact}')
        code = LCABA_REJECTED
        if settings.mu < MAX_MU:
            settings = replace(settings, mu=MAX_MU)
            code = lcaba_call(data, arguments, settings, residual)
            if code == LCABA_REJECTED:
                reasons.append(f'at mu {MAX_MU:g} by {data.fault[2]:.3g}')
        if code == LCABA_REJECTED:
            raise ModelError('forward dynamics: no method keeps the constraints: '
                             f'{"; ".join(reasons)}. Redundant contacts or loops have no solution '
                             'where the velocities do not keep them: pass velocities that do, or '
                             'method="lcaba" for its iterate (residual in info)')
    if code != OK:
        raise error(model, code, data.fault, FORWARD_LCABA, arguments)
    if not info:
        return data.engine.lcaba_qdd.copy()
    result = data.engine.lcaba_result(multipliers=True)
    if not all(all_finite(np.reshape(x, -1)) for x in result.multipliers.values()):
        raise error(model, NOT_FINITE, data.fault, FORWARD_LCABA, arguments)
    return ForwardDynamicsInfo(result.qdd, 'lcaba', '; '.join(reasons), result.residual,
                               result.iterations, result.multipliers, model.held_joint_names,
                               list(result.contact_forces))


def _aba_result(model, data, info):
    """The cluster ABA's qdd of the last call, with info its ForwardDynamicsInfo (aba_info)."""
    qdd = data.qdd_out.copy()
    return aba_info(model, data, *data.engine.checked(), qdd) if info else qdd
