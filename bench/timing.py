"""Timing helpers of the benchmarks: interleaved medians, so that a change of machine load hits every
column alike, and plain-text tables."""

import time

import numpy as np


def interleaved_medians(calls, rounds, batch):
    """Median microseconds per call of each callable, timed batch calls at a time, one batch of every
    callable per round; a first quarter of untimed rounds warms up caches and clock."""
    samples = {name: [] for name in calls}
    for round_ in range(-(rounds // 4), rounds):
        for name, call in calls.items():
            start = time.perf_counter_ns()
            for _ in range(batch):
                call()
            if round_ >= 0:
                samples[name].append((time.perf_counter_ns() - start) / batch)
    return {name: float(np.median(times)) / 1e3 for name, times in samples.items()}


def print_table(header, rows):
    table = [header] + rows
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for k, row in enumerate(table):
        print(' | '.join(str(cell).rjust(w) if k and i else str(cell).ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))))
        if k == 0:
            print('-+-'.join('-' * w for w in widths))
