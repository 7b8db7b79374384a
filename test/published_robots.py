"""The test robots of published patterns (test/models/; the robots are listed in
test_published_patterns.py), their KKT oracles and seeded random closed states, and a four-bar
next to its dead point (shared by the tests of several folders and bench/)."""

from dataclasses import dataclass
import functools
from pathlib import Path
import zlib

from lxml import etree
import numpy as np

from conftest import SEED
from dynamics_node import load_model
from oracle import independent_oracle, KKTOracle


MODELS = Path(__file__).parent / 'models'


STATES = 20


ACTUATED_SPAN = {'revolute': 0.2, 'continuous': 0.2, 'prismatic': 0.05}    # rad, m


@dataclass(frozen=True)
class Robot:
    file: str                   # test/models/<file>.urdf (and .yaml for an Extended URDF pair)
    extended: bool              # URDF + YAML closures
    # links whose Lambda^-1 is checked (for the arm: links the hand joint does not move)
    links: tuple


ROBOTS = {
    'five_bar': Robot('five_bar_closure_body', True, ('effector', 'distal_B', 'proximal_A')),
    'cassie': Robot('cassie_like_leg', True, ('foot', 'tarsus', 'knee_rod', 'shin')),
    'delta': Robot('delta_massless_rods', False, ('tool', 'upper_arm_2', 'rod_3b')),
    'gripper': Robot('gripper_mimic_chain', False,
                     ('right_inner_finger_pad', 'left_outer_finger', 'gripper_base')),
    'arm': Robot('arm_massless_hand', False, ('forearm', 'r_hand', 'palm_tip')),
    'oddities': Robot('inertia_oddities', False,
                      ('arm_4_link', 'eyes_tilt_link', 'torso_lift_sensor_link')),
}


NAMES = list(ROBOTS)


def paths(name):
    file = MODELS / ROBOTS[name].file
    return (str(file.with_suffix('.urdf')),
            str(file.with_suffix('.yaml')) if ROBOTS[name].extended else None)


@functools.lru_cache(maxsize=None)
def robot(name, compiled):
    urdf, closures = paths(name)
    return load_model(urdf, compiled=compiled, closures=closures)


def without_fixed_joint_mimics(urdf):
    """The URDF text without the <mimic> of fixed joints (which the library ignores, with a
    warning)."""
    root = etree.parse(urdf, etree.XMLParser(remove_comments=True)).getroot()
    for joint in root.findall('joint'):
        if joint.get('type') == 'fixed':
            for mimic in joint.findall('mimic'):
                joint.remove(mimic)
    return etree.tostring(root).decode()


@functools.lru_cache(maxsize=None)
def oracle(name):
    urdf, closures = paths(name)
    reference = (independent_oracle(Path(closures).read_text(), urdf) if closures
                 else KKTOracle(without_fixed_joint_mimics(urdf)))
    reference.set_layout(robot(name, False).joint_names)
    return reference


def joint_of_q(model, i):
    """The name of the joint that holds position entry i."""
    return model.joint_names[int(np.searchsorted(model.idx_q[1:], i, side='right')) - 1]


def independent_positions(model, rng):
    """The reference configuration's independent positions, each actuated coordinate moved by up to
    ACTUATED_SPAN; passive coordinates stay where they are."""
    q_ind = model.reference_positions[model.independent_q]
    for k, i in enumerate(model.independent_q):
        name = joint_of_q(model, i)
        if name in model.actuated_joint_names:
            span = ACTUATED_SPAN[model.joint_type[model.joint_names.index(name) + 1]]
            q_ind[k] += rng.uniform(-span, span)
    return q_ind


@dataclass(frozen=True)
class State:
    q_ind: np.ndarray           # the independent positions given to complete_positions
    q: np.ndarray               # what it returned
    yd: np.ndarray              # independent velocities
    tau: np.ndarray             # spanning generalized forces
    ydd: np.ndarray             # independent accelerations
    wrenches: dict              # on every third link


def seeded(name, salt=''):
    return np.random.default_rng([SEED, zlib.crc32(f'{name}{salt}'.encode())])


@functools.lru_cache(maxsize=None)
def states(name, compiled):
    """STATES random closed states of a robot (the same inputs on both engines)."""
    model, rng = robot(name, compiled), seeded(name)
    out = []
    for _ in range(STATES):
        q_ind = independent_positions(model, rng)
        q = model.complete_positions(q_ind)
        wrenches = {link: (rng.normal(size=3), rng.normal(size=3)) for link in model.links[1::3]}
        out.append(State(q_ind, q, rng.normal(size=model.ny), rng.normal(size=model.nv),
                         rng.normal(size=model.ny), wrenches))
    return tuple(out)


# Ground 1 m, crank 0.3, coupler 0.5, rocker 0.25 (x-z plane, axes y): the crank (independent)
# swings between the dead points where coupler and rocker are stretched, |crank tip - rocker pivot|
# = 0.75.
GROUND, CRANK, COUPLER, ROCKER = 1.0, 0.3, 0.5, 0.25


def _coupler_pin(theta):
    """(crank tip, coupler pin) in the x-z plane at crank angle theta, on the branch with the pin
    above the line from the crank tip to the rocker pivot."""
    tip = CRANK * np.array([np.cos(theta), -np.sin(theta)])   # a turn about +y takes +x towards -z
    span = np.array([GROUND, 0.0]) - tip
    d = np.linalg.norm(span)
    along = (COUPLER ** 2 - ROCKER ** 2 + d ** 2) / (2 * d)
    u = span / d
    return tip, tip + along * u + np.sqrt(COUPLER ** 2 - along ** 2) * np.array([-u[1], u[0]])


def _angle(x, z):
    """The turn about +y that takes +x to the direction (x, z)."""
    return float(np.arctan2(-z, x))


_, _PIN = _coupler_pin(0.0)


_TO_PIN = [float(x) for x in _PIN - np.array([CRANK, 0.0])]               # coupler frame at q = 0


_FROM_PIVOT = [float(x) for x in _PIN - np.array([GROUND, 0.0])]           # rocker frame at q = 0


DEAD_POINT_FOUR_BAR = f"""<robot name="dead_point_four_bar">
  <link name="ground"/>
  <link name="crank"><inertial><origin xyz="0.15 0 0"/><mass value="0.4"/>
    <inertia ixx="2e-5" ixy="0" ixz="0" iyy="3e-3" iyz="0" izz="3e-3"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="{_TO_PIN[0] / 2!r} 0 {_TO_PIN[1] / 2!r}"/>\
<mass value="0.5"/>
    <inertia ixx="1e-2" ixy="0" ixz="0" iyy="1e-2" iyz="0" izz="1e-4"/></inertial></link>
  <link name="rocker"><inertial><origin xyz="{_FROM_PIVOT[0] / 2!r} 0 {_FROM_PIVOT[1] / 2!r}"/>\
<mass value="0.3"/>
    <inertia ixx="1.5e-3" ixy="0" ixz="0" iyy="1.6e-3" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="crank_joint" type="revolute" independent="true"><parent link="ground"/>\
<child link="crank"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="coupler_joint" type="revolute" independent="false"><parent link="crank"/>\
<child link="coupler"/>
    <origin xyz="{CRANK!r} 0 0"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="0" velocity="10"/></joint>
  <joint name="rocker_joint" type="revolute" independent="false"><parent link="ground"/>\
<child link="rocker"/>
    <origin xyz="{GROUND!r} 0 0"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="0" velocity="10"/></joint>
  <loop name="coupler_pin" type="revolute">
    <predecessor link="coupler"><origin xyz="{_TO_PIN[0]!r} 0 {_TO_PIN[1]!r}"/></predecessor>
    <successor link="rocker"><origin xyz="{_FROM_PIVOT[0]!r} 0 {_FROM_PIVOT[1]!r}"/></successor>
    <axis xyz="0 1 0"/>
  </loop>
</robot>"""


DEAD_POINT = float(np.arccos((GROUND ** 2 + CRANK ** 2 - (COUPLER + ROCKER) ** 2)
                             / (2 * GROUND * CRANK)))


def four_bar_positions(model, theta):
    """Closed spanning positions at crank angle theta, in the model's joint order (computed, not
    completed)."""
    tip, pin_ = _coupler_pin(theta)
    angles = {'crank_joint': theta,
              'coupler_joint': _angle(*(pin_ - tip)) - theta - _angle(*_TO_PIN),
              'rocker_joint': _angle(*(pin_ - np.array([GROUND, 0.0]))) - _angle(*_FROM_PIVOT)}
    return np.array([angles[name] for name in model.joint_names])


@functools.lru_cache(maxsize=None)
def four_bar(compiled, amplification_limit=100.0):
    model = load_model(DEAD_POINT_FOUR_BAR, compiled=compiled,
                       amplification_limit=amplification_limit)
    reference = KKTOracle(DEAD_POINT_FOUR_BAR)
    reference.set_layout(model.joint_names)
    return model, reference


def near_dead_point(model, reference, side):
    """Positions 1e-6 rad inside a dead point, a consistent spanning velocity and spanning
    forces."""
    q = four_bar_positions(model, side * (DEAD_POINT - 1e-6))
    assert np.max(np.abs(reference.loop_residual(q))) < 1e-14
    G = reference.null_space_G(q, model.independent_v)
    amplification = float(np.abs(G).sum(axis=1).max())
    assert amplification > 100 * model.reference_amplification[0], (
        'the pose is beyond the default limit')
    return q, G @ np.array([0.01]), np.array([0.3, 0.1, -0.2]), amplification
