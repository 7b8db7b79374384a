"""Generated mechanisms of any size (shared by the tests and bench/run.py).

``parallel_chains(depth, loop)``: Chignoli et al. 2023-style nested closed chains. Level 1 hangs
from the ground, each further level from the predecessor tip of the level above; every level is a
planar closed chain of ``loop`` links, two parallel branches of ceil(loop/2) and floor(loop/2)
revolute links whose tips are joined by a revolute <loop> (rank 2 of its 5 rows in the plane), so
each level is one cluster of ``loop`` bodies with loop - 2 degrees of freedom, and the tree of
clusters is ``depth`` deep. The loops are closed at a random configuration (their frames placed
where the open chain's tips are).
"""

import numpy as np

from dynamics_node import load_model

INERTIA = 'ixx="0.002" ixy="0.0001" ixz="0" iyy="0.01" iyz="0.0002" izz="0.011"'
LIMIT = '<limit lower="-9" upper="9" effort="1" velocity="1"/>'


def parallel_chains(depth, loop, seed=0):
    """(URDF+ text, closed spanning q) of depth nested planar closed chains of loop links each."""
    rng = np.random.default_rng(seed)
    links, joints, tips = ['<link name="ground"/>'], [], []
    base = 'ground'
    for level in range(depth):
        ends = []
        for branch, size in (('a', (loop + 1) // 2), ('b', loop // 2)):
            parent = base
            for i in range(size):
                name = f'l{level}{branch}{i}'
                links.append(f'<link name="{name}"><inertial><origin xyz="0.1 0 0"/><mass '
                             f'value="1"/><inertia {INERTIA}/></inertial></link>')
                xyz = f'0.2 {0.3 if (branch, i) == ("b", 0) else 0.0} 0'
                joints.append(f'<joint name="j_{name}" type="revolute"><parent link="{parent}"/>'
                              f'<child link="{name}"/><origin xyz="{xyz}"/>'
                              f'<axis xyz="0 0 1"/>{LIMIT}</joint>')
                parent = name
            ends.append(parent)
        tips.append(ends)
        base = ends[0]
    tree = '<robot name="parallel_chains">' + ''.join(links + joints)
    open_tree = load_model(tree + '</robot>')
    q = rng.uniform(-0.4, 0.4, open_tree.nq)
    loops = []
    for level, (a, b) in enumerate(tips):
        (R_a, p_a), (R_b, p_b) = (open_tree.link_pose(q, tip) for tip in (a, b))
        p = [float(x) for x in R_b.T @ (p_a - p_b)]                # tip a's origin seen from tip b
        yaw = float(np.arctan2(*(R_b.T @ R_a)[[1, 0], 0]))
        loops.append(f'<loop name="closure{level}" type="revolute"><predecessor '
                     f'link="{a}"/><successor link="{b}"><origin xyz="{p[0]!r} {p[1]!r} {p[2]!r}" '
                     f'rpy="0 0 {yaw!r}"/></successor><axis xyz="0 0 1"/></loop>')
    xml = tree + ''.join(loops) + '</robot>'
    return xml, _reorder(open_tree, load_model(xml), q)


def _reorder(source, target, q):
    """q of source's joint order in target's (1-DoF joints)."""
    return np.array([q[source.joint_names.index(name)] for name in target.joint_names])
