"""Spanning tree of a URDF+ description: root, bodies, fixed-joint merging, link frames.

A body is the child link of a moving joint together with every link fixed to it; the root link and
the links fixed to it form the ground (body 0). A universal joint ``u`` is two revolute joints
through one point, ``u_1`` about its <axis> and ``u_2`` about its <axis2>, with a massless cross
body between them that carries no link (``universal_halves``), so that every motion subspace stays
constant in its body frame. Bodies are numbered depth-first in document order, so a parent always
precedes its children (regular numbering, Featherstone & Orin 2000).
"""

from dataclasses import dataclass, replace

import numpy as np

from ..description.urdf import inertia_tolerance, Pose
from ..errors import ModelError, quote, repeated
from ..spatial import pose_transform, spatial_inertia


@dataclass
class TreeBody:
    link: str               # the link that carries the body frame (child of the moving joint)
    joint: object           # its JointSpec (None for the ground)
    parent: int             # parent body index (-1 for the ground)
    X_tree: np.ndarray      # 6x6 transform from parent-body coordinates to the joint frame
    inertia: np.ndarray     # 6x6 spatial inertia of the body and its fixed links, body coordinates
    links: list             # the link itself and the links merged into it


def universal_halves(joint):
    """The revolute joints u_1 (parent -> cross, at the joint's origin, about <axis>) and u_2
    (cross -> child, about <axis2>) of a universal joint u: X_J = X_2(q_2) X_1(q_1), as Pinocchio's
    JointModelUniversal."""
    first = replace(joint, name=f'{joint.name}_1', type='revolute', axis2=None)
    second = replace(joint, name=f'{joint.name}_2', type='revolute', origin=Pose.identity(),
                     axis=joint.axis2, axis2=None)
    return first, second


def check_inertias(bodies):
    """A moving body's inertia (its links merged across fixed joints) must be physical: no
    principal moment about its centre of mass below -urdf.inertia_tolerance. The ground's is never
    used."""
    for body in bodies[1:]:
        I = body.inertia
        mass, mcx = I[3, 3], I[:3, 3:]
        # I_c = I_o - m c x (c x)^T
        central = I[:3, :3] - (mcx @ mcx.T / mass if mass > 0.0 else 0.0)
        principal = np.linalg.eigvalsh(0.5 * (central + central.T))
        if principal[0] < -inertia_tolerance(principal):
            moments = [float(f'{m:.6g}') for m in principal]
            raise ModelError(f'the body of joint {quote(body.joint.name)} (links '
                             f'{quote(body.links)}) has principal moments {moments} about its '
                             'centre of mass; expected non-negative moments')


class SpanningTree:
    """The spanning tree (connectivity without loops) with fixed joints merged."""

    def __init__(self, spec):
        links = {link.name: link for link in spec.links}
        parent_joint = {}
        for joint in spec.joints:
            for end in (joint.parent, joint.child):
                if end not in links:
                    raise ModelError(f'joint {quote(joint.name)} refers to unknown link '
                                     f'{quote(end)}')
            if joint.child in parent_joint:
                raise ModelError(f'link {quote(joint.child)} has two parents: joints '
                                 f'{quote(parent_joint[joint.child].name)} and '
                                 f'{quote(joint.name)}')
            if joint.parent == joint.child:
                raise ModelError(f'joint {quote(joint.name)} connects link {quote(joint.child)} '
                                 'to itself')
            parent_joint[joint.child] = joint
        roots = [name for name in links if name not in parent_joint]
        if len(roots) != 1:
            detail = (', '.join(map(quote, roots[:4])) + (', ...' if len(roots) > 4 else '')
                      if roots
                      else 'none (the joints form a cycle)')
            raise ModelError(f'a URDF tree needs exactly one root link, found {detail}')
        children = {name: [] for name in links}
        for joint in spec.joints:
            children[joint.parent].append(joint)

        self.root_link = roots[0]
        self.bodies = [TreeBody(self.root_link, None, -1, np.eye(6), np.zeros((6, 6)), [])]
        self.link_frame = {}       # link -> (body index, Pose of the link in the body frame)
        self._merge(0, self.root_link, Pose.identity(), links, children)
        unreachable = sorted(set(links) - set(self.link_frame))
        if unreachable:
            raise ModelError(f'links {quote(unreachable)} are not connected to the root '
                             f'{quote(self.root_link)}: their joints form a cycle; close loops '
                             'with <loop>, not <joint>')
        names = ([b.joint.name for b in self.bodies[1:]]
                 + [j.name for j in spec.joints if j.type == 'fixed'])
        clash = repeated(names)
        if clash:
            raise ModelError(f'joint names {quote(clash)} are used twice (a universal joint u '
                             'adds joints u_1 and u_2)')
        if len(self.bodies) == 1:
            raise ModelError('the robot has no moving joint (revolute, continuous, prismatic, '
                             'floating, spherical, planar or universal): it has no dynamics to '
                             'compute')
        check_inertias(self.bodies)
        self.parent = np.array([b.parent for b in self.bodies])
        self.depth = np.zeros(len(self.bodies), dtype=int)
        for i in range(1, len(self.bodies)):
            self.depth[i] = self.depth[self.parent[i]] + 1

    def _merge(self, body, link, pose, links, children):
        """Visit links depth-first in document order; a moving joint starts a new body on visit,
        a fixed joint merges its child link into the current body at its pose (lumped inertia)."""
        stack = [(body, link, pose, None)]
        while stack:
            body, link, pose, joint = stack.pop()
            if joint is not None:
                if joint.type == 'universal':
                    cross, joint = universal_halves(joint)
                    self.bodies.append(TreeBody(link, cross, body, pose_transform(pose.R, pose.p),
                                                np.zeros((6, 6)), []))
                    body, pose = len(self.bodies) - 1, Pose.identity()
                self.bodies.append(TreeBody(link, joint, body, pose_transform(pose.R, pose.p),
                                            np.zeros((6, 6)), []))
                body, pose = len(self.bodies) - 1, Pose.identity()
            self.link_frame[link] = (body, pose)
            self.bodies[body].links.append(link)
            inertial = links[link].inertial
            X_link_body = pose_transform(pose.R, pose.p)
            self.bodies[body].inertia += X_link_body.T @ spatial_inertia(
                inertial.mass, inertial.com, inertial.inertia) @ X_link_body
            for child in reversed(children[link]):
                moving = child if child.type != 'fixed' else None
                stack.append((body, child.child, pose * child.origin, moving))

    def body_of(self, link, where):
        if link not in self.link_frame:
            raise ModelError(f'{where} refers to unknown link {quote(link)}')
        return self.link_frame[link][0]

    def ancestors(self, body):
        """Bodies from body up to the ground, body first."""
        chain = []
        while body >= 0:
            chain.append(body)
            body = self.parent[body]
        return chain

    def nearest_common_ancestor(self, a, *others):
        """nca(a, b) of Chignoli, Slotine et al. 2024, eq. (4), of a and every other body."""
        for b in others:
            ancestors_a = set(self.ancestors(a))
            while b not in ancestors_a:
                b = self.parent[b]
            a = b
        return a

    def path_from(self, ancestor, body):
        """Bodies strictly below ancestor down to body, top first (Chignoli, Slotine et al. 2024,
        eq. (5) and Alg. 4)."""
        path = []
        while body != ancestor:
            path.append(body)
            body = self.parent[body]
        return path[::-1]

    def renumber(self, order):
        """Renumber the bodies: order lists the old indices of bodies 1..nb in their new order,
        which must keep parents before children."""
        new = np.zeros(len(self.bodies), dtype=int)
        new[order] = np.arange(1, len(order) + 1)
        bodies = [self.bodies[0]] + [self.bodies[i] for i in order]
        for body in bodies[1:]:
            body.parent = int(new[body.parent])
        self.bodies = bodies
        self.link_frame = {link: (int(new[b]), pose)
                           for link, (b, pose) in self.link_frame.items()}
        self.parent = np.array([b.parent for b in self.bodies])
        self.depth = self.depth[np.concatenate(([0], order))]
