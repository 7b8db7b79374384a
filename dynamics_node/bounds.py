"""Bounds on every number a description or a call may carry (SI units).

Each bound lies far beyond any robot and far below overflow, so that the products the algorithms
form stay finite with many orders of magnitude to spare (e.g. ratio^2 x inertia x velocity^2 <=
1e29, mass x length x acceleration <= 1e17; doubles overflow at 1.8e308). Results are checked all
the same (validation.check_finite): a model in absurd units (1e-300 kg) can still overflow.
"""

# Description (URDF+ attributes)
MASS = 1e6                 # kg: <mass value>, per link (a loaded mining truck is 6e5 kg)
INERTIA = 1e9              # kg m^2: each <inertia> entry (30 m, 1e5 kg crane boom: 3e7)
LENGTH = 1e3               # m: every <origin xyz> (joint, inertial, loop frames)
ANGLE = 1e3                # rad: every <origin rpy>
RATIO = 1e4                # <ratio value> and <mimic multiplier> magnitude (gearboxes: up to a few
#                            1000)

# State and requests
POSITION = 1e8             # rad or m: joint positions (a continuous joint's accumulated angle
#                            times a gear ratio; sin/cos of 1e8 rad are still exact to 1e-8) and
#                            <mimic offset>
VELOCITY = 1e6             # rad/s or m/s: a rotor at ratio 1e4 behind a link at 100 rad/s
ACCELERATION = 1e8         # rad/s^2 or m/s^2
FORCE = 1e9                # N or N m: generalized forces and wrench entries
GRAVITY = 1e3              # m/s^2: each gravity component (100 g)
WEIGHT = 1e12              # weights of projected inverse dynamics (ratios of torque scales)
AMPLIFICATION = 1e8        # Model.amplification_limit: above it a singular pose's results lose all
#                            digits
CONTACT_ROWS_PER_BODY = 48  # rows of the contacts of one call (3 per 3D contact, 6 per 6D) per
#                            moving body of the model: sixteen 3D points on each, where at most 6
#                            rows per body are independent (more than ny rows never are); keeps
#                            every contact call and the contact sets kept per model within the
#                            model's size

IMPLICIT_SIZE = 16         # variables and residuals of one <constraint> (expressions.py bounds
#                            each residual's text, nesting and operations)

# Extended URDF closures (YAML): a robot's closures take a few hundred characters
CLOSURES_TEXT = 1_000_000  # characters (bytes of a file) of the YAML text
CLOSURES_DEPTH = 8         # nesting of collections (the closures' own: a mapping of lists of
#                            pairs, 3)
CLOSURES_ENTRIES = 10_000  # entries of each key's list

# Tolerances of the state checks
POSITION_TOLERANCE = 1e-6  # m or rad: |phi(q)| accepted as a closed loop
VELOCITY_TOLERANCE = 1e-6  # relative |v - G yd| accepted as consistent spanning velocities
