"""Load time against description size: random trees of n revolute joints and a serial chain, each
loaded from XML text (load_model, compiled path, warm-up not included) and as an Extended URDF pair
whose closures replace every joint (joint_name/joint_type). Prints seconds and the time per joint
relative to the smallest tree, which stays near 1 while loading is linear.

Usage: .venv/bin/python bench/load_scaling.py [--profile N]
"""

import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

from dynamics_node import load_model  # noqa: E402

INERTIAL = ('<inertial><origin xyz="0.05 0 0"/><mass value="1"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>')


def tree(n, chain=False, seed=0):
    """URDF of n revolute joints: each link hangs from a random earlier one (from the previous one:
    a chain)."""
    parents = (np.arange(n) if chain
               else np.random.default_rng(seed).integers(0, np.arange(1, n + 1)))
    links = (['<link name="l0"/>']
             + [f'<link name="l{i}">{INERTIAL}</link>' for i in range(1, n + 1)])
    joints = [f'<joint name="j{i}" type="revolute"><parent link="l{p}"/><child link="l{i}"/>'
              f'<origin xyz="0.1 0 0" rpy="0 0.1 0"/><axis xyz="0 0 1"/></joint>'
              for i, p in zip(range(1, n + 1), parents)]
    return (f'<robot name="{"chain" if chain else "tree"}{n}">' + ''.join(links + joints)
            + '</robot>')


def closures(n):
    """Closures that replace every joint of tree(n) by a fixed one but the first (a joint_name list
    of n - 1)."""
    return ('joint_name: [' + ', '.join(f'j{i}' for i in range(2, n + 1)) + ']\njoint_type: ['
            + ', '.join(['FIXED'] * (n - 1)) + ']\n')


def timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--profile', type=int,
                        help='profile the load of a chain of this many joints')
    arguments = parser.parse_args()
    load_model(tree(10))
    if arguments.profile:
        profile = cProfile.Profile()
        profile.runcall(load_model, tree(arguments.profile, chain=True))
        pstats.Stats(profile).sort_stats('tottime').print_stats(20)
        return
    rows, unit = [], None
    for label, text, pair in [(f'tree {n}', tree(n), n) for n in (1000, 3000, 10000)] + [
            ('chain 12000', tree(12000, chain=True), None)]:
        seconds = timed(lambda: load_model(text))
        unit = unit or seconds / 1000
        extended = ('' if pair is None
                    else f'{timed(lambda: load_model(text, closures=closures(pair))):.2f}')
        rows.append((label, seconds, seconds / (int(label.split()[1]) * unit), extended))
    print(f'{"description":<14}{"load s":>8}{"per joint / tree 1000":>24}{"with closures s":>18}')
    for label, seconds, ratio, extended in rows:
        print(f'{label:<14}{seconds:8.2f}{ratio:24.2f}{extended:>18}')


if __name__ == '__main__':
    main()
