"""Contacts along a recording: the contact set each state holds, and the efforts and contact
wrenches of a state that holds one.

The sets come from ``--contacts`` (one set for the whole recording) or from the bag's
cluster_dynamics/msg/ContactSet messages, as the node takes them on ``~/contacts``: each set holds
from its header stamp until the next one; an empty set means no contact; a set the model refuses
(an unknown link, a point named twice) is dropped and the one before it holds on. A state with
contacts is answered by Model.contact_bias_forces with its measured velocities and accelerations:
the projected inverse dynamics (the actuated efforts of least norm) at the nearest motion that
keeps the contacts, its corrections reported. The contact forces are written as the wrench each
contact applies on its link, [force; torque] in the link frame about the link origin."""

from dataclasses import dataclass

import numpy as np

from ..contacts import Contact, KINDS, PSEUDOINVERSE_CUTOFF, resolve
from ..errors import ModelError, quote
from ..spatial import quaternion_matrix


@dataclass(frozen=True)
class Schedule:
    """Contact sets in time: sets[k] (a tuple of Contacts, () for none) holds from stamps[k] (ns,
    increasing) until stamps[k + 1]; before stamps[0] no contact holds."""
    stamps: np.ndarray
    sets: tuple

    def at(self, stamps):
        """The index into sets of the set each of stamps holds (-1: none)."""
        return np.searchsorted(self.stamps, stamps, side='right') - 1

    @property
    def contacts(self):
        """Every distinct contact of the sets, in order of first appearance."""
        return tuple(dict.fromkeys(c for contacts in self.sets for c in contacts))


def parse_contact(text):
    """A Contact of 'LINK:KIND' or 'LINK:KIND@X,Y,Z' (KIND 3D or 6D, the contact point X Y Z in
    metres in the link's frame) from the command line."""
    link, _, rest = str(text).rpartition(':')
    kind, _, point = rest.partition('@')
    if not link or kind not in KINDS:
        raise ModelError(f'contact {quote(text)}: expected LINK:KIND or LINK:KIND@X,Y,Z with '
                         f'KIND one of {list(KINDS)}')
    if not point:
        return Contact(link, kind)
    try:
        position = tuple(float(x) for x in point.split(','))
    except ValueError:
        position = ()
    if len(position) != 3:
        raise ModelError(f'contact {quote(text)}: the point must be X,Y,Z in metres')
    return Contact(link, kind, (position, (0.0, 0.0, 0.0, 1.0)))


def schedule(model, contacts, sets, dropped):
    """The Schedule of contacts (Contacts held throughout) if given, else of the sets read from a
    bag ((stamp, contacts) pairs), else None."""
    if contacts is not None:
        return fixed_schedule(model, contacts)
    return None if sets is None else recorded_schedule(model, sets, dropped)


def fixed_schedule(model, contacts):
    """The Schedule of one set of contacts for the whole recording; ModelError where the model
    refuses the set."""
    contacts = tuple(contacts)
    resolve(model, contacts)
    return Schedule(np.array([np.iinfo(np.int64).min]), (contacts,))


def recorded_schedule(model, sets, dropped):
    """The Schedule of the (stamp, contacts) pairs read from a bag (in stamp order); a set the
    model refuses, or a message that was none (contacts None), is left out and counted in
    dropped['contact sets']."""
    stamps, kept = [], []
    for stamp, contacts in sets:
        try:
            if contacts is None:
                raise ModelError('not a contact set')
            resolve(model, contacts)
        except ModelError:
            dropped['contact sets'] = dropped.get('contact sets', 0) + 1
            continue
        stamps.append(stamp)
        kept.append(tuple(contacts))
    return Schedule(np.array(stamps, dtype=np.int64), tuple(kept))


def label(contact):
    """The name of a contact's columns and messages: its link, '@x,y,z' for a point off the link
    origin, '>other' for a contact with another link."""
    position = contact.placement[0]
    point = '@' + ','.join(f'{x:g}' for x in position) if any(position) else ''
    return contact.link + point + (f'>{contact.other}' if contact.other else '')


def link_wrench(contact, force):
    """[force; torque] (6) in contact.link's frame about its origin of a contact's force (3 or 6
    entries, in the contact frame; contacts.Contact)."""
    position, quaternion = contact.placement
    R, p = quaternion_matrix(*quaternion), np.array(position)
    f = R @ force[:3]
    torque = np.cross(p, f) + (R @ force[3:] if len(force) == 6 else 0.0)
    return np.concatenate([f, torque])


def null_space(model, q, contacts):
    """N (ny x k): a basis of the independent velocities that keep contacts with the world at q
    (J_c N = 0), from their links' Jacobians (Model.link_jacobian, in the link frame): a 6D
    contact's rows span its link's, a 3D contact's those of its point's velocity v + w x p (the
    orientation of a contact frame changes neither). Singular values of J_c below
    PSEUDOINVERSE_CUTOFF of the largest count as zero."""
    rows = []
    for contact in contacts:
        if contact.other is not None:
            raise ModelError(f'contact {quote(label(contact))}: identification takes '
                             'contacts with the world only')
        J = model.link_jacobian(q, contact.link)
        x, y, z = contact.placement[0]
        rows.append(J if contact.kind == '6D' else
                    J[:3] - np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]) @ J[3:])
    if not rows:
        return np.eye(model.ny)
    _, s, Vt = np.linalg.svd(np.vstack(rows))
    return Vt[int(np.sum(s > PSEUDOINVERSE_CUTOFF * s[0])):].T


def held_states(model, used, schedule, rows):
    """The states rows of the Motion used under the contact sets of schedule (schedule.at):
    {row: ContactBiasInfo} of those answered and the number refused (contact_bias_forces raises:
    no actuator efforts produce the motion, the contacts' Jacobian loses rank)."""
    held = schedule.at(used.stamps)
    answered, refused = {}, 0
    for row in rows:
        try:
            answered[row] = model.contact_bias_forces(
                used.positions[row], used.velocities[row], schedule.sets[held[row]], info=True,
                a=used.accelerations[row])
        except ModelError:
            refused += 1
    return answered, refused
