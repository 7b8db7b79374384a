"""The engine contract: what Model asks of the algorithms of one model on one workspace.

Model runs every public call as one sequence:

1. the fused call, ``fused_<call>(inputs as given)``: the whole public call (its input checks, the
   algorithm and the finiteness check of its result) in one step. It returns the result, or None
   for anything it does not accept, and never raises;
2. else Model's checked path: the validation functions (validation.py) turn the inputs into checked
   arrays or raise ModelError naming the fault, the engine's algorithm runs on them
   (``forward_dynamics``, ``inverse_dynamics``, ...), and check_finite refuses a non-finite result
   by name.

The NumPy engine (numpy_engine.py) inherits the fused calls below, which accept nothing: every call
takes the checked path. The numba engine (numba_engine.py) fuses them into one compiled entry point
each, so that the common call crosses one Python frame (its fused_<call> method) between Model and
compiled code.
"""


class Engine:
    """The contract; subclasses implement the algorithms and may fuse the public calls."""

    # ---- 1. fused public calls: the result, or None where Model's checked path must run ----

    def fused_forward_dynamics(self, q, v, tau, settings=None, residual=float('inf')):
        """Model.forward_dynamics(q, v, tau): spanning qdd by the cluster ABA, or by LCABA with
        settings where its residual ||K qdd - k||_inf is within max(settings.tolerance, residual
        max(1, ||qdd||_inf)) (method 'auto': forward_dynamics.LCABA_RESIDUAL; else inf)."""
        return None

    def fused_forward_dynamics_contacts(self, q, v, tau, contacts, settings,
                                        residual=float('inf')):
        """Model.forward_dynamics(q, v, tau, contacts=contacts) by LCABA with settings, where its
        residual is accepted as in fused_forward_dynamics."""
        return None

    def fused_inverse_dynamics(self, q, v, a):
        """Model.inverse_dynamics(q, v, a): tau_y."""
        return None

    def fused_mass_matrix(self, q):
        """Model.mass_matrix(q): H_y."""
        return None

    def fused_inverse_osim(self, q, frames):
        """Model.inverse_osim(q, links) for the frame set of links this workspace checked
        (known_frame_set)."""
        return None

    def fused_link_kinematics(self, q, v, links, poses=True, jacobians=True, biases=True):
        """Model's link calls: (R, p, J, bias) of links (link names as given, not checked; None
        for every link) as link_kinematics returns them, or None; v is not read without
        biases."""
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

    def frame_set(self, links):
        """The frame set of a tuple of checked link names."""
        return links

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
