"""The fast CDR decoding of JointState and DynamicJointState (dynamics_node/offline/cdr.py)
against mcap_ros2's generic decoder, message by message, on bags the tests write (names in
shuffled order, empty and odd-length fields, several interfaces per joint); a schema that is not
the standard definition and a big-endian payload go to the generic decoder."""

from types import SimpleNamespace

import numpy as np
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from conftest import robot
from dynamics_node.offline import cdr
from test_torques import recording, write_bag


def _same(fast, generic):
    """fast's fields equal generic's (a decoded message), recursively."""
    for name in generic.__slots__:
        a, b = getattr(fast, name), getattr(generic, name)
        if hasattr(b, '__slots__'):
            _same(a, b)
        elif isinstance(b, list) and b and hasattr(b[0], '__slots__'):
            assert len(a) == len(b)
            for x, y in zip(a, b):
                _same(x, y)
        else:
            assert list(np.atleast_1d(a)) == list(np.atleast_1d(b)) or a == b, (name, a, b)


def test_fast_decoding_equals_the_generic_one(tmp_path, rng):
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, _ = recording(model, rng)
    for velocities in (yd, None):                 # a field empty in every message, or not
        write_bag(tmp_path / 'run.mcap', t_ns[:40], names, Q, model, velocities, ydd,
                  shuffle=rng, efforts=None if velocities is None else ydd)
        factory, checked = DecoderFactory(), 0
        with open(tmp_path / 'run.mcap', 'rb') as stream:
            for schema, channel, message in make_reader(stream).iter_messages():
                generic = factory.decoder_for(channel.message_encoding, schema)
                fast = cdr.decoder(schema, generic)
                assert fast is not None, schema.name
                _same(fast(message.data), generic(message.data))
                checked += 1
        assert checked == 80


def test_other_schemas_and_big_endian_go_to_the_generic_decoder():
    text = 'std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\n'
    for name, definition in (('sensor_msgs/msg/JointState', text),            # no effort
                             ('sensor_msgs/msg/JointState', text + 'float64[] effort\nint8 x\n'),
                             ('my_msgs/msg/JointState', text + 'float64[] effort\n')):
        schema = SimpleNamespace(name=name, data=definition.encode())
        assert cdr.decoder(schema, None) is None, definition
    standard = SimpleNamespace(name='sensor_msgs/msg/JointState',
                               data=(text + 'float64[] effort  # N or N m\nuint8 X=1\n').encode())
    seen = []
    decode = cdr.decoder(standard, seen.append)
    decode(b'\x00\x00\x00\x00' + bytes(40))             # CDR_BE: the generic decoder's
    assert len(seen) == 1
