"""The bundled four-bar driven by its rocker (whose dead points make the cluster split singular)
and welded Digit-style (redundant loop rows), with their closed poses and dead points (shared by
the tests of several folders)."""

import numpy as np
from scipy.optimize import brentq

from conftest import robot
from dynamics_node import bundled_model


# LCABA stops at |K qdd - k| < 1e-10 (ProximalSettings default); the remaining primal error is the
# round-off of the mu = 1e6 penalised elimination after one refinement, ~1e-10 of |qdd| on the
# robots.
LCABA_RTOL = 1e-8


# Bundled four-bar with the rocker as the independent joint: the crank and coupler are dependent,
# so the split is singular where they are collinear (the rocker's dead points).
FOUR_BAR = open(bundled_model('four_bar')).read()


ROCKER_DRIVEN = FOUR_BAR.replace(
    'type="continuous">', 'type="continuous" independent="false">', 1).replace(
    'name="rocker_joint" type="revolute" independent="false"',
    'name="rocker_joint" type="revolute"')


# The same four-bar closed Digit-style: the coupler is cut in two halves welded by a `fixed` loop.
# The loop frames are tilted, so all 6 rows are active, but the planar mechanism gives them rank 3
# (redundant), for 4 joints and 1 DoF.
TILT = (0.3, -0.2, 0.4)


LIMIT = '<limit lower="-7" upper="7" effort="5" velocity="20"/>'


REDUNDANT = f"""<robot name="welded_four_bar">
  <link name="base"/>
  <link name="crank"><inertial><origin xyz="0.035 0 0"/><mass value="0.12"/>
    <inertia ixx="7e-06" ixy="-2.8e-06" ixz="0" iyy="0.0001" iyz="0" izz="0.000106"/></inertial>\
</link>
  <link name="coupler_a"><inertial><origin xyz="0.07 0.002 0"/><mass value="0.09"/>
    <inertia ixx="4e-06" ixy="1e-07" ixz="0" iyy="0.00017" iyz="0" izz="0.00017"/></inertial>\
</link>
  <link name="coupler_b"><inertial><origin xyz="0.06 -0.001 0.001"/><mass value="0.09"/>
    <inertia ixx="1e-05" ixy="0" ixz="2e-08" iyy="0.00016" iyz="0" izz="0.00017"/></inertial>\
</link>
  <link name="rocker"><inertial><origin xyz="0.1 -0.002 0"/><mass value="0.14"/>
    <inertia ixx="6.7e-06" ixy="5.6e-06" ixz="1.1e-05" iyy="0.000565" iyz="-1.1e-07" \
izz="0.00057"/>
  </inertial></link>
  <joint name="crank_joint" type="continuous" independent="false"><parent link="base"/>\
<child link="crank"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="coupler_a_joint" type="revolute" independent="false"><parent link="crank"/>
    <child link="coupler_a"/><origin xyz="0.08 0 0.012"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <joint name="rocker_joint" type="revolute"><parent link="base"/><child link="rocker"/>
    <origin xyz="0.3 0 0.012"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <joint name="coupler_b_joint" type="revolute" independent="false"><parent link="rocker"/>
    <child link="coupler_b"/><origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>{LIMIT}</joint>
  <loop name="coupler_weld" type="fixed">
    <predecessor link="coupler_a"><origin xyz="0.14 0 0" rpy="{TILT[0]} {TILT[1]} {TILT[2]}"/>\
</predecessor>
    <successor link="coupler_b">
      <origin xyz="0.14 0 0" rpy="{TILT[0]} {TILT[1]} {TILT[2] + np.pi!r}"/>
    </successor>
  </loop>
</robot>"""


def four_bar_positions(model, crank, coupler, rocker):
    """q of the bundled four-bar's closed pose in model's layout (the welded variant's coupler_b
    turns by crank + coupler + pi - rocker on the rocker, so that its frame points back along the
    coupler)."""
    angles = {'crank_joint': crank, 'coupler_joint': coupler, 'coupler_a_joint': coupler,
              'rocker_joint': rocker, 'coupler_b_joint': crank + coupler + np.pi - rocker}
    return np.array([angles[name] for name in model.joint_names])


def dead_point(kind):
    """The crank angle where crank and coupler are stretched (coupler angle 0) or folded (pi),
    found by root finding on the bundled four-bar's closed poses; returns (crank, coupler,
    rocker)."""
    four_bar = robot('four_bar')
    target = {'stretched': 0.0, 'folded': np.pi}[kind]

    def offset(crank):
        return np.angle(np.exp(1j * (four_bar.complete_positions([crank])[1] - target)))

    grid = np.linspace(-np.pi, np.pi, 145)
    values = [offset(c) for c in grid]
    start = next(i for i in range(len(grid) - 1)
                 if values[i] * values[i + 1] < 0 and abs(values[i] - values[i + 1]) < 1.0)
    crank = brentq(offset, grid[start], grid[start + 1], xtol=1e-15)
    return tuple(four_bar.complete_positions([crank]))


def null_velocity(reference, q, rng):
    """Random spanning velocity with K v = 0 (consistent also at singular configurations)."""
    K = reference.constraint_jacobian(q)
    _, s, Vt = np.linalg.svd(K)
    rank = int(np.sum(s > 1e-9 * s[0]))
    return Vt[rank:].T @ rng.normal(size=K.shape[1] - rank)
