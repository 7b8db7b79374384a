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

import numpy as np
import pytest

from bipeds import MODELS, pair, stance, two_legs
from dynamics_node import Contact, load_model

ENGINES = pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
# qdd of forward dynamics with the standing efforts, relative to the accelerations gravity alone
# would give (9.81): round-off of a few recursions and least-squares solves.
STILL = 1e-8


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


def test_the_loops_hold_the_idle_spins_and_nothing_else():
    """The idle spins of the test robots, named: rods on balls (spherical joints, three revolutes,
    halves welded off their line), a closure body between coaxial joints, Stewart actuators; a
    passive coordinate that moves the mechanism (a five-bar with one motor) is a degree of freedom
    and is not held."""
    expected = {
        ('ball_rod_ankle_leg',): ('rod_l_top', 'rod_r_top'),
        ('cassie_like_leg',): ('knee_rod_top', 'ankle_rod_top', 'closedloop1_B'),
        ('five_bar_closure_body',): ('closedloop1_A',),
        ('loop_ankle_humanoid',): ('left_rod_1_rev2', 'left_rod_2_rev2', 'right_rod_1_rev5',
                                   'right_rod_2_rev5'),
        ('stewart_leg',): tuple(f'hip_ball_{k}_rev2' for k in range(1, 7)),
    }
    for (name,), spins in expected.items():
        urdf, closures = pair(name)
        model = load_model(urdf, closures=closures)
        assert model.idle_spin_joint_names == spins, name
    links = ''.join(f'<link name="{n}"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>'
                    '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/>'
                    '</inertial></link>' for n in ('crank_1', 'crank_2', 'bar_1', 'bar_2'))
    joints = ''.join(
        f'<joint name="{n}" type="revolute" {mark}><parent link="{p}"/><child link="{c}"/>'
        f'<origin xyz="{x} 0 0"/><axis xyz="0 0 1"/></joint>'
        for n, p, c, x, mark in (('motor_1', 'base', 'crank_1', 0.0, 'independent="true"'),
                                 ('motor_2', 'base', 'crank_2', 0.4, ''),
                                 ('elbow_1', 'crank_1', 'bar_1', 0.2, ''),
                                 ('elbow_2', 'crank_2', 'bar_2', 0.2, '')))
    five_bar = load_model(f'<robot name="five_bar"><link name="base"/>{links}{joints}'
                          '<loop name="tips" type="revolute"><predecessor link="bar_1"><origin '
                          'xyz="0.35 0 0"/></predecessor><successor link="bar_2"><origin '
                          'xyz="0.35 0 0"/></successor><axis xyz="0 0 1"/></loop></robot>')
    assert five_bar.passive_joint_names and not five_bar.held_joint_names
