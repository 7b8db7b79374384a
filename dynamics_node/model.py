"""The robot model (immutable after load; its layout: layout.py) and its public calls: each takes
the calling thread's workspace (data.py), calls its engine's entry point and returns the result,
raises the error of the rule code (faults.py) or routes (forward_dynamics.route)."""

from collections.abc import Mapping
import math

import numpy as np

from .algorithms.completion import complete_positions, MAX_BUDGET_MS
from .algorithms.lcaba import DEFAULT_SETTINGS, ProximalSettings
from . import contacts as contact_routes
from .data import Data, ThreadWorkspace
from .derivatives import Derivatives
from .engines import numba_available
from .errors import ModelError
from .faults import (BIAS, error, Fault, FORWARD, GRAVITY, INVERSE, INVERSE_OSIM, link_call,
                     MASS_MATRIX, message, vectors)
from .forward_dynamics import (AUTO, call, check_method, check_settings, LCABA_RESIDUAL,
                               lcaba_is_cheaper, raise_first, route, set_wrenches)
from .kernels.codes import ACCELERATION_VIOLATION, OK
from .layout import (checked_amplification_limit, checked_link, checked_links, frozen, hold,
                     independent_positions, lay_out, near_singularity, reference)
from .multibody.clusters import AMPLIFICATION_LIMIT, build_clusters
from .multibody.topology import SpanningTree
from .validation import (accepted_weights, check_finite, checked_weights, external_forces,
                         independent_velocities, positions, vector, written)
from .whole_body import WholeBodyTerms
from . import bounds


class Model(WholeBodyTerms, Derivatives):
    """A URDF+ robot as a tree of clusters (whole-body terms: whole_body.py); see load_model."""

    def __init__(self, spec, compiled=None, reference_positions=None,
                 amplification_limit=AMPLIFICATION_LIMIT):
        tree = SpanningTree(spec)
        clusters = build_clusters(spec, tree, split=False)
        tree.renumber([b for c in clusters for b in c.bodies])
        clusters = build_clusters(spec, tree)
        lay_out(self, spec, tree, clusters)
        # method 'auto' starts with LCABA
        self._auto_settings = DEFAULT_SETTINGS if lcaba_is_cheaper(self) else None
        self.compiled = numba_available() if compiled is None else bool(compiled)
        self._flat = None                     # the compiled model (flat.FlatModel), at first use
        self.gravity = np.array([0.0, 0.0, -9.81])
        self._zero_y = frozen(np.zeros(self.ny))
        self._local = ThreadWorkspace(self)       # ._local.data: the calling thread's workspace
        self._reference_positions, self.reference_amplification, neighbourhoods = \
            reference(self, clusters, tree, reference_positions)
        self.amplification_limit = amplification_limit
        self.warnings += [near_singularity(c, around, self.amplification_bound[c.index])
                          for c, around in zip(clusters, neighbourhoods)
                          if around > 0.5 * self.amplification_bound[c.index]]
        hold(self, clusters)

    @property
    def reference_positions(self):
        """The reference (assembly) configuration, spanning q (nq): the zero position where the
        loops close there, else the closed configuration found from it at load
        (multibody/reference.py), or the positions given to load_model. complete_positions follows
        its assembly branch."""
        return self._reference_positions.copy()

    @reference_positions.setter
    def reference_positions(self, value):
        raise ModelError('reference_positions is fixed at load; pass reference_positions= to '
                         'load_model')

    @property
    def amplification_limit(self):
        """Where a loop cluster's amplification (the largest row sum of |G_k|: the speed of its
        fastest joint when every independent coordinate moves at unit speed) exceeds this multiple
        of its amplification at the reference configuration (reference_amplification), the
        configuration counts as singular: inverse dynamics, bias forces, the
        mass matrix and Lambda^-1 raise SingularConfigurationError naming the cluster, forward
        dynamics takes LCABA (method 'auto'), and completion does not continue through it. Default
        clusters.AMPLIFICATION_LIMIT (20)."""
        return self._amplification_limit

    @amplification_limit.setter
    def amplification_limit(self, value):
        self._amplification_limit = checked_amplification_limit(value)
        self.amplification_bound = frozen(self._amplification_limit
                                          * self.reference_amplification)
        if self._flat is not None:
            self._flat.amplification_bound[:] = self.amplification_bound

    @property
    def auto_lcaba(self):
        """Whether method 'auto' starts with LCABA (forward_dynamics.lcaba_is_cheaper)."""
        return self._auto_settings is not None

    @property
    def gravity(self):
        """Gravity acceleration in the root frame, m/s^2 (default (0, 0, -9.81))."""
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, value):
        g = vector(value, 'gravity', {3: 'x y z, m/s^2'}, bounds.GRAVITY)
        self._gravity = g.copy()                        # not a view of the caller's array
        if self._flat is not None:
            self._flat.gravity[:] = g

    @property
    def flat(self):
        """The model compiled into flat arrays for the numba kernels (built once, shared)."""
        if self._flat is None:
            from .kernels.flat.model import FlatModel
            self._flat = FlatModel(self)
        return self._flat

    @property
    def kernels_cached(self):
        """False where warm_up (or the first call) compiles the kernels: the first model of this
        process, with numba's on-disk cache missing or stale for one of them. True with the NumPy
        reference. Asked before any workspace exists: building one already compiles (the
        structures of the flat model and the LCABA plan)."""
        if not self.compiled:
            return True
        from .engines.numba_engine import FastPath
        return FastPath.kernels_cached()

    def warm_up(self, progress=None):
        """Compile (or load from numba's cache) the fast path before the first real call; returns
        the seconds it took (0 with the NumPy reference). progress(name, i, n, seconds) is called
        after each of the n kernels, the first time in the process (to show a long compilation)."""
        engine = self._local.data.engine
        return engine.warm_up(progress) if self.compiled else 0.0

    @property
    def links(self):
        """Every link name (frames of bodies and of the links fixed to them)."""
        return tuple(self.link_frame)

    def create_data(self):
        """A fresh workspace for the algorithms (one per thread)."""
        return Data(self)

    def forward_dynamics(self, q, v, tau, wrenches=None, contacts=None, method=AUTO,
                         settings=None, info=False, out=None):
        """Spanning accelerations qdd (nv).

        method 'aba': qdd = G ydd + g, ydd from the cluster ABA (Chignoli et al. 2023, Alg. 1);
        raises SingularConfigurationError where a cluster's constraint split or D_k is singular.
        'lcaba': the proximal loop-constrained ABA on the spanning tree (Sathya & Carpentier 2025,
        Alg. 3), which also solves singular configurations and redundant loops. 'auto': 'lcaba'
        where its loop clusters are large enough that it is cheaper
        (forward_dynamics.lcaba_is_cheaper), else 'aba', and 'lcaba' where that raises; an LCABA
        result that does not keep the constraints is never returned (forward_dynamics.auto_lcaba:
        the exact route instead, or ModelError).

        Args:
            q: spanning positions (nq), loops closed.
            v: spanning (nv, consistent) or independent (ny) velocities; LCABA at a singular
                configuration needs spanning ones (independent velocities cannot be lifted there).
            tau: spanning (nv, projected with G^T) or independent (ny) generalized forces.
            wrenches: {link: (force, torque)} in the link frame at its origin (N, N m).
            contacts: a Contact or a list of them (contacts.py), held by the forces of rigid
                bilateral contacts: 'aba' then takes the exact route (cluster ABA, the contacts'
                Delassus matrix from the cluster EFPA, a second ABA), 'lcaba' and 'auto' add them
                to LCABA as cut constraints (contacts.forward_dynamics).
            method: 'auto' (default), 'aba' or 'lcaba'.
            settings: lcaba.ProximalSettings for LCABA (default ProximalSettings()).
            info: return a ForwardDynamicsInfo (acceleration, method used, fallback reason,
                constraint residual, iterations, multipliers, contact forces) instead of the
                acceleration alone.
            out: a writable float64 array of nv entries to write the accelerations into and
                return (no new array; with info, the info is returned).
        """
        data = self._local.data
        if wrenches is contacts is settings is None and method is AUTO and info is False \
                and not data.f_ext_set and self._auto_settings is None:        # the common call
            try:
                code = data.forward_dynamics_entry(data.context, q, v, tau)
            except TypeError:                  # not float64 vectors: converted once
                code = call(data, data.forward_dynamics_entry, FORWARD, (q, v, tau))
            if code == OK:
                return data.qdd_out.copy() if out is None else written(out, data.qdd_out)
        if contacts is not None:
            result = self._contacts_forward_dynamics(data, q, v, tau, wrenches, contacts, method,
                                                     settings, info)
        else:
            set_wrenches(self, data, wrenches, data.forward_dynamics_entry, FORWARD, (q, v, tau))
            result = route(self, data, (q, v, tau), method, settings, info)
        if out is None:
            return result
        qdd = written(out, result.acceleration if info else result)
        return result if info else qdd

    def _contacts_forward_dynamics(self, data, q, v, tau, wrenches, contacts, method, settings,
                                   info):
        """forward_dynamics with contacts (contacts.py): the fused call (LCABA or the exact route)
        of a contact set resolved before, else the contact routes on checked inputs."""
        if (wrenches is None and info is False and not data.f_ext_set
                and (settings is None or type(settings) is ProximalSettings)):
            qdd = None
            if method is AUTO or type(method) is str and method == 'lcaba':
                qdd = data.engine.fused_forward_dynamics_contacts(
                    q, v, tau, contacts, settings or DEFAULT_SETTINGS,
                    LCABA_RESIDUAL if method is AUTO else math.inf)
            elif type(method) is str and method == 'aba':
                fused = data.engine.fused_contacts('fused_forward_dynamics', contacts, q, v, tau)
                qdd = None if fused is None else fused[0].qdd.copy()
            if qdd is not None:
                return qdd
        check_method(method)
        check_settings(settings)
        arguments = (q, v, tau)
        q = positions(self, data, q)
        v = vector(v, 'v', {self.nv: 'spanning', self.ny: 'independent'}, bounds.VELOCITY)
        tau = vector(tau, 'tau', {self.nv: 'spanning', self.ny: 'independent'}, bounds.FORCE)
        external_forces(self, data, wrenches)
        frames = contact_routes.resolve(self, contacts)
        if not frames:                                              # contacts=[]: none
            return route(self, data, arguments, method, settings, info)
        result = contact_routes.forward_dynamics(self, data, q, v, tau, frames, method, settings,
                                                 info)
        check_finite(self, 'accelerations and contact forces',
                     lambda: FORWARD.inputs(self, arguments), result.acceleration,
                     *result.contact_forces, *result.multipliers.values())
        return result if info else result.acceleration

    def inverse_dynamics(self, q, v, a, wrenches=None, contacts=None, info=False, weights=None,
                         out=None):
        """Independent generalized forces tau_y (ny) from the cluster RNEA (Chignoli et al. 2023,
        Sec. VI).

        Args:
            q: spanning positions (nq), loops closed.
            v, a: spanning (nv, consistent) or independent (ny) velocities and accelerations.
            wrenches: {link: (force, torque)} in the link frame at its origin.
            contacts: a Contact or a list of them, which v and a must keep: the result is then
                the ny efforts of the actuated coordinates (actuated_joint_names), zero on the
                floating base and the passive coordinates, of least weighted norm with H_y ydd +
                C_y = S^T tau + J_c^T lambda (projected inverse dynamics, contacts.py); ModelError
                where no torques produce the motion.
            info: return a contacts.InverseDynamicsInfo (efforts, contact forces, contact
                residual).
            weights: ny positive numbers w (default ones; the actuated entries count): with
                contacts, sum w tau^2 is the norm minimized.
            out: a writable float64 array of ny entries to write the efforts into and return
                (no new array; with info, the info is returned).
        """
        return self._inverse_dynamics(q, v, a, wrenches, INVERSE, contacts, info, weights, out)

    def _inverse_dynamics(self, q, v, a, wrenches, kind, contacts=None, info=False,
                          weights=None, out=None):
        """inverse_dynamics, bias_forces and gravity_forces (kind: the faults.Call that names
        their results): the engine's entry point, or the contact routes."""
        data = self._local.data
        if wrenches is contacts is weights is None and info is False and not data.f_ext_set:
            try:                                                         # the common call
                code = data.inverse_dynamics_entry(data.context, q, v, a)
            except TypeError:                  # not float64 vectors: converted once
                code = call(data, data.inverse_dynamics_entry, kind, (q, v, a))
            if code == OK:
                return data.tau_out.copy() if out is None else written(out, data.tau_out)
            raise error(self, code, data.fault, kind, (q, v, a))
        if out is not None:                    # the routes below, their efforts written into out
            result = self._inverse_dynamics(q, v, a, wrenches, kind, contacts, info, weights)
            tau = written(out, result.efforts if info else result)
            return result if info else tau
        if contacts is None:
            set_wrenches(self, data, wrenches, data.inverse_dynamics_entry, kind, (q, v, a))
            code = call(data, data.inverse_dynamics_entry, kind, (q, v, a))
            if code != OK:
                raise error(self, code, data.fault, kind, (q, v, a))
            tau = data.tau_out.copy()
            checked_weights(self, weights)
            return contact_routes.InverseDynamicsInfo(tau) if info else tau
        w = accepted_weights(self, weights)
        if wrenches is None and w is not False and not data.f_ext_set:
            fused = data.engine.fused_contacts('fused_inverse_dynamics', contacts, q, v, a, w)
            if fused is not None:                              # contacts resolved before
                return contact_routes.inverse_info(*fused, info)
        arguments = (q, v, a)
        q = positions(self, data, q)
        v = vector(v, 'v', {self.nv: 'spanning', self.ny: 'independent'}, bounds.VELOCITY)
        x = vector(a, 'a', {self.nv: 'spanning', self.ny: 'independent'}, bounds.ACCELERATION)
        yd = independent_velocities(self, data, v)
        ydd = x if x.size == self.ny and self.ny != self.nv else x[self.independent_v]
        external_forces(self, data, wrenches)
        w = checked_weights(self, weights)
        frames = contact_routes.resolve(self, contacts)
        if x.size == self.nv:
            mismatch = np.max(np.abs(x - data.engine.spanning(q, yd, ydd)), initial=0.0)
            if mismatch > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(x))):
                raise message(self, ACCELERATION_VIOLATION, Fault(value=mismatch))
        if not frames:
            tau = data.engine.inverse_dynamics(q, yd, ydd, data.f_ext)
            check_finite(self, kind.what, lambda: kind.inputs(self, arguments), tau)
            return contact_routes.InverseDynamicsInfo(tau) if info else tau
        result = contact_routes.inverse_dynamics(self, data, q, yd, ydd, frames, w)
        check_finite(self, kind.what, lambda: kind.inputs(self, arguments), result.efforts,
                     *result.contact_forces)
        return result if info else result.efforts

    def mass_matrix(self, q, out=None):
        """H_y = G^T H G (ny x ny), from the cluster CRBA (written into out, a writable float64
        ny x ny array, and returned where given)."""
        data = self._local.data
        code = call(data, data.mass_matrix_entry, MASS_MATRIX, (q,))
        if code != OK:
            raise error(self, code, data.fault, MASS_MATRIX, (q,))
        return data.H_out.copy() if out is None else written(out, data.H_out)

    def bias_forces(self, q, v, wrenches=None, contacts=None, out=None):
        """Gravity + Coriolis/centrifugal forces C_y (ny): inverse dynamics at zero acceleration
        (with contacts: the actuated efforts that hold ydd = 0, which v must allow); out as
        inverse_dynamics."""
        return self._inverse_dynamics(q, v, self._zero_y, wrenches, BIAS, contacts, out=out)

    def gravity_forces(self, q, contacts=None, out=None):
        """Gravity compensation forces (ny): inverse dynamics at rest (with contacts: the actuated
        efforts that hold a standing robot still); out as inverse_dynamics."""
        return self._inverse_dynamics(q, self._zero_y, self._zero_y, None, GRAVITY, contacts,
                                      out=out)

    def contact_bias_forces(self, q, v, contacts, weights=None, info=False, a=None):
        """The actuated efforts that hold a robot on its contacts while it moves with measured
        velocities (and accelerations a) that need not keep them: inverse_dynamics(q, yd_c, ydd,
        contacts=contacts, weights=weights) at the nearest state that does, yd_c = yd - J_c^+ J_c
        yd and ydd = a - J_c^+ (J_c a + Jdot yd_c) (the least changes; J_c the contacts' Jacobian
        in independent coordinates, pseudo-inverted at contacts.PSEUDOINVERSE_CUTOFF; a default
        zero): contacts.contact_bias_forces. At rest it equals gravity_forces(q, contacts); with v
        that keeps the contacts and has no contact drift, bias_forces(q, v, contacts=contacts).

        Args:
            q: spanning positions (nq), loops closed.
            v: spanning (nv, consistent) or independent (ny) velocities, e.g. measured ones.
            contacts: a Contact or a list of them (None or []: bias_forces(q, v)).
            weights: as inverse_dynamics.
            info: return a contacts.ContactBiasInfo (efforts, velocities yd_c and accelerations
                ydd (ny, independent), contact forces, velocity_correction |yd - yd_c|_inf,
                acceleration_correction |a - ydd|_inf) instead of the efforts alone.
            a: measured spanning (nv; its independent entries are used) or independent (ny)
                accelerations, e.g. of a recording.
        Raises:
            ModelError: as inverse_dynamics with contacts, and where no accelerations keep the
                contacts (their Jacobian loses rank at q).
        """
        data = self._local.data
        w = accepted_weights(self, weights)
        if w is not False and not data.f_ext_set and a is None:
            fused = data.engine.fused_contacts('fused_bias_forces', contacts, q, v, w)
            if fused is not None:                    # contacts resolved before: one call
                return contact_routes.bias_info(*fused, info)
        q = positions(self, data, q)
        v = vector(v, 'v', {self.nv: 'spanning', self.ny: 'independent'}, bounds.VELOCITY)
        yd = independent_velocities(self, data, v)
        x = None if a is None else vector(a, 'a', {self.nv: 'spanning', self.ny: 'independent'},
                                          bounds.ACCELERATION)
        ydd = x if x is None or x.size == self.ny != self.nv else x[self.independent_v]
        external_forces(self, data, None)
        w = checked_weights(self, weights)
        frames = () if contacts is None else contact_routes.resolve(self, contacts)
        result = contact_routes.contact_bias_forces(self, data, q, yd, frames, w, ydd)
        check_finite(self, 'contact bias forces',
                     [('q', q, bounds.POSITION), ('v', v, bounds.VELOCITY),
                      ('gravity', self._gravity, bounds.GRAVITY)]
                     + ([] if x is None else [('a', x, bounds.ACCELERATION)]),
                     result.efforts, result.velocities, result.accelerations,
                     *result.contact_forces)
        return result if info else result.efforts

    def inverse_osim(self, q, links):
        """Lambda^-1 = J_y H_y^-1 J_y^T (6k x 6k) for k links, from the cluster EFPA (Chignoli
        et al. 2023 Sec. VIII); blocks [linear; angular] in each link's own frame at its origin."""
        data = self._local.data
        try:
            links = ((links,) if isinstance(links, str) else tuple(links)) \
                if data.engine.known_frame_set(links) is not None \
                else tuple(checked_links(self, links))      # links named before: checked then
        except ModelError as link_error:                 # named after q's checks
            raise_first(self, data, data.mass_matrix_entry, MASS_MATRIX, (q,), link_error)
        try:
            code, Lambda_inv = data.engine.inverse_osim_call(q, links)
        except TypeError:
            code, Lambda_inv = data.engine.inverse_osim_call(*vectors(INVERSE_OSIM, (q,)), links)
        if code != OK:
            raise error(self, code, data.fault, INVERSE_OSIM, (q,))
        return Lambda_inv.copy()

    def link_jacobian(self, q, link):
        """J (6 x ny): [linear; angular] velocity of the link frame, in that frame, from yd."""
        return self._link_kinematics(q, None, (link,), 'Jacobian entries', jacobians=True)[2][0]

    def link_bias_acceleration(self, q, v, link):
        """Jdot yd (6): classical acceleration [linear; angular] of the link frame's origin, in
        that frame, at zero independent accelerations (ydd = 0, so qdd = g on the loops), without
        gravity: the link's acceleration is link_jacobian(q, link) @ ydd + this.

        Args:
            q: spanning positions (nq), loops closed.
            v: spanning (nv, consistent) or independent (ny) velocities.
            link: a link name.
        """
        return self._link_kinematics(q, v, (link,), 'bias acceleration entries',
                                     biases=True)[3][0]

    def link_pose(self, q, link):
        """(R, p): orientation and origin of a link in the root link's frame."""
        R, p, _, _ = self._link_kinematics(q, None, (link,), 'pose entries', poses=True)
        return R[0], p[0]

    def link_poses(self, q):
        """(R (L x 3 x 3), p (L x 3)): orientation and origin of every link (in ``links`` order)
        in the root link's frame, from one forward pass (the transforms of /tf)."""
        R, p, _, _ = self._link_kinematics(q, None, None, 'pose entries', poses=True)
        return R, p

    def link_kinematics(self, q, v, links):
        """(R (k x 3 x 3), p (k x 3), J (k x 6 x ny), bias (k x 6)) of k links from one forward
        pass: each link's orientation and origin in the root link's frame (link_pose), its
        Jacobian (link_jacobian) and its bias acceleration Jdot yd (link_bias_acceleration), rows
        [linear; angular] in the link's frame.

        Args:
            q: spanning positions (nq), loops closed.
            v: spanning (nv, consistent) or independent (ny) velocities.
            links: distinct link names of the model (a name alone is a list of one; none gives
                k = 0), checked first, before q and v, in time linear in their number: a call
                names each of the model's links at most once, and a longer list is refused before
                any kinematics.
        """
        links = checked_links(self, links, empty=True)
        return self._link_kinematics(q, v, links, 'poses, Jacobians and bias accelerations',
                                     poses=True, jacobians=True, biases=True)

    def _link_kinematics(self, q, v, links, what, poses=False, jacobians=False, biases=False):
        """(R, p, J, bias) of links (names; None: every link) that poses, jacobians and biases
        ask, None for the others: the fused call, else the checked path in the order of the single
        calls: q (loops closed unless poses alone), v (with biases), each link (Model._link), the
        engine's pass, the finiteness of the results (what they are called in its message)."""
        kind = link_call(what, biases)
        data = self._local.data
        arguments = (q, v) if biases else (q,)
        selected = links

        def entry(context, q, v=None):
            return data.engine.link_call(q, v, selected, poses, jacobians, biases)
        if links is not None:
            try:
                links = tuple(checked_link(self, link) for link in links)
            except ModelError as link_error:             # named after q's and v's checks
                selected = ()
                raise_first(self, data, entry, kind, arguments, link_error)
        selected = links
        code = call(data, entry, kind, arguments)
        if code != OK:
            raise error(self, code, data.fault, kind, arguments)
        return data.engine.link_results(poses, jacobians, biases)

    def complete_positions(self, q_independent, budget_ms=None):
        """Spanning q (nq) on the assembly branch of reference_positions: couplings solved
        directly, loops by continuation from the last completion, else from the reference
        configuration (completion.py). The same input gives the same positions whatever was
        completed before; positions off the branch (out of reach) raise ModelError, beyond a
        singularity SingularConfigurationError.

        Args:
            q_independent: the independent joints' positions in independent_joint_names order (7
                entries for a floating joint, 4 for a spherical one, none for a split joint), or
                a mapping {joint name: position} of the actuated joints (and the floating joint's
                7), as a driver measures them: the passive ones (idle spins) take their reference
                positions.
            budget_ms: None (default), the continuation bounded by its steps only; or a time
                budget in milliseconds for a caller that must answer in time (the node's stream).
        """
        if isinstance(q_independent, Mapping):
            q_independent = independent_positions(self, q_independent)
        q_ind = vector(q_independent, 'q_independent',
                       {self.independent_q.size: 'independent positions'}, bounds.POSITION)
        budget = budget_ms if budget_ms is None or type(budget_ms) is float and \
            0.0 < budget_ms <= MAX_BUDGET_MS else \
            vector(budget_ms, 'budget_ms', {1: 'milliseconds'}, MAX_BUDGET_MS)[0]
        if budget is not None and budget <= 0.0:
            raise ModelError(f'budget_ms is {budget:g}; expected a time budget > 0 ms or None')
        data = self._local.data
        q = data.engine.fused_completion(q_ind, data.q_last, budget)
        if q is None:               # planar or split joints, or a failure to name: completion.py
            q = complete_positions(self, data, q_ind, budget)
            check_finite(self, 'completed positions', [('q_independent', q_ind, bounds.POSITION)],
                         q)
            q = positions(self, data, q, check=False)
        data.q_last = q.copy()                         # the next warm start, on success only
        data.engine.closed_positions(q)                # equal positions are not checked again
        return q

    def spanning_velocities(self, q, yd):
        """qd = G yd (nv) at positions q."""
        data = self._local.data
        q = positions(self, data, q)
        yd = vector(yd, 'yd', {self.ny: 'independent velocities'}, bounds.VELOCITY)
        qd = data.engine.spanning(q, np.zeros(self.ny), yd)     # G yd: g vanishes at zero velocity
        check_finite(self, 'spanning velocities',
                     [('q', q, bounds.POSITION), ('yd', yd, bounds.VELOCITY)], qd)
        return qd
