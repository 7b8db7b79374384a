"""Table 1c: where a loop robot's H_y time goes. The fused mass-matrix call and the loop clusters'
explicit constraints (K, its sparse QR and G; kinematics.explicit_constraints) timed n at a time
inside one compiled call, where code, caches and branch predictors stay warm, next to the same
fused call entered from Python.

compile_loops() must run before the first FastPath.warm_up() of the process, which forbids
compilation of the kernels these loops call."""

import time

import numpy as np
from numba import njit, types, typeof

from dynamics_node.kernels import calls, kinematics
from dynamics_node.kernels.borrowed import INPUT_VECTOR

CALLS, REPEATS = 1000, 30


@njit(cache=True)
def _mass_matrix_calls(x, q, n):
    for _ in range(n):
        calls.mass_matrix(x, q)


@njit(cache=True)
def _loop_constraint_calls(x, q, n):
    kinematics.update_transforms(x.m, x.d, q)
    for _ in range(n):
        kinematics.explicit_constraints(x.m, x.d, x.d.zero_y, False)


def compile_loops(fast):
    """Compiles both loops for the handle types of a FastPath (any model's: the types are the
    same)."""
    signature = (typeof(fast._x), INPUT_VECTOR, types.int64)
    for loop in (_mass_matrix_calls, _loop_constraint_calls):
        loop.compile(signature)


def warm_times(fast, q):
    """Median us per call, warm: (fused mass-matrix call, explicit constraints of the loop
    clusters)."""
    def median(loop):
        loop(fast._x, q, CALLS)
        samples = []
        for _ in range(REPEATS):
            start = time.perf_counter_ns()
            loop(fast._x, q, CALLS)
            samples.append((time.perf_counter_ns() - start) / CALLS)
        return float(np.median(samples)) / 1e3
    return median(_mass_matrix_calls), median(_loop_constraint_calls)
