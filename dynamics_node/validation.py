"""Checks and conversions of user-supplied states: lengths, finiteness, unit quaternions,
constraint consistency, spanning <-> independent velocities and external wrenches."""

from collections.abc import Mapping
import functools
import numbers

import numpy as np

from .algorithms.kinematics import update_transforms
from .errors import ModelError, quote
from .joint_types import TYPES
from . import bounds

LARGEST_FLOAT = float(np.finfo(float).max)   # |x| <= LARGEST_FLOAT: x is finite


def vector(value, name, sizes, bound):
    """A real float vector whose length is one of sizes (a dict length -> meaning) and whose
    entries are finite and at most bound in magnitude (bounds.py)."""
    x, given = _real_array(value, name)
    if x.size not in sizes:
        expected = ' or '.join(f'{n} ({meaning})' for n, meaning in sizes.items())
        raise ModelError(f'{name} has {x.size} entries; expected {expected}')
    if not _within_check()(x, bound):
        i = np.flatnonzero(~(np.abs(x) <= bound))[0]          # nan compares false
        shown = quote(given[i]) if given is not None else f'{x[i]:.6g}'
        raise ModelError(f'{name}[{i}] is {shown}; expected finite numbers of magnitude at most '
                         f'{bound:g}')
    return x


@functools.cache
def _within_check():
    """all(|x| <= bound) (so no NaN): the compiled checks.all_within where numba is installed."""
    try:
        from .kernels.checks import all_within
    except ImportError:
        return lambda x, bound: bool(np.all(np.abs(x) <= bound))
    return all_within


def _real_array(value, name):
    """(x, given): value as a flat float vector, and its entries as given when they were Python
    objects (integers beyond float range turn into inf in x). Complex numbers and text are refused,
    not cut."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value.reshape(-1), None                 # the common case, without a copy
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f'{name} must be a vector of real numbers, got {quote(value)}') from None
    if array.dtype.kind in 'biuf':
        return array.astype(float).reshape(-1), None
    given = array.reshape(-1)
    if array.dtype.kind != 'O' or not all(isinstance(e, numbers.Real) for e in given):
        raise ModelError(f'{name} must be a vector of real numbers, got {quote(value)}')
    return np.array([_float(e) for e in given]), given


def _float(number):
    try:
        return float(number)
    except OverflowError:
        return np.inf


def positions(model, data, q, check=True):
    """Spanning positions with unit quaternions; with check, the loops must be closed."""
    given_floats = type(q) is np.ndarray and q.dtype == np.float64 and q.size == model.nq
    sizes = {model.nq: 'spanning positions'}
    q = (q.reshape(-1) if given_floats else vector(q, 'q', sizes, bounds.POSITION)).copy()
    # compiled, bounds too
    if data.engine.accept_positions(q, check, bounds.POSITION_TOLERANCE, bounds.POSITION):
        return q
    if given_floats:
        vector(q, 'q', sizes, bounds.POSITION)     # raises the error naming an entry out of bounds
    for i in range(1, model.nb):
        kind = model.joint_type[i]
        if TYPES[kind].quaternion_at >= 0:
            at = model.idx_q[i] + TYPES[kind].quaternion_at
            norm = np.linalg.norm(q[at:at + 4])
            if abs(norm - 1.0) > 1e-5:
                raise ModelError(f'{kind} joint {quote(model.joint_names[i - 1])}: quaternion '
                                 f'(qx qy qz qw) has norm {norm:.6g}; expected a unit quaternion')
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
        if violation > bounds.POSITION_TOLERANCE:
            raise ModelError(f'q violates constraint {quote(name)} of cluster {quote(cluster)} by '
                             f'{violation:.3g} (tolerance {bounds.POSITION_TOLERANCE}); complete '
                             'the dependent joints with complete_positions()')
    return q


def independent_velocities(model, data, x, name='v'):
    """yd from spanning (nv) or independent (ny) velocities x (validated by vector()); spanning
    ones must satisfy K v = 0 (checked with the loop clusters' transforms of positions(check=True)
    at the current q)."""
    if x.size == model.ny and model.ny != model.nv:
        return x
    violation, cluster, scale = data.engine.velocity_violation(x)
    if violation > bounds.VELOCITY_TOLERANCE * max(1.0, scale):
        raise ModelError(f'{name} violates the constraints of cluster {quote(cluster)} by '
                         f'{violation:.3g}; pass consistent spanning values or the {model.ny} '
                         'independent ones')
    return x[model.independent_v]


def external_forces(model, data, wrenches):
    """data.f_ext from {link: (force, torque)} given in the link frame at the link origin."""
    if wrenches is not None and not isinstance(wrenches, Mapping):
        raise ModelError('wrenches must be a dict {link: (force, torque)} or None, got '
                         f'{quote(wrenches)}')
    if not wrenches and not data.f_ext_set:
        return                                 # still zero: skip clearing it
    data.f_ext[:] = 0.0
    data.f_ext_set = bool(wrenches)            # before the loop: a failed wrench may be half added
    for link, wrench in (wrenches or {}).items():
        if link not in model.link_frame:
            raise ModelError(f'wrench on unknown link {quote(link)}; links are '
                             f'{quote(sorted(model.link_frame))}')
        try:
            force, torque = wrench
        except (TypeError, ValueError):
            raise ModelError(f'wrench on link {quote(link)} must be a pair '
                             '(force[3], torque[3])') from None
        f = np.concatenate((vector(torque, f'torque on {quote(link)}', {3: 'x y z'}, bounds.FORCE),
                            vector(force, f'force on {quote(link)}', {3: 'x y z'}, bounds.FORCE)))
        body, X_link_body = model.link_frame[link]
        data.f_ext[body] += X_link_body.T @ f  # force transform link -> body


def all_finite(x):
    """Every entry of the float64 vector x is finite."""
    return _within_check()(x, LARGEST_FLOAT)


def check_finite(model, what, inputs, *results):
    """Nothing when every entry of results is finite (the only cost on success); else a ModelError
    naming the input entry that is largest relative to its bound, the likely cause of the overflow.

    inputs: (name, validated vector, bound) of each input of the call."""
    if all([all_finite(r.reshape(-1)) for r in results]):
        return
    name, x, bound = max(inputs,
                         key=lambda entry: np.max(np.abs(entry[1]), initial=0.0) / entry[2])
    i = int(np.argmax(np.abs(x)))
    joint = _joint_at(model, x.size, i)
    raise ModelError(f'the {what} are not finite at this input (largest relative to its bound: '
                     f'{name}[{i}] = {x[i]:.3g}{f" of joint {quote(joint)}" if joint else ""}, '
                     f'bound {bound:g}); the model\'s masses, inertias or ratios may be out of '
                     'scale')


def _joint_at(model, size, i):
    """Name of the joint of entry i of a position (nq), spanning (nv) or independent (ny)
    vector."""
    if size == model.nq:
        starts = model.idx_q
    elif size == model.nv:
        starts = model.idx_v
    elif size == model.ny:
        i, starts = model.independent_v[i], model.idx_v
    else:
        return None
    return model.joint_names[int(np.searchsorted(starts[1:], i, side='right')) - 1]
