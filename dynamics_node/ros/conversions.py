"""Conversions between ROS 2 messages and the library's arrays, free of DDS (unit-testable).

Library layouts (see model.py): q and v follow ``model.joint_names``, y (independent velocities,
accelerations and forces) follows ``model.independent_joint_names``; a floating joint takes 7
position entries (x y z qx qy qz qw) and 6 velocity-like entries ([linear; angular] in the base
frame). ROS messages carry the floating joint apart from the JointState: ``base_pose``,
``base_twist``, ``base_acceleration`` ([linear; angular]) and ``base_wrench`` ([force; torque]).

The functions read and fill message objects by their field names only, so this module imports no
ROS package. Bad input raises ModelError with the offending field and value.
"""

from array import array
import math

import numpy as np

from ..contacts import Contact
from ..errors import ModelError, repeated
from ..joint_types import TYPES
from ..validation import all_finite

IDENTITY_POSE = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])   # x y z qx qy qz qw
# other_placement of a contact with the world: the identity (either sign of its quaternion)
WORLD_PLACEMENTS = tuple(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, w)) for w in (1.0, -1.0))
MAX_CACHED_NAME_LISTS = 64     # bound on the name-list caches: a bad publisher cannot grow them


def float64_array(values):
    """values as array.array('d'), which float64[] message fields take without per-item checks."""
    out = array('d')
    out.frombytes(np.ascontiguousarray(values, dtype=float).tobytes())
    return out


def finite(values, field, labels=None):
    """values as a float vector; raises ModelError naming the first non-finite entry."""
    x = np.asarray(values, dtype=float).reshape(-1)
    if not all_finite(x):
        bad = np.flatnonzero(~np.isfinite(x))[0]
        where = labels[bad] if labels is not None else bad
        raise ModelError(f'{field}[{where}] is {x[bad]}; expected finite numbers')
    return x


def _vector3(vector, field, part):
    """(x, y, z) of a geometry_msgs Vector3 or Point, the part of field; raises ModelError naming a
    non-finite entry."""
    values = (vector.x, vector.y, vector.z)
    if not all(map(math.isfinite, values)):
        finite(values, f'{field}.{part}', 'xyz')
    return values


def pose_to_array(pose, field='base_pose'):
    """geometry_msgs/Pose -> [x y z qx qy qz qw] (the floating joint's 7 positions)."""
    o = pose.orientation
    quaternion = (o.x, o.y, o.z, o.w)
    if not all(map(math.isfinite, quaternion)):
        finite(quaternion, f'{field}.orientation', 'xyzw')
    return np.array(_vector3(pose.position, field, 'position') + quaternion, dtype=float)


def normalized_pose(pose, field='pose'):
    """pose_to_array with the quaternion scaled to unit norm (for estimator outputs)."""
    x = pose_to_array(pose, field)
    norm = np.linalg.norm(x[3:])
    if norm == 0.0:
        raise ModelError(f'{field}.orientation is the zero quaternion; expected a rotation')
    x[3:] /= norm
    return x


def twist_to_array(twist, field='base_twist'):
    """geometry_msgs/Twist -> [linear; angular] (6)."""
    return np.array(_vector3(twist.linear, field, 'linear')
                    + _vector3(twist.angular, field, 'angular'), dtype=float)


def accel_to_array(accel, field='base_acceleration'):
    """geometry_msgs/Accel -> [linear; angular] (6)."""
    return np.array(_vector3(accel.linear, field, 'linear')
                    + _vector3(accel.angular, field, 'angular'), dtype=float)


def _fill_vector3(vector, values):
    vector.x, vector.y, vector.z = (float(v) for v in values)


def array_to_accel(values, accel):
    """Fill geometry_msgs/Accel (or Twist) from [linear; angular] (6); returns accel."""
    _fill_vector3(accel.linear, values[:3])
    _fill_vector3(accel.angular, values[3:6])
    return accel


def array_to_pose(values, pose):
    """Fill geometry_msgs/Pose from [x y z qx qy qz qw]; returns pose."""
    _fill_vector3(pose.position, values[:3])
    o = pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in values[3:7])
    return pose


def array_to_wrench(values, wrench):
    """Fill geometry_msgs/Wrench from [force; torque] (6); returns wrench."""
    _fill_vector3(wrench.force, values[:3])
    _fill_vector3(wrench.torque, values[3:6])
    return wrench


def contacts_from_msgs(items, field='contacts'):
    """cluster_dynamics/Contact[] -> [Contact] (an empty other: the world), None if empty. With an
    empty other, other_placement must be the identity (the message's default): the library refuses
    a placement on no link, and so does the node (NaN, a zero quaternion, any other pose)."""
    if not items:
        return None
    contacts = []
    for i, item in enumerate(items):
        other_placement = _placement(item.other_placement, f'{field}[{i}].other_placement')
        if not item.other and other_placement not in WORLD_PLACEMENTS:
            raise ModelError(f'{field}[{i}].other_placement is {other_placement}, but other is '
                             'empty (the world); a contact with the world is held where its '
                             'contact frame is: leave other_placement at the identity')
        contacts.append(Contact(item.link, item.kind,
                                _placement(item.placement, f'{field}[{i}].placement'),
                                item.other or None, other_placement if item.other else None))
    return contacts


def _placement(pose, field):
    """geometry_msgs/Pose -> ((x, y, z), (qx, qy, qz, qw))."""
    x = pose_to_array(pose, field).tolist()
    return tuple(x[:3]), tuple(x[3:])


def contact_force_to_wrench(force, wrench):
    """Fill geometry_msgs/Wrench from a contact's force: 3 entries (a point contact's force) or 6
    ([force; torque]); returns wrench."""
    _fill_vector3(wrench.force, force[:3])
    _fill_vector3(wrench.torque, force[3:] if len(force) == 6 else (0.0, 0.0, 0.0))
    return wrench


def link_wrenches_to_dict(link_wrenches, field='external_wrenches'):
    """cluster_dynamics/LinkWrench[] -> {link: (force[3], torque[3])}; a link's wrenches add."""
    wrenches = {}
    for i, item in enumerate(link_wrenches):
        force = np.array(_vector3(item.wrench.force, f'{field}[{i}].wrench', 'force'), dtype=float)
        torque = np.array(_vector3(item.wrench.torque, f'{field}[{i}].wrench', 'torque'),
                          dtype=float)
        if item.link in wrenches:
            previous = wrenches[item.link]
            force, torque = previous[0] + force, previous[1] + torque
        wrenches[item.link] = (force, torque)
    return wrenches


class Selection:
    """Where the entries of one JointState name list go in the library's vectors.

    Attributes:
        independent: the names give the independent joints (y layouts), else every spanning joint.
        position_source, position_index: the entries of state.position that are read (not those
            of split joints, completed, nor of names the selection ignores) and their entries in q
            (spanning) or in the independent positions.
        velocity_source, velocity_index: the entries of a velocity-like array that are read, and
            their entries in v (spanning) or in y (independent).
        used: the names read, in the message's order.
    """

    def __init__(self, independent, position_source, position_index, velocity_source,
                 velocity_index, used):
        self.independent = independent
        self.position_source, self.position_index, self.velocity_source, self.velocity_index = (
            np.asarray(x, dtype=int) for x in (position_source, position_index, velocity_source,
                                               velocity_index))
        self.used = tuple(used)


class JointLayout:
    """Maps JointState name lists and base messages of one model to the library's vectors.

    A request's ``state.name`` takes either of two forms, in any order, never with the floating
    joint (it comes from the base fields): every spanning joint, or the stream's form (as
    joint_states): every actuated joint, any passive one (Model.passive_joint_names, else at the
    reference configuration's position and at rest), other names (dependent joints, joints the
    model lacks) ignored.
    """

    def __init__(self, model):
        self.model = model
        body = {name: i + 1 for i, name in enumerate(model.joint_names)}
        floating = model.floating_joint_names
        if len(floating) > 1:
            raise ModelError(f'the model has {len(floating)} floating joints {list(floating)}; '
                             'the node supports one floating base')
        self.base_joint = model.floating_base_joint or None
        # joints a JointState cannot carry (several values, one per name: spherical, planar; the
        # joint-type table's carried) are taken only as dependent joints of loops, which the node
        # completes, or as split joints with one free column (a rod's idle spin: its rate is the
        # joint's independent velocity, its position completed)
        completed = [n for n in model.joint_names
                     if n != self.base_joint and not TYPES[model.joint_type[body[n]]].carried]
        y_of = {int(v): y for y, v in enumerate(model.independent_v)}
        # y entries of each joint
        y_columns = {n: [y_of[v] for v in range(model.idx_v[body[n]],
                                                model.idx_v[body[n]] + model.nv_body[body[n]])
                         if v in y_of] for n in model.independent_joint_names}
        free = [n for n in completed if y_columns.get(n) and (n not in model.split_joint_names
                                                              or len(y_columns[n]) > 1)]
        if free:
            raise ModelError(f'{model.joint_type[body[free[0]]]} joint {free[0]!r} has '
                             'independent coordinates: a JointState carries one value per joint, '
                             'so the node takes spherical and planar joints only as dependent '
                             'joints of loops or split with one free direction (it has '
                             f'{len(y_columns[free[0]])})')
        self.completed = tuple(completed)
        self.joint_names = tuple(n for n in model.joint_names
                                 if n != self.base_joint and n not in completed)
        self.independent_names = tuple(n for n in model.independent_joint_names
                                       if n != self.base_joint)
        self.actuated_names = tuple(model.actuated_joint_names)
        self.q_index = {n: int(model.idx_q[body[n]]) for n in model.joint_names}
        self.v_index = {n: int(model.idx_v[body[n]]) for n in model.joint_names}
        self.y_index = model.independent_velocities_index
        self.qi_index = {n: start for n, (start, _) in model.independent_positions_index.items()}
        self.nqi = model.independent_q.size
        # independent positions of the reference configuration, the base at the identity
        self.reference_qi = model.reference_positions[model.independent_q]
        self.set_base_pose(self.reference_qi, self.qi_index)
        self._joints_v = np.array([self.v_index[n] for n in self.joint_names], dtype=int)
        # entries of independent_names in y
        self.independent_y = np.array([self.y_index[n] for n in self.independent_names],
                                      dtype=int)
        self._selections, self._independent_selections = {}, {}

    @property
    def floating(self):
        """True when the model has a floating base."""
        return self.base_joint is not None

    def select(self, names):
        """The Selection of a request's state.name (cached per distinct name list); raises
        ModelError unless it is one of the two forms (class docstring)."""
        return _cached(self._selections, tuple(names), self._selection)

    def _selection(self, names):
        if self.base_joint in names:
            raise ModelError(f'state.name lists the floating joint {self.base_joint!r}, which the '
                             'base fields give (base_pose, base_twist, ...)')
        known = self.known_names(names, 'state.name')
        if set(known) == set(self.joint_names):
            used = [(i, n) for i, n in enumerate(names) if n in self.v_index]
            return Selection(False, [i for i, _ in used], [self.q_index[n] for _, n in used],
                             [i for i, _ in used], [self.v_index[n] for _, n in used],
                             [n for _, n in used])
        selection = self.independent_selection(names)
        given = set(selection.used)
        missing = [n for n in self.actuated_names if n not in given]
        if missing:
            ignored = [n for n in names if n not in self.q_index]
            raise ModelError(
                f'state.name misses actuated joint(s) {missing}: name every actuated joint '
                f'{list(self.actuated_names)} (passive ones may be left out: they rest at the '
                'reference configuration; other names are ignored'
                + (f', here {ignored}' if ignored else '')
                + f'), or all {len(self.joint_names)} spanning joints')
        return selection

    def known_names(self, names, field):
        """The names of joints of the model, raising ModelError for one named twice."""
        known = [n for n in names if n in self.q_index]
        if len(set(known)) != len(known):
            raise ModelError(f'{field} lists {repeated(known)} more than once')
        return known

    def independent_selection(self, names):
        """The Selection of the stream's form of names (cached per distinct name list): the
        independent joints' entries read, the positions of all but the split joints (completed),
        every other name ignored; raises ModelError for a joint named twice."""
        return _cached(self._independent_selections, tuple(names), self._independent_selection)

    def _independent_selection(self, names):
        self.known_names(names, 'name')
        used = [(i, n) for i, n in enumerate(names) if n in self.y_index]
        positioned = [(i, n) for i, n in enumerate(names) if n in self.qi_index]
        return Selection(True, [i for i, _ in positioned],
                         [self.qi_index[n] for _, n in positioned], [i for i, _ in used],
                         [self.y_index[n] for _, n in used], [n for _, n in used])

    def positions(self, selection, values, names, base_pose=None):
        """Spanning q (nq) from state.position; independent positions are completed.

        Args:
            selection: the Selection of names.
            values: state.position, one per name.
            names: state.name (for messages).
            base_pose: floating joint positions (7), identity pose if None.
        """
        x = _used_entries(values, 'state.position', names, selection.position_source,
                          required=True)
        out = self.reference_qi.copy() if selection.independent else np.zeros(self.model.nq)
        if not selection.independent or base_pose is not None:
            self.set_base_pose(out, self.qi_index if selection.independent else self.q_index,
                               base_pose)
        if x is not None:
            out[selection.position_index] = x
        if selection.independent:
            return self.model.complete_positions(out)
        # the spherical and planar joints from the loops; the library then checks the given ones
        if self.completed:
            q = self.model.complete_positions(out[self.model.independent_q])
            q[selection.position_index] = x
            return q
        return out

    def velocity_like(self, selection, values, field, names, base=None, forces=False):
        """v (nv) or y (ny) from a velocity, acceleration or effort array of the selection.

        Empty values mean zero for the joints; base (6) fills the floating joint (zero if None).
        With completed (spherical, planar) joints, spanning velocities and accelerations are taken
        by their independent entries (the others follow from the loops); spanning efforts stay
        spanning, zero on the completed joints.
        """
        x = _used_entries(values, field, names, selection.velocity_source)
        out = np.zeros(self.model.ny if selection.independent else self.model.nv)
        index = self.y_index if selection.independent else self.v_index
        self.set_base_motion(out, index, base)
        if x is not None:
            out[selection.velocity_index] = x
        if self.completed and not selection.independent and not forces:
            return out[self.model.independent_v]
        return out

    def set_base_pose(self, out, index, pose=None):
        """Write the floating joint's 7 positions (identity if None) into out, a q or an
        independent-position vector with the layout index (q_index or qi_index)."""
        self._write_base(out, index, IDENTITY_POSE if pose is None else pose)

    def set_base_motion(self, out, index, values=None):
        """Write the floating joint's 6 velocity-like entries (zero if None) into out, a v or a
        y vector with the layout index (v_index or y_index)."""
        self._write_base(out, index, np.zeros(6) if values is None else values)

    def _write_base(self, out, index, values):
        if self.floating:
            start = index[self.base_joint]
            out[start:start + len(values)] = values

    def split_spanning(self, qdd):
        """Spanning accelerations (nv) -> (values of joint_names, floating joint's 6)."""
        return qdd[self._joints_v], self._base_part(qdd, self.v_index)

    def split_independent(self, tau):
        """Independent forces (ny) -> (values of independent_names, floating joint's 6)."""
        return tau[self.independent_y], self._base_part(tau, self.y_index)

    def _base_part(self, x, index):
        if not self.floating:
            return np.zeros(6)
        start = index[self.base_joint]
        return x[start:start + 6]


def _used_entries(values, field, names, source, required=False, names_field='state.name'):
    """The entries at source (checked finite) of a JointState array with one entry per name, or
    None when it is empty and may be."""
    if len(values) == 0 and not (required and names):
        return None
    if len(values) != len(names):
        raise ModelError(f'{field} has {len(values)} entries; expected {len(names)} (one per '
                         f'{names_field}){"" if required else " or none"}')
    x = (np.frombuffer(values, dtype=float) if isinstance(values, array) else
         np.asarray(values, dtype=float).reshape(-1))[source]
    return x if all_finite(x) else finite(x, field, [names[i] for i in source])


def _cached(cache, key, make):
    """cache[key], made by make(key) on first use; the cache is emptied when it holds
    MAX_CACHED_NAME_LISTS entries (a bad publisher cannot grow it)."""
    value = cache.get(key)
    if value is None:
        value = make(key)
        if len(cache) >= MAX_CACHED_NAME_LISTS:
            cache.clear()
        cache[key] = value
    return value


class StreamInput:
    """The latest independent state assembled from joint_states messages.

    Each message updates the independent joints it names (JointLayout.independent_selection);
    names of dependent joints (the constraints complete them) and of joints the model does not have
    (a gripper, a wheel) are ignored, and so are their values, NaN included, as is a split joint's
    position. The others keep their last value. The passive coordinates (Model.passive_joint_names:
    a closure body's spin, a rod's) start at the reference configuration's positions
    (Model.reference_positions) and at rest, and take the values of messages that name them; every
    actuated joint must have been named once before the state is complete (``missing``). Updates
    are staged in a second buffer and kept only by ``commit``, so a message whose computation fails
    leaves the state unchanged.
    """

    def __init__(self, layout):
        self.layout = layout
        self.positions = layout.reference_qi.copy()    # 7 for a floating base
        self.velocities = np.zeros(layout.model.ny)    # independent velocities y
        self.required = frozenset(layout.actuated_names)
        self.received = self._staged_received = frozenset()    # independent joints named so far
        self._staged = (self.positions.copy(), self.velocities.copy())

    def stage(self, names, positions, velocities, base=None):
        """Staged (positions, velocities): the current state updated by one message.

        Args:
            names, positions, velocities: the JointState fields (empty arrays leave values as
                they are).
            base: (pose[7], twist[6]) of a floating base, or None to keep it.

        Raises:
            ModelError: a repeated joint of the model, a length mismatch, a non-finite value of
                an independent joint.
        """
        layout = self.layout
        selection = layout.independent_selection(names)
        qi, y = self._staged
        np.copyto(qi, self.positions)
        np.copyto(y, self.velocities)
        if not self.required <= self.received:
            self._staged_received = self.received.union(selection.used)
        x = _used_entries(positions, 'position', names, selection.position_source,
                          names_field='name')
        if x is not None:
            qi[selection.position_index] = x
        x = _used_entries(velocities, 'velocity', names, selection.velocity_source,
                          names_field='name')
        if x is not None:
            y[selection.velocity_index] = x
        if base is not None:
            layout.set_base_pose(qi, layout.qi_index, base[0])
            layout.set_base_motion(y, layout.y_index, base[1])
        return qi, y

    def missing(self):
        """The actuated joints that no message up to the staged one has named, in the model's
        order."""
        if self.required <= self._staged_received:
            return ()
        return tuple(n for n in self.layout.independent_names
                     if n in self.required - self._staged_received)

    def commit(self):
        """Keep the last staged state (swaps the buffers, no copy)."""
        staged = self._staged
        self._staged = (self.positions, self.velocities)
        self.positions, self.velocities = staged
        self.received = self._staged_received
