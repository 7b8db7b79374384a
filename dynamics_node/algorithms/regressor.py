"""Inertial-parameter regressor in independent coordinates: Y_y (ny x 10 nb) with
Y_y pi = tau_y, the cluster RNEA's forces (Atkeson, An & Hollerbach 1986; the identifiable
parameters of Wensing, Niemeyer & Slotine, cited by Chignoli et al. 2023 as a next algorithm to
cluster), and the base parameters of stacked regressors (Gautier 1991).

Every body that moves (rotors included) carries the standard 10 parameters in its own frame, in
Pinocchio's order (Inertia.toDynamicParameters): pi = (m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz), the
rotational inertia about the body origin. The force of body i is linear in them,
f_i = I_i a_i + v_i x* I_i v_i = Y_i(a_i, v_i) pi_i (Featherstone & Orin 2000, eq. 5), and
tau_y = sum_i J_i^T f_i (the RNEA's backward pass, eq. 31 unrolled), so Y_y = sum_i J_i^T Y_i with
the independent-coordinate Jacobians J_i and the accelerations a_i of the cluster RNEA (gravity as
the base acceleration, the loops' g_k in c_k).
"""

import numpy as np

from ..spatial import skew
from .frames import body_jacobian
from .kinematics import forward_pass

PARAMETERS = 10
ZERO_COLUMN = 1e-16    # a regressor column this small against the largest is round-off


def inertial_parameters(model):
    """pi (10 (nb - 1)): the parameters of every moving body, body by body, Pinocchio's order,
    from the spatial inertia [[Ibar, h x], [-h x, m 1]] in body coordinates."""
    blocks = []
    for I in model.inertia[1:]:
        blocks.append([I[5, 5], I[2, 4], I[0, 5], I[1, 3],
                       I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])
    return np.array(blocks, dtype=float).reshape(-1)


def rotational(x):
    """L(x) (3 x 6): Ibar x = L(x) (Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    return np.array([[x[0], x[1], 0.0, x[2], 0.0, 0.0],
                     [0.0, x[0], x[1], 0.0, x[2], 0.0],
                     [0.0, 0.0, 0.0, x[0], x[1], x[2]]])


def body_regressor(a, v):
    """Y (6 x 10), [moment; force] rows: f = I a + v x* I v = Y pi for the body acceleration
    a = [alpha; a0] and velocity v = [w; u]; with the classical acceleration
    abar = a0 + w x u of the origin,
      n = Ibar alpha + w x Ibar w + h x abar,   f = m abar + (alpha x + w x w x) h."""
    alpha, w = a[:3], v[:3]
    abar = a[3:] + np.cross(w, v[3:])
    Y = np.zeros((6, PARAMETERS))
    Y[:3, 1:4] = -skew(abar)
    Y[:3, 4:] = rotational(alpha) + skew(w) @ rotational(w)
    Y[3:, 0] = abar
    Y[3:, 1:4] = skew(alpha) + skew(w) @ skew(w)
    return Y


def regressor(model, data, q, yd, ydd):
    """Y_y (ny x 10 (nb - 1)) with Y_y inertial_parameters(model) = tau_y (rnea.py without
    external forces)."""
    forward_pass(model, data, q, yd)
    a = np.zeros((model.nb, 6))
    a[0, 3:] = -model.gravity                                  # a_0 = -a_g (gravity trick)
    Y = np.zeros((model.ny, PARAMETERS * (model.nb - 1)))
    for k, cluster in enumerate(model.cluster_list):
        b0, b1 = model.body_range[k]
        y0, y1 = model.y_range[k]
        aJ = (data.S[k] @ ydd[y0:y1] + data.c[k]).reshape(-1, 6)
        for i in range(b0, b1):
            a[i] = data.Xo[i] @ a[cluster.output[i]] + aJ[i - b0]                  # eq. (33)
            J = body_jacobian(model, data, i, np.eye(6))
            Y[:, PARAMETERS * (i - 1):PARAMETERS * i] = J.T @ body_regressor(a[i], data.v[i])
    return Y


def base_parameters(W, rtol=1e-8):
    """(rank, kept, B) of stacked regressors W (rows of many states, 10 nb columns): the QR of W
    in column order (Gautier 1991) keeps column j where |R_jj| > rtol |W_j| (not in the span of
    the columns before it) and |W_j| > ZERO_COLUMN max_i |W_i| (a column of round-off, zero but
    for the products that formed it, is none); the base parameters beta = B pi (rank x 10 nb)
    are the kept parameters plus the combinations of the others that W_kept reproduces: W pi =
    W_kept beta, B[:, kept] = 1, B[:, rest] = W_kept^+ W_rest."""
    norms = np.linalg.norm(W, axis=0)
    significant = np.flatnonzero(norms > ZERO_COLUMN * np.max(norms, initial=0.0))
    R = np.linalg.qr(W[:, significant], mode='r')
    diagonal = np.zeros(significant.size)
    diagonal[:min(R.shape)] = np.abs(np.diag(R))
    kept = significant[diagonal > rtol * norms[significant]]
    rest = np.setdiff1d(np.arange(W.shape[1]), kept)
    B = np.zeros((kept.size, W.shape[1]))
    B[:, kept] = np.eye(kept.size)
    B[:, rest] = np.linalg.lstsq(W[:, kept], W[:, rest], rcond=None)[0]
    return kept.size, kept, B
