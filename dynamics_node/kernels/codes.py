"""The rule codes of the public calls: what a compiled call (calls.py) returns, and what the NumPy
checks (validation.py) raise with; faults.py turns a code and its details into the library's
error. Plain Python, so that the NumPy engine reads them where numba is missing.

A call that refuses its input writes the details into its workspace's ``fault`` (argument, index,
value) and returns the code: which argument (the ARGUMENT slots: the call's first, second and third
input), which entry, joint, constraint or cluster, and the offending value.
"""

OK = 0
# statuses of the cluster kinematics and algorithms (kinematics.py; cluster, value in d.info)
SINGULAR_SPLIT, D_NOT_POSITIVE, D_ILL_CONDITIONED, AMPLIFIED = 1, 2, 3, 4
LENGTH = 5                  # argument, -, its number of entries
OUT_OF_BOUND = 6            # argument, entry, its value (NaN, inf or beyond the bound)
QUATERNION = 7              # -, body, the norm of its joint's quaternion
POSITION_VIOLATION = 8      # -, constraint (loops, then couplings: flat/checks.py), violation
VELOCITY_VIOLATION = 9      # argument, cluster, max |K v|
ACCELERATION_VIOLATION = 10  # argument, -, max |a - (G ydd + g)|
NOT_FINITE = 11             # a non-finite result
LIFT_SINGULAR = 12          # the singular status (argument slot), cluster, value: independent
#                             velocities that cannot be lifted to spanning ones
LCABA_NOT_POSITIVE = 13     # -, body whose D = S^T H S is not positive definite
LCABA_REJECTED = 14         # iterations, -, residual: an LCABA result beyond the residual the call
#                             accepts (routing: forward_dynamics.auto_lcaba)
SINGULAR = (SINGULAR_SPLIT, D_NOT_POSITIVE, D_ILL_CONDITIONED, AMPLIFIED)
FIRST, SECOND, THIRD = 0, 1, 2  # the argument slots: q, then v, then tau or a
