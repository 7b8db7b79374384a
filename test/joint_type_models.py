"""Small robots with spherical, planar and universal joints in the tree, inside clusters and as
loops (shared by the tests of several folders)."""


def inertial(mass, com, moments, products=(0.0, 0.0, 0.0)):
    (ixx, iyy, izz), (ixy, ixz, iyz) = moments, products
    return (f'<inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia ixx="{ixx}" '
            f'ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial>')


def link(name, mass=1.0, com='0.05 0.02 -0.03', moments=(0.012, 0.015, 0.009),
         products=(0.001, -0.002, 0.0005)):
    return f'<link name="{name}">{inertial(mass, com, moments, products) if mass else ""}</link>'


def joint(name, kind, parent, child, origin='0 0 0', rpy='0 0 0', axis='0 0 1', extra=''):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{origin}" rpy="{rpy}"/><axis xyz="{axis}"/>{extra}</joint>')


def loop(name, kind, pred, pred_origin, succ, succ_origin, axis='0 0 1', extra=''):
    return (f'<loop name="{name}" type="{kind}"><predecessor link="{pred}"><origin '
            f'xyz="{pred_origin}"/></predecessor><successor link="{succ}"><origin '
            f'xyz="{succ_origin}"/></successor><axis xyz="{axis}"/>{extra}</loop>')


def robot(name, *elements):
    return f'<robot name="{name}">' + ''.join(elements) + '</robot>'


MODELS = {
    # spherical, universal and planar joints (tilted plane) in a tree, with a fixed tip frame
    'tree': robot('tree', link('base', 0), link('upper'), link('lower', 0.8), link('puck', 0.5),
                  link('tip', 0.2),
                  joint('ball', 'spherical', 'base', 'upper', '0 0 0.3', '0.2 -0.1 0.3'),
                  joint('cardan', 'universal', 'upper', 'lower', '0.1 0.05 -0.4', '0 0.3 0',
                        '0 0 1', '<axis2 xyz="1 0 0"/>'),
                  joint('slide', 'planar', 'lower', 'puck', '0 0.2 -0.3', '0.1 0 0', '0.6 0 0.8'),
                  joint('tip_fix', 'fixed', 'puck', 'tip', '0.1 0 0.05', '0.3 0.2 0.1')),
    # a floating base carrying a ball-jointed arm with a universal wrist
    'floating_tree': robot('floating_tree', link('world', 0), link('torso', 3.0), link('arm'),
                           link('hand', 0.4), joint('free', 'floating', 'world', 'torso'),
                           joint('shoulder', 'spherical', 'torso', 'arm', '0.1 0.2 0.3',
                                 '0.3 0 0.1'),
                           joint('wrist', 'universal', 'arm', 'hand', '0 0 -0.3', axis='0 1 0',
                                 extra='<axis2 xyz="0 0 1"/>')),
    # crank - rod on a universal joint - rocker, closed by a spherical loop (RUSR)
    'rusr': robot('rusr', link('base', 0), link('crank'), link('rod', 0.4), link('rocker'),
                  joint('crank_joint', 'revolute', 'base', 'crank'),
                  joint('rod_cardan', 'universal', 'crank', 'rod', '0.2 0 0',
                        extra='<axis2 xyz="0 1 0"/>'),
                  joint('rocker_joint', 'revolute', 'base', 'rocker', '0.6 0.2 0', axis='1 0 0'),
                  loop('ball_end', 'spherical', 'rod', '0.4 0.2 0.3', 'rocker', '0 0 0.3')),
    # crank - rod on a spherical joint (dependent) - rocker, closed by a universal loop (RSUR)
    'rsur': robot('rsur', link('base', 0), link('crank'), link('rod', 0.4), link('rocker'),
                  joint('crank_joint', 'revolute', 'base', 'crank'),
                  joint('rod_ball', 'spherical', 'crank', 'rod', '0.2 0 0'),
                  joint('rocker_joint', 'revolute', 'base', 'rocker', '0.6 0.2 0', axis='1 0 0'),
                  loop('cardan_end', 'universal', 'rod', '0.4 0.2 0.3', 'rocker', '0 0 0.3',
                       '0 0 1', '<axis2 xyz="1 0 0"/>')),
    # crank - rod with ball joints at both ends - rocker (RSSR): the rod's idle spin stays
    # independent
    'rssr': robot('rssr', link('base', 0), link('crank'), link('rod', 0.4), link('rocker'),
                  joint('crank_joint', 'revolute', 'base', 'crank'),
                  joint('rod_ball', 'spherical', 'crank', 'rod', '0.2 0 0'),
                  joint('rocker_joint', 'revolute', 'base', 'rocker', '0.6 0.2 0', axis='1 0 0'),
                  loop('ball_end', 'spherical', 'rod', '0.4 0.2 0.3', 'rocker', '0 0 0.3')),
    # a block on a planar joint (dependent) welded to a two-link arm moving in the same tilted
    # plane
    'planar_block': robot('planar_block', link('base', 0), link('crank'), link('coupler'),
                          link('block', 0.6),
                          joint('crank_joint', 'revolute', 'base', 'crank', axis='0 0.6 0.8'),
                          joint('coupler_joint', 'revolute', 'crank', 'coupler', '0.3 0 0',
                                axis='0 0.6 0.8'),
                          joint('block_plane', 'planar', 'base', 'block', '0.7 0 0',
                                axis='0 0.6 0.8'),
                          loop('weld', 'fixed', 'coupler', '0.4 0 0', 'block', '0 0 0')),
    # a leg whose foot slides flat on the floor: a planar loop with a redundant row (3 rows, rank
    # 2)
    'planar_foot': robot('planar_foot', link('base', 0), link('hip'), link('thigh'), link('shank'),
                         link('foot', 0.3), joint('yaw', 'revolute', 'base', 'hip'),
                         joint('thigh_joint', 'revolute', 'hip', 'thigh', '0 0 0.4', axis='0 1 0'),
                         joint('knee', 'revolute', 'thigh', 'shank', '0.2 0 0', axis='0 1 0'),
                         joint('ankle', 'revolute', 'shank', 'foot', '0.4 0 -0.4', axis='0 1 0'),
                         loop('floor', 'planar', 'base', '0 0 0', 'foot', '0 0 0')),
}
