"""Scenes: several robots and free objects in one URDF+ description; a robot's floating base.

``compose(parts)`` hangs each part's root link from a link of the scene (the world link, or a link
of an earlier part) by a fixed or floating joint. Every name of a part (links, joints, loops,
couplings, materials) gets the part's prefix, so the scene keeps each part's ``<loop>``,
``<coupling>``, ``<mimic>`` and ``independent=`` as they were; Extended URDF parts are converted to
URDF+ first. Other top-level elements (``<transmission>``, ``<gazebo>``, ...) are left out.

The tree of the scene is the parts' trees side by side under the world link, so its spanning-tree
dynamics are those of the parts: the mass matrix of parts hanging from the world is block diagonal
(Featherstone 2008, Sec. 6.2: H_ij = 0 for bodies on different branches of the root). Contacts
between parts (a hand's fingertips on a cube) close loops across them later.
"""

import copy
import math
import re
from typing import NamedTuple

from lxml import etree

from ..errors import cut, ModelError, quote
from .. import bounds
from .extended_urdf import NOT_XML, to_urdf_plus
from .urdf import read_urdf, robot_element

WORLD = 'world'
JOINTS = ('fixed', 'floating')
# elements whose name= is a name of the part, and the attributes of other elements that refer to
# one: (tag, attribute)
NAMED = ('link', 'joint', 'loop', 'coupling', 'material')
REFERENCES = (('parent', 'link'), ('parent', 'name'), ('child', 'link'), ('child', 'name'),
              ('mimic', 'joint'), ('predecessor', 'link'), ('predecessor', 'name'),
              ('successor', 'link'), ('successor', 'name'))


class Part(NamedTuple):
    """One robot or object of a scene.

    description: a URDF+ (or, with closures, Extended URDF) path or XML text.
    prefix: prepended to every name of the part.
    placement: (xyz, rpy) of the part's root link in the parent link's frame (the origin of the
        joint that attaches it; a floating part sits there at the identity of its 7 positions).
    joint: 'fixed' or 'floating', the joint <prefix>root_joint that attaches the root link.
    parent: the scene link it hangs from: 'world' (default) or a prefixed link of an earlier part.
    closures: the YAML closures of an Extended URDF part (path or text), else None.
    """

    description: object
    prefix: str
    placement: tuple = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    joint: str = 'fixed'
    parent: str = WORLD
    closures: object = None


def compose(parts, name='scene'):
    """URDF+ XML (str) of a scene: a massless root link 'world' and the parts (Part, or tuples
    (description, prefix[, placement[, joint[, parent[, closures]]]])) attached in order.

    Raises ModelError naming the part (index and prefix) and what is wrong: a bad field, a part
    whose description does not load or has no single root link, a parent that is no link of the
    scene yet, or a name that two parts share after prefixing."""
    if not isinstance(name, str) or not name or NOT_XML.search(name):
        raise ModelError(f'compose: name={quote(name)}; expected a non-empty XML text')
    if isinstance(parts, (str, bytes)) or not hasattr(parts, '__iter__'):
        raise ModelError(f'compose: parts={quote(parts)}; expected a list of parts')
    scene = etree.Element('robot', name=name)
    etree.SubElement(scene, 'link', name=WORLD)
    owner = {('link', WORLD): 'the world link'}   # (kind, name) -> the part that holds it
    parts = list(parts)
    if not parts:
        raise ModelError('compose: no parts; a scene needs at least one')
    for index, given in enumerate(parts):
        part = _part(given, index)
        where = f'part {index} (prefix {quote(part.prefix)})'
        robot, spec = _robot(part, where)
        root = _root_link(spec, where)
        for element in robot.iter(*NAMED):
            if element.get('name') is not None and (element.getparent() is robot
                                                    or element.tag == 'material'):
                element.set('name', part.prefix + element.get('name'))
        for tag, attribute in REFERENCES:
            for element in robot.iter(tag):
                if element.get(attribute) is not None:
                    element.set(attribute, part.prefix + element.get(attribute))
        if ('link', part.parent) not in owner:
            raise ModelError(f'{where}: parent={quote(part.parent)} is no link of the scene so '
                             f'far; expected {WORLD!r} or a prefixed link of an earlier part')
        # an XML comment holds no '--': runs of dashes in the robot's name become one
        label = re.sub('-+', '-', cut(robot.get('name', '')))
        scene.append(etree.Comment(f' part {index}: {label} '))
        joint = _attachment(part, part.prefix + root)
        for element in [joint] + [e for e in robot if e.tag in NAMED]:
            kind = 'constraint' if element.tag in ('loop', 'coupling') else element.tag
            key = (kind, element.get('name'))
            if key in owner and kind != 'material':      # a material keeps its first definition
                raise ModelError(f'{where}: {element.tag} name {quote(key[1])} is also that of '
                                 f'{owner[key]}; choose prefixes that keep names unique')
            if key not in owner:
                owner[key] = where
                scene.append(element)
    return etree.tostring(scene, encoding='unicode', pretty_print=True)


def _part(given, index):
    """The Part of an entry of compose's parts, its fields checked."""
    where = f'part {index}'
    if isinstance(given, (str, bytes)) or not isinstance(given, (tuple, list)) \
            or not 2 <= len(given) <= len(Part._fields):
        raise ModelError(f'{where}: {quote(given)}; expected a Part or a tuple (description, '
                         'prefix[, placement[, joint[, parent[, closures]]]])')
    part = Part(*given)
    if not isinstance(part.prefix, str) or NOT_XML.search(part.prefix):
        raise ModelError(f'{where}: prefix={quote(part.prefix)}; expected XML text')
    where = f'part {index} (prefix {quote(part.prefix)})'
    if not isinstance(part.joint, str) or part.joint not in JOINTS:
        raise ModelError(f'{where}: joint={quote(part.joint)}; expected "fixed" or "floating"')
    if not isinstance(part.parent, str):
        raise ModelError(f'{where}: parent={quote(part.parent)}; expected a link name')
    try:
        xyz, rpy = ([float(x) for x in v] for v in part.placement)
    except (TypeError, ValueError, OverflowError):     # OverflowError: an int beyond floats
        xyz = rpy = ()
    if len(xyz) != 3 or len(rpy) != 3:
        raise ModelError(f'{where}: placement={quote(part.placement)}; expected (xyz, rpy), two '
                         'triples of numbers')
    for values, bound, what in ((xyz, bounds.LENGTH, 'xyz'), (rpy, bounds.ANGLE, 'rpy')):
        if not all(math.isfinite(x) and abs(x) <= bound for x in values):
            raise ModelError(f'{where}: placement {what} {quote(values)}; expected finite '
                             f'numbers within {bound:g}')
    return part._replace(placement=(xyz, rpy))


def _robot(part, where):
    """The part's <robot> element (a copy), Extended URDF converted, and its RobotSpec (the
    reader's element checks, their errors named by part)."""
    try:
        source = (to_urdf_plus(part.description, part.closures) if part.closures is not None
                  else part.description)
        robot = copy.deepcopy(robot_element(source))
        return robot, read_urdf(robot)
    except ModelError as error:
        raise ModelError(f'{where}: {error}') from None


def _root_link(spec, where):
    """The one link of a description (its RobotSpec) that is no joint's child."""
    children = {joint.child for joint in spec.joints}
    roots = [link.name for link in spec.links if link.name not in children]
    if len(roots) != 1:
        raise ModelError(f'{where}: expected one root link (no joint\'s child), found '
                         f'{quote(roots) if roots else "none"}')
    return roots[0]


def _attachment(part, root):
    """The joint <prefix>root_joint from the parent link to the part's root link."""
    joint = etree.Element('joint', name=f'{part.prefix}root_joint', type=part.joint)
    xyz, rpy = part.placement
    etree.SubElement(joint, 'origin', xyz=' '.join(map(repr, xyz)), rpy=' '.join(map(repr, rpy)))
    etree.SubElement(joint, 'parent', link=part.parent)
    etree.SubElement(joint, 'child', link=root)
    return joint


def float_root(source):
    """The <robot> element of a URDF+ description (path, XML or element; a copy) whose root link
    hangs on a floating joint: a legged robot exported without one. A massless root link fixed to a
    single child (a 'world' link) has that joint made floating, at its placement; any other root
    link hangs from a new massless link 'world' by the floating joint 'root_joint'."""
    robot = copy.deepcopy(robot_element(source))
    spec = read_urdf(robot)                        # the reader's element checks first
    floating = [joint.name for joint in spec.joints if joint.type == 'floating']
    if floating:
        raise ModelError(f'floating_base: the description has the floating joint '
                         f'{quote(floating[0])} already; load it without floating_base')
    root = _root_link(spec, 'floating_base')
    below = [joint for joint in spec.joints if joint.parent == root]
    massless = not next(link for link in spec.links if link.name == root).inertial.mass
    if massless and len(below) == 1 and below[0].type == 'fixed':
        next(e for e in robot.findall('joint') if e.get('name') == below[0].name).set(
            'type', 'floating')
        return robot
    for kind, name in (('link', WORLD), ('joint', 'root_joint')):
        if any(e.get('name') == name for e in robot.findall(kind)):
            raise ModelError(f'floating_base: the description has a {kind} named {quote(name)}, '
                             f'which the floating base of its root link {quote(root)} needs')
    robot.insert(0, etree.Element('link', name=WORLD))
    robot.append(_attachment(Part(None, '', joint='floating'), root))
    return robot
