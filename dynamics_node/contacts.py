"""Contacts given per call: rigid bilateral contacts of link frames with the world or with other
links, Pinocchio's rigid constraints (RigidConstraintModel, LOCAL, zero Baumgarte gains), added to
the model's own loops and couplings (algorithms/contacts.py has the rows and the exact route).

Forward dynamics: the exact route (cluster ABA, the Delassus matrix from the cluster EFPA, a second
ABA pass; Chignoli et al. 2023) or LCABA with the contacts as cut constraints (Sathya & Carpentier
2025). Inverse dynamics: projected inverse dynamics (Aghili 2005; Mistry & Righetti 2012), the
actuated torques of least weighted norm with H_y ydd + C_y = S^T tau + J_c^T lambda; for measured
velocities, the same at the velocities and accelerations nearest to them that keep the contacts
(contact_bias_forces).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
import threading
import weakref

import numpy as np

from .algorithms.contacts import contact_set_key, ContactFrames, solve_delassus
from .errors import ModelError, quote
from .forward_dynamics import aba_info, ForwardDynamicsInfo, lcaba_info
from .spatial import pose_transform, quaternion_matrix
from .validation import independent_velocities, vector
from . import bounds

KINDS = {'3D': 3, '6D': 6}
IDENTITY = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
QUATERNION_TOLERANCE = 1e-5        # |norm - 1| accepted (and normalized), as for q's quaternions
# Relative residual of the unactuated rows J_u^T lambda = tau_u above which inverse dynamics says
# that no torques produce the motion (a least-squares solve leaves ~1e-15 where one exists).
UNACTUATED_TOLERANCE = 1e-8
# Singular values of the contacts' Jacobian J_c below this fraction of the largest count as zero
# in its pseudo-inverse (contact_bias_forces): redundant contacts, and contacts that repeat a
# loop's constraint, are then solved in least squares.
PSEUDOINVERSE_CUTOFF = 1e-10
RESOLVED = 64                  # contact sets whose frames are kept per model (resolve)
_RESOLVED = weakref.WeakKeyDictionary()
_RESOLVING = threading.Lock()


@dataclass(frozen=True)
class Contact:
    """A frame on ``link`` (``placement`` ((x, y, z), (qx, qy, qz, qw)) in the link's frame, its
    origin by default) held to the world, or to a frame on link ``other`` (``other_placement`` in
    that link's frame). kind '6D': the relative spatial acceleration in the contact frame is zero,
    force [force; torque]; '3D': the relative classical acceleration of the contact points, a
    force. Forces: what the world (or ``other``) applies on ``link``, in the contact frame."""

    link: str
    kind: str = '6D'
    placement: tuple = None
    other: str = None
    other_placement: tuple = None

    def __post_init__(self):
        if not isinstance(self.link, str):
            raise ModelError(f'Contact link must be a link name, got {quote(self.link)}')
        where = f'contact on link {quote(self.link)}'
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ModelError(f'{where}: kind {quote(self.kind)} is unknown; expected one of '
                             f'{list(KINDS)}')
        if self.other is not None and not isinstance(self.other, str):
            raise ModelError(f'{where}: other must be a link name or None, got '
                             f'{quote(self.other)}')
        if self.other == self.link:
            raise ModelError(f'{where}: other is the same link; a link cannot be held to itself')
        if self.other is None and self.other_placement is not None:
            raise ModelError(f'{where}: other_placement is given without other; a contact with '
                             'the world is held where the contact frame is')
        object.__setattr__(self, 'placement', _placement(self.placement, f'{where}: placement'))
        if self.other is not None:
            object.__setattr__(self, 'other_placement',
                               _placement(self.other_placement, f'{where}: other_placement'))
        object.__setattr__(self, '_hash', hash((self.link, self.kind, self.placement, self.other,
                                                self.other_placement)))

    def __hash__(self):
        return self._hash          # computed once: a contact set is looked up at every call

    @property
    def rows(self):
        return KINDS[self.kind]


def _placement(value, what):
    """((x, y, z), (qx, qy, qz, qw)) as floats, the quaternion normalized (None: the identity)."""
    if value is None:
        return IDENTITY
    try:
        position, quaternion = value
    except (TypeError, ValueError):
        raise ModelError(f'{what} must be ((x, y, z), (qx, qy, qz, qw)), got '
                         f'{quote(value)}') from None
    p = vector(position, f'{what} position', {3: 'x y z, m'}, bounds.LENGTH)
    quat = vector(quaternion, f'{what} quaternion', {4: 'qx qy qz qw'}, bounds.LENGTH)
    norm = np.linalg.norm(quat)
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise ModelError(f'{what} quaternion (qx qy qz qw) has norm {norm:.6g}; expected a unit '
                         'quaternion')
    return tuple(float(x) for x in p), tuple(float(x) for x in quat / norm)


def _transform(placement):
    """^cX_link of a placement (the contact frame's pose in the link's frame)."""
    position, quaternion = placement
    return pose_transform(quaternion_matrix(*quaternion), np.array(position))


def resolve(model, contacts):
    """ContactFrames of contacts (a Contact or a sequence of them) on the model's bodies; refuses
    unknown links, contacts that hold a body to itself and a point named twice. The frames of the
    RESOLVED contact sets (tuples of Contacts) most recently resolved are kept per model."""
    key = contact_set_key(contacts)
    cache = _RESOLVED.setdefault(model, {})
    try:
        frames = cache.get(key)
    except TypeError:                          # an unhashable entry: _resolve names it
        frames = key = None
    if frames is None:
        frames = _resolve(model, contacts)     # only sets of Contacts get this far
        if key is not None:
            with _RESOLVING:                   # threads may share the model
                if len(cache) >= RESOLVED:
                    del cache[next(iter(cache))]       # the oldest
                cache[key] = frames
    return frames


def _resolve(model, contacts):
    if isinstance(contacts, Contact):
        contacts = [contacts]
    if not isinstance(contacts, Sequence) or isinstance(contacts, str):
        raise ModelError(f'contacts must be a Contact, a list of them or None, got '
                         f'{quote(contacts)}')
    frames, seen = [], {}
    for i, contact in enumerate(contacts):
        if not isinstance(contact, Contact):
            raise ModelError(f'contacts[{i}] must be a Contact, got {quote(contact)}')
        name = f'{i} ({contact.kind} on {quote(contact.link)})'
        for link in (contact.link, contact.other):
            if link is not None and link not in model.link_frame:
                raise ModelError(f'contacts[{i}]: unknown link {quote(link)}; links are '
                                 f'{quote(sorted(model.link_frame))}')
        point = (contact.link, contact.placement[0], contact.other)
        if point in seen:
            raise ModelError(f'contacts[{i}] holds the point {quote(contact.placement[0])} of '
                             f'link {quote(contact.link)} again (contacts[{seen[point]}]); name '
                             'each contact point once')
        seen[point] = i
        body1, X_link_body1 = model.link_frame[contact.link]
        X1 = _transform(contact.placement) @ X_link_body1
        body2, X2 = 0, None
        if contact.other is not None:
            body2, X_other_body2 = model.link_frame[contact.other]
            X2 = _transform(contact.other_placement) @ X_other_body2
        if body1 == body2:
            raise ModelError(f'contacts[{i}]: link {quote(contact.link)} and '
                             f'{quote(contact.other or "the world")} move as one body; the '
                             'contact would constrain nothing')
        frames.append(ContactFrames(name, contact.rows, body1, X1, body2, X2, contact))
    return tuple(frames)


def forward_dynamics(model, data, q, v, tau, frames, method, settings, info=True):
    """ForwardDynamicsInfo with contact_forces (inputs validated, data.f_ext set): the exact route
    for method 'aba' (SingularConfigurationError at a singular cluster or a singular Delassus
    matrix: redundant contacts), LCABA for 'lcaba' and 'auto'. LCABA took 0.05-0.22 of the exact
    route's time on every robot measured, 0.27-0.72 on the NumPy engine (bench/contact_methods.py,
    docs/library.md#contacts): one compiled call against several, and one elimination with two or
    three reduced sweeps against two ABA passes and the EFPA."""
    if method == 'aba':
        return _exact(model, data, q, v, tau, frames, info)
    return lcaba_info(model, data, q, v, tau, settings, contacts=frames)


def _exact(model, data, q, v, tau, frames, info):
    """The exact route (Chignoli et al. 2023 Sec. VIII, contact forces from Lambda^-1): the free
    accelerations from the cluster ABA, the Delassus matrix D = J_c H_y^-1 J_c^T from the cluster
    EFPA, D lambda = -(J_c ydd_free + Jdot yd), then the cluster ABA again with the forces
    K^b^T lambda added to the bodies'. SingularConfigurationError names the contacts where D is
    singular (redundant contacts)."""
    engine, yd = data.engine, independent_velocities(model, data, v)
    engine.forward_dynamics(q, yd, tau, data.f_ext)
    _, drift, _ = engine.contact_state(frames, jacobian=False)
    lam = -solve_delassus(engine.delassus(q, frames), frames, drift)
    qdd = engine.forward_dynamics(q, yd, tau, data.f_ext + engine.contact_wrenches(frames, lam),
                                  spanning=True)
    forces = np.split(lam, np.cumsum([c.rows for c in frames])[:-1])
    if not info:
        return ForwardDynamicsInfo(qdd, 'aba', contact_forces=forces)
    _, contact_residual, _ = engine.contact_state(frames, jacobian=False)
    info = aba_info(model, data, q, yd, qdd)
    residual = max(info.constraint_residual, np.max(np.abs(contact_residual)))
    return replace(info, constraint_residual=float(residual), contact_forces=forces)


@dataclass(frozen=True)
class InverseDynamicsInfo:
    efforts: np.ndarray                # ny independent efforts: actuated ones, zero elsewhere
    contact_forces: list = field(default_factory=list)     # per contact, as ForwardDynamicsInfo
    # |J_c ydd + Jdot yd|_inf of the given accelerations (checked against the tolerance)
    contact_residual: float = 0.0


def inverse_dynamics(model, data, q, yd, ydd, frames, weights):
    """Projected inverse dynamics (Aghili 2005; Mistry & Righetti 2012): with tau_id = H_y ydd +
    C_y - J_ext^T f_ext from the cluster RNEA (data.f_ext set), the actuated torques tau_a of least
    weighted norm sum w tau_a^2 and contact forces lambda with tau_id = S^T tau_a + J_c^T lambda.
    The unactuated rows (floating base, passive coordinates) J_u^T lambda = tau_id,u fix lambda up
    to the null space N of J_u^T; tau_a = tau_id,a - J_a^T (lambda_p + N z) is then a weighted
    least-squares problem in z. Raises ModelError where J_u^T lambda = tau_id,u has no solution."""
    tau_id = data.engine.inverse_dynamics(q, yd, ydd, data.f_ext)
    J, residual, velocity = data.engine.contact_state(frames)       # at the RNEA's state
    velocity = np.max(np.abs(velocity))
    if velocity > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(yd), initial=0.0)):
        raise ModelError(f'v moves the contacts by {velocity:.3g} (relative velocity of the '
                         'contact frames); pass velocities that keep the contacts')
    residual = np.max(np.abs(residual))
    if residual > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(ydd), initial=0.0)):
        raise ModelError(f'a violates the contacts by {residual:.3g} (relative acceleration of '
                         'the contact frames); pass accelerations that keep the contacts')
    actuated, unactuated = model.actuated_y, model.unactuated_y
    A_u, b_u = J[:, unactuated].T, tau_id[unactuated]
    U, s, Vt = np.linalg.svd(A_u) if A_u.size else (None, np.zeros(0), np.eye(J.shape[0]))
    rank = int(np.sum(s > 1e-12 * max(s.max(initial=0.0), 1.0)))
    lam = Vt[:rank].T @ ((U[:, :rank].T @ b_u) / s[:rank]) if rank else np.zeros(J.shape[0])
    gap = A_u @ lam - b_u
    worst = int(np.argmax(np.abs(gap))) if gap.size else 0
    if gap.size and abs(gap[worst]) > UNACTUATED_TOLERANCE * max(1.0, np.max(np.abs(tau_id))):
        entry = model.independent_v[unactuated[worst]]
        joint = model.joint_names[int(np.searchsorted(model.idx_v[1:], entry, side='right')) - 1]
        raise ModelError(f'no actuator torques produce this motion: the contacts cannot carry '
                         f'what the unactuated coordinate {unactuated[worst]} (joint '
                         f'{quote(joint)}) needs (residual {abs(gap[worst]):.3g})')
    N = Vt[rank:].T                                            # null space of J_u^T
    w = np.sqrt(weights[actuated])
    A_a = J[:, actuated].T
    z = np.linalg.lstsq(w[:, None] * (A_a @ N), w * (tau_id[actuated] - A_a @ lam),
                        rcond=1e-12)[0] if N.size else np.zeros(0)
    lam = lam + N @ z
    efforts = np.zeros(model.ny)
    efforts[actuated] = tau_id[actuated] - A_a @ lam
    forces = np.split(lam, np.cumsum([c.rows for c in frames])[:-1])
    return InverseDynamicsInfo(efforts, forces, float(residual))


@dataclass(frozen=True)
class ContactBiasInfo:
    efforts: np.ndarray                # ny efforts, as InverseDynamicsInfo.efforts
    velocities: np.ndarray             # ny projected independent velocities yd_c
    accelerations: np.ndarray          # ny independent accelerations ydd that keep the contacts
    contact_forces: list = field(default_factory=list)     # per contact, as ForwardDynamicsInfo
    velocity_correction: float = 0.0   # |yd - yd_c|_inf


def contact_bias_forces(model, data, q, yd, frames, weights):
    """Projected inverse dynamics at the state nearest to (yd, ydd = 0) that keeps the contacts
    (data.f_ext set). The contacts' velocity rows J_c yd = 0 and acceleration rows J_c ydd +
    Jdot yd = 0 (J_c = sum_b K^b J_b in independent coordinates, so loops included) are solved in
    least squares with the pseudo-inverse J_c^+ (PSEUDOINVERSE_CUTOFF): yd_c = (1 - J_c^+ J_c) yd,
    the least change that keeps them, the projection onto the null space of J_c of projected
    dynamics (Aghili 2005; Mistry & Righetti 2012), and ydd = -J_c^+ Jdot yd_c, the least
    accelerations that keep them. Then inverse_dynamics at (q, yd_c, ydd). At rest both are
    exactly zero; where J_c yd = 0 and Jdot yd = 0 exactly, yd_c = yd and ydd = 0 exactly."""
    engine, zero = data.engine, np.zeros(model.ny)
    if not frames:
        return ContactBiasInfo(engine.inverse_dynamics(q, yd, zero, data.f_ext), yd.copy(), zero)
    engine.inverse_dynamics(q, yd, zero, data.f_ext)
    J = engine.contact_state(frames)[0]
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    rank = int(np.sum(s > PSEUDOINVERSE_CUTOFF * s.max(initial=0.0)))

    def pseudo_inverse(b):
        return Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])

    yd_c = yd - pseudo_inverse(J @ yd)
    engine.inverse_dynamics(q, yd_c, zero, data.f_ext)
    drift = engine.contact_state(frames, jacobian=False, drift=True)[1]       # Jdot yd_c
    ydd = -pseudo_inverse(drift)
    gap = np.max(np.abs(J @ ydd + drift))
    if gap > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(ydd), initial=0.0)):
        raise ModelError(f'no accelerations keep the contacts at the projected velocities '
                         f'(residual {gap:.3g}): their Jacobian loses rank at q, a singular '
                         'configuration of the contacts')
    result = inverse_dynamics(model, data, q, yd_c, ydd, frames, weights)
    return ContactBiasInfo(result.efforts, yd_c, ydd, result.contact_forces,
                           float(np.max(np.abs(yd - yd_c))))
