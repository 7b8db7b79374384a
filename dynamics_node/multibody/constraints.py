"""Loop, coupling and implicit constraints of a cluster: residual phi(q), Jacobian K and bias k
(K qdd = k).

Implicit form (Chignoli et al. 2023, eq. 2): phi(q) = 0, K qd = 0, K qdd = k with k = -Kdot qd.
Everything is computed relative to the constraint's nearest common ancestor (NCA), which is exact
because a loop only restricts the relative motion of its two branches.

Loop rows (Chignoli, Slotine et al. 2024, eq. 6, with Psi the constrained directions of the loop
joint in the predecessor loop frame P): K = Psi^T (J_S - J_P) and, differentiating Psi (which moves
with P), k = Psi^T (v_P x v_S - (a_S - a_P)) where a are the bias accelerations (qdd = 0) of both
branches.

A universal loop keeps the origins together (3 rows) and its axis a1 (fixed in P) perpendicular to
its axis2 a2 (fixed in S): phi = -a1 . a2, K row n^T (w_S - w_P) with n = a1 x a2. As n also turns
with S, dn/dt = w_P x n + a1 x (w_r x a2) (w_r = w_S - w_P), which adds
-(a1 x (w_r x a2)) . w_r = (a1 . w_r)(a2 . w_r) - (a1 . a2)|w_r|^2 to k.

The bias is the bilinear form -Kdot(u) w at u = w = qd: Kdot(u), the rate of K as the joints move
with velocities u, applied to w. Apart, -Kdot(qd) w is the rate of the explicit constraint G, which
the Coriolis matrix needs: K Gdot = -Kdot G (algorithms/coriolis.py). With v(u) a branch's
velocity, a(u, w) = sum u_p x (s_p w_p) down its path (the column s_p turns with its body) and
w_r(u) the relative angular velocity in P:
-Kdot(u) w = Psi^T (v_P(u) x (v_S(w) - v_P(w)) - (a_S(u, w) - a_P(u, w)))
             + (a1 . w_r(u))(a2 . w_r(w)) - (a1 . a2)(w_r(u) . w_r(w))      (universal row).
"""

import numpy as np

from ..errors import ModelError, quote
from ..spatial import cross_motion, inverse_transform, rotation_log
from ..joint_types import TYPES
from .expressions import directional
from .joints import motion_subspace, plane_frame

# A loop type's constrained directions in the predecessor loop frame P (axis frame (e1, e2, axis))
# are its loop_rows in the joint-type table: rotation rows 'all', 'e1 e2' (perpendicular to the
# axis), 'a1 x a2' (one row, which turns with both frames: a universal loop) or none; position rows
# 'all', 'e1 e2' or 'axis'.
TURNING = 'a1 x a2'


def translation_of(X):
    """Origin p of frame b in frame a, from X_b_a = plucker(R^T, p)."""
    rx = -X[:3, :3].T @ X[3:, :3]
    return np.array([rx[2, 1], rx[0, 2], rx[1, 0]])


IDENTITY = np.eye(6)
IDENTITY.setflags(write=False)      # shared start of the branch products below (never written)


def chain_transform(path, Xup):
    """X_body_top for the last body of a path hanging below top (Xup[i] = X_i_parent(i))."""
    X = IDENTITY
    for body in path:
        X = Xup[body] @ X
    return X


class LoopConstraint:
    """A <loop> closing a revolute, continuous, prismatic, fixed, spherical, planar or universal
    joint between two links of a cluster.

    Psi (constrained directions in the predecessor loop frame P, the type's loop_rows):
    revolute keeps the 3 position rows and the 2 rotation rows perpendicular to the axis; prismatic
    the 2 position rows perpendicular to the axis and the 3 rotation rows; fixed all 6; spherical
    the 3 position rows; planar the position row along the axis and the 2 rotation rows
    perpendicular to it; universal the 3 position rows and one rotation row along a1 x a2 (set at
    each evaluation).
    """

    def __init__(self, name, kind, axis, nca, pred_path, succ_path, X_P_pred, X_S_succ,
                 axis2=None):
        self.name = name
        self.kind = kind
        self.nca = nca                  # body index of the nearest common ancestor
        self.pred_path = pred_path      # bodies below the NCA down to the predecessor body
        self.succ_path = succ_path
        self.X_P_pred = X_P_pred        # loop frame P from predecessor-body coordinates
        self.X_S_succ = X_S_succ        # loop frame S from successor-body coordinates
        self.frame = plane_frame(axis)
        self.axis2 = axis2              # universal: a2 in S coordinates
        directions = {'all': np.eye(3), 'e1 e2': self.frame[:, :2], 'axis': self.frame[:, 2:],
                      '': np.zeros((3, 0)), 'a1 x a2': np.zeros((3, 1))}
        self.rotation_rows, position_rows = TYPES[kind].loop_rows
        self.rot_dirs = directions[self.rotation_rows]
        self.pos_dirs = directions[position_rows]
        nr, npos = self.rot_dirs.shape[1], self.pos_dirs.shape[1]
        self.Psi = np.zeros((6, nr + npos))       # a universal loop's first column is set by
        #                                           directions()
        self.Psi[:3, :nr] = self.rot_dirs
        self.Psi[3:, nr:] = self.pos_dirs
        self.rows = nr + npos
        self.bodies = tuple(pred_path) + tuple(succ_path)

    def relative_rotation(self, XA, XB):
        """Rotation of S in P from the branch transforms ^AX_NCA and ^BX_NCA."""
        return ((self.X_S_succ @ XB) @ inverse_transform(self.X_P_pred @ XA))[:3, :3].T

    def directions(self, R_rel):
        """Psi (6 x rows) in P at the relative rotation R_rel of S in P."""
        if self.rotation_rows != TURNING:
            return self.Psi
        Psi = self.Psi.copy()
        Psi[:3, 0] = np.cross(self.frame[:, 2], R_rel @ self.axis2)
        return Psi

    def turning_bias(self, R_rel, w_r, w_along=None):
        """The universal row's extra bias -(a1 x (w_along x a2)) . w_r (module docstring), w_r and
        w_along (default w_r) relative angular velocities in P coordinates; zeros for the other
        loop types, whose Psi is fixed in P."""
        w_along = w_r if w_along is None else w_along
        k = np.zeros(self.rows)
        if self.rotation_rows == TURNING:
            a1, a2 = self.frame[:, 2], R_rel @ self.axis2
            k[0] = (a1 @ w_along) * (a2 @ w_r) - (a1 @ a2) * (w_along @ w_r)
        return k

    @staticmethod
    def _branch(path, Xup, S, col, qd, along):
        """Walk one branch down from the NCA: the body transform, each joint's columns in NCA
        coordinates, and (unless qd is None) the branch velocities v(qd) and v(along) and the bias
        acceleration a(along, qd) (module docstring) in NCA coordinates."""
        X = IDENTITY
        v, u, a = np.zeros(6), np.zeros(6), np.zeros(6)
        columns = []
        for body in path:
            X = Xup[body] @ X
            s = inverse_transform(X) @ S[body]
            columns.append((col[body], s))
            if qd is not None:
                vJ = s @ qd[col[body]:col[body] + s.shape[1]]
                v = v + vJ
                u = u + s @ along[col[body]:col[body] + s.shape[1]]
                a = a + cross_motion(u, vJ)         # d/dt (s qd) = u x (s qd), s fixed in the body
        return X, columns, v, u, a

    def evaluate(self, Xup, S, col, n, qd, along=None, positions=None):
        """K (rows x n) over the cluster's spanning velocities and k = -Kdot(along) qd at
        velocities qd (k = 0 for qd None: K alone; along defaults to qd: the bias)."""
        along = qd if along is None else along
        XA, cols_p, vA, uA, aA = self._branch(self.pred_path, Xup, S, col, qd, along)
        XB, cols_s, vB, uB, aB = self._branch(self.succ_path, Xup, S, col, qd, along)
        X_P_nca = self.X_P_pred @ XA
        R_rel = self.relative_rotation(XA, XB)
        Psi = X_P_nca.T @ self.directions(R_rel)    # force-like, so it maps with X^T to NCA
        #                                             coordinates
        K = np.zeros((self.rows, n))
        for sign, columns in ((-1.0, cols_p), (1.0, cols_s)):
            for c, s in columns:
                K[:, c:c + s.shape[1]] += sign * (Psi.T @ s)
        if qd is None:
            return K, np.zeros(self.rows)
        k = Psi.T @ (cross_motion(uA, vB) - cross_motion(uA, vA) - (aB - aA))
        E = X_P_nca[:3, :3]
        return K, k + self.turning_bias(R_rel, E @ (vB[:3] - vA[:3]), E @ (uB[:3] - uA[:3]))

    @staticmethod
    def _branch_rates(path, Xup, S, col, delta, u, w):
        """Walk one branch down from the NCA along directions delta, u and w (module docstring):
        the branch velocities v(delta), v(u), v(w), the bias accelerations a(delta, u),
        a(delta, w), a(u, w) and the rate of a(u, w) as the joints move along delta,
        sum_p A_p(delta, u) x s_p w_p + U_p(u) x (U_p(delta) x s_p w_p) with A_p and U_p the
        partial sums down to joint p (a column s_p turns with its body:
        ds_p = U_p(delta) x s_p)."""
        X = IDENTITY
        Ud, Uu, Uw, Adu, Adw, Auw, dAuw = (np.zeros(6) for _ in range(7))
        for body in path:
            X = Xup[body] @ X
            s = inverse_transform(X) @ S[body]
            c = slice(col[body], col[body] + s.shape[1])
            sd, su, sw = s @ delta[c], s @ u[c], s @ w[c]
            Ud, Uu, Uw = Ud + sd, Uu + su, Uw + sw
            Adu = Adu + cross_motion(Ud, su)
            Adw = Adw + cross_motion(Ud, sw)
            Auw = Auw + cross_motion(Uu, sw)
            dAuw = dAuw + cross_motion(Adu, sw) + cross_motion(Uu, cross_motion(Ud, sw))
        return Ud, Uu, Uw, Adu, Adw, Auw, dAuw

    def bias_rate(self, Xup, S, col, delta, u, w, positions=None):
        """d/ddelta of k(u, w) = -Kdot(u) w, u and w held: the constraint's third-order term,
        which the derivatives of the loops' bias g need (algorithms/derivatives.py).

        With r = v_P(u) x (v_S(w) - v_P(w)) - (a_S(u, w) - a_P(u, w)) (NCA coordinates) and
        Psi turning with P: dk = Psi^T (dr - v_P(delta) x r), where dv(u) = a(delta, u) and
        da(u, w) comes from _branch_rates; a universal row adds the turning of n = a1 x a2 and of
        its bias."""
        P = self._branch_rates(self.pred_path, Xup, S, col, delta, u, w)
        Q = self._branch_rates(self.succ_path, Xup, S, col, delta, u, w)
        (dP, uP, wP, duP, dwP, uwP, d_uwP), (dS, uS, wS, duS, dwS, uwS, d_uwS) = P, Q
        XA, XB = chain_transform(self.pred_path, Xup), chain_transform(self.succ_path, Xup)
        X_P_nca = self.X_P_pred @ XA
        R_rel = self.relative_rotation(XA, XB)
        Psi = X_P_nca.T @ self.directions(R_rel)
        relative_w = wS - wP
        r = cross_motion(uP, relative_w) - (uwS - uwP)
        dr = (cross_motion(duP, relative_w) + cross_motion(uP, dwS - dwP) - (d_uwS - d_uwP))
        dk = Psi.T @ (dr - cross_motion(dP, r))
        if self.rotation_rows == TURNING:
            E = X_P_nca[:3, :3]
            a1, a2 = self.frame[:, 2], R_rel @ self.axis2
            turn = E @ (dS[:3] - dP[:3])               # relative angular velocity along delta, P
            da2 = np.cross(turn, a2)                      # a2 is fixed in S
            dk[0] += np.cross(a1, da2) @ (E @ r[:3])       # n turns in P
            wr_u, wr_w = E @ (uS[:3] - uP[:3]), E @ (wS[:3] - wP[:3])
            spin = E @ dP[:3]                              # P turns in the NCA

            def rate(v_rel, a_S, a_P):                     # d/ddelta of E (w_S - w_P)
                return -np.cross(spin, v_rel) + E @ (a_S[:3] - a_P[:3])
            dwr_u, dwr_w = rate(wr_u, duS, duP), rate(wr_w, dwS, dwP)
            dk[0] += ((a1 @ dwr_u) * (a2 @ wr_w) + (a1 @ wr_u) * (da2 @ wr_w + a2 @ dwr_w)
                      - (a1 @ da2) * (wr_u @ wr_w) - (a1 @ a2) * (dwr_u @ wr_w + wr_u @ dwr_w))
        return dk

    def residual(self, Xup, q_of_body):
        """phi: rotation error and the position of S's origin in P, along the constrained
        directions. Their first-order change is K dq at a closed configuration."""
        XA = chain_transform(self.pred_path, Xup)
        XB = chain_transform(self.succ_path, Xup)
        X_S_P = (self.X_S_succ @ XB) @ inverse_transform(self.X_P_pred @ XA)
        R_rel = X_S_P[:3, :3].T
        if self.rotation_rows == 'e1 e2':
            e1, e2, axis = self.frame.T
            turned = R_rel @ axis
            rotation = np.array([-e2 @ turned, e1 @ turned])
        elif self.rotation_rows == TURNING:
            rotation = np.array([-self.frame[:, 2] @ R_rel @ self.axis2])
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

    def evaluate(self, Xup, S, col, n, qd, along=None, positions=None):
        """K (1 x n) over the cluster's spanning velocities and k = 0 (a linear relation)."""
        K = np.zeros((1, n))
        for body, c in self.coefficients.items():
            K[0, col[body]] += c
        return K, np.zeros(1)

    def bias_rate(self, Xup, S, col, delta, u, w, positions=None):
        """0: a linear relation has no bias."""
        return np.zeros(1)

    def residual(self, Xup, q_of_body):
        """phi = sum_j c_j q_j + offset."""
        return np.array([sum(c * q_of_body(body) for body, c in self.coefficients.items())
                         + self.offset])


class ImplicitConstraint:
    """<constraint>: residuals phi_r(x) = 0 of the positions x of named 1-DoF joints, parsed into
    tapes and differentiated exactly in multi-dual numbers (expressions.py): K row r is dphi_r/dx
    (one direction e_j per variable), -Kdot(u) w = -d^2 phi_r[u, w] (the bias at u = w = qd) and
    its rate along delta -d^3 phi_r[delta, u, w]."""

    def __init__(self, name, bodies, tapes):
        self.name = name
        self.bodies = tuple(bodies)        # the joints' bodies, in the order of the variables
        self.tapes = tuple(tapes)
        self.rows = len(tapes)

    @classmethod
    def of(cls, spec, tree, joint_body, fixed):
        """The constraint of a <constraint> (urdf.ImplicitSpec) on the spanning tree (joint_body:
        moving joint name -> body; fixed: the fixed joints' names), checked: 1-DoF joints,
        residuals finite at the zero position."""
        where = f'constraint {quote(spec.name)}'
        for name in spec.joints:
            if name in fixed:
                raise ModelError(f'{where} involves fixed joint {quote(name)}; its variables are '
                                 'positions of 1-DoF joints')
            if name not in joint_body:
                raise ModelError(f'{where} names unknown joint {quote(name)}')
            joint = tree.bodies[joint_body[name]].joint
            if not TYPES[joint.type].kind:
                raise ModelError(f'{where} involves {joint.type} joint {quote(name)}; its '
                                 'variables are positions of 1-DoF joints')
        constraint = cls(spec.name, [joint_body[name] for name in spec.joints], spec.tapes)
        constraint.check_zero_position(where)
        return constraint

    def joint_rows(self, positions, u=None, w=None):
        """K over the variables (rows x variables) and, given the variables' velocities u and w,
        -Kdot(u) w (zeros without)."""
        x = [positions(body) for body in self.bodies]
        unit = np.eye(len(x))
        K = np.array([[directional(tape, x, (e,))[1] for e in unit] for tape in self.tapes])
        if u is None:
            return K, np.zeros(self.rows)
        return K, np.array([-directional(tape, x, (u, w))[3] for tape in self.tapes])

    def check_zero_position(self, where):
        """ModelError unless every residual and its gradient are finite at the zero position."""
        K, phi = self.joint_rows(lambda body: 0.0)[0], self.residual(None, lambda body: 0.0)
        for row in range(self.rows):
            if not (np.isfinite(phi[row]) and np.all(np.isfinite(K[row]))):
                raise ModelError(f'{where} <residual> {row + 1} or its gradient is not finite at '
                                 'the zero position of its joints; expected an expression defined '
                                 'there (a division by zero, or a function outside its domain?)')

    def evaluate(self, Xup, S, col, n, qd, along=None, positions=None):
        """K (rows x n) over the cluster's spanning velocities and k = -Kdot(along) qd."""
        columns = [col[b] for b in self.bodies]
        velocities = (() if qd is None
                      else ((qd if along is None else along)[columns], qd[columns]))
        rows, k = self.joint_rows(positions, *velocities)
        K = np.zeros((self.rows, n))
        K[:, columns] = rows
        return K, k

    def bias_rate(self, Xup, S, col, delta, u, w, positions=None):
        """d/ddelta of k(u, w): -d^3 phi[delta, u, w]."""
        columns = [col[b] for b in self.bodies]
        x = [positions(body) for body in self.bodies]
        return np.array([-directional(tape, x, (delta[columns], u[columns], w[columns]))[7]
                         for tape in self.tapes])

    def residual(self, Xup, q_of_body):
        """phi(x)."""
        x = [q_of_body(body) for body in self.bodies]
        return np.array([directional(tape, x, ())[0] for tape in self.tapes])


def constraint_jacobian(cluster, Xup, S, qd=None, along=None, positions=None):
    """Stacked K and k = -Kdot(along) qd of a cluster's constraints (all rows) at the given
    transforms (and joint positions, body -> q, which implicit constraints read) and velocities
    (K alone, k = 0, without qd; along defaults to qd: the bias)."""
    blocks = [c.evaluate(Xup, S, cluster.col, cluster.n, qd, along, positions)
              for c in cluster.constraints]
    return np.vstack([K for K, _ in blocks]), np.concatenate([k for _, k in blocks])


def bias_rate(cluster, Xup, S, delta, u, w, positions=None):
    """Stacked d/ddelta k(u, w) of a cluster's constraints (all rows), u and w held."""
    return np.concatenate([c.bias_rate(Xup, S, cluster.col, delta, u, w, positions)
                           for c in cluster.constraints])


def joint_positions(model, data):
    """body -> its joint's position (the first coordinate) at the positions of the last
    update_transforms (algorithms/kinematics.py)."""
    return lambda body: data.q[model.idx_q[body]]


def rows_at(model, data, cluster, qd=None, along=None):
    """constraint_jacobian of a cluster at the transforms and joint positions of the last
    update_transforms."""
    return constraint_jacobian(cluster, data.Xup, model.S, qd, along, joint_positions(model, data))


def cluster_jacobian(cluster, tree):
    """K(pose) of a cluster's constraints over its spanning velocities (all rows) at a ClusterPose
    (assembly.py)."""
    S = {b: motion_subspace(tree.bodies[b].joint.type, tree.bodies[b].joint.axis)
         for b in cluster.bodies}
    return lambda pose: constraint_jacobian(cluster, pose.Xup, S, positions=pose.position)[0]


def explicit_jacobian(K, dependent, independent):
    """The dependent rows -K_d^+ K_i of G (Chignoli et al. 2023, eq. 3) from K at a closed
    configuration."""
    return -np.linalg.lstsq(K[:, dependent], K[:, independent], rcond=None)[0]


def amplification(K, dependent, independent):
    """The largest speed of a joint when every independent coordinate moves at unit speed: the
    largest row sum of |G| (1 on the independent rows)."""
    return max(1.0, float(
        np.abs(explicit_jacobian(K, dependent, independent)).sum(axis=1).max(initial=0.0)))
