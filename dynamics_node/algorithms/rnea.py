"""Cluster recursive Newton-Euler algorithm (C-RNEA, Chignoli et al. 2023 Sec. VI; Chignoli
et al. 2024 eqs. 62-65)."""

import numpy as np

from ..spatial import cross_force
from .kinematics import forward_pass


def rnea(model, data, q, yd, ydd):
    """Independent generalized forces tau_y = S_k^T f_k for every cluster (Chignoli et al. 2023
    eq. 31).

    Args:
        q: spanning positions (nq), consistent with the constraints.
        yd, ydd: independent velocities and accelerations (ny).
        data.f_ext: external forces on the bodies (body coordinates), set beforehand.
    Returns:
        tau_y (ny).
    """
    forward_pass(model, data, q, yd)
    data.a[0] = np.concatenate((np.zeros(3), -model.gravity))      # a_0 = -a_g (gravity trick)
    for k, cluster in enumerate(model.cluster_list):
        b0, b1 = model.body_range[k]
        y0, y1 = model.y_range[k]
        aJ = (data.S[k] @ ydd[y0:y1] + data.c[k]).reshape(-1, 6)
        for i in range(b0, b1):
            data.a[i] = data.Xo[i] @ data.a[cluster.output[i]] + aJ[i - b0]        # eq. (33)
            Iv = model.inertia[i] @ data.v[i]
            data.f[i] = (model.inertia[i] @ data.a[i] + cross_force(data.v[i], Iv)
                         - data.f_ext[i])                                          # eq. (34)
    tau = np.zeros(model.ny)
    for k in reversed(range(len(model.cluster_list))):
        b0, b1 = model.body_range[k]
        y0, y1 = model.y_range[k]
        tau[y0:y1] = data.S[k].T @ data.f[b0:b1].reshape(-1)               # eq. (31)
        output = model.cluster_list[k].output
        for i in range(b0, b1):
            data.f[output[i]] += data.Xo[i].T @ data.f[i]                # eq. (35)
    return tau
