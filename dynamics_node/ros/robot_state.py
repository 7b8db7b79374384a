"""What robot_state_publisher would make of the stream's completed state: every link's pose on TF
(``/tf``, ``/tf_static``) and the joint states of the robot's own file.

Frames: for every joint of the spanning tree (the URDF+ joints, after an Extended URDF's
replacements), the transform from its parent link to its child link, computed from the pose of
every link (Model.link_poses) at the completed positions. Movable joints go on ``/tf`` with each
output, fixed ones on ``/tf_static`` once per served model, as robot_state_publisher sends them. A
floating joint is the odometry's pose, from the odometry message's frame to its child link.

Joint states: ``~/completed_joint_states`` names the joints of the file the robot came from. An
Extended URDF's replacements change joints that robot_state_publisher, given that file, knows as
one revolute joint each: a FIXED one is published at 0; a UJOINT (J_a, J_b and the link J_cross) or
SPHERICAL one has no JointState value, and its links are on the node's /tf only.
"""

import numpy as np
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

from ..description.compose import float_root
from ..description.urdf import read_urdf
from ..loading import urdf_plus
from ..spatial import matrix_quaternion
from .conversions import float64_array


class Frames:
    """The transforms of one model's links. Attributes: movable (their TransformStamped, parent
    and child frames set), static (a TFMessage of the fixed joints' transforms), base_link (the
    floating joint's child link, or None)."""

    def __init__(self, model, spec):
        index = {link: i for i, link in enumerate(model.links)}
        joints = [j for j in spec.joints if j.type != 'floating']
        movable = [j for j in joints if j.type != 'fixed']
        fixed = [j for j in joints if j.type == 'fixed']
        floating = [j for j in spec.joints if j.type == 'floating']
        self.base_link = floating[0].child if floating else None
        self.model = model
        self._parents = np.array([index[j.parent] for j in movable], dtype=int)
        self._children = np.array([index[j.child] for j in movable], dtype=int)
        self.movable = [_transform(j.parent, j.child) for j in movable]
        R, p = model.link_poses(model.reference_positions)
        self.static = TFMessage(transforms=[_transform(j.parent, j.child) for j in fixed])
        _fill(self.static.transforms, *_relative(R, p, [index[j.parent] for j in fixed],
                                                 [index[j.child] for j in fixed]))

    def message(self, q, stamp, base=None):
        """TFMessage of the movable joints at spanning positions q, stamped stamp; base: (frame,
        pose [x y z qx qy qz qw]) of the floating joint's child link, or None."""
        R, p = self.model.link_poses(q)
        transforms = self.movable
        for transform in transforms:
            transform.header.stamp = stamp
        _fill(transforms, *_relative(R, p, self._parents, self._children))
        if base is not None and base[0] and self.base_link is not None:
            odometry = _transform(base[0], self.base_link)
            odometry.header.stamp = stamp
            _fill([odometry], base[1][None, :3], base[1][None, 3:])
            transforms = transforms + [odometry]
        return TFMessage(transforms=transforms)

    def static_message(self, stamp):
        """The fixed joints' TFMessage, stamped stamp."""
        for transform in self.static.transforms:
            transform.header.stamp = stamp
        return self.static


def _transform(parent, child):
    transform = TransformStamped(child_frame_id=child)
    transform.header.frame_id = parent
    return transform


def _relative(R, p, parents, children):
    """(translations n x 3, quaternions n x 4) of each child link in its parent link's frame, from
    the links' poses R, p in the root frame."""
    R_parent = R[parents]
    rotations = np.einsum('nji,njk->nik', R_parent, R[children])
    translations = np.einsum('nji,nj->ni', R_parent, p[children] - p[parents])
    return translations, np.array([matrix_quaternion(r) for r in rotations]).reshape(-1, 4)


def _fill(transforms, translations, quaternions):
    for transform, (x, y, z), (qx, qy, qz, qw) in zip(transforms, translations.tolist(),
                                                      quaternions.tolist()):
        t, r = transform.transform.translation, transform.transform.rotation
        t.x, t.y, t.z = x, y, z
        r.x, r.y, r.z, r.w = qx, qy, qz, qw


class FileJoints:
    """The joints of ~/completed_joint_states (module docstring): names, and where each one's
    position and velocity come from (-1: always 0, a joint the file has and the model fixed)."""

    def __init__(self, layout, spec, original=None):
        served = {j.name: j.type for j in spec.joints}
        if original is None:
            names = list(layout.joint_names)
        else:
            names = [j.name for j in original.joints if j.type not in ('fixed', 'floating')
                     and (j.name in layout.q_index and j.name in layout.joint_names
                          or served.get(j.name) == 'fixed')]
        self.names = names
        self._q = np.array([layout.q_index.get(n, -1) if served.get(n) != 'fixed' else -1
                            for n in names], dtype=int)
        self._v = np.array([layout.v_index.get(n, -1) if served.get(n) != 'fixed' else -1
                            for n in names], dtype=int)

    def fill(self, msg, q, v):
        """Fill a JointState's name, position and velocity from spanning q and v; returns msg."""
        msg.name = self.names
        msg.position = float64_array(np.where(self._q >= 0, q[self._q], 0.0))
        msg.velocity = float64_array(np.where(self._v >= 0, v[self._v], 0.0))
        return msg


def description_specs(source, closures, floating_base=False):
    """(spec of the URDF+ that load_model serves from a description (a path or XML), its
    closures (None: none) and floating_base, spec of the Extended URDF's own file or None)."""
    served = source if closures is None else urdf_plus(source, closures)
    if floating_base:
        served = float_root(served)
    return read_urdf(served), None if closures is None else read_urdf(source)
