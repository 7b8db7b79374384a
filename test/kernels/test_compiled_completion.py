"""The compiled completion (kernels/completion.py) against completion.py: the same positions, taken
on every bundled robot, for a stream's small steps and for far jumps, and the same errors for poses
off the reference branch; models it cannot close (planar joints, as the joint table says) referred
to completion.py."""

import os

import numpy as np
import pytest

from conftest import assert_close, random_independent_positions, ROBOTS
from dynamics_node import bundled_model, load_model, ModelError
from joint_type_models import MODELS as JOINT_MODELS
from urdf_text import four_bar

MODELS = os.path.join(os.path.dirname(__file__), '..', 'models')


def counted(model):
    """model, with the outcomes of its compiled completions counted: {'compiled': n, 'referred':
    n}."""
    engine = model._local.data.engine
    kernel, counts = engine.fused_completion, {'compiled': 0, 'referred': 0}

    def fused_completion(*args):
        q = kernel(*args)
        counts['referred' if q is None else 'compiled'] += 1
        return q
    engine.fused_completion = fused_completion
    return model, counts


def sequences(model, rng):
    """Independent positions: a 1 kHz-like stream of small steps, then far jumps."""
    start = random_independent_positions(model, rng)
    moving = np.ones(start.size)
    if model.floating_base:
        moving[:7] = 0.0                           # the base pose stays a unit quaternion
    stream = [start + 0.002 * k * moving for k in range(50)]
    return stream + [random_independent_positions(model, rng) for _ in range(10)]


@pytest.mark.parametrize('name', ROBOTS)
def test_compiled_completion_equals_completion_py(name, rng):
    model, counts = counted(load_model(bundled_model(name)))
    reference = load_model(bundled_model(name), compiled=False)
    for q_ind in sequences(model, rng):
        assert_close(model.complete_positions(q_ind),
                     reference.complete_positions(q_ind), f'{name}: q',
                     1e-12)
    assert counts == {'compiled': 60, 'referred': 0}


def test_split_joints_turn_their_idle_spin_as_completion_py(rng):
    """A rod's idle spin, which no input sets, is turned to its canonical value by both (no
    referral)."""
    urdf, closures = (os.path.join(MODELS, 'ball_rod_ankle_leg' + ext)
                      for ext in ('.urdf', '.yaml'))
    model, counts = counted(load_model(urdf, closures=closures))
    reference = load_model(urdf, closures=closures, compiled=False)
    assert model.split_joint_names
    for q_ind in sequences(model, rng):
        assert_close(model.complete_positions(q_ind),
                     reference.complete_positions(q_ind), 'q', 1e-12)
    assert counts == {'compiled': 60, 'referred': 0}


def test_planar_joints_are_referred(rng):
    """The kernel does not retract planar joints: completion.py closes such models, with the same
    result."""
    model, counts = counted(load_model(JOINT_MODELS['planar_block']))
    reference = load_model(JOINT_MODELS['planar_block'], compiled=False)
    for q_ind in sequences(model, rng)[:5]:
        assert_close(model.complete_positions(q_ind),
                     reference.complete_positions(q_ind), 'q', 1e-12)
    assert counts == {'compiled': 0, 'referred': 5}


def test_an_unreachable_pose_is_named_by_the_kernel():
    """A pose off the reference branch fails in the kernel, with completion.py's message and no
    NumPy rerun."""
    model, counts = counted(load_model(four_bar(lengths=(0.8, 0.3, 0.3))))
    reference = load_model(four_bar(lengths=(0.8, 0.3, 0.3)), compiled=False)
    reached = model.complete_positions([0.1])
    with pytest.raises(ModelError,
                       match=r"^cannot close the constraints \['closure'\] of cluster 'crank' "
                             r"on the reference assembly branch: ") as compiled:
        model.complete_positions([np.pi])
    with pytest.raises(ModelError) as numpy:
        reference.complete_positions([np.pi])
    assert str(compiled.value) == str(numpy.value)
    assert counts == {'compiled': 1, 'referred': 0}
    assert np.array_equal(model.complete_positions([0.1]), reached), (
        'the warm start is the last success')
