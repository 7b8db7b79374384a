"""Where method 'auto' should switch from the cluster ABA to LCABA
(forward_dynamics.LCABA_CROSSOVER).

For single and nested planar closed chains (test/mechanisms.py), welded cycles
(bench/lcaba_vs_pinocchio.py) and the bundled loop robots, prints the cost factor of
forward_dynamics.lcaba_is_cheaper (sum n_k m_k over the loop clusters / nb), the public
forward_dynamics with method 'aba' and 'lcaba' (median microseconds, interleaved in one process),
their ratio and what 'auto' picks.

Usage: .venv/bin/python bench/auto_crossover.py
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, os.path.join(HERE, '..', 'test'))

from dynamics_node import bundled_model, load_model  # noqa: E402
from dynamics_node.forward_dynamics import LCABA_CROSSOVER  # noqa: E402
from lcaba_vs_pinocchio import welded_cycle  # noqa: E402
# test helper: Chignoli et al. 2023-style parallel chains
from mechanisms import parallel_chains  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def mechanisms():
    """(label, URDF+ text or file, closed q or None for a completed neutral-ish q)."""
    for links in (6, 7, 8, 9, 10, 11, 12, 14, 16):
        yield f'closed chain of {links}', *parallel_chains(1, links)
    for depth, links in ((2, 8), (4, 8), (2, 12)):
        yield f'{depth} nested chains of {links}', *parallel_chains(depth, links)
    for links in (8, 12, 16):
        yield f'welded cycle of {links}', *welded_cycle(links)
    for links in (8, 12):
        yield f'planar welded cycle of {links}', *welded_cycle(links, planar=True)
    for name in ('delta', 'linkage_leg', 'parallel_ankle_leg', 'six_bar'):
        yield name, bundled_model(name), None


def main():
    rng = np.random.default_rng(1)
    rows = []
    for label, source, q in mechanisms():
        model = load_model(source)
        if q is None:
            q = model.complete_positions(np.full(model.independent_q.size, 0.1))
        v, tau = model.spanning_velocities(q, rng.normal(size=model.ny)), rng.normal(size=model.nv)
        model.warm_up()
        t = interleaved_medians(
            {method: (lambda method=method: model.forward_dynamics(q, v, tau, method=method))
             for method in ('aba', 'lcaba')}, 100, 50)
        factor = (sum(len(c.bodies) * c.m for c in model.cluster_list if not c.linear)
                  / (model.nb - 1))
        rows.append([label, f'{factor:.2f}', f'{t["aba"]:.2f}', f'{t["lcaba"]:.2f}',
                     f'{t["lcaba"] / t["aba"]:.2f}', 'lcaba' if model.auto_lcaba else 'aba'])
    print(f'method auto: LCABA where the factor exceeds LCABA_CROSSOVER = {LCABA_CROSSOVER}\n')
    print_table(['mechanism', 'factor', 'aba us', 'lcaba us', 'lcaba/aba', 'auto'], rows)


if __name__ == '__main__':
    main()
