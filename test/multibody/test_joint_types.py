"""Spherical, planar and universal joints (in the tree and inside clusters) and spherical, planar
and universal loops against the independent oracle (Pinocchio's JointModelSpherical,
JointModelPlanar and JointModelUniversal, own loop rows, dense KKT), on both engines; LCABA and
completion on them."""

import functools

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, random_state
from dynamics_node import bundled_model, load_model, ModelError
from joint_type_models import joint, link, loop, MODELS, robot
from oracle import KKTOracle

STATES = 3


NAMES = list(MODELS)
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])


@functools.lru_cache(maxsize=None)
def model_of(name, compiled=True):
    return load_model(MODELS[name], compiled=compiled)


@functools.lru_cache(maxsize=None)
def oracle_of(name):
    reference = KKTOracle(MODELS[name])
    reference.set_layout(model_of(name).joint_names)
    return reference


def test_layouts():
    tree = model_of('tree')
    assert tree.joint_names == ('ball', 'cardan_1', 'cardan_2', 'slide')
    assert (tree.nq, tree.nv, tree.ny) == (4 + 2 + 3, 3 + 2 + 3, 8)
    assert 'upper' in tree.links and not any('cardan' in link for link in tree.links)
    assert_close(tree.q_neutral, [0, 0, 0, 1, 0, 0, 0, 0, 0], 'neutral q')
    rsur = model_of('rsur')
    assert rsur.clusters[0].dependent_joints == ('rod_ball', 'rocker_joint')
    foot = model_of('planar_foot')
    assert foot.clusters[0].dependent_joints == ('knee', 'ankle')
    assert model_of('planar_block').clusters[0].dependent_joints == ('block_plane',)


@ENGINES
@pytest.mark.parametrize('name', NAMES)
def test_dynamics_match_kkt(name, compiled, rng):
    """FD, ID, H_y and Lambda^-1 against the oracle at random closed states (as
    the tests of test/algorithms/)."""
    model, reference = model_of(name, compiled), oracle_of(name)
    links = list(model.links[-2:])
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        assert np.max(np.abs(reference.loop_residual(q)), initial=0.0) < 1e-10, (
            'oracle: loops closed')
        # velocity indices: a joint may be split
        G = reference.null_space_G(q, model.independent_v)
        v = model.spanning_velocities(q, yd)
        assert_close(v, G @ yd, 'qd = G yd')
        tau = rng.normal(size=model.nv)
        expected = reference.forward_dynamics(q, v, tau, wrenches,
                                              model.independent_v[model.held_y])
        assert_close(model.forward_dynamics(q, yd, tau, wrenches, method='aba'), expected, 'qdd')
        ydd = rng.normal(size=model.ny)
        qdd = G @ ydd + reference.explicit_bias_g(q, v, model.independent_v)
        assert_close(model.inverse_dynamics(q, yd, ydd, wrenches),
                     reference.inverse_dynamics_projected(q, v, qdd, G, wrenches), 'tau_y')
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')
        free = np.setdiff1d(np.arange(model.ny), model.held_y)        # held: no column
        assert_close(model.inverse_osim(q, links), reference.osim_inverse(q, G[:, free], links),
                     'Lambda^-1')


@pytest.mark.parametrize('name', NAMES)
def test_link_kinematics(name, rng):
    model, reference = model_of(name), oracle_of(name)
    q, _, _ = random_state(model, rng)
    G = reference.null_space_G(q, model.independent_v)
    for link_name in model.links:
        R, p = model.link_pose(q, link_name)
        pose = reference.link_placement(q, link_name)
        assert_close(R, pose.rotation, f'R of {link_name}')
        assert_close(p, pose.translation, f'p of {link_name}')
        assert_close(model.link_jacobian(q, link_name), reference.frame_jacobian(q, link_name) @ G,
                     f'J of {link_name}')


LOOPED = [name for name in NAMES if 'tree' not in name]


@pytest.mark.parametrize('name', LOOPED)
def test_lcaba_matches_cluster_aba(name, rng):
    model = model_of(name)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        tau = rng.normal(size=model.nv)
        result = model.forward_dynamics(q, yd, tau, wrenches, method='lcaba', info=True)
        assert result.method_used == 'lcaba' and result.constraint_residual < 1e-9
        assert_close(result.acceleration,
                     model.forward_dynamics(q, yd, tau, wrenches, method='aba'), 'qdd', rtol=1e-8)


@pytest.mark.parametrize('name', LOOPED)
def test_completion_from_far_starts(name, rng):
    """complete_positions closes the loops from the previous solution and after a jump; the result
    is the same from a fresh model (neutral start)."""
    model = load_model(MODELS[name])
    reference = oracle_of(name)
    for scale in (0.1, 0.6, 0.3):
        q_ind = rng.uniform(-scale, scale,
                            len(model.independent_joint_names) - len(model.split_joint_names))
        q = model.complete_positions(q_ind)
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-11
        quaternions = [q[i:i + 4] for i, kind in zip(model.idx_q[1:], model.joint_type[1:])
                       if kind == 'spherical']
        for quaternion in quaternions:
            assert abs(np.linalg.norm(quaternion) - 1.0) < 1e-14


def test_state_checks_of_new_joints():
    model = model_of('rsur')
    q = model.complete_positions([0.2])
    bad = q.copy()
    bad[1:5] *= 1.1                                           # the rod's quaternion
    with pytest.raises(ModelError, match=r"spherical joint 'rod_ball': quaternion \(qx qy qz qw\) "
                                         r"has norm 1.1"):
        model.mass_matrix(bad)
    tree = model_of('tree')
    with pytest.raises(ModelError, match=r'q has 8 entries; expected 9 \(spanning positions\)'):
        tree.mass_matrix(np.zeros(8))


@pytest.mark.parametrize('xml, message', [
    (robot('x', link('base', 0), link('a'),
           joint('u', 'universal', 'base', 'a', extra='<axis2 xyz="0 0.6 0.8"/>')),
     r"joint 'u': <axis> \[0.0, 0.0, 1.0\] and <axis2> \[0.0, 0.6, 0.8\] must be perpendicular"),
    (robot('x', link('base', 0), link('a'),
           joint('j', 'revolute', 'base', 'a', extra='<axis2 xyz="0 1 0"/>')),
     r"joint 'j': <axis2> is only used by type=\"universal\", not \"revolute\""),
    (robot('x', link('base', 0), link('a'), link('b'), joint('u', 'universal', 'base', 'a'),
           joint('u_1', 'revolute', 'a', 'b')),
     r"joint names \['u_1'\] are used twice \(a universal joint u adds joints u_1 and u_2\)"),
    (robot('x', link('base', 0), link('a'), link('b'), joint('s', 'spherical', 'base', 'a'),
           joint('j', 'revolute', 'base', 'b', extra='<mimic joint="s"/>')),
     r"joint 'j' <mimic> involves spherical joint 's'; only 1-DoF joints can be coupled"),
    (robot('x', link('base', 0), link('a'), link('b'), joint('u', 'universal', 'base', 'a'),
           joint('j', 'revolute', 'base', 'b', extra='<mimic joint="u"/>')),
     r"joint 'j' <mimic> names unknown joint 'u'"),
    (MODELS['planar_block'].replace('<axis xyz="0 0 1"/></loop>',
                                    '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/></loop>'),
     r"loop 'weld': <axis2> is only used by type=\"universal\", not \"fixed\""),
    (MODELS['rsur'].replace('<axis2 xyz="1 0 0"/></loop>', '<axis2 xyz="0 0 0"/></loop>'),
     r"loop 'cardan_end': <axis2 xyz> is zero; expected a unit vector"),
    (MODELS['rusr'].replace('type="spherical"', 'type="ball"'),
     r"loop 'ball_end': type=\"ball\" is not supported; expected one of revolute, continuous, "
     r"prismatic, fixed, spherical, planar, universal"),
])
def test_errors_name_the_element(xml, message):
    with pytest.raises(ModelError, match=message):
        load_model(xml)


def test_idle_spin_of_a_ball_jointed_rod_stays_independent():
    """RSSR: the loops fix two directions of the rod's spherical joint; the third (about its child
    x here, the axis nearest the rod's line (0.4, 0.2, 0.3): column pivoting), the rod's spin about
    its own line as far as the loops are concerned, is an independent velocity with no position
    input: completion keeps the spin where it was."""
    model = load_model(MODELS['rssr'])
    assert (model.independent_joint_names == ('crank_joint', 'rod_ball')
            and model.split_joint_names == ('rod_ball',))
    assert model.clusters[0].dependent_joints == ('rod_ball', 'rocker_joint')
    assert (model.ny, len(model.independent_v)) == (2, 2)
    q = model.complete_positions([0.2])
    with pytest.raises(ModelError,
                       match=r'q_independent has 2 entries; expected 1 \(independent positions\)'):
        model.complete_positions([0.2, 0.0])
    reference = oracle_of('rssr')
    # the free motion with the crank held
    spin = reference.null_space_G(q, model.independent_v)[:, 1]
    assert np.allclose(reference.constraint_jacobian(q) @ spin, 0.0, atol=1e-12)
    turned = reference.integrate(q, 0.3 * spin)                        # spin the rod: still closed
    assert np.max(np.abs(reference.loop_residual(turned))) < 1e-12     # an exact idle motion
    assert_close(model.complete_positions([0.2]), q, 'the same q again')


def test_marked_ball_joint_of_an_idle_rod_is_split():
    """independent="false" on the rod's ball joint (and the rocker) of RSSR: 4 marked coordinates
    for rank 3, so the marked ball joint is dependent in the directions the loop fixes, as in the
    automatic choice. Marking the crank too leaves a marked joint the loop does not determine: the
    count error."""
    def marked(*names):
        xml = MODELS['rssr']
        for name in names:
            xml = xml.replace(f'<joint name="{name}" ',
                              f'<joint name="{name}" independent="false" ')
        return xml
    model = load_model(marked('rod_ball', 'rocker_joint'))
    assert model.clusters == model_of('rssr').clusters and model.split_joint_names == ('rod_ball',)
    assert np.array_equal(model.independent_v, model_of('rssr').independent_v)
    with pytest.raises(ModelError,
                       match=r"has constraint rank 3, so it needs 3 dependent joints, but 5 are "
                             r"marked independent=\"false\": "
                             r"\['crank_joint', 'rod_ball', 'rocker_joint'\]"):
        load_model(marked('crank_joint', 'rod_ball', 'rocker_joint'))


@ENGINES
@pytest.mark.parametrize('tilt', [1e-4, 1e-7])
def test_idle_spin_of_a_rod_nearly_along_a_frame_axis(tilt, compiled, rng):
    """RSSR with a CAD-like rod frame: x along the rod but for a small tilt (the line is (cos, 0,
    sin) of the tilt in the rod frame), so the loop fixes y and z and x (the spin) stays free.
    Taken in order, x would be dependent and K_d conditioned like the tilt (completion then fails);
    pivoting keeps G of order 1."""
    line = np.array([0.4, 0.2, 0.3])          # ball to rod end in the crank frame (MODELS['rssr'])
    x = line / np.linalg.norm(line)
    z = np.cross(x, [0.0, 1.0, 0.0])
    z /= np.linalg.norm(z)
    R = np.column_stack((x, np.cross(z, x), z)) @ pin.utils.rotate('y', tilt)
    rpy, end = (' '.join(repr(float(a)) for a in v) for v in (pin.rpy.matrixToRpy(R), R.T @ line))
    xml = robot('rssr_cad', link('base', 0), link('crank'), link('rod', 0.4), link('rocker'),
                joint('crank_joint', 'revolute', 'base', 'crank'),
                joint('rod_ball', 'spherical', 'crank', 'rod', '0.2 0 0', rpy),
                joint('rocker_joint', 'revolute', 'base', 'rocker', '0.6 0.2 0', axis='1 0 0'),
                loop('ball_end', 'spherical', 'rod', end, 'rocker', '0 0 0.3'))
    model = load_model(xml, compiled=compiled)
    assert list(model.independent_v) == [0, 1], 'crank_joint, the x column of rod_ball'
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        G = reference.null_space_G(q, model.independent_v)
        assert np.abs(G).max() < 10.0
        tau = rng.normal(size=model.nv)
        assert_close(model.forward_dynamics(q, yd, tau, wrenches, method='aba'),
                     reference.forward_dynamics(q, G @ yd, tau, wrenches,
                                                model.independent_v[model.held_y]), 'qdd')
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')


NEW_ROBOTS = ['ambidex_wrist', 'delta', 'parallel_ankle_leg']


@pytest.mark.parametrize('name', NEW_ROBOTS)
def test_bundled_robots_complete_from_their_actuated_joints(name, rng):
    """Closed at q = 0; complete_positions from the actuated joints closes the loops (oracle
    residual) over a walk of random targets in [-0.6, 0.6] rad and comes back to q = 0 on the same
    branch."""
    model = load_model(bundled_model(name))
    reference = KKTOracle(bundled_model(name))
    reference.set_layout(model.joint_names)
    assert np.max(np.abs(reference.loop_residual(model.q_neutral))) < 1e-12, 'closed at q = 0'
    for _ in range(10):
        q = model.complete_positions(rng.uniform(-0.6, 0.6, len(model.independent_joint_names)))
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-11
    assert_close(model.complete_positions(np.zeros(len(model.independent_joint_names))),
                 model.q_neutral, 'back at q = 0', rtol=1e-10)


def test_wrist_is_a_parallelogram():
    """ambidex_wrist: the mirrored distal universal joint keeps the hand parallel to the forearm,
    so distal = (-wrist_2, -wrist_1)."""
    model = load_model(bundled_model('ambidex_wrist'))
    q = model.complete_positions([0.3, -0.4])
    names = model.joint_names
    assert_close(q[[names.index('distal_1'), names.index('distal_2')]], [0.4, -0.3], 'distal')
    assert_close(model.link_pose(q, 'hand')[0], np.eye(3), 'hand orientation')


def test_delta_platform_translates(rng):
    model = load_model(bundled_model('delta'))
    for _ in range(3):
        q = model.complete_positions(rng.uniform(-0.6, 0.6, 3))
        assert_close(model.link_pose(q, 'platform')[0], np.eye(3), 'platform orientation',
                     rtol=1e-10)


# A CAD export's shape: joints without <axis> (x) and without <limit>, continuous joints with
# negative axes, a fixed sensor frame, a crank-rocker four-bar in the y-z plane closed by a loop
# without <axis>.
CAD = robot('cad', link('base_link', 0), link('link_1'), link('link_2', 0.7), link('link_3', 0.5),
            link('sensor', 0.05),
            '<joint name="joint_1" type="continuous"><parent link="base_link"/><child '
            'link="link_1"/><axis xyz="-1 0 0"/></joint>',
            '<joint name="joint_2" type="revolute"><parent link="link_1"/><child link="link_2"/>'
            '<origin xyz="0 0.3 0"/></joint>',
            '<joint name="joint_3" type="continuous"><parent link="base_link"/><child '
            'link="link_3"/><origin xyz="0 0.8 0"/><axis xyz="-1 0 0"/></joint>',
            '<joint name="sensor_fix" type="fixed"><parent link="link_2"/><child link="sensor"/>'
            '<origin xyz="0.1 0 0" rpy="0 0 0.3"/></joint>',
            '<loop name="closure" type="continuous"><predecessor link="link_2">'
            '<origin xyz="0 0.6 0.5"/></predecessor><successor link="link_3">'
            '<origin xyz="0 0.1 0.5"/></successor></loop>')


@ENGINES
def test_cad_shaped_file(compiled, rng):
    """No <axis> means x (URDF), negative continuous axes turn the other way, no <limit> is needed;
    against the oracle (Pinocchio's reading of the same axes)."""
    model = load_model(CAD, compiled=compiled)
    reference = KKTOracle(CAD)
    reference.set_layout(model.joint_names)
    assert model.joint_names == ('joint_1', 'joint_2', 'joint_3')
    assert model.clusters[0].independent_joints == ('joint_1',)
    for _ in range(STATES):
        q, yd, wrenches = random_state(model, rng)
        assert np.max(np.abs(reference.loop_residual(q))) < 1e-10
        G = reference.null_space_G(q, model.independent_joint_names)
        v, tau = model.spanning_velocities(q, yd), rng.normal(size=model.nv)
        assert_close(model.forward_dynamics(q, yd, tau, wrenches, method='aba'),
                     reference.forward_dynamics(q, v, tau, wrenches), 'qdd')
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')
