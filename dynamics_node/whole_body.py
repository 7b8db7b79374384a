"""The whole-body terms of a Model (WholeBodyTerms, a base of Model): centroidal dynamics, the
Coriolis matrix, the energies and the inertial-parameter regressor of cluster dynamics, and
robots loaded with other inertial parameters (parameterized).

Conventions as the rest of the API: q is spanning; velocities and accelerations are independent
(ny) or spanning (nv, consistent); spatial quantities are [linear; angular]; the world frame is the
root link's frame; every body that moves carries 10 inertial parameters (rotors included), the
ground none. Each call is one entry point of the thread's whole-body calls (Data.whole_body:
engines/whole_body_calls.py or numpy_engine.py) that returns a rule code: the result, or the
ModelError faults.py names for it.
"""

from collections import namedtuple
import dataclasses
import functools
import math

import numpy as np

from .algorithms.centroidal import total_mass
from .algorithms.regressor import base_parameters, inertial_parameters, PARAMETERS
from .description.urdf import inertia_tolerance, Inertial
from .errors import ModelError, quote
from .faults import (CENTER_OF_MASS, CENTROIDAL, COM_JACOBIAN, CORIOLIS, error, KINETIC_ENERGY,
                     MOMENTUM_MATRIX, POTENTIAL_ENERGY, REGRESSOR, vectors)
from .kernels.codes import OK
from .multibody.joints import random_position
from .spatial import skew
from .validation import vector
from . import bounds

BaseParameters = namedtuple('BaseParameters', 'rank kept B')
BaseParameters.__doc__ = """The identifiable combinations of the inertial parameters: rank, the
columns kept (indices into inertial_parameters) and B (rank x 10 nb), beta = B pi the base
parameters, with W pi = W[:, kept] beta for every stacked regressor W of the robot."""
# base_parameters: random states with twice as many regressor rows as parameters, their
# independent positions around the reference configuration within this span (rad or m)
ROWS_PER_PARAMETER = 2
SAMPLE_SPAN = 0.5
BASE_RTOL = 1e-8        # a column is kept where |R_jj| > BASE_RTOL |W_j| (algorithms/regressor.py)


class WholeBodyTerms:
    """Model's whole-body calls (module docstring)."""

    @functools.cached_property
    def total_mass(self):
        """The sum of every moving body's mass, rotors included (kg): summed once, the inertias
        being frozen at load."""
        return total_mass(self)

    @property
    def inertial_parameters(self):
        """pi (10 nb): per moving body in parameter_bodies order, Pinocchio's
        Inertia.toDynamicParameters in the body frame (its joint's child link frame, fixed links
        merged): m, m c (3), then the rotational inertia about the body origin (Ixx, Ixy, Iyy, Ixz,
        Iyz, Izz)."""
        pi = inertial_parameters(self)
        pi.flags.writeable = False
        return pi

    @property
    def parameter_bodies(self):
        """The joint of each block of 10 inertial parameters (a universal joint u has the bodies
        u_1 and u_2)."""
        return self.joint_names

    def center_of_mass(self, q, v=None):
        """The centre of mass c (3) in the world frame; with v, (c, its velocity c')."""
        calls = self._local.data.whole_body
        if v is None:
            return self._whole_body(calls, calls.center_of_mass, CENTER_OF_MASS, (q,)).com.copy()
        self._whole_body(calls, calls.centroidal_state, CENTROIDAL, (q, v))
        mass = self.total_mass
        return calls.com.copy(), calls.momentum[:3] / mass if mass > 0.0 else np.zeros(3)

    def center_of_mass_jacobian(self, q):
        """J_c (3 x ny): c' = J_c yd."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.center_of_mass_jacobian, COM_JACOBIAN, (q,)).J.copy()

    def centroidal_momentum_matrix(self, q):
        """A_g (6 x ny): h_g = A_g yd, the momentum [linear; angular] about the centre of mass on
        world axes (Orin, Goswami & Lee 2013); Pinocchio's ccrba times G on the spanning tree."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.centroidal_momentum_matrix, MOMENTUM_MATRIX,
                                (q,)).A.copy()

    def centroidal_momentum(self, q, v):
        """h_g (6) = A_g yd."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.centroidal_state, CENTROIDAL, (q, v)).momentum.copy()

    def centroidal_bias(self, q, v):
        """dh_g/dt at ydd = 0 (6), the loops' g included: dh_g/dt = A_g ydd + centroidal_bias
        (Pinocchio's dh_g at a = g on the spanning tree)."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.centroidal_state, CENTROIDAL, (q, v)).bias.copy()

    def coriolis_matrix(self, q, v):
        """C_y (ny x ny) = G^T C G + G^T H Gdot: C_y yd + gravity_forces = bias_forces, and
        d/dt mass_matrix - 2 C_y is skew-symmetric (algorithms/coriolis.py)."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.coriolis_matrix, CORIOLIS, (q, v)).C.copy()

    def kinetic_energy(self, q, v):
        """1/2 yd^T H_y yd (J)."""
        calls = self._local.data.whole_body
        return float(self._whole_body(calls, calls.kinetic_energy, KINETIC_ENERGY,
                                      (q, v)).energy[0])

    def potential_energy(self, q):
        """-gravity . (m c), zero with every body at the world origin (J)."""
        calls = self._local.data.whole_body
        return float(self._whole_body(calls, calls.potential_energy, POTENTIAL_ENERGY,
                                      (q,)).energy[0])

    def regressor(self, q, v, a):
        """Y_y (ny x 10 nb) with regressor(q, v, a) @ inertial_parameters ==
        inverse_dynamics(q, v, a); rows in independent_joint_names order, columns in
        parameter_bodies order."""
        calls = self._local.data.whole_body
        return self._whole_body(calls, calls.regressor, REGRESSOR, (q, v, a)).Y.copy()

    def base_parameters(self, states=None, samples=None, seed=0):
        """BaseParameters (rank, kept, B) of the regressors stacked over states, a sequence of
        (q, v, a) (an identification's trajectory), or else over samples random closed states
        (default: twice as many rows as parameters), drawn with seed around the reference
        configuration: the column-ordered QR (Gautier 1991) keeps the parameters that earlier
        columns do not explain."""
        if states is None:
            states = self._random_states(samples, seed)
        elif isinstance(states, (str, bytes)) or not hasattr(states, '__iter__'):
            raise ModelError(f'states must be a sequence of (q, v, a), got {quote(states)}')
        rows = []
        for i, state in enumerate(states):
            if not (isinstance(state, (tuple, list)) and len(state) == 3):
                raise ModelError(f'states[{i}] is {quote(state)}; expected (q, v, a)')
            rows.append(self.regressor(*state))
        if not rows:
            raise ModelError('states is empty; expected at least one (q, v, a)')
        rank, kept, B = base_parameters(np.vstack(rows), BASE_RTOL)
        return BaseParameters(rank, kept, B)

    def _random_states(self, samples, seed):
        """samples (default ROWS_PER_PARAMETER rows per parameter) random closed states (q, yd,
        ydd): independent positions within SAMPLE_SPAN of the reference configuration (random
        unit quaternions), completed; positions that completion refuses are drawn again."""
        parameters = PARAMETERS * (self.nb - 1)
        if samples is None:
            samples = math.ceil(ROWS_PER_PARAMETER * parameters / self.ny)
        elif type(samples) is not int or not 0 < samples <= parameters:
            raise ModelError(f'samples is {quote(samples)}; expected an integer from 1 to '
                             f'{parameters} (the number of parameters)')
        rng = np.random.default_rng(seed)
        states, attempts = [], 0
        while len(states) < samples:
            attempts += 1
            if attempts > 10 * samples:
                raise ModelError(f'only {len(states)} of {samples} random states closed the '
                                 'loops; pass states instead')
            q = self.reference_positions.copy()
            for i in range(1, self.nb):
                q0, q1 = self.idx_q[i], self.idx_q[i] + self.nq_body[i]
                kind = self.joint_type[i]
                step = random_position(kind, rng, SAMPLE_SPAN)
                q[q0:q1] = step if kind in ('floating', 'spherical') else q[q0:q1] + step
            try:
                q = self.complete_positions(q[self.independent_q])
            except ModelError:
                continue
            states.append((q, rng.normal(size=self.ny), rng.normal(size=self.ny)))
        return states

    def _whole_body(self, calls, entry, call, arguments):
        """calls (the thread's whole-body calls) after entry, one of them, returned OK on
        arguments; else the error of its rule code."""
        try:
            code = entry(*arguments)
        except TypeError:                  # not float64 vectors: converted once
            code = entry(*vectors(call, arguments))
        if code != OK:
            raise error(self, code, calls.fault, call, arguments)
        return calls


def parameterized(model, spec, parameters):
    """The RobotSpec of model's description with the inertial parameters of its moving bodies
    replaced (load_model's inertial_parameters): each body's on its joint's child link (whose frame
    is the body's), zero on the links merged into it; ModelError for a parameter vector of another
    length, entries not finite, or a body that is not physical."""
    n = PARAMETERS * (model.nb - 1)
    pi = vector(parameters, 'inertial_parameters',
                {n: f'{PARAMETERS} per body of parameter_bodies'}, bounds.INERTIA)
    carrier = {}                           # body -> the link whose frame is the body's
    for link, (body, X) in model.link_frame.items():
        if body > 0 and body not in carrier and np.array_equal(X, np.eye(6)):
            carrier[body] = link
    links = {link.name: dataclasses.replace(link, inertial=Inertial(0.0, np.zeros(3),
                                                                    np.zeros((3, 3))))
             if model.link_frame[link.name][0] > 0 else link for link in spec.links}
    for body in range(1, model.nb):
        block = pi[PARAMETERS * (body - 1):PARAMETERS * body]
        inertial = _inertial(model, body, block)
        if body in carrier:
            links[carrier[body]] = dataclasses.replace(links[carrier[body]], inertial=inertial)
        elif np.any(block != 0.0):
            raise ModelError(f'inertial_parameters of body {quote(model.joint_names[body - 1])} '
                             f'are {quote(block)}; this body (half of a universal joint) has no '
                             'link and carries no inertia: expected zeros')
    return dataclasses.replace(spec, links=tuple(links[link.name] for link in spec.links))


def _inertial(model, body, block):
    """The Inertial (mass, centre of mass, rotational inertia about it) of 10 parameters in
    Pinocchio's order, ModelError where they are not those of a rigid body: a negative mass, a
    first moment without mass, principal moments about the centre of mass below zero or breaking
    the triangle inequality."""
    where = (f'inertial_parameters[{PARAMETERS * (body - 1)}:{PARAMETERS * body}] '
             f'(body {quote(model.joint_names[body - 1])})')
    m, h = block[0], block[1:4]
    xx, xy, yy, xz, yz, zz = block[4:]
    I_origin = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if m < 0.0:
        raise ModelError(f'{where}: the mass is {m:.6g}; expected a non-negative mass')
    if m == 0.0 and np.any(h != 0.0):
        raise ModelError(f'{where}: the first moment m c is {quote(h)} without mass; expected '
                         'zeros')
    com = h / m if m > 0.0 else np.zeros(3)
    I_com = I_origin + m * skew(com) @ skew(com)          # parallel axes: I_o = I_c - m [c]^2
    principal = np.linalg.eigvalsh(I_com)
    tolerance = inertia_tolerance(principal)
    if principal[0] < -tolerance or principal[0] + principal[1] < principal[2] - tolerance:
        moments = [float(f'{p:.6g}') for p in principal]
        raise ModelError(f'{where}: the principal moments about the centre of mass are '
                         f'{moments}; expected non-negative moments with the triangle inequality '
                         '(each at most the sum of the others)')
    return Inertial(float(m), com, I_com)
