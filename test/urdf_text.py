"""URDF+ text of small robots written inline: links, joints, a geared arm and a planar four-bar
(shared by the tests of several folders)."""


INERTIAL = ('<inertial><mass value="1"/><origin xyz="0.1 0 0"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>')


LIMIT = '<limit lower="-3.2" upper="3.2" effort="100" velocity="10"/>'


def link(name, inertial=INERTIAL):
    return f'<link name="{name}">{inertial}</link>'


def joint(name, parent, child, kind='revolute', extra='', attributes='', origin='0 0 0.1'):
    return (f'<joint name="{name}" type="{kind}" {attributes}><parent link="{parent}"/><child '
            f'link="{child}"/><origin xyz="{origin}"/><axis xyz="0 0 1"/>{LIMIT}{extra}</joint>')


def robot(*elements):
    return '<robot name="test">' + ''.join(elements) + '</robot>'


def geared(ratio='6', rotor_attributes='independent="false"', rotor_kind='revolute'):
    return robot(link('base', ''), link('arm'), link('rotor'),
                 joint('arm_joint', 'base', 'arm'),
                 joint('rotor_joint', 'base', 'rotor', rotor_kind, attributes=rotor_attributes),
                 f'<coupling name="gear"><predecessor link="arm"/><successor link="rotor"/>'
                 f'<ratio value="{ratio}"/></coupling>')


def four_bar(marks=('', 'independent="false"', 'independent="false"'), lengths=(0.3, 1.0, 0.5)):
    """Planar four-bar: ground 1 m, crank, coupler and rocker lengths (a crank-rocker by
    default)."""
    crank, coupler, rocker = lengths
    return robot(link('base', ''), link('crank'), link('coupler'), link('rocker'),
                 joint('crank_joint', 'base', 'crank', attributes=marks[0], origin='0 0 0'),
                 joint('coupler_joint', 'crank', 'coupler', attributes=marks[1],
                       origin=f'{crank} 0 0'),
                 joint('rocker_joint', 'base', 'rocker', attributes=marks[2], origin='1 0 0'),
                 '<loop name="closure" type="revolute"><predecessor link="coupler"><origin '
                 f'xyz="{coupler} 0 0"/></predecessor><successor link="rocker"><origin '
                 f'xyz="{rocker} 0 0"/></successor><axis xyz="0 0 1"/></loop>')


def inertial(ixx, iyy, izz, mass=1.0):
    return (f'<inertial><mass value="{mass}"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" '
            f'iyz="0" izz="{izz}"/></inertial>')
