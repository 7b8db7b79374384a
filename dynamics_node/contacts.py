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

from .algorithms.contacts import (contact_set_key, ContactFrames, DELASSUS_RESIDUAL_LIMIT,
                                  singular_delassus, solve_delassus)
from .errors import ModelError, quote
from .forward_dynamics import aba_info, auto_lcaba, ForwardDynamicsInfo, lcaba_info
from .kernels import contact_dynamics as compiled
from .spatial import pose_transform, quaternion_matrix
from .validation import independent_velocities, vector
from . import bounds

KINDS = {'3D': 3, '6D': 6}
IDENTITY = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
QUATERNION_TOLERANCE = 1e-5        # |norm - 1| accepted (and normalized), as for q's quaternions
# Residual of the unactuated rows J_u^T lambda = tau_id,u (floating base, passive coordinates),
# relative to the robot's weight (times its reach for a moment; robot_size), above which inverse
# dynamics says that no torques produce the motion. A least-squares solve leaves about 1e-16 of
# the largest |tau_id| where a solution exists: below this up to accelerations of 1e7 g.
UNACTUATED_TOLERANCE = 1e-6
STANDARD_GRAVITY = 9.80665     # m/s^2: the weight's gravity where the model's is weaker
# Singular values of the contacts' Jacobian J_c below this fraction of the largest count as zero in
# projected inverse dynamics (the range of J_c^T)
RANK_CUTOFF = 1e-12
# Singular values of the contacts' Jacobian J_c below this fraction of the largest count as zero
# in its pseudo-inverse (contact_bias_forces): redundant contacts, and contacts that repeat a
# loop's constraint, are then solved in least squares.
PSEUDOINVERSE_CUTOFF = 1e-10
RESOLVED = 64                  # contact sets whose frames are kept per model (resolve)
_RESOLVED = weakref.WeakKeyDictionary()
_RESOLVING = threading.Lock()
_SIZES = weakref.WeakKeyDictionary()       # model -> robot_size(model)


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
    unknown links, contacts that hold a body to itself, a point named twice and more rows than
    bounds.CONTACT_ROWS_PER_BODY per moving body (before anything else is built). The frames of
    the RESOLVED contact sets (tuples of Contacts) most recently resolved are kept per model."""
    if isinstance(contacts, (list, tuple)) and KINDS['3D'] * len(contacts) > _row_limit(model):
        _too_many_rows(model, f'{len(contacts)} contacts have at least {3 * len(contacts)} rows')
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


def _row_limit(model):
    return bounds.CONTACT_ROWS_PER_BODY * (model.nb - 1)


def _too_many_rows(model, counted):
    raise ModelError(f'{counted} (3 per 3D contact, 6 per 6D), more than the '
                     f'{_row_limit(model)} this model takes ({bounds.CONTACT_ROWS_PER_BODY} per '
                     'moving body, of which 6 at most are independent)')


def _resolve(model, contacts):
    if isinstance(contacts, Contact):
        contacts = [contacts]
    if not isinstance(contacts, Sequence) or isinstance(contacts, str):
        raise ModelError(f'contacts must be a Contact, a list of them or None, got '
                         f'{quote(contacts)}')
    frames, seen, rows = [], {}, 0
    for i, contact in enumerate(contacts):
        if not isinstance(contact, Contact):
            raise ModelError(f'contacts[{i}] must be a Contact, got {quote(contact)}')
        rows += contact.rows
        if rows > _row_limit(model):
            _too_many_rows(model, f'contacts[:{i + 1}] have {rows} rows')
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
    matrix: redundant contacts), LCABA for 'lcaba' and 'auto', which takes the exact route where
    LCABA's result does not keep the rows (forward_dynamics.auto_lcaba). LCABA took 0.50-1.32 of
    the exact route's time per public call on the robots measured (both one compiled call),
    0.27-0.71 on the NumPy engine (bench/contact_methods.py, docs/library.md#contacts)."""
    if method == 'aba':
        return _exact(model, data, q, v, tau, frames, info)
    if method == 'lcaba':
        return lcaba_info(model, data, q, v, tau, settings, contacts=frames)
    return auto_lcaba(model, data, q, v, tau, settings, contacts=frames,
                      exact=lambda: _exact(model, data, q, v, tau, frames, True))


def _exact(model, data, q, v, tau, frames, info):
    """The exact route (Chignoli et al. 2023 Sec. VIII, contact forces from Lambda^-1): the free
    accelerations from the cluster ABA, the Delassus matrix D = J_c H_y^-1 J_c^T from the cluster
    EFPA, D lambda = -(J_c ydd_free + Jdot yd), then the cluster ABA again with the forces
    K^b^T lambda added to the bodies'. SingularConfigurationError names the contacts where D is
    singular (redundant contacts): more rows than independent coordinates (checked before D is
    formed: it then stays within ny x ny), its Cholesky pivots, or accelerations that miss the
    contacts' rows (DELASSUS_RESIDUAL_LIMIT). One compiled call where the engine has it
    (kernels/contact_dynamics.exact_forward_dynamics)."""
    rows = sum(c.rows for c in frames)
    if rows > model.ny:                        # D (rows x rows) has rank ny at most
        raise singular_delassus(frames, f': {rows} rows on {model.ny} coordinates')
    engine, yd = data.engine, independent_velocities(model, data, v)
    calls = engine.contact_calls(frames)
    status = compiled.SINGULAR_DELASSUS if calls is None else calls.forward_dynamics(
        q, yd, tau, data.f_ext)
    if status == compiled.SINGULAR_DELASSUS:
        # the engine's algorithms step by step; on a compiled engine, where its one call found D
        # singular: whether a D singular in exact arithmetic passes its pivots is round-off, which
        # the steps judge as they always did (D from NumPy's products and Cholesky)
        lam, qdd, contact_residual = exact_forward_dynamics(engine, data, q, yd, tau, frames)
    else:
        _fault(model, frames, status, calls.buffers)
        lam, qdd = calls.buffers.lam.copy(), calls.qdd.copy()
        contact_residual = float(calls.buffers.info[0])
    forces = _split(lam, frames)
    if not info:
        return ForwardDynamicsInfo(qdd, 'aba', contact_forces=forces)
    info = aba_info(model, data, q, yd, qdd)
    residual = max(info.constraint_residual, contact_residual)
    return replace(info, constraint_residual=float(residual), contact_forces=forces)


def exact_forward_dynamics(engine, data, q, yd, tau, frames):
    """(lambda, qdd, contact residual) of the exact route on the engine's algorithms (_exact)."""
    engine.forward_dynamics(q, yd, tau, data.f_ext)
    _, drift, _ = engine.contact_state(frames, jacobian=False)
    lam = -solve_delassus(engine.delassus(q, frames), frames, drift)
    qdd = engine.forward_dynamics(q, yd, tau, data.f_ext + engine.contact_wrenches(frames, lam),
                                  spanning=True)
    contact_residual = np.max(np.abs(engine.contact_state(frames, jacobian=False)[1]))
    scale = max(1.0, np.max(np.abs(qdd), initial=0.0))
    if not contact_residual <= DELASSUS_RESIDUAL_LIMIT * scale:
        raise _missing_rows(frames, contact_residual / scale)
    return lam, qdd, contact_residual


def _split(lam, frames):
    """The stacked contact forces, one array (a view) per contact."""
    forces, r = [], 0
    for contact in frames:
        forces.append(lam[r:r + contact.rows])
        r += contact.rows
    return forces


def _missing_rows(frames, relative):
    return singular_delassus(frames, f' (its accelerations miss the rows by {relative:.3g} '
                                     'relative)')


def _moving(velocity):
    return ModelError(f'v moves the contacts by {velocity:.3g} (relative velocity of the '
                      'contact frames); pass velocities that keep the contacts')


def _violating(residual):
    return ModelError(f'a violates the contacts by {residual:.3g} (relative acceleration of '
                      'the contact frames); pass accelerations that keep the contacts')


def _no_accelerations(gap):
    return ModelError(f'no accelerations keep the contacts at the projected velocities '
                      f'(residual {gap:.3g}): their Jacobian loses rank at q, a singular '
                      'configuration of the contacts')


def _fault(model, frames, status, buffers):
    """Raises the error of a compiled contact route's fault (kernels/contact_dynamics.py), with
    the NumPy twins' message; nothing for OK."""
    if status == compiled.MOVES:
        raise _moving(buffers.info[0])
    if status == compiled.VIOLATES:
        raise _violating(buffers.info[0])
    if status == compiled.UNACTUATED:
        _check_unactuated(model, buffers.gap)
    if status == compiled.NO_ACCELERATIONS:
        raise _no_accelerations(buffers.info[0])
    if status == compiled.SINGULAR_DELASSUS:
        raise singular_delassus(frames)
    if status == compiled.MISSES_ROWS:
        raise _missing_rows(frames, buffers.info[1])


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

    The forces act only through g = J_c^T lambda, which ranges over the span of V, J_c = U s V^T
    the economy SVD of J_c (m x ny; singular values above RANK_CUTOFF of the largest): g = V c,
    and lambda = U c / s is the least that gives it, in time and memory linear in m. The
    unactuated rows (floating base, passive coordinates) g_u = V_u c = tau_id,u fix c up to the
    null space N of V_u; tau_a = tau_id,a - V_a (c_p + N z) is then a weighted least-squares
    problem in z. Raises ModelError where V_u c = tau_id,u has no solution (UNACTUATED_TOLERANCE of
    the robot's weight). One compiled call where the engine has it
    (kernels/contact_dynamics.inverse_dynamics)."""
    calls = data.engine.contact_calls(frames)
    if calls is not None:
        _fault(model, frames, calls.inverse_dynamics(q, yd, ydd, data.f_ext, weights),
               calls.buffers)
        return inverse_info(calls, frames)
    tau_id = data.engine.inverse_dynamics(q, yd, ydd, data.f_ext)
    J, residual, velocity = data.engine.contact_state(frames)       # at the RNEA's state
    velocity = np.max(np.abs(velocity))
    if velocity > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(yd), initial=0.0)):
        raise _moving(velocity)
    residual = np.max(np.abs(residual))
    if residual > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(ydd), initial=0.0)):
        raise _violating(residual)
    actuated, unactuated = model.actuated_y, model.unactuated_y
    U, s, V = _range(J)                                       # g = J_c^T lambda = V c
    c, N = _least_squares(V[unactuated], tau_id[unactuated])
    _check_unactuated(model, V[unactuated] @ c - tau_id[unactuated])
    w = np.sqrt(weights[actuated])
    if N.size and actuated.size:
        c = c + N @ np.linalg.lstsq(w[:, None] * (V[actuated] @ N),
                                    w * (tau_id[actuated] - V[actuated] @ c), rcond=RANK_CUTOFF)[0]
    lam = U @ (c / s)
    efforts = np.zeros(model.ny)
    efforts[actuated] = tau_id[actuated] - J[:, actuated].T @ lam
    return InverseDynamicsInfo(efforts, _split(lam, frames), float(residual))


def _range(J):
    """(U, s, V) of the economy SVD J = U diag(s) V^T (m x ny: U m x r, V ny x r), truncated to
    the singular values above RANK_CUTOFF of the largest."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    rank = int(np.sum(s > RANK_CUTOFF * s.max(initial=0.0)))
    return U[:, :rank], s[:rank], Vt[:rank].T


def _least_squares(A, b):
    """(x, N): the least-norm least-squares solution of A x = b and a basis N of A's null space.
    A holds rows of a matrix with orthonormal columns: its singular values are at most 1, and
    RANK_CUTOFF applies to them as they are."""
    if not A.size:
        return np.zeros(A.shape[1]), np.eye(A.shape[1])
    U, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > RANK_CUTOFF))
    return Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank]), Vt[rank:].T


def _check_unactuated(model, gap):
    """ModelError where the contacts leave the unactuated rows unbalanced by more than
    UNACTUATED_TOLERANCE of the robot's weight (times its reach for a moment)."""
    if not gap.size:
        return
    scale, rotational = _weight_scales(model)
    worst = int(np.argmax(np.abs(gap) / np.maximum(scale, np.finfo(float).tiny)))
    if abs(gap[worst]) > UNACTUATED_TOLERANCE * scale[worst]:
        y = model.unactuated_y[worst]
        entry = model.independent_v[y]
        joint = model.joint_names[int(np.searchsorted(model.idx_v[1:], entry, side='right')) - 1]
        unit = "the robot's weight" + (' times its reach' if rotational[worst] else '')
        raise ModelError(f'no actuator torques produce this motion: the contacts cannot carry '
                         f'what the unactuated coordinate {y} (joint {quote(joint)}) needs '
                         f'(residual {abs(gap[worst]):.3g}, {abs(gap[worst]) / scale[worst]:.2g} '
                         f'of {unit})')


def _weight_scales(model):
    """Per unactuated coordinate, the robot's weight M max(|gravity|, STANDARD_GRAVITY) (M its
    mass) for a force, times its reach for a moment (robot_size); and which are moments."""
    mass, reach, rotational = robot_size(model)
    weight = mass * max(float(np.linalg.norm(model.gravity)), STANDARD_GRAVITY)
    rotational = rotational[model.unactuated_y]
    return weight * np.where(rotational, reach, 1.0), rotational


def robot_size(model):
    """(M, L, rotational): the total mass, the reach L (the longest chain of joint offsets from
    the root to a body's origin plus that body's radius of gyration about it, sqrt(tr I_o /
    2 m): at least its centre of mass' distance) and, per independent coordinate, whether its
    force is a moment (a column of S with an angular part). Computed once per model."""
    size = _SIZES.get(model)
    if size is None:
        reach, extent = np.zeros(model.nb), 0.0
        for b in range(1, model.nb):
            X, I = model.X_tree[b], model.inertia[b]
            offset = -X[:3, :3].T @ X[3:, :3]                 # skew of the joint frame's origin
            reach[b] = reach[model.parent[b]] + np.linalg.norm(
                (offset[2, 1], offset[0, 2], offset[1, 0]))
            if I[3, 3] > 0.0:
                extent = max(extent, reach[b] + np.sqrt(np.trace(I[:3, :3]) / (2.0 * I[3, 3])))
        rotational = np.concatenate([np.any(model.S[b][:3] != 0.0, axis=0)
                                     for b in range(1, model.nb)])
        size = _SIZES[model] = (sum(I[3, 3] for I in model.inertia[1:]), extent,
                                rotational[model.independent_v])
    return size


@dataclass(frozen=True)
class ContactBiasInfo:
    efforts: np.ndarray                # ny efforts, as InverseDynamicsInfo.efforts
    velocities: np.ndarray             # ny projected independent velocities yd_c
    accelerations: np.ndarray          # ny independent accelerations ydd that keep the contacts
    contact_forces: list = field(default_factory=list)     # per contact, as ForwardDynamicsInfo
    velocity_correction: float = 0.0   # |yd - yd_c|_inf
    acceleration_correction: float = 0.0    # |ydd_m - ydd|_inf of measured ydd_m (else 0)


def contact_bias_forces(model, data, q, yd, frames, weights, measured=None):
    """Projected inverse dynamics at the state nearest to (yd, ydd_m) that keeps the contacts
    (data.f_ext set), ydd_m the measured accelerations (default zero). The contacts' velocity rows
    J_c yd = 0 and acceleration rows J_c ydd + Jdot yd = 0 (J_c = sum_b K^b J_b in independent
    coordinates, so loops included) are solved in least squares with the pseudo-inverse J_c^+
    (PSEUDOINVERSE_CUTOFF): yd_c = (1 - J_c^+ J_c) yd, the least change that keeps them, the
    projection onto the null space of J_c of projected dynamics (Aghili 2005; Mistry & Righetti
    2012), and ydd = ydd_m - J_c^+ (J_c ydd_m + Jdot yd_c), the least change of ydd_m that keeps
    them. Then inverse_dynamics at (q, yd_c, ydd). At rest both are exactly zero; where J_c yd = 0
    and Jdot yd = 0 exactly, yd_c = yd and ydd = 0 exactly. One compiled call where the engine
    has it and ydd_m is zero (kernels/contact_dynamics.contact_bias_forces)."""
    engine = data.engine
    calls = engine.contact_calls(frames) if frames and measured is None else None
    if calls is not None:
        _fault(model, frames, calls.contact_bias_forces(q, yd, data.f_ext, weights),
               calls.buffers)
        return bias_info(calls, frames)
    zero = np.zeros(model.ny)
    given = zero if measured is None else measured
    if not frames:
        return ContactBiasInfo(engine.inverse_dynamics(q, yd, given, data.f_ext), yd.copy(),
                               given.copy())
    engine.inverse_dynamics(q, yd, zero, data.f_ext)
    J = engine.contact_state(frames)[0]
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    rank = int(np.sum(s > PSEUDOINVERSE_CUTOFF * s.max(initial=0.0)))

    def pseudo_inverse(b):
        return Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])

    yd_c = yd - pseudo_inverse(J @ yd)
    engine.inverse_dynamics(q, yd_c, zero, data.f_ext)
    drift = engine.contact_state(frames, jacobian=False, drift=True)[1]       # Jdot yd_c
    ydd = given - pseudo_inverse(J @ given + drift)
    gap = np.max(np.abs(J @ ydd + drift))
    if gap > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(ydd), initial=0.0)):
        raise _no_accelerations(gap)
    result = inverse_dynamics(model, data, q, yd_c, ydd, frames, weights)
    return ContactBiasInfo(result.efforts, yd_c, ydd, result.contact_forces,
                           float(np.max(np.abs(yd - yd_c))),
                           0.0 if measured is None else float(np.max(np.abs(given - ydd))))


def bias_info(calls, frames, info=True):
    """ContactBiasInfo of the compiled contact_bias_forces' results (in the buffers of
    contact_calls.ContactCalls calls) on the contacts frames; without info the efforts alone."""
    b = calls.buffers
    if not info:
        return b.efforts.copy()
    return ContactBiasInfo(b.efforts.copy(), b.yd_c.copy(), b.ydd.copy(),
                           _split(b.lam.copy(), frames), float(b.info[1]))


def inverse_info(calls, frames, info=True):
    """InverseDynamicsInfo of the compiled projected inverse dynamics' results, as bias_info."""
    b = calls.buffers
    if not info:
        return b.efforts.copy()
    return InverseDynamicsInfo(b.efforts.copy(), _split(b.lam.copy(), frames), float(b.info[1]))
