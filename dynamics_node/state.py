"""Checks and conversions of user-supplied states: lengths, finiteness, unit quaternions, constraint
consistency, spanning <-> independent velocities and external wrenches."""

import functools

import numpy as np

from .errors import ModelError
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
    if not _finiteness_check()(x):
        bad = np.flatnonzero(~np.isfinite(x))[0]
        raise ModelError(f'{name}[{bad}] is {x[bad]}; expected finite numbers')
    return x


@functools.cache
def _finiteness_check():
    """all(isfinite(x)): compiled_checks.all_finite where numba is installed (0.1 us instead of 1 us)."""
    try:
        from .compiled_checks import all_finite
    except ImportError:
        return lambda x: bool(np.all(np.isfinite(x)))
    return all_finite


def positions(model, data, q, check=True):
    """Spanning positions with unit quaternions; with check, the loops must be closed."""
    q = vector(q, 'q', {model.nq: 'spanning positions'}).copy()
    if data.engine.accept_positions(q, check, POSITION_TOLERANCE):     # compiled; else the checks below
        return q
    for i in range(1, model.nb):
        if model.joint_type[i] == 'floating':
            quat = q[model.idx_q[i] + 3:model.idx_q[i] + 7]
            norm = np.linalg.norm(quat)
            if abs(norm - 1.0) > 1e-5:
                raise ModelError(f'floating joint {model.joint_names[i - 1]!r}: quaternion (qx qy qz qw) has '
                                 f'norm {norm:.6g}; expected a unit quaternion')
            q[model.idx_q[i] + 3:model.idx_q[i] + 7] = quat / norm
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
    violation, cluster, scale = data.engine.velocity_violation(x)
    if violation > VELOCITY_TOLERANCE * max(1.0, scale):
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
