"""Tree-joint models (jcalc of Featherstone & Orin 2000): joint transform X_J(q), motion subspace
S, and the position manifold of each joint (neutral position, retraction q (+) dv, random
positions).

Every motion subspace here is constant in the child frame, so the apparent derivative vanishes and
the joint bias is c_J = 0; the velocity-product term v x (S qd) is added by the algorithms
(Chignoli et al. 2023, Sec. 1.8). A universal joint, whose S would depend on q, is two revolute
bodies (topology.py).

Layouts (q | v): revolute, continuous, prismatic: angle or displacement | its rate. spherical: unit
quaternion qx qy qz qw | angular velocity, child frame (Pinocchio's JointModelSpherical). planar,
in the plane of (e1, e2) perpendicular to the axis (``plane_frame``): x y theta, the child origin
at x e1 + y e2 turned by theta about the axis | velocity of the child frame along its own e1, e2
and its rate about the axis (Pinocchio's JointModelPlanar with q = x y cos sin). floating: x y z qx
qy qz qw | [linear; angular], child frame.
"""

import numpy as np

from ..joint_types import NQ, TYPES
from ..spatial import (matrix_quaternion, plucker, pose_transform, quaternion_matrix,
                       rotation_about, SWAP_LINEAR_ANGULAR)


def plane_frame(axis):
    """Orthonormal (e1, e2, axis) as the columns of a rotation matrix, e1 x e2 = axis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    return np.column_stack((e1, np.cross(axis, e1), axis))


def motion_subspace(kind, axis):
    """S (6 x nv) in the child frame. A floating joint's velocity is [linear; angular] (body
    frame)."""
    if kind == 'floating':
        return SWAP_LINEAR_ANGULAR.copy()
    if kind == 'spherical':
        return np.vstack((np.eye(3), np.zeros((3, 3))))
    if kind == 'planar':
        F = plane_frame(axis)
        S = np.zeros((6, 3))
        S[3:, :2] = F[:, :2]
        S[:3, 2] = axis
        return S
    S = np.zeros((6, 1))
    if kind == 'prismatic':
        S[3:, 0] = axis
    else:
        S[:3, 0] = axis
    return S


def joint_transform(kind, axis, q):
    """X_J: motion transform from the joint frame (on the parent) to the child frame, at position
    q."""
    if kind == 'floating':
        return pose_transform(quaternion_matrix(*q[3:7]), q[:3])
    if kind == 'spherical':
        return pose_transform(quaternion_matrix(*q[:4]), np.zeros(3))
    if kind == 'planar':
        F = plane_frame(axis)
        return pose_transform(rotation_about(axis, q[2]), q[0] * F[:, 0] + q[1] * F[:, 1])
    if kind == 'prismatic':
        return plucker(np.eye(3), q[0] * axis)
    return plucker(rotation_about(axis, q[0]).T, np.zeros(3))


def neutral_position(kind):
    """The zero position: zero angles and displacements, identity quaternions."""
    q = np.zeros(NQ[kind])
    if TYPES[kind].quaternion_at >= 0:
        q[TYPES[kind].quaternion_at + 3] = 1.0
    return q


def random_position(kind, rng, span):
    """A random position: coordinates uniform in [-s, s], s the smaller of span and the type's span
    (an angle's pi, a displacement's 0.3 m), uniform quaternions."""
    q = rng.uniform(-1.0, 1.0, NQ[kind]) * min(span, TYPES[kind].span)
    at = TYPES[kind].quaternion_at
    if at >= 0:
        quaternion = rng.normal(size=4)
        q[at:at + 4] = quaternion / np.linalg.norm(quaternion)
    return q


def retract(kind, axis, q, dv):
    """q (+) dv: the position reached from q by the velocity-coordinate step dv (child frame for
    the multi-DoF joints), to first order exact; used by Newton's method (completion.py)."""
    if kind == 'spherical':
        angle = np.linalg.norm(dv)
        if angle == 0.0:
            return q.copy()
        turned = matrix_quaternion(quaternion_matrix(*q) @ rotation_about(dv / angle, angle))
        return turned if turned @ q >= 0.0 else -turned     # stay on q's side of the double cover
    if kind == 'planar':
        F = plane_frame(axis)
        turn = rotation_about(axis, q[2])
        step = F.T @ turn @ F[:, :2] @ dv[:2]        # child-frame translation in plane coordinates
        return np.array([q[0] + step[0], q[1] + step[1], q[2] + dv[2]])
    return q + dv
