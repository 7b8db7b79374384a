"""The torques of recordings in windows, on this process or on a Dask cluster, with the same bits.

A recording's usable states (torques.usable) are cut into windows of a fixed number of states,
a function of the recording alone. Each window answers its own states (torques.motion, then
torques.answer) from a cold start: its first state is completed from the reference configuration
(Model.reference_positions), the next ones track from the one before, as on a freshly loaded
model; its filter reads the Savitzky-Golay windows of its own states (half a window on each side,
sliding inwards at the recording's ends) with the recording's time origin, so its derivatives are
those of the whole recording. A window's result is thus a function of its inputs: the same on any
process and in any order, and again where Dask reruns the window of a lost worker. One process
runs the same windows in order. A worker loads the robot from its URDF+ text once (a Model does not
pickle); the window results are gathered in order, joined per recording.
"""

from contextlib import contextmanager
from dataclasses import fields, replace
import hashlib

import numpy as np

from ..errors import cut, ModelError, quote
from ..loading import load_model
from .contacts import schedule
from .filters import check_filter, ORDER, WINDOW
from .torques import answer, motion, Motion, usable

WINDOW_STATES = 2000      # states a window answers (the default of --window-states)
CONNECT_SECONDS = 5       # to reach a Dask scheduler
WORKERS_SECONDS = 30      # for its first worker

_MODELS = {}              # this process's models, by the SHA-256 of their URDF+ text


def model_of(text):
    """The Model of a URDF+ text, loaded once per process."""
    key = hashlib.sha256(text.encode()).hexdigest()
    if key not in _MODELS:
        _MODELS[key] = load_model(text)
    return _MODELS[key]


def windows(n, length, window=WINDOW):
    """(own, context) of each window of n states, length states each (at least one window):
    context the slice of the states its filter reads (the filter windows, of window samples, of
    its own states), own the slice of context it answers."""
    half = window // 2
    for start in range(0, max(n, 1), length):
        stop = min(start + length, n)
        first = max(0, min(start - half, n - window))
        end = min(n, max(0, min(stop - 1 - half, n - window)) + window)
        yield slice(start - first, stop - first), slice(first, end)


def window_torques(text, states, own, origin, window, order, threads, held, progress=None):
    """The Torques of the own states (a slice) of the JointStates states (usable, with the
    filter's context around them) on the robot of the URDF+ text, from a cold start (module
    docstring); origin the recording's first stamp, held its contact Schedule or None;
    progress(n) after each n states. A pure function: a Dask task."""
    model = model_of(text)
    used = motion(model, states, window, order, progress, origin=origin, rows=own, cold=True)
    return answer(model, used, threads, held)


def torques(text, recordings, contacts=None, window=WINDOW, order=ORDER, threads=1,
            window_states=WINDOW_STATES, client=None, progress=None):
    """{name: Torques} of the JointStates of recordings ({name: JointStates}) on the robot of the
    URDF+ text, window_states states a window, on this process or the Dask cluster of client;
    contacts as torques.torques; progress(n) after each n states (each window on a cluster).
    ModelError names the recording and states where a window fails."""
    check_filter(window, order)
    model = model_of(text)
    tasks, dropped = [], {}
    for name, states in recordings.items():
        used = usable(model, states)
        if progress is not None:
            progress(len(states.stamps) - len(used.stamps))
        dropped[name] = used.dropped
        held = schedule(model, contacts, states.contact_sets, used.dropped)
        origin = int(used.stamps[0]) if len(used.stamps) else None
        for own, context in windows(len(used.stamps), window_states, window):
            part = replace(used, **{field: value[context] if isinstance(value, np.ndarray)
                                    else None for field, value in vars(used).items()
                                    if field != 'names'})
            where = f'{name}, states {context.start} to {context.stop - 1}'
            tasks.append((name, where, (text, part, own, origin, window, order, threads, held)))
    run = _here if client is None else _on_cluster
    parts = {name: [] for name in recordings}
    for (name, _, _), result in zip(tasks, run(tasks, client, progress)):
        parts[name].append(result)
        for reason, count in result.motion.dropped.items():
            dropped[name][reason] = dropped[name].get(reason, 0) + count
    joined = {name: _joined(results) for name, results in parts.items()}
    return {name: replace(result, motion=replace(result.motion, dropped=dropped[name]))
            for name, result in joined.items()}


def _here(tasks, client, progress):
    """The results of the tasks, in order, on this process."""
    for _, where, arguments in tasks:
        try:
            yield window_torques(*arguments, progress)
        except ModelError as error:
            raise ModelError(f'{where}: {error}') from None


def _on_cluster(tasks, client, progress):
    """The results of the tasks, in order, on the Dask cluster of client."""
    from dask.base import tokenize
    from distributed import as_completed, CancelledError, KilledWorker
    futures = {client.submit(window_torques, *arguments,
                             key=f'window-{k}-{tokenize(*arguments)}'): (where, arguments[2])
               for k, (_, where, arguments) in enumerate(tasks)}
    results = {}
    for future in as_completed(futures):
        where, own = futures[future]
        try:
            results[future] = future.result()
        except ModelError as error:
            raise ModelError(f'{where}: {error}') from None
        except (KilledWorker, CancelledError, OSError) as error:
            raise ModelError(f'{where}: the Dask cluster lost the window ({type(error).__name__}: '
                             f'{cut(error)})') from None
        if progress is not None:
            progress(own.stop - own.start)
    return [results[future] for future in futures]


def _joined(parts):
    """The Torques (or Motion) of the windows parts of a recording, in order: arrays concatenated
    (a Motion's too), dicts of arrays per key, the rest (dropped counts too) the first window's."""
    joined = {}
    for field in fields(parts[0]):
        values = [getattr(part, field.name) for part in parts]
        if isinstance(values[0], np.ndarray):
            joined[field.name] = np.concatenate(values)
        elif isinstance(values[0], Motion):
            joined[field.name] = _joined(values)
        elif isinstance(values[0], dict) and field.name != 'dropped':
            joined[field.name] = {key: np.concatenate([v[key] for v in values])
                                  for key in values[0]}
    return replace(parts[0], **joined)


@contextmanager
def dask_client(workers=None, scheduler=None):
    """A Dask Client of a local cluster of workers processes (one thread each), or of the cluster
    whose scheduler is at the address scheduler, closed on leaving; None (this process) without
    either."""
    if workers is None and scheduler is None:
        yield None
        return
    from distributed import Client, LocalCluster
    if workers is not None:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise ModelError(f'cannot reach the Dask scheduler {quote(scheduler)}: {cut(error)}'
                         ) from None
    with client:
        try:
            client.wait_for_workers(1, timeout=WORKERS_SECONDS)
        except TimeoutError:
            raise ModelError(f'the Dask cluster of {quote(scheduler)} has no worker after '
                             f'{WORKERS_SECONDS} s') from None
        yield client
