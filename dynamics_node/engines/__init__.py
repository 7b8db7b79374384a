"""The two engines behind Model: the NumPy algorithms (numpy_engine.py) and the compiled kernels
(numba_engine.py), one interface."""
