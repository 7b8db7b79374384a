"""Joints in the kernels (multibody/joints.py's twin, jcalc of Featherstone & Orin 2000): the
motion subspace S as columns, the joint transform X_J(q), by the codes of the joint-type table."""

import math

from numba import njit

from ..joint_types import FLOATING, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL
from .cache import key_on_helpers

key_on_helpers(__file__)


@njit(inline='always', error_model='numpy')
def joint_nv(code):
    return 6 if code == FLOATING else 3 if code == SPHERICAL or code == PLANAR else 1


@njit(inline='always', error_model='numpy')
def joint_motion(code, axes, x, ix):
    """S_i x[ix:ix + nv] as a 6-tuple; axes = rows (e1, e2, axis) of the joint's axis frame (a
    floating joint's velocity is [linear; angular]; a planar one's e1, e2 linear and axis
    angular)."""
    if code == FLOATING:
        return x[ix + 3], x[ix + 4], x[ix + 5], x[ix], x[ix + 1], x[ix + 2]
    if code == SPHERICAL:
        return x[ix], x[ix + 1], x[ix + 2], 0.0, 0.0, 0.0
    e1, e2, axis = axes[0], axes[1], axes[2]
    if code == PLANAR:
        u, w, t = x[ix], x[ix + 1], x[ix + 2]
        return (axis[0] * t, axis[1] * t, axis[2] * t,
                e1[0] * u + e2[0] * w, e1[1] * u + e2[1] * w, e1[2] * u + e2[2] * w)
    s = x[ix]
    if code == PRISMATIC:
        return 0.0, 0.0, 0.0, axis[0] * s, axis[1] * s, axis[2] * s
    return axis[0] * s, axis[1] * s, axis[2] * s, 0.0, 0.0, 0.0


@njit(inline='always', error_model='numpy')
def joint_column(code, axes, j):
    """Column j of S_i as a 6-tuple."""
    # [linear; angular] (floating) -> [angular; linear] motion
    if code == FLOATING or code == SPHERICAL:
        e = (1.0 if j % 3 == 0 else 0.0, 1.0 if j % 3 == 1 else 0.0, 1.0 if j % 3 == 2 else 0.0)
        angular = j >= 3 if code == FLOATING else True
        return (e[0], e[1], e[2], 0.0, 0.0, 0.0) if angular else (0.0, 0.0, 0.0, e[0], e[1], e[2])
    axis = axes[2]
    if code == PLANAR:
        if j == 2:
            return axis[0], axis[1], axis[2], 0.0, 0.0, 0.0
        return 0.0, 0.0, 0.0, axes[j, 0], axes[j, 1], axes[j, 2]
    if code == PRISMATIC:
        return 0.0, 0.0, 0.0, axis[0], axis[1], axis[2]
    return axis[0], axis[1], axis[2], 0.0, 0.0, 0.0


@njit(inline='always', error_model='numpy')
def axis_rotation(axis, angle, EJ):
    """EJ = R(axis, angle)^T = 1 - sin K + (1 - cos) K^2, K = axis x."""
    s, t = math.sin(angle), 1.0 - math.cos(angle)
    x, y, z = axis[0], axis[1], axis[2]
    n2 = x * x + y * y + z * z
    for a in range(3):
        for b in range(3):
            EJ[a, b] = t * axis[a] * axis[b]
        EJ[a, a] += 1.0 - t * n2
    EJ[0, 1] += s * z
    EJ[1, 0] -= s * z
    EJ[0, 2] -= s * y
    EJ[2, 0] += s * y
    EJ[1, 2] += s * x
    EJ[2, 1] -= s * x


@njit(inline='always', error_model='numpy')
def quaternion_rotation(q, at, EJ):
    """EJ = R(q[at:at + 4])^T for a unit quaternion qx qy qz qw."""
    qx, qy, qz, qw = q[at], q[at + 1], q[at + 2], q[at + 3]
    EJ[0, 0], EJ[1, 0], EJ[2, 0] = (1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw),
                                    2 * (qx * qz + qy * qw))
    EJ[0, 1], EJ[1, 1], EJ[2, 1] = (2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz),
                                    2 * (qy * qz - qx * qw))
    EJ[0, 2], EJ[1, 2], EJ[2, 2] = (2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw),
                                    1 - 2 * (qx * qx + qy * qy))


@njit(inline='always', error_model='numpy')
def joint_transform(code, axes, q, iq, EJ):
    """E_J of X_J(q) into EJ; returns its translation r_J (joints.py)."""
    if code == REVOLUTE:
        axis_rotation(axes[2], q[iq], EJ)
        return 0.0, 0.0, 0.0
    if code == PRISMATIC:
        for a in range(3):
            for b in range(3):
                EJ[a, b] = 1.0 if a == b else 0.0
        return q[iq] * axes[2, 0], q[iq] * axes[2, 1], q[iq] * axes[2, 2]
    if code == PLANAR:
        axis_rotation(axes[2], q[iq + 2], EJ)
        x, y = q[iq], q[iq + 1]
        return (x * axes[0, 0] + y * axes[1, 0], x * axes[0, 1] + y * axes[1, 1],
                x * axes[0, 2] + y * axes[1, 2])
    if code == SPHERICAL:
        quaternion_rotation(q, iq, EJ)
        return 0.0, 0.0, 0.0
    quaternion_rotation(q, iq + 3, EJ)
    return q[iq], q[iq + 1], q[iq + 2]


@njit(inline='always', error_model='numpy')
def retract(code, q, start, j, step, column, scale):
    """q[j:] = start[j:] (+) scale step[column:] (joints.retract): a spherical joint's quaternion
    times exp(scale step / 2), its child-frame rotation; a 1-DoF joint adds scale step."""
    if code != SPHERICAL:
        q[j] = start[j] + scale * step[column]
        return
    w0, w1, w2 = scale * step[column], scale * step[column + 1], scale * step[column + 2]
    angle = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    s = 0.5 if angle == 0.0 else math.sin(0.5 * angle) / angle
    x, y, z, w = s * w0, s * w1, s * w2, math.cos(0.5 * angle)
    qx, qy, qz, qw = start[j], start[j + 1], start[j + 2], start[j + 3]
    t0, t1 = qw * x + qx * w + qy * z - qz * y, qw * y - qx * z + qy * w + qz * x
    t2, t3 = qw * z + qx * y - qy * x + qz * w, qw * w - qx * x - qy * y - qz * z
    norm = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2 + t3 * t3)
    q[j], q[j + 1], q[j + 2], q[j + 3] = t0 / norm, t1 / norm, t2 / norm, t3 / norm
