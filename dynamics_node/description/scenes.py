"""The systems of Table II of Sathya & Carpentier 2025 (Constrained Articulated Body Algorithms
for Closed-Loop Mechanisms), composed as scenes (compose.py), each returned as URDF+ XML for
load_model.

The robots come as paths: the Allegro hands (allegro_hand_description/urdf/allegro_right_hand.urdf
and allegro_left_hand.urdf) and the humanoid
(simple_humanoid_description/urdf/simple_humanoid.urdf, the paper's footnote 5) of
example-robot-data, and a Digit-like biped with three 6D-welded loops per
leg (test/models/digit_like_biped.urdf). The cube and the box are free floating bodies. The paper's
contact constraints (fingertips on the cube T_3D, feet on the ground F_6D, wrists on the box) are
not part of these descriptions: they close loops across the parts of the scene.

| function | Table II system | nv (paper) |
|---|---|---|
| hand_cube | AH-cube | 22 |
| hands_cube | AH^2-cube | 38 |
| humanoid_hands_cube | Hum-AH^2-cube | 73 |
| biped_box | Digit-cube | 50 (here 62: the biped's rods keep their ball joints) |
| bipeds_box | Digit^2-cube | 94 (here 118) |
"""

from .compose import compose, Part

CUBE = (0.1, 0.08)                 # side (m), mass (kg) of the hands' cube
BOX = ((0.4, 0.3, 0.3), 5.0)       # sides (m), mass (kg) of the bipeds' box
BIPED_HEIGHT = 1.48                # m: the Digit-like biped's pelvis above its soles at q = 0


def box(sides, mass, name='body'):
    """URDF of one solid box link (uniform density, frame at its centre)."""
    x, y, z = sides
    moments = (mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12,
               mass * (x * x + y * y) / 12)
    return (f'<robot name="{name}"><link name="{name}"><inertial><mass value="{mass!r}"/>'
            f'<inertia ixx="{moments[0]!r}" ixy="0" ixz="0" iyy="{moments[1]!r}" iyz="0" '
            f'izz="{moments[2]!r}"/></inertial></link></robot>')


def _cube(placement):
    side, mass = CUBE
    return Part(box((side,) * 3, mass), 'cube_', placement, 'floating')


def hand_cube(hand):
    """AH-cube: an Allegro hand fixed to the world, palm up, and a free cube over its fingers
    (nv = 16 + 6 = 22)."""
    return compose([Part(hand, 'hand_'), _cube(((0.0, 0.0, 0.15), (0.0, 0.0, 0.0)))],
                   name='hand_cube')


def hands_cube(right_hand, left_hand):
    """AH^2-cube: two Allegro hands facing each other across a free cube
    (nv = 2 x 16 + 6 = 38)."""
    return compose([Part(right_hand, 'right_hand_', ((0.0, -0.12, 0.0), (-1.5708, 0.0, 0.0))),
                    Part(left_hand, 'left_hand_', ((0.0, 0.12, 0.0), (1.5708, 0.0, 0.0))),
                    _cube(((0.0, 0.0, 0.1), (0.0, 0.0, 0.0)))], name='hands_cube')


def humanoid_hands_cube(humanoid, right_hand, left_hand, wrists=('r_wrist', 'l_wrist')):
    """Hum-AH^2-cube: a floating humanoid (its root link on a floating joint), an Allegro hand
    fixed at each wrist link (wrists: the humanoid's right and left wrist links, those of
    simple_humanoid.urdf by default) and a free cube in front of it
    (nv = 6 + 29 + 2 x 16 + 6 = 73 with simple_humanoid)."""
    identity = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    return compose([Part(humanoid, 'humanoid_', ((0.0, 0.0, 0.8), (0.0, 0.0, 0.0)), 'floating'),
                    Part(right_hand, 'right_hand_', identity, 'fixed', f'humanoid_{wrists[0]}'),
                    Part(left_hand, 'left_hand_', identity, 'fixed', f'humanoid_{wrists[1]}'),
                    _cube(((0.35, 0.0, 0.9), (0.0, 0.0, 0.0)))], name='humanoid_hands_cube')


def _box(height):
    sides, mass = BOX
    return Part(box(sides, mass), 'box_', ((0.0, 0.0, height), (0.0, 0.0, 0.0)), 'floating')


def biped_box(biped):
    """Digit-cube: the biped (its own floating base) standing at the origin and a free box at its
    wrists' height in front of it (nv = 56 + 6 = 62 with digit_like_biped.urdf)."""
    return compose([Part(biped, 'biped_', ((0.0, 0.0, BIPED_HEIGHT), (0.0, 0.0, 0.0))),
                    _box(BIPED_HEIGHT - 0.3)], name='biped_box')


def bipeds_box(biped):
    """Digit^2-cube: two bipeds facing each other 1 m apart and a free box between them
    (nv = 2 x 56 + 6 = 118 with digit_like_biped.urdf)."""
    return compose([Part(biped, 'a_', ((-0.5, 0.0, BIPED_HEIGHT), (0.0, 0.0, 0.0))),
                    Part(biped, 'b_', ((0.5, 0.0, BIPED_HEIGHT), (0.0, 0.0, 3.141592653589793))),
                    _box(BIPED_HEIGHT - 0.3)], name='bipeds_box')
