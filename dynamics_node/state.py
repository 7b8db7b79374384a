"""Checks and conversions of user-supplied states: lengths, finiteness, unit quaternions, constraint
consistency, spanning <-> independent velocities and external wrenches."""

import numpy as np

from .clusters import constraint_jacobian
from .errors import ModelError
from .joints import QUATERNION_AT
from .kinematics import update_transforms

POSITION_TOLERANCE = 1e-6      # |phi(q)| accepted as a closed loop, m or rad
VELOCITY_TOLERANCE = 1e-6      # relative |v - G yd| accepted as consistent spanning velocities


def vector(value, name, sizes):
    """A finite float vector whose length is one of sizes (a dict length -> meaning)."""
    try:
        x = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f'{name} must be a vector of numbers') from None
    if x.size not in sizes:
        expected = ' or '.join(f'{n} ({meaning})' for n, meaning in sizes.items())
        raise ModelError(f'{name} has {x.size} entries; expected {expected}')
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ModelError(f'{name}[{bad[0]}] is {x[bad[0]]}; expected finite numbers')
    return x


def positions(model, data, q, check=True):
    """Spanning positions with unit quaternions; with check, the loops must be closed."""
    q = vector(q, 'q', {model.nq: 'spanning positions'}).copy()
    for i in range(1, model.nb):
        kind = model.joint_type[i]
        if kind in QUATERNION_AT:
            at = model.idx_q[i] + QUATERNION_AT[kind]
            norm = np.linalg.norm(q[at:at + 4])
            if abs(norm - 1.0) > 1e-5:
                raise ModelError(f'{kind} joint {model.joint_names[i - 1]!r}: quaternion (qx qy qz qw) has '
                                 f'norm {norm:.6g}; expected a unit quaternion')
            q[at:at + 4] /= norm
    if check:
        violation, name, cluster = model.couplings.worst_position_violation(q)
        update_transforms(model, data, q, model.loop_bodies)
        for c in model.cluster_list:
            if not c.linear:
                for con in c.constraints:
                    phi = np.max(np.abs(con.residual(data.Xup, lambda b: q[model.idx_q[b]])))
                    if phi > violation:
                        violation, name, cluster = phi, con.name, c.name
        if violation > POSITION_TOLERANCE:
            raise ModelError(f'q violates constraint {name!r} of cluster {cluster!r} by {violation:.3g} '
                             f'(tolerance {POSITION_TOLERANCE}); complete the dependent joints with '
                             'complete_positions()')
    return q


def independent_velocities(model, data, v, name='v'):
    """yd from spanning (nv) or independent (ny) velocities; spanning ones must satisfy K v = 0
    (checked with the loop clusters' transforms of positions(check=True) at the current q)."""
    x = vector(v, name, {model.nv: 'spanning', model.ny: 'independent'})
    if x.size == model.ny and model.ny != model.nv:
        return x
    tolerance = VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(x)))
    violation, _, cluster = model.couplings.worst_velocity_violation(x)
    for c, (v0, v1) in zip(model.cluster_list, model.v_range):
        if not c.linear:
            K, _ = constraint_jacobian(c, data.Xup, model.S, np.zeros(c.n))
            residual = np.max(np.abs(K[c.active_rows] @ x[v0:v1]))
            if residual > violation:
                violation, cluster = residual, c.name
    if violation > tolerance:
        raise ModelError(f'{name} violates the constraints of cluster {cluster!r} by {violation:.3g}; pass '
                         f'consistent spanning values or the {model.ny} independent ones')
    return x[model.independent_v]


def external_forces(model, data, wrenches):
    """data.f_ext from {link: (force, torque)} given in the link frame at the link origin."""
    data.f_ext[:] = 0.0
    for link, wrench in (wrenches or {}).items():
        if link not in model.link_frame:
            raise ModelError(f'wrench on unknown link {link!r}; links are {sorted(model.link_frame)}')
        try:
            force, torque = wrench
        except (TypeError, ValueError):
            raise ModelError(f'wrench on link {link!r} must be a pair (force[3], torque[3])') from None
        f = np.concatenate((vector(torque, f'torque on {link!r}', {3: 'x y z'}),
                            vector(force, f'force on {link!r}', {3: 'x y z'})))
        body, X_link_body = model.link_frame[link]
        data.f_ext[body] += X_link_body.T @ f          # force transform link -> body
