"""Completion (algorithms/completion.py) as a robot file someone else wrote meets it: from the
actuated joints by name, and no completion result that depends on the machine's load."""

from pathlib import Path

import numpy as np
import pytest

from dynamics_node import load_model, ModelError
from dynamics_node.algorithms import completion
from dynamics_node.engines import numba_engine

MODELS = Path(__file__).parents[1] / 'models'
CASSIE = (str(MODELS / 'cassie_like_leg.urdf'), str(MODELS / 'cassie_like_leg.yaml'))
BIPED = (str(MODELS / 'loop_ankle_biped.urdf'), str(MODELS / 'loop_ankle_biped.yaml'))


def test_completion_from_the_actuated_joints_by_name():
    """A mapping of the actuated joints (and the floating joint's 7 positions) completes as the
    vector of independent positions with the passive ones (idle spins) at their reference
    positions; a missing actuated joint, a dependent or unknown name are refused by name."""
    model = load_model(BIPED[0], closures=BIPED[1], floating_base=True)
    reference = model.reference_positions
    by_name = {name: reference[model.idx_q[b]:model.idx_q[b] + model.nq_body[b]]
               for b, name in enumerate(model.joint_names, start=1)
               if name in model.actuated_joint_names + ('root_joint',)}
    by_name['left_knee'] = by_name['left_knee'] + 0.3
    q = model.complete_positions(by_name)
    vector = reference[model.independent_q]
    knee = model.idx_q[model.joint_names.index('left_knee') + 1]
    vector[list(model.independent_q).index(knee)] += 0.3
    assert np.array_equal(q, model.complete_positions(vector))
    assert set(model.passive_joint_names) == set(model.idle_spin_joint_names)
    for name in model.passive_joint_names:
        b = model.joint_names.index(name) + 1
        assert q[model.idx_q[b]] == reference[model.idx_q[b]], name
    missing = dict(by_name)
    del missing['right_knee']
    with pytest.raises(ModelError, match=r"^q_independent misses the joints "
                                         r"\['right_knee'\]; name every actuated and floating "
                                         r'joint'):
        model.complete_positions(missing)
    del missing['root_joint']
    with pytest.raises(ModelError, match=r"^q_independent misses the joints "
                                         r"\['right_knee', 'root_joint'\]"):
        model.complete_positions(missing)
    with pytest.raises(ModelError, match=r"^q_independent names joint 'left_ankle_a': its "
                                         r'position follows from the loops; name the actuated'):
        model.complete_positions({**by_name, 'left_ankle_a': 0.0})
    with pytest.raises(ModelError, match=r"^q_independent names joint 'knee': no joint of the "
                                         r'model has this name'):
        model.complete_positions({**by_name, 'knee': 0.0})
    with pytest.raises(ModelError, match=r"^q_independent\['left_knee'\] must be a vector of "
                                         r'real numbers'):
        model.complete_positions({**by_name, 'left_knee': 'bent'})


@pytest.mark.parametrize('compiled', [True, False], ids=['compiled', 'reference'])
def test_completion_never_depends_on_the_clock(monkeypatch, compiled):
    """A library call is bounded by steps alone: with a clock that jumps an hour at every reading
    (a machine under any load) a continuation of several steps still completes, identically; a
    budget, which only a caller that must answer in time gives, then runs out (the NumPy
    continuation checks it between steps, the compiled one between chunks of them)."""
    def cassie():
        return load_model(CASSIE[0], closures=CASSIE[1], compiled=compiled)
    model = cassie()
    target = model.reference_positions[model.independent_q] + 0.25
    expected = cassie().complete_positions(target)
    ticks = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(completion.time, 'perf_counter', lambda: float(next(ticks)))
    monkeypatch.setattr(numba_engine.time, 'perf_counter', lambda: float(next(ticks)))
    assert np.array_equal(model.complete_positions(target), expected)
    if not compiled:
        with pytest.raises(ModelError, match=r'the budget ran out'):
            cassie().complete_positions(target, budget_ms=1000.0)
