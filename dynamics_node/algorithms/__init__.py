"""The readable NumPy algorithms on clusters (Chignoli et al. 2023; Sathya & Carpentier 2025):
kinematics, RNEA, ABA, CRBA, EFPA, LCABA, completion, link frames, and the whole-body terms
(centroidal dynamics, the Coriolis matrix, the inertial-parameter regressor); the reference the
compiled kernels (kernels/) are tested against."""
