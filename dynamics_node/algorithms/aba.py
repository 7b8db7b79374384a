"""Cluster articulated-body algorithm (C-ABA, Chignoli et al. 2023 Sec. VII, Alg. 1)."""

import numpy as np

from ..faults import Fault, message
from ..kernels.codes import D_ILL_CONDITIONED, D_NOT_POSITIVE
from ..spatial import cross_force
from .kinematics import add_to_parent, body_inertias, forward_pass

# Reciprocal condition number of D_k = S_k^T I^A_k S_k below which the recursion is not trusted.
D_CONDITION_LIMIT = 1e-12


def aba(model, data, q, yd, tau_y):
    """Independent accelerations ydd from independent forces tau_y (Chignoli et al. 2023, Alg. 1),
    on the coordinates that carry inertia: the held ones (roles.py) keep zero acceleration and
    their forces are ignored.

    Args:
        q: spanning positions (nq), consistent with the constraints.
        yd, tau_y: independent velocities and generalized forces (ny).
        data.f_ext: external forces on the bodies (body coordinates), set beforehand.
    Returns:
        ydd (ny).
    """
    forward_pass(model, data, q, yd)
    nc = len(model.cluster_list)
    IA = [body_inertias(model, k) for k in range(nc)]                     # I^A_k = I_k
    pA = []
    for k in range(nc):
        b0, b1 = model.body_range[k]
        p = [cross_force(data.v[i], model.inertia[i] @ data.v[i]) - data.f_ext[i]
             for i in range(b0, b1)]
        pA.append(np.concatenate(p))                                  # p^A_k = v x* I v - f_ext
    U, D_factor, u = [None] * nc, [None] * nc, [None] * nc
    for k in reversed(range(nc)):
        free = model.free_columns[k]                                  # held coordinates stay still
        S = data.S[k][:, free]
        y0, y1 = model.y_range[k]
        U[k] = IA[k] @ S
        D = S.T @ U[k]
        D_factor[k] = articulated_cholesky(D, model, k)
        u[k] = tau_y[y0:y1][free] - S.T @ pA[k]
        parent = model.cluster_list[k].parent
        if parent >= 0:
            Dinv_UT = cholesky_solve(D_factor[k], U[k].T)
            Ia = IA[k] - U[k] @ Dinv_UT                               # I^a = I^A - U D^-1 U^T
            pa = pA[k] + Ia @ data.c[k] + U[k] @ cholesky_solve(D_factor[k], u[k])
            add_to_parent(model, k, Ia, IA[parent], data.Xo)          # I^A_parent += X^T I^a X
            b0, b1 = model.body_range[k]
            p0 = model.body_range[parent][0]
            output = model.cluster_list[k].output
            for i in range(b0, b1):
                o = 6 * (output[i] - p0)
                pA[parent][o:o + 6] += data.Xo[i].T @ pa[6 * (i - b0):6 * (i - b0 + 1)]
    data.a[0] = np.concatenate((np.zeros(3), -model.gravity))
    ydd = np.zeros(model.ny)
    for k, cluster in enumerate(model.cluster_list):
        b0, b1 = model.body_range[k]
        y0, y1 = model.y_range[k]
        a_prime = np.concatenate([data.Xo[i] @ data.a[cluster.output[i]]
                                  for i in range(b0, b1)]) + data.c[k]
        ydd[y0 + model.free_columns[k]] = cholesky_solve(D_factor[k], u[k] - U[k].T @ a_prime)
        data.a[b0:b1] = (a_prime + data.S[k] @ ydd[y0:y1]).reshape(-1, 6)
    return ydd


def articulated_cholesky(D, model, k):
    """Cholesky factor of the SPD D_k of cluster k; a (near-)singular D_k means the cluster's
    motion subspace has lost rank (a kinematic singularity) and is reported, never returned as
    garbage."""
    try:
        L = np.linalg.cholesky(D)
    except np.linalg.LinAlgError:
        raise message(model, D_NOT_POSITIVE, Fault(index=k)) from None
    diagonal = np.diag(L)
    # size 0: a rigid cluster
    if diagonal.size and diagonal.min() ** 2 <= D_CONDITION_LIMIT * diagonal.max() ** 2:
        raise message(model, D_ILL_CONDITIONED, Fault(index=k))
    return L


def cholesky_solve(L, b):
    """D^-1 b from the Cholesky factor L of D."""
    return np.linalg.solve(L.T, np.linalg.solve(L, b))
