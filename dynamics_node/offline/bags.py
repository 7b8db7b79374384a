"""ROS 2 bags without ROS: the sensor_msgs/JointState messages of a recording and the
accelerations that ros2_control's joint_state_broadcaster publishes (control_msgs/msg/
DynamicJointState, an 'acceleration' interface per joint), decoded from the bag's own schemas, from
MCAP files (mcap, mcap-ros2-support) or sqlite3 rosbag2 folders (rosbags); and MCAP output of
JointState messages that ``ros2 bag`` and Foxglove read."""

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import cut, ModelError, quote
from . import cdr

JOINT_STATE = 'sensor_msgs/msg/JointState'
DYNAMIC_JOINT_STATE = 'control_msgs/msg/DynamicJointState'
SEPARATOR = '=' * 80 + '\n'
# the definitions a message with a header ends with (a schema's dependencies, ROS 2 concatenated)
HEADER_DEFINITIONS = (f"""{SEPARATOR}MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
{SEPARATOR}MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
""")
WRENCH_STAMPED = 'geometry_msgs/msg/WrenchStamped'
WRENCH_STAMPED_DEFINITION = ("std_msgs/Header header\ngeometry_msgs/Wrench wrench\n"
                             + HEADER_DEFINITIONS + f"""{SEPARATOR}MSG: geometry_msgs/Wrench
Vector3 force
Vector3 torque
{SEPARATOR}MSG: geometry_msgs/Vector3
float64 x
float64 y
float64 z
""")
JOINT_STATE_DEFINITION = """std_msgs/Header header
string[] name
float64[] position
float64[] velocity
float64[] effort
""" + HEADER_DEFINITIONS


@dataclass
class JointStates:
    """A recording's joint states: stamps (N, nanoseconds), the joints' names, positions,
    velocities and efforts (N x n, or None where a message lacks them), accelerations (N x n from
    DynamicJointState at the same stamps, NaN for a joint it does not give, or None without it),
    the messages dropped, by reason, and with odometry the floating base's pose (N x 7: x y z qx
    qy qz qw) and twist (N x 6: [linear; angular] in the base frame) at the stamps."""
    stamps: np.ndarray
    names: tuple
    positions: np.ndarray
    velocities: np.ndarray = None
    efforts: np.ndarray = None
    accelerations: np.ndarray = None
    dropped: dict = None
    base_pose: np.ndarray = None
    base_twist: np.ndarray = None
    contact_sets: list = None


def read_joint_states(path, topic='/joint_states', accelerations_topic='/dynamic_joint_states',
                      odometry_topic=None, contacts_topic=None):
    """The JointStates of the bag at path (an .mcap file, or a rosbag2 folder or its .mcap / .db3
    file): the messages on topic that name the joints most messages name (in any order; others are
    dropped as 'names', and those with a field of another length than 0 or theirs as 'length'),
    stamped by their headers (the bag's log time where a header is zero), in stamp order. With
    odometry_topic, the nav_msgs/Odometry messages on it give the base's pose and twist,
    interpolated at each stamp (the orientation normalized after a linear interpolation); the
    states outside their span are dropped as 'odometry'. With contacts_topic, its
    cluster_dynamics/msg/ContactSet messages give contact_sets, (stamp, [Contact]) in stamp order
    (None where the bag has none; (stamp, None) for a message that is no contact set)."""
    topics = {topic, accelerations_topic} | {t for t in (odometry_topic, contacts_topic) if t}
    messages = list(_messages(path, topics))
    states = [(stamp, msg) for name, stamp, msg in messages if name == topic]
    if not states:
        raise ModelError(f'the bag {quote(str(path))} has no message on {quote(topic)}')
    sets = Counter(frozenset(msg.name) for _, msg in states)
    common = max(sets, key=sets.get)                    # the earliest of the most common sets
    names = next(tuple(msg.name) for _, msg in states if frozenset(msg.name) == common)
    if not names or len(common) != len(names):
        raise ModelError(f'the messages on {topic} name the joints {quote(names)}; expected '
                         'distinct names')
    dropped, rows = {}, []
    for stamp, msg in states:
        order = _order(names, msg.name)
        fields = [np.asarray(getattr(msg, f), dtype=float) for f in ('position', 'velocity',
                                                                     'effort')]
        if order is None or any(len(x) not in (0, len(names)) for x in fields):
            reason = 'names' if order is None else 'length'
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        rows.append((stamp, [x[order] if len(x) else None for x in fields]))
    rows.sort(key=lambda row: row[0])
    stamps = np.array([stamp for stamp, _ in rows], dtype=np.int64)
    columns = [None if any(row[1][k] is None for row in rows)
               else np.array([row[1][k] for row in rows]) for k in range(3)]
    accelerations = _accelerations(names, stamps, [(stamp, msg) for name, stamp, msg in messages
                                                   if name == accelerations_topic])
    sets = _contact_sets([(stamp, msg) for name, stamp, msg in messages if name == contacts_topic])
    if not odometry_topic:
        return JointStates(stamps, names, *columns, accelerations, dropped, contact_sets=sets)
    odometry = sorted((stamp, msg) for name, stamp, msg in messages if name == odometry_topic)
    if not odometry:
        raise ModelError(f'the bag has no message on {quote(odometry_topic)} (nav_msgs/Odometry)')
    pose, twist, inside = _base(stamps, odometry)
    if not inside.all():
        dropped['odometry'] = int(np.sum(~inside))
    keep = (lambda x: None if x is None else x[inside])
    return JointStates(stamps[inside], names, *(keep(x) for x in columns), keep(accelerations),
                       dropped, pose[inside], twist[inside], sets)


def _contact_sets(messages):
    """(stamp, [Contact]) of the (stamp, ContactSet) messages, in stamp order, or None without
    any; (stamp, None) for a message that is no valid set."""
    from ..ros.conversions import contacts_from_msgs
    sets = []
    for stamp, msg in sorted(messages, key=lambda pair: pair[0]):
        try:
            sets.append((stamp, contacts_from_msgs(msg.contacts) or []))
        except (ModelError, AttributeError, TypeError):
            sets.append((stamp, None))
    return sets or None


def _base(stamps, odometry):
    """(pose N x 7, twist N x 6, inside N) of the base at stamps from the (stamp, Odometry)
    pairs in stamp order: linear between the two around each stamp, the quaternion of the later
    one on the side of the earlier one's, then normalized; inside where the odometry spans the
    stamp."""
    times = np.array([stamp for stamp, _ in odometry], dtype=np.int64)
    poses = np.array([[p.position.x, p.position.y, p.position.z, p.orientation.x,
                       p.orientation.y, p.orientation.z, p.orientation.w]
                      for p in (msg.pose.pose for _, msg in odometry)], dtype=float)
    twists = np.array([[t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                        t.angular.z] for t in (msg.twist.twist for _, msg in odometry)],
                      dtype=float)
    inside = (stamps >= times[0]) & (stamps <= times[-1])
    after = np.minimum(np.searchsorted(times, stamps), len(times) - 1)   # the first not earlier
    before = np.where(times[after] == stamps, after, np.maximum(after - 1, 0))
    span = (times[after] - times[before]).astype(float)
    alpha = np.where(span > 0.0, (stamps - times[before]) / np.maximum(span, 1.0), 1.0)[:, None]
    q0, q1 = poses[before, 3:], poses[after, 3:]
    q1 = np.where(np.sum(q0 * q1, axis=1, keepdims=True) < 0.0, -q1, q1)
    pose = np.hstack([(1 - alpha) * poses[before, :3] + alpha * poses[after, :3],
                      (1 - alpha) * q0 + alpha * q1])
    with np.errstate(invalid='ignore', divide='ignore'):
        pose[:, 3:] /= np.linalg.norm(pose[:, 3:], axis=1, keepdims=True)
    return pose, (1 - alpha) * twists[before] + alpha * twists[after], inside


def _order(names, given):
    """The indices that put the entries of a message naming given in the order of names, or None
    where it names other joints."""
    index = {name: i for i, name in enumerate(given)}
    if len(index) != len(names) or any(name not in index for name in names):
        return None
    return np.array([index[name] for name in names], dtype=int)


def _accelerations(names, stamps, messages):
    """The 'acceleration' interface values of names at each of stamps (NaN for a joint the
    DynamicJointState messages do not give) from the messages with the same header stamps, else
    None."""
    by_stamp = {}
    for stamp, msg in messages:
        values = {}
        for joint, interfaces in zip(msg.joint_names, msg.interface_values):
            for interface, value in zip(interfaces.interface_names, interfaces.values):
                if interface == 'acceleration':
                    values[joint] = value
        by_stamp[stamp] = [values.get(name, np.nan) for name in names]
    if not by_stamp or any(int(stamp) not in by_stamp for stamp in stamps):
        return None
    return np.array([by_stamp[int(stamp)] for stamp in stamps], dtype=float)


def _messages(path, topics):
    """(topic, stamp ns, decoded message) of the bag's messages on topics."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob('*.mcap')) or [path]
    elif path.is_file():
        files = [path.parent] if path.suffix == '.db3' else [path]
    else:
        raise ModelError(f'no bag at {quote(str(path))}')
    for file in files:
        yield from (_mcap if file.suffix == '.mcap' else _sqlite)(file, topics)


def _stamp(msg, log_time):
    header = getattr(msg, 'header', None)
    stamp = header.stamp.sec * 1_000_000_000 + header.stamp.nanosec if header else 0
    return stamp or log_time


def _mcap(file, topics):
    """The messages on topics of an MCAP file, JointState and DynamicJointState by cdr.py, the
    others by mcap_ros2's decoder."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    factory, decoders = DecoderFactory(), {}
    try:
        with open(file, 'rb') as stream:
            for schema, channel, message in make_reader(stream).iter_messages(
                    topics=topics, log_time_order=False):       # the callers order by stamp
                decode = decoders.get(schema.id)
                if decode is None:
                    generic = factory.decoder_for(channel.message_encoding, schema)
                    decode = decoders[schema.id] = (
                        channel.message_encoding == 'cdr' and cdr.decoder(schema, generic)
                        or generic)
                decoded = decode(message.data)
                yield channel.topic, _stamp(decoded, message.log_time), decoded
    except Exception as error:      # a damaged file: mcap's, zstd's, lz4's, the decoder's errors
        raise ModelError(f'cannot read the MCAP bag {quote(str(file))}: '
                         f'{type(error).__name__}: {cut(error)}') from None


def _sqlite(folder, topics):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_types_from_msg, Stores, get_typestore
    typestore = get_typestore(Stores.LATEST)
    try:
        with Reader(folder) as reader:
            connections = [c for c in reader.connections if c.topic in topics]
            for connection in connections:
                if connection.msgtype not in typestore.fielddefs and connection.msgdef.data:
                    typestore.register(get_types_from_msg(connection.msgdef.data,
                                                          connection.msgtype))
            for connection, log_time, raw in reader.messages(connections=connections):
                msg = typestore.deserialize_cdr(raw, connection.msgtype)
                yield connection.topic, _stamp(msg, log_time), msg
    except Exception as error:      # rosbags' errors have no common base (sqlite's, the CDR's)
        raise ModelError(f'cannot read the rosbag2 folder {quote(str(folder))}: '
                         f'{type(error).__name__}: {cut(error)}') from None


def write_bag(path, stamps, joint_states=(), wrenches=()):
    """An MCAP bag at path that ``ros2 bag`` and Foxglove read, per stamp (ns) one message of each
    stream, stamped with it: joint_states (topic, names, positions, velocities, efforts) of
    sensor_msgs/JointState, each array N x len(names) or None; wrenches (topic, frame_id, W) of
    geometry_msgs/WrenchStamped, W N x 6 ([force; torque]), its NaN rows not written."""
    from mcap_ros2.writer import Writer
    with open(path, 'wb') as file:
        writer = Writer(file)
        state = writer.register_msgdef(JOINT_STATE.replace('/msg/', '/'), JOINT_STATE_DEFINITION)
        wrench = writer.register_msgdef(WRENCH_STAMPED.replace('/msg/', '/'),
                                        WRENCH_STAMPED_DEFINITION) if wrenches else None
        for i, stamp in enumerate(stamps):
            stamp = int(stamp)
            time = {'sec': stamp // 1_000_000_000, 'nanosec': stamp % 1_000_000_000}
            for topic, names, *arrays in joint_states:
                position, velocity, effort = ([] if x is None else x[i].tolist() for x in arrays)
                writer.write_message(topic, state, {
                    'header': {'stamp': time, 'frame_id': ''}, 'name': list(names),
                    'position': position, 'velocity': velocity, 'effort': effort},
                    log_time=stamp, publish_time=stamp)
            for topic, frame, W in wrenches:
                if np.isnan(W[i]).any():
                    continue
                force, torque = (dict(zip('xyz', W[i][k:k + 3].tolist())) for k in (0, 3))
                writer.write_message(topic, wrench, {
                    'header': {'stamp': time, 'frame_id': frame},
                    'wrench': {'force': force, 'torque': torque}},
                    log_time=stamp, publish_time=stamp)
        writer.finish()
