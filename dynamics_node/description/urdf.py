"""URDF+ reader (Chignoli, Slotine et al. 2024): plain URDF plus ``<loop>``, ``<coupling>`` and
``independent=``, and ``<constraint>``: implicit relations phi(q) = 0 between joint positions.

This module turns XML into plain description records and checks everything that can be checked
element by element (names, numbers, types). Whole-graph checks (roots, loops, ranks) happen when
the model is built (``topology.py``, ``clusters.py``).
"""

from dataclasses import dataclass
import math
import os
import re

from lxml import etree
import numpy as np

from ..errors import cut, first_repeated, ModelError, quote
from ..joint_types import TYPES
from ..multibody.expressions import parse
from ..spatial import rpy_matrix
from .. import bounds

JOINT_TYPES = tuple(TYPES)
LOOP_TYPES = tuple(name for name, t in TYPES.items() if t.loop_rows is not None)
# A universal joint's or loop's two axes must be perpendicular to within this |cos|.
PERPENDICULAR_TOLERANCE = 1e-6
# Tolerance on principal moments, relative to the largest and absolute: -tol counts as zero
# (round-off of CAD exports; a 1 g, 1 mm part has moments of 1e-9 kg m^2).
INERTIA_TOLERANCE = 1e-9
INERTIA_FLOOR = 1e-12          # kg m^2


@dataclass(frozen=True)
class Pose:
    """Pose of a child frame in its parent frame: rotation R (3x3) and origin p (3)."""

    R: np.ndarray
    p: np.ndarray

    @staticmethod
    def identity():
        return Pose(np.eye(3), np.zeros(3))

    def __mul__(self, other):
        return Pose(self.R @ other.R, self.R @ other.p + self.p)


@dataclass(frozen=True)
class Inertial:
    mass: float
    com: np.ndarray            # COM in the link frame (3)
    inertia: np.ndarray        # rotational inertia about the COM, link axes (3x3)


@dataclass(frozen=True)
class LinkSpec:
    name: str
    inertial: Inertial         # zero mass when the link has no <inertial>


@dataclass(frozen=True)
class MimicSpec:
    joint: str                 # the leading joint
    multiplier: float
    offset: float


@dataclass(frozen=True)
class JointSpec:
    name: str
    type: str
    parent: str
    child: str
    origin: Pose
    axis: np.ndarray           # unit axis in the joint frame
    independent: object        # True, False, or None when the attribute is absent
    mimic: object              # MimicSpec or None
    axis2: object = None       # universal: second unit axis, joint frame at zero position
    effort: float = 0.0        # <limit effort>, N or N m; 0 where absent (CAD exports write 0 for
    #                            unknown)


@dataclass(frozen=True)
class LoopSpec:
    name: str
    type: str
    predecessor: str
    predecessor_origin: Pose
    successor: str
    successor_origin: Pose
    axis: np.ndarray           # unit axis in the predecessor loop frame
    axis2: object = None       # universal: second unit axis, in the successor loop frame


@dataclass(frozen=True)
class CouplingSpec:
    name: str
    predecessor: str
    successor: str
    ratio: float


@dataclass(frozen=True)
class ImplicitSpec:
    name: str
    joints: tuple              # the joint of each variable, in order
    tapes: tuple               # each residual parsed over the variables (multibody/expressions.py)


@dataclass(frozen=True)
class RobotSpec:
    name: str
    links: tuple
    joints: tuple
    loops: tuple
    couplings: tuple
    warnings: tuple            # loadable oddities, e.g. inertias breaking the triangle inequality
    implicit: tuple = ()       # <constraint> elements


def read_urdf(source, strict=False):
    """Parse a URDF+ file path, XML string or parsed element into a RobotSpec; ModelError names the
    bad element.
    With strict, the warnings (e.g. an inertia breaking the triangle inequality) are errors."""
    root = robot_element(source)
    read = [_read_link(e) for e in root.findall('link')]
    links = tuple(link for link, _ in read)
    warnings = tuple(warning for _, warning in read if warning)
    if strict and warnings:
        raise ModelError(f'{warnings[0]} (strict=True)')
    joints = tuple(_read_joint(e) for e in root.findall('joint'))
    loops = tuple(_read_loop(e) for e in root.findall('loop'))
    couplings = tuple(_read_coupling(e) for e in root.findall('coupling'))
    implicit = tuple(_read_implicit(e) for e in root.findall('constraint'))
    _unique('link', [x.name for x in links])
    _unique('joint', [x.name for x in joints])
    _unique('constraint (<loop>/<coupling>/<constraint>)',
            [x.name for x in loops + couplings + implicit])
    if not links:
        raise ModelError('the robot has no <link>')
    return RobotSpec(root.get('name', ''), links, joints, loops, couplings, warnings, implicit)


def robot_element(source):
    """The <robot> element of a URDF(+) file path, XML string or parsed element."""
    root = _parse_xml(source)
    if root.tag != 'robot':
        raise ModelError(f'the document root is <{cut(root.tag)}>, expected <robot>')
    return root


def _parse_xml(source):
    if isinstance(source, etree._Element):
        return source
    text = os.fspath(source) if isinstance(source, os.PathLike) else source
    if not isinstance(text, (str, bytes)):
        raise ModelError(f'expected a URDF path or XML string, got {type(source).__name__}')
    is_xml = text.lstrip().startswith('<' if isinstance(text, str) else b'<')
    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
    try:
        if is_xml:
            data = text.encode() if isinstance(text, str) else text
            return etree.fromstring(data, parser)
        if not os.path.isfile(text):
            raise ModelError(f'robot description file not found: {quote(text)}')
        with open(text, 'rb') as file:          # its bytes then go where bytes given directly go
            return etree.fromstring(file.read(), parser)
    except etree.XMLSyntaxError as err:
        raise ModelError(f'malformed XML: {cut(err)}') from None
    except UnicodeEncodeError as err:       # a lone surrogate: not Unicode text, so not XML
        raise ModelError(f'the description holds {quote(err.object[err.start:err.end])} at '
                         f'character {err.start}, which is not Unicode text') from None
    except OSError as err:
        raise ModelError(f'cannot read robot description file {quote(text)}: '
                         f'{cut(err.strerror)}') from None


def _unique(kind, names):
    twice = first_repeated(names)
    if twice is not None:
        raise ModelError(f'duplicate {kind} name {quote(twice)}')


def _name(element, what):
    name = element.get('name')
    if not name:
        raise ModelError(f'<{element.tag}> on line {element.sourceline} has no name attribute '
                         f'({what})')
    return name


def _numbers(element, attribute, count, where, bound, default=None):
    """count finite numbers of magnitude at most bound (bounds.py) from an attribute."""
    text = element.get(attribute) if element is not None else None
    if text is None:
        if default is None:
            raise ModelError(f'{where}: missing attribute {attribute}')
        return np.array(default, dtype=float)
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        raise ModelError(f'{where}: {attribute}="{cut(text)}" is not {count} numbers') from None
    if len(values) != count or not all(map(math.isfinite, values)):
        raise ModelError(f'{where}: {attribute}="{cut(text)}" must be {count} finite numbers')
    if max(map(abs, values)) > bound:
        raise ModelError(f'{where}: {attribute}="{cut(text)}" exceeds the bound {bound:g} in '
                         'magnitude')
    return np.array(values)


def _origin(element, where):
    origin = element.find('origin') if element is not None else None
    if origin is None:
        return Pose.identity()
    xyz = _numbers(origin, 'xyz', 3, f'{where} <origin>', bounds.LENGTH, default=(0.0, 0.0, 0.0))
    rpy = _numbers(origin, 'rpy', 3, f'{where} <origin>', bounds.ANGLE, default=(0.0, 0.0, 0.0))
    return Pose(rpy_matrix(rpy), xyz)


def _axis(element, where, tag='axis', default=(1.0, 0.0, 0.0)):
    """The unit axis; any finite non-zero direction is normalized (scaled first: |1e308 1e308 0|
    would overflow)."""
    axis = _numbers(element.find(tag), 'xyz', 3, f'{where} <{tag}>', np.inf, default=default)
    scale = np.max(np.abs(axis))
    if scale == 0.0:
        raise ModelError(f'{where}: <{tag} xyz> is zero; expected a unit vector')
    axis = axis / scale
    return axis / np.linalg.norm(axis)


def _second_axis(element, where, kind, first):
    """<axis2 xyz> of a universal joint or loop (default 0 1 0); for a joint it must be
    perpendicular to the first axis (both in the joint frame at the zero position)."""
    if kind != 'universal':
        if element.find('axis2') is not None:
            raise ModelError(f'{where}: <axis2> is only used by type="universal", not "{kind}"')
        return None
    axis2 = _axis(element, where, 'axis2', (0.0, 1.0, 0.0))
    if element.tag == 'joint' and abs(first @ axis2) > PERPENDICULAR_TOLERANCE:
        raise ModelError(f'{where}: <axis> {np.round(first, 6).tolist()} and <axis2> '
                         f'{np.round(axis2, 6).tolist()} must be perpendicular')
    return axis2


def _read_link(element):
    name = _name(element, 'link')
    where = f'link {quote(name)}'
    inertial = element.find('inertial')
    if inertial is None:
        return LinkSpec(name, Inertial(0.0, np.zeros(3), np.zeros((3, 3)))), None
    mass_element = inertial.find('mass')
    if mass_element is None:
        raise ModelError(f'{where}: <inertial> has no <mass>')
    mass = float(_numbers(mass_element, 'value', 1, f'{where} <mass>', bounds.MASS)[0])
    if mass < 0.0:
        raise ModelError(f'{where}: <mass value> is {mass}; expected a non-negative mass')
    pose = _origin(inertial, f'{where} <inertial>')
    tensor = inertial.find('inertia')
    if tensor is None:
        raise ModelError(f'{where}: <inertial> has no <inertia>')
    entries = {}
    for key in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'):
        entries[key] = float(_numbers(tensor, key, 1, f'{where} <inertia>', bounds.INERTIA)[0])
    I = np.array([[entries['ixx'], entries['ixy'], entries['ixz']],
                  [entries['ixy'], entries['iyy'], entries['iyz']],
                  [entries['ixz'], entries['iyz'], entries['izz']]])
    warning = _inertia_warning(where, mass, I)
    return LinkSpec(name, Inertial(mass, pose.p, pose.R @ I @ pose.R.T)), warning


def _inertia_warning(where, mass, I):
    """Inertia policy: CAD inertias with a negative principal moment (round-off, or a link merged
    into a heavier body), that break the triangle inequality a little, or have zero moments (planar
    and point-mass links) are physically odd but loadable, so they give a warning (None when fine);
    whether the rigid bodies built from the links are physical is checked on the merged bodies
    (topology.check_inertias)."""
    principal = np.linalg.eigvalsh(I)
    tol = inertia_tolerance(principal)
    moments = [float(f'{m:.6g}') for m in principal]
    problems = []
    if principal[0] < -tol:
        problems.append('has a negative principal moment')
    zero = int(np.sum(np.abs(principal) <= tol))
    if zero and mass > 0.0:
        problems.append(f'has {zero} zero principal moment{"s" if zero > 1 else ""}')
    excess = principal[2] - principal[0] - principal[1]
    if excess > tol:
        problems.append(f'breaks the triangle inequality by {excess:.3g} '
                        f'({moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g})')
    if not problems:
        return None
    return f'{where}: <inertia> with principal moments {moments} ' + ' and '.join(problems)


def inertia_tolerance(principal):
    """Principal moments within this of zero count as zero: INERTIA_TOLERANCE relative to the
    largest, and at least INERTIA_FLOOR (round-off of exports in SI units)."""
    return max(INERTIA_FLOOR, INERTIA_TOLERANCE * max(abs(principal[0]), abs(principal[-1])))


def _link_reference(element, where):
    """A predecessor/successor/parent/child element names its link by link= (or name=, Chignoli,
    Slotine et al. 2024)."""
    if element is None:
        raise ModelError(f'{where} is missing')
    link = element.get('link') or element.get('name')
    if not link:
        raise ModelError(f'{where} has no link attribute')
    return link


def _independent(element, where):
    text = element.get('independent')
    if text is None:
        return None
    if text.strip().lower() in ('true', '1'):
        return True
    if text.strip().lower() in ('false', '0'):
        return False
    raise ModelError(f'{where}: independent="{cut(text)}"; expected "true" or "false"')


def _kind(element, where, supported):
    """The type attribute of element, one of supported."""
    kind = element.get('type')
    if kind not in supported:
        raise ModelError(f'{where}: type="{cut(kind)}" is not supported; expected one of '
                         f'{", ".join(supported)}')
    return kind


def _read_joint(element):
    name = _name(element, 'joint')
    where = f'joint {quote(name)}'
    kind = _kind(element, where, JOINT_TYPES)
    parent = _link_reference(element.find('parent'), f'{where} <parent>')
    child = _link_reference(element.find('child'), f'{where} <child>')
    mimic = None
    mimic_element = element.find('mimic')
    if mimic_element is not None:
        leader = mimic_element.get('joint')
        if not leader:
            raise ModelError(f'{where}: <mimic> has no joint attribute')
        multiplier = _ratio(mimic_element, 'multiplier', f'{where} <mimic>', default=(1.0,))
        offset = float(_numbers(mimic_element, 'offset', 1, f'{where} <mimic>', bounds.POSITION,
                                default=(0.0,))[0])
        mimic = MimicSpec(leader, multiplier, offset)
        if kind == 'universal':
            raise ModelError(f'{where}: a universal joint cannot <mimic>; only 1-DoF joints can')
    # joints without an axis ignore <axis>, as urdfdom does (CAD exports write xyz="0 0 0" on fixed
    # joints)
    axis = _axis(element, where) if TYPES[kind].axis else np.array([1.0, 0.0, 0.0])
    effort = float(_numbers(element.find('limit'), 'effort', 1, f'{where} <limit>', bounds.FORCE,
                            default=(0.0,))[0])
    if effort < 0.0:
        raise ModelError(f'{where}: <limit effort> is {effort:g}; expected a non-negative effort')
    return JointSpec(name, kind, parent, child, _origin(element, where), axis,
                     _independent(element, where), mimic, _second_axis(element, where, kind, axis),
                     effort)


def _read_loop(element):
    name = _name(element, 'loop')
    where = f'loop {quote(name)}'
    kind = _kind(element, where, LOOP_TYPES)
    pred = element.find('predecessor')
    succ = element.find('successor')
    axis = _axis(element, where)
    return LoopSpec(name, kind,
                    _link_reference(pred, f'{where} <predecessor>'),
                    _origin(pred, f'{where} <predecessor>'),
                    _link_reference(succ, f'{where} <successor>'),
                    _origin(succ, f'{where} <successor>'), axis,
                    _second_axis(element, where, kind, axis))


def _read_coupling(element):
    name = _name(element, 'coupling')
    where = f'coupling {quote(name)}'
    ratio_element = element.find('ratio')
    if ratio_element is None:
        raise ModelError(f'{where}: <ratio value> is missing')
    ratio = _ratio(ratio_element, 'value', f'{where} <ratio>')
    return CouplingSpec(name,
                        _link_reference(element.find('predecessor'), f'{where} <predecessor>'),
                        _link_reference(element.find('successor'), f'{where} <successor>'), ratio)


def _read_implicit(element):
    """<constraint name> with <variable name joint> elements and <residual> texts, each an
    expression of the variables that vanishes on the mechanism (docs/urdf_plus.md)."""
    name = _name(element, 'constraint')
    where = f'constraint {quote(name)}'
    variables = element.findall('variable')
    residuals = element.findall('residual')
    for what, found in (('<variable>', variables), ('<residual>', residuals)):
        if not found or len(found) > bounds.IMPLICIT_SIZE:
            raise ModelError(f'{where} has {len(found)} {what} elements; expected 1 to '
                             f'{bounds.IMPLICIT_SIZE}')
    symbols, joints = [], []
    for variable in variables:
        symbol, joint = variable.get('name'), variable.get('joint')
        if not symbol or not re.fullmatch(r'[A-Za-z_]\w*', symbol) or not joint:
            raise ModelError(f'{where}: <variable name="{cut(symbol or "")}" '
                             f'joint="{cut(joint or "")}">; expected an identifier and a joint')
        symbols.append(symbol)
        joints.append(joint)
    for kind, names in (('variable', symbols), ('joint of a variable', joints)):
        twice = first_repeated(names)
        if twice is not None:
            raise ModelError(f'{where}: {kind} {quote(twice)} is named twice')
    tapes = tuple(parse(r.text, symbols, f'{where} <residual> {i + 1}')
                  for i, r in enumerate(residuals))
    return ImplicitSpec(name, tuple(joints), tapes)


def _ratio(element, attribute, where, default=None):
    """A gear ratio or mimic multiplier: 1/RATIO <= |ratio| <= RATIO (its inverse is a ratio too:
    the dependent joint may be either end)."""
    ratio = float(_numbers(element, attribute, 1, where, bounds.RATIO, default)[0])
    if abs(ratio) < 1.0 / bounds.RATIO:
        raise ModelError(f'{where}: {attribute}="{cut(element.get(attribute))}" is below '
                         f'{1.0 / bounds.RATIO:g} in magnitude; a ratio relates two moving joints')
    return ratio
