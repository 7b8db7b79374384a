"""dynamics_offline (dynamics_node/offline): the Savitzky-Golay derivatives on uneven stamps, the
bags read without ROS (MCAP and sqlite3, JointState and DynamicJointState accelerations, written by
the tests themselves) and the torques along a recorded motion of a loop robot, from the library and
the console script: the known torques to 1e-9 where the bag holds the accelerations, within the
filter's stated bound where they are estimated."""

import numpy as np
import pyarrow.parquet as pq
import pytest
from mcap_ros2.writer import Writer

from conftest import robot
from dynamics_node import bundled_extended_urdf, bundled_model, load_model, ModelError
from dynamics_node.offline import bags, cli
from dynamics_node.offline.filters import derivatives
from dynamics_node.offline.identify import identify
from dynamics_node.offline.torques import motion, torques

RATE, SECONDS = 1000.0, 0.6               # the recording: 1 kHz with jitter, 600 states
FILTERED_RTOL = 1e-4                      # |tau - tau_known| / max(1, |tau_known|) inside
EDGE_RTOL = 1e-2                          # within half a window of the ends
DYNAMIC_JOINT_STATE_DEFINITION = """std_msgs/Header header
string[] joint_names
control_msgs/InterfaceValue[] interface_values
""" + bags.SEPARATOR + """MSG: control_msgs/InterfaceValue
string[] interface_names
float64[] values
""" + bags.HEADER_DEFINITIONS
ODOMETRY_DEFINITION = """std_msgs/Header header
string child_frame_id
geometry_msgs/PoseWithCovariance pose
geometry_msgs/TwistWithCovariance twist
""" + bags.HEADER_DEFINITIONS + "".join(
    f"{bags.SEPARATOR}MSG: geometry_msgs/{text}\n" for text in (
        "PoseWithCovariance\nPose pose\nfloat64[36] covariance",
        "Pose\nPoint position\nQuaternion orientation",
        "Point\nfloat64 x\nfloat64 y\nfloat64 z",
        "Quaternion\nfloat64 x\nfloat64 y\nfloat64 z\nfloat64 w",
        "TwistWithCovariance\nTwist twist\nfloat64[36] covariance",
        "Twist\nVector3 linear\nVector3 angular",
        "Vector3\nfloat64 x\nfloat64 y\nfloat64 z"))


def stamps(rng, n=int(RATE * SECONDS)):
    """n increasing stamps (ns) at RATE with +-20 % jitter."""
    step = 1e9 / RATE
    return (1_700_000_000 * 10**9 + np.cumsum(step * (1.0 + 0.4 * (rng.random(n) - 0.5)))
            ).astype(np.int64)


def swing(model, t):
    """Independent positions, velocities, accelerations (N x ny) of a smooth motion about the
    reference configuration at times t (s)."""
    y0 = model.reference_positions[model.independent_q]
    w, phase, amplitude = 3.0 + 2.0 * np.arange(model.ny), 0.4, 0.2
    s = w * t[:, None] + phase
    return (y0 + amplitude * np.sin(s), amplitude * w * np.cos(s), -amplitude * w**2 * np.sin(s))


def recording(model, rng):
    """(stamps, the joint states' names, q rows, yd, ydd, the known torques)."""
    t_ns = stamps(rng)
    t = (t_ns - t_ns[0]) * 1e-9
    y, yd, ydd = swing(model, t)
    names = model.independent_joint_names
    Q = np.array([model.complete_positions(dict(zip(names, row))) for row in y])
    known = np.array([model.inverse_dynamics(q, v, a) for q, v, a in zip(Q, yd, ydd)])
    return t_ns, names, Q, yd, ydd, known


def write_bag(path, t_ns, names, Q, model, yd=None, ydd=None, shuffle=None, efforts=None):
    """An MCAP bag of JointState (every joint of the file, positions; velocities and the
    independent joints' efforts, zero on the others, where given) and, with ydd, DynamicJointState
    accelerations of the independent joints."""
    joints = model.joint_names
    with open(path, 'wb') as file:
        writer = Writer(file)
        state = writer.register_msgdef('sensor_msgs/JointState', bags.JOINT_STATE_DEFINITION)
        dynamic = writer.register_msgdef('control_msgs/DynamicJointState',
                                         DYNAMIC_JOINT_STATE_DEFINITION)
        for i, stamp in enumerate(t_ns):
            header = {'stamp': {'sec': int(stamp) // 10**9, 'nanosec': int(stamp) % 10**9},
                      'frame_id': ''}
            order = np.arange(len(joints))
            if shuffle is not None:
                shuffle.shuffle(order)
            velocity, effort = ([] if x is None else [
                x[i][names.index(joints[j])] if joints[j] in names else 0.0 for j in order]
                for x in (yd, efforts))
            writer.write_message('/joint_states', state, {
                'header': header, 'name': [joints[j] for j in order],
                'position': Q[i][order].tolist(), 'velocity': velocity, 'effort': effort},
                log_time=int(stamp))
            if ydd is not None:
                values = [{'interface_names': ['position', 'acceleration'],
                           'values': [0.0, float(a)]} for a in ydd[i]]
                writer.write_message('/dynamic_joint_states', dynamic, {
                    'header': header, 'joint_names': list(names), 'interface_values': values},
                    log_time=int(stamp))
        writer.finish()


# ---- filters ----

def test_filter_is_exact_on_polynomials_of_its_order(rng):
    t = np.sort(rng.uniform(0.0, 1.0, 200))
    coefficients = rng.normal(size=(4, 2))
    y = np.stack([np.polyval(c, t) for c in coefficients.T], axis=1)
    yd, ydd = derivatives(t, y, window=11, order=3)
    for k, c in enumerate(coefficients.T):
        np.testing.assert_allclose(yd[:, k], np.polyval(np.polyder(c), t), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(ydd[:, k], np.polyval(np.polyder(c, 2), t), rtol=1e-8,
                                   atol=1e-8)


@pytest.mark.parametrize('window, order, n, message', [
    (10, 3, 50, 'filter window is 10'), (3, 3, 50, 'filter window is 3'),
    (11, 1, 50, 'filter order is 1'), (11, 3, 8, '8 samples; the filter window needs')])
def test_filter_refuses_by_name(window, order, n, message):
    with pytest.raises(ModelError, match=message):
        derivatives(np.arange(n, dtype=float), np.zeros((n, 1)), window, order)
    with pytest.raises(ModelError, match='stamps must increase strictly'):
        derivatives(np.r_[0.0, 1.0, 1.0, np.arange(3, 30)], np.zeros((30, 1)))


# ---- bags ----

def test_mcap_and_sqlite_bags_read_alike(tmp_path, rng):
    from rosbags.rosbag2 import Writer as SqliteWriter
    from rosbags.typesys import Stores, get_typestore
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, _ = recording(model, rng)
    write_bag(tmp_path / 'run.mcap', t_ns[:30], names, Q, model, yd, ydd, shuffle=rng)
    from_mcap = bags.read_joint_states(tmp_path / 'run.mcap')
    assert sorted(from_mcap.names) == sorted(model.joint_names) and from_mcap.dropped == {}
    columns = [from_mcap.names.index(name) for name in model.joint_names]
    np.testing.assert_array_equal(from_mcap.stamps, t_ns[:30])
    np.testing.assert_array_equal(from_mcap.positions[:, columns], Q[:30])
    independent = [from_mcap.names.index(name) for name in names]
    np.testing.assert_array_equal(from_mcap.accelerations[:, independent], ydd[:30])
    assert np.isnan(np.delete(from_mcap.accelerations, independent, axis=1)).all()
    typestore = get_typestore(Stores.LATEST)
    JointState = typestore.types['sensor_msgs/msg/JointState']
    Header, Time = typestore.types['std_msgs/msg/Header'], typestore.types[
        'builtin_interfaces/msg/Time']
    with SqliteWriter(tmp_path / 'sqlite', version=9) as writer:
        connection = writer.add_connection('/joint_states', JointState.__msgtype__,
                                           typestore=typestore)
        for i, stamp in enumerate(t_ns[:30]):
            msg = JointState(Header(Time(int(stamp) // 10**9, int(stamp) % 10**9), ''),
                             list(model.joint_names), Q[i], np.zeros(0), np.zeros(0))
            writer.write(connection, int(stamp), typestore.serialize_cdr(msg,
                                                                         JointState.__msgtype__))
        other = JointState(Header(Time(1, 0), ''), ['elsewhere'], np.zeros(1), np.zeros(0),
                           np.zeros(0))
        writer.write(connection, 10**9, typestore.serialize_cdr(other, JointState.__msgtype__))
    from_sqlite = bags.read_joint_states(tmp_path / 'sqlite')
    assert from_sqlite.dropped == {'names': 1} and from_sqlite.velocities is None
    np.testing.assert_array_equal(from_sqlite.positions, Q[:30])
    np.testing.assert_array_equal(from_sqlite.stamps, t_ns[:30])


def test_unreadable_bags_are_named(tmp_path):
    with pytest.raises(ModelError, match='no bag at'):
        bags.read_joint_states(tmp_path / 'missing.mcap')
    (tmp_path / 'broken.mcap').write_bytes(b'\x89MCAP0\r\n' + b'garbage' * 10)
    with pytest.raises(ModelError, match='cannot read the MCAP bag'):
        bags.read_joint_states(tmp_path / 'broken.mcap')


# ---- torques ----

def test_recorded_accelerations_give_the_known_torques(tmp_path, rng):
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, known = recording(model, rng)
    write_bag(tmp_path / 'run.mcap', t_ns, names, Q, model, yd, ydd, shuffle=rng)
    result = torques(model, bags.read_joint_states(tmp_path / 'run.mcap'), threads=2)
    assert result.motion.filtered == () and result.motion.dropped == {}
    np.testing.assert_allclose(result.efforts, known, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize('measured', ('positions', 'positions and velocities'))
def test_filtered_derivatives_keep_the_stated_bound(tmp_path, rng, measured):
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, known = recording(model, rng)
    write_bag(tmp_path / 'run.mcap', t_ns, names, Q, model,
              yd if measured != 'positions' else None)
    result = torques(model, bags.read_joint_states(tmp_path / 'run.mcap'))
    assert 'accelerations' in result.motion.filtered
    error = np.max(np.abs(result.efforts - known) / np.maximum(1.0, np.abs(known)), axis=1)
    edge = 21 // 2
    assert np.max(error[edge:-edge]) < FILTERED_RTOL, np.max(error[edge:-edge])
    assert np.max(error) < EDGE_RTOL, np.max(error)


def test_console_script_writes_bag_and_table(tmp_path, rng, capsys):
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, known = recording(model, rng)
    write_bag(tmp_path / 'run.mcap', t_ns, names, Q, model, yd, ydd)
    cli.main(['torques', str(tmp_path / 'run.mcap'), '--robot', bundled_model('linkage_leg'),
              '--out', str(tmp_path / 'out.mcap')])
    summary = capsys.readouterr().out
    assert f'{len(t_ns)} of {len(t_ns)} states answered' in summary and 'dropped: none' in summary
    written = bags.read_joint_states(tmp_path / 'out.mcap', cli.TORQUES_TOPIC)
    assert written.names == names
    np.testing.assert_array_equal(written.stamps, t_ns)
    np.testing.assert_allclose(written.efforts, known, rtol=1e-9, atol=1e-9)
    table = pq.read_table(tmp_path / 'out.parquet')
    np.testing.assert_array_equal(table.column('stamp').to_numpy(), t_ns)
    np.testing.assert_array_equal(table.column(f'{names[0]}.effort').to_numpy(),
                                  written.efforts[:, 0])


def test_extended_urdf_robot(tmp_path, rng, capsys):
    """An Extended URDF leg (URDF + YAML closures: --closures), with its accelerations recorded."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    model = load_model(urdf, closures=closures)
    t_ns, names, Q, yd, ydd, known = recording(model, rng)
    write_bag(tmp_path / 'leg.mcap', t_ns, names, Q, model, yd, ydd)
    cli.main(['torques', str(tmp_path / 'leg.mcap'), '--robot', urdf, '--closures', closures,
              '--threads', '2', '--out', str(tmp_path / 'out.mcap')])
    assert f'{len(t_ns)} of {len(t_ns)} states answered' in capsys.readouterr().out
    written = bags.read_joint_states(tmp_path / 'out.mcap', cli.TORQUES_TOPIC)
    np.testing.assert_allclose(written.efforts, known, rtol=1e-9, atol=1e-9)


def test_console_script_refuses_by_name(tmp_path, rng, capsys):
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, _ = recording(model, rng)
    write_bag(tmp_path / 'run.mcap', t_ns[:40], names, Q, model)
    cases = [
        (['torques', str(tmp_path / 'none.mcap'), '--robot', bundled_model('linkage_leg')],
         'no bag at'),
        (['torques', str(tmp_path / 'run.mcap'), '--robot', bundled_model('quadruped_rotors')],
         'needs its odometry'),
        (['torques', str(tmp_path / 'run.mcap'), '--robot', bundled_model('belt_leg')],
         'do not name the actuated joints'),
        (['torques', str(tmp_path / 'run.mcap'), '--robot', bundled_model('linkage_leg'),
          '--window', '8'], 'filter window is 8'),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as stop:
            cli.main(argv + ['--out', str(tmp_path / 'out.mcap')])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_fuzzed_recordings_give_torques_or_model_errors(tmp_path):
    """Seeded garbage in the recorded joint states (non-finite and huge entries, repeated stamps,
    fields of other lengths, joints renamed) and in the bag files: torques of the states the model
    answers (finite), or ModelError; nothing else escapes."""
    fuzz = np.random.default_rng(32)
    model = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, _ = recording(model, fuzz)
    pool = [np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0, 1e9]
    for trial in range(25):
        n = int(fuzz.integers(5, 80))
        rows = np.sort(fuzz.choice(len(t_ns), n, replace=False))
        bad_Q, bad_yd = Q[rows].copy(), yd[rows].copy()
        bad_Q[fuzz.random(bad_Q.shape) < 0.05] = fuzz.choice(pool)
        bad_yd[fuzz.random(bad_yd.shape) < 0.05] = fuzz.choice(pool)
        stamps_ = t_ns[rows].copy()
        if fuzz.random() < 0.3:
            stamps_[int(fuzz.integers(1, n))] = stamps_[0]
        path = tmp_path / f'fuzz{trial}.mcap'
        write_bag(path, stamps_, names, bad_Q, model, bad_yd if fuzz.random() < 0.5 else None,
                  ydd[rows] if fuzz.random() < 0.3 else None, shuffle=fuzz)
        if fuzz.random() < 0.2:
            data = bytearray(path.read_bytes())
            for _ in range(5):
                data[int(fuzz.integers(len(data)))] = int(fuzz.integers(256))
            path.write_bytes(bytes(data))
        try:
            result = torques(model, bags.read_joint_states(path),
                             window=int(fuzz.choice([5, 11, 21])))
        except ModelError:
            continue
        assert np.isfinite(result.efforts).all() and len(result.efforts) == len(result.stamps)


# ---- identification ----

def truth(rng):
    """The linkage leg with each body's parameters scaled (still a rigid body's): (nominal model,
    true model, true parameters)."""
    nominal = robot('linkage_leg')
    scale = np.repeat(rng.uniform(0.7, 1.3, nominal.nb - 1), 10)
    pi = nominal.inertial_parameters * scale
    return nominal, load_model(bundled_model('linkage_leg'), inertial_parameters=pi), pi


def test_identify_recovers_the_base_parameters(tmp_path, rng, capsys):
    """A noise-free recording of the true robot: the base parameters B pi to 1e-6, the written
    URDF+ reproduces the measured torques, from the library and the console script."""
    nominal, true, pi = truth(rng)
    t_ns, names, Q, yd, ydd, _ = recording(true, rng)
    measured = np.array([true.inverse_dynamics(q, v, a) for q, v, a in zip(Q, yd, ydd)])
    write_bag(tmp_path / 'run.mcap', t_ns, names, Q, nominal, yd, ydd, efforts=measured)
    states = bags.read_joint_states(tmp_path / 'run.mcap')
    result = identify(nominal, motion(nominal, states, efforts=True))
    assert result.states == len(t_ns) and result.inconsistent == {}
    assert result.residual < 1e-6 * np.sqrt(np.mean(measured ** 2))
    np.testing.assert_allclose(result.beta, result.B @ pi, rtol=1e-6, atol=1e-9)
    cli.main(['identify', str(tmp_path / 'run.mcap'), '--robot', bundled_model('linkage_leg'),
              '--out', str(tmp_path / 'identified.urdf')])
    summary = capsys.readouterr().out
    assert f'{result.rank} base parameters of {10 * (nominal.nb - 1)}' in summary
    identified = load_model(str(tmp_path / 'identified.urdf'))
    again = np.array([identified.inverse_dynamics(q, v, a) for q, v, a in zip(Q, yd, ydd)])
    np.testing.assert_allclose(again, measured, rtol=1e-6, atol=1e-8)


def test_identify_fits_friction_and_reports_noise(tmp_path, rng):
    nominal, true, pi = truth(rng)
    t_ns, names, Q, yd, ydd, _ = recording(true, rng)
    ideal = np.array([true.inverse_dynamics(q, v, a) for q, v, a in zip(Q, yd, ydd)])
    viscous, coulomb = np.array([0.3, 0.05]), np.array([0.1, 0.02])
    measured = ideal + viscous * yd + coulomb * np.sign(yd)
    write_bag(tmp_path / 'friction.mcap', t_ns, names, Q, nominal, yd, ydd, efforts=measured)
    used = motion(nominal, bags.read_joint_states(tmp_path / 'friction.mcap'), efforts=True)
    result = identify(nominal, used, friction=True)
    np.testing.assert_allclose(result.friction, np.stack([viscous, coulomb], axis=1), rtol=1e-6,
                               atol=1e-9)
    assert result.residual < 1e-6 * np.sqrt(np.mean(measured ** 2))
    sigma = 0.01
    noisy = ideal + rng.normal(scale=sigma, size=ideal.shape)
    write_bag(tmp_path / 'noisy.mcap', t_ns, names, Q, nominal, yd, ydd, efforts=noisy)
    used = motion(nominal, bags.read_joint_states(tmp_path / 'noisy.mcap'), efforts=True)
    result = identify(nominal, used)
    assert 0.5 * sigma < result.residual < 1.5 * sigma, result.residual


def test_identify_refuses_by_name(tmp_path, rng, capsys):
    nominal = robot('linkage_leg')
    t_ns, names, Q, yd, ydd, _ = recording(nominal, rng)
    write_bag(tmp_path / 'run.mcap', t_ns, names, Q, nominal, yd, ydd)
    with pytest.raises(ModelError, match='carry no efforts'):
        identify(nominal, motion(nominal, bags.read_joint_states(tmp_path / 'run.mcap'),
                                 efforts=True))
    write_bag(tmp_path / 'wrong.mcap', t_ns, names, Q, nominal, yd, ydd,
              efforts=-50.0 * np.abs(yd) - 100.0)
    with pytest.raises(SystemExit) as stop:
        cli.main(['identify', str(tmp_path / 'wrong.mcap'), '--robot',
                  bundled_model('linkage_leg'), '--out', str(tmp_path / 'x.urdf')])
    assert stop.value.code == 2 and 'not physical' in capsys.readouterr().err
    assert not (tmp_path / 'x.urdf').exists()


# ---- a floating base ----

def walking(model, rng):
    """(stamps, joints, joint positions, base poses, yd, ydd, known torques) of the quadruped
    turning on a circle at a constant base twist (forward 0.4 m/s, yaw 0.8 rad/s: its exact
    acceleration zero) while its legs swing."""
    t_ns = stamps(rng)
    t = (t_ns - t_ns[0]) * 1e-9
    base = model.floating_base_joint
    joints = tuple(name for name in model.independent_joint_names if name != base)
    speed, yaw = 0.4, 0.8
    poses = np.column_stack([speed / yaw * np.sin(yaw * t), speed / yaw * (1 - np.cos(yaw * t)),
                             np.full_like(t, 0.3), np.zeros_like(t), np.zeros_like(t),
                             np.sin(yaw * t / 2), np.cos(yaw * t / 2)])
    reference = model.reference_positions
    angle0 = np.array([reference[model.idx_q[model.joint_names.index(n) + 1]] for n in joints])
    w = 3.0 + 0.5 * np.arange(len(joints))
    y = angle0 + 0.2 * np.sin(w * t[:, None])
    yd = np.zeros((len(t), model.ny))
    ydd = np.zeros((len(t), model.ny))
    columns = [model.independent_velocities_index[n] for n in joints]
    start = model.independent_velocities_index[base]
    yd[:, start:start + 6] = [speed, 0.0, 0.0, 0.0, 0.0, yaw]
    yd[:, columns] = 0.2 * w * np.cos(w * t[:, None])
    ydd[:, columns] = -0.2 * w**2 * np.sin(w * t[:, None])
    Q = np.array([model.complete_positions({base: pose, **dict(zip(joints, row))})
                  for pose, row in zip(poses, y)])
    known = np.array([model.inverse_dynamics(q, v, a) for q, v, a in zip(Q, yd, ydd)])
    return t_ns, joints, Q, poses, yd, ydd, known


def write_walking_bag(path, model, t_ns, Q, poses, yd, ydd, efforts=None, joints=None):
    """JointState of joints (default every joint but the floating base; with efforts, ny per
    state, those of the independent ones, zero on the others), DynamicJointState accelerations
    of the independent ones, Odometry of the base at the same stamps."""
    base = model.floating_base_joint
    joints = joints or [n for n in model.joint_names if n != base]
    index = [model.idx_q[model.joint_names.index(n) + 1] for n in joints]
    y_of = dict(model.independent_velocities_index)
    start = y_of[base]
    with open(path, 'wb') as file:
        writer = Writer(file)
        state = writer.register_msgdef('sensor_msgs/JointState', bags.JOINT_STATE_DEFINITION)
        dynamic = writer.register_msgdef('control_msgs/DynamicJointState',
                                         DYNAMIC_JOINT_STATE_DEFINITION)
        odometry = writer.register_msgdef('nav_msgs/Odometry', ODOMETRY_DEFINITION)
        for i, stamp in enumerate(t_ns):
            header = {'stamp': {'sec': int(stamp) // 10**9, 'nanosec': int(stamp) % 10**9},
                      'frame_id': 'odom'}
            writer.write_message('/joint_states', state, {
                'header': header, 'name': joints, 'position': Q[i][index].tolist(),
                'velocity': [float(yd[i][y_of[n]]) if n in y_of else 0.0 for n in joints],
                'effort': [] if efforts is None else [
                    float(efforts[i][y_of[n]]) if n in y_of else 0.0 for n in joints]},
                log_time=int(stamp))
            values = [{'interface_names': ['acceleration'], 'values': [float(ydd[i][y_of[n]])]}
                      for n in joints if n in y_of]
            writer.write_message('/dynamic_joint_states', dynamic, {
                'header': header, 'joint_names': [n for n in joints if n in y_of],
                'interface_values': values}, log_time=int(stamp))
            p, v = poses[i], yd[i][start:start + 6]
            writer.write_message('/odom', odometry, {
                'header': header, 'child_frame_id': 'base',
                'pose': {'pose': {'position': dict(zip('xyz', p[:3].tolist())),
                                  'orientation': dict(zip('xyzw', p[3:].tolist()))},
                         'covariance': [0.0] * 36},
                'twist': {'twist': {'linear': dict(zip('xyz', v[:3].tolist())),
                                    'angular': dict(zip('xyz', v[3:].tolist()))},
                          'covariance': [0.0] * 36}}, log_time=int(stamp))
        writer.finish()


def test_floating_base_from_odometry(tmp_path, rng, capsys):
    """The quadruped's joint torques and its base wrench (the net wrench the ground must apply)
    from JointState, DynamicJointState and Odometry; without odometry it is named."""
    model = robot('quadruped_rotors')
    t_ns, joints, Q, poses, yd, ydd, known = walking(model, rng)
    write_walking_bag(tmp_path / 'walk.mcap', model, t_ns, Q, poses, yd, ydd)
    states = bags.read_joint_states(tmp_path / 'walk.mcap', odometry_topic='/odom')
    result = torques(model, states)
    assert result.names == joints and result.motion.filtered == ('base accelerations',)
    columns = [model.independent_velocities_index[n] for n in joints]
    start = model.independent_velocities_index[model.floating_base_joint]
    np.testing.assert_allclose(result.efforts, known[:, columns], rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(result.base_wrench, known[:, start:start + 6], rtol=1e-9,
                               atol=1e-8)
    cli.main(['torques', str(tmp_path / 'walk.mcap'), '--robot', bundled_model('quadruped_rotors'),
              '--odometry', '/odom', '--out', str(tmp_path / 'out.mcap')])
    assert f'{len(t_ns)} of {len(t_ns)} states answered' in capsys.readouterr().out
    table = pq.read_table(tmp_path / 'out.parquet')
    np.testing.assert_array_equal(table.column('floating_base.force.z').to_numpy(),
                                  result.base_wrench[:, 2])
    with pytest.raises(ModelError, match='needs its odometry'):
        torques(model, bags.read_joint_states(tmp_path / 'walk.mcap'))
    with pytest.raises(ModelError, match='no message on'):
        bags.read_joint_states(tmp_path / 'walk.mcap', odometry_topic='/nothing')
