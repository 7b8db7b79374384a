"""Extended URDF input (Batto, de Matteis and Mansard 2025): a URDF plus a YAML file of closures.

The pair is converted into URDF+ (Chignoli, Slotine et al. 2024) and then read by the one URDF+
reader, so that a robot loaded with ``closures=`` and the same robot converted to a URDF+ file are
identical by construction.

YAML keys (each a list; a single string counts as a one-entry list; every key may be absent):
  closed_loop   pairs [A, B] of frame names: links (links attached by fixed joints included) or
                joints (a joint's frame is its child link's frame), looked up among links first
  type          per pair: '6D'/'6d' (default) the two frames coincide -> <loop type="fixed">;
                '3D'/'3d' their origins coincide -> <loop type="spherical">
  name_mot      actuated joints -> independent="true"; the other joints stay unmarked, so the
                independent coordinates they lack are chosen automatically (clusters.py)
  joint_name    joints to replace, with joint_type per entry: SPHERICAL, FIXED (locked at q = 0) or
  joint_type    UJOINT_ab (a, b in X/Y/Z): <joint>_a about a, then <joint>_b about b (continuous:
                revolute without limits), both at the joint's placement, with the massless link
                <joint>_cross between them

The YAML holds names only: every scalar is read as text (a date, a number, a boolean too) except
null, and other tags (!!timestamp, !!float, ...) are refused. The text's size, its nesting and each
list's length are bounded (bounds.py) before anything is built, and names must be XML text.
"""

from collections.abc import Mapping
import copy
import os
import re

from lxml import etree
import yaml

from ..errors import cut, first_repeated, ModelError, quote
from .. import bounds
from .urdf import robot_element

KEYS = ('closed_loop', 'type', 'name_mot', 'joint_name', 'joint_type')
CLOSURE_LOOP_TYPES = {'6D': 'fixed', '3D': 'spherical'}
AXES = {'X': '1 0 0', 'Y': '0 1 0', 'Z': '0 0 1'}
# outside XML 1.0's Char
NOT_XML = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def to_urdf_plus(urdf, closures):
    """URDF+ XML (str) of a URDF (path or XML) and its closures (YAML path or text, or a
    mapping)."""
    spec = read_closures(closures)
    original = robot_element(urdf)
    root = copy.deepcopy(original)
    joints = {j.get('name'): j for j in root.findall('joint')}
    links = {link.get('name') for link in root.findall('link')}
    frames = {name: _child(j) for name, j in joints.items()}
    split = {}                     # joint split in two by UJOINT_ab -> its joint_type
    for name, kind in spec['replacements']:
        if name not in joints:
            raise ModelError(f'closures: joint_name names unknown joint {quote(name)}')
        added = _replace(root, joints, links, name, kind)
        if added:
            split[name] = kind
        frames.update(added)
    for name in spec['actuated']:
        if name in split:
            raise ModelError(f'closures: name_mot names joint {quote(name)}, which joint_type '
                             f'replaces by {split[name]}; name {name}_a or {name}_b')
        if name not in joints:
            raise ModelError(f'closures: name_mot names unknown joint {quote(name)}; joints are '
                             f'{quote(sorted(joints))}')
        if joints[name].get('type') == 'fixed':
            raise ModelError(f'closures: name_mot names joint {quote(name)}, which is fixed (or '
                             'replaced by FIXED); an actuated joint must move')
        joints[name].set('independent', 'true')
    for index, ((a, b), kind) in enumerate(zip(spec['pairs'], spec['types'])):
        loop = etree.SubElement(root, 'loop', name=f'closed_loop:{a}:{b}', type=kind)
        for tag, frame in (('predecessor', a), ('successor', b)):
            etree.SubElement(loop, tag, link=_frame_link(frame, links, frames, index))
    etree.indent(root, space='  ')
    return etree.tostring(root, encoding='unicode')


def read_closures(source):
    """The closures as {'pairs', 'types' (URDF+ loop types), 'actuated', 'replacements'}; checks
    the shape of every key."""
    data = _load_yaml(source)
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise ModelError(f'closures: unknown key {quote(unknown[0])}; expected keys {list(KEYS)}')
    pairs = []
    for i, pair in enumerate(_entries(data, 'closed_loop')):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                and all(isinstance(x, str) for x in pair)):
            raise ModelError(f'closures: closed_loop entry {i} is {quote(pair)}; expected a pair '
                             '[A, B] of frame names')
        pairs.append(tuple(pair))
    types = _entries(data, 'type', '3D or 6D') if 'type' in data else ['6D'] * len(pairs)
    if len(types) != len(pairs):
        raise ModelError(f'closures: type has {len(types)} entries for {len(pairs)} closed_loop '
                         'pairs; give one per pair (or none: 6D)')
    for i, kind in enumerate(types):
        if kind.upper() not in CLOSURE_LOOP_TYPES:
            raise ModelError(f'closures: type entry {i} is {quote(kind)}; expected 3D or 6D')
    names, kinds = (_entries(data, 'joint_name', 'a joint name'),
                    _entries(data, 'joint_type', 'a joint type'))
    if len(names) != len(kinds):
        raise ModelError(f'closures: joint_name has {len(names)} entries but joint_type has '
                         f'{len(kinds)}; give one type per joint')
    twice = first_repeated(names)
    if twice is not None:
        raise ModelError(f'closures: joint_name lists joint {quote(twice)} twice')
    return {'pairs': pairs, 'types': [CLOSURE_LOOP_TYPES[kind.upper()] for kind in types],
            'actuated': list(dict.fromkeys(_entries(data, 'name_mot', 'a joint name'))),
            'replacements': list(zip(names, kinds))}


def _load_yaml(source):
    """The YAML mapping of a path, YAML text or an already parsed mapping."""
    if isinstance(source, Mapping):
        return source
    text = os.fspath(source) if isinstance(source, os.PathLike) else source
    if not isinstance(text, str):
        raise ModelError('closures: expected a YAML path or YAML text, got '
                         f'{type(source).__name__}')
    if os.path.isfile(text):
        text = _read_text(text)
    elif '\n' not in text and ':' not in text:
        raise ModelError(f'closures file not found: {quote(text)}')
    elif len(text) > bounds.CLOSURES_TEXT:
        raise ModelError(f'closures: the YAML text has {len(text)} characters; expected at most '
                         f'{bounds.CLOSURES_TEXT}')
    try:
        _check_depth(text)
        data = yaml.load(text, Loader=_NamesLoader)
    except yaml.YAMLError as error:
        raise ModelError(f'closures: malformed YAML: {cut(error)}') from None
    if not isinstance(data, Mapping):
        raise ModelError(f'closures: the YAML is {quote(data)}; expected a mapping with the keys '
                         f'{list(KEYS)}')
    return data


def _read_text(path):
    """The text of a closures file of at most bounds.CLOSURES_TEXT bytes."""
    try:
        with open(path, encoding='utf-8') as file:
            size = os.fstat(file.fileno()).st_size
            text = file.read(bounds.CLOSURES_TEXT + 1) if size <= bounds.CLOSURES_TEXT else None
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else 'not UTF-8 text'
        raise ModelError(f'closures file {quote(path)} cannot be read: {reason}') from None
    if text is None or len(text) > bounds.CLOSURES_TEXT:
        raise ModelError(f'closures file {quote(path)} has {size} bytes; expected at most '
                         f'{bounds.CLOSURES_TEXT}')
    return text


def _check_depth(text):
    """Refuse collections nested deeper than bounds.CLOSURES_DEPTH, from the parser's events (which
    keep no stack of their own), before the document is composed (recursively)."""
    depth = 0
    for event in yaml.parse(text, Loader=_NamesLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > bounds.CLOSURES_DEPTH:
                raise ModelError(f'closures: collections nested {depth} deep on line '
                                 f'{event.start_mark.line + 1}; expected at most '
                                 f'{bounds.CLOSURES_DEPTH} (a mapping of lists of pairs)')
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


class _NamesLoader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):
    """YAML of names: a plain scalar is text unless it is null; a tag other than !!str, !!seq,
    !!map and !!null is refused (nothing is converted to a date or a number, which could fail)."""

    def construct_undefined(self, node):
        tag = node.tag.replace('tag:yaml.org,2002:', '!!')
        raise ModelError(f'closures: the tag {quote(tag)} on line {node.start_mark.line + 1} is '
                         'not accepted; the entries are names (text), lists and pairs of names')

    yaml_implicit_resolvers = {first: [('tag:yaml.org,2002:null',
                                        re.compile(r'^(?:~|null|Null|NULL|)$'))]
                               for first in ('~', 'n', 'N', '')}
    yaml_constructors = {**{tag: yaml.SafeLoader.yaml_constructors[tag] for tag in (
        'tag:yaml.org,2002:null', 'tag:yaml.org,2002:str', 'tag:yaml.org,2002:seq',
        'tag:yaml.org,2002:map')},
        None: construct_undefined}


def _entries(data, key, expected=None):
    """The list under key ([] when absent, [x] for a scalar) of at most bounds.CLOSURES_ENTRIES
    entries; with expected (its description), every entry must be a string."""
    value = data.get(key)
    entries = [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]
    if len(entries) > bounds.CLOSURES_ENTRIES:
        raise ModelError(f'closures: {key} has {len(entries)} entries; expected at most '
                         f'{bounds.CLOSURES_ENTRIES}')
    for i, entry in enumerate(entries):
        if expected is not None and not isinstance(entry, str):
            raise ModelError(f'closures: {key} entry {i} is {quote(entry)}; expected {expected}')
        for name in entry if isinstance(entry, (list, tuple)) else (entry,):
            if isinstance(name, str) and NOT_XML.search(name):
                raise ModelError(f'closures: {key} entry {i} holds '
                                 f'{quote(NOT_XML.search(name).group())} in {quote(name)}; names '
                                 'are XML text (no control characters)')
    return entries


def _replace(root, joints, links, name, kind):
    """Replace joint name by kind in place; returns the frames the replacement adds."""
    joint = joints[name]
    for child in joint.findall('axis') + joint.findall('limit') + joint.findall('mimic'):
        joint.remove(child)
    joint.attrib.pop('independent', None)
    upper = kind.upper()
    if upper in ('SPHERICAL', 'FIXED'):
        joint.set('type', upper.lower())
        return {}
    axes = upper[len('UJOINT_'):] if upper.startswith('UJOINT_') else ''
    if not (len(axes) == 2 and axes[0] in AXES and axes[1] in AXES and axes[0] != axes[1]):
        raise ModelError(f'closures: joint_type {quote(kind)} of joint {quote(name)}: '
                         'expected SPHERICAL, FIXED or UJOINT_ab with a, b two different axes '
                         'among X, Y, Z')
    a, b = axes
    first, second, cross = f'{name}_a', f'{name}_b', f'{name}_cross'
    for new, existing in ((first, joints), (second, joints), (cross, links)):
        if new in existing:
            raise ModelError(f'closures: UJOINT of joint {quote(name)} needs the name '
                             f'{quote(new)}, which the URDF already uses')
    # <joint>_a keeps the placement and parent; <joint>_b turns the child about b in the cross's
    # frame.
    child = _child(joint)
    joint.set('name', first)
    joint.set('type', 'continuous')
    joint.find('child').set('link', cross)
    etree.SubElement(joint, 'axis', xyz=AXES[a])
    second_joint = etree.Element('joint', name=second, type='continuous')
    etree.SubElement(second_joint, 'parent', link=cross)
    etree.SubElement(second_joint, 'child', link=child)
    etree.SubElement(second_joint, 'axis', xyz=AXES[b])
    joint.addnext(second_joint)
    joint.addnext(etree.Element('link', name=cross))
    del joints[name]
    joints[first], joints[second] = joint, second_joint
    links.add(cross)
    return {first: cross, second: child}


def _child(joint):
    """The child link a <joint> names (link= or name=, as the URDF+ reader accepts)."""
    child = joint.find('child')
    return None if child is None else child.get('link') or child.get('name')


def _frame_link(frame, links, frames, index):
    """The link whose frame is the named frame: the link itself, or a joint's child link."""
    if frame in links:
        return frame
    if frame in frames:
        return frames[frame]
    raise ModelError(f'closures: closed_loop entry {index} names unknown frame {quote(frame)}; '
                     'expected a link or joint name')
