"""What the tests of the whole-body terms share (test_centroidal.py, test_coriolis.py,
test_regressor.py): the published trees with their Pinocchio models, the compiled kernels on a
model's flat workspace, random states and completed motions.

A completed motion moves the positioned independent coordinates with velocities yd and
accelerations ydd at t = 0: on fixed-base robots y(t) = y0 + yd t + ydd t^2 / 2 completed by
complete_positions (loops closed to 1e-12); on the floating-base robots with couplings only
(constant G), q(t) = q0 (+) G (yd t + ydd t^2 / 2) with Pinocchio's integrate, whose free-flyer
exponential has the body velocity yd + ydd t + O(t^2); with loops, the base so and the other
coordinates completed.
"""

import functools

import numpy as np

from conftest import oracle, published_file, random_independent_positions, robot
from dynamics_node import load_model
from dynamics_node.kernels.borrowed import Borrowed
from dynamics_node.kernels.flat.model import FlatModel
from dynamics_node.data import Data
from oracle import KKTOracle
from test_contacts import published

TREES = {
    'solo12': lambda: published('solo_description/robots/solo12.urdf', 'base_link'),
    'talos': lambda: published('talos_data/robots/talos_reduced.urdf', 'base_link'),
    'ur5': lambda: published_file('ur_description/urdf/ur5_robot.urdf'),
}
# Central difference step: completion closes the loops to 1e-12, ~1e-12 / H of noise in the
# quotient; the fourth-order stencil's truncation ~H^4 |x^(5)| / 30.
H = 1e-3
FD_RTOL = 1e-6


@functools.lru_cache(maxsize=None)
def tree(name):
    """(model on the NumPy engine, its Pinocchio oracle in the model's layout) of a published
    tree."""
    text = TREES[name]()
    model = load_model(text, compiled=False)
    reference = KKTOracle(text)
    reference.set_layout(model.joint_names)
    return model, reference


def bundled(name):
    """(model on the NumPy engine, its oracle) of a bundled robot."""
    return robot(name, False), oracle(name)


class Compiled:
    """The kernels of one model on a fresh flat workspace: call(kernel, *args) runs
    kernel(m, d, *args) and asserts its status OK."""

    def __init__(self, model):
        self.flat = FlatModel(model)
        self.data = self.flat.create_data()
        self.m, self.d = Borrowed(self.flat.ref), Borrowed(self.data.ref)

    def call(self, kernel, *args):
        status = kernel(self.m, self.d, *args)
        assert status == 0, f'{kernel.__name__} status {status}'


@functools.lru_cache(maxsize=None)
def compiled(model):
    return Compiled(model)


def data(model):
    return Data(model)


def spanning_G(model, reference, q):
    """The oracle's G (nv x ny) at q."""
    return reference.null_space_G(q, model.independent_v)


def state(model, rng):
    """Random closed q and independent yd, ydd."""
    q = model.complete_positions(random_independent_positions(model, rng))
    return q, rng.normal(size=model.ny), rng.normal(size=model.ny)


def positioned(model, values):
    """values on the independent velocities of positioned coordinates, zero on the idle spins of
    split joints (which completion leaves where they are)."""
    out = np.zeros(model.ny)
    y_of_v = {int(v): y for y, v in enumerate(model.independent_v)}
    for i in model.independent_q:
        body = int(np.searchsorted(model.idx_q[1:], i, side='right'))
        y = y_of_v[int(model.idx_v[body])]
        out[y:y + model.nv_body[body]] = values[y:y + model.nv_body[body]]
    return out


class Motion:
    """A completed motion through a random state: q(t), yd(t) = yd + ydd t (module docstring)."""

    def __init__(self, model, reference, rng, y0=None, yd=None):
        self.model, self.reference = model, reference
        self.yd = positioned(model, rng.normal(size=model.ny) if yd is None else yd)
        self.ydd = positioned(model, rng.normal(size=model.ny))
        self.y0 = random_independent_positions(model, rng) if y0 is None else y0
        self.q0 = model.complete_positions(self.y0)
        self.G = spanning_G(model, reference, self.q0)

    def q(self, t):
        model = self.model
        moved = self.yd * t + self.ydd * t * t / 2
        if model.floating_base and all(c.linear for c in model.cluster_list):
            return self.reference.integrate(self.q0, self.G @ moved)
        y, base = self.y0.copy(), 0
        if model.floating_base:           # loops: the base integrated alone, the rest completed
            base = 7
            assert (model.joint_type[1] == 'floating' and list(model.independent_q[:7]) ==
                    list(range(7)) and list(model.independent_v[:6]) == list(range(6)))
            base_motion = np.r_[moved[:6], np.zeros(model.nv - 6)]
            y[:7] = self.reference.integrate(self.q0, base_motion)[:7]
        y[base:] += self._rates(self.yd, base) * t + self._rates(self.ydd, base) * t * t / 2
        return model.complete_positions(y)

    def velocity(self, t):
        return self.yd + self.ydd * t

    def _rates(self, velocities, skip=0):
        """d/dt of the independent positions (model.independent_q, scalar joints here, but the
        first skip: a floating base's)."""
        model = self.model
        y_of_v = {int(v): y for y, v in enumerate(model.independent_v)}
        rates = []
        for i in model.independent_q[skip:]:
            body = int(np.searchsorted(model.idx_q[1:], i, side='right'))
            assert model.nq_body[body] == 1, 'scalar independent joints only'
            rates.append(velocities[y_of_v[int(model.idx_v[body])]])
        return np.array(rates)

    def rate(self, quantity):
        """d/dt quantity(q(t), yd(t)) at t = 0 by the fourth-order central difference."""
        def at(t):
            return quantity(self.q(t), self.velocity(t))
        return (8 * (at(H) - at(-H)) - (at(2 * H) - at(-2 * H))) / (12 * H)
