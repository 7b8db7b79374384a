"""`make bench`: our compiled cluster algorithms next to Pinocchio's tree algorithms, in one process.

For every bundled robot, the median time per call (microseconds, from Python) of
- ours (FastPath, compiled with numba): FD = cluster ABA, ID = cluster RNEA, H = cluster CRBA and
  Lambda^-1 = cluster EFPA for the robot's contact links;
- Pinocchio on the same spanning tree (same bodies, loops and couplings ignored, test/oracle.py):
  aba, rnea, crba and computeMinverse;
- the readable NumPy reference (Model's algorithms), for context.
Calls are timed in interleaved rounds of batches, so that a change of machine load hits every
column alike. Then the first-run compile time and the cached warm-up, each from a fresh process
sharing a temporary numba cache, and the node's end-to-end latency (bench/node_latency.py) if present.

Usage: .venv/bin/python bench/run.py
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from dynamics_node import bundled_model, bundled_models, load_model  # noqa: E402
from dynamics_node.aba import aba  # noqa: E402
from dynamics_node.crba import crba  # noqa: E402
from dynamics_node.efpa import efpa  # noqa: E402
from dynamics_node.fast_path import FastPath  # noqa: E402
from dynamics_node.kinematics import forward_pass  # noqa: E402
from dynamics_node.rnea import rnea  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: consistent random state)
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from timing import interleaved_medians, print_table  # noqa: E402

FIRST = ['quadruped_rotors', 'humanoid_belts']          # the two reference robots lead the table
ROUNDS, BATCH = 200, 20                                  # compiled and Pinocchio calls: 4000 per function
REFERENCE_ROUNDS = 15                                    # NumPy reference calls (milliseconds each)
COLD_START = """
import json, time
start = time.perf_counter()
from dynamics_node import bundled_model, load_model
from dynamics_node.fast_path import FastPath
model = load_model(bundled_model('quadruped_rotors'))
warm_up = FastPath(model).warm_up()
print(json.dumps({'warm_up': warm_up, 'ready': time.perf_counter() - start}))
"""


def contact_links(model):
    """Links fixed to a moving body (feet, hands, tools), else the last link."""
    links = [link for b in range(1, model.nb) for link in model.body_links[b][1:]]
    return links or [model.links[-1]]


def measure(name, rng):
    """Median microseconds per call of ours, Pinocchio's and the NumPy reference's algorithms."""
    model = load_model(bundled_model(name))
    fast = FastPath(model)
    fast.warm_up()
    q, yd, _ = random_state(model, rng)
    tau_y, ydd = rng.normal(size=model.ny), rng.normal(size=model.ny)
    links = contact_links(model)
    fast_path = {'FD': lambda: fast.forward_dynamics(q, yd, tau_y),
                 'ID': lambda: fast.inverse_dynamics(q, yd, ydd),
                 'H': lambda: fast.mass_matrix(q),
                 'Linv': lambda: fast.inverse_osim(q, links)}

    oracle = KKTOracle(bundled_model(name))
    oracle.set_layout(model.joint_names)
    tree, data = oracle.model, oracle.model.createData()
    qp, vp = oracle.q_to_pin(q), oracle.v_to_pin(model.spanning_velocities(q, yd))
    taup, ap = rng.normal(size=tree.nv), rng.normal(size=tree.nv)
    pinocchio = {'aba': lambda: pin.aba(tree, data, qp, vp, taup),
                 'rnea': lambda: pin.rnea(tree, data, qp, vp, ap),
                 'crba': lambda: pin.crba(tree, data, qp),
                 'Minv': lambda: pin.computeMinverse(tree, data, qp)}
    times = interleaved_medians({**fast_path, **pinocchio}, ROUNDS, BATCH)

    workspace = model.create_data()
    frames = [model.link_frame[link] for link in links]

    def reference_fd():
        forward_pass(model, workspace, q, yd)
        return aba(model, workspace, q, yd, tau_y)

    reference = {'FD': reference_fd, 'ID': lambda: rnea(model, workspace, q, yd, ydd),
                 'H': lambda: crba(model, workspace, q), 'Linv': lambda: efpa(model, workspace, q, frames)}
    times.update({f'numpy {key}': value for key, value in
                  interleaved_medians(reference, REFERENCE_ROUNDS, 1).items()})
    return model, len(links), times


def startup_times():
    """(first run, cached) FastPath.warm_up() seconds and process-start-to-ready seconds, each in a fresh
    process with an initially empty numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT)
        runs = [json.loads(subprocess.run([sys.executable, '-c', COLD_START], env=env, check=True,
                                          capture_output=True, text=True).stdout) for _ in range(2)]
    return runs


def main():
    rng = np.random.default_rng(0)
    names = FIRST + [name for name in bundled_models() if name not in FIRST]
    results = [(name, *measure(name, rng)) for name in names]

    pairs = (('FD', 'aba'), ('ID', 'rnea'), ('H', 'crba'), ('Linv', 'Minv'))
    header = ('robot', 'bodies', 'nv/ny') + tuple(
        cell for ours, theirs in pairs for cell in (f'{ours} us', f'pin.{theirs} us', 'ratio'))
    rows = []
    for name, model, n_links, t in results:
        row = [name, model.nb - 1, f'{model.nv}/{model.ny}']
        for ours, theirs in pairs:
            row += [f'{t[ours]:.2f}', f'{t[theirs]:.2f}', f'{t[ours] / t[theirs]:.2f}']
        rows.append(row)
    print('Ours (compiled) vs Pinocchio on the same spanning tree: median us per call, ratio ours/pin\n')
    print_table(header, rows)
    print('\nFD = cluster ABA (independent accelerations), ID = cluster RNEA, H = cluster CRBA (ny x ny), '
          'Linv = cluster EFPA\nfor the contact links (6k x 6k); Pinocchio works on all nv spanning '
          'coordinates, loops and couplings ignored.\n')

    header = ('robot', 'Linv links') + tuple(cell for key, _ in pairs for cell in (f'numpy {key} us', 'speed-up'))
    rows = [[name, n_links] + [cell for key, _ in pairs
                               for cell in (f'{t["numpy " + key]:.0f}', f'{t["numpy " + key] / t[key]:.0f}x')]
            for name, model, n_links, t in results]
    print('The readable NumPy reference, for context (speed-up of the compiled path)\n')
    print_table(header, rows)

    cold, cached = startup_times()
    print(f'\nCompilation (quadruped_rotors, fresh processes, empty numba cache): first run warm_up '
          f'{cold["warm_up"]:.1f} s (process ready after {cold["ready"]:.1f} s); cached warm_up '
          f'{cached["warm_up"]:.2f} s (ready after {cached["ready"]:.2f} s).')

    # ---- stream end-to-end latency through rclpy (bench/node_latency.py, written with the node) ----
    node_latency = os.path.join(HERE, 'node_latency.py')
    print('\nStream end-to-end latency through rclpy:')
    if os.path.exists(node_latency):
        subprocess.run([sys.executable, node_latency], check=True)
    else:
        print('  (bench/node_latency.py not present yet)')


if __name__ == '__main__':
    main()
