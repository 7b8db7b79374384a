"""Fast decoding of the two messages a recording holds by the thousand: sensor_msgs/JointState and
control_msgs/DynamicJointState, read from their CDR bytes (OMG XCDR1, little endian, as ROS 2
writes them) with struct and NumPy instead of a generic decoder, about ten times faster. A
schema that is not the standard definition, and a payload in big endian, go to the generic
decoder (mcap_ros2's) instead. Alignment is to each field's size, counted from the byte after the
4-byte encapsulation header; a string is its length (with the terminating null) and its bytes."""

from struct import Struct
from types import SimpleNamespace

import numpy as np

HEADER = ('std_msgs/Header header',)
FIELDS = {   # the standard definitions' fields, comments and constants aside
    'sensor_msgs/JointState': HEADER + ('string[] name', 'float64[] position',
                                        'float64[] velocity', 'float64[] effort'),
    'control_msgs/DynamicJointState': HEADER + ('string[] joint_names',
                                                'control_msgs/InterfaceValue[] interface_values')}
INTERFACE_VALUE = ('string[] interface_names', 'float64[] values')
LITTLE_ENDIAN = 1                # the encapsulation kind of CDR_LE (byte 1 of the header)
_UINT32, _TIME = Struct('<I'), Struct('<iI')
_LAST = {}                       # field slot: (its last bytes, their strings), Reader.strings


def decoder(schema, generic):
    """A function bytes -> message of a schema (mcap's Schema) with the standard definition of
    FIELDS, falling back to generic (bytes -> message) for a big-endian payload; else None."""
    name = schema.name.replace('/msg/', '/')            # ROS 2's and the short spelling
    main, parts = _fields(schema.data.decode(errors='replace'))
    if main != FIELDS.get(name) or (name.startswith('control_msgs') and
                                    parts.get('control_msgs/InterfaceValue') != INTERFACE_VALUE):
        return None
    read = _joint_state if name == 'sensor_msgs/JointState' else _dynamic_joint_state

    def decode(data):
        return read(_Reader(data)) if data[1] == LITTLE_ENDIAN else generic(data)
    return decode


def _fields(text):
    """(the main message's fields, {type: its fields} of each 'MSG: type' section) of a ROS 2
    schema text, comments, constants and blank lines dropped."""
    sections, name = {'': []}, ''
    for line in text.splitlines():
        line = line.split('#')[0].strip()
        if line.startswith('MSG:'):
            name = line[4:].strip().replace('/msg/', '/')
            sections[name] = []
        elif line and '=' not in line:
            sections[name].append(' '.join(line.split()))
    return tuple(sections.pop('')), {key: tuple(value) for key, value in sections.items()}


class _Reader:
    """CDR fields read in order from data (bytes with the encapsulation header)."""

    def __init__(self, data):
        self.data, self.at = memoryview(data), 4

    def _align(self, size):
        self.at += -(self.at - 4) % size

    def uint32(self):
        self._align(4)
        value, = _UINT32.unpack_from(self.data, self.at)
        self.at += 4
        return value

    def string(self):
        size = self.uint32()
        text = bytes(self.data[self.at:self.at + size - 1]).decode()
        self.at += size
        return text

    def strings(self, slot):
        """A string[]: the list of the last message's field slot where its bytes are the same
        (a recording repeats its joint names in every message), else decoded."""
        data, start = self.data, self.at + -(self.at - 4) % 4
        raw, texts = _LAST.get(slot, (b'', None))
        if texts is not None and data[start:start + len(raw)] == raw:
            self.at = start + len(raw)
            return texts
        texts = []
        for _ in range(self.uint32()):
            texts.append(self.string())
        _LAST[slot] = (bytes(data[start:self.at]), texts)
        return texts

    def float64s(self):
        count = self.uint32()
        if not count:                  # no element: no padding before one
            return np.zeros(0)
        self._align(8)
        values = np.frombuffer(self.data, '<f8', count, self.at)
        self.at += 8 * count
        return values

    def header(self):
        self._align(4)
        sec, nanosec = _TIME.unpack_from(self.data, self.at)
        self.at += 8
        return SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec),
                               frame_id=self.string())


def _joint_state(reader):
    return SimpleNamespace(header=reader.header(), name=reader.strings('name'),
                           position=reader.float64s(), velocity=reader.float64s(),
                           effort=reader.float64s())


def _dynamic_joint_state(reader):
    header, names = reader.header(), reader.strings('joint_names')
    values = [SimpleNamespace(interface_names=reader.strings(('interfaces', i)),
                              values=reader.float64s()) for i in range(reader.uint32())]
    return SimpleNamespace(header=header, joint_names=names, interface_values=values)
