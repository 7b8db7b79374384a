"""The one exception type the library raises for bad descriptions, bad inputs and failed solves,
and the helpers that keep the input echoed in its messages short and find what a message names
twice."""

import collections
import reprlib

QUOTE_LIMIT = 80               # characters of any input echoed in a message

_REPR = reprlib.Repr()         # bounded repr: never formats more of a container than it shows
_REPR.maxstring = _REPR.maxother = QUOTE_LIMIT
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 8


class ModelError(ValueError):
    """A robot description, state or request the library cannot use; the message says what to
    fix."""


class SingularConfigurationError(ModelError):
    """A cluster's constraint split or articulated inertia is singular at the given
    configuration."""


# How a singular configuration's message ends where LCABA solves it (forward dynamics).
LCABA_ADVICE = '; use method="lcaba"'


def cut(text):
    """text (any input, as written) on one line, cut to QUOTE_LIMIT characters for a message."""
    text = ' '.join(str(text).split())
    if len(text) <= QUOTE_LIMIT:
        return text
    return f'{text[:QUOTE_LIMIT]}... ({len(text)} characters)'


def quote(value):
    """repr(value) on one line, cut to QUOTE_LIMIT characters: names and values echoed in
    messages."""
    if isinstance(value, str):
        shown = repr(value[:QUOTE_LIMIT])
        return shown if len(value) <= QUOTE_LIMIT else f'{shown}... ({len(value)} characters)'
    return cut(_REPR.repr(value))


def first_repeated(names):
    """The first of names (hashable) that occurs again, or None: in time linear in len(names)."""
    seen = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def repeated(names):
    """The sorted distinct names that occur more than once (linear time)."""
    return sorted(name for name, count in collections.Counter(names).items() if count > 1)
