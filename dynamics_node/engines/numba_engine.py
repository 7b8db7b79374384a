"""FastPath: the compiled cluster algorithms (the kernels) behind a small Python API.

The fused_* methods are Model's public calls in one compiled call each (kernels/calls.py), as the
engine contract (contract.py) asks: they check their inputs and return None where Model's checked
path must name an error. The other methods
assume inputs validated by that path: float64 NumPy vectors of the right lengths (any layout),
spanning q with unit quaternions and closed loops, f_ext (nb x 6) in body coordinates
(validation.external_forces). Results are copies of the workspace buffers, so that a later call
does not change them.

``warm_up()`` compiles every kernel once per process for float64 arrays of any layout (loaded from
numba's on-disk cache after the first run) and forbids later compilation, so that no call can
compile on the hot path; a FastPath used before warm_up() warms up at its first call. FastPath then
calls the compiled entry points directly: numba's dispatcher would spend about a microsecond typing
each structref argument at every call.
"""

import math
import time

import numpy as np

from ..algorithms import completion
from ..algorithms.contacts import contact_set_key
from ..algorithms.lcaba import DEFAULT_SETTINGS, LcabaResult
from ..faults import Fault, message
from ..kernels import completion as compiled_completion
from ..kernels.borrowed import Borrowed
from ..kernels.codes import LCABA_NOT_POSITIVE
from ..kernels.checks import REFER
from ..kernels.flat.checks import call_context, check_plan, frame_set
from ..kernels.flat.lcaba import lcaba_plan
from ..kernels.flat.model import FlatModel
from ..kernels.kinematics import OK
from . import contact_calls
from .batch_calls import BatchCalls
from .compilation import compile_kernels, DISPATCHERS, ENTRY_POINTS, on_disk
from .contract import Engine
from .whole_body_calls import WholeBodyCalls

FRAME_SETS = 64                 # link lists whose Lambda^-1 buffers are kept
CONTACT_SETS = 64               # contact sets whose LCABA plans and workspaces are kept
_FAILURES = {compiled_completion.START_SINGULAR: 'start',
             compiled_completion.TOO_MANY_STEPS: 'steps', compiled_completion.SINGULAR: 'singular',
             compiled_completion.NOT_CLOSED: 'residual'}


class FastPath(BatchCalls, Engine):
    """Compiled C-ABA, C-RNEA, CRBA, C-EFPA, LCABA and link kinematics of one Model with its own
    workspace (one per thread; pass ``flat`` to share the compiled model between threads)."""

    def __init__(self, model, flat=None, f_ext=None):
        self.model = model
        self.flat = FlatModel(model) if flat is None else flat
        self.data = self.flat.create_data(f_ext)  # f_ext: the external forces of the checked calls
        self.plan = lcaba_plan(model)             # LCABA (Sathya & Carpentier 2025), shared by
        #                                           threads
        self.lcaba_data = self.plan.create_data()
        self.checks = check_plan(model)           # the state checks' data (flat/checks.py)
        checks, self._check_scratch = self.checks.create_ref()
        self._m, self._d, self._p, self._w, self._c = (Borrowed(ref) for ref in (
            self.flat.ref, self.data.ref, self.plan.ref, self.lcaba_data.ref, checks))
        # the fused calls' argument
        self._x = Borrowed(call_context(self._m, self._d, self._c, self._p, self._w))
        self._settings = None                     # the ProximalSettings and accepted residual in
        self._residual = None                     # lcaba_data.settings
        self._use_settings(DEFAULT_SETTINGS, math.inf)
        self._frame_sets = {}
        self._contact_sets = {}                   # tuple of Contacts -> contact_calls.ContactSet
        self._pending = None                      # a completion whose budget ran out
        #                                           (fused_completion)
        self._links = 0                           # the links of the last link_call
        self._whole_body = None                   # WholeBodyCalls, at the first use
        self._done = np.zeros(1, dtype=np.int64)  # the rows a batch kernel finished
        self.workspace = None                     # the Data attached (attach)
        self._use(ENTRY_POINTS or {name: self._warm_up_then(name) for name in DISPATCHERS})

    def set_gravity(self, gravity):
        """Gravity acceleration (3) in the root frame, shared by every FastPath of this flat
        model."""
        self.flat.gravity[:] = gravity

    def forward_dynamics(self, q, yd, tau, f_ext=None, spanning=False):
        """ydd (ny) from the cluster ABA; qdd = G ydd + g (nv) instead with spanning=True.
        tau: independent (ny) or spanning (nv) generalized forces."""
        status = self._aba(self._m, self._d, q, yd, tau,
                           self.data.zero_f if f_ext is None else f_ext)
        if status:
            self._raise(status)
        return (self.data.qdd if spanning else self.data.ydd).copy()

    def inverse_dynamics(self, q, yd, ydd, f_ext=None):
        """tau_y (ny) from the cluster RNEA."""
        status = self._rnea(self._m, self._d, q, yd, ydd,
                            self.data.zero_f if f_ext is None else f_ext)
        if status:
            self._raise(status)
        return self.data.tau.copy()

    def bias(self, q, yd, f_ext=None):
        """C_y (ny): gravity, Coriolis and centrifugal forces (minus external ones), RNEA at
        ydd = 0."""
        return self.inverse_dynamics(q, yd, self.data.zero_y, f_ext)

    def gravity(self, q):
        """Gravity compensation forces (ny): RNEA at rest."""
        return self.inverse_dynamics(q, self.data.zero_y, self.data.zero_y)

    def mass_matrix(self, q):
        """H_y = G^T H G (ny x ny)."""
        status = self._crba(self._m, self._d, q)
        if status:
            self._raise(status)
        return self.data.H.copy()

    def inverse_osim(self, q, links):
        """Lambda^-1 = J_y H_y^-1 J_y^T (6k x 6k) for k link names (validated by the caller);
        blocks [linear; angular] in each link's frame, as Model.inverse_osim."""
        body, X, T, Omega, _ = self.frame_set((links,) if isinstance(links, str) else tuple(links))
        status = self._efpa(self._m, self._d, q, body, X, T, Omega)
        if status:
            self._raise(status)
        return Omega.copy()

    def spanning(self, q, yd, ydd):
        """qdd = G ydd + g (nv) at q, yd."""
        status = self._spanning(self._m, self._d, q, yd, ydd)
        if status:
            self._raise(status)
        return self.data.qdd.copy()

    def link_kinematics(self, q, yd, links, poses=True, jacobians=True, biases=True):
        """(R, p, J, bias) of checked link names (None: every link), those asked (None for the
        others), as Model.link_kinematics; yd is not read without biases."""
        n = self.data.select_links(links)
        status = self._link_kinematics(self._m, self._d, q, self.data.zero_y if yd is None else yd,
                                       n, poses, jacobians, biases)
        if status:
            self._raise(status)
        return self.data.link_results(n, poses, jacobians, biases)

    def accept_positions(self, q, closure, tolerance, bound=np.inf):
        """True where q passes validation.positions' checks (|q_i| <= bound; closure: also
        couplings and loops within tolerance); unit quaternions normalized in place. False: let the
        NumPy checks name the error."""
        return self._accept_positions(self._m, self._d, self._c, q, closure, tolerance, bound)

    def velocity_violation(self, v):
        """(max |K v|, its cluster's name, max |v|) of spanning velocities at the positions of the
        last accept_positions(q, closure=True)."""
        self._velocity_violation(self._m, self._d, self._c, v)
        worst, cluster, scale = self._check_scratch['worst']
        return (float(worst), self.model.cluster_list[int(cluster)].name if cluster >= 0 else '',
                float(scale))

    def lcaba(self, q, qd, tau, f_ext, settings, multipliers=True, contacts=()):
        """LcabaResult of the proximal LCABA (lcaba.lcaba): qd, tau spanning (nv), f_ext (nb x 6),
        contacts (algorithms/contacts.ContactFrames) as further cut constraints; its multipliers
        are left empty with multipliers=False (naming them costs more than the solve)."""
        if contacts:
            entry = self._contact_set(contacts)
            plan, w, p, w_ref = entry.plan, entry.w, entry.p, entry.w_ref
        else:
            plan, w, p, w_ref = self.plan, self.lcaba_data, self._p, self._w
        status = self._lcaba(self._m, self._d, p, w_ref, q, qd, tau, f_ext,
                             float(settings.mu), float(settings.tolerance),
                             int(settings.max_iterations))
        if status:
            raise message(self.model, LCABA_NOT_POSITIVE, Fault(index=int(w.info[0])))
        iterations, residual, converged = w.result
        return LcabaResult(w.qdd.copy(), int(iterations), float(residual), bool(converged),
                           plan.multipliers(w.lam) if multipliers else {},
                           plan.contact_forces(w.lam))

    def contact_state(self, contacts, jacobian=True, drift=False):
        """(J_c (m x ny) or None, J_c ydd + Jdot yd (m), J_c yd (m)) of contacts (ContactFrames)
        at the state the last forward_dynamics or inverse_dynamics left (kernels/contacts.py);
        with drift, Jdot yd (ydd = 0, without gravity) instead of the residual."""
        entry = self._contact_set(contacts)
        self._contact_jacobian(self._m, self._d, entry.p, entry.w_ref, entry.J, entry.out, drift)
        rows = slice(entry.row0, entry.plan.rows)
        return (entry.J[rows].copy() if jacobian else None, entry.out[0, rows].copy(),
                entry.out[1, rows].copy())

    def delassus(self, q, contacts):
        """J_c H_y^-1 J_c^T of contacts at q from the cluster EFPA's Lambda^-1 of their bodies
        (frames at the body origins), pressed through the rows of the last contact_state."""
        entry = self._contact_set(contacts)
        status = self._efpa(self._m, self._d, q, *entry.bodies)
        if status:
            self._raise(status)
        P = entry.pressing()
        return P @ entry.bodies[3] @ P.T

    def contact_wrenches(self, contacts, forces):
        """Body forces (nb x 6) sum K^b^T lambda of contact forces (m) on the rows of the last
        contact_state."""
        return self._contact_set(contacts).wrenches(forces)

    def _contact_set(self, contacts):
        """The contact_calls.ContactSet of contacts (ContactFrames), built at the first use of
        their Contacts; the CONTACT_SETS most recently built are kept."""
        key = tuple(frames.contact for frames in contacts)
        entry = self._contact_sets.get(key)
        if entry is None:
            if len(self._contact_sets) == CONTACT_SETS:
                del self._contact_sets[next(iter(self._contact_sets))]        # the oldest
            entry = self._contact_sets[key] = contact_calls.ContactSet(self, contacts)
        return entry

    # ---- the public calls: one compiled entry point each (kernels/calls.py), entry(context,
    #      *inputs) -> rule code (codes.py), its details in fault; attach() hands them to Model's
    #      workspace. Inputs of any other type than a float64 vector raise NotAFloat64Vector (a
    #      TypeError; borrowed.INPUT_VECTOR): Model converts them and calls again.

    def attach(self, data):
        """data's entry points, context, result buffers and fault (contract.Engine.attach)."""
        self.workspace = data
        data.context = self._x
        data.forward_dynamics_entry = self._fused_forward_dynamics
        data.inverse_dynamics_entry = self._fused_inverse_dynamics
        data.mass_matrix_entry = self._fused_mass_matrix
        data.qdd_out, data.tau_out, data.H_out = self.data.qdd, self.data.tau, self.data.H
        data.fault = self.data.fault

    def forward_dynamics_lcaba(self, q, v, tau, settings, residual):
        """Model.forward_dynamics(q, v, tau) by LCABA with settings: a rule code, LCABA_REJECTED
        where its residual is beyond max(tolerance, residual max(1, |qdd|_inf)); the result in
        lcaba_qdd."""
        # frozen settings: the same object, the same values
        if settings is not self._settings or residual != self._residual:
            self._use_settings(settings, residual)
        return self._fused_forward_dynamics_lcaba(self._x, q, v, tau)

    @property
    def lcaba_qdd(self):
        return self.lcaba_data.qdd

    def lcaba_result(self, multipliers=True):
        """LcabaResult of the last forward_dynamics_lcaba call."""
        w = self.lcaba_data
        iterations, residual, converged = w.result
        return LcabaResult(w.qdd.copy(), int(iterations), float(residual), bool(converged),
                           self.plan.multipliers(w.lam) if multipliers else {},
                           self.plan.contact_forces(w.lam))

    def checked(self):
        """(q, yd): the checked positions (quaternions normalized) and independent velocities of
        the last call."""
        return self.data.q_checked.copy(), self.data.yd_checked.copy()

    def fused_forward_dynamics_contacts(self, q, v, tau, contacts, settings, residual=math.inf):
        """Model.forward_dynamics(q, v, tau, contacts=contacts) by LCABA with settings, where its
        residual is within max(tolerance, residual max(1, |qdd|_inf)), for contacts (a Contact, a
        list or a tuple of them) that this workspace resolved before."""
        try:
            entry = self._contact_sets.get(contact_set_key(contacts))
            if entry is not None:
                # frozen settings: the same object, the same values
                if settings is not entry.settings or residual != entry.residual:
                    entry.w.settings[:] = _settings(settings, residual)
                    entry.settings, entry.residual = settings, residual
                if self._fused_forward_dynamics_lcaba(entry.context, q, v, tau) == OK:
                    return entry.w.qdd.copy()
        except TypeError:              # NotAFloat64Vector, or an unhashable key
            pass
        return None

    def fused_contacts(self, route, contacts, *inputs):
        """A contact route of Model in one compiled call (route: a fused method of
        contact_calls.ContactCalls), for contacts this workspace resolved and ran before:
        (ContactCalls, ContactFrames) with the results, else None."""
        try:
            entry = self._contact_sets.get(contact_set_key(contacts))
            if entry is not None and entry.calls is not None and \
                    getattr(entry.calls, route)(*inputs) == OK:
                return entry.calls, entry.frames
        except TypeError:              # NotAFloat64Vector, or an unhashable key
            pass
        return None

    def inverse_osim_call(self, q, links):
        """Model.inverse_osim(q, links) of a tuple of checked links: (rule code, Lambda^-1)."""
        frames = self.frame_set(links)
        return self._fused_inverse_osim(self._x, q, frames[4]), frames[3]

    def link_call(self, q, v, links, poses=True, jacobians=True, biases=True):
        """Model's link calls of checked link names (None: every link): a rule code; the results
        from link_results(). v is not read without biases."""
        self._links = n = self.data.select_links(links)
        return self._fused_link_kinematics(self._x, q, v if biases else self.data.zero_y, n,
                                           poses, jacobians, biases)

    def link_results(self, poses=True, jacobians=True, biases=True):
        """(R, p, J, bias) of the last link_call, those not asked None."""
        return self.data.link_results(self._links, poses, jacobians, biases)

    def whole_body(self):
        """Model's whole-body calls on this workspace (whole_body_calls.WholeBodyCalls), bound to
        the compiled entry points (warmed up first)."""
        if self._whole_body is None:
            if not ENTRY_POINTS:
                self.warm_up()
            self._whole_body = WholeBodyCalls(self)
        return self._whole_body

    def closed_positions(self, q):
        """Positions Model.complete_positions returns (checked, closed): equal positions then skip
        the position checks of the fused calls (calls.positions)."""
        self.data.q_closed[:] = q

    def fused_completion(self, q_independent, previous, budget_ms):
        """Model.complete_positions (kernels/completion.py), tracked from previous (nq, None for
        none): spanning q, closed, within bounds and with unit quaternions; None where
        completion.py must run; ModelError where a loop cluster does not close on the reference
        branch or budget_ms (None: no budget) ran out (checked every completion.CHUNK_STEPS steps
        of a continuation from the reference; what it reached is finished first by the next call
        on nearby positions, as completion.complete_positions does)."""
        if not ENTRY_POINTS:
            self.warm_up()               # compiling or loading the kernels is no completion's time
        deadline = math.inf if budget_ms is None else time.perf_counter() + 1e-3 * budget_ms
        pending, self._pending = self._pending, None
        if pending is not None and len(q_independent) == len(pending[0]) and \
                (np.max(np.abs(q_independent - pending[0]), initial=0.0)
                 <= completion.CONTINUATION_STEP):
            (self.data.q_checked[:], self._check_scratch['partial'][:],
             self._check_scratch['failure'][:]) = pending[1:]
            previous = self._completion(pending[0], previous, deadline, True).copy()
        q = self._completion(q_independent, previous, deadline, False)
        return None if q is None else q.copy()

    def _completion(self, q_independent, previous, deadline, resume):
        """The compiled completion in chunks until it ends or the deadline passes
        (fused_completion); d.q_checked holds the result."""
        tracked, out, scratch, done = (previous is not None, self.data.q_checked,
                                       self._check_scratch, 0.0)
        start = previous if tracked else self.checks.reference
        status = self._complete(self._x, q_independent, start, tracked, out, resume)
        for _ in range(completion.MAX_CONTINUATION_STEPS // completion.CHUNK_STEPS):
            if status != compiled_completion.PARTIAL or time.perf_counter() > deadline:
                break
            done = 1.0 - (1.0 - done) * (1.0 - scratch['failure'][2])
            status = self._complete(self._x, q_independent, start, tracked, out, True)
        if status == OK:
            return out
        if status == REFER:
            return None
        k, reason, t, value = scratch['failure']
        cluster = self.model.cluster_list[int(k)]
        if status == compiled_completion.PARTIAL:
            if time.perf_counter() > deadline:
                self._pending = (np.array(q_independent, dtype=float), out.copy(),
                                 scratch['partial'].copy(), scratch['failure'].copy())
                reason, value = 'budget', 0.0
            else:
                reason, value = 'steps', completion.MAX_CONTINUATION_STEPS
        else:
            reason = _FAILURES[int(reason)]
        raise completion.failure_error(self.model, cluster, reason,
                                       1.0 - (1.0 - done) * (1.0 - t), value)

    @staticmethod
    def kernels_cached():
        """True unless warm_up() compiles: the kernels were warmed up in this process, or numba's
        on-disk cache holds every one, current with its sources."""
        return bool(ENTRY_POINTS) or on_disk(DISPATCHERS.values())

    def warm_up(self, progress=None):
        """Compiles (or loads from the cache) every kernel, runs each once at a neutral state and
        forbids later compilation. Returns the seconds it took. progress(name, i, n, seconds) is
        called after kernel i of n, the first time in the process."""
        start = time.perf_counter()
        frames = self.frame_set((self.model.root_link,))
        self._use(compile_kernels(self, frames, progress))
        q = self.model.q_neutral
        y, f = self.data.zero_y, self.data.zero_f
        self._aba(self._m, self._d, q, y, y, f)               # statuses ignored: q may be singular
        self._rnea(self._m, self._d, q, y, y, f)
        self._crba(self._m, self._d, q)
        self._efpa(self._m, self._d, q, *frames[:4])
        self._spanning(self._m, self._d, q, y, y)
        v = np.zeros(self.model.nv)
        self._lcaba(self._m, self._d, self._p, self._w, q, v, v, f, 1e6, 1e-10, 1)
        self._contact_jacobian(self._m, self._d, self._p, self._w, np.zeros((self.plan.rows, 1)),
                               np.zeros((2, self.plan.rows)), False)
        self._accept_positions(self._m, self._d, self._c, q.copy(), True, 1e-6, np.inf)
        self._velocity_violation(self._m, self._d, self._c, v)
        self._fused_forward_dynamics(self._x, q, y, y)
        self._fused_forward_dynamics_lcaba(self._x, q, y, y)     # at the workspace's settings,
        #                                                          left as they are
        self._fused_inverse_dynamics(self._x, q, y, y)
        self._fused_mass_matrix(self._x, q)
        self._fused_inverse_osim(self._x, q, frames[4])
        self._complete(self._x, q[self.model.independent_q], q, True, self.data.q_checked, False)
        self._link_kinematics(self._m, self._d, q, y, 0, True, True, True)
        self._fused_link_kinematics(self._x, q, y, 0, True, True, True)
        if self.workspace is not None:
            self.attach(self.workspace)                # the compiled entry points, not stand-ins
        return time.perf_counter() - start

    def _use_settings(self, settings, residual):
        """The settings and accepted residual of the fused LCABA call, in its workspace
        (lcaba_data.settings)."""
        self.lcaba_data.settings[:] = _settings(settings, residual)
        self._settings, self._residual = settings, residual

    def _warm_up_then(self, name):
        """Stand-in for kernel name until the first warm_up()."""
        def call(*args):
            self.warm_up()
            return getattr(self, '_' + name)(*args)
        return call

    def _use(self, kernels):
        for name, kernel in kernels.items():
            setattr(self, '_' + name, kernel)

    def frame_set(self, links):
        """Frame bodies, ^frameX_body, the T buffer, the output and the kernels' FrameSet of a
        tuple of checked links (cached; the FRAME_SETS most recently built, so that requests for
        ever new link lists cannot exhaust memory)."""
        frames = self._frame_sets.get(links)
        if frames is None:
            if len(self._frame_sets) == FRAME_SETS:
                del self._frame_sets[next(iter(self._frame_sets))]       # the oldest
            n = len(links)
            body = np.array([self.model.link_frame[link][0] for link in links], dtype=np.int64)
            X = np.array([self.model.link_frame[link][1] for link in links], dtype=float)
            arrays = (body, X, np.zeros((n, self.model.ny, 6)), np.zeros((6 * n, 6 * n)))
            frames = self._frame_sets[links] = arrays + (Borrowed(frame_set(*arrays)),)
        return frames

    def known_frame_set(self, links):
        """The frame set of links (a link name, or a list or tuple of them) if this workspace built
        it, so that they were checked then; else None. Only strings count: an object equal to a
        link name (a UserString) is not one, as Model._link says."""
        if isinstance(links, str):
            return self._frame_sets.get((links,))
        if not isinstance(links, (list, tuple)):
            return None
        for link in links:                     # a plain loop: cheaper than all() over a generator
            if type(link) is not str:          # (a str subclass takes the checked path)
                return None
        return self._frame_sets.get(tuple(links))

    def _raise(self, status):
        """The error of a kernel's status (d.info: cluster, value; faults.py)."""
        raise message(self.model, status, Fault(index=int(self.data.info[0]),
                                                value=float(self.data.info[1])))

    def contact_calls(self, contacts):
        """The compiled contact routes (contact_calls.ContactCalls) of contacts (ContactFrames),
        kept with their LCABA plan."""
        entry = self._contact_set(contacts)
        if entry.calls is None:
            entry.calls = contact_calls.ContactCalls(self, entry)
        return entry.calls


def _settings(settings, residual):
    """The fused LCABA call's w.settings: ProximalSettings' mu, tolerance and max_iterations, and
    the residual it accepts relative to max(1, |qdd|_inf) (forward_dynamics.LCABA_RESIDUAL)."""
    return settings.mu, settings.tolerance, settings.max_iterations, residual
