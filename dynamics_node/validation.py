"""Checks and conversions of user-supplied states: lengths, finiteness, unit quaternions,
constraint consistency, spanning <-> independent velocities and external wrenches."""

from collections.abc import Mapping
import functools

import numpy as np

from .algorithms.kinematics import update_transforms
from .errors import ModelError, quote
from .faults import Fault, message, NOT_FINITE, real_array
from .joint_types import TYPES
from .kernels.codes import (LENGTH, OUT_OF_BOUND, POSITION_VIOLATION, QUATERNION,
                            VELOCITY_VIOLATION)
from . import bounds

LARGEST_FLOAT = float(np.finfo(float).max)   # |x| <= LARGEST_FLOAT: x is finite


def vector(value, name, sizes, bound):
    """A real float vector whose length is one of sizes (a dict length -> meaning) and whose
    entries are finite and at most bound in magnitude (bounds.py): else LENGTH or OUT_OF_BOUND
    (faults.py)."""
    x, _ = real_array(value, name)
    if x.size not in sizes:
        raise message(None, LENGTH, Fault(name, sizes, bound, x.size))
    if not _within_check()(x, bound):
        i = int(np.flatnonzero(~(np.abs(x) <= bound))[0])          # nan compares false
        raise message(None, OUT_OF_BOUND, Fault(name, sizes, bound, i, x[i], value))
    return x


@functools.cache
def _within_check():
    """all(|x| <= bound) (so no NaN): the compiled checks.all_within where numba is installed."""
    try:
        from .kernels.checks import all_within
    except ImportError:
        return lambda x, bound: bool(np.all(np.abs(x) <= bound))
    return all_within


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
                raise message(model, QUATERNION, Fault(index=i, value=norm))
            q[at:at + 4] /= norm
    if check:
        violation, name, cluster = model.couplings.worst_position_violation(q)
        update_transforms(model, data, q, model.loop_bodies)
        for c in model.cluster_list:
            if not c.linear:
                for con in c.constraints:
                    phi = np.max(np.abs(con.residual(data.Xup, lambda b: q[model.idx_q[b]])))
                    phi = phi if np.isfinite(phi) else np.inf   # outside an implicit
                    if phi > violation:                         # constraint's domain
                        violation, name, cluster = phi, con.name, c.name
        if violation > bounds.POSITION_TOLERANCE:
            index = model.checked_constraints.index((name, cluster))
            raise message(model, POSITION_VIOLATION, Fault(index=index, value=violation))
    return q


def independent_velocities(model, data, x, name='v'):
    """yd from spanning (nv) or independent (ny) velocities x (validated by vector()); spanning
    ones must satisfy K v = 0 (checked with the loop clusters' transforms of positions(check=True)
    at the current q)."""
    if x.size == model.ny and model.ny != model.nv:
        return x
    violation, cluster, scale = data.engine.velocity_violation(x)
    if violation > bounds.VELOCITY_TOLERANCE * max(1.0, scale):
        index = next(c.index for c in model.cluster_list if c.name == cluster)
        raise message(model, VELOCITY_VIOLATION, Fault(name, index=index, value=violation))
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
    """Nothing when every entry of results is finite (the only cost on success); else NOT_FINITE,
    which names the input entry that is largest relative to its bound, the likely cause of the
    overflow.

    inputs: (name, validated vector, bound) of each input of the call, or a function that gives
    them, called only for the message."""
    if all([all_finite(r.reshape(-1)) for r in results]):
        return
    raise message(model, NOT_FINITE, Fault(what, given=inputs() if callable(inputs) else inputs))


def checked_weights(model, value):
    """The weights of projected inverse dynamics: ny numbers, positive on the actuated
    coordinates (ones where None)."""
    if value is None:
        return np.ones(model.ny)
    w = vector(value, 'weights', {model.ny: 'one per independent coordinate'}, bounds.WEIGHT)
    bad = [y for y in model.actuated_y if not w[y] > 0.0]
    if bad:
        raise ModelError(f'weights[{bad[0]}] is {w[bad[0]]:.6g}; expected positive weights on the '
                         'actuated coordinates')
    return w


def accepted_weights(model, value):
    """None for None (ones), checked_weights(model, value), or False where that refuses them (a
    fused call then leaves the checked path to name the first fault in the order of the
    inputs)."""
    if value is None:
        return None
    try:
        return checked_weights(model, value)
    except ModelError:
        return False


def written(out, result):
    """result copied into out (a public call's out=: a writable float64 NumPy array of result's
    shape, checked after the call's inputs) and out returned; else ModelError, out unchanged."""
    if type(out) is np.ndarray and out.dtype.type is np.float64 and out.shape == result.shape:
        try:
            out[...] = result
            return out
        except ValueError:                     # read only
            pass
    shape = f'{result.shape[0]}' if result.ndim == 1 else ' x '.join(map(str, result.shape))
    raise ModelError(f'out is {quote(out)}; expected a writable float64 NumPy array of shape '
                     f'{shape} for the result')
