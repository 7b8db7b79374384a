"""Generated robots of the benchmarks, and the published ones they use where installed.

- jvrc_like(): a floating robot shaped like the published JVRC-1 with a geared rotor on every joint
  (the modified JVRC-1 of Chignoli et al. 2023): the bundled robots stop at 42 spanning dof;
- pendulum(), arm6(): the small robots on which a call's fixed cost decides the race (2 and 6 dof);
- published_arms(): 6-dof arms of example-robot-data (UR5, SO-100, Kinova), where installed.

jvrc_like: floating pelvis; legs 2 x 6 joints, waist 1, neck 1, arms 2 x 7: 28 joints, each with a
rotor sibling (child of the joint's parent, same origin and axis, ratio 6, as
quadruped_rotors.urdf), so 57 moving bodies, 62 spanning and 34 independent dof. Masses and lengths
are plausible, not JVRC-1's.
"""

from importlib import metadata
import math
import os

LIMIT = '<limit lower="-3" upper="3" effort="100" velocity="10"/>'
AXES = ('0 0 1', '1 0 0', '0 1 0')


def _link(name, mass, length):
    i = mass * length * length / 12 + 1e-4
    return (f'<link name="{name}"><inertial><origin xyz="0 0 {-length / 2}"/><mass '
            f'value="{mass}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i * 1.1}" iyz="0" '
            f'izz="{2e-3 + mass * 1e-3}"/></inertial></link>')


def _geared_joint(name, parent, child, axis, origin):
    rotor = f'{name}_rotor'
    return ''.join((
        _link(child, 1.5, 0.25),
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{origin}"/><axis xyz="{axis}"/>{LIMIT}</joint>',
        f'<link name="{rotor}"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" '
        'iyy="1e-4" iyz="0" izz="2e-4"/></inertial></link>',
        f'<joint name="{rotor}_joint" type="revolute" independent="false"><parent '
        f'link="{parent}"/><child link="{rotor}"/><origin xyz="{origin}"/><axis '
        f'xyz="{axis}"/>{LIMIT}</joint>',
        f'<coupling name="{name}_gear"><predecessor link="{child}"/><successor link="{rotor}"/>'
        '<ratio value="6"/></coupling>'))


def _chain(prefix, parent, joints, origin):
    parts = []
    for i in range(joints):
        child = f'{prefix}_link{i}'
        parts.append(_geared_joint(f'{prefix}_joint{i}', parent, child, AXES[i % 3],
                                   origin if i == 0 else '0 0 -0.25'))
        parent = child
    return ''.join(parts)


def jvrc_like():
    """URDF+ text of the generated JVRC-1-like geared humanoid (62 spanning dof)."""
    parts = ['<robot name="jvrc_like"><link name="world"/>', _link('pelvis', 10.0, 0.2),
             '<joint name="floating_base" type="floating"><parent link="world"/><child '
             'link="pelvis"/></joint>',
             _chain('left_leg', 'pelvis', 6, '0 0.1 -0.1'),
             _chain('right_leg', 'pelvis', 6, '0 -0.1 -0.1'),
             _chain('waist', 'pelvis', 1, '0 0 0.1')]
    parts += [_chain('neck', 'waist_link0', 1, '0 0 0.3'),
              _chain('left_arm', 'waist_link0', 7, '0 0.2 0.25'),
              _chain('right_arm', 'waist_link0', 7, '0 -0.2 0.25'), '</robot>']
    return ''.join(parts)


def _body(name, mass, com, diagonal):
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia '
            f'ixx="{diagonal[0]}" ixy="0" ixz="0" iyy="{diagonal[1]}" iyz="0" '
            f'izz="{diagonal[2]}"/></inertial></link>')


def _serial(name, links):
    """URDF of a serial chain: links = [(origin xyz, origin rpy, axis, mass, com, inertia
    diagonal)]."""
    parts, parent = [f'<robot name="{name}"><link name="base"/>'], 'base'
    for k, (xyz, rpy, axis, mass, com, diagonal) in enumerate(links):
        parts.append(_body(f'link{k}', mass, com, diagonal))
        parts.append(f'<joint name="joint{k}" type="revolute"><parent link="{parent}"/><child '
                     f'link="link{k}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis '
                     f'xyz="{axis}"/>{LIMIT}</joint>')
        parent = f'link{k}'
    return ''.join(parts) + '</robot>'


def pendulum():
    """A planar double pendulum: two 1 kg, 0.5 m links about parallel axes."""
    return _serial('pendulum',
                   [('0 0 0', '0 0 0', '0 1 0', 1.0, '0 0 -0.25', (0.021, 0.021, 1e-3)),
                    ('0 0 -0.5', '0 0 0', '0 1 0', 1.0, '0 0 -0.25', (0.021, 0.021, 1e-3))])


def arm6():
    """A 6-dof arm with the link lengths and masses Universal Robots publishes for the UR5 (its
    inertias are plausible, not UR's)."""
    d1, a2, a3, d4, d5 = 0.089159, 0.425, 0.39225, 0.10915, 0.09465
    masses = (3.7, 8.393, 2.275, 1.219, 1.219, 0.1879)
    frames = ((f'0 0 {d1}', '0 0 0', '0 0 1'), ('0 0.13585 0', f'0 {math.pi / 2} 0', '0 1 0'),
              (f'0 -0.1197 {a2}', '0 0 0', '0 1 0'), (f'0 0 {a3}', f'0 {math.pi / 2} 0', '0 1 0'),
              (f'0 {d4 - 0.13585 + 0.1197} 0', '0 0 0', '0 0 1'), (f'0 0 {d5}', '0 0 0', '0 1 0'))
    coms = ('0 0 0', '0 0 0.28', '0 0 0.25', '0 0 0', '0 0 0', '0 0 0')
    return _serial('arm6', [frame + (m, com, (0.01 + 0.02 * m, 0.01 + 0.02 * m, 0.005 + 0.005 * m))
                            for frame, m, com in zip(frames, masses, coms)])


PUBLISHED_ARMS = {'UR5': 'ur_description/urdf/ur5_robot.urdf',
                  'SO-100': 'so_arm_description/urdf/so100.urdf',
                  'Kinova': 'kinova_description/robots/kinova.urdf'}


def published_arms():
    """{name: URDF path} of the 6-dof arms of example-robot-data, {} where it is not installed."""
    try:
        robots = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
    except metadata.PackageNotFoundError:
        return {}
    paths = {name: os.path.join(robots, path) for name, path in PUBLISHED_ARMS.items()}
    return {name: path for name, path in paths.items() if os.path.exists(path)}
