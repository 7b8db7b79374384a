"""The two engines behind Model: the NumPy algorithms (numpy_engine.py) and the compiled kernels
(numba_engine.py), one interface."""


def numba_available():
    """True where the compiled fast path can run: numba imports and NumPy lays out its arrays as
    the kernels read them (borrowed.py); else the NumPy reference is used."""
    try:
        from ..kernels import borrowed  # noqa: F401
    except ImportError:
        return False
    return True
