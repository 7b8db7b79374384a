"""The one table of the public calls' faults: a rule code (kernels/codes.py) and its details to the
ModelError or SingularConfigurationError that names it (what, where, expected what; errors.quote).

Both engines report through it: a compiled call returns a code with its details in the
workspace's ``fault`` (argument, index, value), which ``error`` reads with the call's description
(``Call``: the names and bounds of its arguments, what its results are called); the NumPy checks
(validation.py) and algorithms build the same details and raise ``message``'s error. A message
thus exists in one place only. The routing code LCABA_REJECTED names no fault: Model's routing
(forward_dynamics.py) handles it.
"""

from collections import namedtuple
from dataclasses import dataclass
import numbers

import numpy as np

from .errors import LCABA_ADVICE, ModelError, quote, SingularConfigurationError
from .kernels.codes import (ACCELERATION_VIOLATION, AMPLIFIED, D_ILL_CONDITIONED, D_NOT_POSITIVE,
                            LCABA_NOT_POSITIVE, LENGTH, LIFT_SINGULAR, NOT_FINITE, OUT_OF_BOUND,
                            POSITION_VIOLATION, QUATERNION, SINGULAR_SPLIT, VELOCITY_VIOLATION)
from . import bounds

NOT_REAL = 100                 # the host's conversion: an input that is no vector of real numbers
# What a message needs: the argument's name, its accepted sizes {length: meaning} and bound, the
# index and value a check found, and the input as given (its entries quoted where they were Python
# numbers), or for NOT_FINITE the call's (name, vector, bound) inputs and what its results are.
Fault = namedtuple('Fault', 'name sizes bound index value given', defaults=(None,) * 6)


@dataclass(frozen=True)
class Call:
    """A public call as its faults name it: its results (the finiteness message), the names and
    bounds of its argument slots (codes.FIRST, SECOND, THIRD), and whether gravity enters its
    results."""

    what: str
    names: tuple
    bounds: tuple
    gravity: bool = True

    def sizes(self, model, slot):
        """The accepted lengths of argument slot: spanning positions, else spanning or independent
        vectors (one entry where nv == ny, as validation.vector's callers give them)."""
        if slot == 0:
            return {model.nq: 'spanning positions'}
        return {model.nv: 'spanning', model.ny: 'independent'}

    def inputs(self, model, arguments):
        """(name, vector, bound) of the call's inputs, for the finiteness message."""
        found = [(name, real_array(x, name)[0], bound)
                 for name, x, bound in zip(self.names, arguments, self.bounds)]
        return found + ([('gravity', model.gravity, bounds.GRAVITY)] if self.gravity else [])


FORWARD = Call('accelerations', ('q', 'v', 'tau'),
               (bounds.POSITION, bounds.VELOCITY, bounds.FORCE))
FORWARD_LCABA = Call('accelerations and constraint forces', FORWARD.names, FORWARD.bounds)
INVERSE = Call('generalized forces', ('q', 'v', 'a'),
               (bounds.POSITION, bounds.VELOCITY, bounds.ACCELERATION))
BIAS = Call('bias forces', INVERSE.names, INVERSE.bounds)
GRAVITY = Call('gravity forces', INVERSE.names, INVERSE.bounds)
MASS_MATRIX = Call('mass matrix entries', ('q',), (bounds.POSITION,), gravity=False)
INVERSE_OSIM = Call('inverse operational-space inertia entries', ('q',), (bounds.POSITION,),
                    gravity=False)

# the whole-body calls (whole_body.py)
CENTER_OF_MASS = Call('centre of mass coordinates', ('q',), (bounds.POSITION,), gravity=False)
POTENTIAL_ENERGY = Call('potential energy', ('q',), (bounds.POSITION,))
MOMENTUM_MATRIX = Call('centroidal momentum matrix entries', ('q',), (bounds.POSITION,),
                       gravity=False)
COM_JACOBIAN = Call('centre of mass Jacobian entries', ('q',), (bounds.POSITION,), gravity=False)
CENTROIDAL = Call('centroidal momentum and its bias', ('q', 'v'),
                  (bounds.POSITION, bounds.VELOCITY), gravity=False)
KINETIC_ENERGY = Call('kinetic energy', CENTROIDAL.names, CENTROIDAL.bounds, gravity=False)
CORIOLIS = Call('Coriolis matrix entries', CENTROIDAL.names, CENTROIDAL.bounds, gravity=False)
REGRESSOR = Call('regressor entries', INVERSE.names, INVERSE.bounds)

# the derivative calls (derivatives.py)
INVERSE_DERIVATIVES = Call('inverse dynamics derivatives', INVERSE.names, INVERSE.bounds)
FORWARD_DERIVATIVES = Call('forward dynamics derivatives', FORWARD.names, FORWARD.bounds)


def link_call(what, biases):
    """The link calls (Model._link_kinematics): q, and v where they compute bias
    accelerations."""
    return Call(what, ('q', 'v')[:1 + biases], (bounds.POSITION, bounds.VELOCITY)[:1 + biases],
                gravity=False)


def real_array(value, name):
    """(x, given): value as a flat float64 vector, and its entries as given where they were Python
    objects (integers beyond float range turn into inf in x), else None. Complex numbers and text
    are refused (NOT_REAL), not cut."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value.reshape(-1), None                 # the common case, without a copy
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise message(None, NOT_REAL, Fault(name, given=value)) from None
    if array.dtype.kind in 'biuf':
        return array.astype(float).reshape(-1), None
    given = array.reshape(-1)
    if array.dtype.kind != 'O' or not all(isinstance(e, numbers.Real) for e in given):
        raise message(None, NOT_REAL, Fault(name, given=value))
    return np.array([_float(e) for e in given]), given


def _float(number):
    try:
        return float(number)
    except OverflowError:
        return np.inf


def vectors(call, arguments):
    """The arguments of a call as float64 vectors (real_array), converted once where a compiled
    call refused their type."""
    return tuple(real_array(x, name)[0] for x, name in zip(arguments, call.names))


def error(model, code, fault, call, arguments):
    """The error of a compiled call's code with its details fault (argument slot, index, value),
    for the call's arguments as the caller gave them."""
    slot, index, value = int(fault[0]), int(fault[1]), float(fault[2])
    if code == NOT_FINITE:
        return message(model, code, Fault(call.what, given=call.inputs(model, arguments)))
    if code == LENGTH:                                  # the length in value
        return message(model, code, Fault(call.names[slot], call.sizes(model, slot),
                                          call.bounds[slot], int(value)))
    if code == OUT_OF_BOUND:
        return message(model, code, Fault(call.names[slot], call.sizes(model, slot),
                                          call.bounds[slot], index, value, arguments[slot]))
    if code == LIFT_SINGULAR:                           # the singular status in the slot
        return message(model, code, Fault(index=index, value=value, given=slot))
    name = call.names[slot] if slot < len(call.names) else ''
    return message(model, code, Fault(name, index=index, value=value))


def message(model, code, fault):
    """The exception of code with its details (Fault); its ``code`` and ``details`` (argument
    slot, index, value) are those of a compiled call, for the routing of Model."""
    exception = FAULTS[code](model, fault)
    exception.code, exception.details = code, (0, fault.index or 0, fault.value or 0.0)
    return exception


def _not_real(model, f):
    return ModelError(f'{f.name} must be a vector of real numbers, got {quote(f.given)}')


def _length(model, f):
    expected = ' or '.join(f'{n} ({meaning})' for n, meaning in f.sizes.items())
    return ModelError(f'{f.name} has {f.index} entries; expected {expected}')


def _out_of_bound(model, f):
    return ModelError(f'{f.name}[{f.index}] is {_shown(f)}; expected finite numbers of magnitude '
                      f'at most {f.bound:g}')


def _shown(f):
    """The entry as given: quoted where it was a Python number that a float cannot hold."""
    given = None if f.given is None else real_array(f.given, f.name)[1]
    return quote(given[f.index]) if given is not None else f'{f.value:.6g}'


def _quaternion(model, f):
    joint = model.joint_names[f.index - 1]
    return ModelError(f'{model.joint_type[f.index]} joint {quote(joint)}: '
                      f'quaternion (qx qy qz qw) has norm {f.value:.6g}; expected a unit '
                      'quaternion')


def _position_violation(model, f):
    name, cluster = model.checked_constraints[f.index]
    return ModelError(f'q violates constraint {quote(name)} of cluster {quote(cluster)} by '
                      f'{f.value:.3g} (tolerance {bounds.POSITION_TOLERANCE}); complete the '
                      'dependent joints with complete_positions()')


def _velocity_violation(model, f):
    cluster = model.cluster_list[f.index].name if f.index >= 0 else ''
    return ModelError(f'{f.name or "v"} violates the constraints of cluster {quote(cluster)} by '
                      f'{f.value:.3g}; pass consistent spanning values or the {model.ny} '
                      'independent ones')


def _acceleration_violation(model, f):
    return ModelError(f'a violates the constraints by {f.value:.3g}: its dependent entries must '
                      'equal G ydd + g; pass consistent spanning values or the '
                      f'{model.ny} independent ones')


def _singular_split(model, f):
    cluster = model.cluster_list[f.index]
    return SingularConfigurationError(
        f'cluster {quote(cluster.name)} is at a singular configuration: its constraints '
        f'{quote([con.name for con in cluster.constraints])} do not determine the dependent '
        f'joints (conditioning {f.value:.1e})' + LCABA_ADVICE)


def _amplified(model, f):
    cluster = model.cluster_list[f.index]
    return SingularConfigurationError(
        f'cluster {quote(cluster.name)} is near a singular configuration: a joint would move '
        f'{f.value:.3g} times faster than the independent coordinates, more than '
        f'{model.amplification_limit:g} times its '
        f'{model.reference_amplification[cluster.index]:.3g} at the reference configuration '
        '(amplification_limit; reference_positions nearer the working range may lower it)'
        + LCABA_ADVICE)


def _d_not_positive(model, f):
    return SingularConfigurationError(
        f'cluster {quote(model.cluster_list[f.index].name)}: its articulated inertia '
        'D = S^T I^A S is not positive definite (singular configuration)' + LCABA_ADVICE)


def _d_ill_conditioned(model, f):
    return SingularConfigurationError(
        f'cluster {quote(model.cluster_list[f.index].name)}: D = S^T I^A S is ill-conditioned '
        '(singular configuration)' + LCABA_ADVICE)


def _lift_singular(model, f):
    cause = message(model, f.given, Fault(index=f.index, value=f.value))
    return SingularConfigurationError(
        f'v holds the {model.ny} independent velocities, which cannot be lifted to spanning '
        f'ones at this singular configuration ({cause}); pass the {model.nv} spanning '
        'velocities instead')


def _lcaba_not_positive(model, f):
    return ModelError(f'joint {quote(model.joint_names[f.index - 1])}: D = S^T H S is not '
                      'positive definite; does its body have mass?')


def _not_finite(model, f):
    """The input entry largest relative to its bound, the likely cause of the overflow."""
    name, x, bound = max(f.given,
                         key=lambda entry: np.max(np.abs(entry[1]), initial=0.0) / entry[2])
    i = int(np.argmax(np.abs(x)))
    joint = _joint_at(model, x.size, i)
    return ModelError(f'the {f.name} are not finite at this input (largest relative to its '
                      f'bound: {name}[{i}] = {x[i]:.3g}'
                      f'{f" of joint {quote(joint)}" if joint else ""}, bound {bound:g}); the '
                      'model\'s masses, inertias or ratios may be out of scale')


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


FAULTS = {   # rule code -> the error it raises
    NOT_REAL: _not_real,
    LENGTH: _length,
    OUT_OF_BOUND: _out_of_bound,
    QUATERNION: _quaternion,
    POSITION_VIOLATION: _position_violation,
    VELOCITY_VIOLATION: _velocity_violation,
    ACCELERATION_VIOLATION: _acceleration_violation,
    SINGULAR_SPLIT: _singular_split,
    AMPLIFIED: _amplified,
    D_NOT_POSITIVE: _d_not_positive,
    D_ILL_CONDITIONED: _d_ill_conditioned,
    LIFT_SINGULAR: _lift_singular,
    LCABA_NOT_POSITIVE: _lcaba_not_positive,
    NOT_FINITE: _not_finite,
}
