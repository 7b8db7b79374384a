"""The engine contract: what Model asks of the algorithms of one model on one workspace.

Every public call is one call to an entry point, ``entry(context, *inputs) -> rule code``
(kernels/codes.py): the call's input checks (in validation.py's order), its algorithm and the
finiteness of its result in one step, the result in a buffer of the workspace, and for a fault the
details (argument, index, value) in ``fault``. Model then returns a copy of the result, raises the
error of faults.py's table for the code, or routes (a singular cluster in method 'auto' to LCABA,
an LCABA result beyond LCABA_RESIDUAL to the exact route: forward_dynamics.route). Nothing is run a
second time on another path.

``attach(data)`` hands the entry points to Model's per-thread workspace (Data): ``context``,
``forward_dynamics_entry``, ``inverse_dynamics_entry``, ``mass_matrix_entry``, their results
``qdd_out``, ``tau_out``, ``H_out``, and ``fault``; the other calls are engine methods that return
a code the same way (forward_dynamics_lcaba, inverse_osim_call, link_call). The numba engine's
entry points are compiled (kernels/calls.py) and take float64 vectors only: anything else raises
a TypeError, and Model converts the inputs once (faults.vectors) and calls again. The NumPy
engine's entry points check with validation.py, which raises the table's error for a bad input
itself, and return the codes of the algorithms (a singular configuration, a non-finite result).

A new call (centroidal terms, derivatives, batches) adds: its checks and algorithm as one entry
point per engine returning a code (reusing the checks of calls.py and validation.py), its result
buffer, a faults.Call naming its arguments and results, and a public method of a few lines:
take the thread's data, call the entry point, return a copy of the result or raise
faults.error(model, code, data.fault, call, inputs).
"""


class Engine:
    """The contract; subclasses implement the entry points and the algorithms."""

    def attach(self, data):
        """Sets data.context, the entry points, their result buffers and data.fault."""
        raise NotImplementedError

    def forward_dynamics_lcaba(self, q, v, tau, settings, residual):
        """Model.forward_dynamics(q, v, tau) by LCABA with settings: a rule code; LCABA_REJECTED
        where its residual ||K qdd - k||_inf is beyond max(settings.tolerance, residual
        max(1, ||qdd||_inf)) (method 'auto': forward_dynamics.LCABA_RESIDUAL; else inf); the
        result in lcaba_qdd."""
        raise NotImplementedError

    def lcaba_result(self, multipliers=True):
        """LcabaResult of the last forward_dynamics_lcaba call."""
        raise NotImplementedError

    def checked(self):
        """(q, yd) of the last call: checked positions, independent velocities."""
        raise NotImplementedError

    def inverse_osim_call(self, q, links):
        """(rule code, Lambda^-1) of a tuple of checked link names."""
        raise NotImplementedError

    def link_call(self, q, v, links, poses=True, jacobians=True, biases=True):
        """A rule code of Model's link calls (checked link names; None: every link); the results
        from link_results()."""
        raise NotImplementedError

    def link_results(self, poses=True, jacobians=True, biases=True):
        """(R, p, J, bias) of the last link_call, those not asked None."""
        raise NotImplementedError

    def fused_forward_dynamics_contacts(self, q, v, tau, contacts, settings,
                                        residual=float('inf')):
        """Model.forward_dynamics(q, v, tau, contacts=contacts) by LCABA with settings, where its
        residual is accepted as in fused_forward_dynamics."""
        return None

    def fused_contacts(self, route, contacts, *inputs):
        """A contact route of Model on inputs as Model got them (the weights of the last two
        checked), in one call (route 'fused_forward_dynamics': the exact route,
        'fused_inverse_dynamics': projected inverse dynamics, 'fused_bias_forces':
        contact_bias_forces): (calls, ContactFrames),
        the results in calls.buffers (efforts, lam, yd_c, ydd, info: contact_calls.ContactCalls)
        and calls.qdd, or None for Model's checked path."""
        return None

    def fused_completion(self, q_independent, previous, budget_ms):
        """Model.complete_positions(q_independent) tracked from previous (None: from the
        reference)."""
        return None

    def accept_positions(self, q, closure, tolerance, bound=float('inf')):
        """True where q passes validation.positions' checks (|q_i| <= bound; with closure the loops
        and couplings within tolerance too), its unit quaternions normalized in place; False lets
        the NumPy checks name the fault."""
        return False

    def known_frame_set(self, links):
        """The frame set of links if this workspace checked them before, else None."""
        return None

    def closed_positions(self, q):
        """Positions complete_positions returned (closed, within bounds): an engine may skip their
        checks."""

    # ---- 2. algorithms on validated inputs (float64 vectors of the right lengths, spanning q with
    #      unit quaternions and closed loops, f_ext (nb x 6) in body coordinates); results are new
    #      arrays ----

    def forward_dynamics(self, q, yd, tau, f_ext=None, spanning=False):
        """ydd (ny) from the cluster ABA, or qdd = G ydd + g (nv) with spanning=True; tau
        independent (ny) or spanning (nv, projected with G^T). Raises SingularConfigurationError
        where the ABA cannot."""
        raise NotImplementedError

    def inverse_dynamics(self, q, yd, ydd, f_ext=None):
        """tau_y (ny) from the cluster RNEA."""
        raise NotImplementedError

    def mass_matrix(self, q):
        """H_y = G^T H G (ny x ny) from the cluster CRBA."""
        raise NotImplementedError

    def inverse_osim(self, q, links):
        """Lambda^-1 (6k x 6k) from the cluster EFPA, blocks [linear; angular] in each link's
        frame."""
        raise NotImplementedError

    def link_kinematics(self, q, yd, links, poses=True, jacobians=True, biases=True):
        """(R (k x 3 x 3), p (k x 3), J (k x 6 x ny), bias (k x 6)) of k checked link names (None:
        every link, in Model.links order), those that poses, jacobians and biases ask (None for the
        others): poses in the root frame from the transforms at q alone, Jacobians and bias
        accelerations Jdot yd ([linear; angular] rows in the link frame) after the cluster
        kinematics at q and (with biases) yd. Raises SingularConfigurationError where the
        kinematics cannot."""
        raise NotImplementedError

    def lcaba(self, q, qd, tau, f_ext, settings, multipliers=True, contacts=()):
        """LcabaResult of the proximal LCABA on spanning qd, tau (nv), contacts
        (algorithms/contacts.ContactFrames) as further cut constraints."""
        raise NotImplementedError

    def spanning(self, q, yd, ydd):
        """qdd = G ydd + g (nv) at q, yd."""
        raise NotImplementedError

    # ---- contacts (algorithms/contacts.ContactFrames), at the state (q, yd, ydd) that the last
    #      forward_dynamics or inverse_dynamics call left in the workspace ----

    def contact_state(self, contacts, jacobian=True, drift=False):
        """(J_c (m x ny) or None, J_c ydd + Jdot yd (m), J_c yd (m)) of the contacts' rows, in
        independent coordinates; with drift, Jdot yd (ydd = 0, without gravity) instead of the
        residual."""
        raise NotImplementedError

    def delassus(self, q, contacts):
        """D = J_c H_y^-1 J_c^T (m x m) from the cluster EFPA, after contact_state."""
        raise NotImplementedError

    def contact_calls(self, contacts):
        """The compiled projected inverse dynamics, contact bias forces and exact route of contacts
        (engines/contact_calls.ContactCalls), or None: contacts.py runs them on the algorithms
        here."""
        return None

    def contact_wrenches(self, contacts, forces):
        """Body forces (nb x 6, body coordinates) sum_b K^b^T lambda of the contact forces (m),
        after contact_state."""
        raise NotImplementedError

    def velocity_violation(self, v):
        """(max |K v|, its cluster's name, max |v|) of spanning velocities at the positions of the
        last accept_positions(q, closure=True) or validation.positions(check=True)."""
        raise NotImplementedError
