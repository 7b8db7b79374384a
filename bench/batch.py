"""Batches (dynamics_node/batch.py): states per second of Batch's forward and inverse dynamics
and regressor on 1 and 2 threads, next to pinocchio.abaInParallel / rneaInParallel over a
ModelPool with the same threads, and Python loops of single calls (ours and Pinocchio's;
Pinocchio has no batched regressor), on the same random closed states of UR5, Talos and the
bundled quadruped (Pinocchio on its spanning tree, test/oracle.py). Each figure is the median of
REPEATS batches of STATES states, interleaved in one process. A second table sets the 1-thread
times per state against Pinocchio's C++ itself (bench/pinocchio_anchor.py): aba, rnea and
computeJointTorqueRegressor in a C++ loop over the same states, on the model of Pinocchio's URDF
parser and on the spanning tree of the Python columns.

Usage: .venv/bin/python bench/batch.py
"""

import os
import sys
import time

# Pinocchio's parallel calls run on OpenMP, whose idle threads spin for a while after each
# call by default and take a core from the next measurement: they sleep here instead
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import numpy as np  # noqa: E402  (after OMP_WAIT_POLICY)
import pinocchio as pin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))
sys.path.append(os.path.join(ROOT, 'test', 'algorithms'))

from dynamics_node import Batch, bundled_model, load_model  # noqa: E402
from conftest import published_file, random_state  # noqa: E402  (test helpers)
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from pinocchio_anchor import (per_state_ns, REPEATS as CPP_REPEATS, states_on,  # noqa: E402
                              urdf_model)
from timing import Report  # noqa: E402
from whole_body import ROBOTS  # noqa: E402  (bench/whole_body.py's robots)

HEADING = 'Batches: states per second against Pinocchio\'s parallel calls'
STATES, REPEATS = 1000, 7
CASES = ('UR5', 'Talos', 'quadruped_rotors')
# (URDF file, on a free-flyer root) of each robot for Pinocchio's URDF parser
URDFS = {'UR5': lambda: (published_file('ur_description/urdf/ur5_robot.urdf'), False),
         'Talos': lambda: (published_file('talos_data/robots/talos_reduced.urdf'), True),
         'quadruped_rotors': lambda: (bundled_model('quadruped_rotors'), False)}


def workloads(name, rng):
    """(nv/ny, {label: callable running STATES states}, (Pinocchio's spanning tree, its states as
    rows of q, v, a, tau)) of one robot."""
    description = ROBOTS[name]()
    model = load_model(description)
    model.warm_up()
    reference = KKTOracle(description)
    reference.set_layout(model.joint_names)
    rows = [random_state(model, rng)[:2] for _ in range(STATES)]
    Q = np.array([q for q, _ in rows])
    Y = np.array([yd for _, yd in rows])
    U = rng.normal(size=Y.shape)
    V = np.array([model.spanning_velocities(q, yd) for q, yd in rows])
    A = np.array([model.forward_dynamics(q, yd, u) for (q, yd), u in zip(rows, U)])
    pm = reference.model
    Qp = np.array([reference.q_to_pin(q) for q in Q]).T.copy()
    Vp = np.array([reference.v_to_pin(v) for v in V]).T.copy()
    Ap = np.array([reference.v_to_pin(a) for a in A]).T.copy()
    Tp = pin.rneaInParallel(1, pin.ModelPool(pm, 1), Qp, Vp, Ap)
    rows_p = [np.ascontiguousarray(x.T) for x in (Qp, Vp, Ap, Tp)]    # a state per row
    one, two = Batch(model, 1), Batch(model, 2)
    pools = {n: pin.ModelPool(pm, n) for n in (1, 2)}
    data = pm.createData()
    # every batch writes into its output array, made once (out=; Pinocchio's in-place overloads)
    qdd, tau, regressors = np.empty((STATES, model.nv)), np.empty((STATES, model.ny)), \
        np.empty((STATES, model.ny, 10 * (model.nb - 1)))
    Ap_out, Tp_out = np.empty_like(Ap, order='F'), np.empty_like(Ap, order='F')
    work = {
        'FD 1': lambda: one.forward_dynamics(Q, Y, U, out=qdd),
        'FD 2': lambda: two.forward_dynamics(Q, Y, U, out=qdd),
        'FD loop': lambda: [model.forward_dynamics(q, y, u) for q, y, u in zip(Q, Y, U)],
        'aba 1': lambda: pin.abaInParallel(1, pools[1], Qp, Vp, Tp, Ap_out),
        'aba 2': lambda: pin.abaInParallel(2, pools[2], Qp, Vp, Tp, Ap_out),
        'aba loop': lambda: [pin.aba(pm, data, q, v, t)
                             for q, v, t in zip(rows_p[0], rows_p[1], rows_p[3])],
        'ID 1': lambda: one.inverse_dynamics(Q, Y, U, out=tau),
        'ID 2': lambda: two.inverse_dynamics(Q, Y, U, out=tau),
        'ID loop': lambda: [model.inverse_dynamics(q, y, u) for q, y, u in zip(Q, Y, U)],
        'rnea 1': lambda: pin.rneaInParallel(1, pools[1], Qp, Vp, Ap, Tp_out),
        'rnea 2': lambda: pin.rneaInParallel(2, pools[2], Qp, Vp, Ap, Tp_out),
        'rnea loop': lambda: [pin.rnea(pm, data, q, v, a) for q, v, a in zip(*rows_p[:3])],
        'Y 1': lambda: one.regressor(Q, Y, U, out=regressors),
        'Y 2': lambda: two.regressor(Q, Y, U, out=regressors),
        'Y loop': lambda: [model.regressor(q, y, u) for q, y, u in zip(Q, Y, U)],
        'regressor loop': lambda: [pin.computeJointTorqueRegressor(pm, data, q, v, a)
                                   for q, v, a in zip(*rows_p[:3])],
    }
    return f'{model.nv}/{model.ny}', work, (pm, rows_p)


def rates(work):
    """States per second (thousands) of each workload: the median of REPEATS interleaved runs."""
    seconds = {label: [] for label in work}
    for _ in range(REPEATS):
        for label, run in work.items():
            start = time.perf_counter()
            run()
            seconds[label].append(time.perf_counter() - start)
    return {label: STATES / np.median(t) / 1e3 for label, t in seconds.items()}


def anchor(name, tree, states):
    """{model: {algorithm: ns per state}} of Pinocchio's C++ on one thread, on the model of
    Pinocchio's URDF parser ('URDF') and on the spanning tree of the Python columns ('tree')."""
    parsed = urdf_model(*URDFS[name]())
    return {'URDF': per_state_ns(parsed, *states_on(parsed, tree, *states)),
            'tree': per_state_ns(tree, *states)}


def ratio(ours, peer):
    return f'{ours:.0f} / {peer:.0f} = {ours / peer:.2f}'


def tables(rng):
    """Rows of the rates table and of the table against Pinocchio's C++."""
    rows, anchor_rows = [], []
    for name in CASES:
        size, work, (tree, states) = workloads(name, rng)
        r = rates(work)
        rows.append([name, size] + [f'{r[ours]:.0f} / {r[peer]:.0f} = {r[ours] / r[peer]:.2f}'
                                    for ours, peer in PAIRS])
        cpp = anchor(name, tree, states)
        ns = {label: 1e6 / rate for label, rate in r.items()}      # thousands per s -> ns
        anchor_rows.append(
            [name, size] + [ratio(ns[ours], cpp['URDF'][peer]) for ours, peer in ANCHOR_PAIRS]
            + [' / '.join(f'{cpp["tree"][peer]:.0f}' for _, peer in ANCHOR_PAIRS)]
            + [ratio(ns[label], cpp['tree'][peer]) for label, peer in (('aba 1', 'aba'),
                                                                       ('rnea 1', 'rnea'))])
    return rows, anchor_rows


PAIRS = (('FD 1', 'aba 1'), ('FD 2', 'aba 2'), ('FD loop', 'aba loop'), ('ID 1', 'rnea 1'),
         ('ID 2', 'rnea 2'), ('ID loop', 'rnea loop'), ('Y 1', 'regressor loop'),
         ('Y 2', 'regressor loop'), ('Y loop', 'regressor loop'))
HEADER = ('robot', 'nv/ny') + tuple(f'{ours} / {peer}' for ours, peer in PAIRS)
NOTE = (
    f'Thousands of states per second, ours / Pinocchio\'s = ratio (above 1: ours faster), the '
    f'median of {REPEATS} runs of {STATES} random closed states, interleaved in one process. '
    '**FD n**, **ID n**, **Y n**: Batch(model, n).forward_dynamics, inverse_dynamics, regressor '
    '(inputs checked, independent velocities), each writing into an output array made once '
    '(out=); **aba n**, **rnea n**: pinocchio.abaInParallel, rneaInParallel with a ModelPool on '
    'n threads, writing into theirs (the in-place overloads); **loop**: a Python loop of single '
    'calls. A new output array per batch costs the first touch of its memory: on Talos the '
    'regressors of 1000 states are 100 MB, whose page faults took 6 ms of a 39 ms batch on one '
    'thread and up to 120 ms on two threads on this virtual machine. '
    'Pinocchio has no batched regressor: its loop of computeJointTorqueRegressor is the peer of '
    'all three. Pinocchio runs on the same spanning tree. The table below sets the 1-thread '
    'times per state against Pinocchio\'s C++ itself.')


ANCHOR_PAIRS = (('FD 1', 'aba'), ('ID 1', 'rnea'), ('Y 1', 'regressor'))
ANCHOR_HEADER = ('robot', 'nv/ny', 'FD 1 / aba C++', 'ID 1 / rnea C++', 'Y 1 / regressor C++',
                 'C++ on the tree', 'aba 1 / aba C++ tree', 'rnea 1 / rnea C++ tree')
ANCHOR_NOTE = (
    'Nanoseconds per state on one thread, ours / Pinocchio\'s C++ = ratio (below 1: ours '
    'faster), from the runs above. **C++**: aba, rnea and computeJointTorqueRegressor in a C++ '
    'loop over the same states (bench/pinocchio_anchor.cpp: Pinocchio header-only from the pin '
    'wheel, -O3 -DNDEBUG as Pinocchio\'s own benchmarks are built), the '
    f'median of {CPP_REPEATS} interleaved loops, on the model of Pinocchio\'s URDF parser '
    '(axis-aligned joint types; Talos on a free-flyer root); **C++ on the tree**: aba / rnea / '
    'regressor on the spanning tree of the Python columns. Before a number is reported, the C++ '
    'outputs are checked against pinocchio.aba, rnea and computeJointTorqueRegressor from Python '
    '(to 1e-9). **aba 1**, **rnea 1**: abaInParallel, rneaInParallel on 1 thread from Python, '
    'against the C++ on the same tree.')


def report_section(report, heading=HEADING, rng=None):
    rows, anchor_rows = tables(np.random.default_rng(0) if rng is None else rng)
    report.section(heading, HEADER, rows, NOTE)
    report.table(ANCHOR_HEADER, anchor_rows)
    report.text(ANCHOR_NOTE)


if __name__ == '__main__':
    report_section(Report(HEADING))
