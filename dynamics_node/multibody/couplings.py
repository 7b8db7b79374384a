"""The couplings of every coupling-only cluster as one linear relation A q + b = 0.

Couplings relate 1-DoF joints linearly, so their position residual, their velocity rows (the same A
on v), the dependent positions (explicit form q_d = D q + d, Chignoli et al. 2023 eq. 3) and each
cluster's constant G_k are computed once: no transforms and no Newton iterations on the hot path.
"""

import numpy as np


class LinearConstraints:

    def __init__(self, model):
        rows = [(con, cluster) for cluster in model.cluster_list if cluster.linear
                for con in cluster.constraints]
        self.names = tuple(con.name for con, _ in rows)
        self.clusters = tuple(cluster.name for _, cluster in rows)
        self.A_q = np.zeros((len(rows), model.nq))       # A over positions
        self.A_v = np.zeros((len(rows), model.nv))       # the same rows over velocities
        self.b = np.zeros(len(rows))
        for r, (con, _) in enumerate(rows):
            for body, coefficient in con.coefficients.items():
                self.A_q[r, model.idx_q[body]] += coefficient
                self.A_v[r, model.idx_v[body]] += coefficient
            self.b[r] = con.offset
        dependent, D, d, G = [], [], [], []
        for cluster, (v0, v1) in zip(model.cluster_list, model.v_range):
            G.append(_explicit_G(cluster, self.A_v[[r for r, (_, c) in enumerate(rows)
                                                    if c is cluster], v0:v1])
                     if cluster.linear else None)
            if not cluster.linear or not cluster.constraints:
                continue
            mine = [r for r, (_, c) in enumerate(rows) if c is cluster]
            columns = [model.idx_q[b] for b in cluster.bodies
                       if cluster.col[b] in set(cluster.dependent)]
            A = self.A_q[mine]
            pinv = np.linalg.pinv(A[:, columns])
            free = A.copy()
            free[:, columns] = 0.0
            dependent.extend(columns)
            D.append(-pinv @ free)
            d.append(-pinv @ self.b[mine])
        self.dependent = np.array(dependent, dtype=int)  # position indices solved by D q + d
        self.D = np.vstack(D) if D else np.zeros((0, model.nq))
        self.d = np.concatenate(d) if d else np.zeros(0)
        self.G = tuple(G)                                # per cluster: constant G_k, None for loop
        #                                                  clusters
        for array in ((self.A_q, self.A_v, self.b, self.D, self.d)
                      + tuple(g for g in G if g is not None)):
            array.setflags(write=False)

    def complete(self, q):
        """Set the dependent positions of every coupling-only cluster, in place."""
        q[self.dependent] = self.D @ q + self.d

    def worst_position_violation(self, q):
        """(max |A q + b|, constraint name, cluster name) or (0, '', '') without couplings."""
        return _worst(self.A_q @ q + self.b, self)

    def worst_velocity_violation(self, v):
        return _worst(self.A_v @ v, self)


def _explicit_G(cluster, K):
    """G = P [1; -K_d^+ K_i] of a coupling-only cluster from its constant rows K (local columns);
    the identity for a cluster without constraints."""
    G = np.zeros((cluster.n, cluster.m))
    G[cluster.independent] = np.eye(cluster.m)
    if cluster.constraints:
        G[cluster.dependent] = -np.linalg.pinv(K[:, cluster.dependent]) @ K[:, cluster.independent]
    return G


def _worst(residual, constraints):
    if residual.size == 0:
        return 0.0, '', ''
    r = int(np.argmax(np.abs(residual)))
    return abs(float(residual[r])), constraints.names[r], constraints.clusters[r]
