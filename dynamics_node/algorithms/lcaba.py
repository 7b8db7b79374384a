"""Loop-constrained articulated-body algorithm (LCABA, Sathya & Carpentier 2025 Sec. IV, Algs. 1-3)
on the spanning tree.

Every body is its own node, and every loop and coupling of every cluster is a cut constraint
sum_l K^l a_l = k on body accelerations (Sathya & Carpentier 2025 eq. 1c; several bodies per row,
Remark 1 eq. 36). The augmented Lagrangian (eq. 20, penalty mu) is minimized by non-serial dynamic
programming: leaves are eliminated in a minimum-degree order computed once per model, and
eliminating body i couples its neighbours N_i and its parent (fill-in, eqs. 30-32, 34). The first
outer iteration runs three sweeps (Alg. 1); after each multiplier update (eq. 33) the next one
reuses that elimination (Alg. 2).

Conventions. The cost-to-go is 1/2 a^T H a - f^T a with H a symmetric block matrix stored as a dict
H[j, k] (6x6, both orders), body coordinates throughout. Our recurrence a_i = Xup_i a_parent + S_i
qdd_i + c_i (c_i = v_i x S_i qd_i) puts Xup^T . Xup around the paper's parent updates (it works in
one frame). The ground's acceleration a_0 = -gravity is known, so terms coupling a body to it
become forces on that body (eq. 35) and the ground is never a neighbour.

Loop rows, consistent with constraints.py: with psi the constrained directions (force vectors fixed
in the predecessor body A), d/dt psi^T (v_B - v_A) = psi^T (a_B - a_A) - psi^T (v_A x v_B), so in A
coordinates K^A = -Psi^T X_P_A, K^B = Psi^T X_P_A X_A_B and k = Psi^T X_P_A (v_A x X_A_B v_B).
"""

from dataclasses import dataclass
import numbers
import weakref

import numpy as np

from ..errors import ModelError, quote
from ..faults import Fault, message
from ..kernels.codes import LCABA_NOT_POSITIVE
from ..multibody.constraints import (chain_transform, CouplingConstraint, ImplicitConstraint,
                                     joint_positions)
from ..spatial import cross_force, cross_motion, inverse_transform
from .kinematics import update_transforms


MAX_MU = 1e9
MAX_ITERATIONS = 200


@dataclass(frozen=True)
class ProximalSettings:
    """Settings of the augmented-Lagrangian iterations (Sathya & Carpentier 2025 Alg. 3).

    mu is the paper's penalty (eq. 20); Sathya & Carpentier 2025 Sec. VI recommends 1e5..1e7.
    Pinocchio's ``ProximalSettings.mu`` is its inverse (1e-6 there is mu = 1e6 here). Iterations
    stop when min(||qdd^k - qdd^(k-1)||_inf, ||K qdd - k||_inf) < tolerance or after
    max_iterations, so that iterations that stall or run out stop with a larger residual, which
    method 'auto' checks (forward_dynamics.LCABA_RESIDUAL). Bounds: tolerance <= 1, mu <= MAX_MU
    (above, round-off in the penalised articulated inertias makes them indefinite) and
    max_iterations <= MAX_ITERATIONS (a call stays well below a second).
    """

    mu: float = 1e6
    tolerance: float = 1e-10
    max_iterations: int = 50

    def __post_init__(self):
        for name, bound in (('mu', MAX_MU), ('tolerance', 1.0)):
            value = getattr(self, name)
            if not (isinstance(value, numbers.Real) and 0 < value <= bound):
                raise ModelError(f'ProximalSettings.{name} is {quote(value)}; expected a finite '
                                 f'number in (0, {bound:g}]')
        if not (isinstance(self.max_iterations, numbers.Integral)
                and 1 <= self.max_iterations <= MAX_ITERATIONS):
            raise ModelError(f'ProximalSettings.max_iterations is {quote(self.max_iterations)}; '
                             f'expected an integer in [1, {MAX_ITERATIONS}]')


DEFAULT_SETTINGS = ProximalSettings()          # frozen: shared, not rebuilt (and re-validated) per
#                                                call


@dataclass(frozen=True)
class LcabaResult:
    qdd: np.ndarray        # spanning accelerations (nv)
    iterations: int        # outer iterations: 1 = Alg. 1 only, each further one = Alg. 2
    residual: float        # ||K qdd - k||_inf over every cut-constraint row
    converged: bool        # the stopping rule was met before max_iterations
    multipliers: dict      # constraint name -> lambda (its rows), H qdd + C - tau = sum K^T lambda
    # per contact (contacts.ContactFrames): its force, H qdd + C = tau + sum J_c^T lambda_c
    contact_forces: tuple = ()


@dataclass(frozen=True)
class _Plan:
    """Symbolic part, fixed per model (Pinocchio's computeJointMinimalOrdering)."""

    constraints: tuple         # every loop and coupling, clusters in order, but those held still
    order: tuple               # S^E: bodies in elimination order
    neighbours: tuple          # N_i at the elimination of body i (sorted, never the ground)
    held: tuple                # couplings among locked joint columns only: satisfied, no rows
    #                            (zero multipliers)


_PLANS = weakref.WeakKeyDictionary()
_CONTACT_PLANS = weakref.WeakKeyDictionary()   # model -> {pairs of contact bodies: _Plan}
CONTACT_PLANS = 64                             # per model, the most recent sets of pairs kept


def elimination_plan(model, contacts=()):
    """The model's cut constraints and minimum-degree elimination order, built once and cached;
    with contacts (contacts.ContactFrames) between two moving bodies, the order of the model's
    constraints and theirs (a contact with the world couples no bodies: the same plan)."""
    if model not in _PLANS:
        every = [con for c in model.cluster_list for con in c.constraints]
        held = tuple(con for con in every if _locked(model, con))
        constraints = tuple(con for con in every if con not in held)
        order, neighbours = _minimum_degree(model, [_bodies(model, con) for con in constraints])
        _PLANS[model] = _Plan(constraints, order, neighbours, held)
    plan = _PLANS[model]
    pairs = frozenset(frozenset(c.bodies) for c in contacts if 0 not in c.bodies)
    if not pairs:
        return plan
    cache = _CONTACT_PLANS.setdefault(model, {})
    if pairs not in cache:
        if len(cache) >= CONTACT_PLANS:
            del cache[next(iter(cache))]
        order, neighbours = _minimum_degree(
            model, [_bodies(model, con) for con in plan.constraints] + [set(p) for p in pairs])
        cache[pairs] = _Plan(plan.constraints, order, neighbours, plan.held)
    return cache[pairs]


def _locked(model, con):
    """A coupling whose joints are all locked (Model.locked_v) holds by itself."""
    return isinstance(con, CouplingConstraint) and all(model.idx_v[b] in model.locked_v
                                                       for b in con.coefficients)


def _bodies(model, con):
    if isinstance(con, (CouplingConstraint, ImplicitConstraint)):
        return set(con.bodies) | {int(model.parent[j]) for j in con.bodies}
    return {_end(con.pred_path, con.nca), _end(con.succ_path, con.nca)}


def _end(path, nca):
    return path[-1] if path else nca


def _minimum_degree(model, constraint_bodies):
    """Eliminate the leaf with the fewest neighbours (Sathya & Carpentier 2025 Sec. IV-A; ties: the
    larger body index, deterministic where the paper draws at random), with the neighbour updates
    of eqs. 31-32."""
    N = [set() for _ in range(model.nb)]
    for bodies in constraint_bodies:
        for j in bodies - {0}:
            N[j] |= bodies - {0, j}
    children = np.bincount(model.parent[1:], minlength=model.nb)
    leaves = {i for i in range(1, model.nb) if children[i] == 0}
    order, neighbours = [], [()] * model.nb
    while leaves:
        i = min(leaves, key=lambda b: (len(N[b]), -b))
        leaves.remove(i)
        order.append(i)
        neighbours[i] = tuple(sorted(N[i]))
        p = int(model.parent[i])
        for j in N[i]:
            N[j].discard(i)                                  # eq. 31
        clique = (N[i] | {p}) - {0}
        for j in clique:
            N[j] |= clique - {j}                             # eq. 32
        children[p] -= 1
        if p > 0 and children[p] == 0:
            leaves.add(p)
    return tuple(order), tuple(neighbours)


def cut_rows(model, data, con, qd):
    """{body: K^l} and k of one constraint on body accelerations (body coordinates), at the
    spanning velocities qd."""
    if isinstance(con, ImplicitConstraint):
        # K x_dd = k over the joints' accelerations, each as a coupling's (below), k its bias
        velocities = qd[[model.idx_v[b] for b in con.bodies]]
        K, k = con.joint_rows(joint_positions(model, data), velocities, velocities)
        blocks = {}
        for column, j in enumerate(con.bodies):
            KsT = np.outer(K[:, column], model.S[j][:, 0])
            p = int(model.parent[j])
            blocks[j] = blocks.get(j, 0.0) + KsT
            blocks[p] = blocks.get(p, 0.0) - KsT @ data.Xup[j]
        return blocks, k
    if isinstance(con, CouplingConstraint):
        # sum_j c_j qdd_j = 0 as a multi-link row (Sathya & Carpentier 2025 Remark 1):
        # qdd_j = S_j^T (a_j - Xup_j a_parent - c_j) for the unit S_j of a 1-DoF joint, and
        # S_j^T (v_j x S_j qd_j) = 0, so k = 0 exactly.
        blocks = {}
        for j, coefficient in con.coefficients.items():
            sT = coefficient * model.S[j].T
            p = int(model.parent[j])
            blocks[j] = blocks.get(j, 0.0) + sT
            blocks[p] = blocks.get(p, 0.0) - sT @ data.Xup[j]
        return blocks, np.zeros(1)
    A, B = _end(con.pred_path, con.nca), _end(con.succ_path, con.nca)
    X_A_nca, X_B_nca = (chain_transform(con.pred_path, data.Xup),
                        chain_transform(con.succ_path, data.Xup))
    X_A_B = X_A_nca @ inverse_transform(X_B_nca)
    R_rel = con.relative_rotation(X_A_nca, X_B_nca)
    PsiT = con.directions(R_rel).T @ con.X_P_pred        # rows in A coordinates (module docstring)
    v_B = X_A_B @ data.v[B]
    w_r = (con.X_P_pred @ (v_B - data.v[A]))[:3]
    k = PsiT @ cross_motion(data.v[A], v_B) + con.turning_bias(R_rel, w_r)
    return {A: -PsiT, B: PsiT @ X_A_B}, k


def lcaba(model, data, q, qd, tau, settings=DEFAULT_SETTINGS, contacts=()):
    """Spanning accelerations of the closed-loop system by the proximal LCABA (Sathya & Carpentier
    2025, Alg. 3).

    Solves H qdd + C = tau + K^T lambda, K qdd = k for every loop and coupling, also where K is
    rank deficient (redundant rows, kinematic singularities): min 1/2 |qdd - qdd_free|_H^2 s.t. K
    qdd = k. Joint columns moved by held coordinates only (Model.locked_v, roles.py) stay still.

    Args:
        q: spanning positions (nq); qd, tau: spanning velocities and generalized forces (nv).
        data.f_ext: external forces on the bodies (body coordinates), set beforehand.
        contacts: contacts.ContactFrames, further cut constraints (a body and the ground, or two
            bodies).
    Returns:
        LcabaResult; the body accelerations are left in data.a.
    """
    plan = elimination_plan(model, contacts)
    mu = settings.mu
    update_transforms(model, data, q)
    H, f, c = _first_forward_sweep(model, data, qd)
    f_tree = f.copy()
    a0 = np.concatenate((np.zeros(3), -model.gravity))
    rows = [_rows_on_moving_bodies(cut_rows(model, data, con, qd), a0)
            for con in plan.constraints]
    rows += [_rows_on_moving_bodies(con.cut_rows(model, data), a0) for con in contacts]
    _add_penalty(H, f, rows, mu)
    steps = _backward_sweep(model, data, plan, H, f, c, tau, a0)
    data.a[0] = a0
    qdd = _rollout(model, data, steps, [s.u for s in steps], c, data.a)
    multipliers = [np.zeros(len(k)) for _, k in rows]
    iterations, step = 1, np.inf
    while True:
        r = [sum(K @ data.a[b] for b, K in blocks.items()) - k for blocks, k in rows]
        for lam, ri in zip(multipliers, r):
            lam += mu * ri                                   # eq. 33
        residual = max((np.max(np.abs(ri)) for ri in r), default=0.0)
        converged = min(step, residual) < settings.tolerance
        if converged or iterations == settings.max_iterations:
            break
        df = _gradient_forces(model, data, f_tree, rows, multipliers, r, mu)
        dqdd = _reduced_sweeps(model, data, steps, df, tau)
        qdd += dqdd
        step = np.max(np.abs(dqdd))
        iterations += 1
    # The paper's lambda enters the Lagrangian as +lambda^T (K a - k): the constraint force is -K^T
    # lambda.
    named = {con.name: -lam for con, lam in zip(plan.constraints, multipliers)}
    named.update({con.name: np.zeros(con.rows) for con in plan.held})
    return LcabaResult(qdd, iterations, float(residual), bool(converged), named,
                       tuple(-lam for lam in multipliers[len(plan.constraints):]))


def _rows_on_moving_bodies(rows, a0):
    """Cut rows with the ground's block moved into k: a_0 is known (Sathya & Carpentier 2025
    eq. 35)."""
    blocks, k = rows
    if 0 in blocks:
        k = k - blocks.pop(0) @ a0
    return blocks, k


def _add_penalty(H, f, rows, mu):
    """The penalty (mu/2) |sum_l K^l a_l - k|^2 of eq. 20 with lambda^0 = 0: Sathya & Carpentier
    2025 eq. 25 for rows on any number of bodies (Remark 1)."""
    for blocks, k in rows:
        for b, K in blocks.items():
            f[b] += mu * K.T @ k
            for b2, K2 in blocks.items():
                H[b, b2] = H.get((b, b2), 0.0) + mu * K.T @ K2


def _gradient_forces(model, data, f_tree, rows, multipliers, r, mu):
    """Body forces of the augmented Lagrangian's gradient at the current accelerations, for the
    updated multipliers: f - I a - sum K^T (lambda + mu r) (the joint part is tau).

    Alg. 3 line 7 feeds Alg. 2 only the change -mu K^T r, which assumes that the last inner solve
    was exact. The whole gradient costs the same and also refines away the round-off of the
    mu-inflated elimination, which otherwise limits qdd to ~eps mu |K|^2 / |I| (the drift of Sathya
    & Carpentier 2025 Fig. 11).
    """
    df = f_tree - np.einsum('bij,bj->bi', model.inertia, data.a)
    for (blocks, _), lam, ri in zip(rows, multipliers, r):
        for b, K in blocks.items():
            df[b] -= K.T @ (lam + mu * ri)
    return df


def _first_forward_sweep(model, data, qd):
    """v_i, c_i = v_i x S_i qd_i, H_ii = I_i, f_i = f_ext - v_i x* I_i v_i (Sathya & Carpentier
    2025 Sec. IV-C1)."""
    H, f, c = {}, np.zeros((model.nb, 6)), np.zeros((model.nb, 6))
    data.v[0] = 0.0
    for i in range(1, model.nb):
        vJ = model.S[i] @ qd[model.idx_v[i]:model.idx_v[i] + model.nv_body[i]]
        data.v[i] = data.Xup[i] @ data.v[model.parent[i]] + vJ
        c[i] = cross_motion(data.v[i], vJ)
        H[i, i] = model.inertia[i].copy()
        f[i] = data.f_ext[i] - cross_force(data.v[i], model.inertia[i] @ data.v[i])
    return H, f, c


@dataclass
class _Step:
    """What eliminating body i leaves for the rollouts (the stored terms of Sathya & Carpentier
    2025 Algs. 1-2)."""

    body: int
    U: np.ndarray              # U_i = H_ii S_i
    Dinv: np.ndarray           # D_i^-1, D_i = S_i^T U_i
    u: np.ndarray              # u_i = tau_i + S_i^T f_i
    W: dict                    # j -> H_ij^T S_i = (H_{i,N} S_i)^T block of neighbour j


def _backward_sweep(model, data, plan, H, f, c, tau, a0):
    """Eliminate the bodies in S^E (Sathya & Carpentier 2025 Alg. 1 lines 11-23, eqs. 29-30,
    34-35)."""
    steps = []
    for i in plan.order:
        free = model.free_joint_columns[i]                   # locked columns (roles.py) stay still
        S, X, p, N = model.S[i][:, free], data.Xup[i], int(model.parent[i]), plan.neighbours[i]
        U = H[i, i] @ S
        D = S.T @ U
        try:
            np.linalg.cholesky(D)
        except np.linalg.LinAlgError:
            raise message(model, LCABA_NOT_POSITIVE, Fault(index=i)) from None
        Dinv = np.linalg.inv(D)
        u = tau[model.idx_v[i] + free] + S.T @ f[i]
        UD = U @ Dinv
        Ha = H[i, i] - UD @ U.T                              # H^a_i = P_i H_ii
        W = {j: H[i, j].T @ S for j in N}
        if p > 0:
            H[p, p] += X.T @ Ha @ X                          # eq. 30a
            f[p] += X.T @ (f[i] - Ha @ c[i] - UD @ u)        # eq. 30b
        for j in N:
            C = H[i, j] - UD @ W[j].T                        # P_i H_ij
            f[j] -= W[j] @ Dinv @ u + C.T @ c[i]             # eq. 30e
            if p > 0:
                M = X.T @ C                                  # eq. 30c; with j = p this is eq. 34
                H[p, j] = H.get((p, j), 0.0) + M
                H[j, p] = H.get((j, p), 0.0) + M.T
            else:
                f[j] -= C.T @ X @ a0                         # eq. 35
            for k in N:
                H[j, k] = H.get((j, k), 0.0) - W[j] @ Dinv @ W[k].T     # eq. 30d (fill-in)
        steps.append(_Step(i, U, Dinv, u, W))
    return steps


def _rollout(model, data, steps, u, c, a):
    """Accelerations in reverse elimination order (Alg. 1 lines 24-26): eq. 29 and a_i = Xup_i
    a_parent + S_i qdd_i + c_i into a (a[0] set by the caller); returns qdd (nv)."""
    qdd = np.zeros(model.nv)
    for s, ui in zip(reversed(steps), reversed(u)):
        i = s.body
        a_pred = data.Xup[i] @ a[model.parent[i]] + c[i]
        rhs = ui - s.U.T @ a_pred
        for j, Wj in s.W.items():
            rhs = rhs - Wj.T @ a[j]                          # u_i -= (H_{i,N} S_i)^T a_N
        qddi = s.Dinv @ rhs
        free = model.free_joint_columns[i]
        qdd[model.idx_v[i] + free] = qddi
        a[i] = a_pred + model.S[i][:, free] @ qddi
    return qdd


def _reduced_sweeps(model, data, steps, df, dtau):
    """Change of qdd (and of data.a) caused by body forces df and joint forces dtau, reusing the
    elimination (Sathya & Carpentier 2025 Alg. 2: the inertias H do not depend on lambda)."""
    du = []
    for s in steps:
        i, p = s.body, model.parent[s.body]
        free = model.free_joint_columns[i]
        dui = dtau[model.idx_v[i] + free] + model.S[i][:, free].T @ df[i]
        if p > 0:
            df[p] += data.Xup[i].T @ (df[i] - s.U @ (s.Dinv @ dui))
        for j, Wj in s.W.items():
            df[j] -= Wj @ (s.Dinv @ dui)
        du.append(dui)
    da = np.zeros((model.nb, 6))                             # Delta a_0 = 0
    dqdd = _rollout(model, data, steps, du, np.zeros((model.nb, 6)), da)
    data.a += da
    return dqdd
