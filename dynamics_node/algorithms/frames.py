"""Link frames: world poses, Jacobians and bias accelerations in independent coordinates."""

import numpy as np

from ..multibody.constraints import translation_of
from ..spatial import inverse_transform
from .kinematics import forward_pass


def link_transforms(model, data):
    """X_body_root for every body, from data.Xup (after a forward pass)."""
    X = np.zeros((model.nb, 6, 6))
    X[0] = np.eye(6)
    for i in range(1, model.nb):
        X[i] = data.Xup[i] @ X[model.parent[i]]
    return X


def world_twists(model, data):
    """(^iX_root of every body, its velocity in root coordinates: motion [angular; linear], the
    linear part at the root's origin), after a forward pass."""
    X_root = link_transforms(model, data)
    return X_root, np.array([inverse_transform(X_root[b]) @ data.v[b] for b in range(model.nb)])


def link_pose(X_link_root):
    """(R, p) of a link in the root frame from its motion transform X_link_root = plucker(R^T,
    p)."""
    return X_link_root[:3, :3].T, translation_of(X_link_root)


def body_jacobian(model, data, body, X_frame_body):
    """J (6 x ny): velocity of a frame on body, Featherstone order, frame coordinates, from yd.

    Walks from the body up through the output bodies: cluster k contributes ^frameX_i (S_k)_i, with
    i the body of cluster k on the path (Chignoli et al. 2023 Sec. 5.2, contact Jacobians)."""
    J = np.zeros((6, model.ny))
    X = X_frame_body.copy()
    i = body
    while i > 0:
        k = model.cluster_of[i]
        b0 = model.body_range[k][0]
        y0, y1 = model.y_range[k]
        J[:, y0:y1] = X @ data.S[k][6 * (i - b0):6 * (i - b0 + 1)]
        X = X @ data.Xo[i]
        i = model.cluster_list[k].output[i]
    return J


def positions_jacobians(model, data, q, frames):
    """Forward pass at q, then the Jacobians of frames [(body, X_frame_body)]."""
    forward_pass(model, data, q, np.zeros(model.ny))
    return [body_jacobian(model, data, body, X) for body, X in frames]


def body_bias_acceleration(model, data, body, X_frame_body):
    """Jdot yd (6): classical acceleration of a frame on body at ydd = 0, Featherstone order
    [angular; linear], frame coordinates (after forward_pass).

    The body's spatial acceleration a = sum over the clusters on its path of ^frameX_i (S_k ydd_k
    + c_k)_i (Chignoli et al. 2023 eq. 33, unrolled as in body_jacobian); at ydd = 0 only the
    velocity-product biases c_k remain, which carry the loops' g_k. The classical acceleration of
    the frame's origin adds omega x v to the spatial one's linear part (Featherstone & Orin 2000,
    footnote 1; Featherstone 2008, RBDA Ch. 2, "Acceleration")."""
    a = np.zeros(6)
    X = X_frame_body.copy()
    i = body
    while i > 0:
        k = model.cluster_of[i]
        b0 = model.body_range[k][0]
        a += X @ data.c[k][6 * (i - b0):6 * (i - b0 + 1)]
        X = X @ data.Xo[i]
        i = model.cluster_list[k].output[i]
    v = X_frame_body @ data.v[body]
    a[3:] += np.cross(v[:3], v[3:])
    return a


def bias_acceleration(model, data, q, yd, frame):
    """Forward pass at (q, yd), then the bias acceleration of frame (body, X_frame_body)."""
    forward_pass(model, data, q, yd)
    return body_bias_acceleration(model, data, *frame)
