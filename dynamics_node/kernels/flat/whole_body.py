"""The buffers of the whole-body and derivative kernels (centroidal.py, coriolis.py, regressor.py,
derivatives.py) for one workspace as one argument of the fused whole-body calls
(kernels/whole_body_calls.py): a call from Python unboxes one handle instead of many arrays.
``WholeBodyBuffers(flat)`` builds them; ``ref`` is the kernels' view."""

from numba import njit
from numba.experimental import structref

from ..borrowed import borrowed
from ..cache import key_on_helpers
from ..centroidal import CentroidalWorkspace
from ..coriolis import CoriolisWorkspace
from ..derivatives import DerivativeWorkspace
from ..regressor import RegressorWorkspace
from .model import _StructType

key_on_helpers(__file__)

FIELDS = {   # name: meaning (the workspaces' docstrings give the shapes)
    'A': 'A_g', 'J': 'the CoM Jacobian', 'com': 'the CoM', 'momentum': 'h_g',
    'bias': 'dh_g/dt at ydd = 0', 'energy': 'the kinetic or potential energy',
    'C': 'C_y', 'Gdot': 'the explicit constraints\' rates', 'Sdot': 'the subspaces\' rates',
    'Idot': 'the composites\' rates', 'hc': 'the composite momenta',
    'U': 'the bodies\' column forces', 'F': 'one cluster\'s column forces',
    'F1': 'their first part', 'F2': 'their second part',
    'Y': 'Y_y', 'F_parameter': 'the forces of one body\'s parameters',
    'unit': 'one parameter set to 1',
    **{name: 'derivatives.DerivativeWorkspace' for name in (
        'd_y', 'd_yd', 'd_ydd', 'fd_y', 'fd_yd', 'H_inv', 'Hf', 'Sw', 'Psid', 'Psidd', 'Phi',
        'row_B', 'row_I', 'below_q', 'below_qd', 'below_qdd', 'vw', 'aw', 'hc_w', 'F_w', 'Ic_w',
        'Idot_w', 'dq', 'dqd', 'H', 'tau', 'T_y', 'T_yd', 'T_ydd', 'dG', 'rate_qd', 'rate_qdd',
        'dg_dyd', 'rhs', 'term', 'dG_tau', 'solved')},
}


@structref.register
class WholeBodyBuffersType(_StructType):
    """numba type of WholeBodyBuffersRef."""


class WholeBodyBuffersRef(structref.StructRefProxy):
    """The kernels' view of a WholeBodyBuffers."""


structref.define_proxy(WholeBodyBuffersRef, WholeBodyBuffersType, list(FIELDS))


@njit(cache=True)
def _new_ref(*fields):
    return WholeBodyBuffersRef(*borrowed(fields))


class WholeBodyBuffers:
    """The arrays of FIELDS (attributes) of the centroidal, Coriolis, regressor and derivative
    workspaces of a FlatModel flat, and ``ref`` for the kernels; contact_rows: the derivatives'
    rows of a contact set (DerivativeWorkspace), whose buffers the others share with shared (a
    WholeBodyBuffers of flat)."""

    def __init__(self, flat, contact_rows=0, shared=None):
        if shared is None:
            regressor = RegressorWorkspace(flat)
            fields = {**vars(CentroidalWorkspace(flat)), **vars(CoriolisWorkspace(flat)),
                      'Y': regressor.Y, 'F_parameter': regressor.F, 'unit': regressor.unit}
        else:
            fields = dict(shared.fields)
        fields.update(vars(DerivativeWorkspace(flat, contact_rows)))
        self.__dict__.update(fields)
        self.fields = fields                   # the owner of the arrays the ref borrows
        self.ref = _new_ref(*(fields[name] for name in FIELDS))
