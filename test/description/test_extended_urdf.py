"""Extended URDF input (URDF + YAML closures): the conversion to URDF+, the bundled rod_knee_leg
against the independent oracle, completion from the actuated joints, and every YAML error."""

import os
from pathlib import Path
import re
import subprocess
import sys

from lxml import etree
import numpy as np
import pinocchio as pin
import pytest
import yaml

from conftest import assert_close, random_state
from dynamics_node import (bundled_extended_urdf, bundled_model, bundled_models, load_model,
                           ModelError)
from dynamics_node.convert import main
from dynamics_node.description.extended_urdf import to_urdf_plus
from oracle import independent_oracle

URDF, CLOSURES = bundled_extended_urdf('rod_knee_leg')
TEXT = Path(CLOSURES).read_text()
# a Digit-like ankle driven by two rods with ball joints at both ends (test model, parameters in
# its comment)
ANKLE = Path(__file__).parents[1] / 'models' / 'ball_rod_ankle_leg'
ANKLE_URDF, ANKLE_CLOSURES = str(ANKLE.with_suffix('.urdf')), str(ANKLE.with_suffix('.yaml'))
STATES = 3


def extended(closures=CLOSURES, compiled=True):
    return load_model(URDF, compiled=compiled, closures=closures)


def yaml_with(**changes):
    """The bundled closures with some keys replaced (None deletes the key), as YAML text."""
    data = yaml.safe_load(TEXT)
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return yaml.safe_dump(data)


def assert_matches_oracle(model, reference, rng, links=('foot', 'rod', 'closure_b')):
    """FD, ID, H_y and Lambda^-1 against the KKT oracle at random closed states (1e-9); the
    model's held coordinates (idle spins) held still in the oracle too."""
    held, free = model.independent_v[model.held_y], np.setdiff1d(np.arange(model.ny), model.held_y)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-10, 'the loop is closed'
        G = reference.null_space_G(q, model.independent_v)         # y: v's independent columns
        v = G @ yd
        tau = rng.normal(size=model.nv)
        assert_close(model.forward_dynamics(q, yd, tau, wrenches),
                     reference.forward_dynamics(q, v, tau, wrenches, held), 'qdd')
        ydd = rng.normal(size=model.ny)
        qdd = G @ ydd + reference.explicit_bias_g(q, v, model.independent_v)
        assert_close(model.inverse_dynamics(q, yd, ydd, wrenches),
                     reference.inverse_dynamics_projected(q, v, qdd, G, wrenches), 'tau_y')
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')
        assert_close(model.inverse_osim(q, list(links)),
                     reference.osim_inverse(q, G[:, free], list(links)), 'Lambda^-1')


@pytest.fixture(scope='module')
def reference():
    oracle = independent_oracle(TEXT, URDF)
    oracle.set_layout(extended().joint_names)
    return oracle


def test_conversion_is_the_urdf_plus_loaded_plainly(tmp_path, rng):
    """closures= (path, YAML text, parsed mapping) and the converted URDF+ file give the same
    model."""
    output = tmp_path / 'rod_knee_leg_plus.urdf'
    main([URDF, CLOSURES, '-o', str(output)])
    plain = load_model(str(output))
    for model in (extended(), extended(TEXT), extended(yaml.safe_load(TEXT)),
                  extended(Path(CLOSURES)), load_model(bundled_model('rod_knee_leg'))):
        assert model.joint_names == plain.joint_names
        assert model.independent_joint_names == plain.independent_joint_names
        assert model.clusters == plain.clusters
        for _ in range(STATES):
            q, yd, wrenches = random_state(plain, rng)
            tau = rng.normal(size=plain.ny)
            assert np.array_equal(model.forward_dynamics(q, yd, tau, wrenches),
                                  plain.forward_dynamics(q, yd, tau, wrenches))
            assert np.array_equal(model.inverse_dynamics(q, yd, tau),
                                  plain.inverse_dynamics(q, yd, tau))
            assert np.array_equal(model.mass_matrix(q), plain.mass_matrix(q))


def test_bundled_in_the_extended_urdf_format():
    assert 'rod_knee_leg' in bundled_models()
    assert load_model(bundled_model('rod_knee_leg')).name == 'rod_knee_leg'
    with pytest.raises(ModelError,
                       match=r"no bundled robot 'four_bar_pair'; bundled robots are \["):
        bundled_extended_urdf('four_bar_pair')


def test_structure_of_the_converted_robot():
    """FIXED lumps the hip housing into the ground, UJOINT_YX gives ankle_a (pitch) then ankle_b
    (roll), name_mot marks the actuated joints, the dependent ones are chosen automatically."""
    model = extended()
    assert model.joint_names == ('hip_pitch', 'knee_motor', 'rod_top', 'rod_bottom', 'knee',
                                 'ankle_a', 'ankle_b')
    assert model.independent_joint_names == ('hip_pitch', 'knee_motor', 'ankle_a', 'ankle_b')
    loop = next(c for c in model.clusters if c.constraints)
    assert loop.constraints == ('closed_loop:closure_a:closure_b',)
    assert loop.independent_joints == ('knee_motor',)
    assert loop.dependent_joints == ('rod_top', 'rod_bottom', 'knee')
    assert 'hip_housing' in model.links and 'ankle_cross' in model.links
    q = model.complete_positions([0.2, 0.3, -0.4, 0.5])
    R_shank, p_shank = model.link_pose(q, 'shank')
    R_foot, p_foot = model.link_pose(q, 'foot')
    expected = R_shank @ pin.utils.rotate('y', -0.4) @ pin.utils.rotate('x', 0.5)
    assert_close(R_foot, expected, 'foot orientation: pitch about y, then roll about x')
    assert_close(p_foot, p_shank + R_shank @ [0, 0, -0.32], 'ankle position')


def test_redundant_weld_rows_are_reduced(rng):
    """The oblique 6D weld of a planar linkage: 6 non-zero rows of rank 3. The cluster ABA solves
    it without falling back (no singular solve) and LCABA agrees."""
    for compiled in (True, False):
        model = extended(compiled=compiled)
        cluster = next(c for c in model.cluster_list if c.constraints)
        assert len(cluster.active_rows) == 6 and len(cluster.dependent) == 3
        for _ in range(STATES):
            q, yd, wrenches = random_state(model, rng)
            tau = rng.normal(size=model.ny)
            info = model.forward_dynamics(q, yd, tau, wrenches, method='aba', info=True)
            assert info.method_used == 'aba' and info.constraint_residual < 1e-9
            lcaba = model.forward_dynamics(q, model.spanning_velocities(q, yd), tau, wrenches,
                                           method='lcaba')
            assert_close(lcaba, info.acceleration, 'LCABA = cluster ABA', rtol=1e-7)


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_against_independent_oracle(reference, compiled, rng):
    model = extended(compiled=compiled)
    assert_matches_oracle(model, reference, rng)
    q, _, _ = random_state(model, rng)
    assert np.array_equal(model.inverse_osim(q, ['hip_housing']), np.zeros((6, 6))), (
        'a ground frame')


def test_complete_positions_from_the_actuated_joints(reference):
    model = extended()
    for hip, knee_motor in [(0.0, 0.0), (0.5, -0.6), (-0.3, 0.6), (1.0, 0.9)]:
        q = model.complete_positions([hip, knee_motor, 0.1, -0.2])
        assert q[0] == hip and q[1] == knee_motor
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-12


def test_name_mot_decides_the_independent_joints(reference, rng):
    """Actuating the knee instead of knee_motor makes the knee the loop's independent joint."""
    model = extended(yaml_with(name_mot=['hip_pitch', 'knee']))
    loop = next(c for c in model.clusters if c.constraints)
    assert loop.independent_joints == ('knee',)
    assert model.independent_joint_names == ('hip_pitch', 'knee', 'ankle_a', 'ankle_b')
    q = model.complete_positions([0.3, -0.5, 0.2, 0.1])
    assert q[model.joint_names.index('knee')] == -0.5
    assert np.max(np.abs(reference.loop_residual(q))) < 1e-12
    G = reference.null_space_G(q, model.independent_joint_names)
    assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')


def test_fewer_actuated_joints_than_degrees_of_freedom():
    """Without knee_motor in name_mot the loop cluster's independent joint is chosen
    automatically."""
    model = extended(yaml_with(name_mot=['hip_pitch']))
    loop = next(c for c in model.clusters if c.constraints)
    assert len(loop.independent_joints) == 1 and len(loop.dependent_joints) == 3
    assert 'knee_motor' in loop.joints
    unmarked = load_model(URDF, closures=yaml_with(name_mot=None))
    assert unmarked.ny == 4
    q = model.complete_positions([0.2, 0.3, 0.0, 0.0])
    assert np.all(np.isfinite(q))


def test_joint_frames_name_the_same_closure():
    """A closure may name joint frames: a fixed joint's frame is its child link's frame."""
    by_joint = extended(yaml_with(closed_loop=[['closure_a_frame', 'closure_b_frame']]))
    by_link = extended()
    q = by_link.complete_positions([0.1, 0.4, 0.0, 0.0])
    assert np.array_equal(by_joint.mass_matrix(q), by_link.mass_matrix(q))


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_three_d_closure_leaves_the_idle_spin_independent(compiled, rng):
    """type 3D keeps only the pin's point together (a spherical loop, 3 rows of rank 2 on this
    planar linkage): the clevis spin about the pin becomes free, and is chosen as an independent
    coordinate."""
    text = yaml_with(type=['3d'])
    model = extended(text, compiled)
    loop = next(c for c in model.clusters if c.constraints)
    assert loop.independent_joints == ('knee_motor', 'rod_bottom')
    assert model.ny == 5
    assert etree.fromstring(to_urdf_plus(URDF, text)).find('loop').get('type') == 'spherical'
    reference = independent_oracle(text, URDF)
    reference.set_layout(model.joint_names)
    assert_matches_oracle(model, reference, rng)


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_spherical_replacement(compiled, rng):
    """joint_type SPHERICAL turns the ankle into a ball joint (quaternion q, 3 velocities)."""
    text = yaml_with(joint_type=['FIXED', 'SPHERICAL'])
    model = extended(text, compiled)
    assert model.joint_type[model.joint_names.index('ankle') + 1] == 'spherical'
    assert (model.nq, model.nv, model.ny) == (9, 8, 5)
    reference = independent_oracle(text, URDF)
    reference.set_layout(model.joint_names)
    assert_matches_oracle(model, reference, rng)


@pytest.mark.parametrize('closures, message', [
    (yaml_with(closed_loop=[['closure_a', 'nowhere']]),
     r"closed_loop entry 0 names unknown frame 'nowhere'; expected a link or joint name"),
    (yaml_with(closed_loop=['closure_a']),
     r"closed_loop entry 0 is 'closure_a'; expected a pair \[A, B\]"),
    (yaml_with(type=['5D']), r"type entry 0 is '5D'; expected 3D or 6D"),
    (yaml_with(type=['6D', '6D']), r'type has 2 entries for 1 closed_loop pairs'),
    (yaml_with(joint_name=['hip_roll', 'elbow']), r"joint_name names unknown joint 'elbow'"),
    (yaml_with(joint_type=['FIXED']), r'joint_name has 2 entries but joint_type has 1'),
    (yaml_with(joint_name=['ankle', 'ankle']), r"joint_name lists joint 'ankle' twice"),
    (yaml_with(name_mot=['hip_pitch', 'elbow']), r"name_mot names unknown joint 'elbow'"),
    (yaml_with(name_mot=['hip_roll']), r"name_mot names joint 'hip_roll', which is fixed"),
    (yaml_with(name_mot=['ankle']),
     r"name_mot names joint 'ankle', which joint_type replaces by UJOINT_YX"),
    (yaml_with(name_mot=['hip_pitch', 'knee_motor', 'knee']),
     r"cluster 'crank' .* has constraint rank 3 but only 2 .*neither marked independent=\"true\" "
     r"nor leading"),
    (yaml_with(name_mot=[3]), r"name_mot names unknown joint '3'"),        # YAML scalars are names
    ({'name_mot': [3]}, r'name_mot entry 0 is 3; expected a joint name'),
    (yaml_with(type=[6]), r"type entry 0 is '6'; expected 3D or 6D"),
    ({'type': [6], 'closed_loop': [['a', 'b']]}, r'type entry 0 is 6; expected 3D or 6D'),
    (yaml_with(joint_type=['FIXED', 'UJOINT_XX']),
     r"joint_type 'UJOINT_XX' of joint 'ankle': expected SPHERICAL, FIXED or UJOINT_ab with a, b "
     r"two different axes among X, Y, Z"),
    (yaml_with(joint_type=['FIXED', 'UJOINT_XW']), r"joint_type 'UJOINT_XW' of joint 'ankle'"),
    (yaml_with(joint_type=['FIXED', 'BALL']), r"joint_type 'BALL' of joint 'ankle'"),
    (yaml_with(closed_loops=[]), r"unknown key 'closed_loops'; expected keys \['closed_loop'"),
    ('closed_loop: [[a, b]\ntype: [6D]\n', r'closures: malformed YAML: '),
    ('- closed_loop\n', r"closures: the YAML is \['closed_loop'\]; expected a mapping"),
    ('missing.yaml', r"closures file not found: 'missing.yaml'"),
    (3, r'closures: expected a YAML path or YAML text, got int'),
])
def test_yaml_errors_name_the_entry(closures, message):
    with pytest.raises(ModelError, match=message):
        load_model(URDF, closures=closures)


@pytest.mark.parametrize('closures, message', [
    ('closed_loop: [[2001-13-01, b]]', r"closed_loop entry 0 names unknown frame '2001-13-01'"),
    ('closed_loop: [[0000-01-01, b]]', r"closed_loop entry 0 names unknown frame '0000-01-01'"),
    ('closed_loop: [[2001-01-01 25:00:00, b]]', r"unknown frame '2001-01-01 25:00:00'"),
    ('closed_loop: [[2001-02-30, closure_b]]', r"unknown frame '2001-02-30'"),
    ('type: [!!timestamp foo]',
     r"the tag '!!timestamp' on line 1 is not accepted; the entries are names"),
    ('type: [!!float abc]', r"the tag '!!float' on line 1 is not accepted"),
    ('type:\n  - !!int x', r"the tag '!!int' on line 2 is not accepted"),
    ('name_mot: !!binary aGVsbG8=', r"the tag '!!binary' on line 1"),
    ('name_mot: !!python/object:os.system x', r"the tag '!!python/object:os.system' on line 1"),
    ('name_mot: [' + '9' * 5000 + ']', r"name_mot names unknown joint '9999.*\(5000 characters\)"),
    ('closed_loop: ' + '[' * 1000 + ']' * 1000,
     r'closures: (collections nested 9 deep|malformed YAML)'),
    ('closed_loop: ' + '[' * 9 + ']' * 9,
     r'collections nested 9 deep on line 1; expected at most 8'),
    ('a:\n' + ''.join(' ' * (i + 1) + f'k{i}:\n' for i in range(1000)),
     r'collections nested 9 deep on line 9'),
    ('closed_loop: [["a\\0", closure_b]]',
     r"closed_loop entry 0 holds '\\x00' in 'a\\x00'; names are XML text"),
    ('name_mot: ["knee\\x1b"]', r"name_mot entry 0 holds '\\x1b'"),
    ('joint_name: [' + 'j, ' * 10_001 + ']',
     r'joint_name has 10001 entries; expected at most 10000'),
    ('joint_name: [' + ', '.join(f'j{i}' for i in range(9_999)) + ', j9998]\njoint_type: ['
     + 'FIXED, ' * 10_000 + ']',
     r"joint_name lists joint 'j9998' twice"),
    ('name_mot: [' + 'x' * 1_000_000 + ']',
     r'the YAML text has 1000012 characters; expected at most 1000000'),
])
def test_hostile_yaml_is_a_model_error(closures, message):
    """Dates, numbers and tags that PyYAML would convert (and fail on), deep nesting, control
    characters and long lists: each a ModelError that names it, before any XML is built."""
    with pytest.raises(ModelError, match=message):
        load_model(URDF, closures=closures)


def test_closures_file_size_is_checked_before_reading(tmp_path):
    sparse = tmp_path / 'huge.yaml'
    with open(sparse, 'wb') as file:
        file.truncate(1 << 30)
    with pytest.raises(ModelError, match=r"closures file '.*huge.yaml' has 1073741824 bytes; "
                                         r"expected at most 1000000"):
        load_model(URDF, closures=str(sparse))


def test_the_urdf_is_checked_first(tmp_path):
    """The URDF's own errors come with the URDF+ reader's messages; an unreadable closures file is
    named."""
    urdf = Path(URDF).read_text().replace('<child link="foot"/>', '<child link="toe"/>')
    with pytest.raises(ModelError, match=r"joint 'ankle' refers to unknown link 'toe'"):
        load_model(urdf, closures=TEXT)
    binary = tmp_path / 'closures.yaml'
    binary.write_bytes(b'\xff\xfe\x00')
    with pytest.raises(ModelError,
                       match=r"closures file '.*closures.yaml' cannot be read: not UTF-8 text"):
        load_model(URDF, closures=str(binary))


SPIN = yaml_with(type=['3D'], joint_name=['hip_roll', 'ankle', 'rod_top'],
                 joint_type=['FIXED', 'UJOINT_YX', 'SPHERICAL'])


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_idle_rod_spin_is_an_independent_column(compiled, rng):
    """A rod with a SPHERICAL end and a 3D closure at the other spins idly about the line through
    its two balls: one column of rod_top's ball (the spin) stays independent, the two others are
    solved with the knee. rod_top is split: in y with its spin column, without independent
    positions."""
    model = extended(SPIN, compiled)
    loop = next(c for c in model.clusters if c.constraints)
    assert loop.independent_joints == ('knee_motor', 'rod_top', 'rod_bottom')
    assert loop.dependent_joints == ('rod_top', 'knee')
    assert model.split_joint_names == ('rod_top',)
    assert model.independent_joint_names == ('hip_pitch', 'knee_motor', 'rod_top', 'rod_bottom',
                                             'ankle_a', 'ankle_b')
    rod_top = model.idx_v[model.joint_names.index('rod_top') + 1]
    assert list(model.independent_v) == [0, 1, rod_top + 2, rod_top + 3, 7, 8], (
        'the rod frame z column')
    reference = independent_oracle(SPIN, URDF)
    reference.set_layout(model.joint_names)
    assert_matches_oracle(model, reference, rng)
    q = model.complete_positions([0.3, -0.5, 0.4, 0.2, 0.1])          # no entries for rod_top
    assert q[1] == -0.5 and q[6] == 0.4, 'knee_motor, rod_bottom'
    assert np.max(np.abs(reference.loop_residual(q))) < 1e-12
    v = model.spanning_velocities(q,
                                  np.eye(model.ny)[model.independent_joint_names.index('rod_top')])
    axis = np.array([0.01, 0.0, -0.30])                               # the rod's line, rod frame
    assert_close(v[rod_top:rod_top + 3], axis / axis[2], 'the spin turns the rod about its line')
    assert_close(np.delete(v, np.s_[rod_top:rod_top + 3]), np.zeros(model.nv - 3),
                 'and nothing else')


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_ball_rod_ankle_leg(compiled, rng):
    """Two rods with ball joints at both ends (SPHERICAL top, 3D closure at the foot): two idle
    spins, one column of each rod's ball independent; against the oracle of an independent
    conversion."""
    model = load_model(ANKLE_URDF, compiled=compiled, closures=ANKLE_CLOSURES)
    assert (model.nq, model.nv, model.ny) == (14, 12, 6)
    assert model.split_joint_names == ('rod_l_top', 'rod_r_top')
    ankle = next(c for c in model.clusters if c.constraints)
    assert ankle.independent_joints == ('motor_l', 'rod_l_top', 'motor_r', 'rod_r_top')
    assert ankle.dependent_joints == ('rod_l_top', 'rod_r_top', 'ankle_a', 'ankle_b')
    reference = independent_oracle(Path(ANKLE_CLOSURES).read_text(), ANKLE_URDF)
    reference.set_layout(model.joint_names)
    assert_matches_oracle(model, reference, rng, links=('foot', 'rod_l', 'rod_r_end'))
    q = model.complete_positions([0.2, -0.7, 0.4, -0.3])               # the actuated joints only
    assert np.max(np.abs(reference.loop_residual(q))) < 1e-12
    assert [q[model.idx_q[model.joint_names.index(n) + 1]]
            for n in ('hip_pitch', 'knee', 'motor_l', 'motor_r')] \
        == [0.2, -0.7, 0.4, -0.3]
    yd, tau = rng.normal(size=model.ny), rng.normal(size=model.ny)
    lcaba = model.forward_dynamics(q, model.spanning_velocities(q, yd), tau, method='lcaba',
                                   info=True)
    assert lcaba.constraint_residual < 1e-9
    assert_close(lcaba.acceleration, model.forward_dynamics(q, yd, tau, method='aba'),
                 'LCABA = cluster ABA', rtol=1e-8)


def test_idle_rod_spin_is_an_independent_direction(rng):
    """A rod with a SPHERICAL end and a 3D closure at the other spins idly about its axis: the loop
    fixes two directions of its spherical joint, the third is an independent velocity (a split
    joint)."""
    closures = yaml_with(type=['3D'], name_mot=['hip_pitch', 'knee_motor'], joint_name=['rod_top'],
                         joint_type=['SPHERICAL'])
    model = load_model(URDF, closures=closures)
    assert model.split_joint_names == ('rod_top',)
    crank = next(c for c in model.clusters if 'rod_top' in c.joints)
    assert (set(crank.dependent_joints) == {'rod_top', 'knee'}
            and 'rod_top' in crank.independent_joints)
    q, yd, wrenches = random_state(model, rng)
    tau = rng.normal(size=model.nv)
    assert_close(model.forward_dynamics(q, yd, tau, wrenches, method='lcaba'),
                 model.forward_dynamics(q, yd, tau, wrenches, method='aba'), 'qdd', rtol=1e-8)


def test_fixed_joints_with_a_zero_axis_load():
    """CAD exports (e.g. onshape-to-robot, as in the published Extended URDF robots) write
    <axis xyz="0 0 0"/> on fixed joints; like urdfdom, the axis of a joint without one is
    ignored."""
    urdf = Path(URDF).read_text().replace('<origin xyz="0 0 0" rpy="0.4 0 0.25"/>',
                                          '<origin xyz="0 0 0" rpy="0.4 0 0.25"/>'
                                          '<axis xyz="0 0 0"/>')
    assert urdf.count('<axis xyz="0 0 0"/>') == 1
    model = load_model(urdf, closures=TEXT)
    q = model.complete_positions([0.2, 0.3, 0.0, 0.0])
    assert np.array_equal(model.mass_matrix(q), extended().mass_matrix(q))


def test_ujoint_names_must_be_free():
    urdf = Path(URDF).read_text().replace('<link name="closure_b"/>',
                                          '<link name="ankle_cross"/>').replace(
        '<child link="closure_b"/>', '<child link="ankle_cross"/>')
    with pytest.raises(ModelError, match=r"UJOINT of joint 'ankle' needs the name 'ankle_cross', "
                                         r"which the URDF"):
        load_model(urdf, closures=TEXT)


def test_console_script_round_trip(tmp_path):
    """extended_urdf_to_urdfplus writes a URDF+ file that loads plainly into the same robot; errors
    exit 1 with the message."""
    script = Path(sys.executable).parent / 'extended_urdf_to_urdfplus'
    output = tmp_path / 'robot.urdf'
    subprocess.run([script, URDF, CLOSURES, '-o', output], check=True, timeout=120)
    assert load_model(str(output)).clusters == extended().clusters
    printed = subprocess.run([script, URDF, CLOSURES], check=True, capture_output=True, text=True,
                             timeout=120)
    assert printed.stdout.strip() == output.read_text().strip()
    bad = tmp_path / 'bad.yaml'
    bad.write_text(yaml_with(type=['4D']))
    failed = subprocess.run([script, URDF, bad], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1
    assert "extended_urdf_to_urdfplus: error: closures: type entry 0 is '4D'" in failed.stderr


@pytest.mark.parametrize('closures, output, message', [
    ('type: [!!timestamp foo]\n', None,
     r"closures: the tag '!!timestamp' on line 1 is not accepted"),
    ('closed_loop: [["a\\0", b]]\n', None, r"closures: closed_loop entry 0 holds '\\x00'"),
    (CLOSURES, 'missing/robot.urdf',
     r"cannot write 'missing/robot.urdf': No such file or directory"),
    (CLOSURES, '.', r"cannot write '.*': Is a directory"),
    (CLOSURES, '/dev/full', r"cannot write '/dev/full': No space left on device"),
    (CLOSURES, 'stdout:/dev/full', r"cannot write 'standard output': No space left on device"),
])
def test_console_script_errors_are_one_line(tmp_path, closures, output, message):
    """Bad closures and unwritable outputs: exit status 1 and one line on stderr, no traceback."""
    script = Path(sys.executable).parent / 'extended_urdf_to_urdfplus'
    if closures != CLOSURES:
        (tmp_path / 'closures.yaml').write_text(closures)
        closures = tmp_path / 'closures.yaml'
    command = [script, URDF, closures]
    if output is not None and not output.startswith('stdout:'):
        command += ['-o', output]                # relative ones in tmp_path, the command's cwd
    with open(output[len('stdout:'):] if output and output.startswith('stdout:') else os.devnull,
              'w') as stdout:
        failed = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True,
                                timeout=120, cwd=tmp_path)
    assert failed.returncode == 1 and len(failed.stderr.splitlines()) == 1, failed.stderr
    assert re.match(r'extended_urdf_to_urdfplus: error: ' + message, failed.stderr), failed.stderr
