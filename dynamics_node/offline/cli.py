"""Console script dynamics_offline: the dynamics of a recorded bag.

    dynamics_offline torques BAG [BAG ...] --robot URDF [--closures YAML]
        [--contacts LINK:KIND ...] [--workers N | --scheduler tcp://HOST:PORT]
        [--window-states N] --out OUT.mcap
    dynamics_offline identify BAG --robot URDF [--closures YAML] [--contacts LINK:KIND ...]
        [--friction] --out ID.urdf

Both read the bag's sensor_msgs/JointState messages (and the accelerations of a DynamicJointState
topic where it has them) into the states the model can use (torques.motion). torques answers each
(torques.py; with contacts from --contacts or the bag's ContactSet messages, contacts.py), in
windows of states on this process or on a Dask cluster (--workers, --scheduler; scale.py) with the
same results, and writes OUT.mcap, on the node's topics with the input stamps: JointState messages
of the independent joints' efforts, the completed joint states, and a WrenchStamped per contact
held; and OUT.parquet beside it, a table of the stamps, positions, velocities, accelerations,
efforts and contact wrenches. With several bags, OUT is a directory that receives NAME.mcap and
NAME.parquet per bag, NAME the bag's name. identify fits the inertial parameters (and friction)
to the messages' efforts (identify.py; with contacts, in their null space) and writes them as a
URDF+ file that load_model reads. Each ends with a summary: states, rate, what was filtered, the
states dropped by reason.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import first_repeated, ModelError, quote
from ..loading import load_model
from .filters import ORDER, WINDOW
from .scale import WINDOW_STATES

TORQUES_TOPIC = '/dynamics_node/computed_torques'
COMPLETED_TOPIC = '/dynamics_node/completed_joint_states'
WRENCHES_TOPIC = '/dynamics_node/contact_wrenches'
CONTACTS_TOPIC = '/dynamics_node/contacts'
BAG_HELP = 'an .mcap file, or a rosbag2 folder (MCAP or sqlite3)'


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='dynamics_offline',
        description='Dynamics of recorded ROS 2 bags (MCAP or sqlite3), without ROS.')
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--robot', required=True, help='the URDF+ (or URDF) file')
    common.add_argument('--closures', help='the YAML closures of an Extended URDF robot')
    common.add_argument('--topic', default='/joint_states', help='the JointState topic')
    common.add_argument('--accelerations-topic', default='/dynamic_joint_states',
                        help='the DynamicJointState topic of measured accelerations, if any')
    common.add_argument('--odometry', help='the nav_msgs/Odometry topic of a floating base')
    common.add_argument('--floating-base', action='store_true',
                        help='hang the robot file\'s root link on a floating joint (a legged '
                             'robot exported without one, as load_model(floating_base=True))')
    common.add_argument('--contacts-topic', default=CONTACTS_TOPIC,
                        help='the cluster_dynamics/msg/ContactSet topic of the contact sets, if '
                             'any (each holds from its stamp to the next; \'\' for none; not '
                             'read with --contacts)')
    common.add_argument('--contacts', nargs='+', metavar='LINK:KIND[@X,Y,Z]',
                        help='contacts held throughout instead of the bag\'s contact sets: '
                             'KIND 3D or 6D, the point X,Y,Z (m) in the link frame')
    common.add_argument('--window', type=int, default=WINDOW,
                        help='Savitzky-Golay window (samples, odd) of the estimated derivatives')
    common.add_argument('--order', type=int, default=ORDER,
                        help='Savitzky-Golay polynomial order')
    common.add_argument('--threads', type=int, default=1, help='threads of the batch calls')
    commands = parser.add_subparsers(dest='command', required=True)
    torques = commands.add_parser('torques', parents=[common],
                                  help='the torques along a recording')
    torques.add_argument('bags', nargs='+', metavar='BAG', help=BAG_HELP)
    torques.add_argument('--out', required=True,
                         help='the MCAP bag to write (and its .parquet beside it); with several '
                              'bags, a directory that receives NAME.mcap and NAME.parquet per '
                              'bag, NAME the bag\'s file or folder name without its suffix')
    torques.add_argument('--window-states', type=_count, default=WINDOW_STATES, metavar='N',
                         help='states per window (default %(default)s), the unit of work; '
                              'the results do not depend on where the windows run (they depend '
                              'on N only within the completion\'s tolerance)')
    where = torques.add_mutually_exclusive_group()
    where.add_argument('--workers', type=_count, metavar='N',
                       help='answer the windows on a local Dask cluster of N worker '
                            'processes (one thread each)')
    where.add_argument('--scheduler', metavar='tcp://HOST:PORT',
                       help='answer the windows on the existing Dask cluster of this scheduler')
    identify = commands.add_parser('identify', parents=[common],
                                   help='the inertial parameters from the measured efforts')
    identify.add_argument('bag', help=BAG_HELP)
    identify.add_argument('--out', required=True, help='the URDF+ file to write')
    identify.add_argument('--friction', action='store_true',
                          help='fit viscous and Coulomb friction per independent joint too')
    args = parser.parse_args(argv)
    try:
        summary = (run_torques if args.command == 'torques' else run_identify)(args)
    except ModelError as error:
        parser.exit(2, f'{parser.prog}: error: {error}\n')
    except OSError as error:
        parser.exit(2, f'{parser.prog}: error: {quote(error.filename or args.out)}: '
                       f'{error.strerror or error}\n')
    print(summary)


def _read(args, efforts=False):
    """(model, the recording's Motion, its JointStates) of the command's arguments."""
    from tqdm import tqdm
    from .bags import read_joint_states
    from .torques import motion
    model = load_model(_description(args, args.floating_base))
    states = read_joint_states(args.bag, args.topic, args.accelerations_topic, args.odometry,
                               None if args.contacts else args.contacts_topic)
    with tqdm(total=len(states.stamps), unit='state', file=sys.stderr,
              disable=not sys.stderr.isatty()) as bar:
        used = motion(model, states, args.window, args.order, bar.update, efforts)
    return model, used, states


def run_torques(args):
    """The torques command, window by window on this process or a Dask cluster (scale.py);
    returns its summary."""
    from tqdm import tqdm
    from .bags import read_joint_states
    from .contacts import parse_contact
    from .scale import dask_client, model_of, torques
    start = time.perf_counter()
    contacts = None if args.contacts is None else [parse_contact(c) for c in args.contacts]
    text = _description(args, args.floating_base)
    model = model_of(text)
    outs = _outputs(args.bags, args.out)
    recordings = {bag: read_joint_states(bag, args.topic, args.accelerations_topic,
                                         args.odometry, None if args.contacts else
                                         args.contacts_topic) for bag in args.bags}
    with tqdm(total=sum(len(states.stamps) for states in recordings.values()), unit='state',
              file=sys.stderr, disable=not sys.stderr.isatty()) as bar, \
            dask_client(args.workers, args.scheduler) as client:
        results = torques(text, recordings, contacts, args.window, args.order, args.threads,
                          args.window_states, client, bar.update)
    for bag, out in outs.items():
        _write_bag(out, model, results[bag])
        _write_table(out.with_suffix('.parquet'), model, results[bag])
    seconds = time.perf_counter() - start
    if len(outs) == 1:
        (bag, out), = outs.items()
        return (f'{_states(recordings[bag], results[bag].motion, "answered", seconds)}; '
                f'wrote {out} and {out.with_suffix(".parquet")}')
    answered = sum(len(result.stamps) for result in results.values())
    return '\n'.join([f'{bag}: {_states(recordings[bag], results[bag].motion, "answered")}; '
                      f'wrote {out} and {out.with_suffix(".parquet")}'
                      for bag, out in outs.items()]
                     + [f'{answered} states of {len(outs)} bags answered in {seconds:.1f} s '
                        f'({answered / seconds:.0f} states/s)'])


def _count(text):
    """A count of the command line: a whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f'{text!r} is not a whole number of at least 1')
    return int(text)


def _description(args, floating=False):
    """The URDF+ text of --robot (with --closures, converted; floating, its root link hung on a
    floating joint, compose.float_root)."""
    from lxml import etree
    from ..description.compose import float_root
    from ..loading import urdf_plus
    text = (urdf_plus(args.robot, args.closures) if args.closures
            else Path(args.robot).read_text(encoding='utf-8'))
    return etree.tostring(float_root(text), encoding='unicode') if floating else text


def _outputs(bags, out):
    """{bag: its OUT.mcap}: out for one bag; with several, out/NAME.mcap, NAME the bag's file or
    folder name without its suffix (out made a directory)."""
    if len(bags) == 1:
        return {bags[0]: Path(out)}
    names = [Path(bag).stem for bag in bags]
    twice = first_repeated(names)
    if twice is not None:
        raise ModelError(f'two bags are named {quote(twice)}: with several bags each writes '
                         f'{quote(str(Path(out) / twice))}.mcap; rename or link one')
    Path(out).mkdir(parents=True, exist_ok=True)
    return {bag: Path(out) / f'{name}.mcap' for bag, name in zip(bags, names)}


def run_identify(args):
    """The identify command; returns its summary."""
    from ..description.urdf import read_urdf
    from .contacts import parse_contact, schedule
    from .identify import identify, write_urdf
    from .torques import coordinates
    start = time.perf_counter()
    contacts = None if args.contacts is None else [parse_contact(c) for c in args.contacts]
    model, used, states = _read(args, efforts=True)
    result = identify(model, used, args.friction, args.threads,
                      schedule(model, contacts, states.contact_sets, used.dropped))
    if result.inconsistent:
        bodies = '; '.join(f'{body}: {why}' for body, why in result.inconsistent.items())
        raise ModelError(f'the identified parameters are not physical ({bodies}); not written: '
                         'record motion that excites every body, or more of it')
    write_urdf(_description(args), read_urdf(_description(args, args.floating_base)), model,
               result.parameters, args.out)
    friction = '' if result.friction is None else '; friction (viscous, Coulomb): ' + ', '.join(
        f'{name} {v:.4g} {c:.4g}' for name, (v, c) in zip(coordinates(model)[0],
                                                          result.friction))
    return (f'{_states(states, used, "fitted", time.perf_counter() - start)}; '
            f'{result.rank} base parameters of {len(result.parameters)}, residual RMS '
            f'{result.residual:.3g}{friction}; wrote {args.out}')


def _states(states, motion, verb, seconds=None):
    """The summary of the states a command used (in seconds)."""
    dropped = ', '.join(f'{count} {reason}' for reason, count in motion.dropped.items()) or 'none'
    total = len(states.stamps) + sum((states.dropped or {}).values())
    rate = ('' if seconds is None
            else f' in {seconds:.1f} s ({len(motion.stamps) / seconds:.0f} states/s)')
    return (f'{len(motion.stamps)} of {total} states {verb}{rate}; filtered: '
            f'{", ".join(motion.filtered) or "nothing"}; dropped: {dropped}')


def _write_bag(path, model, result):
    """The MCAP bag of the states answered: the efforts, the completed joint states (every 1-DoF
    joint's position and velocity) and the contact wrenches (contacts.link_wrench, frame_id their
    link)."""
    from .bags import write_bag
    from .contacts import label
    motion = result.motion
    bodies = [b for b in range(1, model.nb) if model.nq_body[b] == model.nv_body[b] == 1]
    velocities = np.array([model.spanning_velocities(q, yd)
                           for q, yd in zip(motion.positions, motion.velocities)])
    completed = (COMPLETED_TOPIC, [model.joint_names[b - 1] for b in bodies],
                 motion.positions[:, model.idx_q[bodies]],
                 velocities.reshape(-1, model.nv)[:, model.idx_v[bodies]], None)
    links = {label(c): c.link for c in result.schedule.contacts} if result.schedule else {}
    write_bag(path, result.stamps,
              [(TORQUES_TOPIC, result.names, None, None, result.efforts), completed],
              [(WRENCHES_TOPIC, links[name], W)
               for name, W in (result.contact_wrenches or {}).items()])


def _write_table(path, model, result):
    """The Parquet table of the states answered: stamp (ns), then per independent joint its
    position, velocity, acceleration and effort columns, and a floating base's wrench ([force;
    torque] in the base frame: what the environment must apply beyond the contacts); with
    contacts, per contact its wrench on its link (contact.LABEL.force.x ..., null where it does
    not hold) and the motion's corrections (contacts.velocity_correction, ...)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    axes = ('force.x', 'force.y', 'force.z', 'torque.x', 'torque.y', 'torque.z')
    motion = result.motion
    columns = {'stamp': pa.array(result.stamps)}
    for j, name in enumerate(result.names):
        body, y = model.joint_names.index(name) + 1, model.independent_velocities_index[name]
        columns[f'{name}.position'] = pa.array(motion.positions[:, model.idx_q[body]])
        columns[f'{name}.velocity'] = pa.array(motion.velocities[:, y])
        columns[f'{name}.acceleration'] = pa.array(motion.accelerations[:, y])
        columns[f'{name}.effort'] = pa.array(result.efforts[:, j])
    if result.base_wrench is not None:
        for j, axis in enumerate(axes):
            columns[f'{model.floating_base_joint}.{axis}'] = pa.array(result.base_wrench[:, j])
    for name, W in (result.contact_wrenches or {}).items():
        for j, axis in enumerate(axes):
            columns[f'contact.{name}.{axis}'] = pa.array(W[:, j], from_pandas=True)
    if result.corrections is not None:
        for j, what in enumerate(('velocity_correction', 'acceleration_correction')):
            columns[f'contacts.{what}'] = pa.array(result.corrections[:, j])
    pq.write_table(pa.table(columns), path)


if __name__ == '__main__':
    main()
