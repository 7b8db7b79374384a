"""Robots shipped with the package (see each file's opening comment for its parameters): URDF+
files, and in extended_urdf/ robots in the Extended URDF format (a URDF plus a YAML file of
closures)."""

from pathlib import Path

from ..description.extended_urdf import to_urdf_plus
from ..errors import ModelError

DIRECTORY = Path(__file__).resolve().parent
EXTENDED_URDF = DIRECTORY / 'extended_urdf'


def bundled_models():
    """Names of the bundled robots."""
    return sorted(p.stem for directory in (DIRECTORY, EXTENDED_URDF)
                  for p in directory.glob('*.urdf'))


def bundled_model(name):
    """The URDF+ description of a bundled robot (e.g. 'quadruped_rotors'), for load_model: the path
    of its file, or for a robot bundled in the Extended URDF format its URDF+ XML converted from
    the pair that bundled_extended_urdf(name) gives."""
    path = DIRECTORY / f'{name}.urdf'
    if path.is_file():
        return str(path)
    return to_urdf_plus(*bundled_extended_urdf(name))


def bundled_extended_urdf(name):
    """(URDF path, closures YAML path) of a robot bundled in the Extended URDF format."""
    urdf, closures = EXTENDED_URDF / f'{name}.urdf', EXTENDED_URDF / f'{name}.yaml'
    if not urdf.is_file():
        raise ModelError(f'no bundled robot {name!r}; bundled robots are {bundled_models()}')
    return str(urdf), str(closures)
