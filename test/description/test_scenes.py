"""Scenes (dynamics_node/description/compose.py) and the systems of Table II of Sathya & Carpentier
2025 (dynamics_node/description/scenes.py): several robots and free objects in one model, exact
against Pinocchio, block diagonal over the parts that hang from the world, and the Digit-like
biped's welded loops closed at its reference configuration."""

import os

import numpy as np
import pytest

from conftest import (assert_close, published_file,
                      random_independent_positions, random_state, RTOL)
from dynamics_node import (bundled_extended_urdf, bundled_model, compose, load_model, ModelError,
                           Part)
from dynamics_node.description import scenes
from dynamics_node.errors import QUOTE_LIMIT
from oracle import KKTOracle

BIPED = os.path.join(os.path.dirname(__file__), '..', 'models', 'digit_like_biped.urdf')
IDENTITY = ((0, 0, 0), (0, 0, 0))


def right_hand():
    return published_file('allegro_hand_description/urdf/allegro_right_hand.urdf')


def left_hand():
    return published_file('allegro_hand_description/urdf/allegro_left_hand.urdf')


def humanoid():
    return published_file('simple_humanoid_description/urdf/simple_humanoid.urdf')


# Table II system -> (its description, (nq, nv, ny, clusters, loops)). The hands' and the
# humanoid's joints are revolute and independent, the cube and box add 7 positions, 6 velocities
# and one cluster each; the biped is nq 61, nv 56, ny 26, 19 clusters, 6 welded loops.
SYSTEMS = {
    'AH-cube': (lambda: scenes.hand_cube(right_hand()), (23, 22, 22, 17, 0)),
    'AH2-cube': (lambda: scenes.hands_cube(right_hand(), left_hand()), (39, 38, 38, 33, 0)),
    'Hum-AH2-cube': (lambda: scenes.humanoid_hands_cube(humanoid(), right_hand(), left_hand()),
                     (75, 73, 73, 63, 0)),
    'Digit': (lambda: BIPED, (61, 56, 26, 19, 6)),
    'Digit-cube': (lambda: scenes.biped_box(BIPED), (68, 62, 32, 20, 6)),
    'Digit2-cube': (lambda: scenes.bipeds_box(BIPED), (129, 118, 58, 39, 12)),
}
_MODELS = {}


def system(name):
    """(description, model, Pinocchio oracle in the model's layout) of a Table II system."""
    if name not in _MODELS:
        description = SYSTEMS[name][0]()
        model = load_model(description)
        reference = KKTOracle(description)
        reference.set_layout(model.joint_names)
        _MODELS[name] = description, model, reference
    return _MODELS[name]


def loop_count(model):
    return len({name for cluster in model.clusters for name in cluster.constraints})


def oracle_state(model, reference, q, yd, tau):
    """Spanning velocities, forces on the spanning joints (the independent ones) and the
    oracle's G and g of the explicit constraint (qdd = G ydd + g)."""
    v = model.spanning_velocities(q, yd)
    tau_spanning = np.zeros(model.nv)
    tau_spanning[model.independent_v] = tau
    G = reference.null_space_G(q, model.independent_joint_names)
    return v, tau_spanning, G, reference.explicit_bias_g(q, v, model.independent_joint_names)


@pytest.mark.parametrize('name', SYSTEMS)
def test_table_ii_system_sizes(name):
    _, model, _ = system(name)
    nq, nv, ny, clusters, loops = SYSTEMS[name][1]
    assert (model.nq, model.nv, model.ny, len(model.clusters), loop_count(model)) \
        == (nq, nv, ny, clusters, loops)
    assert model.split_joint_names == () and model.held_joint_names == ()


@pytest.mark.parametrize('name', SYSTEMS)
def test_table_ii_system_against_pinocchio(name, rng):
    """Forward dynamics, inverse dynamics (ID of FD's acceleration gives tau back), the mass
    matrix and the bias forces equal the Pinocchio oracle's (spanning tree plus a dense solve of
    the loops' KKT system) on random states, with the cluster ABA and LCABA."""
    _, model, reference = system(name)
    for _ in range(2):
        q, yd, wrenches = random_state(model, rng)
        tau = rng.normal(size=model.ny)
        v, tau_spanning, G, g = oracle_state(model, reference, q, yd, tau)
        expected = reference.forward_dynamics(q, v, tau_spanning, wrenches)
        for method in ('aba', 'lcaba'):
            qdd = model.forward_dynamics(q, yd, tau, wrenches, method=method)
            assert_close(qdd, expected, f'{name} {method} qdd', rtol=1e-8)
            assert_close(model.inverse_dynamics(q, yd, qdd, wrenches), tau, f'{name} ID(FD)',
                         rtol=1e-7)
        H = reference.mass_matrix(q)
        assert_close(model.mass_matrix(q), G.T @ H @ G, f'{name} H_y')
        assert_close(model.bias_forces(q, yd, wrenches),
                     G.T @ (reference.bias(q, v, wrenches) + H @ g), f'{name} C_y')


def test_reference_path_runs_scenes(rng):
    """The NumPy reference gives the compiled kernels' results on a scene of several floating
    joints and welded loops."""
    description, model, _ = system('Digit-cube')
    reference = load_model(description, compiled=False)
    q, yd, wrenches = random_state(model, rng)
    tau = rng.normal(size=model.ny)
    assert_close(reference.forward_dynamics(q, yd, tau, wrenches),
                 model.forward_dynamics(q, yd, tau, wrenches), 'qdd', rtol=1e-10)
    assert_close(reference.mass_matrix(q), model.mass_matrix(q), 'H_y', rtol=1e-12)


def test_biped_loops_close_at_reference(rng):
    _, model, reference = system('Digit')
    q = model.reference_positions
    assert np.max(np.abs(reference.loop_residual(q))) <= 1e-10
    assert np.array_equal(q, model.q_neutral)
    assert model.floating_joint_names == ('floating_base',)
    assert [c.constraints for c in model.clusters if c.constraints] == [
        (f'{side}_{loop}',) if loop == 'achilles' else (f'{side}_toe_a', f'{side}_toe_b')
        for side in ('left', 'right') for loop in ('achilles', 'toe')]
    # and on the reference branch away from it
    closed = model.complete_positions(random_independent_positions(model, rng))
    assert np.max(np.abs(reference.loop_residual(closed))) <= 1e-10


def coordinates(model, joints):
    """Indices of q, y and v of the named joints of model, in that order."""
    y, y0 = {}, 0
    for name in model.independent_joint_names:
        y[name] = range(y0, y0 + model.nv_body[model.joint_names.index(name) + 1])
        y0 += len(y[name])
    bodies = [model.joint_names.index(name) + 1 for name in joints]
    return ([model.idx_q[b] + k for b in bodies for k in range(model.nq_body[b])],
            [i for name in joints if name in y for i in y[name]],
            [model.idx_v[b] + k for b in bodies for k in range(model.nv_body[b])])


@pytest.mark.parametrize('name, parts', [
    ('AH2-cube', lambda: [Part(right_hand(), 'r_'),
                          Part(left_hand(), 'l_', ((0, 0.3, 0), (0, 0, 1))),
                          Part(scenes.box((0.1, 0.1, 0.1), 0.1), 'cube_', IDENTITY, 'floating')]),
    ('Digit2-cube', lambda: [Part(BIPED, 'a_', ((0, 0, 1.5), (0, 0, 0))),
                             Part(BIPED, 'b_', ((1, 0, 1.5), (0, 0, 3.1))),
                             Part(scenes.box((0.4, 0.3, 0.3), 5.0), 'box_', IDENTITY,
                                  'floating')])])
def test_scene_is_block_diagonal_over_its_parts(name, parts, rng):
    """Parts hanging from the world move independently: the scene's H_y is block diagonal, and
    its forward and inverse dynamics are those of each part alone (a scene of that part only)."""
    parts = parts()
    scene = load_model(compose(parts))
    alone = [load_model(compose([part])) for part in parts]
    q, yd, _ = random_state(scene, rng)
    tau = rng.normal(size=scene.ny)
    H, qdd = scene.mass_matrix(q), scene.forward_dynamics(q, yd, tau)
    blocks = np.zeros_like(H, dtype=bool)
    for part in alone:
        iq, iy, iv = coordinates(scene, part.joint_names)
        blocks[np.ix_(iy, iy)] = True
        assert_close(H[np.ix_(iy, iy)], part.mass_matrix(q[iq]), f'{name}: H_y of {part.name}')
        assert_close(part.forward_dynamics(q[iq], yd[iy], tau[iy]), qdd[iv],
                     f'{name}: qdd of {part.name}', rtol=1e-8)
        assert_close(part.inverse_dynamics(q[iq], yd[iy], qdd[iv]), tau[iy],
                     f'{name}: ID of {part.name}', rtol=1e-7)
    assert not np.any(H[~blocks]), f'{name}: H_y couples parts'
    assert len(scene.floating_joint_names) == sum(len(p.floating_joint_names) for p in alone)


def test_compose_keeps_loops_couplings_and_independent_marks():
    """Prefixed parts keep their constraints, independent joints and dynamics: a part fixed at
    the world's origin is its robot alone, renamed; an Extended URDF part loads as its
    conversion does."""
    urdf, closures = bundled_extended_urdf('rod_knee_leg')
    parts = [Part(bundled_model('quadruped_rotors'), 'q_'),            # couplings, floating
             Part(bundled_model('delta'), 'd_', ((2, 0, 0), (0, 0, 0))),   # loops
             Part(urdf, 'r_', ((0, 2, 0), (0, 0, 0)), closures=closures)]
    scene = load_model(compose(parts, name='three'))
    assert scene.name == 'three'
    assert scene.links[0] == 'world'
    for part, robot in zip(parts, ('quadruped_rotors', 'delta', 'rod_knee_leg')):
        alone = load_model(bundled_model(robot))
        renamed = tuple(part.prefix + name for name in alone.independent_joint_names)
        assert all(name in scene.independent_joint_names for name in renamed)
        for cluster in alone.clusters:
            ours = next(c for c in scene.clusters if c.name == part.prefix + cluster.name)
            assert ours.constraints == tuple(part.prefix + c for c in cluster.constraints)
            assert ours.dependent_joints == tuple(part.prefix + j
                                                  for j in cluster.dependent_joints)
    quadruped = load_model(bundled_model('quadruped_rotors'))
    iq, iy, _ = coordinates(scene, ['q_' + name for name in quadruped.joint_names])
    q = scene.reference_positions
    assert_close(scene.mass_matrix(q)[np.ix_(iy, iy)], quadruped.mass_matrix(q[iq]), 'H_y', RTOL)
    assert scene.floating_joint_names == ('q_floating_base',)
    assert scene.floating_base_joint == 'q_floating_base'


def test_parts_hang_from_links_of_earlier_parts():
    xml = compose([(BIPED, 'a_', ((0, 0, 1.5), (0, 0, 0))),
                   Part(scenes.box((0.1,) * 3, 1.0), 'load_', IDENTITY, 'fixed', 'a_left_wrist')])
    model = load_model(xml)
    biped = load_model(BIPED)
    q = model.reference_positions
    q[model.idx_q[model.joint_names.index('a_left_elbow') + 1]] = 0.5
    # the load welded to the wrist adds 1 kg (0.25 m from the elbow) to the forearm
    assert model.nv == biped.nv
    elbow = coordinates(model, ['a_left_elbow'])[1][0]
    assert_close(model.gravity_forces(q)[elbow] - biped.gravity_forces(q)[elbow],
                 9.81 * 0.25 * np.sin(0.5), 'the load at the elbow')


def message(parts, **kwargs):
    with pytest.raises(ModelError) as error:
        compose(parts, **kwargs)
    return str(error.value)


def test_compose_errors_name_part_and_expectation():
    cube = scenes.box((0.1,) * 3, 1.0)
    long_prefix = 'p' * 200
    assert 'at least one' in message([])
    assert 'expected a list of parts' in message('robot.urdf')
    assert 'name=' in message([(cube, 'c_')], name='')
    assert "part 0: " in message([cube]) and 'expected a Part' in message([cube])
    assert 'joint=' in message([(cube, 'c_', IDENTITY, 'ball')])
    assert 'placement=' in message([(cube, 'c_', (0, 0, 0))])
    assert 'placement xyz' in message([(cube, 'c_', ((0, 0, np.inf), (0, 0, 0)))])
    assert 'parent=' in message([(cube, 'c_', IDENTITY, 'fixed', 'd_body')])
    assert 'prefix=' in message([(cube, 3)])
    assert "part 1 (prefix 'c_')" in message([(cube, 'c_'), (cube, 'c_')])
    assert "link name 'c_body'" in message([(cube, 'c_'),
                                            (scenes.box((0.1,) * 3, 1.0, 'ody'), 'c_b')])
    assert 'not found' in message([('/no/such/robot.urdf', 'x_')])
    assert "part 0 (prefix 'x_'): link 'body': <mass value> is -1.0" in message(
        [(cube.replace('value="1.0"', 'value="-1.0"'), 'x_')])
    two_roots = cube.replace('</robot>', '<link name="other"/></robot>')
    assert "found ['body', 'other']" in message([(two_roots, 'x_')])
    text = message([(cube, long_prefix), (cube, long_prefix)])
    assert long_prefix not in text and len(text) < 3 * QUOTE_LIMIT + 200
    clash = Part(cube.replace('"body"', '"world"'), '')
    assert "'world' is also that of the world link" in message([clash])


def test_compose_refuses_hostile_fields_with_model_error():
    """Fields that Python or lxml would refuse with their own exceptions: an int beyond floats
    (OverflowError), arrays for names (ValueError, lxml's TypeError), a robot name whose dashes an
    XML comment cannot hold (ValueError)."""
    cube = scenes.box((0.1,) * 3, 1.0)
    assert 'placement=' in message([(cube, 'c_', ((10 ** 400, 0, 0), (0, 0, 0)))])
    assert 'joint=' in message([(cube, 'c_', IDENTITY, np.array(['fixed', 'floating']))])
    assert 'joint=' in message([(cube, 'c_', IDENTITY, np.array(['fixed']))])
    assert 'parent=' in message([(cube, 'c_', IDENTITY, 'fixed', np.array(['world']))])
    for name in ('---', 'a--', '-'):
        xml = compose([(cube.replace('<robot name="', f'<robot name="{name}'), 'c_', IDENTITY,
                        'floating')])
        assert load_model(xml, compiled=False).nv == 6
