"""Centroidal dynamics kernels (algorithms/centroidal.py): the centre of mass, the centroidal
momentum matrix A_g, the CoM Jacobian, the centroidal momentum and its bias, the kinetic and
potential energies, into a CentroidalWorkspace.

A_0 = sum_i ^iX_0^T I_i J_i is gathered cluster by cluster with composite inertias (the CRBA's,
crba.composite_inertias): exchanging the sums over bodies and over the clusters on their paths,
its block column k is sum_{i in k} ^iX_0^T Ic_i (S_k)_i (Orin, Goswami & Lee 2013, from the CRBA's
F = Ic S of Featherstone & Orin 2000, eq. 10). Results are [linear; angular] about the CoM on the
root's axes, the NumPy twin's order.
"""

import numpy as np
from numba import njit

from .cache import key_on_helpers
from .crba import composite_inertias
from .frames import link_transforms
from .kinematics import kinematics, OK, update_transforms
from .rnea import bias_acceleration
from .spatial import (cross_force, dot6, rigid_force, rotated_back, transform_at,
                      transposed_force)

key_on_helpers(__file__)


class CentroidalWorkspace:
    """The buffers the centroidal kernels write, for one FlatData: A (6 x ny, A_g), J (3 x ny, the
    CoM Jacobian), com (3), momentum (6, h_g), bias (6, dh_g/dt at ydd = 0), energy (1)."""

    def __init__(self, flat):
        self.A, self.J = np.zeros((6, flat.ny)), np.zeros((3, flat.ny))
        self.com, self.momentum, self.bias = np.zeros(3), np.zeros(6), np.zeros(6)
        self.energy = np.zeros(1)


@njit(error_model='numpy')
def mass_moment(m, d):
    """(m, m c) of the moving bodies in root coordinates, from d.root_E, d.root_r
    (frames.link_transforms): body i's first moment h_i moves to the root as E^T h_i + m_i r."""
    rigid, root_E, root_r = m.rigid_inertia, d.root_E, d.root_r
    mass, h0, h1, h2 = 0.0, 0.0, 0.0, 0.0
    for i in range(1, len(rigid)):
        mi, E, r = rigid[i, 0], root_E[i], root_r[i]
        mass += mi
        h0 += E[0, 0] * rigid[i, 1] + E[1, 0] * rigid[i, 2] + E[2, 0] * rigid[i, 3] + mi * r[0]
        h1 += E[0, 1] * rigid[i, 1] + E[1, 1] * rigid[i, 2] + E[2, 1] * rigid[i, 3] + mi * r[1]
        h2 += E[0, 2] * rigid[i, 1] + E[1, 2] * rigid[i, 2] + E[2, 2] * rigid[i, 3] + mi * r[2]
    return mass, (h0, h1, h2)


@njit(error_model='numpy')
def center(m, d, com):
    """The CoM into com (the root origin for a massless robot); returns the mass."""
    mass, h = mass_moment(m, d)
    for a in range(3):
        com[a] = h[a] / mass if mass > 0.0 else 0.0
    return mass


@njit(inline='always', error_model='numpy')
def centroidal(f, c):
    """[force; moment - c x force] of f = [moment; force] about the root origin, as a 6-tuple
    (centroidal.to_centroidal)."""
    return (f[3], f[4], f[5], f[0] - c[1] * f[5] + c[2] * f[4], f[1] - c[2] * f[3] + c[0] * f[5],
            f[2] - c[0] * f[4] + c[1] * f[3])


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass(m, d, q, w_com):
    """The CoM into w_com from the transforms at q alone (never singular)."""
    update_transforms(m, d, q)
    link_transforms(m, d)
    center(m, d, w_com)
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_momentum_matrix(m, d, q, w_A, w_com):
    """A_g into w_A (6 x ny) and the CoM into w_com: the block column of cluster k is
    sum_{i in k} ^iX_0^T Ic_i (S_k)_i, moved to the CoM."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status != OK:
        return status
    composite_inertias(m, d)
    link_transforms(m, d)
    center(m, d, w_com)
    cluster, y_range, S, Ic, root_E, root_r = m.cluster, m.y_range, d.S, d.Ic, d.root_E, d.root_r
    for col in range(w_A.shape[1]):
        for e in range(6):
            w_A[e, col] = 0.0
    for i in range(1, len(cluster)):
        k = cluster[i]
        y0 = y_range[k, 0]
        E, r = transform_at(root_E, root_r, i)
        for j in range(y_range[k, 1] - y0):
            f = transposed_force(E, r, rigid_force(Ic[i], S[i, j]))
            for e in range(6):
                w_A[e, y0 + j] += f[e]                  # [moment; force] until moved below
    for col in range(w_A.shape[1]):
        x = centroidal((w_A[0, col], w_A[1, col], w_A[2, col], w_A[3, col], w_A[4, col],
                        w_A[5, col]), w_com)
        for e in range(6):
            w_A[e, col] = x[e]
    return OK


@njit(error_model='numpy')
def composite_moments(m, d):
    """The masses and first moments of the composite inertias (composite_inertias) alone, into
    d.Ic[:, :4]: m_o += m_i, h_o += E^T h_i + m_i r (rigid_congruence's first four)."""
    rigid, output, body_range = m.rigid_inertia, m.output, m.body_range
    Xo_E, Xo_r, Ic = d.Xo_E, d.Xo_r, d.Ic
    for i in range(1, len(rigid)):
        for e in range(4):
            Ic[i, e] = rigid[i, e]
    for k in range(len(output) - 1, -1, -1):
        o = output[k]
        if o > 0:
            for i in range(body_range[k, 0], body_range[k, 1]):
                E, r = transform_at(Xo_E, Xo_r, i)
                mi = Ic[i, 0]
                g = rotated_back(E, (Ic[i, 1], Ic[i, 2], Ic[i, 3]))
                Ic[o, 0] += mi
                for a in range(3):
                    Ic[o, 1 + a] += g[a] + mi * r[a]


@njit(cache=True, nogil=True, error_model='numpy')
def center_of_mass_jacobian(m, d, q, w_com, w_J):
    """The CoM Jacobian into w_J (3 x ny) and the CoM into w_com: the linear rows of A_g over the
    mass M, from the composite masses and first moments alone (composite_moments): the column of
    coordinate j of cluster k is sum_{i in k} ^0E_i (m_i s_v - h_i x s_w) / M with
    (s_w, s_v) = (S_k)_ij (the force rows of Ic_i S_k, centroidal_momentum_matrix)."""
    status = kinematics(m, d, q, d.zero_y, False)
    if status != OK:
        return status
    composite_moments(m, d)
    link_transforms(m, d)
    mass = center(m, d, w_com)
    scale = 1.0 / mass if mass > 0.0 else 0.0
    cluster, y_range, S, Ic, root_E, root_r = m.cluster, m.y_range, d.S, d.Ic, d.root_E, d.root_r
    for col in range(w_J.shape[1]):
        for a in range(3):
            w_J[a, col] = 0.0
    for i in range(1, len(cluster)):
        k = cluster[i]
        y0 = y_range[k, 0]
        mi, h0, h1, h2 = Ic[i, 0], Ic[i, 1], Ic[i, 2], Ic[i, 3]
        E, _ = transform_at(root_E, root_r, i)
        for j in range(y_range[k, 1] - y0):
            s = S[i, j]
            f = rotated_back(E, (mi * s[3] - h1 * s[2] + h2 * s[1],
                                 mi * s[4] - h2 * s[0] + h0 * s[2],
                                 mi * s[5] - h0 * s[1] + h1 * s[0]))
            for a in range(3):
                w_J[a, y0 + j] += scale * f[a]
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def centroidal_bias(m, d, q, yd, w_bias, w_momentum, w_com):
    """dh_g/dt at ydd = 0 into w_bias, h_g into w_momentum and the CoM into w_com: the body
    accelerations a_i = ^iX_o a_o + c_i (eq. 33 at ydd = 0, no gravity), then
    sum_i ^iX_0^T (I_i a_i + v_i x* I_i v_i) and sum_i ^iX_0^T I_i v_i, moved to the CoM."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    link_transforms(m, d)
    center(m, d, w_com)
    rigid, cluster, output, root_E, root_r = (m.rigid_inertia, m.cluster, m.output, d.root_E,
                                              d.root_r)
    Xo_E, Xo_r, v, a, c = d.Xo_E, d.Xo_r, d.v, d.a, d.c
    h = rate = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for e in range(6):
        a[0, e] = 0.0
    for i in range(1, len(rigid)):
        bias_acceleration(Xo_E, Xo_r, a, c, i, output[cluster[i]])
        p = rigid_force(rigid[i], v[i])
        x, y = rigid_force(rigid[i], a[i]), cross_force(v[i], p)
        f = (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])
        E, r = transform_at(root_E, root_r, i)
        p, f = transposed_force(E, r, p), transposed_force(E, r, f)
        h = (h[0] + p[0], h[1] + p[1], h[2] + p[2], h[3] + p[3], h[4] + p[4], h[5] + p[5])
        rate = (rate[0] + f[0], rate[1] + f[1], rate[2] + f[2], rate[3] + f[3], rate[4] + f[4],
                rate[5] + f[5])
    h, rate = centroidal(h, w_com), centroidal(rate, w_com)
    for e in range(6):
        w_momentum[e], w_bias[e] = h[e], rate[e]
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def kinetic_energy(m, d, q, yd, w_energy):
    """1/2 sum_i v_i . I_i v_i into w_energy[0]."""
    status = kinematics(m, d, q, yd)
    if status != OK:
        return status
    rigid, v = m.rigid_inertia, d.v
    t = 0.0
    for i in range(1, len(rigid)):
        t += dot6(v[i], rigid_force(rigid[i], v[i]))
    w_energy[0] = 0.5 * t
    return OK


@njit(cache=True, nogil=True, error_model='numpy')
def potential_energy(m, d, q, w_energy):
    """-g . (m c) into w_energy[0], from the transforms at q alone."""
    update_transforms(m, d, q)
    link_transforms(m, d)
    _, h = mass_moment(m, d)
    g = m.gravity
    w_energy[0] = -(g[0] * h[0] + g[1] * h[1] + g[2] * h[2])
    return OK
