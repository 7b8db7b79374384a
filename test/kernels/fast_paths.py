"""The robots of the compiled kernels' tests (the bundled ones and loops the compiled rows could
get wrong) and their FastPath engines, warmed up once per process."""

import functools

from conftest import robot, ROBOTS
from dynamics_node import load_model
from dynamics_node.engines.numba_engine import FastPath
from urdf_text import joint, link, robot as urdf


# Crank-rocker whose crank is the independent joint: a slot on the rocker guides a block hinged at
# the crank tip (a prismatic loop; the bundled robots only close revolute loops).
SLOTTED_ARM = urdf(link('base', ''), link('crank'), link('block'), link('rocker'),
                   joint('crank_joint', 'base', 'crank', origin='0 0 0'),
                   joint('block_joint', 'crank', 'block', origin='0.3 0 0',
                         attributes='independent="false"'),
                   joint('rocker_joint', 'base', 'rocker', origin='-1 0 0',
                         attributes='independent="false"'),
                   '<loop name="slot" type="prismatic"><predecessor link="rocker"/><successor '
                   'link="block"/><axis xyz="1 0 0"/></loop>')


def hinge(name, parent, child, axis, origin, dependent=True):
    mark = 'independent="false"' if dependent else ''
    return (f'<joint name="{name}" type="revolute" {mark}>'
            f'<parent link="{parent}"/><child link="{child}"/><origin xyz="{origin}"/><axis '
            f'xyz="{axis}"/><limit lower="-3.2" upper="3.2" effort="1" velocity="1"/></joint>')


def loop(name, kind, predecessor, at, successor, at_successor, axis='0 0 1', extra=''):
    return (f'<loop name="{name}" type="{kind}"><predecessor link="{predecessor}"><origin '
            f'xyz="{at}"/></predecessor><successor link="{successor}"><origin '
            f'xyz="{at_successor}"/></successor><axis xyz="{axis}"/>{extra}</loop>')


# Loops the compiled rows (in the cluster's output frame) could get wrong where the NCA-based
# reference does not: a four-bar hanging from a turning link A and closed at A itself (its
# predecessor, then its successor, is its NCA: one path is empty; the output body is A, not the
# ground). (delta's loops have their NCA inside their cluster.)
HUNG_FOUR_BAR = ''.join((link('base', ''), link('A'), link('B'), link('C'), link('D'),
                         hinge('A_j', 'base', 'A', '0 1 0', '0 0 0.5', False),
                         hinge('B_j', 'A', 'B', '0 0 1', '0 0 0', False),
                         hinge('C_j', 'B', 'C', '0 0 1', '0.3 0 0'),
                         hinge('D_j', 'C', 'D', '0 0 1', '1.0 0 0')))


EXTRA_MODELS = {
    'closed_at_predecessor_nca': urdf(HUNG_FOUR_BAR,
                                      loop('close', 'revolute', 'A', '1.0 0.2 0', 'D', '0.5 0 0')),
    'closed_at_successor_nca': urdf(HUNG_FOUR_BAR,
                                    loop('close', 'revolute', 'D', '0.5 0 0', 'A', '1.0 0.2 0')),
    'slotted_arm': SLOTTED_ARM,
}


MODELS = ROBOTS + list(EXTRA_MODELS)


@functools.lru_cache(maxsize=None)
def model_and_fast_path(name):
    model = load_model(EXTRA_MODELS[name]) if name in EXTRA_MODELS else robot(name)
    fast = FastPath(model)
    fast.warm_up()
    return model, fast
