"""dynamics_offline with contacts (dynamics_node/offline/contacts.py): a floating humanoid standing
on its soles while its arms swing, recorded with the contact sets a gait scheduler publishes
(cluster_dynamics/msg/ContactSet, each from its stamp on) or given with --contacts; the efforts
of the projected inverse dynamics, the contact wrenches on their links (against the equation of
motion, through the links' own Jacobians) and the bag and table written."""

import numpy as np
import pyarrow.parquet as pq
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from mcap_ros2.writer import Writer

from conftest import robot
from dynamics_node import bundled_model, Contact, load_model, ModelError
from dynamics_node.offline import bags, cli
from dynamics_node.offline.contacts import label, parse_contact
from dynamics_node.offline.torques import torques
from bipeds import MODELS
from test_torques import stamps, write_walking_bag

FEET = ('left_foot_sole', 'right_foot_sole')
POSE = "MSG: geometry_msgs/Pose\nPoint position\nQuaternion orientation\n"
CONTACT_SET_DEFINITION = ("std_msgs/Header header\ncluster_dynamics/Contact[] contacts\n"
                          + bags.HEADER_DEFINITIONS + bags.SEPARATOR
                          + """MSG: cluster_dynamics/Contact
string link
string kind
geometry_msgs/Pose placement
string other
geometry_msgs/Pose other_placement
""" + bags.SEPARATOR + POSE + bags.SEPARATOR + "MSG: geometry_msgs/Point\nfloat64 x\nfloat64 y\n"
                          "float64 z\n" + bags.SEPARATOR + "MSG: geometry_msgs/Quaternion\n"
                          "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n")


def standing(model, rng):
    """(stamps, joint positions Q, base poses, yd, ydd) of the humanoid at its reference pose,
    the base and legs still, the arms swinging: a motion that keeps its soles where they are."""
    t_ns = stamps(rng)
    t = (t_ns - t_ns[0]) * 1e-9
    base = model.floating_base_joint
    arms = [n for n in model.independent_joint_names if 'shoulder' in n or 'elbow' in n]
    reference = model.reference_positions
    pose = reference[:7]
    joints = {n: reference[model.idx_q[model.joint_names.index(n) + 1]]
              for n in model.independent_joint_names if n != base}
    w = 2.0 + 0.7 * np.arange(len(arms))
    yd, ydd = np.zeros((len(t), model.ny)), np.zeros((len(t), model.ny))
    columns = [model.independent_velocities_index[n] for n in arms]
    yd[:, columns] = 0.3 * w * np.cos(w * t[:, None])
    ydd[:, columns] = -0.3 * w**2 * np.sin(w * t[:, None])
    Q = np.array([model.complete_positions({base: pose, **joints, **dict(zip(
        arms, [joints[n] + 0.3 * np.sin(wk * tk) for n, wk in zip(arms, w)]))}) for tk in t])
    return t_ns, Q, np.tile(pose, (len(t), 1)), yd, ydd


def contact_message(contacts):
    """Contact[] of the links (LINK or LINK:KIND, default 6D) held at their origins."""
    identity = {'position': {'x': 0.0, 'y': 0.0, 'z': 0.0},
                'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}
    return [{'link': link.split(':')[0], 'kind': (link.split(':') + ['6D'])[1],
             'placement': identity, 'other': '', 'other_placement': identity}
            for link in contacts]


def add_contact_sets(path, sets):
    """The bag at path with ContactSet messages (stamp, links held by 6D contacts) appended on
    cli.CONTACTS_TOPIC (written again: MCAP files are not appended to)."""
    with open(path, 'rb') as stream:
        recorded = [(channel.topic, schema.name, schema.data.decode(), message.log_time, decoded)
                    for schema, channel, message, decoded in make_reader(
                        stream, decoder_factories=[DecoderFactory()]).iter_decoded_messages()]
    with open(path, 'wb') as file:
        writer = Writer(file)
        schemas = {}
        for topic, name, text, stamp, decoded in recorded:
            schema = schemas.setdefault(name, writer.register_msgdef(name, text))
            writer.write_message(topic, schema, _plain(decoded), log_time=stamp)
        contact_set = writer.register_msgdef('cluster_dynamics/ContactSet', CONTACT_SET_DEFINITION)
        for stamp, links in sets:
            writer.write_message(cli.CONTACTS_TOPIC, contact_set, {
                'header': {'stamp': {'sec': int(stamp) // 10**9, 'nanosec': int(stamp) % 10**9},
                           'frame_id': ''}, 'contacts': contact_message(links)},
                log_time=int(stamp))
        writer.finish()


def _plain(decoded):
    """A decoded message as the writer's dictionaries and lists."""
    if isinstance(decoded, list):
        return [_plain(x) for x in decoded]
    if hasattr(decoded, '__slots__'):
        return {name: _plain(getattr(decoded, name)) for name in decoded.__slots__}
    return decoded


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """The humanoid's bag with its contact sets: both soles, then (a set of an unknown link and
    a message that is no contact set dropped on the way) the left one, then none; the model and
    the motion."""
    model = robot('humanoid_belts')
    rng = np.random.default_rng(7)
    t_ns, Q, poses, yd, ydd = standing(model, rng)
    path = tmp_path_factory.mktemp('standing') / 'stand.mcap'
    write_walking_bag(path, model, t_ns, Q, poses, yd, ydd)
    n = len(t_ns)
    phases = [(t_ns[0], FEET), (t_ns[n // 3], FEET[:1]), (t_ns[n // 2], ('no_such_link',)),
              (t_ns[n // 2 + 9], ('left_foot_sole:XD',)), (t_ns[2 * n // 3], ())]
    add_contact_sets(path, phases)
    held = np.searchsorted([t_ns[0], t_ns[n // 3], t_ns[2 * n // 3]], t_ns, side='right') - 1
    sets = [[Contact(link, '6D') for link in links] for links in (FEET, FEET[:1], ())]
    return model, path, t_ns, Q, yd, ydd, [sets[k] for k in held]


def test_recorded_contact_sets_give_the_projected_inverse_dynamics(recording):
    """Each state's efforts are inverse_dynamics with the contacts its set holds (none: the
    plain inverse dynamics, the base's wrench what the environment applies), to 1e-9; the contact
    wrenches on the links close the equation of motion: the plain inverse dynamics equals the
    efforts plus the sum of J_link^T w_link over the contacts held."""
    model, path, t_ns, Q, yd, ydd, held = recording
    states = bags.read_joint_states(path, odometry_topic='/odom',
                                    contacts_topic=cli.CONTACTS_TOPIC)
    result = torques(model, states)
    assert result.motion.dropped == {'contact sets': 2}
    assert len(result.stamps) == len(t_ns)
    base = model.independent_velocities_index[model.floating_base_joint]
    columns = [model.independent_velocities_index[n] for n in result.names]
    for row in range(0, len(t_ns), 7):
        expected = model.inverse_dynamics(Q[row], yd[row], ydd[row], contacts=held[row] or None)
        assert np.max(np.abs(result.efforts[row] - expected[columns])) < 1e-9 * max(
            1.0, np.max(np.abs(expected)))
        plain = model.inverse_dynamics(Q[row], yd[row], ydd[row])
        closing = expected + sum((model.link_jacobian(Q[row], c.link).T
                                  @ result.contact_wrenches[label(c)][row] for c in held[row]),
                                 np.zeros(model.ny))
        assert np.max(np.abs(closing - plain)) < 1e-8 * max(1.0, np.max(np.abs(plain)))
        for foot in FEET:
            assert np.isnan(result.contact_wrenches[foot][row]).all() == (
                foot not in [c.link for c in held[row]])
        base_wrench = np.zeros(6) if held[row] else plain[base:base + 6]
        assert np.max(np.abs(result.base_wrench[row] - base_wrench)) < 1e-8 * max(
            1.0, np.max(np.abs(plain)))
    assert np.max(result.corrections) < 1e-9, 'the motion keeps the contacts'


def test_windows_join_the_contact_wrenches(recording):
    """In windows of 100 states (offline/scale.py), the contact wrenches, corrections and
    efforts join those of the whole recording (within the completion's tolerance: each window
    completes from a cold start) and the contact sets' drops are counted once."""
    from pathlib import Path
    from dynamics_node.offline import scale
    model, path, t_ns, *_ = recording
    states = bags.read_joint_states(path, odometry_topic='/odom',
                                    contacts_topic=cli.CONTACTS_TOPIC)
    whole = torques(model, states)
    text = Path(bundled_model('humanoid_belts')).read_text(encoding='utf-8')
    windows = scale.torques(text, {'stand': states}, window_states=100)['stand']
    assert windows.motion.dropped == whole.motion.dropped == {'contact sets': 2}
    np.testing.assert_allclose(windows.efforts, whole.efforts, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(windows.corrections, whole.corrections, atol=1e-9)
    assert windows.contact_wrenches.keys() == whole.contact_wrenches.keys()
    for name, W in whole.contact_wrenches.items():
        np.testing.assert_allclose(windows.contact_wrenches[name], W, rtol=1e-9, atol=1e-9)


def test_console_script_writes_the_node_topics(recording, tmp_path, capsys):
    """Efforts, completed joint states and a WrenchStamped per contact held, on the node's
    topics; the table's contact columns null where the contact does not hold."""
    model, path, t_ns, Q, yd, ydd, held = recording
    out = tmp_path / 'out.mcap'
    cli.main(['torques', str(path), '--robot', bundled_model('humanoid_belts'), '--odometry',
              '/odom', '--out', str(out)])
    summary = capsys.readouterr().out
    assert f'{len(t_ns)} of {len(t_ns)} states answered' in summary
    assert 'dropped: 2 contact sets' in summary
    with open(out, 'rb') as stream:
        messages = [(channel.topic, decoded) for _, channel, _, decoded in make_reader(
            stream, decoder_factories=[DecoderFactory()]).iter_decoded_messages()]
    topics = [topic for topic, _ in messages]
    assert topics.count(cli.TORQUES_TOPIC) == topics.count(cli.COMPLETED_TOPIC) == len(t_ns)
    assert topics.count(cli.WRENCHES_TOPIC) == sum(len(h) for h in held)
    completed = [m for topic, m in messages if topic == cli.COMPLETED_TOPIC]
    knee = completed[0].name.index('left_knee_joint')
    body = model.joint_names.index('left_knee_joint') + 1
    assert completed[5].position[knee] == Q[5][model.idx_q[body]]
    frames = {m.header.frame_id for topic, m in messages if topic == cli.WRENCHES_TOPIC}
    assert frames == set(FEET)
    table = pq.read_table(tmp_path / 'out.parquet')
    force = table.column('contact.left_foot_sole.force.z').to_numpy(zero_copy_only=False)
    assert np.isfinite(force[:2 * len(t_ns) // 3 - 1]).all()
    assert np.isnan(force[2 * len(t_ns) // 3 + 1:]).all()
    assert force[0] > 0.0, 'the ground pushes the sole up'


def test_contacts_option_holds_throughout(recording, tmp_path, capsys):
    """--contacts replaces the bag's sets: both soles at every state."""
    model, path, t_ns, Q, yd, ydd, _ = recording
    cli.main(['torques', str(path), '--robot', bundled_model('humanoid_belts'), '--odometry',
              '/odom', '--contacts', *[f'{foot}:6D' for foot in FEET], '--out',
              str(tmp_path / 'out.mcap')])
    assert 'dropped: none' in capsys.readouterr().out
    table = pq.read_table(tmp_path / 'out.parquet')
    expected = model.inverse_dynamics(Q[-1], yd[-1], ydd[-1],
                                      contacts=[Contact(foot, '6D') for foot in FEET])
    y = model.independent_velocities_index['left_knee_joint']
    assert abs(table.column('left_knee_joint.effort')[-1].as_py() - expected[y]) < 1e-9 * max(
        1.0, np.max(np.abs(expected)))


def test_moving_base_is_corrected_to_the_nearest_motion(recording):
    """Velocities and accelerations that break the contact (the left sole; both soles are a
    singular contact set at this pose, refused): the efforts are those of the nearest motion
    that keeps it (Model.contact_bias_forces with a), the corrections named."""
    model, path, t_ns, Q, yd, ydd, _ = recording
    states = bags.read_joint_states(path, odometry_topic='/odom')
    base = model.independent_velocities_index[model.floating_base_joint]
    states.base_twist[:] = [0.05, 0.0, 0.0, 0.0, 0.0, 0.1]
    feet = [Contact(FEET[0], '6D')]
    result = torques(model, states, contacts=feet)
    assert len(result.stamps) == len(t_ns)
    assert np.min(result.corrections[:, 0]) > 0.01
    row = len(t_ns) // 2
    moving = yd[row].copy()
    moving[base:base + 6] = states.base_twist[row]
    expected = model.contact_bias_forces(Q[row], moving, feet, a=ydd[row])
    J = model.link_jacobian(Q[row], FEET[0])
    assert np.max(np.abs(J @ result.motion.velocities[row])) < 1e-9, 'the sole is held'
    columns = [model.independent_velocities_index[n] for n in result.names]
    assert np.max(np.abs(result.efforts[row] - expected[columns])) < 1e-9 * max(
        1.0, np.max(np.abs(expected)))


@pytest.mark.parametrize('given, message', [
    (['nowhere:6D'], 'unknown link'), (['left_foot_sole:5D'], 'expected LINK:KIND'),
    (['left_foot_sole:3D@1,2'], 'X,Y,Z'),
    (['left_foot_sole:6D', 'left_foot_sole:6D'], 'again')])
def test_contacts_option_refused_by_name(recording, tmp_path, capsys, given, message):
    _, path, *_ = recording
    with pytest.raises(SystemExit) as stop:
        cli.main(['torques', str(path), '--robot', bundled_model('humanoid_belts'), '--odometry',
                  '/odom', '--contacts', *given, '--out', str(tmp_path / 'out.mcap')])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / 'out.mcap').exists()


def test_parse_contact():
    assert parse_contact('foot:3D@0.1,0,-0.02') == Contact('foot', '3D', ((0.1, 0.0, -0.02),
                                                                          (0, 0, 0, 1)))
    assert label(parse_contact('foot:3D@0.1,0,-0.02')) == 'foot@0.1,0,-0.02'
    assert parse_contact('ns:foot:6D') == Contact('ns:foot', '6D')
    with pytest.raises(ModelError, match='expected LINK:KIND'):
        parse_contact('foot')


def test_link_wrenches_of_placed_contacts_close_the_equation_of_motion(recording):
    """A 6D contact frame turned and moved on its link and a 3D point off the link origin: their
    forces, as wrenches on the links (contacts.link_wrench), close the equation of motion."""
    from dynamics_node.offline.contacts import link_wrench
    model, _, _, Q, yd, ydd, _ = recording
    turned = ((0.03, -0.01, 0.02), tuple(np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm(
        [0.1, -0.2, 0.3, 0.9])))
    contacts = [Contact(FEET[0], '6D', turned), parse_contact(f'{FEET[1]}:3D@0.05,0.02,-0.01')]
    row = 11
    info = model.inverse_dynamics(Q[row], yd[row], ydd[row], contacts=contacts, info=True)
    closing = info.efforts + sum(model.link_jacobian(Q[row], c.link).T @ link_wrench(c, f)
                                 for c, f in zip(contacts, info.contact_forces))
    plain = model.inverse_dynamics(Q[row], yd[row], ydd[row])
    assert np.max(np.abs(closing - plain)) < 1e-8 * np.max(np.abs(plain))


def test_identify_a_floating_humanoid_on_its_soles(tmp_path, capsys):
    """The humanoid with other parameters than its file's, on both soles then on the left one,
    arms swinging, its efforts those of the projected inverse dynamics: the base parameters of
    the equations projected onto the contacts' null space to 1e-6, and the identified parameters
    reproduce the efforts; without its contacts a floating base is refused by name."""
    from dynamics_node.offline.contacts import recorded_schedule
    from dynamics_node.offline.identify import identify
    from dynamics_node.offline.torques import motion
    nominal = robot('humanoid_belts')
    rng = np.random.default_rng(11)
    pi = nominal.inertial_parameters * np.repeat(rng.uniform(0.7, 1.3, nominal.nb - 1), 10)
    true = load_model(bundled_model('humanoid_belts'), inertial_parameters=pi)
    t_ns, Q, poses, yd, ydd = standing(nominal, rng)
    n = len(t_ns)
    held = [[Contact(link, '6D') for link in (FEET if i < n // 2 else FEET[:1])]
            for i in range(n)]
    measured = np.array([true.inverse_dynamics(q, v, a, contacts=c)
                         for q, v, a, c in zip(Q, yd, ydd, held)])
    path = tmp_path / 'stand.mcap'
    write_walking_bag(path, nominal, t_ns, Q, poses, yd, ydd, efforts=measured)
    add_contact_sets(path, [(t_ns[0], FEET), (t_ns[n // 2], FEET[:1])])
    states = bags.read_joint_states(path, odometry_topic='/odom',
                                    contacts_topic=cli.CONTACTS_TOPIC)
    used = motion(nominal, states, efforts=True)
    with pytest.raises(ModelError, match='needs its contacts'):
        identify(nominal, used)
    held_sets = recorded_schedule(nominal, states.contact_sets, {})
    result = identify(nominal, used, schedule=held_sets)
    assert result.states == n and result.inconsistent == {}
    np.testing.assert_allclose(result.beta, result.B @ pi, rtol=1e-6, atol=1e-9)
    with_friction = identify(nominal, used, friction=True, schedule=held_sets)
    joints = [name for name in nominal.independent_joint_names
              if name != nominal.floating_base_joint]
    assert with_friction.friction.shape == (len(joints), 2), 'the joints\', not the base\'s'
    np.testing.assert_allclose(with_friction.friction, 0.0, atol=1e-6)
    cli.main(['identify', str(path), '--robot', bundled_model('humanoid_belts'), '--odometry',
              '/odom', '--out', str(tmp_path / 'identified.urdf')])
    assert f'{result.rank} base parameters of' in capsys.readouterr().out
    identified = load_model(str(tmp_path / 'identified.urdf'))
    for i in range(0, n, 29):
        again = identified.inverse_dynamics(Q[i], yd[i], ydd[i], contacts=held[i])
        np.testing.assert_allclose(again, measured[i], rtol=1e-6, atol=1e-6)
    with pytest.raises(SystemExit) as stop:
        cli.main(['identify', str(path), '--robot', bundled_model('humanoid_belts'),
                  '--odometry', '/odom', '--contacts-topic', '/none', '--out',
                  str(tmp_path / 'x.urdf')])
    assert stop.value.code == 2 and 'needs its contacts' in capsys.readouterr().err


# ---- an Extended URDF biped, its floating base only in the user's head ----

BIPED = ('loop_ankle_biped.urdf', 'loop_ankle_biped.yaml')


def biped_recording(model, rng, swing, twist):
    """(stamps, Q, base poses, yd, ydd) of the biped: the actuated joints of swing (names)
    swinging about the reference, the others and the idle spins of its ankle rods at their
    reference positions; the base turning at the constant twist [v 0 0 0 0 w] in its frame (on
    a circle; at rest for zero)."""
    t_ns = stamps(rng)
    t = (t_ns - t_ns[0]) * 1e-9
    base, reference = model.floating_base_joint, model.reference_positions
    speed, yaw = twist
    poses = np.tile(reference[:7], (len(t), 1))
    if yaw:
        poses[:, :2] = np.column_stack([speed / yaw * np.sin(yaw * t),
                                        speed / yaw * (1 - np.cos(yaw * t))])
        poses[:, 3:] = np.column_stack([np.zeros((len(t), 2)), np.sin(yaw * t / 2),
                                        np.cos(yaw * t / 2)])
    angle = {n: reference[model.idx_q[model.joint_names.index(n) + 1]]
             for n in model.actuated_joint_names}
    w = {n: 3.0 + 0.5 * k for k, n in enumerate(swing)}
    yd, ydd = np.zeros((len(t), model.ny)), np.zeros((len(t), model.ny))
    start = model.independent_velocities_index[base]
    yd[:, start:start + 6] = [speed, 0.0, 0.0, 0.0, 0.0, yaw]
    for n in swing:
        yd[:, model.independent_velocities_index[n]] = 0.15 * w[n] * np.cos(w[n] * t)
        ydd[:, model.independent_velocities_index[n]] = -0.15 * w[n] ** 2 * np.sin(w[n] * t)
    Q = np.array([model.complete_positions({base: pose, **{
        n: angle[n] + (0.15 * np.sin(w[n] * tk) if n in w else 0.0) for n in angle}})
        for pose, tk in zip(poses, t)])
    return t_ns, Q, poses, yd, ydd


def test_extended_urdf_biped_with_a_floating_base_and_contacts(tmp_path, capsys):
    """An Extended URDF biped exported without a floating joint (--floating-base), its JointState
    naming the actuated joints only (not its rods' idle spins): its torques walking in the air
    from the odometry, then standing on its left sole with the right leg swinging (--contacts),
    equal the library's to 1e-9."""
    urdf, closures = (str(MODELS / name) for name in BIPED)
    model = load_model(urdf, closures=closures, floating_base=True)
    rng = np.random.default_rng(5)
    actuated = list(model.actuated_joint_names)
    right = [n for n in actuated if n.startswith('right_')]
    cases = [(actuated, (0.3, 0.6), [], None),
             (right, (0.0, 0.0), ['--contacts', 'left_sole:6D'], [Contact('left_sole', '6D')])]
    for swing, twist, option, contacts in cases:
        t_ns, Q, poses, yd, ydd = biped_recording(model, rng, swing, twist)
        path = tmp_path / 'biped.mcap'
        write_walking_bag(path, model, t_ns, Q, poses, yd, ydd, joints=actuated)
        cli.main(['torques', str(path), '--robot', urdf, '--closures', closures,
                  '--floating-base', '--odometry', '/odom', *option, '--out',
                  str(tmp_path / 'out.mcap')])
        assert f'{len(t_ns)} of {len(t_ns)} states answered' in capsys.readouterr().out
        table = pq.read_table(tmp_path / 'out.parquet')
        for row in (0, len(t_ns) // 2, len(t_ns) - 1):
            expected = model.inverse_dynamics(Q[row], yd[row], ydd[row], contacts=contacts)
            for name in actuated:
                effort = table.column(f'{name}.effort')[row].as_py()
                assert abs(effort - expected[model.independent_velocities_index[name]]) < \
                    1e-9 * max(1.0, np.max(np.abs(expected))), (name, row, option)
