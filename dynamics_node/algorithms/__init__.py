"""The readable NumPy algorithms on clusters (Chignoli et al. 2023; Sathya & Carpentier 2025):
kinematics, RNEA, ABA, CRBA, EFPA, LCABA, completion and link frames; the reference the compiled
kernels (kernels/) are tested against."""
