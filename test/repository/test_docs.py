"""The library guide's examples run as written and print what the guide says they print."""

import contextlib
import io
from pathlib import Path
import re

LIBRARY = Path(__file__).parents[2] / 'docs' / 'library.md'


def test_derivatives_example_runs():
    """A standing humanoid linearized on its feet: an LQR gain whose closed loop is stable."""
    text = LIBRARY.read_text()
    section = text[text.index('## Derivatives'):text.index('## Forward dynamics methods')]
    blocks = re.findall(r'```python\n(.*?)```', section, re.S)
    assert len(blocks) == 1, 'the derivatives section lost its example'
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(blocks[0], str(LIBRARY), 'exec'), {})
    assert printed.getvalue().strip() == '(18, 24) True'
