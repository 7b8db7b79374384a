"""Cluster composite-rigid-body algorithm: H_y = G^T H G (Chignoli et al. 2023 Sec. 5.2;
Featherstone & Orin 2000 eqs. 9-10)."""

import numpy as np

from .kinematics import add_to_parent, body_inertias, forward_pass


def crba(model, data, q):
    """Mass matrix in independent coordinates, H_y (ny x ny), symmetric positive definite.

    Composite inertias Ic_parent += X^T Ic X; column block k is S_j^T (X^T ... X^T) Ic_k S_k for
    the ancestors j of k.
    """
    forward_pass(model, data, q, np.zeros(model.ny))
    nc = len(model.cluster_list)
    Ic = [body_inertias(model, k) for k in range(nc)]
    for k in reversed(range(nc)):
        if model.cluster_list[k].parent >= 0:
            add_to_parent(model, k, Ic[k], Ic[model.cluster_list[k].parent], data.Xo)
    H = np.zeros((model.ny, model.ny))
    for k in range(nc):
        y0, y1 = model.y_range[k]
        F = Ic[k] @ data.S[k]
        H[y0:y1, y0:y1] = data.S[k].T @ F
        j = k
        while model.cluster_list[j].parent >= 0:
            F = _force_to_parent(model, data, j, F)
            j = model.cluster_list[j].parent
            z0, z1 = model.y_range[j]
            H[z0:z1, y0:y1] = data.S[j].T @ F
            H[y0:y1, z0:z1] = H[z0:z1, y0:y1].T
    return H


def _force_to_parent(model, data, k, F):
    """^parentX*_k F: stacked forces of cluster k onto its output bodies (Chignoli et al. 2023
    eq. 35)."""
    b0, b1 = model.body_range[k]
    parent = model.cluster_list[k].parent
    p0, p1 = model.body_range[parent]
    out = np.zeros((6 * (p1 - p0), F.shape[1]))
    output = model.cluster_list[k].output
    for i in range(b0, b1):
        o = 6 * (output[i] - p0)
        out[o:o + 6] += data.Xo[i].T @ F[6 * (i - b0):6 * (i - b0 + 1)]
    return out
