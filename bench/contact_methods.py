"""The two forward-dynamics routes with contacts (dynamics_node/contacts.py): the exact route
(method 'aba': cluster ABA, the contacts' Delassus matrix from the cluster EFPA, the ABA's force
passes again) and
LCABA with the contacts as cut constraints, on the robots of test/algorithms/test_contacts.py at
one random state each. Prints the median microseconds per public call (interleaved in one process),
their ratio and LCABA's iterations; the numbers of docs/library.md#contacts come from here.

Usage: .venv/bin/python bench/contact_methods.py [numpy]   (numpy: the NumPy engine's models)
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
sys.path.insert(0, os.path.join(HERE, '..', 'test'))
sys.path.insert(0, os.path.join(HERE, '..', 'test', 'algorithms'))

from test_contacts import random_state, ROBOTS, setup  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def main(engine):
    rows = []
    for name in ROBOTS:
        model, reference = setup(name, engine)
        q, yd, tau = random_state(model, np.random.default_rng(0))
        contacts = reference.contacts
        iterations = model.forward_dynamics(q, yd, tau, contacts=contacts, method='lcaba',
                                            info=True).iterations
        times = interleaved_medians(
            {method: lambda method=method: model.forward_dynamics(q, yd, tau, contacts=contacts,
                                                                  method=method)
             for method in ('aba', 'lcaba')}, rounds=20, batch=5)
        rows.append([name, model.nb - 1, sum(c.rows for c in contacts), f'{times["aba"]:.0f}',
                     f'{times["lcaba"]:.0f}', f'{times["lcaba"] / times["aba"]:.2f}', iterations])
    print_table(['robot, contacts', 'bodies', 'rows', 'exact us', 'LCABA us', 'LCABA / exact',
                 'LCABA iterations'], rows)


if __name__ == '__main__':
    main('numpy' if sys.argv[1:] == ['numpy'] else 'compiled')
