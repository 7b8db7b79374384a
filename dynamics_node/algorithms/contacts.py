"""Rigid bilateral contacts as rows on body accelerations (the NumPy engine's; kernels/contacts.py
and kernels/lcaba.py's contact_rows are their twins): the rows LCABA takes as cut constraints
(Sathya & Carpentier 2025 eq. 1c), their Jacobian in independent coordinates and the Delassus
matrix from the cluster EFPA (Chignoli et al. 2023 Secs. VII-VIII) of the exact route
(dynamics_node/contacts.py).

A contact holds frame c1 on body b1 to frame c2 on body b2 (the ground, b2 = 0, for a contact with
the world; c2 then coincides with c1). Its rows, in c1 coordinates, Pinocchio's rigid constraints
(RigidConstraintModel, LOCAL, zero Baumgarte gains):
  6D: Psi^T (a_c1 - ^c1X_c2 a_c2 + v_c1 x ^c1X_c2 v_c2) = 0 with Psi^T the [linear; angular]
      reorder: the relative spatial acceleration of c1 with respect to c2;
  3D: E_c1 (pdd_c1 - pdd_c2) = 0: the classical accelerations of the two points, pdd = the linear
      part of the spatial acceleration plus omega x nu of the frame's velocity (omega; nu)
      (Featherstone 2008, RBDA Ch. 2).
On the bodies' spatial accelerations (body coordinates) they read sum_b K^b a_b = k, the blocks of
one body summed. The ground's acceleration a_0 = -a_g of the gravity trick cancels from every row
(both ends of a contact see the same field), so the rows hold for the algorithms' a as they are.
The contact force lambda (the wrench the environment or the other link applies on b1, in c1
coordinates, [force; torque] for 6D, a force for 3D) enters as H ydd + C = tau + J^T lambda with
J = sum_b K^b J_b: body b feels the force K^b^T lambda.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import LCABA_ADVICE, quote, SingularConfigurationError
from ..spatial import cross_motion, inverse_transform, SWAP_LINEAR_ANGULAR
from .efpa import efpa
from .frames import body_jacobian

LINEAR = np.hstack((np.zeros((3, 3)), np.eye(3)))   # the linear rows of a motion vector
# Reciprocal condition number (squared pivot ratio of its Cholesky factor) of the contacts'
# Delassus matrix below which the exact route reports the contact set as singular (redundant
# contacts, or contacts that fight a loop's constraint): there its forces are not determined.
DELASSUS_CONDITION_LIMIT = 1e-12
# Relative residual ||J_c ydd + Jdot yd||_inf / max(1, ||qdd||_inf) of the exact route's
# accelerations beyond which it reports the contact set as singular although the Cholesky pivots
# passed DELASSUS_CONDITION_LIMIT: a set redundant in exact arithmetic whose rows conflict (two 6D
# feet on one side of a quadruped with 3-DoF legs, whose hip axes line up: 2e-4). Round-off leaves
# below 3e-13 (test/algorithms/test_contacts.py).
DELASSUS_RESIDUAL_LIMIT = 1e-9


@dataclass(frozen=True)
class ContactFrames:
    """A contact resolved on the model's bodies: c1 on body1 (X1 = ^c1X_body1), c2 on body2
    (X2 = ^c2X_body2; None: c2 is c1's world pose, body2 the ground)."""

    name: str              # for messages: the contact's index, link and kind
    rows: int              # 3 or 6
    body1: int
    X1: np.ndarray
    body2: int
    X2: object
    contact: object = None     # the contacts.Contact resolved (it keys the compiled plans)

    @property
    def bodies(self):
        return {self.body1, self.body2}

    def cut_rows(self, model, data):
        """{body: K^b} and k of sum_b K^b a_b = k, at data.Xup and the body velocities data.v
        (module docstring); the ground's block (body 0) is kept."""
        X_c1_0 = self.X1 @ world_transform(model, data, self.body1)
        X_c2_0 = X_c1_0 if self.X2 is None else self.X2 @ world_transform(model, data, self.body2)
        X_c1_c2 = X_c1_0 @ inverse_transform(X_c2_0)
        X2 = X_c2_0 if self.X2 is None else self.X2     # ^c2X_body2 (body2 = 0: the world)
        v1 = self.X1 @ data.v[self.body1]
        v2 = X2 @ data.v[self.body2]
        if self.rows == 6:
            K1, K2 = SWAP_LINEAR_ANGULAR @ self.X1, -SWAP_LINEAR_ANGULAR @ X_c1_c2 @ X2
            k = -SWAP_LINEAR_ANGULAR @ cross_motion(v1, X_c1_c2 @ v2)
        else:
            E = X_c1_c2[:3, :3]                           # c2 coordinates to c1 coordinates
            K1, K2 = LINEAR @ self.X1, -E @ LINEAR @ X2
            k = E @ np.cross(v2[:3], v2[3:]) - np.cross(v1[:3], v1[3:])
        blocks = {self.body1: K1}
        blocks[self.body2] = blocks.get(self.body2, 0.0) + K2
        return blocks, k


def contact_set_key(contacts):
    """The key under which a contact set's resolved frames and compiled plans are kept: the
    Contacts as a tuple (a single one, or any other object, as a 1-tuple)."""
    return tuple(contacts) if type(contacts) in (list, tuple) else (contacts,)


def world_transform(model, data, body):
    """^bodyX_0 from data.Xup."""
    X = np.eye(6)
    while body > 0:
        X = X @ data.Xup[body]
        body = model.parent[body]
    return X


def contact_rows(model, data, contacts):
    """The cut rows of every contact (ContactFrames.cut_rows)."""
    return [contact.cut_rows(model, data) for contact in contacts]


def residuals(rows, a):
    """sum_b K^b a_b - k of every contact: J ydd + Jdot yd at the body accelerations a (a[0] =
    -a_g, as the algorithms leave it)."""
    return [sum(K @ a[b] for b, K in blocks.items()) - k for blocks, k in rows]


def velocity_product_accelerations(model, data):
    """The body accelerations at ydd = 0 without gravity (a_0 = 0) after a forward pass: the
    clusters' velocity products c_k carried out to the tips (Chignoli et al. 2023 eq. 33). The
    rows are blind to gravity (module docstring), so residuals(rows, these) is the contacts' drift
    Jdot yd; at rest every entry is exactly zero."""
    a = np.zeros((model.nb, 6))
    for k, cluster in enumerate(model.cluster_list):
        b0, b1 = model.body_range[k]
        c = data.c[k].reshape(-1, 6)
        for i in range(b0, b1):
            a[i] = data.Xo[i] @ a[cluster.output[i]] + c[i - b0]
    return a


def contact_jacobian(model, data, rows):
    """J_c (m x ny) = sum_b K^b J_b after a forward pass (Chignoli et al. 2023 Sec. 5.2)."""
    return np.vstack([sum((K @ body_jacobian(model, data, b, np.eye(6))
                           for b, K in blocks.items() if b > 0), np.zeros((len(k), model.ny)))
                      for blocks, k in rows])


def add_contact_forces(model, f, rows, forces, sign=1.0):
    """f[b] += sign K^b^T lambda (body coordinates) for every contact."""
    for (blocks, _), lam in zip(rows, forces):
        for b, K in blocks.items():
            f[b] += sign * K.T @ lam


def delassus(model, data, q, rows):
    """J_c H_y^-1 J_c^T from the cluster EFPA's Lambda^-1 of the contacts' moving bodies (frames at
    the body origins, Chignoli et al. 2023 eqs. 62-67), pressed through the blocks K^b."""
    bodies = sorted({b for blocks, _ in rows for b in blocks if b > 0})
    slot = {b: 6 * i for i, b in enumerate(bodies)}
    Omega = efpa(model, data, q, [(b, np.eye(6)) for b in bodies])
    P = np.zeros((sum(len(k) for _, k in rows), 6 * len(bodies)))
    r = 0
    for blocks, k in rows:
        for b, K in blocks.items():
            if b > 0:
                P[r:r + len(k), slot[b]:slot[b] + 6] += K
        r += len(k)
    return P @ Omega @ P.T


def solve_delassus(D, contacts, b):
    """D^-1 b; SingularConfigurationError naming the contacts where D is singular (its squared
    Cholesky pivot ratio below DELASSUS_CONDITION_LIMIT)."""
    try:
        L = np.linalg.cholesky(D)
    except np.linalg.LinAlgError:
        L = None
    diagonal = np.diag(L) if L is not None else np.zeros(1)
    if L is None or diagonal.min() ** 2 <= DELASSUS_CONDITION_LIMIT * diagonal.max() ** 2:
        raise singular_delassus(contacts)
    return np.linalg.solve(D, b)


def singular_delassus(contacts, found=''):
    """The SingularConfigurationError of a contact set whose Delassus matrix is singular (found:
    how it showed, if not by its pivots)."""
    return SingularConfigurationError(
        f'contacts {quote([c.name for c in contacts])}: their Delassus matrix J H^-1 J^T is '
        f'singular{found} (redundant contacts, or contacts against a loop)' + LCABA_ADVICE)
