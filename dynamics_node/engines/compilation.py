"""The compiled kernels' entry points: each kernel compiled once per process for float64 arrays of
any layout (its signatures below), later compilation disabled; and whether numba's on-disk cache
holds them all (kernels/cache.py's key)."""

import pickle
import time

from numba import typeof, types

from ..kernels import aba, batch, calls, checks, contacts, crba, efpa, lcaba, rnea
from ..kernels import completion as compiled_completion
from ..kernels import frames as link_frames
from ..kernels.borrowed import INPUT_VECTOR
from . import contact_calls, whole_body_calls

INPUT = INPUT_VECTOR                   # a float64 vector, else NotAFloat64Vector (borrowed.py)
FORCES = types.Array(types.float64, 2, 'A', readonly=True)
MATRIX = types.Array(types.float64, 2, 'C')
ROWS = types.Array(types.float64, 2, 'C', readonly=True)   # a batch's inputs, a state per row
DONE = types.Array(types.int64, 1, 'C')
ANY_ROWS = types.Array(types.float64, 2, 'A', readonly=True)  # rows of the single calls' layout
DISPATCHERS = {kernel.__name__: kernel for kernel in
               (aba.aba, rnea.rnea, crba.crba, efpa.efpa, aba.spanning, lcaba.lcaba,
                contacts.contact_jacobian, checks.accept_positions, checks.velocity_violation,
                compiled_completion.complete, link_frames.link_kinematics)}
DISPATCHERS.update({'fused_' + kernel.__name__: kernel for kernel in
                    (calls.forward_dynamics, calls.forward_dynamics_lcaba, calls.inverse_dynamics,
                     calls.mass_matrix, calls.inverse_osim, calls.link_kinematics)})
DISPATCHERS.update({'batch_' + kernel.__name__: kernel for kernel in
                    (batch.forward_dynamics, batch.inverse_dynamics, batch.mass_matrix,
                     batch.regressor, batch.whole_body_at_positions, batch.whole_body_at_states,
                     batch.contact_bias_forces, batch.complete_positions)})
DISPATCHERS.update(contact_calls.KERNELS)
DISPATCHERS.update(whole_body_calls.KERNELS)
ENTRY_POINTS = {}              # name -> compiled entry point, filled by the first warm_up()


def on_disk(dispatchers):
    """True where numba's on-disk cache holds every one of dispatchers, current with its sources
    (kernels/cache.py's key): loading them compiles nothing. False where one is missing, stale or
    unreadable (numba 0.68's cache index)."""
    try:
        return all(dispatcher._cache._cache_file._load_index() for dispatcher in dispatchers)
    except (AttributeError, OSError, EOFError, pickle.UnpicklingError):
        return False


def compile_kernels(fast, frames, progress=None):
    """The entry points of the kernels compiled for float64 arrays of any layout, once per process
    (progress(name, i, n, seconds) after each); later compilation is disabled (numba converts other
    float64 arrays to these signatures)."""
    if not ENTRY_POINTS:
        m, d, p, w, c, x = fast._m, fast._d, fast._p, fast._w, fast._c, fast._x
        model, data, checks, context = typeof(m), typeof(d), typeof(c), typeof(x)
        buffers = whole_body_calls.buffers_type(fast)
        signatures = {
            'aba': (model, data, INPUT, INPUT, INPUT, FORCES),
            'rnea': (model, data, INPUT, INPUT, INPUT, FORCES),
            'crba': (model, data, INPUT),
            'efpa': (model, data, INPUT) + tuple(typeof(a) for a in frames[:4]),
            'spanning': (model, data, INPUT, INPUT, INPUT),
            'lcaba': (model, data, typeof(p), typeof(w), INPUT, INPUT, INPUT, FORCES,
                      types.float64, types.float64, types.int64),
            'contact_jacobian': (model, data, typeof(p), typeof(w), MATRIX, MATRIX,
                                 types.boolean),
            'accept_positions': (model, data, checks, types.Array(types.float64, 1, 'C'),
                                 types.boolean, types.float64, types.float64),
            'velocity_violation': (model, data, checks, INPUT),
            'fused_forward_dynamics': (context, INPUT, INPUT, INPUT),
            'fused_forward_dynamics_lcaba': (context, INPUT, INPUT, INPUT),
            'fused_inverse_dynamics': (context, INPUT, INPUT, INPUT),
            'fused_mass_matrix': (context, INPUT),
            'complete': (context, INPUT, INPUT, types.boolean,
                         types.Array(types.float64, 1, 'C'), types.boolean),
            'fused_inverse_osim': (context, INPUT, typeof(frames[4])),
            'link_kinematics': (model, data, INPUT, INPUT, types.int64, types.boolean,
                                types.boolean, types.boolean),
            'fused_link_kinematics': (context, INPUT, INPUT, types.int64, types.boolean,
                                      types.boolean, types.boolean),
            **contact_calls.signatures(fast, model, data, FORCES, INPUT, buffers),
            **whole_body_calls.signatures(fast, context, INPUT),
            'batch_forward_dynamics': (context, types.boolean, ROWS, ROWS, ROWS, MATRIX, DONE),
            'batch_inverse_dynamics': (context, ROWS, ROWS, ROWS, MATRIX, DONE),
            'batch_mass_matrix': (context, ROWS, MATRIX, DONE),
            'batch_regressor': (context, buffers, ROWS, ROWS, ROWS, MATRIX, DONE),
            'batch_whole_body_at_positions': (context, buffers, types.int64, ROWS, MATRIX, DONE),
            'batch_whole_body_at_states': (context, buffers, types.int64, ROWS, ROWS, MATRIX,
                                           DONE),
            'batch_contact_bias_forces': (context, contact_calls.buffers_type(fast), INPUT, ROWS,
                                          ROWS, MATRIX, DONE),
            'batch_complete_positions': (context, types.int64, INPUT, types.boolean, ANY_ROWS,
                                         types.Array(types.float64, 2, 'A'), DONE),
        }
        # a fused call may compile other types of a kernel (the algorithms at the transforms of its
        # check)
        for i, (name, signature) in enumerate(signatures.items(), 1):
            start = time.perf_counter()
            DISPATCHERS[name].compile(signature)
            if progress is not None:
                progress(name, i, len(signatures), time.perf_counter() - start)
        for name, signature in signatures.items():
            DISPATCHERS[name].disable_compile()
            ENTRY_POINTS[name] = DISPATCHERS[name].get_overload(signature)
    return ENTRY_POINTS
