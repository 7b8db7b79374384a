"""The README's library quick start runs as written, and what it prints is true: the loop robot's
forces come back through forward and inverse dynamics, and the quadruped held by its four feet
stands still, the ground carrying its weight."""

import contextlib
import io
from pathlib import Path
import re

import numpy as np

README = Path(__file__).parents[2] / 'README.md'


def test_library_quick_start_runs():
    text = README.read_text()
    section = text[text.index('## Library quick start'):text.index('## Node quick start')]
    blocks = re.findall(r'```python\n(.*?)```', section, re.S)
    assert len(blocks) >= 2, 'the quick start lost its examples'
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, str(README), 'exec'), namespace)
    assert 'True' in printed.getvalue()                   # np.allclose(tau_y, tau)
    assert np.max(np.abs(namespace['info'].acceleration)) <= 1e-9
    quadruped, q, feet = namespace['quadruped'], namespace['q'], namespace['feet']
    mass = quadruped.mass_matrix(q)[0, 0]                 # the base's linear block is m I
    ground = sum(quadruped.link_pose(q, foot.link)[0] @ force
                 for foot, force in zip(feet, namespace['info'].contact_forces))
    assert np.max(np.abs(ground - [0.0, 0.0, mass * 9.81])) <= 1e-9 * mass * 9.81
