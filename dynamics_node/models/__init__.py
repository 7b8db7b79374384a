"""URDF+ robots shipped with the package (see each file's opening comment for its parameters)."""

from pathlib import Path

from ..errors import ModelError

DIRECTORY = Path(__file__).resolve().parent


def bundled_models():
    """Names of the bundled robots."""
    return sorted(p.stem for p in DIRECTORY.glob('*.urdf'))


def bundled_model(name):
    """Path of a bundled robot's URDF+ file, by name (e.g. 'quadruped_rotors')."""
    path = DIRECTORY / f'{name}.urdf'
    if not path.is_file():
        raise ModelError(f'no bundled robot {name!r}; bundled robots are {bundled_models()}')
    return str(path)
