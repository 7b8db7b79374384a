"""Link frames: world poses and Jacobians in independent coordinates."""

import numpy as np

from ..multibody.constraints import translation_of
from .kinematics import forward_pass


def link_transforms(model, data):
    """X_body_root for every body, from data.Xup (after a forward pass)."""
    X = np.zeros((model.nb, 6, 6))
    X[0] = np.eye(6)
    for i in range(1, model.nb):
        X[i] = data.Xup[i] @ X[model.parent[i]]
    return X


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
