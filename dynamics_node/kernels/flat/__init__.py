"""The host side of the kernels: a Model packed into flat arrays (model.py), the checks' data
(checks.py) and LCABA's elimination plan (lcaba.py), each seen by the kernels as a numba
structref."""
