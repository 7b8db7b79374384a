"""Cluster formation (Chignoli, Slotine et al. 2024, Alg. 1-3) on the bundled robots and on small
mechanisms, each mechanism's dynamics checked against the independent oracle."""

import numpy as np
import pinocchio as pin
import pytest

from conftest import assert_close, random_state, robot
from dynamics_node import bundled_model, load_model
from oracle import KKTOracle
from urdf_text import joint, LIMIT, link

# robot -> sorted multi-body clusters (their joints) and the number of clusters
EXPECTED_CLUSTERS = {
    'four_bar': ([('coupler_joint', 'crank_joint', 'rocker_joint')], 1),
    'six_bar': ([('coupler1_joint', 'coupler2_joint', 'crank_joint', 'rocker1_joint',
                  'rocker2_joint')], 1),
    'belt_leg': ([('ankle_joint', 'ankle_rotor_joint', 'knee_joint', 'knee_rotor_joint'),
                  ('hip_joint', 'hip_rotor_joint')], 2),
    'linkage_leg': ([('coupler_joint', 'crank_joint', 'motor_rotor_joint', 'shank_joint')], 2),
}


@pytest.mark.parametrize('name', sorted(EXPECTED_CLUSTERS))
def test_bundled_clusters(name):
    model = robot(name)
    multi = sorted(tuple(sorted(c.joints)) for c in model.clusters if len(c.joints) > 1)
    assert multi == EXPECTED_CLUSTERS[name][0], f'multi-body clusters of {name}'
    assert len(model.clusters) == EXPECTED_CLUSTERS[name][1], f'cluster count of {name}'


@pytest.mark.parametrize('name, pairs',
                         [('geared_chain', 4), ('quadruped_rotors', 12), ('humanoid_belts', 14)])
def test_geared_robots_pair_every_rotor_with_its_link(name, pairs):
    model = robot(name)
    two = [c for c in model.clusters if len(c.joints) == 2]
    assert len(two) == pairs
    for cluster in two:
        assert (len(cluster.dependent_joints) == 1
                and 'rotor' in cluster.dependent_joints[0]), str(cluster)


def test_clusters_form_a_tree_in_regular_order():
    model = robot('humanoid_belts')
    names = [c.name for c in model.clusters]
    for position, cluster in enumerate(model.clusters):
        assert cluster.parent == '' or names.index(cluster.parent) < position, cluster.name
    assert sum(len(c.joints) for c in model.clusters) == len(model.joint_names)


def test_belt_coupling_spans_two_joints():
    """q_ankle_rotor = 12 (q_knee + q_ankle): the coupling's NCA is the thigh, not the foot's
    parent."""
    model = robot('belt_leg')
    names = list(model.independent_joint_names)
    q = model.complete_positions([0.1, 0.2, 0.3])
    position = dict(zip(model.joint_names, q))
    assert names == ['hip_joint', 'knee_joint', 'ankle_joint']
    assert position['ankle_rotor_joint'] == pytest.approx(12 * (0.2 + 0.3), abs=1e-12)
    assert position['knee_rotor_joint'] == pytest.approx(12 * 0.2, abs=1e-12)


def _compare_with_oracle(xml, rng, states=3):
    model = load_model(xml)
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    for _ in range(states):
        q, yd, wrenches = random_state(model, rng)
        v = model.spanning_velocities(q, yd)
        tau = rng.normal(size=model.nv)
        assert_close(model.forward_dynamics(q, yd, tau, wrenches),
                     reference.forward_dynamics(q, v, tau, wrenches), 'qdd')
        G = reference.null_space_G(q, model.independent_joint_names)
        assert_close(model.mass_matrix(q), G.T @ reference.mass_matrix(q) @ G, 'H_y')
    return model


def test_slider_crank_with_a_prismatic_joint_in_the_loop(rng):
    xml = ('<robot name="slider_crank">' + link('base', '') + link('crank') + link('rod')
           + link('slider')
           + joint('crank_joint', 'base', 'crank', origin='0 0 0')
           + joint('rod_joint', 'crank', 'rod', origin='0.2 0 0', attributes='independent="false"')
           + '<joint name="slide" type="prismatic" independent="false"><parent link="base"/>'
             '<child link="slider"/><origin xyz="0 0 0"/><axis xyz="1 0 0"/><limit lower="-1" '
             'upper="1" effort="1" velocity="1"/></joint><loop name="pin" type="revolute">'
             '<predecessor link="rod"><origin xyz="0.6 0 0"/></predecessor>'
             '<successor link="slider"/><axis xyz="0 0 1"/></loop></robot>')
    model = _compare_with_oracle(xml, rng)
    assert model.clusters[0].dependent_joints == ('rod_joint', 'slide')


def _rpy(R):
    return np.arctan2(R[2, 1], R[2, 2]), -np.arcsin(R[2, 0]), np.arctan2(R[1, 0], R[0, 0])


def test_spatial_weld_loop_between_two_arms(rng):
    """Two 4-joint arms with skewed axes, tips welded by a fixed loop (closed at q = 0 by
    construction): 6 independent constraint rows, 2 DoF."""
    axes = ['0 0 1', '0 1 0', '1 0 0', '0 0.6 0.8']
    parts = [link('base', '')]
    for arm, y in (('a', '0.3'), ('b', '-0.3')):
        parent = 'base'
        for i, axis in enumerate(axes):
            child = f'{arm}{i}'
            parts.append(link(child))
            origin = f'0 {y} 0.1' if i == 0 else '0.25 0 0'
            parts.append(f'<joint name="{child}_joint" type="revolute"><parent link="{parent}"/>'
                         f'<child link="{child}"/><origin xyz="{origin}" rpy="0.1 0.2 0.3"/><axis '
                         f'xyz="{axis}"/>{LIMIT}</joint>')
            parent = child
    open_chain = load_model('<robot name="two_arms">' + ''.join(parts) + '</robot>')
    R_a, p_a = open_chain.link_pose(np.zeros(8), 'a3')
    R_b, p_b = open_chain.link_pose(np.zeros(8), 'b3')
    tip = p_a + R_a @ np.array([0.2, 0.0, 0.0])
    xyz = ' '.join(f'{x:.17g}' for x in R_b.T @ (tip - p_b))
    rpy = ' '.join(f'{x:.17g}' for x in _rpy(R_b.T @ R_a))
    parts.append('<loop name="weld" type="fixed"><predecessor link="a3">'
                 '<origin xyz="0.2 0 0"/></predecessor>'
                 f'<successor link="b3"><origin xyz="{xyz}" rpy="{rpy}"/></successor></loop>')
    xml = '<robot name="two_arms">' + ''.join(parts) + '</robot>'
    model = load_model(xml)
    assert model.ny == 2 and len(model.clusters) == 1
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    for _ in range(3):
        q = model.complete_positions(rng.uniform(-0.15, 0.15, 2))
        yd, tau = rng.normal(size=2), rng.normal(size=8)
        v = model.spanning_velocities(q, yd)
        assert_close(model.forward_dynamics(q, yd, tau), reference.forward_dynamics(q, v, tau),
                     'qdd')


def test_mimic_is_read_as_a_coupling(rng):
    xml = ('<robot name="gripper">' + link('base', '') + link('left') + link('right')
           + joint('left_joint', 'base', 'left', origin='0 0.05 0')
           + joint('right_joint', 'base', 'right', origin='0 -0.05 0',
                   extra='<mimic joint="left_joint" multiplier="-1" offset="0.1"/>') + '</robot>')
    model = _compare_with_oracle(xml, rng)
    assert model.independent_joint_names == ('left_joint',)
    assert model.complete_positions([0.3]) == pytest.approx([0.3, -0.2])


def test_single_body_clusters_reduce_to_pinocchio_aba_rnea_crba(rng):
    """Chignoli et al. 2023 Sec. 8 item 12: without constraints the cluster algorithms are RNEA,
    ABA and CRBA."""
    xml = open(bundled_model('quadruped_rotors')).read()
    for tag in ('coupling',):
        while f'<{tag} ' in xml:
            start = xml.index(f'<{tag} ')
            xml = xml[:start] + xml[xml.index(f'</{tag}>', start) + len(f'</{tag}>'):]
    xml = xml.replace('independent="false"', '')
    model = load_model(xml)
    assert all(len(c.joints) == 1 for c in model.clusters) and model.ny == model.nv
    reference = KKTOracle(xml)
    reference.set_layout(model.joint_names)
    pm, pd = reference.model, reference.data
    for _ in range(3):
        q = reference.random_configuration(rng)
        v, tau, a = rng.normal(size=(3, model.nv))
        qp, vp = reference.q_to_pin(q), reference.v_to_pin(v)
        assert_close(model.forward_dynamics(q, v, tau), reference.v_from_pin(
            pin.aba(pm, pd, qp, vp, reference.v_to_pin(tau))), 'ABA vs pin.aba')
        assert_close(model.inverse_dynamics(q, v, a), reference.v_from_pin(
            pin.rnea(pm, pd, qp, vp, reference.v_to_pin(a))), 'RNEA vs pin.rnea')
        P = reference._vperm
        assert_close(model.mass_matrix(q), pin.crba(pm, pd, qp)[np.ix_(P, P)], 'CRBA vs pin.crba')


def test_inertial_without_rpy_and_with_rpy_agree_when_equivalent():
    """An inertia given in a rotated inertial frame equals the same tensor pre-rotated into the
    link."""
    rotated = link('arm', '<inertial><mass value="2"/><origin xyz="0.1 0 0" '
                          'rpy="0 0 1.5707963267948966"/><inertia ixx="0.01" ixy="0" ixz="0" '
                          'iyy="0.03" iyz="0" izz="0.02"/></inertial>')
    aligned = link('arm', '<inertial><mass value="2"/><origin xyz="0.1 0 0"/><inertia ixx="0.03" '
                          'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/></inertial>')
    models = [load_model('<robot name="r">' + link('base', '') + arm
                         + joint('j', 'base', 'arm').replace('0 0 1', '1 0 0') + '</robot>')
              for arm in (rotated, aligned)]
    assert_close(models[0].mass_matrix([0.2]), models[1].mass_matrix([0.2]), 'H with inertial rpy')
