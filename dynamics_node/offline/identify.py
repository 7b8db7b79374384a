"""Identification of the inertial parameters (and joint friction) from a recording: the cluster
regressor Y_y of every state (Batch.regressor) stacked into W, its base parameters (the
identifiable combinations, Gautier 1991: algorithms/regressor.base_parameters) fitted to the
measured efforts by least squares, W_kept beta = tau (with viscous and Coulomb friction columns
per independent 1-DoF joint, friction). The full parameters: those closest to the robot file's
that give beta, moved onto the parameters of rigid bodies (each body's pseudo-inertia positive
semi-definite, Wensing, Kim & Slotine 2017) by alternating projections (physical); written as a
URDF+ file (write_urdf)."""

from dataclasses import dataclass

import numpy as np
from lxml import etree

from ..algorithms.regressor import base_parameters, PARAMETERS
from ..batch import Batch
from ..errors import ModelError
from ..whole_body import parameterized
from .contacts import null_space
from .torques import coordinates

# a column of W is kept where |R_jj| > RTOL |W_j| (base_parameters): whole_body.BASE_RTOL (1e-8)
# suits exact regressors, but keeps columns a recording barely tells apart, whose fit then
# amplifies the round-off of the efforts (cond(W_kept) ~ 1e13 on a leg's swing; ~1e6 here)
RTOL = 1e-5
PROJECTIONS = 2000             # alternating projections at most (physical)
CONSISTENT = 1e-9              # the smallest eigenvalue of a J accepted: -CONSISTENT |J|
# the cone's projection (physical) lifts each J's eigenvalues to MARGIN |J| at least, so that the
# parameters end strictly inside it, where load_model's triangle inequality holds with margin
MARGIN = 1e-8


INERTIA = {'ixx': (0, 0), 'ixy': (0, 1), 'ixz': (0, 2), 'iyy': (1, 1), 'iyz': (1, 2),
           'izz': (2, 2)}


@dataclass
class Identification:
    """rank and kept (the base parameters' columns of inertial_parameters), B (rank x 10 nb) and
    beta (rank) with B pi = beta; parameters (10 nb), the full parameters closest to the file's;
    friction (viscous, Coulomb of each 1-DoF joint of torques.coordinates; None without);
    residual (the RMS of W x - tau, N m or N); states, the states fitted; inconsistent: {body:
    why} of the bodies whose parameters are not physical."""
    rank: int
    kept: np.ndarray
    B: np.ndarray
    beta: np.ndarray
    parameters: np.ndarray
    friction: np.ndarray
    residual: float
    states: int
    inconsistent: dict


def identify(model, motion, friction=False, threads=1, schedule=None):
    """The Identification of model's parameters from a Motion with measured efforts. With the
    contact Schedule schedule (contacts.py), the equations of a state that holds contacts, Y pi
    = tau + J_c^T lambda, are projected onto the null space N of J_c (contacts.null_space), N^T
    Y pi = N^T tau: the unknown contact forces drop out (projected dynamics, Aghili 2005); a
    state without contacts keeps every equation (a floating base's: free flight)."""
    if model.floating_base and schedule is None:
        raise ModelError('identifying a floating-base robot needs its contacts (--contacts, or '
                         'the bag\'s ContactSet messages); without them every state is in flight')
    if motion.efforts is None:
        raise ModelError('the joint states carry no efforts: identification fits the measured '
                         'efforts (the effort field of every message)')
    n = len(motion.stamps)
    if n == 0:
        raise ModelError('no state of the recording could be used')
    batch = Batch(model, threads)
    try:
        Y = batch.regressor(motion.positions, motion.velocities, motion.accelerations)
    finally:
        batch.close()
    columns = coordinates(model)[1] if friction else []       # the joints', not the base's
    tau, F = motion.efforts, np.zeros((n, model.ny, 2 * len(columns)))
    for k, j in enumerate(columns):
        F[:, j, 2 * k] = motion.velocities[:, j]
        F[:, j, 2 * k + 1] = np.sign(motion.velocities[:, j])
    if schedule is not None:
        Y, F, tau = _projected(model, motion, schedule, Y, F, tau)
    W, tau = Y.reshape(-1, Y.shape[-1]), tau.reshape(-1)
    rank, kept, B = base_parameters(W, RTOL)
    A = np.hstack([W[:, kept], F.reshape(len(W), -1)])
    x = np.linalg.lstsq(A, tau, rcond=None)[0]
    beta = x[:rank]
    pi = physical(model, model.inertial_parameters, B, beta)
    return Identification(rank, kept, B, beta, pi,
                          x[rank:].reshape(-1, 2) if friction else None,
                          float(np.sqrt(np.mean((A @ x - tau) ** 2))), n,
                          inconsistent(model, pi))


def _projected(model, motion, schedule, Y, F, tau):
    """The states' regressors Y, friction columns F and efforts tau, each state's rows projected
    onto the null space of its contacts' Jacobian (contacts.null_space), stacked."""
    held = schedule.at(motion.stamps)
    projections = [null_space(model, q, schedule.sets[k] if k >= 0 else ())
                   for q, k in zip(motion.positions, held)]
    return tuple(np.concatenate([N.T @ x.reshape(model.ny, -1) for N, x in zip(projections, X)])
                 for X in (Y, F, tau))


def pseudo_inertias(model, pi):
    """The pseudo-inertia J = [[Sigma, h], [h^T, m]] (Sigma = tr(I)/2 1 - I, I about the body
    origin) of each moving body (nb - 1 x 4 x 4), linear in its 10 parameters."""
    p = pi.reshape(model.nb - 1, PARAMETERS)
    I = p[:, [4, 5, 7, 5, 6, 8, 7, 8, 9]].reshape(-1, 3, 3)
    J = np.zeros((model.nb - 1, 4, 4))
    J[:, :3, :3] = 0.5 * np.trace(I, axis1=1, axis2=2)[:, None, None] * np.eye(3) - I
    J[:, :3, 3] = J[:, 3, :3] = p[:, 1:4]
    J[:, 3, 3] = p[:, 0]
    return J


def parameters_of(J):
    """The 10 parameters per body of pseudo-inertias J (pseudo_inertias' inverse), stacked."""
    Sigma = J[:, :3, :3]
    I = np.trace(Sigma, axis1=1, axis2=2)[:, None, None] * np.eye(3) - Sigma
    return np.column_stack([J[:, 3, 3], J[:, :3, 3], I[:, 0, 0], I[:, 0, 1], I[:, 1, 1],
                            I[:, 0, 2], I[:, 1, 2], I[:, 2, 2]]).reshape(-1)


def physical(model, pi0, B, beta):
    """The parameters closest to pi0 with B pi = beta, then moved onto those of rigid bodies that
    keep it: von Neumann's alternating projections between the affine set B pi = beta and the
    bodies' pseudo-inertias' cones J >= 0, both convex in the entries of J (Frobenius norm), from
    the first (Bauschke & Borwein 1996), the cone's projection lifting eigenvalues to MARGIN.
    Stops where every J is inside the cone; else returns the last point of the affine set
    (inconsistent() names its bodies)."""
    basis = np.eye(len(pi0))                    # the map pi -> J entries, a column per parameter
    E = np.stack([pseudo_inertias(model, column).reshape(-1) for column in basis], axis=1)
    A = B @ np.linalg.pinv(E)                   # B pi in the entries of J
    gain = A.T @ np.linalg.inv(A @ A.T)
    x = E @ pi0
    x -= gain @ (A @ x - beta)
    for _ in range(PROJECTIONS):
        J = x.reshape(-1, 4, 4)
        values, vectors = np.linalg.eigh(J)
        largest = np.max(np.abs(values), axis=1, keepdims=True)
        if np.all(values >= 0.5 * MARGIN * largest):
            break
        clipped = np.einsum('bij,bj,bkj->bik', vectors, np.maximum(values, MARGIN * largest),
                            vectors)
        x = clipped.reshape(-1) - gain @ (A @ clipped.reshape(-1) - beta)
    return parameters_of(x.reshape(-1, 4, 4))


def inconsistent(model, pi):
    """{body name: why} of the bodies whose 10 parameters are not those of a rigid body: a
    pseudo-inertia with an eigenvalue below -CONSISTENT times its largest (a negative mass among
    them)."""
    found = {}
    for body, J in enumerate(pseudo_inertias(model, pi), 1):
        values = np.linalg.eigvalsh(J)
        if not values[0] >= -CONSISTENT * np.max(np.abs(values)):
            found[model.joint_names[body - 1]] = (
                f'negative mass {J[3, 3]:.6g}' if J[3, 3] < 0.0 else
                f'pseudo-inertia not positive semi-definite (eigenvalue {values[0]:.3g})')
    return found


def write_urdf(description, spec, model, pi, path):
    """The URDF+ text description (of spec and model) with the inertial elements of pi
    (whole_body.parameterized: each body's on its joint's child link, none on the links merged
    into it), written to path."""
    links = {link.name: link for link in parameterized(model, spec, pi).links}
    root = etree.fromstring(description.encode())
    for element in root.iter('link'):
        link = links.get(element.get('name'))
        if link is None:
            continue
        for old in element.findall('inertial'):
            element.remove(old)
        inertial = link.inertial
        if inertial.mass == 0.0 and not np.any(inertial.inertia):
            continue
        new = etree.SubElement(element, 'inertial')
        etree.SubElement(new, 'origin', xyz=' '.join(repr(float(c)) for c in inertial.com),
                         rpy='0 0 0')
        etree.SubElement(new, 'mass', value=repr(float(inertial.mass)))
        I = inertial.inertia
        etree.SubElement(new, 'inertia', **{name: repr(float(I[a, b])) for name, (a, b) in
                                            INERTIA.items()})
    with open(path, 'wb') as file:
        file.write(etree.tostring(root, xml_declaration=True, encoding='utf-8'))
