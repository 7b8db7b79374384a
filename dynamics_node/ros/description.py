"""The robot description and the model served from it.

The description comes from the ``robot_description`` parameter if it is non-empty, else from the
last message on the description topic, else from ``robot_description_file`` (a path or a bundled
robot); ``closures_file`` (Extended URDF) applies to the description from any of them. A new
description is loaded into a new Loaded record that replaces the served one only if it loads; a
changed parameter of a source that another one overrides is rejected (precedence). The first
description loads on a thread of its own, so that the node answers signals while numba compiles.
"""

from dataclasses import dataclass, replace
import functools
import os

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..contacts import resolve as resolve_contacts
from ..errors import ModelError, quote
from ..loading import load_model
from ..model import Model
from ..robots import bundled_model, bundled_models
from . import conversions as conv
from .guard import clip, Guard
from .robot_state import description_specs, FileJoints, Frames

DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
DESCRIPTION_PARAMETERS = ('robot_description', 'robot_description_file', 'closures_file',
                          'reference_positions', 'floating_base')
# Parameters that change the description served from each source (first word of its label).
SERVED_FROM = {'parameter': set(DESCRIPTION_PARAMETERS) - {'robot_description_file'},
               'topic': set(DESCRIPTION_PARAMETERS) - {'robot_description_file'},
               'robot_description_file': set(DESCRIPTION_PARAMETERS)}


@dataclass(frozen=True)
class Loaded:
    """A served model with what the node derives from it (replaced as a whole on reload)."""

    model: Model
    layout: conv.JointLayout
    stream: conv.StreamInput     # stream state, updated by the joint_states callback
    output_index: np.ndarray     # ~/effort_commands entries in layout.independent_names
    source: str                  # where the description came from
    output: JointState           # ~/computed_torques message, its names set once
    efforts: Float64MultiArray   # ~/effort_commands message, reused
    limits: np.ndarray           # <limit effort> of layout.independent_names, inf where none
    frames: Frames               # the transforms of its links (/tf, /tf_static)
    file_joints: FileJoints      # the joints of ~/completed_joint_states

    @property
    def output_y(self):
        """Entries of layout.independent_names in y."""
        return self.layout.independent_y

    @functools.cached_property
    def unlimited(self):
        """True when no joint of layout.independent_names has a <limit effort> (once per
        model)."""
        return not np.isfinite(self.limits).any()


class NoDescription(ModelError):
    """No description source is set."""


def description_file(value):
    """Path of robot_description_file: the file itself, else the bundled robot of that name."""
    if os.path.isfile(value):
        return value
    if value in bundled_models():
        return bundled_model(value)
    raise ModelError(f'robot_description_file {quote(value)} is neither a file nor a bundled '
                     f'robot; bundled robots are {bundled_models()}')


def description_xml(text, label):
    """text, which must be URDF+ XML (the parameter and the topic never carry a path)."""
    if not text.lstrip().startswith('<'):
        raise ModelError(f'{label} is not XML (starts with {quote(text.lstrip())}); it carries '
                         'the URDF+ document itself, a path goes to robot_description_file')
    return text


def output_order(layout, names):
    """Indices into layout.independent_names of stream.output_joints (all if empty)."""
    if not names:
        return np.arange(len(layout.independent_names))
    known = {n: i for i, n in enumerate(layout.independent_names)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ModelError(f'stream.output_joints names {quote(unknown)}, not independent '
                         f'joints of {layout.model.name!r}; they are {list(known)}')
    return np.array([known[n] for n in names], dtype=int)


def select(settings, topic_description):
    """(source label, XML or path, closures path or None) in effect for settings and the last
    description received on the topic ('' if none), or None if there is none. closures_file applies
    to whichever source is in effect."""
    if settings['robot_description'].strip():
        label, source = 'parameter robot_description', description_xml(
            settings['robot_description'], 'robot_description')
    elif topic_description:
        label, source = f"topic {settings['robot_description_topic']}", topic_description
    elif settings['robot_description_file']:
        value = settings['robot_description_file']
        label, source = f'robot_description_file {quote(value)}', description_file(value)
    else:
        return None
    closures = settings['closures_file']
    if not closures:
        return label, source, None
    return f'{label} with closures_file {quote(closures)}', source, closures


def load(label, source, closures, settings, logger):
    """Parse a description (with Extended URDF closures, if any) into a Loaded model, its compiled
    algorithms ready (numba compiles them on a process's first model unless its on-disk cache has
    them), stream.contacts and stream.output_joints checked against it; raises ModelError. Logs a
    warning where a <limit effort> cannot hold the robot (limit_warning)."""
    logger.info(f'loading the robot description from {label}')
    reference = settings['reference_positions']
    floating_base = settings['floating_base']
    spec, original = description_specs(source, closures, floating_base)
    model = load_model(source, closures=closures, floating_base=floating_base,
                       amplification_limit=settings['amplification_limit'],
                       reference_positions=list(reference) or None)
    model.gravity = settings['gravity']
    cached = model.kernels_cached
    if not cached:
        logger.warning('numba is compiling the dynamics kernels, which its on-disk cache '
                       'lacks (once after an install or a change of the kernels, 4 to 9 min on '
                       '2 cores; `make setup` or the colcon install fills the cache)')
    model.warm_up(None if cached else lambda name, i, n, seconds: logger.info(
        f'numba: kernel {name} ready ({i} of {n}, {seconds:.0f} s)'))
    layout = conv.JointLayout(model)
    check_contacts(model, settings['stream.contacts'])
    loaded = Loaded(model, layout, conv.StreamInput(layout),
                    output_order(layout, settings['stream.output_joints']), label,
                    JointState(name=list(layout.independent_names)), Float64MultiArray(),
                    np.array([model.effort_limits.get(n, np.inf)
                              for n in layout.independent_names]),
                    Frames(model, spec), FileJoints(layout, spec, original))
    warn_limits(loaded, settings, logger)
    return loaded


def check_contacts(model, contacts):
    """Raise ModelError unless the model has every link of stream.contacts."""
    try:
        resolve_contacts(model, contacts)
    except ModelError as error:
        raise ModelError(f'stream.contacts does not fit {model.name!r}: {error}') from None


def limit_warning(loaded, contacts, policy):
    """Why the <limit effort> of some actuated joints cannot hold the robot at its reference
    configuration (the stream's gravity efforts there, holding contacts), '' if they can or the
    policy is 'ignore'."""
    if policy == 'ignore' or loaded.unlimited:
        return ''
    model = loaded.model
    tau = model.gravity_forces(model.reference_positions, contacts or None)[loaded.output_y]
    actuated = set(model.actuated_joint_names)
    short = [(name, limit, abs(effort)) for name, limit, effort
             in zip(loaded.layout.independent_names, loaded.limits, tau)
             if name in actuated and abs(effort) > limit]
    if not short:
        return ''
    what = ('drops every output beyond it' if policy == 'reject'
            else 'publishes the limit instead of the effort')
    return clip(f'the <limit effort> of {len(short)} joints of {model.name!r} cannot hold it at '
                'its reference configuration against gravity'
                + (' with stream.contacts' if contacts else '') + ': '
                + ', '.join(f'{name} {limit:g} < {need:.3g}' for name, limit, need in short)
                + f'. Placeholder limits? stream.effort_limits: {policy} {what}; set '
                "stream.effort_limits to 'ignore' to publish the computed efforts (this warning "
                'then goes)', 1000)


def warn_limits(loaded, settings, logger):
    """Log limit_warning for settings, if any."""
    with Guard('effort limits', logger) as outcome:
        warning = limit_warning(loaded, settings['stream.contacts'],
                                settings['stream.effort_limits'])
    if outcome.failed:
        warning = ('cannot check the <limit effort>s at the reference configuration: '
                   f'{outcome.reason}')
    if warning:
        logger.warning(warning)


def with_outputs(loaded, names):
    """loaded with ~/effort_commands in the order of names (stream.output_joints)."""
    return replace(loaded, output_index=output_order(loaded.layout, names))


class ServedModel:
    """The Loaded model the node serves (swapped as a whole: a callback takes a local reference),
    the description sources and the node's lifecycle state. Rejected descriptions are counted in
    stats. Only an active node serves; configuring loads the description, and a description that
    arrives while the node is unconfigured is kept for the next configure (autostart: a callable
    that configures and activates the node, called then; None: a lifecycle manager does)."""

    def __init__(self, settings, stats, logger, autostart=None):
        self.settings, self.stats, self.logger = settings, stats, logger
        self.autostart = autostart
        self.state = 'unconfigured'      # lifecycle state, set by the node's transitions
        self.loaded = None               # Loaded, swapped atomically
        self.generation = 0              # incremented by every swap
        self.loading = ''                # label of the description configure works on
        self.topic_description = ''      # last description received on the topic
        self.on_serve = []               # callables of a Loaded, called when it is served

    def current(self):
        """The served Loaded model; raises ModelError, naming the next step, unless the node is
        active."""
        loaded, state = self.loaded, self.state
        if loaded is not None and state == 'active':
            return loaded
        if self.loading:
            raise ModelError(f'no robot model loaded yet: still loading the description from '
                             f'{self.loading}')
        if state == 'finalized':
            raise ModelError('the node is finalized (lifecycle shutdown): nothing is served; '
                             'start the node again')
        if state == 'inactive':
            raise ModelError('the node is inactive: nothing is served until it is activated '
                             '(lifecycle)')
        if state != 'unconfigured':
            raise ModelError(f'the node is {state}: nothing is served until it is active')
        if self._has_description():
            raise ModelError('no robot model loaded yet: the node is unconfigured; configure and '
                             'activate it (lifecycle), which loads the description')
        then = '' if self.autostart else '; then configure and activate the node (lifecycle)'
        raise ModelError('no robot model loaded yet: set the robot_description or '
                         'robot_description_file parameter, or publish the description on '
                         f"{self.settings['robot_description_topic']!r}{then}")

    def _has_description(self):
        """True when a description source is set (a bad one too: configure names its fault)."""
        try:
            return select(self.settings, self.topic_description) is not None
        except ModelError:
            return True

    def swap(self, loaded):
        self.loaded = loaded
        self.generation += 1
        model = loaded.model
        self.logger.info(
            f'serving {model.name!r} from {loaded.source}: {len(model.clusters)} clusters, '
            f'nq {model.nq}, nv {model.nv}, ny {model.ny}'
            f'{", floating base" if model.floating_base else ""}')
        for warning in model.warnings:
            self.logger.warning(f'{model.name!r}: {clip(warning)}')
        for serve in self.on_serve:
            serve(loaded)

    def configure(self):
        """Load the description in effect (the lifecycle's configure); raises ModelError, counted
        and logged, if there is none or it does not load. A description that arrives meanwhile
        is served instead, also where this one fails. With autostart, no description yet is the
        normal start of a node whose description comes later on the topic: logged as such."""
        generation = self.generation
        with Guard('configure', self.logger) as outcome:
            selected = select(self.settings, self.topic_description)
            if selected is None:
                raise NoDescription(
                    'no robot description: set robot_description or robot_description_file, or '
                    f"publish on {self.settings['robot_description_topic']!r}; nothing is served "
                    'until one arrives')
            self.loading = selected[0]
            try:
                loaded = load(*selected, self.settings, self.logger)
            finally:
                self.loading = ''
            if self.generation == generation:
                self.swap(loaded)
        if outcome.failed and self.generation == generation:
            if isinstance(outcome.error, NoDescription) and self.autostart is not None:
                self.logger.info('waiting for a robot description on topic '
                                 f"{self.settings['robot_description_topic']!r} (or the "
                                 'robot_description or robot_description_file parameter)')
            else:
                self._cannot_load(outcome.reason)
            raise ModelError(outcome.reason)

    def cleanup(self):
        """Drop the served model (the lifecycle's cleanup and shutdown)."""
        self.loaded = None
        self.generation += 1

    def described(self, changes):
        """After parameter changes: a description given to an unconfigured node starts it if
        autostart."""
        if set(DESCRIPTION_PARAMETERS) & set(changes):
            self._start_if_unconfigured()

    def _start_if_unconfigured(self):
        if self.state == 'unconfigured' and self.autostart is not None:
            self.autostart()

    def _cannot_load(self, reason):
        self.stats.reject(reason)
        self.logger.error(f'cannot load the robot description: {reason}')

    def on_description(self, msg):
        """A description on the topic: reload unless the robot_description parameter rules."""
        topic = self.settings['robot_description_topic']
        with Guard('robot_description topic', self.logger) as outcome:
            xml = description_xml(msg.data, f'the description on topic {topic!r}')
            if self.state == 'unconfigured':
                self.topic_description = xml
                self.logger.info('description received on the topic; loaded at configure')
                self._start_if_unconfigured()
                return
            if self.settings['robot_description'].strip():
                self.topic_description = xml
                self.logger.info('description received on the topic; the robot_description '
                                 'parameter takes precedence')
                return
            loaded = load(*select(self.settings, xml), self.settings, self.logger)
            self.topic_description = xml
            self.swap(loaded)
            # a configure that ran meanwhile and failed for want of it left the node unconfigured
            self._start_if_unconfigured()
        if outcome.failed:
            self.stats.reject(outcome.reason)
            self.logger.error('description on the topic rejected, keeping the served model: '
                              f'{outcome.reason}')

    def apply(self, changes, settings):
        """Apply checked parameter changes (settings: all of them with the changes) to the served
        model: a changed description is loaded and served (kept for configure while unconfigured),
        else stream.output_joints, gravity and amplification_limit change the served one. Returns a
        note for the log ('' if none); raises ModelError, changing nothing, when the description
        does not load or another source takes precedence (rejected rather than stored: rclpy passes
        on the reason of a failure only)."""
        note = ''
        changed = set(DESCRIPTION_PARAMETERS) & set(changes)
        if changed and self.state == 'unconfigured':
            return ''                    # loaded at configure
        if changed:
            selected = select(settings, self.topic_description)
            if selected is not None:
                label = selected[0]
                if not changed & SERVED_FROM[label.split()[0]]:
                    raise ModelError(f'{", ".join(sorted(changed))} not applied: {label} takes '
                                     'precedence (robot_description, then the topic, then '
                                     'robot_description_file)')
                self.swap(load(*selected, settings, self.logger))
                return ''
            note = 'every description source is empty: keeping the served model'
        current = self.loaded
        if current is None:
            return note
        if 'stream.contacts' in changes:
            check_contacts(current.model, settings['stream.contacts'])
        if 'stream.output_joints' in changes:
            current = with_outputs(current, settings['stream.output_joints'])
        if 'gravity' in changes:
            current.model.gravity = changes['gravity']
        if 'amplification_limit' in changes:
            current.model.amplification_limit = changes['amplification_limit']
        self.loaded = current
        if {'stream.contacts', 'stream.effort_limits', 'gravity'} & set(changes):
            warn_limits(current, settings, self.logger)
        return note
