"""Where the fixed cost of a public call goes, on the small robots where it decides the race: the
public forward and inverse dynamics next to pinocchio.aba and rnea (same process, interleaved
medians), and the parts of a call: the compiled entry point alone (unboxing, checks, algorithm),
the copy of the result, the thread's workspace lookup, an empty Python call.

Usage: .venv/bin/python bench/call_cost.py [rounds]
"""

import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from dynamics_node import load_model  # noqa: E402
from robots import arm6, pendulum, published_arms  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402

REPEATS = 5


def parts(source, rounds, rng):
    """Median microseconds of each part, over REPEATS interleaved measurements."""
    model = load_model(source)
    model.warm_up()
    peer = (pin.buildModelFromXML(source) if source.lstrip().startswith('<')
            else pin.buildModelFromUrdf(source))
    peer_data = peer.createData()
    q = rng.uniform(-1.0, 1.0, model.nq)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    a = model.forward_dynamics(q, v, tau)
    qp = q.copy() if peer.nq == model.nq else pin.neutral(peer)
    data = model._local.data
    context, fd, id_ = data.context, data.forward_dynamics_entry, data.inverse_dynamics_entry
    calls = {'FD': lambda: model.forward_dynamics(q, v, tau),
             'pin.aba': lambda: pin.aba(peer, peer_data, qp, v, tau),
             'ID': lambda: model.inverse_dynamics(q, v, a),
             'pin.rnea': lambda: pin.rnea(peer, peer_data, qp, v, a),
             'FD entry': lambda: fd(context, q, v, tau),
             'ID entry': lambda: id_(context, q, v, a),
             'copy': lambda: data.qdd_out.copy(),
             'workspace': lambda: model._local.data,
             'empty': lambda: None}
    samples = [interleaved_medians(calls, rounds, 50) for _ in range(REPEATS)]
    return model.nv, {name: float(np.median([s[name] for s in samples])) for name in calls}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rng = np.random.default_rng(0)
    cases = [('pendulum', pendulum()), ('arm6', arm6())]
    cases += [(name, path) for name, path in published_arms().items() if name == 'UR5']
    rows = []
    for label, source in cases:
        nv, t = parts(source, rounds, rng)
        rows.append([label, nv] + [f'{t[name]:.2f}' for name in
                                   ('FD', 'pin.aba', 'ID', 'pin.rnea', 'FD entry', 'ID entry',
                                    'copy', 'workspace', 'empty')]
                    + [f'{t["FD"] / t["pin.aba"]:.2f}', f'{t["ID"] / t["pin.rnea"]:.2f}'])
    print_table(('robot', 'nv', 'FD', 'pin.aba', 'ID', 'pin.rnea', 'FD entry', 'ID entry', 'copy',
                 'workspace', 'empty call', 'FD/aba', 'ID/rnea'), rows)


if __name__ == '__main__':
    main()
