"""Link frames: world poses, Jacobians and bias accelerations in independent coordinates."""

import numpy as np

from ..multibody.constraints import translation_of
from ..spatial import inverse_transform, SWAP_LINEAR_ANGULAR
from .kinematics import forward_pass, update_transforms


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


def body_jacobian(model, data, body, X_frame_body, subspaces=None):
    """J (6 x ny): velocity of a frame on body, Featherstone order, frame coordinates, from yd.

    Walks from the body up through the output bodies: cluster k contributes ^frameX_i (S_k)_i, with
    i the body of cluster k on the path (Chignoli et al. 2023 Sec. 5.2, contact Jacobians). With
    subspaces (per cluster, 6 nb_k x m_k blocks in the bodies' coordinates) in place of data.S,
    the same walk: their rates Sdot_k give Jdot (coriolis.py)."""
    S = data.S if subspaces is None else subspaces
    J = np.zeros((6, model.ny))
    X = X_frame_body.copy()
    i = body
    while i > 0:
        k = model.cluster_of[i]
        b0 = model.body_range[k][0]
        y0, y1 = model.y_range[k]
        J[:, y0:y1] = X @ S[k][6 * (i - b0):6 * (i - b0 + 1)]
        X = X @ data.Xo[i]
        i = model.cluster_list[k].output[i]
    return J


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


def link_kinematics(model, data, q, yd, links, poses=True, jacobians=True, biases=True):
    """(R (k x 3 x 3), p (k x 3), J (k x 6 x ny), bias (k x 6)) of k link names, those that poses,
    jacobians and biases ask (None for the others): the poses in the root frame from the transforms
    at q alone (never singular); the Jacobians and bias accelerations after the forward pass at q
    and yd (zero without biases), with rows [linear; angular] in each link's frame (Model's
    order)."""
    if jacobians or biases:
        forward_pass(model, data, q, yd if biases else np.zeros(model.ny))
    else:
        update_transforms(model, data, q)
    frames = [model.link_frame[link] for link in links]
    k = len(frames)
    R, p = np.zeros((k, 3, 3)), np.zeros((k, 3))
    J, bias = np.zeros((k, 6, model.ny)), np.zeros((k, 6))
    X_body_root = link_transforms(model, data) if poses else None
    for e, (body, X_link_body) in enumerate(frames):
        if poses:
            R[e], p[e] = link_pose(X_link_body @ X_body_root[body])
        if jacobians:
            J[e] = SWAP_LINEAR_ANGULAR @ body_jacobian(model, data, body, X_link_body)
        if biases:
            bias[e] = SWAP_LINEAR_ANGULAR @ body_bias_acceleration(model, data, body, X_link_body)
    return (R if poses else None, p if poses else None, J if jacobians else None,
            bias if biases else None)
