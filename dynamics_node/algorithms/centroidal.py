"""Centroidal dynamics in independent coordinates: the total mass, the centre of mass (CoM) and its
Jacobian, the centroidal momentum matrix A_g and its bias (Orin, Goswami & Lee 2013, "Centroidal
dynamics of a humanoid robot", Auton. Robots 35; cluster kinematics of Chignoli et al. 2023).

The bodies that move carry the momentum: the ground (the root link and the links fixed to it) is
left out, as Pinocchio leaves out its universe body. With ^iX_0 the transform of body i from the
root frame (the world), v_i = J_i yd its velocity (J_i from the cluster subspaces S_k, Chignoli et
al. 2023 Sec. 5.2) and I_i its spatial inertia, both in body coordinates:
  h_0 = sum_i ^iX_0^T I_i v_i         momentum about the root origin, [moment; force]
  A_0 = sum_i ^iX_0^T I_i J_i         so that h_0 = A_0 yd
  m and m c: read off every body's inertia in root coordinates,
      sum_i ^iX_0^T I_i ^iX_0 = [[Ibar, m c x], [-m c x, m 1]]
  h_g = ^GX_0^* h_0, G the frame at c with the root's axes: n_g = n_0 - c x f;
      returned [linear; angular] (Pinocchio's Force order)
  dh_g/dt = ^GX_0^* dh_0/dt, as c' x (m c') = 0, with dh_0/dt = sum_i ^iX_0^T (I_i a_i +
      v_i x* I_i v_i) (Featherstone & Orin 2000, eq. 5). At ydd = 0 the body accelerations
      a_i = ^iX_o a_o + c_k (eq. 33) carry the loops' bias g_k in c_k, so the centroidal bias is
      A_g^tree g + Adot_g^tree qd on the spanning tree.
"""

import numpy as np

from ..spatial import cross_force, SWAP_LINEAR_ANGULAR, skew
from .frames import body_jacobian, link_transforms
from .kinematics import forward_pass, update_transforms


def total_mass(model):
    """Sum of the masses of the bodies that move (rotors included)."""
    return float(sum(model.inertia[i][5, 5] for i in range(1, model.nb)))


def mass_moment(model, X_root):
    """(m, m c) of the moving bodies in root coordinates: the mass and the upper-right block m c x
    of sum_i ^iX_0^T I_i ^iX_0."""
    I = sum(X_root[i].T @ model.inertia[i] @ X_root[i] for i in range(1, model.nb))
    return I[5, 5], np.array([I[2, 4], I[0, 5], I[1, 3]])


def center(model, X_root):
    """The CoM c (3) in the root frame (the root origin for a massless robot)."""
    mass, mc = mass_moment(model, X_root)
    return mc / mass if mass > 0.0 else np.zeros(3)


def center_of_mass(model, data, q):
    """The CoM c (3) in the root frame, from the transforms at q alone (never singular)."""
    update_transforms(model, data, q)
    return center(model, link_transforms(model, data))


def to_centroidal(c, F):
    """Forces F (6 x k, [moment; force] about the root origin, root axes) about c, in Pinocchio's
    order [force; moment - c x force]."""
    moved = F.copy()
    moved[:3] -= skew(c) @ F[3:]
    return SWAP_LINEAR_ANGULAR @ moved


def centroidal_momentum_matrix(model, data, q):
    """(A_g (6 x ny, [linear; angular] about the CoM, root axes), c (3)), A_0 = sum_i ^iX_0^T I_i
    J_i."""
    forward_pass(model, data, q, np.zeros(model.ny))
    X_root = link_transforms(model, data)
    A = sum(X_root[i].T @ model.inertia[i] @ body_jacobian(model, data, i, np.eye(6))
            for i in range(1, model.nb))
    c = center(model, X_root)
    return to_centroidal(c, A), c


def center_of_mass_jacobian(model, data, q):
    """J_c (3 x ny): the CoM velocity c' = J_c yd, the linear momentum over the mass."""
    A, _ = centroidal_momentum_matrix(model, data, q)
    mass = total_mass(model)
    return A[:3] / mass if mass > 0.0 else np.zeros((3, model.ny))


def centroidal_bias(model, data, q, yd):
    """(dh_g/dt at ydd = 0, the loops' g included ([linear; angular] about the CoM, root axes),
    h_g = A_g yd, c (3)): the rate of the momentum about the root origin, sum_i ^iX_0^T (I_i a_i +
    v_i x* I_i v_i) with a_i the body accelerations at ydd = 0 without gravity, moved to c."""
    forward_pass(model, data, q, yd)
    X_root = link_transforms(model, data)
    a = np.zeros((model.nb, 6))
    h, rate = np.zeros(6), np.zeros(6)
    for k, cluster in enumerate(model.cluster_list):
        b0, b1 = model.body_range[k]
        for i in range(b0, b1):
            a[i] = data.Xo[i] @ a[cluster.output[i]] + data.c[k][6 * (i - b0):6 * (i - b0 + 1)]
            momentum = model.inertia[i] @ data.v[i]
            h += X_root[i].T @ momentum
            rate += X_root[i].T @ (model.inertia[i] @ a[i] + cross_force(data.v[i], momentum))
    c = center(model, X_root)
    return to_centroidal(c, rate[:, None])[:, 0], to_centroidal(c, h[:, None])[:, 0], c


def kinetic_energy(model, data, q, yd):
    """1/2 yd^T H_y yd = 1/2 sum_i v_i . I_i v_i."""
    forward_pass(model, data, q, yd)
    return 0.5 * sum(data.v[i] @ model.inertia[i] @ data.v[i] for i in range(1, model.nb))


def potential_energy(model, data, q):
    """-g . (m c): the work gravity would do bringing every body to the root origin (Pinocchio's
    computePotentialEnergy)."""
    update_transforms(model, data, q)
    return -float(model.gravity @ mass_moment(model, link_transforms(model, data))[1])
