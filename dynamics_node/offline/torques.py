"""The motion and the torques along a recording: every state of a bag's joint states completed
(the loops' dependent joints from the independent ones, Model.complete_positions), its
independent velocities and accelerations as recorded or else filtered (filters.py), then the
independent forces of the cluster RNEA (Batch.inverse_dynamics). Offline, no effort limit applies:
a state is dropped only where the model cannot answer it (completion refuses it, the RNEA refuses
its numbers), counted by reason."""

from dataclasses import dataclass

import numpy as np

from ..batch import Batch
from ..errors import ModelError, quote
from .filters import derivatives, ORDER, WINDOW


@dataclass
class Motion:
    """The states of a recording the model can use: stamps (M, ns), spanning positions (M x nq),
    independent velocities and accelerations (M x ny), the measured efforts of the independent
    joints (M x ny, or None where the messages carry none); filtered: which of velocities and
    accelerations were estimated; dropped: the states not used, by reason."""
    stamps: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    efforts: np.ndarray
    filtered: tuple
    dropped: dict


@dataclass
class Torques:
    """stamps (M, ns) and efforts (M x ny, in names: the independent joints) of the states
    answered, with their Motion."""
    stamps: np.ndarray
    names: tuple
    efforts: np.ndarray
    motion: Motion


def torques(model, states, window=WINDOW, order=ORDER, threads=1, progress=None):
    """Torques of the JointStates states (bags.read_joint_states) on model; progress(n) after each
    n states completed."""
    return answer(model, motion(model, states, window, order, progress), threads)


def answer(model, used, threads=1):
    """The Torques of the states of the Motion used."""
    batch = Batch(model, threads)
    try:
        efforts, answered = _answered(batch, model, used)
    finally:
        batch.close()
    used = Motion(used.stamps[answered], used.positions[answered], used.velocities[answered],
                  used.accelerations[answered],
                  None if used.efforts is None else used.efforts[answered], used.filtered,
                  used.dropped)
    return Torques(used.stamps, model.independent_joint_names, efforts, used)


def motion(model, states, window=WINDOW, order=ORDER, progress=None, efforts=False):
    """The Motion of the JointStates states on model: positions completed, velocities and
    accelerations as recorded or filtered, with efforts the measured efforts (a state without
    finite ones dropped); progress(n) after each n states."""
    names = model.independent_joint_names
    if len(names) != model.ny:
        kinds = sorted({model.joint_type[model.joint_names.index(name) + 1] for name in names})
        raise ModelError(f'the independent joints of this robot include {quote(kinds)} joints; '
                         'offline torques take 1-DoF independent joints (the floating base needs '
                         'odometry, not read yet)')
    if states.positions is None:
        raise ModelError('the joint states carry no positions (every message must have them)')
    missing = [name for name in names if name not in states.names]
    if missing:
        raise ModelError(f'the joint states do not name the independent joints {quote(missing)}')
    columns = [states.names.index(name) for name in names]
    known = [(i, name) for i, name in enumerate(states.names)
             if name in model.independent_positions_index]
    dropped = dict(states.dropped or {})
    finite = np.isfinite(states.positions[:, [i for i, _ in known]]).all(axis=1)
    for recorded in (states.velocities, states.efforts if efforts else None):
        if recorded is not None:
            finite &= np.isfinite(recorded[:, columns]).all(axis=1)
    if not finite.all():                        # dropped before the filter can spread them
        dropped['not finite'] = int(np.sum(~finite))
        if progress is not None:
            progress(dropped['not finite'])
    stamps, positions = states.stamps[finite], states.positions[finite]
    t = (stamps - stamps[0]) * 1e-9 if len(stamps) else np.zeros(0)
    y = positions[:, columns]
    filtered = []
    if states.velocities is not None:
        yd = states.velocities[finite][:, columns]
    else:
        yd = derivatives(t, y, window, order)[0]
        filtered.append('velocities')
    measured = None if states.accelerations is None else states.accelerations[finite][:, columns]
    if measured is not None and not np.isnan(measured).any():
        ydd = measured
    else:
        ydd = (derivatives(t, yd, window, order)[0] if 'velocities' not in filtered
               else derivatives(t, y, window, order)[1])
        filtered.append('accelerations')
    kept, Q = [], []
    for row, state in enumerate(positions):
        try:
            Q.append(model.complete_positions({name: state[i] for i, name in known}))
            kept.append(row)
        except ModelError:
            dropped['completion'] = dropped.get('completion', 0) + 1
        if progress is not None:
            progress(1)
    kept = np.array(kept, dtype=int)
    measured = (states.efforts[finite][:, columns][kept]
                if efforts and states.efforts is not None else None)
    return Motion(stamps[kept], np.array(Q).reshape(len(kept), model.nq), yd[kept], ydd[kept],
                  measured, tuple(filtered), dropped)


def _answered(batch, model, used):
    """(efforts, the rows of used answered): the whole batch, else each row on its own (a row the
    RNEA refuses dropped as 'inverse dynamics')."""
    Q, yd, ydd = used.positions, used.velocities, used.accelerations
    try:
        return batch.inverse_dynamics(Q, yd, ydd), np.arange(len(Q))
    except ModelError:
        pass
    efforts, rows = [], []
    for row in range(len(Q)):
        try:
            efforts.append(model.inverse_dynamics(Q[row], yd[row], ydd[row]))
            rows.append(row)
        except ModelError:
            used.dropped['inverse dynamics'] = used.dropped.get('inverse dynamics', 0) + 1
    return np.array(efforts).reshape(len(rows), model.ny), np.array(rows, dtype=int)
