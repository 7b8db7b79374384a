"""Console script extended_urdf_to_urdfplus: the URDF+ file of an Extended URDF pair (description/
extended_urdf.py), written after checking that it loads."""

import argparse
import os
import sys

from .errors import ModelError, quote
from .loading import load_model, urdf_plus


def main(argv=None):
    """Console script extended_urdf_to_urdfplus: write the URDF+ file of an Extended URDF pair,
    after checking that it loads."""
    parser = argparse.ArgumentParser(
        prog='extended_urdf_to_urdfplus',
        description='Convert an Extended URDF robot (URDF + YAML closures) into one URDF+ file, '
                    'e.g. for the robot_description of dynamics_node.')
    parser.add_argument('urdf', help='the URDF file')
    parser.add_argument('closures', help='the YAML file of closures (closed_loop, type, name_mot, '
                                         'joint_name, joint_type)')
    parser.add_argument('-o', '--output',
                        help='the URDF+ file to write (default: standard output)')
    args = parser.parse_args(argv)
    try:
        text = urdf_plus(args.urdf, args.closures)
        load_model(text, compiled=False)
    except ModelError as error:
        parser.exit(1, f'{parser.prog}: error: {error}\n')
    header = (f'<!-- URDF+ converted by extended_urdf_to_urdfplus from {_comment(args.urdf)} and '
              f'{_comment(args.closures)} -->\n')
    try:
        if args.output is None:
            sys.stdout.write(header + text + '\n')
            sys.stdout.flush()
        else:
            with open(args.output, 'w', encoding='utf-8') as file:
                file.write(header + text + '\n')
    except OSError as error:
        if args.output is None:         # what stays buffered must not fail again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        parser.exit(1,
                    f'{parser.prog}: error: cannot write '
                    f'{quote(args.output or "standard output")}: {error.strerror or error}\n')


def _comment(path):
    """A file's base name as XML comment text (no '--', valid UTF-8)."""
    name = os.path.basename(path).encode('utf-8', 'replace').decode('utf-8')
    return name.replace('--', '- -')
