"""Tree-joint models (jcalc of seed 001): joint transform X_J(q) and motion subspace S.

Every motion subspace here is constant in the child frame, so the apparent derivative vanishes and the
joint bias is c_J = 0; the velocity-product term v x (S qd) is added by the algorithms (seed 003, Sec. 1.8).
"""

import numpy as np

from .spatial import plucker, pose_transform, quaternion_matrix, rotation_about, SWAP_LINEAR_ANGULAR

NQ = {'revolute': 1, 'continuous': 1, 'prismatic': 1, 'floating': 7}
NV = {'revolute': 1, 'continuous': 1, 'prismatic': 1, 'floating': 6}
KIND = {'revolute': 'rotational', 'continuous': 'rotational', 'prismatic': 'translational',
        'floating': 'floating'}


def motion_subspace(kind, axis):
    """S (6 x nv) in the child frame. A floating joint's velocity is [linear; angular] (body frame)."""
    if kind == 'floating':
        return SWAP_LINEAR_ANGULAR.copy()
    S = np.zeros((6, 1))
    if kind == 'prismatic':
        S[3:, 0] = axis
    else:
        S[:3, 0] = axis
    return S


def joint_transform(kind, axis, q):
    """X_J: motion transform from the joint frame (on the parent) to the child frame, at position q."""
    if kind == 'floating':
        return pose_transform(quaternion_matrix(*q[3:7]), q[:3])
    if kind == 'prismatic':
        return plucker(np.eye(3), q[0] * axis)
    return plucker(rotation_about(axis, q[0]).T, np.zeros(3))
