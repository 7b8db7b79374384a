"""Table II of Sathya & Carpentier 2025 (Constrained Articulated Body Algorithms for Closed-Loop
Mechanisms) on this machine: forward dynamics with contacts on the systems of
dynamics_node/description/scenes.py, our LCABA next to Pinocchio's lcaba and constraintDynamics
(proxLTL) on the same system and constraints, in one process.

Systems and constraints, as the paper describes them (T: fingertips or wrists on the cube or box,
3D; F: feet on the ground, 6D; C: the Digit-like biped's welded rods, 6D):
- AH-cube T_3D^4: the four fingertip frames (link_*_tip) of an Allegro hand on the free cube;
- AH^2-cube T_3D^8: both hands' fingertips on the cube;
- Hum-AH^2-cube T_3D^8, and F_6D^2 T_3D^8: the same with the hands at the humanoid's wrists, with
  and without both ankle frames welded to the ground;
- Digit F_6D^2 C_6D^6: the biped's soles welded to the ground;
- Digit-cube F_6D^2 C_6D^6 T_3D^2: and its wrist frames on the box;
- Digit^2-cube F_6D^4 C_6D^12 T_3D^4: two bipeds, their soles and wrists.
Every contact with the cube or box is a Contact(link, '3D', other=cube or box), its frame on the
cube or box placed where the fingertip or wrist frame is at the benchmark's state (a grasp).

Pinocchio sees the spanning tree (test/oracle.py) with every loop as a 6D RigidConstraintModel and
every contact as a 3D or 6D one (LOCAL). Before timing, the accelerations must agree: converged
(penalty mu = 1e6, tolerance 1e-10) ours against constraintDynamics, and at the timed settings ours
against pin.lcaba after the same iterations; a row whose problems differ stops the run.

Timed as in the paper: penalty mu = 10 (Pinocchio's mu = 0.1: its ProximalSettings.mu is the
inverse), 1 and 3 iterations (tolerance 1e-14, so that none stops early). Ours is the public
Model.forward_dynamics(contacts=..., method='lcaba') on the spanning v and tau that Pinocchio gets
(one fused compiled call once the contact set was resolved). The exact route (method='aba':
cluster ABA, the contacts' Delassus matrix, the ABA's force passes again) where the contact set is
not redundant; pin.aba on the spanning tree without constraints, the paper's ABA column. Medians of
interleaved rounds, each with one batch of every call. Prints the table and writes it as the
Table II section of docs/performance.md (which `make bench`, bench/run.py, writes whole).

Usage: .venv/bin/python bench/table_ii.py
"""

from importlib import metadata
import os
import sys
import time

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from dynamics_node import Contact, load_model, SingularConfigurationError  # noqa: E402
from dynamics_node.algorithms.lcaba import ProximalSettings  # noqa: E402
from dynamics_node.description import scenes  # noqa: E402
from dynamics_node.spatial import quaternion_matrix  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: closed random state)
from lcaba_vs_pinocchio import PinocchioCase  # noqa: E402
from timing import Report, stamp  # noqa: E402

BIPED = os.path.join(ROOT, 'test', 'models', 'digit_like_biped.urdf')
PAPER_MU = 10.0                 # the paper's penalty for Table II (Sec. VII-B)
TIMED_TOLERANCE = 1e-14
CHECK_MU, CHECK_TOLERANCE = 1e6, 1e-10
AGREEMENT = 1e-6                # relative, converged
ITERATE_AGREEMENT = 1e-6        # relative, ours against pin.lcaba after the same iterations
LOCAL = pin.ReferenceFrame.LOCAL
LOOP = {'fixed': pin.ContactType.CONTACT_6D}
KIND = {'3D': pin.ContactType.CONTACT_3D, '6D': pin.ContactType.CONTACT_6D}
TIPS = ('link_3.0_tip', 'link_7.0_tip', 'link_11.0_tip', 'link_15.0_tip')
# Table II: system -> LCABA, BBO, LTL (proxLTL), ABA microseconds, for 1 and 3 iterations
PAPER = {
    'AH-cube': ((4.1, 5.1, 4.4, 2.0), (5.6, 7.3, 5.9, None)),
    'AH2-cube': ((7.6, 15, 13, 4.7), (9.7, 21, 16, None)),
    'Hum-AH2-cube': ((13, 26, 25, 9.0), (15, 33, 28, None)),
    'Hum-AH2-cube feet': ((13, 31, 32, 9.0), (16, 41, 37, None)),
    'Digit': ((9.1, 12, 25, 5.3), (12, 17, 30, None)),
    'Digit-cube': ((11, 14, 31, 5.6), (14, 20, 38, None)),
    'Digit2-cube': ((22, 37, 160, 11), (29, 50, 180, None)),
}
LABELS = {
    'AH-cube': 'AH-cube T3D^4 {22}',
    'AH2-cube': 'AH^2-cube T3D^8 {38}',
    'Hum-AH2-cube': 'Hum-AH^2-cube T3D^8 {73}',
    'Hum-AH2-cube feet': 'Hum-AH^2-cube F6D^2 T3D^8 {73}',
    'Digit': 'Digit F6D^2 C6D^6 {44}',
    'Digit-cube': 'Digit-cube F6D^2 C6D^6 T3D^2 {50}',
    'Digit2-cube': 'Digit^2-cube F6D^4 C6D^12 T3D^4 {94}',
}


def published(path):
    """A file of example-robot-data (a benchmark dependency), or None where it is missing."""
    try:
        robots = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
    except metadata.PackageNotFoundError:
        return None
    path = os.path.join(robots, path)
    return path if os.path.exists(path) else None


def hands():
    return (published('allegro_hand_description/urdf/allegro_right_hand.urdf'),
            published('allegro_hand_description/urdf/allegro_left_hand.urdf'))


def humanoid():
    return published('simple_humanoid_description/urdf/simple_humanoid.urdf')


def grasps(prefixes, links):
    """(link, object) pairs: every link of every prefix on the object."""
    return [(prefix + link, obj) for prefix, obj in prefixes for link in links]


def systems():
    """name -> (description or None where a file is missing, world contacts [(link, kind)],
    grasps [(link, object link)])."""
    right, left = hands()
    person = humanoid()
    have_hands = right is not None and left is not None
    both = [('right_hand_', 'cube_body'), ('left_hand_', 'cube_body')]
    soles = [('left_sole', '6D'), ('right_sole', '6D')]
    wrists = ('left_wrist', 'right_wrist')
    humanoid_scene = (scenes.humanoid_hands_cube(person, right, left)
                      if have_hands and person else None)
    return {
        'AH-cube': (scenes.hand_cube(right) if right else None, [],
                    grasps([('hand_', 'cube_body')], TIPS)),
        'AH2-cube': (scenes.hands_cube(right, left) if have_hands else None, [],
                     grasps(both, TIPS)),
        'Hum-AH2-cube': (humanoid_scene, [], grasps(both, TIPS)),
        'Hum-AH2-cube feet': (humanoid_scene, [('humanoid_l_ankle', '6D'),
                                               ('humanoid_r_ankle', '6D')], grasps(both, TIPS)),
        'Digit': (BIPED, soles, []),
        'Digit-cube': (scenes.biped_box(BIPED), [('biped_' + s, k) for s, k in soles],
                       grasps([('biped_', 'box_body')], wrists)),
        'Digit2-cube': (scenes.bipeds_box(BIPED),
                        [(p + s, k) for p in ('a_', 'b_') for s, k in soles],
                        grasps([('a_', 'box_body'), ('b_', 'box_body')], wrists)),
    }


def quaternion(R):
    x, y, z, w = pin.Quaternion(R).coeffs()
    return float(x), float(y), float(z), float(w)


def contacts_at(model, q, world, held):
    """Contacts: each world one at its link's origin; each grasp at the link's origin, its frame on
    the object where that origin is at q."""
    contacts = [Contact(link, kind) for link, kind in world]
    for link, obj in held:
        (R_l, p_l), (R_o, p_o) = model.link_pose(q, link), model.link_pose(q, obj)
        contacts.append(Contact(link, '3D', other=obj, other_placement=(
            tuple(float(x) for x in R_o.T @ (p_l - p_o)), quaternion(R_o.T @ R_l))))
    return contacts


class Peer(PinocchioCase):
    """Pinocchio's model of the spanning tree, one 6D RigidConstraintModel per loop and one per
    contact (frames at the contacts' placements), one Data per algorithm."""

    def __init__(self, description, model, contacts):
        self.contacts = contacts
        super().__init__(description, model.joint_names)
        self.aba_data = self.model.createData()

    def more_constraints(self):
        pm, constraints = self.model, []
        for c in self.reference.constraints:
            if c['type'] not in LOOP:
                raise SystemExit(f'{pm.name}: a {c["type"]} loop; Pinocchio has no such '
                                 'constraint here')
        for i, c in enumerate(self.contacts):
            f1 = self._frame(f'c{i}', c.link, c.placement)
            joint2, placement2 = 0, pin.SE3.Identity()
            if c.other is not None:
                f2 = pm.frames[self._frame(f'o{i}', c.other, c.other_placement)]
                joint2, placement2 = f2.parentJoint, f2.placement
            constraints.append(pin.RigidConstraintModel(
                KIND[c.kind], pm, pm.frames[f1].parentJoint, pm.frames[f1].placement, joint2,
                placement2, LOCAL))
        return constraints

    def _frame(self, name, link, placement):
        o = self.reference
        frame = o.model.frames[o._body_frame_id(link)]
        M = frame.placement * pin.SE3(quaternion_matrix(*placement[1]), np.array(placement[0]))
        return o.model.addFrame(pin.Frame(name, frame.parentJoint, 0, M, pin.FrameType.OP_FRAME))

    def lcaba_fresh(self, q, v, tau, settings):
        """pin.lcaba on a new Data: Pinocchio 4.1's lcaba reads the previous call's data.oa for
        its 6D constraints (LCABAConstraintCalcStep), so only a first call gives the accelerations
        of the problem; later calls on one Data do the same work on stale values."""
        data, cdata = self._data()
        pin.computeJointMinimalOrdering(self.model, data, self.constraints)
        return pin.lcaba(self.model, data, q, v, tau, self.constraints, cdata, settings)

    def constraint_dynamics(self, q, v, tau, settings):
        return pin.constraintDynamics(self.model, self.cd_data, q, v, tau, self.constraints,
                                      self.cd_cdata, settings)

    def aba(self, q, v, tau):
        return pin.aba(self.model, self.aba_data, q, v, tau)


def medians(calls, seconds, min_rounds=5, batch_us=1000.0):
    """Median microseconds per call of each callable, in interleaved rounds of one batch of each
    (as many calls as take about batch_us, at least one); rounds until seconds have passed (at
    least min_rounds), after an untimed round."""
    batches = {}
    for name, call in calls.items():
        tick = time.perf_counter_ns()
        for _ in range(3):
            call()
        batches[name] = int(min(500, max(1, batch_us * 3e3 / (time.perf_counter_ns() - tick))))
    samples = {name: [] for name in calls}
    start, rounds = time.perf_counter(), -1
    while rounds < min_rounds or time.perf_counter() - start < seconds:
        for name, call in calls.items():
            tick = time.perf_counter_ns()
            for _ in range(batches[name]):
                call()
            if rounds >= 0:
                samples[name].append((time.perf_counter_ns() - tick) / batches[name])
        rounds += 1
    return {name: float(np.median(t)) / 1e3 for name, t in samples.items()}, rounds


def relative(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def measure(name, description, world, held, rng, seconds):
    """Rows of one system (1 and 3 iterations)."""
    model = load_model(description)
    model.warm_up()
    q, yd, _ = random_state(model, rng)
    tau_y = rng.normal(size=model.ny) * 5
    contacts = contacts_at(model, q, world, held)
    peer = Peer(description, model, contacts)
    o = peer.reference
    v = model.spanning_velocities(q, yd)
    tau = np.zeros(model.nv)
    tau[model.independent_v] = tau_y
    qp, vp, taup = o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau)

    def ours(settings, method='lcaba'):
        return model.forward_dynamics(q, yd, tau_y, contacts=contacts, method=method,
                                      settings=settings, info=True)

    # the same problem: converged accelerations agree
    converged = ours(ProximalSettings(mu=CHECK_MU, tolerance=CHECK_TOLERANCE))
    check = pin.ProximalSettings(CHECK_TOLERANCE, 1.0 / CHECK_MU, 50)
    qdd_cd = o.v_from_pin(peer.constraint_dynamics(qp, vp, taup, check))
    agree = relative(converged.acceleration, qdd_cd)
    try:
        exact = ours(None, 'aba')
        agree_exact = relative(exact.acceleration, qdd_cd)
    except SingularConfigurationError:
        exact, agree_exact = None, None
    if max(agree, agree_exact or 0.0) > AGREEMENT:
        raise SystemExit(f'{name}: converged accelerations disagree with constraintDynamics '
                         f'(LCABA {agree:.1e}, exact {agree_exact}); not timing different '
                         'problems')
    rows = []
    for iterations in (1, 3):
        settings = ProximalSettings(mu=PAPER_MU, tolerance=TIMED_TOLERANCE,
                                    max_iterations=iterations)
        pin_settings = pin.ProximalSettings(TIMED_TOLERANCE, 1.0 / PAPER_MU, iterations)
        iterate = ours(settings)
        assert iterate.iterations == iterations, (name, iterate.iterations)
        qdd_lcaba = o.v_from_pin(peer.lcaba_fresh(qp, vp, taup, pin_settings))
        lcaba_iterations = pin_settings.iter
        qdd_cd = o.v_from_pin(peer.constraint_dynamics(qp, vp, taup, pin_settings))
        cd_iterations = pin_settings.iter
        against = (relative(iterate.acceleration, qdd_lcaba),
                   relative(iterate.acceleration, qdd_cd))
        if max(against) > ITERATE_AGREEMENT:
            raise SystemExit(f'{name}: after {iterations} iterations our accelerations differ '
                             f'from pin.lcaba by {against[0]:.1e}, from constraintDynamics by '
                             f'{against[1]:.1e}; not timing different problems')
        calls = {'ours': lambda: model.forward_dynamics(q, v, tau, contacts=contacts,
                                                        method='lcaba', settings=settings),
                 'pin.lcaba': lambda: peer.lcaba(qp, vp, taup, pin_settings),
                 'pin.cD': lambda: peer.constraint_dynamics(qp, vp, taup, pin_settings),
                 'pin.aba': lambda: peer.aba(qp, vp, taup)}
        if exact is not None and iterations == 1:
            calls['exact'] = lambda: model.forward_dynamics(q, v, tau, contacts=contacts,
                                                            method='aba')
        t, rounds = medians(calls, seconds)
        paired, _ = medians({'ours': calls['ours'], 'pin.lcaba': calls['pin.lcaba']},
                            seconds / 2)
        for call in ('pin.lcaba', 'pin.cD'):           # the timed calls ran every iteration
            calls[call]()
            assert pin_settings.iter == iterations, (name, call, pin_settings.iter)
        rows.append(dict(name=name, iterations=iterations, nv=model.nv, ny=model.ny,
                         contact_rows=sum(c.rows for c in contacts), pin_rows=peer.rows,
                         done=(iterate.iterations, lcaba_iterations, cd_iterations),
                         agree=agree, agree_exact=agree_exact, against=against, t=t,
                         paired=paired['ours'] / paired['pin.lcaba'], rounds=rounds))
    return rows


HEADER = ('system {paper nv}', 'it', 'nv/ny', 'rows', 'it ours/lcaba/cD', 'agree', 'iterate diff',
          'ours us', 'pin.lcaba us', 'pin.cD us', 'ours/lcaba', 'paired ours/lcaba', 'ours/cD',
          'exact us',
          'pin.aba us', 'paper LCABA/LTL/ABA us')
HEADING = 'Table II of Sathya & Carpentier 2025: forward dynamics with contacts and loops'
SECONDS = 6.0                   # of interleaved rounds per system and iteration count
INTRO = (
    'The systems of Table II (dynamics_node/description/scenes.py; the Allegro hands and the '
    'humanoid of example-robot-data, the Digit-like biped test/models/digit_like_biped.urdf) with '
    'the contacts the paper describes: T = fingertips (link_*_tip) or wrists on the free cube or '
    'box, 3D, their frames on the object where the fingertips or wrists are; F = ankles or soles '
    'on the ground, 6D; C = the biped\'s welded rods, 6D loops. One random closed state per '
    'system. Penalty mu = 10 as in the paper (Pinocchio: ProximalSettings mu = 0.1), 1 and 3 '
    'iterations (tolerance 1e-14: none stops early; it = iterations run by ours, pin.lcaba and '
    'pin.constraintDynamics). Median microseconds per call from Python, interleaved in one '
    'process; ratio = ours / Pinocchio.')
NOTE = (
    '**ours** is the public Model.forward_dynamics(q, v, tau, contacts=..., method=\'lcaba\', '
    'settings=ProximalSettings(mu=10, tolerance=1e-14, max_iterations=it)) with the spanning v '
    'and tau that Pinocchio gets: the input checks, the compiled LCABA with the contacts as cut '
    'constraints and the result copy in one compiled call, the contact set\'s plan built at its '
    'first call. **exact**: method=\'aba\' (the cluster ABA, the contacts\' Delassus matrix '
    'from the EFPA on its articulated inertias, its force passes again with the contact forces: '
    'one compiled call), '
    'on every row where the contact set is not redundant. '
    '**pin.lcaba**, **pin.cD** (constraintDynamics, the paper\'s proxLTL): the spanning tree with '
    'each loop and each contact as a RigidConstraintModel (LOCAL). **pin.aba**: the spanning tree '
    'without constraints (the paper\'s ABA column). rows = contact rows + loop rows. **paired '
    'ours/lcaba**: the same two calls timed again alone, their batches in turn, so that neither '
    'follows the batches of the exact route and constraintDynamics. Both calls run faster so, '
    'and ours more than Pinocchio\'s: ours/lcaba is lower there (the cause, presumably the caches '
    'those batches leave to the next call, was not measured further). '
    '**agree**: max |qdd - qdd_cD| / max(1, |qdd_cD|) of the converged solutions (mu = 1e6, '
    'tolerance 1e-10), our LCABA and our exact route; **iterate diff**: the same after it '
    'iterations at mu = 10, ours against pin.lcaba and against pin.cD. The run stops if either '
    'exceeds 1e-6. Pinocchio 4.1\'s lcaba reads the previous call\'s joint accelerations '
    '(data.oa) in its 6D constraint rows, so repeated calls on one Data return other '
    'accelerations: its iterates are checked on the first call of a new Data and timed on one '
    'Data (the same arithmetic). **paper**: Sathya & Carpentier\'s Table II (C++, an Intel '
    'Core Ultra 7 165H laptop, means of 100,000 samples; their Digit has nv 44, Digit-cube 50, '
    'Digit^2-cube 94: the Digit-like biped here keeps its rods\' ball joints, nv 56, 62 and '
    '118). Their proxBBO '
    'column is not in Pinocchio 4.1 and not measured.')


def cells(row):
    t, paper = row['t'], PAPER[row['name']][row['iterations'] == 3]
    exact = f'{t["exact"]:.0f}' if 'exact' in t else (
        '' if row['iterations'] == 3 else 'singular')
    loops = row['pin_rows'] - row['contact_rows']
    return [LABELS[row['name']], row['iterations'], f'{row["nv"]}/{row["ny"]}',
            f'{row["contact_rows"]}+{loops}' if loops else str(row['contact_rows']),
            '/'.join(str(i) for i in row['done']),
            f'{row["agree"]:.0e}' + ('' if row['agree_exact'] is None
                                     else f', {row["agree_exact"]:.0e}'),
            f'{row["against"][0]:.0e}, {row["against"][1]:.0e}',
            f'{t["ours"]:.1f}', f'{t["pin.lcaba"]:.1f}', f'{t["pin.cD"]:.1f}',
            f'{t["ours"] / t["pin.lcaba"]:.2f}', f'{row["paired"]:.2f}',
            f'{t["ours"] / t["pin.cD"]:.2f}', exact,
            f'{t["pin.aba"]:.1f}',
            '/'.join('-' if x is None else f'{x:g}' for x in (paper[0], paper[2], paper[3]))]


def table(rng, seconds=SECONDS):
    """(rows of cells, names of the systems left out)."""
    rows, missing = [], []
    for name, (description, world, held) in systems().items():
        if description is None:
            missing.append(name)
            continue
        rows += [cells(row) for row in measure(name, description, world, held, rng, seconds)]
    return rows, missing


def report_section(report, heading=HEADING, seconds=SECONDS):
    """The Table II section of docs/performance.md, added to report (timing.Report); the same
    random states wherever it runs."""
    rows, missing = table(np.random.default_rng(0), seconds)
    report.heading(heading)
    report.text(INTRO + ' ' + stamp(ROOT).split(' Written by')[0] + ' Reproduce: '
                '`.venv/bin/python bench/table_ii.py` (this section alone) or `make bench`.')
    report.table(HEADER, rows)
    report.text(NOTE + ('' if not missing else ' Left out (example-robot-data is not installed): '
                        + ', '.join(LABELS[name] for name in missing) + '.'))


def heading_line(lines):
    """Index of the Table II heading among the lines of docs/performance.md, or None."""
    return next((i for i, line in enumerate(lines)
                 if line.startswith('## ') and 'Table II' in line), None)


def splice(lines, section):
    """The text of docs/performance.md (lines) with its Table II section replaced by section
    (appended if it has none)."""
    start = heading_line(lines)
    if start is None:
        return '\n'.join(lines).rstrip('\n') + '\n\n' + section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
               len(lines))
    return ('\n'.join(lines[:start]) + '\n' + section
            + ('\n' + '\n'.join(lines[end:]) if end < len(lines) else ''))


def main():
    path = os.path.join(ROOT, 'docs', 'performance.md')
    with open(path) as file:
        lines = file.read().split('\n')
    start = heading_line(lines)           # keep the heading that make bench gave it
    heading = HEADING if start is None else lines[start][3:]
    report = Report(heading)
    report_section(report, heading)
    with open(path, 'w') as file:
        file.write(splice(lines, '\n'.join(report.parts)))
    print(f'written: {os.path.relpath(path, ROOT)} (section {heading!r})')


if __name__ == '__main__':
    main()
