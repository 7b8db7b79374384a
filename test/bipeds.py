"""Bipeds of the test models' legs (test/models/) and their bent stances (shared by the library's
and the node's standing tests)."""

from pathlib import Path

from dynamics_node import compose, Part


MODELS = Path(__file__).parent / 'models'


PELVIS = ('<robot name="pelvis"><link name="pelvis"><inertial><origin xyz="0 0 0.05"/>'
          '<mass value="6"/><inertia ixx="0.06" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.04"/>'
          '</inertial></link></robot>')


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
