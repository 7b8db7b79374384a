"""The one guard of every callback: nothing raises into the executor.

    with Guard('joint_states', logger) as outcome:
        ...                                   # the callback's work
    if outcome.failed:
        ...                                   # its documented outcome: success=false, a counted
                                              # drop, ...

A ModelError (a bad input) ends the body with its reason; any other exception (a bug) with the
reason 'internal error: ...', its traceback logged, unless the process is ending (ENDING). Either
way outcome.reason says why, and the code after the block gives the callback's documented answer.
"""

import threading
import traceback

from ..errors import ModelError

MESSAGE_LIMIT = 400          # characters of a whole reason (inputs in it are quoted shorter)
# Set once the process is ending (node.py): a callback caught by the shutdown of the context (a
# timer publishing on an invalidated publisher) fails, but that is no bug to log.
ENDING = threading.Event()


def clip(text, limit=MESSAGE_LIMIT):
    """text cut to limit characters (a reason may quote a whole input)."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + '...'


class Guard:
    """Context manager ending its body at an Exception: outcome.failed, outcome.reason (clipped)
    and outcome.error tell what happened. bad_input: the exceptions that mean a bad input (their
    message is the reason); every other one is an internal error, logged with its traceback on
    logger. Exceptions that are not Exceptions (KeyboardInterrupt, SystemExit) pass."""

    __slots__ = ('where', 'logger', 'bad_input', 'error', 'reason')

    def __init__(self, where, logger, bad_input=ModelError):
        self.where, self.logger, self.bad_input = where, logger, bad_input
        self.error = self.reason = None

    @property
    def failed(self):
        return self.error is not None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if not isinstance(error, Exception):
            return False
        self.error = error
        if isinstance(error, self.bad_input):
            self.reason = clip(error)
        elif ENDING.is_set():
            self.reason = clip(f'process ending: {error!r}')
        else:
            self.reason = clip(f'internal error: {error!r}')
            self.logger.error(f'internal error in {self.where}:\n'
                              + ''.join(traceback.format_exception(error)))
        return True
