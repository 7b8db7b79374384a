"""Loading a robot: a URDF+ file or XML, an Extended URDF pair (converted to URDF+), a root hung on
a floating joint, into a Model."""

from .description.compose import float_root
from .description.extended_urdf import to_urdf_plus
from .description.urdf import read_urdf
from .errors import ModelError, quote
from .model import Model
from .whole_body import parameterized
from .multibody.clusters import AMPLIFICATION_LIMIT
from .multibody.topology import SpanningTree


def urdf_plus(urdf, closures):
    """The URDF+ XML of an Extended URDF pair (description/extended_urdf.py), the URDF's own tree
    checked first so that its errors come before those of the closures."""
    SpanningTree(read_urdf(urdf))
    return to_urdf_plus(urdf, closures)


def load_model(source, compiled=None, strict=False, closures=None, reference_positions=None,
               amplification_limit=AMPLIFICATION_LIMIT, floating_base=False,
               inertial_parameters=None):
    """Load a URDF+ robot from a file path or an XML string (Chignoli, Slotine et al. 2024).

    Links whose inertia breaks the triangle inequality or has zero principal moments (common in
    CAD exports) load, and ``model.warnings`` names each of them; strict=True rejects them instead.

    Args:
        compiled: True for the numba fast path, False for the NumPy reference algorithms, None
            (default) for the fast path where numba is installed.
        closures: the YAML closures of an Extended URDF (a path or the YAML text; see
            extended_urdf.py): the URDF is converted to URDF+ (loops, joint replacements, name_mot
            as independent marks) and loaded as such.
        reference_positions: a closed, regular configuration (nq) that fixes the assembly branch
            complete_positions follows (default: found at load, Model.reference_positions).
        amplification_limit: Model.amplification_limit.
        floating_base: True hangs the root link on a floating joint (description/compose.py:
            float_root), for a legged robot whose file has none: a massless root link fixed to one
            child (a 'world' link) has that joint made floating, any other root link hangs from a
            new link 'world' by the floating joint 'root_joint'. Every other name stays.
        inertial_parameters: the same structure with other inertial parameters (an identified
            robot): 10 per moving body, as Model.inertial_parameters (whole_body.parameterized).
    Raises:
        ModelError: with the element, name and expectation, for any description the library cannot
            use.
    """
    if closures is not None:
        source = urdf_plus(source, closures)
    if floating_base is True:
        source = float_root(source)
    elif floating_base is not False:
        raise ModelError(f'floating_base must be True or False, got {quote(floating_base)}')
    spec = read_urdf(source, strict)
    model = Model(spec, compiled, reference_positions, amplification_limit)
    if inertial_parameters is None:
        return model
    return Model(parameterized(model, spec, inertial_parameters), compiled,
                 model.reference_positions, amplification_limit)
