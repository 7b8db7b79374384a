"""Bipeds with loop ankles, written as published robot files write them, standing on 6D feet:
the efforts of projected inverse dynamics hold them still (forward dynamics with those efforts and
the same contacts: qdd = 0), on both engines, with the ground carrying their weight; the rods' idle
spins are held by their loops, not demanded of the motors or the feet.

The robots: Talos-like (loop_ankle_biped: rods on three-revolute balls, closed 6D between joint
frames and 3D between links, no floating joint in the file), True-Talos-like (the same legs under
an upper body, loop_ankle_humanoid), WL16-like (two Stewart-platform legs, stewart_leg, composed
under a pelvis), Digit-like (digit_like_biped, URDF+) and Cassie-like (two cassie_like_leg
composed under a pelvis)."""

import functools
from pathlib import Path

import numpy as np
import pytest

from dynamics_node import compose, Contact, load_model, Part

MODELS = Path(__file__).parent / 'models'
PELVIS = ('<robot name="pelvis"><link name="pelvis"><inertial><origin xyz="0 0 0.05"/>'
          '<mass value="6"/><inertia ixx="0.06" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.04"/>'
          '</inertial></link></robot>')
ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
# qdd of forward dynamics with the standing efforts, relative to the accelerations gravity alone
# would give (9.81): round-off of a few recursions and least-squares solves.
STILL = 1e-8


def pair(name):
    return str(MODELS / f'{name}.urdf'), str(MODELS / f'{name}.yaml')


def two_legs(name, y, z):
    """A biped of two copies of a leg file hung from a floating pelvis at (0, +-y, z)."""
    urdf, closures = pair(name)
    return compose([Part(PELVIS, '', joint='floating'),
                    Part(urdf, 'left_', ((0.0, y, z), (0.0, 0.0, 0.0)), parent='pelvis',
                         closures=closures),
                    Part(urdf, 'right_', ((0.0, -y, z), (0.0, 0.0, 0.0)), parent='pelvis',
                         closures=closures)])


ROBOTS = {
    'talos': (lambda c: load_model(pair('loop_ankle_biped')[0], c,
                                   closures=pair('loop_ankle_biped')[1], floating_base=True),
              ('left_sole', 'right_sole')),
    'true_talos': (lambda c: load_model(pair('loop_ankle_humanoid')[0], c,
                                        closures=pair('loop_ankle_humanoid')[1],
                                        floating_base=True), ('left_sole', 'right_sole')),
    'wl16': (lambda c: load_model(two_legs('stewart_leg', 0.15, -0.05), c),
             ('left_sole', 'right_sole')),
    'digit': (lambda c: load_model(str(MODELS / 'digit_like_biped.urdf'), c),
              ('left_sole', 'right_sole')),
    'cassie': (lambda c: load_model(two_legs('cassie_like_leg', 0.12, -0.02), c),
               ('left_foot', 'right_foot')),
}


@functools.lru_cache(maxsize=None)
def biped(name, compiled):
    return ROBOTS[name][0](compiled)


def stance(model, rng):
    """A closed configuration with every actuated joint moved by up to 0.2 rad (2 mm for a
    prismatic one) from the reference (knees bent, hips and ankles turned), the passive ones at
    their reference positions, the base at the identity."""
    q = model.reference_positions
    by_name = {}
    for b, name in enumerate(model.joint_names, start=1):
        position = q[model.idx_q[b]:model.idx_q[b] + model.nq_body[b]].copy()
        if name in model.actuated_joint_names:
            position += rng.uniform(-1.0, 1.0) * (0.002 if model.joint_type[b] == 'prismatic'
                                                  else 0.2)
        if name in model.actuated_joint_names or name == model.floating_base_joint:
            by_name[name] = position
    return model.complete_positions(by_name)


@ENGINES
@pytest.mark.parametrize('name', list(ROBOTS))
def test_biped_stands_still_on_its_feet(name, compiled, rng):
    """gravity_forces with both feet held 6D: zero on the base and the passive coordinates;
    forward dynamics with those efforts and the same contacts, by the exact route and by LCABA:
    qdd = 0; the feet carry the robot's weight."""
    model = biped(name, compiled)
    feet = [Contact(foot, '6D') for foot in ROBOTS[name][1]]
    assert model.floating_base_joint and model.actuated_joint_names
    weight = 9.81 * sum(I[5, 5] for I in model.inertia)
    for _ in range(3):
        q = stance(model, rng)
        info = model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny), contacts=feet,
                                      info=True)
        tau = info.efforts
        assert np.array_equal(tau, model.gravity_forces(q, contacts=feet))
        assert not np.any(tau[model.unactuated_y]) and not np.any(tau[model.held_y])
        for method in ('aba', 'lcaba'):
            result = model.forward_dynamics(q, np.zeros(model.ny), tau, contacts=feet,
                                            method=method, info=True)
            assert np.max(np.abs(result.acceleration)) < STILL * 9.81, (
                f'{name} ({method}): qdd {np.max(np.abs(result.acceleration)):.3e}')
        vertical = sum(model.link_pose(q, foot.link)[0] @ force[:3]
                       for foot, force in zip(feet, info.contact_forces))[2]
        assert abs(vertical - weight) < 1e-8 * weight, f'{name}: ground carries {vertical:.6g} N'


@ENGINES
@pytest.mark.parametrize('name', list(ROBOTS))
def test_biped_moving_on_its_feet_round_trips(name, compiled, rng):
    """At velocities that keep both feet (the measured ones projected, contact_bias_forces), random
    actuated efforts give accelerations that keep the feet; projected inverse dynamics of those
    accelerations gives efforts that reproduce them."""
    model = biped(name, compiled)
    feet = [Contact(foot, '6D') for foot in ROBOTS[name][1]]
    q = stance(model, rng)
    held = model.contact_bias_forces(q, rng.normal(size=model.ny), feet, info=True)
    yd = held.velocities
    tau = np.zeros(model.ny)
    tau[model.actuated_y] = rng.normal(size=model.actuated_y.size)
    qdd = model.forward_dynamics(q, yd, tau, contacts=feet, method='aba')
    again = model.inverse_dynamics(q, yd, qdd[model.independent_v], contacts=feet)
    replayed = model.forward_dynamics(q, yd, again, contacts=feet, method='aba')
    scale = max(1.0, np.max(np.abs(qdd)))
    assert np.max(np.abs(replayed - qdd)) < 1e-8 * scale
    assert not np.any(held.efforts[model.unactuated_y])
