"""Timing helpers of the benchmarks: interleaved medians, so that a change of machine load hits
every column alike, and a report that prints its tables and writes them to docs/performance.md."""

from datetime import datetime, timezone
import os
import platform
import subprocess
import time

import numpy as np


def interleaved_medians(calls, rounds, batch):
    """Median microseconds per call of each callable, timed batch calls at a time, one batch of
    every callable per round; a first quarter of untimed rounds warms up caches and clock."""
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


class Report:
    """Sections of text and tables, printed as they come and kept for write()."""

    def __init__(self, title):
        self.title, self.parts = title, []

    def heading(self, text):
        print(f'\n{text}\n')
        self.parts.append(f'## {text}\n')

    def text(self, text):
        print(text + '\n')
        self.parts.append(text + '\n')

    def table(self, header, rows):
        print_table(header, rows)
        print()
        lines = ['| ' + ' | '.join(str(cell) for cell in header) + ' |',
                 '|' + '|'.join('---' if i == 0 else '---:' for i in range(len(header))) + '|']
        lines += ['| ' + ' | '.join(str(cell) for cell in row) + ' |' for row in rows]
        self.parts.append('\n'.join(lines) + '\n')

    def section(self, heading, header, rows, note):
        """A heading, a table and the note under it."""
        self.heading(heading)
        self.table(header, rows)
        self.text(note)

    def preformatted(self, text):
        print(text)
        self.parts.append('```\n' + text.rstrip('\n') + '\n```\n')

    def write(self, path, root):
        """The report as Markdown at path, stamped with the date, the commit and the machine."""
        with open(path, 'w') as out:
            out.write(f'# {self.title}\n\n{stamp(root)}\n\n' + '\n'.join(self.parts))
        print(f'\nwritten: {os.path.relpath(path, root)}')


def stamp(root):
    """Date, commit and machine of a measurement, as a Markdown paragraph."""
    def git(*args):
        result = subprocess.run(['git', *args], cwd=root, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else 'unknown'
    changed = git('status', '--porcelain', '--untracked-files=no')
    commit = (git('rev-parse', '--short', 'HEAD')
              + (' (with uncommitted changes)' if changed else ''))
    cpu = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as info:
            cpu = next(line.split(':', 1)[1].strip() for line in info
                       if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    versions = []
    for module in ('numpy', 'numba', 'pinocchio'):
        try:
            versions.append(f'{module} {__import__(module).__version__}')
        except ImportError:
            pass
    load = ', '.join(f'{x:.1f}' for x in os.getloadavg())
    return (f'Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC at commit {commit} on '
            f'{cpu}, {os.cpu_count()} cores, load average {load}; Python '
            f'{platform.python_version()}, {", ".join(versions)}. Written by `make bench` '
            '(bench/run.py); times are medians of interleaved calls from Python, so ratios '
            'against the peer are the numbers to compare across machines.')
