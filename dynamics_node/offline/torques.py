"""The motion and the torques along a recording: every state of a bag's joint states completed
(the loops' dependent joints from the independent ones, Model.complete_positions), its
independent velocities and accelerations as recorded or else filtered (filters.py), then the
independent forces of the cluster RNEA (Batch.inverse_dynamics). A floating base takes its pose
and twist from the odometry (bags.read_joint_states), its acceleration filtered from the twist;
its generalized force is the net wrench the environment must apply. Offline, no effort limit
applies: a state is dropped only where the model cannot answer it (completion refuses it, the
RNEA refuses its numbers), counted by reason. A state that holds contacts (contacts.py) has the
actuated efforts of the projected inverse dynamics at the nearest motion that keeps them."""

from dataclasses import dataclass, replace

import numpy as np

from ..batch import Batch
from ..errors import ModelError, quote
from .contacts import held_states, label, link_wrench, schedule
from .filters import derivatives, ORDER, WINDOW


@dataclass
class Motion:
    """The states of a recording the model can use: stamps (M, ns), spanning positions (M x nq),
    independent velocities and accelerations (M x ny), the measured efforts of the independent
    joints (M x ny, zero on a floating base; or None where not asked or the messages carry none);
    filtered: which of velocities and accelerations were estimated; dropped: the states not used,
    by reason."""
    stamps: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    efforts: np.ndarray
    filtered: tuple
    dropped: dict


@dataclass
class Torques:
    """stamps (M, ns) and efforts (M x len(names)) of the states answered, names the independent
    1-DoF joints; base_wrench (M x 6, [force; torque] in the base frame) the floating base's
    generalized force, or None; with their Motion (the velocities and accelerations of a state
    with contacts: the nearest that keep them). With a contact schedule (contacts.Schedule),
    contact_wrenches {contacts.label: M x 6, NaN where the contact does not hold}
    (contacts.link_wrench) and corrections (M x 2: |yd - yd_c|_inf and |ydd - ydd_c|_inf, zero
    without contacts)."""
    stamps: np.ndarray
    names: tuple
    efforts: np.ndarray
    base_wrench: np.ndarray
    motion: Motion
    schedule: object = None
    contact_wrenches: dict = None
    corrections: np.ndarray = None


def torques(model, states, window=WINDOW, order=ORDER, threads=1, progress=None, contacts=None):
    """Torques of the JointStates states (bags.read_joint_states) on model; progress(n) after each
    n states completed; contacts: Contacts held throughout, else the contact sets of the bag
    (states.contact_sets) where it has them."""
    used = motion(model, states, window, order, progress)
    return answer(model, used, threads, schedule(model, contacts, states.contact_sets,
                                                 used.dropped))


def answer(model, used, threads=1, schedule=None):
    """The Torques of the states of the Motion used: the RNEA's on a Batch where no contact holds,
    contacts.held_states where the contact Schedule schedule holds one."""
    n = len(used.stamps)
    held = np.full(n, -1) if schedule is None else schedule.at(used.stamps)
    free = np.array([k < 0 or not schedule.sets[k] for k in held], dtype=bool)
    efforts, answered = np.zeros((n, model.ny)), np.zeros(n, dtype=bool)
    batch = Batch(model, threads)
    try:
        rows = np.flatnonzero(free)
        efforts_free, kept = _answered(batch, model, _rows(used, rows))
    finally:
        batch.close()
    efforts[rows[kept]], answered[rows[kept]] = efforts_free, True
    wrenches = corrections = None
    if schedule is not None:
        infos, refused = held_states(model, used, schedule, np.flatnonzero(~free))
        if refused:
            used.dropped['contacts'] = used.dropped.get('contacts', 0) + refused
        wrenches = {label(c): np.full((n, 6), np.nan) for c in schedule.contacts}
        corrections = np.zeros((n, 2))
        used = replace(used, velocities=used.velocities.copy(),
                       accelerations=used.accelerations.copy())
        for row, info in infos.items():
            efforts[row], answered[row] = info.efforts, True
            used.velocities[row], used.accelerations[row] = info.velocities, info.accelerations
            corrections[row] = info.velocity_correction, info.acceleration_correction
            for contact, force in zip(schedule.sets[held[row]], info.contact_forces):
                wrenches[label(contact)][row] = link_wrench(contact, force)
        wrenches = {name: w[answered] for name, w in wrenches.items()}
        corrections = corrections[answered]
    used = _rows(used, np.flatnonzero(answered))
    efforts = efforts[answered]
    joints, columns, base = coordinates(model)
    return Torques(used.stamps, joints, efforts[:, columns],
                   None if base is None else efforts[:, base], used, schedule, wrenches,
                   corrections)


def _rows(used, rows):
    """The Motion of the states rows of used (its dropped counts shared)."""
    return replace(used, stamps=used.stamps[rows], positions=used.positions[rows],
                   velocities=used.velocities[rows], accelerations=used.accelerations[rows],
                   efforts=None if used.efforts is None else used.efforts[rows])


def coordinates(model):
    """(the independent joints but the floating base, their columns of y, the floating base's six
    columns or None); ModelError for an independent joint of several coordinates."""
    base = model.floating_base_joint
    joints = tuple(name for name in model.independent_joint_names if name != base)
    several = sorted({model.joint_type[model.joint_names.index(name) + 1] for name in joints
                      if model.nv_body[model.joint_names.index(name) + 1] != 1})
    if several:
        raise ModelError(f'the independent joints of this robot include {quote(several)} joints; '
                         'offline calls take 1-DoF independent joints and a floating base')
    columns = [model.independent_velocities_index[name] for name in joints]
    if not base:
        return joints, columns, None
    start = model.independent_velocities_index[base]
    return joints, columns, np.arange(start, start + 6)


def usable(model, states, efforts=False):
    """The JointStates states but those the model cannot use, counted in dropped as 'not finite'
    (the positions of the joints the model knows, the independent joints' velocities, with
    efforts their efforts, and a floating base's pose and twist must be finite); accelerations
    None unless they give every independent joint's (then they are filtered)."""
    base = coordinates(model)[2]
    if states.positions is None:
        raise ModelError('the joint states carry no positions (every message must have them)')
    if base is not None and states.base_pose is None:
        raise ModelError(f'the floating base {quote(model.floating_base_joint)} needs its '
                         'odometry (nav_msgs/Odometry, the twist in the base frame: --odometry)')
    columns, _, known = _joint_columns(model, states)
    finite = np.isfinite(states.positions[:, [i for i, _ in known]]).all(axis=1)
    for recorded in (states.velocities, states.efforts if efforts else None):
        if recorded is not None:
            finite &= np.isfinite(recorded[:, columns]).all(axis=1)
    if base is not None:
        finite &= np.isfinite(states.base_pose).all(axis=1)
        finite &= np.isfinite(states.base_twist).all(axis=1)
    dropped = dict(states.dropped or {})
    if not finite.all():                        # dropped before the filter can spread them
        dropped['not finite'] = int(np.sum(~finite))
    kept = {name: value[finite] for name, value in vars(states).items()
            if isinstance(value, np.ndarray)}
    if states.accelerations is not None and np.isnan(kept['accelerations'][:, columns]).any():
        kept['accelerations'] = None
    return replace(states, dropped=dropped, **kept)


def _joint_columns(model, states):
    """(the columns in the JointStates states of the independent joints but a floating base that
    they name, those joints' columns of y, (column, name) of each joint the model takes a position
    of); ModelError where an actuated joint is missing. A passive one (the idle spin of a rod no
    motor drives) may be: it keeps its reference position and zero velocity, as
    Model.complete_positions of a driver's mapping has it."""
    joints = [name for name in coordinates(model)[0] if name in states.names]
    missing = [name for name in model.actuated_joint_names if name not in states.names]
    if missing:
        raise ModelError(f'the joint states do not name the actuated joints {quote(missing)}')
    return ([states.names.index(name) for name in joints],
            [model.independent_velocities_index[name] for name in joints],
            [(i, name) for i, name in enumerate(states.names)
             if name in model.independent_positions_index])


def motion(model, states, window=WINDOW, order=ORDER, progress=None, efforts=False, origin=None,
           rows=None, cold=False):
    """The Motion of the JointStates states on model: of the usable ones (usable), positions
    completed, velocities and accelerations as recorded or filtered, with efforts the measured
    efforts (a state without finite ones dropped); progress(n) after each n states. origin: the
    stamp (ns) of the filter's time zero (default the first usable state's); rows: the slice of
    the usable states completed and returned (default all), the others only filtered around;
    cold: the first completed from the reference configuration (Batch.complete_positions)."""
    base = coordinates(model)[2]
    used = usable(model, states, efforts)
    if progress is not None and len(used.stamps) < len(states.stamps):
        progress(len(states.stamps) - len(used.stamps))
    columns, y_columns, known = _joint_columns(model, used)
    dropped = dict(used.dropped)
    stamps, positions = used.stamps, used.positions
    start = stamps[0] if origin is None and len(stamps) else origin
    t = (stamps - start) * 1e-9 if len(stamps) else np.zeros(0)
    y = positions[:, columns]
    n, filtered = len(stamps), []
    yd, ydd = np.zeros((n, model.ny)), np.zeros((n, model.ny))
    if used.velocities is not None:
        yd[:, y_columns] = used.velocities[:, columns]
    else:
        yd[:, y_columns] = derivatives(t, y, window, order)[0]
        filtered.append('velocities')
    if used.accelerations is not None:
        ydd[:, y_columns] = used.accelerations[:, columns]
    else:
        ydd[:, y_columns] = (derivatives(t, yd[:, y_columns], window, order)[0]
                             if 'velocities' not in filtered
                             else derivatives(t, y, window, order)[1])
        filtered.append('accelerations')
    if base is not None:
        yd[:, base] = used.base_twist
        ydd[:, base] = derivatives(t, yd[:, base], window, order)[0]
        filtered.append('base accelerations')
    index = model.independent_positions_index
    Y = np.tile(model.reference_positions[model.independent_q], (n, 1))   # passive: reference
    for i, name in known:
        Y[:, index[name][0]] = positions[:, i]
    if base is not None:
        start = index[model.floating_base_joint][0]
        Y[:, start:start + 7] = used.base_pose
    selected = np.arange(n)[slice(None) if rows is None else rows]
    Q, kept = _completed(model, Y[selected], dropped, progress, cold)
    kept = selected[kept]
    measured = None
    if efforts and used.efforts is not None:
        measured = np.zeros((n, model.ny))
        measured[:, y_columns] = used.efforts[:, columns]
        measured = measured[kept]
    return Motion(stamps[kept], Q, yd[kept], ydd[kept], measured, tuple(filtered), dropped)


def _completed(model, Y, dropped, progress=None, cold=False):
    """(Q, the rows of Y completed): Batch.complete_positions of the independent positions Y,
    each row tracked from the one completed before it, as single calls one after another (the
    first, with cold, from the reference); a row it refuses is dropped as 'completion';
    progress(n) after each n rows."""
    batch, parts, kept, row = Batch(model), [], [], 0
    while row < len(Y):
        try:
            parts.append(batch.complete_positions(Y[row:], cold and not kept))
            kept.extend(range(row, len(Y)))
            refused = len(Y)
        except ModelError as error:            # rows before it again, then on after it
            refused = row + error.row
            parts.append(batch.complete_positions(Y[row:refused], cold and not kept))
            kept.extend(range(row, refused))
            dropped['completion'] = dropped.get('completion', 0) + 1
        if progress is not None:
            progress(min(refused + 1, len(Y)) - row)
        row = refused + 1
    batch.close()
    return (np.concatenate(parts) if parts else np.zeros((0, model.nq)),
            np.array(kept, dtype=int))


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
