"""The readable NumPy cluster algorithms behind the engine contract (contract.py): each public
call's entry point checks its inputs with validation.py (raising the error of faults.py's table
for a bad input), runs the algorithm and returns the rule code of a singular configuration or a
non-finite result as the compiled calls do.

This is the reference the compiled kernels are tested against
(test/kernels/test_fast_path.py), and the engine of a model loaded with ``compiled=False`` or where
numba is not installed.
"""

import numpy as np

from .. import bounds

from ..algorithms.aba import aba
from ..algorithms.contacts import (add_contact_forces, contact_jacobian, contact_rows, delassus,
                                   residuals, velocity_product_accelerations)
from ..algorithms import centroidal, derivatives
from ..algorithms.coriolis import coriolis_matrix
from ..algorithms.crba import crba
from ..algorithms.efpa import efpa
from ..algorithms.frames import link_kinematics
from ..algorithms.kinematics import forward_pass
from ..algorithms.lcaba import lcaba
from ..errors import SingularConfigurationError
from ..faults import Fault, message
from ..kernels.codes import ACCELERATION_VIOLATION, LCABA_REJECTED, LIFT_SINGULAR, NOT_FINITE, OK
from ..algorithms.regressor import regressor
from ..algorithms.rnea import rnea
from ..multibody.constraints import rows_at
from ..spatial import SWAP_LINEAR_ANGULAR
from ..validation import all_finite, independent_velocities, positions, vector
from .contract import Engine


class ReferencePath(Engine):
    """Cluster ABA, RNEA, CRBA, EFPA and LCABA of one model on one workspace (Data)."""

    def __init__(self, model, data):
        self.model, self.data = model, data
        self.fault = np.zeros(3)
        self.qdd, self.tau = np.zeros(model.nv), np.zeros(model.ny)
        self.H = np.zeros((model.ny, model.ny))
        self.lcaba_qdd = np.zeros(model.nv)
        self._checked = self._lcaba = self._links = self._whole_body = None

    # ---- the public calls' entry points: entry(engine, *inputs) -> rule code ----

    def attach(self, data):
        """data's entry points, context, result buffers and fault (contract.Engine.attach)."""
        data.context = self
        data.forward_dynamics_entry = ReferencePath.forward_dynamics_call
        data.inverse_dynamics_entry = ReferencePath.inverse_dynamics_call
        data.mass_matrix_entry = ReferencePath.mass_matrix_call
        data.qdd_out, data.tau_out, data.H_out = self.qdd, self.tau, self.H
        data.fault = self.fault

    def forward_dynamics_call(self, q, v, tau):
        """Model.forward_dynamics by the cluster ABA: spanning qdd into self.qdd."""
        q, v, tau, yd = self._state(q, v, tau, 'tau', bounds.FORCE)
        f_ext = self.data.f_ext
        return self._run(self.qdd, lambda: self.forward_dynamics(q, yd, tau, f_ext, True))

    def inverse_dynamics_call(self, q, v, a):
        """Model.inverse_dynamics: tau_y into self.tau; spanning a must equal G ydd + g."""
        q, v, a, yd = self._state(q, v, a, 'a', bounds.ACCELERATION)
        code, ydd = self.accelerations(q, yd, a)
        if code != OK:
            return code
        return self._run(self.tau, lambda: self.inverse_dynamics(q, yd, ydd, self.data.f_ext))

    def accelerations(self, q, yd, a):
        """(code, ydd): the independent accelerations of checked a; spanning a must equal
        G ydd + g (ModelError), the code that of a singular configuration."""
        model = self.model
        ydd = a if a.size == model.ny and model.ny != model.nv else a[model.independent_v]
        if a.size == model.nv:
            try:
                mismatch = np.max(np.abs(a - self.spanning(q, yd, ydd)), initial=0.0)
            except SingularConfigurationError as error:
                return self._fault(error), ydd
            if mismatch > bounds.VELOCITY_TOLERANCE * max(1.0, np.max(np.abs(a))):
                raise message(model, ACCELERATION_VIOLATION, Fault(value=mismatch))
        return OK, ydd

    def mass_matrix_call(self, q):
        """Model.mass_matrix: H_y into self.H."""
        q = positions(self.model, self.data, q)
        return self._run(self.H, lambda: self.mass_matrix(q))

    def forward_dynamics_lcaba(self, q, v, tau, settings, residual):
        """Model.forward_dynamics by LCABA with settings into lcaba_qdd: LCABA_REJECTED where its
        residual is beyond max(tolerance, residual max(1, |qdd|_inf))."""
        model = self.model
        q, v, tau, _ = self._state(q, v, tau, 'tau', bounds.FORCE)
        qd = v
        if v.size != model.nv:
            try:
                qd = self.spanning(q, np.zeros(model.ny), v)   # G yd: g vanishes at zero velocity
            except SingularConfigurationError as error:
                self.fault[:] = (error.code, error.details[1], error.details[2])
                return LIFT_SINGULAR
        spanning_tau = tau
        if tau.size != model.nv:
            spanning_tau = np.zeros(model.nv)
            spanning_tau[model.independent_v] = tau
        self._lcaba = result = self.lcaba(q, qd, spanning_tau, self.data.f_ext, settings)
        self.lcaba_qdd[:] = result.qdd
        if not (all_finite(result.qdd) and all(all_finite(np.reshape(x, -1))
                                               for x in result.multipliers.values())):
            return NOT_FINITE
        scale = max(1.0, float(np.max(np.abs(result.qdd), initial=0.0)))
        if result.residual > max(settings.tolerance, residual * scale):
            self.fault[:] = (result.iterations, 0, result.residual)
            return LCABA_REJECTED
        return OK

    def lcaba_result(self, multipliers=True):
        """LcabaResult of the last forward_dynamics_lcaba call."""
        return self._lcaba

    def checked(self):
        """(q, yd): the checked positions and independent velocities of the last call."""
        return self._checked

    def inverse_osim_call(self, q, links):
        """(rule code, Lambda^-1) of a tuple of checked links."""
        q = positions(self.model, self.data, q)
        try:
            result = self.inverse_osim(q, links)
        except SingularConfigurationError as error:
            return self._fault(error), None
        return (OK if all_finite(result.reshape(-1)) else NOT_FINITE), result

    def link_call(self, q, v, links, poses=True, jacobians=True, biases=True):
        """Model's link calls of checked link names (None: every link): a rule code, the results
        from link_results()."""
        model = self.model
        q = positions(model, self.data, q, check=jacobians or biases)
        yd = None
        if biases:
            v = vector(v, 'v', {model.nv: 'spanning', model.ny: 'independent'}, bounds.VELOCITY)
            yd = independent_velocities(model, self.data, v)
        try:
            self._links = self.link_kinematics(q, yd, links, poses, jacobians, biases)
        except SingularConfigurationError as error:
            return self._fault(error)
        return OK if all(all_finite(x.reshape(-1)) for x in self._links if x is not None) \
            else NOT_FINITE

    def link_results(self, poses=True, jacobians=True, biases=True):
        return self._links

    def _state(self, q, v, x, name, bound):
        """q, v and x (tau or a) checked in validation.py's order, and the independent
        velocities."""
        model, data = self.model, self.data
        sizes = {model.nv: 'spanning', model.ny: 'independent'}
        q = positions(model, data, q)
        v = vector(v, 'v', sizes, bounds.VELOCITY)
        x = vector(x, name, sizes, bound)
        yd = independent_velocities(model, data, v)
        self._checked = q, yd
        return q, v, x, yd

    def _run(self, out, algorithm):
        """The algorithm's result into out: OK, NOT_FINITE, or the code of a singular
        configuration."""
        try:
            out[...] = algorithm()
        except SingularConfigurationError as error:
            return self._fault(error)
        return OK if all_finite(out.reshape(-1)) else NOT_FINITE

    def _fault(self, error):
        self.fault[:] = error.details
        return error.code

    def forward_dynamics(self, q, yd, tau, f_ext=None, spanning=False):
        """ydd (ny) from the cluster ABA, or qdd = G ydd + g (nv) with spanning=True; tau
        independent (ny) or spanning (nv, projected with G^T)."""
        model, data = self.model, self.data
        self._external_forces(f_ext)
        forward_pass(model, data, q, yd)
        if tau.size != model.ny:
            tau = np.concatenate([data.G[k].T @ tau[v0:v1]
                                  for k, (v0, v1) in enumerate(model.v_range)])
        ydd = aba(model, data, q, yd, tau)
        return self.spanning_of(ydd) if spanning else ydd

    def inverse_dynamics(self, q, yd, ydd, f_ext=None):
        """tau_y (ny) from the cluster RNEA."""
        self._external_forces(f_ext)
        return rnea(self.model, self.data, q, yd, ydd)

    def mass_matrix(self, q):
        """H_y = G^T H G (ny x ny)."""
        return crba(self.model, self.data, q)

    def inverse_osim(self, q, links):
        """Lambda^-1 (6k x 6k), blocks [linear; angular] in each link's frame."""
        frames = [self.model.link_frame[link] for link in links]
        P = np.kron(np.eye(len(frames)), SWAP_LINEAR_ANGULAR)
        return P @ efpa(self.model, self.data, q, frames) @ P

    def link_kinematics(self, q, yd, links, poses=True, jacobians=True, biases=True):
        """(R, p, J, bias) of checked link names (None: every link), those asked
        (algorithms/frames.py)."""
        return link_kinematics(self.model, self.data, q, yd,
                               self.model.links if links is None else links, poses, jacobians,
                               biases)

    def velocity_violation(self, v):
        """(max |K v|, its cluster's name, max |v|) of spanning velocities over the couplings and
        the loop clusters' active rows, at the loop clusters' transforms of the last
        validation.positions(check=True)."""
        model = self.model
        violation, _, cluster = model.couplings.worst_velocity_violation(v)
        for c, (v0, v1) in zip(model.cluster_list, model.v_range):
            if not c.linear:
                K, _ = rows_at(model, self.data, c, np.zeros(c.n))
                residual = np.max(np.abs(K[c.active_rows] @ v[v0:v1]))
                if residual > violation:
                    violation, cluster = residual, c.name
        return violation, cluster, float(np.max(np.abs(v), initial=0.0))

    def lcaba(self, q, qd, tau, f_ext, settings, multipliers=True, contacts=()):
        """LcabaResult of the proximal LCABA: qd, tau spanning (nv), f_ext (nb x 6), contacts as
        further cut constraints (algorithms/contacts.py); the multipliers are always named here
        (multipliers is for the FastPath interface). An overflow is left to the caller's finiteness
        check (validation.check_finite), as the compiled kernel leaves it."""
        self._external_forces(f_ext)
        with np.errstate(over='ignore', invalid='ignore'):
            return lcaba(self.model, self.data, q, qd, tau, settings, contacts)

    def spanning(self, q, yd, ydd):
        """qdd = G ydd + g (nv) at q, yd."""
        forward_pass(self.model, self.data, q, yd)
        return self.spanning_of(ydd)

    def spanning_of(self, ydd):
        """qdd = G ydd + g (nv) with the G_k, g_k of the last forward pass."""
        return np.concatenate([self.data.G[k] @ ydd[y0:y1] + self.data.g[k]
                               for k, (y0, y1) in enumerate(self.model.y_range)])

    def contact_state(self, contacts, jacobian=True, drift=False):
        """(J_c (m x ny) or None, J_c ydd + Jdot yd (m), J_c yd (m)) of contacts (ContactFrames)
        at data.Xup, data.v and data.a of the last algorithm; with drift, Jdot yd (ydd = 0,
        without gravity) instead of the residual."""
        model, data = self.model, self.data
        rows = self._contact_rows = contact_rows(model, data, contacts)
        a = velocity_product_accelerations(model, data) if drift else data.a
        velocity = [sum(K @ data.v[b] for b, K in blocks.items()) for blocks, _ in rows]
        return (contact_jacobian(model, data, rows) if jacobian else None,
                np.concatenate(residuals(rows, a)), np.concatenate(velocity))

    def delassus(self, q, contacts):
        """D = J_c H_y^-1 J_c^T on the rows of the last contact_state."""
        return delassus(self.model, self.data, q, self._contact_rows)

    def contact_wrenches(self, contacts, forces):
        """sum_b K^b^T lambda (nb x 6) on the rows of the last contact_state."""
        f = np.zeros((self.model.nb, 6))
        sizes = np.cumsum([len(k) for _, k in self._contact_rows])[:-1]
        add_contact_forces(self.model, f, self._contact_rows, np.split(forces, sizes))
        f[0] = 0.0                                 # the ground carries what it must
        return f

    def whole_body(self):
        """Model's whole-body calls on this workspace (WholeBodyReference)."""
        if self._whole_body is None:
            self._whole_body = WholeBodyReference(self)
        return self._whole_body

    def _external_forces(self, f_ext):
        if f_ext is not self.data.f_ext:
            self.data.f_ext[:] = 0.0 if f_ext is None else f_ext
            self.data.f_ext_set = f_ext is not None


class WholeBodyReference:
    """Model's whole-body and derivative calls on the NumPy algorithms (algorithms/centroidal.py,
    coriolis.py, regressor.py, derivatives.py), inputs checked with validation.py: the methods and
    result buffers of the compiled engine's whole_body_calls.WholeBodyCalls."""

    def __init__(self, engine):
        model = self.model = engine.model
        self.engine, self.data, self.fault = engine, engine.data, engine.fault
        self.com, self.momentum, self.bias, self.energy = (np.zeros(3), np.zeros(6), np.zeros(6),
                                                           np.zeros(1))
        self.A, self.J = np.zeros((6, model.ny)), np.zeros((3, model.ny))
        self.C, self.Y = np.zeros((model.ny, model.ny)), np.zeros((model.ny, 10 * (model.nb - 1)))
        self.d_y, self.d_yd, self.d_ydd, self.fd_y, self.fd_yd, self.H_inv = (
            np.zeros((model.ny, model.ny)) for _ in range(6))
        self.ydd = np.zeros(model.ny)

    def center_of_mass(self, q):
        q = positions(self.model, self.data, q)
        return self._run((self.com,), lambda: (centroidal.center_of_mass(self.model, self.data,
                                                                         q),))

    def potential_energy(self, q):
        q = positions(self.model, self.data, q)
        return self._run((self.energy,), lambda: (centroidal.potential_energy(self.model,
                                                                              self.data, q),))

    def centroidal_momentum_matrix(self, q):
        q = positions(self.model, self.data, q)
        return self._run((self.A, self.com), lambda: centroidal.centroidal_momentum_matrix(
            self.model, self.data, q))

    def center_of_mass_jacobian(self, q):
        q = positions(self.model, self.data, q)
        return self._run((self.J,), lambda: (centroidal.center_of_mass_jacobian(
            self.model, self.data, q),))

    def centroidal_state(self, q, v):
        q, yd = self._state(q, v)
        return self._run((self.bias, self.momentum, self.com), lambda: centroidal.centroidal_bias(
            self.model, self.data, q, yd))

    def kinetic_energy(self, q, v):
        q, yd = self._state(q, v)
        return self._run((self.energy,), lambda: (centroidal.kinetic_energy(self.model,
                                                                            self.data, q, yd),))

    def coriolis_matrix(self, q, v):
        q, yd = self._state(q, v)
        return self._run((self.C,), lambda: (coriolis_matrix(self.model, self.data, q, yd),))

    def regressor(self, q, v, a):
        q, _, a, yd = self.engine._state(q, v, a, 'a', bounds.ACCELERATION)
        code, ydd = self.engine.accelerations(q, yd, a)
        if code != OK:
            return code
        return self._run((self.Y,), lambda: (regressor(self.model, self.data, q, yd, ydd),))

    def inverse_dynamics_derivatives(self, q, v, a):
        q, _, a, yd = self.engine._state(q, v, a, 'a', bounds.ACCELERATION)
        code, ydd = self.engine.accelerations(q, yd, a)
        if code != OK:
            return code
        return self._run((self.d_y, self.d_yd, self.d_ydd), lambda: derivatives.
                         inverse_dynamics_derivatives(self.model, self.data, q, yd, ydd))

    def forward_dynamics_derivatives(self, q, v, tau):
        q, _, tau, yd = self.engine._state(q, v, tau, 'tau', bounds.FORCE)

        def algorithm():
            self.ydd[:] = self.engine.forward_dynamics(q, yd, tau, self.data.f_ext)
            return derivatives.forward_dynamics_derivatives(self.model, self.data, q, yd,
                                                            self.ydd)
        return self._run((self.fd_y, self.fd_yd, self.H_inv), algorithm)

    def _state(self, q, v):
        """q and v checked in validation.py's order, and the independent velocities."""
        model, data = self.model, self.data
        q = positions(model, data, q)
        v = vector(v, 'v', {model.nv: 'spanning', model.ny: 'independent'}, bounds.VELOCITY)
        return q, independent_velocities(model, data, v)

    def _run(self, outs, algorithm):
        """The algorithm's results into outs: OK, NOT_FINITE, or the code of a singular
        configuration."""
        try:
            results = algorithm()
        except SingularConfigurationError as error:
            return self.engine._fault(error)
        for out, result in zip(outs, results):
            out[...] = result
        return OK if all(all_finite(out.reshape(-1)) for out in outs) else NOT_FINITE
