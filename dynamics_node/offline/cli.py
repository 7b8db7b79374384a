"""Console script dynamics_offline: the torques along a recorded bag.

    dynamics_offline torques BAG --robot URDF [--closures YAML] --out OUT.mcap

reads the bag's sensor_msgs/JointState messages (and the accelerations of a DynamicJointState
topic where it has them), answers every state it can (torques.py) and writes OUT.mcap, JointState
messages of the independent joints' efforts on the node's topic with the input stamps, and
OUT.parquet beside it, a table of the stamps, positions, velocities, accelerations and efforts;
then a summary: states, rate, what was filtered, the states dropped by reason.
"""

import argparse
import sys
import time
from pathlib import Path

from ..errors import ModelError, quote
from ..loading import load_model
from .filters import ORDER, WINDOW

TORQUES_TOPIC = '/dynamics_node/computed_torques'


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='dynamics_offline',
        description='Dynamics of recorded ROS 2 bags (MCAP or sqlite3), without ROS.')
    commands = parser.add_subparsers(dest='command', required=True)
    torques = commands.add_parser('torques', help='the torques along a recording')
    torques.add_argument('bag', help='an .mcap file, or a rosbag2 folder (MCAP or sqlite3)')
    torques.add_argument('--robot', required=True, help='the URDF+ (or URDF) file')
    torques.add_argument('--closures', help='the YAML closures of an Extended URDF robot')
    torques.add_argument('--out', required=True, help='the MCAP bag to write (and its .parquet)')
    torques.add_argument('--topic', default='/joint_states', help='the JointState topic')
    torques.add_argument('--accelerations-topic', default='/dynamic_joint_states',
                         help='the DynamicJointState topic of measured accelerations, if any')
    torques.add_argument('--window', type=int, default=WINDOW,
                         help='Savitzky-Golay window (samples, odd) of the estimated derivatives')
    torques.add_argument('--order', type=int, default=ORDER,
                         help='Savitzky-Golay polynomial order')
    torques.add_argument('--threads', type=int, default=1, help='threads of the batch calls')
    args = parser.parse_args(argv)
    try:
        summary = run_torques(args)
    except ModelError as error:
        parser.exit(2, f'{parser.prog}: error: {error}\n')
    except OSError as error:
        parser.exit(2, f'{parser.prog}: error: {quote(error.filename or args.out)}: '
                       f'{error.strerror or error}\n')
    print(summary)


def run_torques(args):
    """The torques command; returns its summary."""
    from tqdm import tqdm
    from .bags import read_joint_states, write_joint_states
    from .torques import torques
    start = time.perf_counter()
    model = load_model(args.robot, closures=args.closures)
    states = read_joint_states(args.bag, args.topic, args.accelerations_topic)
    with tqdm(total=len(states.stamps), unit='state', file=sys.stderr,
              disable=not sys.stderr.isatty()) as bar:
        result = torques(model, states, args.window, args.order, args.threads, bar.update)
    out = Path(args.out)
    write_joint_states(out, TORQUES_TOPIC, result.stamps, result.names, efforts=result.efforts)
    _write_table(out.with_suffix('.parquet'), model, result)
    seconds = time.perf_counter() - start
    dropped = ', '.join(f'{count} {reason}' for reason, count in result.dropped.items()) or 'none'
    return (f'{len(result.stamps)} of {len(states.stamps) + sum((states.dropped or {}).values())} '
            f'states answered in {seconds:.1f} s ({len(result.stamps) / seconds:.0f} states/s); '
            f'filtered: {", ".join(result.filtered) or "nothing"}; dropped: {dropped}; '
            f'wrote {out} and {out.with_suffix(".parquet")}')


def _write_table(path, model, result):
    """The Parquet table of the states answered: stamp (ns), then per independent joint its
    position, velocity, acceleration and effort columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    columns = {'stamp': pa.array(result.stamps)}
    positions = result.positions[:, model.independent_q]
    for j, name in enumerate(result.names):
        columns[f'{name}.position'] = pa.array(positions[:, j])
        columns[f'{name}.velocity'] = pa.array(result.velocities[:, j])
        columns[f'{name}.acceleration'] = pa.array(result.accelerations[:, j])
        columns[f'{name}.effort'] = pa.array(result.efforts[:, j])
    pq.write_table(pa.table(columns), path)


if __name__ == '__main__':
    main()
