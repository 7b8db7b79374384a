"""The joint-type table: what every layer needs to know of a joint type (its dimensions, which
loops and couplings it may join, what a message can carry of it, what the compiled completion
closes), in one place. A joint type's motion subspace and transform are written in
multibody/joints.py (jcalc) and its kernel twin kernels/joints.py; nothing else switches on a
type's name."""

from dataclasses import dataclass

import numpy as np

# Codes the kernels switch on (kernels/joints.py, continuous = revolute).
REVOLUTE, PRISMATIC, FLOATING, SPHERICAL, PLANAR = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class JointType:
    """A row of the joint-type table."""

    code: int              # kernels' code, -1 for types that are no body joint (fixed, universal)
    nq: int                # positions
    nv: int                # velocities
    kind: str              # couplings relate joints of one kind: rotational, translational or none
    quaternion_at: int     # first position index of its unit quaternion, -1 without one
    axis: bool             # reads <axis>
    loop_rows: tuple       # as a <loop>: (rotation rows, position rows) kept (constraints.py),
    #                        None: no loop
    in_loops: bool         # may lie on a loop's or coupling's path
    carried: bool          # a JointState carries its position and velocity (one value per joint
    #                        name)
    compiled_completion: tuple  # roles the compiled completion closes ('independent', 'dependent',
    #                             'split')
    span: float            # random positions: coordinates uniform in [-span, span] (rad or m; at
    #                        most)


ONE = ('independent', 'dependent')
TYPES = {
    'revolute': JointType(REVOLUTE, 1, 1, 'rotational', -1, True, ('e1 e2', 'all'), True, True,
                          ONE, np.pi),
    'continuous': JointType(REVOLUTE, 1, 1, 'rotational', -1, True, ('e1 e2', 'all'), True, True,
                            ONE, np.pi),
    'prismatic': JointType(PRISMATIC, 1, 1, 'translational', -1, True, ('all', 'e1 e2'), True,
                           True, ONE, 0.3),
    'fixed': JointType(-1, 0, 0, '', -1, False, ('all', 'all'), True, True, (), 0.0),
    'floating': JointType(FLOATING, 7, 6, '', 3, False, None, False, False, (), np.pi),
    'spherical': JointType(SPHERICAL, 4, 3, '', 0, False, ('', 'all'), True, False,
                           ('dependent', 'split'), np.pi),
    'planar': JointType(PLANAR, 3, 3, '', -1, True, ('e1 e2', 'axis'), True, False, (), np.pi),
    'universal': JointType(-1, 2, 2, '', -1, True, ('a1 x a2', 'all'), True, True, (), np.pi),
}
NQ = {name: t.nq for name, t in TYPES.items()}
NV = {name: t.nv for name, t in TYPES.items()}
