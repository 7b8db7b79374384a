"""Numba twins of the algorithms (algorithms/): each module here is named after the algorithm it
compiles (kinematics.py, rnea.py, aba.py, crba.py, efpa.py, lcaba.py, contacts.py, completion.py,
frames.py, centroidal.py, coriolis.py, regressor.py), on a FlatModel ``m`` and its FlatData ``d``
(flat/, the model packed once into read-only arrays, Pinocchio's model/data split), with
spatial.py, linalg.py and joints.py their shared helpers, checks.py the input checks and calls.py
the public calls fused into one compiled entry each. The numba engine (engines/numba_engine.py)
calls them.

What the flat layout makes explicit, and the kernels exploit:
- transforms are (E, r) pairs, never 6x6 products (X m = [E w; E (v - r x w)], X^T f likewise);
- every cluster has one output body o, so ^kX_parent is one block column and every pass carries a
  cluster to its parent as a sum over the cluster's bodies into o; the articulated and composite
  inertias stay block diagonal (one per body);
- a composite inertia is a rigid-body inertia: the CRBA carries it as 10 parameters (m, h, Ibar),
  whose transform X^T I X costs a third of a 6x6 congruence; so does the articulated inertia of a
  body no cluster hangs from (flat.model's leaf);
- D_k^-1 enters through its Cholesky factor L_k (stored with 1/L_jj on its diagonal, so that the
  solves multiply; the formulas mean the factor itself); single-body clusters (G = 1) skip the
  constraint and G products.
The small per-body helpers are inlined into their callers in numba's IR (inline='always'): a call
blocks LLVM's optimization across it. m and d are Borrowed handles and their arrays are
BorrowedArrays (borrowed.py): numba counts no reference to them. Each pass reads its fields into
locals once (numba emits no aliasing information, so a field is reloaded through the struct after
any store), and small results live in tuples (registers). No kernel allocates: every buffer lives
in d, or, for the whole-body kernels (centroidal.py, coriolis.py, regressor.py), in a workspace of
their own created once per FlatData. Each returns a status (OK or a singular case, details in
d.info) instead of raising; the engine raises the library's errors. Every kernel divides without
checks (error_model='numpy'): a zero divisor gives inf or nan, which the finiteness checks refer
to the NumPy path, and no ZeroDivisionError can leave a kernel.

numba's cache is keyed on every module of this folder and on the joint-type table (cache.py): a
constant a kernel reads must live in one of them, or be passed in m.
"""
