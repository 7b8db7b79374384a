"""Model's calls over N states at once: ``Batch(model, threads)``.

Each call takes its inputs as arrays of N rows (N x nq positions; N x nv spanning or N x ny
independent velocities, accelerations, forces) and returns the N results stacked: equal, bit for
bit, to N single calls of the model's method (their defaults: no wrenches, no contacts, method
'auto'; contact_bias_forces: one contact set and weights for every row). The rows run in compiled
code (kernels/batch.py: the fused call of each row, its result copied into its row) split into
one contiguous part per thread (completion excepted: its rows track one another), the calling
thread's grown by the rows that the others' late start left it at the last batch; each thread has
its own workspace and releases the GIL. Where a row's compiled call returns another code than OK,
that row is the single public call's (which routes a singular cluster to LCABA, as
forward_dynamics does, or raises), and the compiled rows go on after it. A refused row raises the
single call's error with the row named, and nothing of the batch is returned. On a model loaded
with compiled=False every row is a single call.

Every call takes out=: a writable C-contiguous float64 array of the result's shape, sharing no
memory with the inputs, that the rows are written into in place and that is returned (no new
array: a batch of large results, regressors for instance, then costs no fresh memory, whose first
touch is most of a row's time; pinocchio's rneaInParallel and abaInParallel take their output the
same way). It is checked before any row runs; where a row is refused, the rows of out are left
undefined.
"""

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import ModelError, quote
from .kernels.codes import OK
from .model import Model
from .validation import checked_weights, external_forces

MAX_THREADS = 256


class Batch:
    """Batched forward and inverse dynamics, bias forces (with contacts too), mass matrices,
    regressors and whole-body terms of one model on threads (default 1: the calling thread)
    workspaces."""

    def __init__(self, model, threads=1):
        if not isinstance(model, Model):
            raise ModelError(f'model is {quote(model)}; expected a Model (load_model)')
        if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
            raise ModelError(f'threads is {quote(threads)}; expected an integer from 1 to '
                             f'{MAX_THREADS}')
        self.model, self.threads = model, threads
        # the calling thread runs the first part
        self._pool = ThreadPoolExecutor(threads - 1) if threads > 1 else None
        self._closed = False
        self._shift = {}              # call -> rows the calling thread runs beyond an even share

    def forward_dynamics(self, q, v, tau, out=None):
        """Spanning accelerations (N x nv), Model.forward_dynamics of each row."""
        model = self.model
        return self._run('forward_dynamics', model.forward_dynamics,
                         self._inputs(('q', q, model.nq), ('v', v, None), ('tau', tau, None)),
                         (model.nv,), out)

    def inverse_dynamics(self, q, v, a, out=None):
        """Independent generalized forces (N x ny), Model.inverse_dynamics of each row."""
        model = self.model
        return self._run('inverse_dynamics', model.inverse_dynamics,
                         self._inputs(('q', q, model.nq), ('v', v, None), ('a', a, None)),
                         (model.ny,), out)

    def bias_forces(self, q, v, out=None):
        """C_y (N x ny), Model.bias_forces of each row."""
        model = self.model
        q, v = self._inputs(('q', q, model.nq), ('v', v, None))
        zero = np.zeros((len(q), model.ny))
        return self._run('inverse_dynamics', lambda q, v, _: model.bias_forces(q, v),
                         (q, v, zero), (model.ny,), out)

    def contact_bias_forces(self, q, v, contacts, weights=None, out=None):
        """The actuated efforts that hold contacts (N x ny), Model.contact_bias_forces of each
        row (contacts and weights those of every row)."""
        model = self.model
        inputs = self._inputs(('q', q, model.nq), ('v', v, None))

        def single(q, v):
            return model.contact_bias_forces(q, v, contacts, weights)
        return self._run('contact_bias_forces', single, inputs, (model.ny,), out,
                         contacts=contacts, weights=checked_weights(model, weights))

    def complete_positions(self, q_independent, cold=False, out=None):
        """Spanning positions (N x nq), Model.complete_positions of each row (N x the independent
        positions; no time budget) in order on the calling thread: each row tracks the one
        before, as single calls one after another do, so the rows are never split over threads;
        the first row tracks the positions this thread completed last, or with cold the
        reference configuration, as a fresh model's first call. The next single call tracks from
        the last row; a refused batch leaves the workspace as it found it (the error's row: its
        row attribute)."""
        model = self.model
        Y = self._inputs(('q_independent', q_independent, model.independent_q.size))[0]
        if self._closed:
            raise ModelError('this Batch is closed; make a new one')
        out = _output(out, (len(Y), model.nq), (Y,))
        data = model._local.data
        first, row = data.q_last, 0
        if cold:
            data.q_last = None
        while row < len(Y):
            if model.compiled:
                code, done = data.engine.batch_completion(Y[row:], data.q_last, out[row:])
                if done:
                    data.q_last = out[row + done - 1].copy()      # as the single calls leave it
                row += done
                if code == OK:
                    break
            try:
                out[row] = model.complete_positions(Y[row])
            except ModelError as error:
                data.q_last = first
                raise _row_error(error, row) from None
            row += 1
        if len(Y):
            data.engine.closed_positions(data.q_last)
        return out

    def mass_matrix(self, q, out=None):
        """H_y (N x ny x ny), Model.mass_matrix of each row."""
        model = self.model
        return self._run('mass_matrix', model.mass_matrix, self._inputs(('q', q, model.nq)),
                         (model.ny, model.ny), out)

    def regressor(self, q, v, a, out=None):
        """Y_y (N x ny x 10 nb), Model.regressor of each row."""
        model = self.model
        return self._run('regressor', model.regressor,
                         self._inputs(('q', q, model.nq), ('v', v, None), ('a', a, None)),
                         (model.ny, 10 * (model.nb - 1)), out)

    # the whole-body terms (whole_body.py) of each row

    def center_of_mass(self, q, out=None):
        """CoM positions (N x 3), Model.center_of_mass(q) of each row."""
        return self._at_positions('center_of_mass', q, (3,), out)

    def potential_energy(self, q, out=None):
        """Potential energies (N), Model.potential_energy of each row."""
        return self._at_positions('potential_energy', q, (), out)

    def centroidal_momentum_matrix(self, q, out=None):
        """A_g (N x 6 x ny), Model.centroidal_momentum_matrix of each row."""
        return self._at_positions('centroidal_momentum_matrix', q, (6, self.model.ny), out)

    def center_of_mass_jacobian(self, q, out=None):
        """J_c (N x 3 x ny), Model.center_of_mass_jacobian of each row."""
        return self._at_positions('center_of_mass_jacobian', q, (3, self.model.ny), out)

    def centroidal_momentum(self, q, v, out=None):
        """h_g (N x 6), Model.centroidal_momentum of each row."""
        return self._at_states('centroidal_momentum', q, v, (6,), out)

    def centroidal_bias(self, q, v, out=None):
        """dh_g/dt at ydd = 0 (N x 6), Model.centroidal_bias of each row."""
        return self._at_states('centroidal_bias', q, v, (6,), out)

    def kinetic_energy(self, q, v, out=None):
        """Kinetic energies (N), Model.kinetic_energy of each row."""
        return self._at_states('kinetic_energy', q, v, (), out)

    def coriolis_matrix(self, q, v, out=None):
        """C_y (N x ny x ny), Model.coriolis_matrix of each row."""
        return self._at_states('coriolis_matrix', q, v, (self.model.ny, self.model.ny), out)

    def _at_positions(self, name, q, shape, out):
        model = self.model
        return self._run(name, getattr(model, name), self._inputs(('q', q, model.nq)), shape,
                         out)

    def _at_states(self, name, q, v, shape, out):
        model = self.model
        return self._run(name, getattr(model, name),
                         self._inputs(('q', q, model.nq), ('v', v, None)), shape, out)

    def _inputs(self, *arguments):
        """The arguments (name, value, columns: None for nv or ny) as C-contiguous float64 arrays
        of one number of rows; ModelError names the first that is not."""
        model, arrays = self.model, []
        for name, value, columns in arguments:
            try:
                array = np.asarray(value)
                if array.dtype.kind not in 'biuf':
                    raise TypeError
                array = np.ascontiguousarray(array, dtype=float)
            except (TypeError, ValueError, OverflowError):
                raise ModelError(f'{name} must be an array of real numbers, got {quote(value)}') \
                    from None
            sizes = (columns,) if columns else (model.nv, model.ny)
            if array.ndim != 2 or array.shape[1] not in sizes:
                expected = ' or '.join(f'N x {n}' for n in sorted(set(sizes)))
                raise ModelError(f'{name} has shape {array.shape}; expected {expected} (a row '
                                 'per state)')
            if arrays and len(array) != len(arrays[0]):
                raise ModelError(f'{name} has {len(array)} rows; expected {len(arrays[0])}, as '
                                 f'{arguments[0][0]}')
            arrays.append(array)
        return tuple(arrays)

    def _run(self, name, single, inputs, shape, out=None, **options):
        """The results (N x shape, into out where given) of the rows of inputs: one contiguous
        part per thread, each row's result flattened into a row of out; options: the engine's
        batch kernel's."""
        if self._closed:
            raise ModelError('this Batch is closed; make a new one')
        n = len(inputs[0])
        result = _output(out, (n,) + shape,
                         inputs + tuple(x for x in options.values() if isinstance(x, np.ndarray)))
        out = result.reshape(n, int(np.prod(shape)))            # a view: result is C-contiguous
        parts = self._parts(name, n)
        handed = time.perf_counter()
        others = [self._pool.submit(self._rows, name, single, inputs, out, start, stop, options)
                  for start, stop in parts[1:] if stop > start]
        try:
            _, finished = self._rows(name, single, inputs, out, *parts[0], options)
        finally:
            for future in others:              # the earliest refused row's error
                future.exception()
        if others:
            times = [future.result() for future in others]
            self._balance(name, n, parts[0][1], finished - handed,
                          max(end for _, end in times) - finished
                          + max(start for start, _ in times) - handed)
        return result

    def _parts(self, name, n):
        """(start, stop) of each thread's rows, the calling thread's first: an even share and the
        rows _balance moved to it, the rest split evenly."""
        threads = min(self.threads, max(n, 1))
        first = min(n, round(n / threads + self._shift.get(name, 0.0)))
        others = threads - 1
        bounds = [0, first] + [first + (n - first) * k // others for k in range(1, others + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

    def _balance(self, name, n, rows, seconds, later):
        """Moves half of the last batch's imbalance to the calling thread's share, never below an
        even share: the other threads finished later seconds after it, less the time they took
        to start (negative: before), worth later / (seconds / rows) of its rows, of which
        (threads - 1) / threads would have evened them. A thread that sleeps takes its wake-up
        to start (0.1 ms on a virtual machine, 60 rows of a 6-DoF arm's forward dynamics): the
        others start late, and should finish early by as much, so that the calling thread does
        not sleep waiting for them."""
        threads = min(self.threads, n)
        if rows:
            shift = self._shift.get(name, 0.0) + 0.5 * later * rows / seconds * (threads - 1) \
                / threads
            self._shift[name] = min(max(shift, 0.0), n - n / threads)

    def _rows(self, name, single, inputs, out, start, stop, options):
        """Rows start..stop-1 into out on the calling thread's workspace: its engine's batch
        kernel (None until a contact set has been resolved there: a single call first), and the
        single call where it stops. Returns when it started and finished (time.perf_counter)."""
        started = time.perf_counter()
        model = self.model
        data = model._local.data
        if data.f_ext_set:                     # the wrenches of an earlier single call
            external_forces(model, data, None)
        row = start
        while row < stop:
            kernel = data.engine.batch(name, **options) if model.compiled else None
            if kernel is not None:
                code, done = kernel(*(x[row:stop] for x in inputs), out[row:stop])
                row += done
                if code == OK:
                    return started, time.perf_counter()
            try:
                out[row] = np.reshape(single(*(x[row] for x in inputs)), -1)
            except ModelError as error:
                raise _row_error(error, row) from None
            row += 1
        return started, time.perf_counter()

    def close(self):
        """Stops the threads; a call after raises ModelError."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown()


def _output(out, shape, inputs):
    """out (module docstring) if it is a writable C-contiguous float64 NumPy array of shape that
    shares no memory with the inputs, a new array for None; else ModelError."""
    if out is None:
        return np.empty(shape)
    if not (type(out) is np.ndarray and out.dtype.type is np.float64 and out.shape == shape
            and out.flags.c_contiguous and out.flags.writeable):
        raise ModelError(f'out is {quote(out)}; expected a writable C-contiguous float64 NumPy '
                         f'array of shape {" x ".join(map(str, shape))} for the results')
    if any(np.may_share_memory(out, x) for x in inputs):
        raise ModelError('out shares memory with an input; expected an array of its own for '
                         'the results')
    return out


def _row_error(error, row):
    """error (a ModelError of a single call) with the row of the batch named (in its message and
    its row attribute)."""
    named = type(error).__new__(type(error))
    named.__dict__.update(error.__dict__)
    named.args = (f'row {row}: {error}',)
    named.row = row
    return named
