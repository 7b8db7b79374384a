"""Style: flake8 over the package, tests, benchmarks and launch files (settings in .flake8)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_flake8():
    result = subprocess.run([sys.executable, '-m', 'flake8', 'dynamics_node', 'test', 'bench',
                             'launch', 'setup.py'],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'flake8 found:\n{result.stdout}{result.stderr}'
