"""The couplings of every coupling-only cluster as one linear relation A q + b = 0.

Couplings relate 1-DoF joints linearly, so their position residual, their velocity rows (the same A
on v) and the dependent positions (explicit form q_d = D q + d, seed 003 eq. 3) are single matrix
products: no transforms and no Newton iterations on the hot path.
"""

import numpy as np


class LinearConstraints:

    def __init__(self, model):
        rows = [(con, cluster) for cluster in model.cluster_list if cluster.linear for con in cluster.constraints]
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
        dependent, D, d = [], [], []
        for cluster in model.cluster_list:
            if not cluster.linear or not cluster.constraints:
                continue
            mine = [r for r, (_, c) in enumerate(rows) if c is cluster]
            columns = [model.idx_q[b] for b in cluster.bodies if cluster.col[b] in set(cluster.dependent)]
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
        for array in (self.A_q, self.A_v, self.b, self.D, self.d):
            array.setflags(write=False)

    def complete(self, q):
        """Set the dependent positions of every coupling-only cluster, in place."""
        q[self.dependent] = self.D @ q + self.d

    def worst_position_violation(self, q):
        """(max |A q + b|, constraint name, cluster name) or (0, '', '') without couplings."""
        return _worst(self.A_q @ q + self.b, self)

    def worst_velocity_violation(self, v):
        return _worst(self.A_v @ v, self)


def _worst(residual, constraints):
    if residual.size == 0:
        return 0.0, '', ''
    r = int(np.argmax(np.abs(residual)))
    return abs(float(residual[r])), constraints.names[r], constraints.clusters[r]
