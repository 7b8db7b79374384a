"""The reference configuration and completion as a robot file someone else wrote meets them: the
reference stays clear of singularities (or the load warns by name), a part keeps its own reference
in a scene, a floating base for a file without one, loops that cannot close refused with what was
tried, completion from the actuated joints by name, and no completion result that depends on the
machine's load."""

from pathlib import Path

import numpy as np
import pytest

from conftest import assert_close
from dynamics_node import bundled_model, compose, load_model, ModelError, Part
from dynamics_node.description.compose import float_root
from dynamics_node.loading import urdf_plus
from dynamics_node.multibody.reference import REFERENCE_MARGIN
from singular_loops import dead_point, ROCKER_DRIVEN
from urdf_text import four_bar, joint, link, robot

MODELS = Path(__file__).parents[1] / 'models'
CASSIE = (str(MODELS / 'cassie_like_leg.urdf'), str(MODELS / 'cassie_like_leg.yaml'))
BIPED = (str(MODELS / 'loop_ankle_biped.urdf'), str(MODELS / 'loop_ankle_biped.yaml'))
BOX = robot(link('box'))


def positions_by_joint(model):
    """{joint: its positions} of the reference configuration."""
    q = model.reference_positions
    return {name: q[model.idx_q[b]:model.idx_q[b] + model.nq_body[b]]
            for b, name in enumerate(model.joint_names, start=1)}


@pytest.mark.parametrize('description, closures', [
    (bundled_model('four_bar'), None), (bundled_model('six_bar'), None), CASSIE, BIPED])
def test_a_part_keeps_its_reference_branch_in_a_scene(description, closures):
    """Alone, hung floating, after an unrelated box, under a prefix: the same reference joint by
    joint (each cluster's search is seeded by the cluster alone)."""
    alone = positions_by_joint(load_model(description, closures=closures))
    scenes = {
        'floating': (compose([Part(description, 'p_', joint='floating', closures=closures)]),
                     'p_'),
        'after a box': (compose([Part(BOX, 'box_', joint='floating'),
                                 Part(description, 'r_', closures=closures)]), 'r_'),
        'floating_base': (float_root(urdf_plus(description, closures) if closures
                                     else description), ''),
    }
    for label, (scene, prefix) in scenes.items():
        found = positions_by_joint(load_model(scene))
        for name, q in alone.items():
            assert np.array_equal(found[prefix + name], q), f'{label}: joint {name}'


def test_floating_base_for_a_file_without_one(rng):
    """load_model(floating_base=True): the root link hangs on 'root_joint' from a new link 'world';
    the joints' mass matrix is the fixed robot's (at the base's identity pose), the base carries
    the robot's weight, every name stays; a massless root fixed to one child has that joint made
    floating; a description with a floating joint, or a link 'world' in the way, is refused."""
    fixed = load_model(bundled_model('linkage_leg'))
    floating = load_model(bundled_model('linkage_leg'), floating_base=True)
    assert floating.floating_base_joint == 'root_joint' and floating.root_link == 'world'
    assert floating.joint_names == ('root_joint',) + fixed.joint_names
    assert floating.links == ('world',) + fixed.links
    assert np.array_equal(floating.reference_positions[7:], fixed.reference_positions)
    q = fixed.complete_positions([0.3, -0.2])
    q_floating = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, q]
    assert_close(floating.mass_matrix(q_floating)[6:, 6:], fixed.mass_matrix(q), 'H_y joints')
    mass = sum(I[5, 5] for I in fixed.inertia)
    base = floating.gravity_forces(q_floating)[:6]
    assert_close(base[:3], [0.0, 0.0, 9.81 * mass], 'the base carries the weight')
    world = robot(link('world', ''), link('base'), link('arm'),
                  joint('world_joint', 'world', 'base', 'fixed', origin='0 0 0.5'),
                  joint('arm_joint', 'base', 'arm'))
    hung = load_model(world, floating_base=True)
    assert hung.floating_base_joint == 'world_joint' and hung.root_link == 'world'
    assert_close(hung.link_pose(hung.reference_positions, 'base')[1], [0.0, 0.0, 0.5],
                 'the fixed joint\'s placement is the floating base\'s origin')
    by_name = ('<robot name="n"><link name="base"/>' + link('arm') + '<joint name="j" '
               'type="revolute"><parent name="base"/><child name="arm"/><axis xyz="0 0 1"/>'
               '</joint></robot>')                       # URDF+ names links by name= too
    assert load_model(by_name, floating_base=True).joint_names == ('root_joint', 'j')
    assert load_model(compose([Part(by_name, 'a_'), Part(by_name, 'b_', joint='floating')])
                      ).joint_names == ('a_j', 'b_root_joint', 'b_j')
    with pytest.raises(ModelError, match=r"^floating_base: the description has the floating "
                                         r"joint 'floating_base' already; load it without"):
        load_model(bundled_model('quadruped_rotors'), floating_base=True)
    named = robot(link('base'), link('world'), joint('j', 'base', 'world'))
    with pytest.raises(ModelError, match=r"^floating_base: the description has a link named "
                                         r"'world', which the floating base of its root link "
                                         r"'base' needs$"):
        load_model(named, floating_base=True)
    with pytest.raises(ModelError, match=r"^floating_base must be True or False, got 'yes'$"):
        load_model(bundled_model('four_bar'), floating_base='yes')


def test_the_reference_keeps_clear_of_singularities():
    """The automatic reference of every test model with loops: its neighbourhood (every
    independent coordinate moved by 0.05 rad) stays within REFERENCE_MARGIN of its amplification,
    and the load warns of none. A reference given next to the rocker-driven four-bar's dead point
    is kept, with a warning that names the cluster, amplification_limit and
    reference_positions."""
    for description, closures in (CASSIE, BIPED, (bundled_model('four_bar'), None),
                                  (ROCKER_DRIVEN, None)):
        model = load_model(description, closures=closures)
        for cluster in model.cluster_list:
            if not cluster.linear:
                assert cluster.reference_neighbourhood <= REFERENCE_MARGIN * \
                    model.reference_amplification[cluster.index], cluster.name
        assert not [w for w in model.warnings if 'singularity' in w]
    _, _, extreme = dead_point('stretched')
    near = load_model(ROCKER_DRIVEN, amplification_limit=1e8).complete_positions([extreme - 0.01])
    model = load_model(ROCKER_DRIVEN, reference_positions=near)
    assert np.array_equal(model.reference_positions, near)
    (warning,) = [w for w in model.warnings if 'singularity' in w]
    assert warning.startswith("cluster 'crank': its reference configuration lies near a "
                              'singularity (a configuration 0.05 rad from it is singular)')
    assert 'reference_positions' in warning and 'amplification_limit' in warning


def test_loops_that_cannot_close_are_refused_with_what_was_tried():
    """A four-bar whose coupler is too short to reach the rocker: every start and the
    least-squares settling leave the loop open; the message names the loop, the residual and what
    was tried."""
    with pytest.raises(ModelError, match=r"^cluster 'crank' .*: its loops close from none of 16 "
                                         r'random starts \(joint angles up to 0.3, 1, 3.14 rad\), '
                                         r'and least squares from the best leaves them open by '
                                         r"0.2 together, most at 'closure': no closed "
                                         r'configuration may exist'):
        load_model(four_bar(lengths=(0.1, 0.4, 0.3)))
