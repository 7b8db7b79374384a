"""Forward dynamics by method: the LCABA route of Model.forward_dynamics and the report it
returns."""

from dataclasses import dataclass, field

import numpy as np

from .algorithms.kinematics import update_transforms
from .algorithms.lcaba import DEFAULT_SETTINGS, ProximalSettings
from .errors import ModelError, quote, SingularConfigurationError
from .multibody.clusters import constraint_jacobian
from .validation import independent_velocities

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


@dataclass(frozen=True)
class ForwardDynamicsInfo:
    acceleration: np.ndarray           # spanning qdd (nv)
    method_used: str                   # 'aba' (cluster ABA) or 'lcaba'
    fallback_reason: str = ''          # why method 'auto' left the cluster ABA ('' if it did not)
    constraint_residual: float = 0.0   # ||K qdd - k||_inf over every loop and coupling row
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
                K, k = constraint_jacobian(cluster, data.Xup, model.S, qd[v0:v1])
                residual = max(residual, float(np.max(np.abs(K @ qdd[v0:v1] - k))))
    return ForwardDynamicsInfo(qdd, 'aba', constraint_residual=residual,
                               held_joints=model.held_joint_names)


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
