"""`make bench`: our dynamics next to Pinocchio's, in one process, with ratios; writes
docs/performance.md.

0. Small robots (a 2-dof pendulum, a 6-dof arm and the published 6-dof arms of example-robot-data):
   the public forward and inverse dynamics against pinocchio.aba and rnea, where the fixed cost of
   a call decides the race.
1. Tree-heavy robots (every bundled robot and bench/robots.py's 62-dof geared humanoid): median
   time per call (microseconds, from Python) of our public methods (inputs checked) and of their
   compiled kernels next to Pinocchio on the same spanning tree (loops and couplings ignored,
   test/oracle.py): FD / aba, ID / rnea, H_y / crba, Lambda^-1 / computeMinverse (the robot's
   contact links); then (1b) the public methods at the positions complete_positions returned last,
   which skip the position checks; (1c) where the loop robots' H_y time goes (bench/warm_loops.py).
2. Loop mechanisms (bench/lcaba_vs_pinocchio.py): our compiled LCABA and cluster ABA, and the
   public forward_dynamics, next to pinocchio.lcaba and constraintDynamics with the loops as 3D/6D
   constraints.
3. FD time against depth and loop size on the nested parallel chains of Chignoli et al. 2023
   (test/mechanisms.py), for ours and the peers; a table and a plot (bench/fd_scaling.png, not kept
   in git).
4. Table II of Sathya & Carpentier 2025 (bench/table_ii.py): forward dynamics with contacts on the
   hand, humanoid and Digit-like systems of dynamics_node/description/scenes.py, our LCABA (and the
   exact route) next to pinocchio.lcaba and constraintDynamics at 1 and 3 iterations, with the
   paper's numbers.
5. Link kinematics (bench/link_kinematics.py): poses, Jacobians and Jdot yd of one link and of
   every link, from the library and through the ~/link_kinematics handler, next to Pinocchio's
   framesForwardKinematics + getFrameJacobian (and getFrameClassicalAcceleration).
6. Contacts (bench/contacts.py): the stream's output with contacts (contact_bias_forces), projected
   inverse dynamics, the exact route and LCABA next to pinocchio.constraintDynamics, on the bundled
   quadruped and humanoid and the systems of Table II.
7. Whole-body terms (bench/whole_body.py): the centroidal terms, the Coriolis matrix, the energies
   and the regressor next to Pinocchio's ccrba, dccrba, computeCentroidalMomentumTimeVariation,
   centerOfMass, jacobianCenterOfMass, computeCoriolisMatrix, computeKineticEnergy,
   computePotentialEnergy and computeJointTorqueRegressor on Solo-12, Talos, UR5 and the bundled
   quadruped.
8. Batches (bench/batch.py): states per second of Batch's forward and inverse dynamics and
   regressor on 1 and 2 threads next to pinocchio.abaInParallel and rneaInParallel, and Python
   loops of single calls, on UR5, Talos and the bundled quadruped; and the 1-thread time per state
   against Pinocchio's C++ itself (bench/pinocchio_anchor.cpp, compiled first, before section 0,
   so that a missing compiler stops the run at once).
9. Derivatives (bench/derivatives.py): inverse_dynamics_derivatives and
   forward_dynamics_derivatives next to computeRNEADerivatives and computeABADerivatives on the
   trees, and next to one forward_dynamics call and central differences of it on the loop robots.
10. Tello (bench/differentials.py): the bundled Tello robots' cluster ABA, RNEA and EFPA next to
   the projection and Lagrange-multiplier methods on Pinocchio's spanning tree with the
   differentials' K and k, and the seed paper's relative timings.
Then the first-run compile time and the cached warm-up, each from a fresh process sharing a
temporary numba cache, and the node's end-to-end latency (bench/node_latency.py).
Calls are timed in interleaved rounds of batches (bench/timing.py).

Usage: .venv/bin/python bench/run.py
"""

import json
import os
import subprocess
import sys
import tempfile

# Pinocchio's parallel calls run on OpenMP, whose idle threads spin for a while after each
# call by default and take a core from the next measurement: they sleep here instead
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import numpy as np  # noqa: E402  (after OMP_WAIT_POLICY)
import pinocchio as pin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from dynamics_node import bundled_model, bundled_models, load_model  # noqa: E402
from dynamics_node.algorithms.lcaba import ProximalSettings  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: consistent random state)
from lcaba_vs_pinocchio import (HEADER as LOOP_HEADER, lcaba_kernel, loop_table,  # noqa: E402
                                NOTE as LOOP_NOTE, PinocchioCase)
from link_kinematics import HEADING as LINKS, report_section as links_section  # noqa: E402
# test helper: Chignoli et al. 2023-style parallel chains
from mechanisms import parallel_chains  # noqa: E402
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from pinocchio_anchor import build as build_anchor  # noqa: E402
from robots import arm6, jvrc_like, pendulum, published_arms  # noqa: E402
from table_ii import HEADING as TABLE_II, report_section as table_ii_section  # noqa: E402
from timing import interleaved_medians, Report  # noqa: E402
from batch import HEADING as BATCHES, report_section as batch_section  # noqa: E402
from contacts import HEADING as CONTACTS, report_section as contacts_section  # noqa: E402
from derivatives import HEADING as DERIVATIVES, report_section as derivatives_section  # noqa: E402
from differentials import HEADING as TELLO, report_section as tello_section  # noqa: E402
from warm_loops import compile_loops, warm_times  # noqa: E402
from whole_body import HEADING as WHOLE_BODY, report_section as whole_body_section  # noqa: E402

FIRST = ['quadruped_rotors', 'humanoid_belts']          # the two geared robots lead the table
ROUNDS, BATCH = 100, 20                                  # 2000 calls per function
COLD_START = """
import json, time
start = time.perf_counter()
from dynamics_node import bundled_model, load_model
from dynamics_node.engines.numba_engine import FastPath
model = load_model(bundled_model('quadruped_rotors'))
warm_up = FastPath(model).warm_up()
print(json.dumps({'warm_up': warm_up, 'ready': time.perf_counter() - start}))
"""


def contact_links(model):
    """Links fixed to a moving body (feet, hands, tools), else the last link."""
    links = [link for b in range(1, model.nb) for link in model.body_links[b][1:]]
    return links or [model.links[-1]]


def measure(label, xml, rng):
    """Median microseconds per call of our public methods, our kernels and Pinocchio's tree
    algorithms."""
    model = load_model(xml)
    fast = model._local.data.engine
    model.warm_up()
    q, yd, _ = random_state(model, rng)
    # completed last: equal positions skip the position checks
    closed = random_state(model, rng)[0]
    tau_y, ydd = rng.normal(size=model.ny), rng.normal(size=model.ny)
    links = contact_links(model)
    calls = {'FD': lambda: model.forward_dynamics(q, yd, tau_y),
             'ID': lambda: model.inverse_dynamics(q, yd, ydd),
             'H': lambda: model.mass_matrix(q), 'Linv': lambda: model.inverse_osim(q, links),
             'FD kernel': lambda: fast.forward_dynamics(q, yd, tau_y, spanning=True),
             'ID kernel': lambda: fast.inverse_dynamics(q, yd, ydd),
             'H kernel': lambda: fast.mass_matrix(q),
             'Linv kernel': lambda: fast.inverse_osim(q, links),
             'FD closed': lambda: model.forward_dynamics(closed, yd, tau_y),
             'ID closed': lambda: model.inverse_dynamics(closed, yd, ydd),
             'H closed': lambda: model.mass_matrix(closed),
             'Linv closed': lambda: model.inverse_osim(closed, links),
             'H fused': lambda: fast._fused_mass_matrix(fast._x, q)}

    oracle = KKTOracle(xml)
    oracle.set_layout(model.joint_names)
    tree, data = oracle.model, oracle.model.createData()
    qp, vp = oracle.q_to_pin(q), oracle.v_to_pin(model.spanning_velocities(q, yd))
    taup, ap = rng.normal(size=tree.nv), rng.normal(size=tree.nv)
    calls.update({'aba': lambda: pin.aba(tree, data, qp, vp, taup),
                  'rnea': lambda: pin.rnea(tree, data, qp, vp, ap),
                  'crba': lambda: pin.crba(tree, data, qp),
                  'Minv': lambda: pin.computeMinverse(tree, data, qp)})
    t = interleaved_medians(calls, ROUNDS, BATCH)
    if model.loop_bodies:
        t['H warm'], t['loops warm'] = warm_times(fast, q)
    return label, model, t


SMALL_ROUNDS, SMALL_BATCH, SMALL_REPEATS = 100, 50, 3


def small_robot_table(report, rng):
    """Public FD and ID next to pinocchio.aba and rnea on 2- and 6-dof robots: the median over
    SMALL_REPEATS interleaved measurements of each ratio."""
    cases = [('pendulum (generated)', pendulum()),
             ('arm6 (generated, UR5 lengths and masses)', arm6())]
    cases += [(f'{name} (example-robot-data)', path) for name, path in published_arms().items()]
    rows = []
    for label, source in cases:
        model = load_model(source)
        model.warm_up()
        peer = (pin.buildModelFromXML(source) if source.lstrip().startswith('<')
                else pin.buildModelFromUrdf(source))
        peer_data = peer.createData()
        assert peer.nv == model.nv == model.ny, label
        q, _, _ = random_state(model, rng)
        v, tau, a = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
        # timing only: same joint order, values may differ (a continuous joint is cos, sin there)
        qp = q.copy() if peer.nq == model.nq else pin.neutral(peer)
        samples = []
        for _ in range(SMALL_REPEATS):
            t = interleaved_medians({'FD': lambda: model.forward_dynamics(q, v, tau),
                                     'aba': lambda: pin.aba(peer, peer_data, qp, v, tau),
                                     'ID': lambda: model.inverse_dynamics(q, v, a),
                                     'rnea': lambda: pin.rnea(peer, peer_data, qp, v, a)},
                                    SMALL_ROUNDS, SMALL_BATCH)
            samples.append((t['FD'], t['aba'], t['FD'] / t['aba'], t['ID'], t['rnea'],
                            t['ID'] / t['rnea']))
        fd, aba, fd_ratio, id_, rnea, id_ratio = np.median(np.array(samples), axis=0)
        rows.append([label, model.nv, f'{fd:.2f}', f'{aba:.2f}', f'{fd_ratio:.2f}', f'{id_:.2f}',
                     f'{rnea:.2f}', f'{id_ratio:.2f}'])
    report.heading('0. Small robots: public calls against Pinocchio')
    report.text('Median microseconds per call from Python; ratio = ours / Pinocchio (median of '
                f'{SMALL_REPEATS} interleaved measurements). On robots this small the fixed cost '
                'of a call (argument checks, the crossing into compiled code, the result copy) is '
                'most of the time.'
                + ('' if published_arms() else ' The published arms need example-robot-data '
                                               '(scripts/setup.sh installs it).'))
    report.table(('robot', 'nv', 'FD us', 'pin.aba us', 'FD ratio', 'ID us', 'pin.rnea us',
                  'ID ratio'), rows)


def robot_table(report, rng):
    # before the first warm_up
    compile_loops(load_model(bundled_model('four_bar'))._local.data.engine)
    names = FIRST + [name for name in bundled_models() if name not in FIRST]
    cases = [(name, bundled_model(name)) for name in names]             # a path or URDF+ text
    cases.append(('jvrc_like (generated)', jvrc_like()))
    results = [measure(label, xml, rng) for label, xml in cases]
    pairs = (('FD', 'aba'), ('ID', 'rnea'), ('H', 'crba'), ('Linv', 'Minv'))
    header = ('robot', 'nv/ny') + tuple(
        cell for ours, theirs in pairs
        for cell in (f'{ours} us', 'kernel', f'pin.{theirs}', 'ratio'))
    rows = []
    for label, model, t in results:
        row = [label, f'{model.nv}/{model.ny}']
        for ours, theirs in pairs:
            row += [f'{t[ours]:.1f}', f'{t[ours + " kernel"]:.1f}', f'{t[theirs]:.1f}',
                    f'{t[ours] / t[theirs]:.2f}']
        rows.append(row)
    report.heading('1. Tree-heavy robots: public methods and kernels against Pinocchio')
    report.text('Median microseconds per call; kernel = the compiled algorithm alone; ratio = '
                'public / Pinocchio on the same spanning tree. FD = cluster ABA (spanning qdd), '
                'ID = cluster RNEA, H = H_y (ny x ny), Linv = Lambda^-1 of the contact links (6k '
                'x 6k). Pinocchio works on all nv spanning coordinates, loops and couplings '
                'ignored.')
    report.table(header, rows)
    report.heading('1b. At completed positions')
    report.text('The same public methods at the positions complete_positions returned last, which '
                'skip the position checks; median microseconds per call (ratio to the same '
                'Pinocchio call as in table 1).')
    report.table(('robot',) + tuple(f'{ours} us' for ours, _ in pairs), [
        [label] + [f'{t[ours + " closed"]:.1f} ({t[ours + " closed"] / t[theirs]:.2f})'
                   for ours, theirs in pairs]
        for label, _, t in results])
    report.heading("1c. Where the loop robots' H_y goes")
    report.text('Microseconds: the public call, its fused compiled call from Python, the same '
                'call repeated inside one compiled call (warm: code, caches and branch '
                'predictors), and of that the loops\' K, sparse QR and G '
                '(kinematics.explicit_constraints, warm), next to pin.crba.')
    report.table(('robot', 'H_y public', 'fused call', 'fused warm', 'K, QR, G warm',
                  'pin.crba'), [
        [label] + [f'{t[key]:.2f}' for key in ('H', 'H fused', 'H warm', 'loops warm', 'crba')]
        for label, model, t in results if model.loop_bodies])


SCALING = [(depth, 4) for depth in (1, 2, 4, 8, 16)] + [(1, loop) for loop in (8, 12, 16, 24, 32)]
SCALING_COLUMNS = ('FD auto', 'C-ABA', 'LCABA', 'pin.aba', 'pin.cD', 'pin.lcaba')


def scaling_table(report, rng):
    """FD times on parallel chains of growing depth and loop size; prints the table, saves the
    plot."""
    settings = ProximalSettings()
    pin_settings = pin.ProximalSettings(settings.tolerance, 1.0 / settings.mu,
                                        settings.max_iterations)
    rows, times = [], {}
    for depth, loop in SCALING:
        xml, q = parallel_chains(depth, loop)
        model = load_model(xml)
        fast = model._local.data.engine
        model.warm_up()
        yd = rng.normal(size=model.ny)
        v, tau, f_ext = (model.spanning_velocities(q, yd), rng.normal(size=model.nv),
                         np.zeros((model.nb, 6)))
        peer = PinocchioCase(xml, model.joint_names)
        qp, vp, taup = (peer.reference.q_to_pin(q), peer.reference.v_to_pin(v),
                        peer.reference.v_to_pin(tau))
        tree_data = peer.model.createData()
        qdd = model.forward_dynamics(q, v, tau)
        error = np.max(np.abs(
            peer.reference.v_from_pin(peer.constraint_dynamics(qp, vp, taup, pin_settings)) - qdd))
        assert error < 1e-6 * max(1.0, np.max(np.abs(qdd))), (
            f'depth {depth} loop {loop}: cD differs by {error:.1e}')
        t = times[depth, loop] = interleaved_medians({
            'FD auto': lambda: model.forward_dynamics(q, v, tau),
            'C-ABA': lambda: fast.forward_dynamics(q, yd, tau, spanning=True),
            'LCABA': lcaba_kernel(fast, q, v, tau, f_ext, settings),
            'pin.aba': lambda: pin.aba(peer.model, tree_data, qp, vp, taup),
            'pin.cD': lambda: peer.constraint_dynamics(qp, vp, taup, pin_settings),
            'pin.lcaba': lambda: peer.lcaba(qp, vp, taup, pin_settings)}, 60, 10)
        used = model.forward_dynamics(q, v, tau, info=True).method_used
        rows.append([depth, loop, f'{model.nv}/{model.ny}', used]
                    + [f'{t[c]:.1f}' for c in SCALING_COLUMNS]
                    + [f'{t["FD auto"] / t["pin.cD"]:.2f}',
                       f'{min(t["C-ABA"], t["LCABA"]) / t["pin.cD"]:.2f}'])
    report.heading('3. FD on nested parallel chains')
    report.text('The nested planar closed chains of Chignoli et al. 2023 (test/mechanisms.py): '
                'depth chains of loop links each; median microseconds per call; auto = the method '
                'Model.forward_dynamics picks; cD = pinocchio.constraintDynamics. The plot is '
                'bench/fd_scaling.png.')
    report.table(('depth', 'loop', 'nv/ny', 'auto') + tuple(f'{c} us' for c in SCALING_COLUMNS)
                 + ('auto/cD', 'kernel/cD'), rows)
    plot_scaling(times, os.path.join(HERE, 'fd_scaling.png'))


def plot_scaling(times, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    figure, axes = pyplot.subplots(1, 2, figsize=(11, 4.2))
    for ax, (index, fixed, label) in zip(axes, ((0, 4, 'depth (closed chains of 4 links)'),
                                                (1, 1, 'loop size (links of one closed chain)'))):
        keys = [key for key in SCALING if key[1 - index] == fixed]
        x = [key[index] for key in keys]
        for column in SCALING_COLUMNS:
            ax.plot(x, [times[key][column] for key in keys], marker='o', label=column,
                    linestyle='-' if column in ('FD auto', 'C-ABA', 'LCABA') else '--')
        ax.set_xlabel(label)
        ax.set_ylabel('forward dynamics, us per call')
        ax.set_yscale('log')
        ax.grid(alpha=0.3)
    axes[0].legend()
    figure.suptitle('cluster_dynamics (solid) vs Pinocchio (dashed), median of interleaved calls')
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def startup_times():
    """(first run, cached) FastPath.warm_up() seconds and process-start-to-ready seconds, each in a
    fresh process with an initially empty numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT)
        runs = [json.loads(subprocess.run([sys.executable, '-c', COLD_START], env=env, check=True,
                                          capture_output=True, text=True).stdout)
                for _ in range(2)]
    return runs


def main():
    build_anchor()
    rng = np.random.default_rng(0)
    report = Report('Performance')
    small_robot_table(report, rng)
    robot_table(report, rng)
    report.heading('2. Loop mechanisms: LCABA and cluster ABA against pinocchio.lcaba and '
                   'constraintDynamics')
    report.table(LOOP_HEADER, loop_table(rng))
    report.text(LOOP_NOTE)
    scaling_table(report, rng)
    table_ii_section(report, '4. ' + TABLE_II)
    links_section(report, '5. ' + LINKS, rng)
    contacts_section(report, '6. ' + CONTACTS, rng)
    whole_body_section(report, '7. ' + WHOLE_BODY, rng)
    batch_section(report, '8. ' + BATCHES, rng)
    derivatives_section(report, '9. ' + DERIVATIVES, rng)
    tello_section(report, '10. ' + TELLO, rng)

    cold, cached = startup_times()
    report.heading('Compilation')
    report.text('quadruped_rotors, fresh processes, empty numba cache: first run warm_up '
                f'{cold["warm_up"]:.1f} s (process ready after {cold["ready"]:.1f} s); cached '
                f'warm_up {cached["warm_up"]:.2f} s (ready after {cached["ready"]:.2f} s).')

    report.heading('Stream end-to-end latency through rclpy')
    latency = subprocess.run([sys.executable, os.path.join(HERE, 'node_latency.py')], check=True,
                             capture_output=True, text=True)
    report.preformatted(latency.stdout)
    report.write(os.path.join(ROOT, 'docs', 'performance.md'), ROOT)


if __name__ == '__main__':
    main()
