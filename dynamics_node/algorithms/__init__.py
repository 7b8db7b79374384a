"""The readable NumPy algorithms on clusters (seeds 003, 004): kinematics, RNEA, ABA, CRBA, EFPA, LCABA,
completion and link frames; the reference the compiled kernels (kernels/) are tested against."""
