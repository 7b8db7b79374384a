"""Spatial vector algebra (Featherstone & Orin 2000; Featherstone's notation).

Conventions, used by every module of the library:
- Motion vectors are [angular; linear] and force vectors are [moment; force], both 6-vectors.
- ``X_b_a`` (written ^bX_a in Featherstone & Orin 2000) is the Plucker motion transform from frame
  a coordinates to frame b coordinates; the force transform from b back to a is its transpose,
  ``X_b_a.T``.
- A pose (R, p) of frame b in frame a (rotation of b's axes in a, origin of b in a) gives
  ``X_b_a = plucker(R.T, p)``.
"""

import numpy as np


def skew(w):
    """Matrix of the cross product w x (.)."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def plucker(E, r):
    """Motion transform [[E, 0], [-E r x, E]] for a frame rotated by E and displaced by r
    (Featherstone & Orin 2000)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def pose_transform(R, p):
    """Motion transform from the coordinates of frame a to those of frame b, given b's pose (R, p)
    in a."""
    return plucker(R.T, p)


def inverse_transform(X):
    """Inverse of a Plucker motion transform without a general matrix inverse."""
    E = X[:3, :3]
    Xi = np.zeros((6, 6))
    Xi[:3, :3] = E.T
    Xi[3:, 3:] = E.T
    Xi[3:, :3] = X[3:, :3].T
    return Xi


def crm(v):
    """Motion cross-product operator v x (.) for a motion vector v = [w; v0]."""
    M = np.zeros((6, 6))
    M[:3, :3] = skew(v[:3])
    M[3:, 3:] = M[:3, :3]
    M[3:, :3] = skew(v[3:])
    return M


def crf(v):
    """Force cross-product operator v x* (.) = -crm(v)^T."""
    return -crm(v).T


def cross_motion(v, m):
    """v x m for two motion vectors."""
    return crm(v) @ m


def cross_force(v, f):
    """v x* f for a motion vector v and a force vector f."""
    return crf(v) @ f


def spatial_inertia(mass, com, inertia_com):
    """Spatial inertia about a frame origin from the mass, the COM c and the rotational inertia
    about the COM (Featherstone & Orin 2000; Featherstone's mcI):
    [[Ic - m c x c x, m c x], [-m c x, m 1]]."""
    C = skew(com)
    I = np.zeros((6, 6))
    I[:3, :3] = inertia_com - mass * C @ C
    I[:3, 3:] = mass * C
    I[3:, :3] = -mass * C
    I[3:, 3:] = mass * np.eye(3)
    return I


def rotation_about(axis, angle):
    """Rotation matrix of angle about a unit axis (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def rpy_matrix(rpy):
    """URDF roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def quaternion_matrix(qx, qy, qz, qw):
    """Rotation matrix of a unit quaternion (scalar last, as in Pinocchio's free-flyer q)."""
    return np.array([
        [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
        [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
        [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)],
    ])


def matrix_quaternion(R):
    """Unit quaternion (qx, qy, qz, qw), qw >= 0, of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0.0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], 0.25 * s * s]) / s
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    return q if q[3] >= 0.0 else -q


def rotation_log(R):
    """Rotation vector (axis * angle) of a rotation matrix, for angles below pi."""
    cos_angle = np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)
    angle = np.arccos(cos_angle)
    w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-8:
        return w
    return w * (angle / np.sin(angle))


# Reorders between the public [linear; angular] layout (Pinocchio, ROS) and ours [angular; linear].
SWAP_LINEAR_ANGULAR = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
