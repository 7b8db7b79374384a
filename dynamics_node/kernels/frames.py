"""Link frame kernels (algorithms/frames.py): every body's transform from the root, the links'
poses in the root frame, the Jacobians of link frames in independent coordinates and their bias
accelerations Jdot yd, on the cluster kinematics (kinematics.py) the call ran first.

The links of a call are the first n entries of d.link_selection, indices into Model.links, whose
frames ^linkX_body are m.link_E, m.link_r on body m.link_body; row e of d.link_R, d.link_p,
d.link_J and d.link_bias takes the results of d.link_selection[e]. Jacobians and bias
accelerations are written in the public order: [linear; angular] rows in the link frame.
"""

from numba import njit

from .cache import key_on_helpers
from .kinematics import kinematics, OK, update_transforms
from .spatial import add_scaled, product, transform_at, transformed_motion, ZERO6

key_on_helpers(__file__)


@njit(error_model='numpy')
def link_transforms(m, d):
    """^iX_root = ^iX_parent(i) ^parent(i)X_root of every body into d.root_E, d.root_r, root
    first (the ground's is the identity, set once by FlatData)."""
    parent, Xup_E, Xup_r, root_E, root_r = m.parent, d.Xup_E, d.Xup_r, d.root_E, d.root_r
    for i in range(1, len(parent)):
        E, r = transform_at(Xup_E, Xup_r, i)
        if parent[i] > 0:
            E_p, r_p = transform_at(root_E, root_r, parent[i])
            E, r = product(E, r, E_p, r_p)
        for a in range(3):
            for b in range(3):
                root_E[i, a, b] = E[3 * a + b]
            root_r[i, a] = r[a]


@njit(inline='always', error_model='numpy')
def link_pose(m, d, link, e):
    """(R, p) of link in the root frame into row e of d.link_R, d.link_p, from
    ^linkX_root = ^linkX_body ^bodyX_root = plucker(R^T, p) (after link_transforms)."""
    E_l, r_l = transform_at(m.link_E, m.link_r, link)
    E_b, r_b = transform_at(d.root_E, d.root_r, m.link_body[link])
    E, r = product(E_l, r_l, E_b, r_b)
    R, p = d.link_R, d.link_p
    for a in range(3):
        for b in range(3):
            R[e, a, b] = E[3 * b + a]
        p[e, a] = r[a]


@njit(error_model='numpy')
def body_jacobian(m, d, body, E, r, J):
    """J (6 x ny) of the frame ^frameX_body = (E, r) on body: zero but on the clusters on the
    path from body to the ground, where cluster k contributes ^frameX_i (S_k)_i, i its body on the
    path; the frame then moves to the cluster's output body, ^frameX_o = ^frameX_i ^iX_o (Chignoli
    et al. 2023 Sec. 5.2). Rows [linear; angular] (the NumPy twin's in Featherstone's order)."""
    cluster, output, y_range, S, Xo_E, Xo_r = (m.cluster, m.output, m.y_range, d.S, d.Xo_E,
                                               d.Xo_r)
    for a in range(6):
        for y in range(J.shape[1]):
            J[a, y] = 0.0
    i = body
    while i > 0:
        k = cluster[i]
        y0 = y_range[k, 0]
        for j in range(y_range[k, 1] - y0):
            s = transformed_motion(E, r, S[i, j])
            for a in range(3):
                J[a, y0 + j], J[3 + a, y0 + j] = s[3 + a], s[a]
        E_o, r_o = transform_at(Xo_E, Xo_r, i)
        E, r = product(E, r, E_o, r_o)
        i = output[k]


@njit(error_model='numpy')
def body_bias_acceleration(m, d, body, E, r, out):
    """Jdot yd (6) of the frame (E, r) on body into out, [linear; angular] in the frame: the
    classical acceleration of its origin at ydd = 0 without gravity. The spatial acceleration is
    the sum of ^frameX_i c_i over the clusters on the path (eq. 33 at ydd = 0, unrolled as in
    body_jacobian; c_k carries the loops' g_k); the classical one adds omega x v to its linear part
    (Featherstone & Orin 2000, footnote 1)."""
    cluster, output, c, Xo_E, Xo_r = m.cluster, m.output, d.c, d.Xo_E, d.Xo_r
    v = transformed_motion(E, r, d.v[body])
    a = ZERO6
    i = body
    while i > 0:
        a = add_scaled(a, 1.0, transformed_motion(E, r, c[i]))
        E_o, r_o = transform_at(Xo_E, Xo_r, i)
        E, r = product(E, r, E_o, r_o)
        i = output[cluster[i]]
    out[0] = a[3] + v[1] * v[5] - v[2] * v[4]
    out[1] = a[4] + v[2] * v[3] - v[0] * v[5]
    out[2] = a[5] + v[0] * v[4] - v[1] * v[3]
    out[3], out[4], out[5] = a[0], a[1], a[2]


@njit(cache=True, nogil=True, error_model='numpy')
def link_kinematics(m, d, q, yd, n, poses, jacobians, biases):
    """Of the links d.link_selection[:n], what poses, jacobians and biases ask: poses from the
    transforms at q alone (never singular); Jacobians and bias accelerations after the cluster
    kinematics at (q, yd), with velocities for the biases. q None: d.Xup is at the positions
    already (a fused call's position check, kernels/calls.py). Returns OK or the kinematics'
    status."""
    if jacobians or biases:
        status = kinematics(m, d, q, yd, biases)
        if status != OK:
            return status
    elif q is not None:
        update_transforms(m, d, q)
    if poses:
        link_transforms(m, d)
    selection, link_body, link_E, link_r = d.link_selection, m.link_body, m.link_E, m.link_r
    for e in range(n):
        link = selection[e]
        E, r = transform_at(link_E, link_r, link)
        if poses:
            link_pose(m, d, link, e)
        if jacobians:
            body_jacobian(m, d, link_body[link], E, r, d.link_J[e])
        if biases:
            body_bias_acceleration(m, d, link_body[link], E, r, d.link_bias[e])
    return OK
