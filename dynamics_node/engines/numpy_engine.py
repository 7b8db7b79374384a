"""The readable NumPy cluster algorithms behind the engine contract (contract.py), without fused
calls.

This is the reference the compiled kernels are tested against
(test/kernels/test_fast_path.py), and the engine of a model loaded with ``compiled=False`` or where
numba is not installed.
"""

import numpy as np

from ..algorithms.aba import aba
from ..algorithms.contacts import (add_contact_forces, contact_jacobian, contact_rows, delassus,
                                   residuals, velocity_product_accelerations)
from ..algorithms.crba import crba
from ..algorithms.efpa import efpa
from ..algorithms.frames import link_kinematics
from ..algorithms.kinematics import forward_pass
from ..algorithms.lcaba import lcaba
from ..algorithms.rnea import rnea
from ..multibody.clusters import constraint_jacobian
from ..spatial import SWAP_LINEAR_ANGULAR
from .contract import Engine


class ReferencePath(Engine):
    """Cluster ABA, RNEA, CRBA, EFPA and LCABA of one model on one workspace (Data)."""

    def __init__(self, model, data):
        self.model, self.data = model, data

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
                K, _ = constraint_jacobian(c, self.data.Xup, model.S, np.zeros(c.n))
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

    def _external_forces(self, f_ext):
        if f_ext is not self.data.f_ext:
            self.data.f_ext[:] = 0.0 if f_ext is None else f_ext
            self.data.f_ext_set = f_ext is not None
