"""Cluster extended-force-propagator algorithm: Lambda^-1 = J_y H_y^-1 J_y^T (C-EFPA, Chignoli
et al. 2023 Sec. VIII).

Backward pass with zero velocity and torque: D_k = S^T I^A S, K_k = S D^-1 S^T,
L_k = 1 - K_k I^A_k, I^A_parent += X^T (L^T I^A) X, and each end-effector's propagator moves up
as Chi_e[parent] = Chi_e[k] L_k ^kX_parent (eq. 62). A test force f_e2 then accelerates e1 by
sum over the clusters j supporting both of Chi_e1[j] K_j Chi_e2[j]^T f_e2 (eqs. 63-67 unrolled).
"""

import numpy as np

from .aba import articulated_cholesky, cholesky_solve
from .kinematics import add_to_parent, body_inertias, forward_pass, parent_transform


def efpa(model, data, q, frames):
    """Inverse operational-space inertia of frames [(body, X_frame_body), ...], Featherstone order
    ([angular; linear] rows per frame, frame coordinates); (6 n x 6 n), symmetric PSD."""
    forward_pass(model, data, q, np.zeros(model.ny))
    nc = len(model.cluster_list)
    IA = [body_inertias(model, k) for k in range(nc)]
    chi = [dict() for _ in frames]                 # chi[e][k]: 6 x 6 nb_k propagator of frame e
    for e, (body, X) in enumerate(frames):
        if body == 0:
            continue                               # a frame on the ground does not move: zero rows
        k = model.cluster_of[body]
        b0, b1 = model.body_range[k]
        block = np.zeros((6, 6 * (b1 - b0)))
        block[:, 6 * (body - b0):6 * (body - b0 + 1)] = X                # eq. (57), a block row
        chi[e][k] = block
    K = [None] * nc
    for k in reversed(range(nc)):
        S = data.S[k][:, model.free_columns[k]]                       # held coordinates stay still
        D = S.T @ IA[k] @ S
        K[k] = S @ cholesky_solve(articulated_cholesky(D, model, k), S.T)
        parent = model.cluster_list[k].parent
        if parent < 0:
            continue
        L = np.eye(K[k].shape[0]) - K[k] @ IA[k]
        add_to_parent(model, k, L.T @ IA[k], IA[parent], data.Xo)          # L^T I^A = I^a
        LX = L @ parent_transform(model, data, k)
        for propagators in chi:
            if k in propagators:
                propagators[parent] = propagators[k] @ LX                  # eq. (62)
    n = len(frames)
    Omega = np.zeros((6 * n, 6 * n))
    for e1 in range(n):
        for e2 in range(e1, n):
            block = np.zeros((6, 6))
            for k, chi1 in chi[e1].items():
                if k in chi[e2]:
                    block += chi1 @ K[k] @ chi[e2][k].T
            Omega[6 * e1:6 * e1 + 6, 6 * e2:6 * e2 + 6] = block
            Omega[6 * e2:6 * e2 + 6, 6 * e1:6 * e1 + 6] = block.T
    return Omega
