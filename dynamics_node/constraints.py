"""Loop and coupling constraints of a cluster: residual phi(q), Jacobian K and bias k (K qdd = k).

Implicit form (seed 003, eq. 2): phi(q) = 0, K qd = 0, K qdd = k with k = -Kdot qd. Everything is
computed relative to the constraint's nearest common ancestor (NCA), which is exact because a loop
only restricts the relative motion of its two branches.

Loop rows (seed 002, eq. 6, with Psi the constrained directions of the loop joint in the predecessor
loop frame P): K = Psi^T (J_S - J_P) and, differentiating Psi (which moves with P),
k = Psi^T (v_P x v_S - (a_S - a_P)) where a are the bias accelerations (qdd = 0) of both branches.
"""

import numpy as np

from .spatial import cross_motion, inverse_transform, rotation_log


def _axis_frame(axis):
    """Orthonormal (e1, e2, axis) as the columns of a rotation matrix, e1 x e2 = axis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    return np.column_stack((e1, np.cross(axis, e1), axis))


def translation_of(X):
    """Origin p of frame b in frame a, from X_b_a = plucker(R^T, p)."""
    rx = -X[:3, :3].T @ X[3:, :3]
    return np.array([rx[2, 1], rx[0, 2], rx[1, 0]])


def chain_transform(path, Xup):
    """X_body_top for the last body of a path hanging below top (Xup[i] = X_i_parent(i))."""
    X = np.eye(6)
    for body in path:
        X = Xup[body] @ X
    return X


class LoopConstraint:
    """A <loop> closing a revolute, prismatic or fixed joint between two links of a cluster.

    Psi (constrained directions in the predecessor loop frame P): revolute keeps the 3 position rows and
    the 2 rotation rows perpendicular to the axis; prismatic the 2 position rows perpendicular to the
    axis and the 3 rotation rows; fixed all 6.
    """

    def __init__(self, name, kind, axis, nca, pred_path, succ_path, X_P_pred, X_S_succ):
        self.name = name
        self.kind = kind
        self.nca = nca                  # body index of the nearest common ancestor
        self.pred_path = pred_path      # bodies below the NCA down to the predecessor body
        self.succ_path = succ_path
        self.X_P_pred = X_P_pred        # loop frame P from predecessor-body coordinates
        self.X_S_succ = X_S_succ        # loop frame S from successor-body coordinates
        self.frame = _axis_frame(axis)
        rotational = kind in ('revolute', 'continuous')
        self.rot_dirs = self.frame[:, :2] if rotational else np.eye(3)
        self.pos_dirs = self.frame[:, :2] if kind == 'prismatic' else np.eye(3)
        nr, npos = self.rot_dirs.shape[1], self.pos_dirs.shape[1]
        self.Psi = np.zeros((6, nr + npos))
        self.Psi[:3, :nr] = self.rot_dirs
        self.Psi[3:, nr:] = self.pos_dirs
        self.rows = nr + npos
        self.bodies = tuple(pred_path) + tuple(succ_path)

    @staticmethod
    def _branch(path, Xup, S, col, qd):
        """Walk one branch down from the NCA: the body transform, each joint's columns in NCA
        coordinates, and the branch velocity and bias acceleration (qdd = 0) in NCA coordinates."""
        X = np.eye(6)
        v = np.zeros(6)
        a = np.zeros(6)
        columns = []
        for body in path:
            X = Xup[body] @ X
            s = inverse_transform(X) @ S[body]
            columns.append((col[body], s))
            vJ = s @ qd[col[body]:col[body] + s.shape[1]]
            v = v + vJ
            a = a + cross_motion(v, vJ)             # d/dt (s qd) = v x (s qd), s fixed in the body
        return X, columns, v, a

    def evaluate(self, Xup, S, col, n, qd):
        """K (rows x n) over the cluster's spanning velocities and k, at velocities qd."""
        XA, cols_p, vA, aA = self._branch(self.pred_path, Xup, S, col, qd)
        _, cols_s, vB, aB = self._branch(self.succ_path, Xup, S, col, qd)
        Psi = (self.X_P_pred @ XA).T @ self.Psi     # force-like, so it maps with X^T to NCA coordinates
        K = np.zeros((self.rows, n))
        for sign, columns in ((-1.0, cols_p), (1.0, cols_s)):
            for c, s in columns:
                K[:, c:c + s.shape[1]] += sign * (Psi.T @ s)
        k = Psi.T @ (cross_motion(vA, vB) - (aB - aA))
        return K, k

    def residual(self, Xup, q_of_body):
        """phi: rotation error and the position of S's origin in P, along the constrained directions.
        Their first-order change is K dq at a closed configuration."""
        XA = chain_transform(self.pred_path, Xup)
        XB = chain_transform(self.succ_path, Xup)
        X_S_P = (self.X_S_succ @ XB) @ inverse_transform(self.X_P_pred @ XA)
        R_rel = X_S_P[:3, :3].T
        if self.kind in ('revolute', 'continuous'):
            e1, e2, axis = self.frame.T
            turned = R_rel @ axis
            rotation = np.array([-e2 @ turned, e1 @ turned])
        else:
            rotation = self.rot_dirs.T @ rotation_log(R_rel)
        return np.concatenate((rotation, self.pos_dirs.T @ translation_of(X_S_P)))


class CouplingConstraint:
    """A linear relation sum_j c_j q_j + offset = 0 between 1-DoF joints (<coupling>, <mimic>)."""

    def __init__(self, name, coefficients, offset=0.0):
        self.name = name
        self.coefficients = coefficients   # {body index: coefficient of its joint position}
        self.offset = offset
        self.rows = 1
        self.bodies = tuple(coefficients)

    def evaluate(self, Xup, S, col, n, qd):
        """K (1 x n) over the cluster's spanning velocities and k = 0 (a linear relation)."""
        K = np.zeros((1, n))
        for body, c in self.coefficients.items():
            K[0, col[body]] += c
        return K, np.zeros(1)

    def residual(self, Xup, q_of_body):
        """phi = sum_j c_j q_j + offset."""
        return np.array([sum(c * q_of_body(body) for body, c in self.coefficients.items())
                         + self.offset])
