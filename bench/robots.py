"""A generated floating robot shaped like the published JVRC-1 with a geared rotor on every joint (seed 003's
modified JVRC-1), for the benchmarks: the bundled robots stop at 42 spanning dof.

Floating pelvis; legs 2 x 6 joints, waist 1, neck 1, arms 2 x 7: 28 joints, each with a rotor sibling
(child of the joint's parent, same origin and axis, ratio 6, as quadruped_rotors.urdf), so 57 moving
bodies, 62 spanning and 34 independent dof. Masses and lengths are plausible, not JVRC-1's.
"""

LIMIT = '<limit lower="-3" upper="3" effort="100" velocity="10"/>'
AXES = ('0 0 1', '1 0 0', '0 1 0')


def _link(name, mass, length):
    i = mass * length * length / 12 + 1e-4
    return (f'<link name="{name}"><inertial><origin xyz="0 0 {-length / 2}"/><mass value="{mass}"/>'
            f'<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i * 1.1}" iyz="0" izz="{2e-3 + mass * 1e-3}"/>'
            '</inertial></link>')


def _geared_joint(name, parent, child, axis, origin):
    rotor = f'{name}_rotor'
    return ''.join((
        _link(child, 1.5, 0.25),
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{origin}"/><axis xyz="{axis}"/>{LIMIT}</joint>',
        f'<link name="{rotor}"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" '
        'iyz="0" izz="2e-4"/></inertial></link>',
        f'<joint name="{rotor}_joint" type="revolute" independent="false"><parent link="{parent}"/>'
        f'<child link="{rotor}"/><origin xyz="{origin}"/><axis xyz="{axis}"/>{LIMIT}</joint>',
        f'<coupling name="{name}_gear"><predecessor link="{child}"/><successor link="{rotor}"/>'
        '<ratio value="6"/></coupling>'))


def _chain(prefix, parent, joints, origin):
    parts = []
    for i in range(joints):
        child = f'{prefix}_link{i}'
        parts.append(_geared_joint(f'{prefix}_joint{i}', parent, child, AXES[i % 3], origin if i == 0 else '0 0 -0.25'))
        parent = child
    return ''.join(parts)


def jvrc_like():
    """URDF+ text of the generated JVRC-1-like geared humanoid (62 spanning dof)."""
    parts = ['<robot name="jvrc_like"><link name="world"/>', _link('pelvis', 10.0, 0.2),
             '<joint name="floating_base" type="floating"><parent link="world"/><child link="pelvis"/></joint>',
             _chain('left_leg', 'pelvis', 6, '0 0.1 -0.1'), _chain('right_leg', 'pelvis', 6, '0 -0.1 -0.1'),
             _chain('waist', 'pelvis', 1, '0 0 0.1')]
    parts += [_chain('neck', 'waist_link0', 1, '0 0 0.3'), _chain('left_arm', 'waist_link0', 7, '0 0.2 0.25'),
              _chain('right_arm', 'waist_link0', 7, '0 -0.2 0.25'), '</robot>']
    return ''.join(parts)
