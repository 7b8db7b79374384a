"""The input rule: every public call returns finite numbers or raises ModelError naming what is
wrong, nothing else escapes, and a failed call changes no state. One test per finding, messages
pinned."""

import collections
import itertools
import tracemalloc

import numpy as np
import pytest

from conftest import assert_close
from dynamics_node import bundled_model, load_model, ModelError
from dynamics_node import model as model_module
from dynamics_node.algorithms import completion
from dynamics_node.engines.numba_engine import FRAME_SETS
from urdf_text import four_bar, geared, inertial, joint, link, robot

QUADRUPED_STANDING = [0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0] + [0.0, 0.7, -1.4] * 4


def chain_loop(angles, length=0.1):
    """Planar closed chain of len(angles) links of the given length, its tip pinned to the ground
    where the tip is at the given joint angles (the last two joints are dependent)."""
    heading = np.cumsum(angles)
    tip = length * np.array([np.sum(np.cos(heading)), np.sum(np.sin(heading))])
    n = len(angles)
    links = [link('base', '')] + [link(f'l{i}') for i in range(n)]
    joints = [joint(f'j{i}', 'base' if i == 0 else f'l{i - 1}', f'l{i}',
                    origin='0 0 0' if i == 0 else f'{length} 0 0')
              for i in range(n)]
    closure = (f'<loop name="closure" type="revolute"><predecessor link="l{n - 1}">'
               f'<origin xyz="{length} 0 0"/></predecessor><successor link="base">'
               f'<origin xyz="{tip[0]} {tip[1]} 0"/></successor><axis xyz="0 0 1"/></loop>')
    return robot(*links, *joints, closure)


# ---- finding 1: a failed call leaves the warm start as it was ----

def test_rejected_positions_do_not_poison_the_warm_start():
    """A finite 1e308 used to become the next warm start (0 * inf in the gear relation: every later
    call failed with 'q[8] is nan')."""
    model, fresh = (load_model(bundled_model('quadruped_rotors')),
                    load_model(bundled_model('quadruped_rotors')))
    with pytest.raises(ModelError, match=r'^q_independent\[7\] is 1e\+308; expected finite '
                                         r'numbers of magnitude at most 1e\+08$'):
        model.complete_positions(QUADRUPED_STANDING[:7] + [1e308] * 12)
    assert_close(model.complete_positions(QUADRUPED_STANDING),
                 fresh.complete_positions(QUADRUPED_STANDING), 'q')


def test_an_unreachable_pose_leaves_the_warm_start():
    """Newton's failed iterate is not kept: the next completion starts where the last success
    ended."""
    model = load_model(four_bar(lengths=(0.8, 0.3, 0.3)))
    reached = model.complete_positions([0.1])
    with pytest.raises(ModelError, match='cannot close'):
        model.complete_positions([np.pi])
    assert np.array_equal(model.complete_positions([0.1]), reached), (
        'started from the last solution')


# ---- finding 2: results are checked for finiteness ----

def test_a_non_finite_result_is_an_error_naming_the_largest_input():
    """A model in absurd units (1e-300 kg) overflows within the input bounds; the check names the
    input."""
    model = load_model(robot(link('base', ''),
                             link('a', inertial(1e-300, 1e-300, 1e-300, mass=1e-300)),
                             joint('j', 'base', 'a')))
    message = (r"^the accelerations{} are not finite at this input \(largest relative to its "
               r"bound: tau\[0\] = 1e\+09 of joint 'j', bound 1e\+09\); the model's masses, "
               r"inertias or ratios may be out of scale$")
    with pytest.raises(ModelError, match=message.format('')):
        model.forward_dynamics([0.0], [0.0], [1e9])
    with pytest.raises(ModelError, match=message.format(' and constraint forces')):
        model.forward_dynamics([0.0], [0.0], [1e9], method='lcaba')


def test_the_finiteness_check_builds_its_message_only_on_failure():
    """check_finite takes the inputs of its message as a function, called only when a result is
    not finite: the contact routes' successful calls skip building them."""
    from dynamics_node.validation import check_finite
    model = load_model(robot(link('base', ''), link('a', inertial(1, 1, 1)),
                             joint('j', 'base', 'a')))

    def unused():
        raise AssertionError('the message was built on success')
    check_finite(model, 'accelerations', unused, np.zeros(1), np.ones((2, 3)))
    with pytest.raises(ModelError, match=r"^the accelerations are not finite at this input "
                                         r"\(largest relative to its bound: tau\[0\] = 1e\+09 of "
                                         r"joint 'j', bound 1e\+09\)"):
        check_finite(model, 'accelerations', lambda: [('tau', np.array([1e9]), 1e9)],
                     np.zeros(1), np.array([np.inf]))


# ---- finding 3: bounds on descriptions and inputs ----

def one_joint(joint_xml='', inertial_xml=None):
    return robot(link('base', ''), link('a', inertial_xml) if inertial_xml else link('a'),
                 joint_xml or joint('j', 'base', 'a'))


@pytest.mark.parametrize('xml, message', [
    (geared(ratio='1e200'),
     r"coupling 'gear' <ratio>: value=\"1e200\" exceeds the bound 10000 in magnitude"),
    (geared(ratio='1e-5'),
     r"coupling 'gear' <ratio>: value=\"1e-5\" is below 0.0001 in magnitude"),
    (one_joint(inertial_xml=inertial(1, 1, 1, mass=2e6)),
     r"link 'a' <mass>: value=\"2000000.0\" exceeds the bound 1e\+06 in magnitude"),
    (one_joint(inertial_xml=inertial(1, 1, 1e10)),
     r"link 'a' <inertia>: izz=\"10000000000.0\" exceeds the bound 1e\+09"),
    (one_joint(joint('j', 'base', 'a', origin='1e154 0 0')),
     r"joint 'j' <origin>: xyz=\"1e154 0 0\" exceeds the bound 1000 in magnitude"),
    (one_joint(joint('j', 'base', 'a', extra='<mimic joint="k" multiplier="1e300"/>')),
     r"joint 'j' <mimic>: multiplier=\"1e300\" exceeds the bound 10000"),
])
def test_absurd_parameters_are_rejected_on_load(xml, message):
    with pytest.raises(ModelError, match=message):
        load_model(xml)


def test_an_axis_is_scaled_before_its_norm():
    """|(1e308, 1e308, 0)| overflows; the axis used to become (0, 0, 0) and the mass matrix
    [[0]]."""
    xml = one_joint(joint('j', 'base', 'a').replace('<axis xyz="0 0 1"/>',
                                                    '<axis xyz="1e308 1e308 0"/>'))
    assert_close(load_model(xml).axis[1], [np.sqrt(0.5), np.sqrt(0.5), 0.0], 'axis')
    xml = one_joint(joint('j', 'base', 'a').replace('<axis xyz="0 0 1"/>',
                                                    '<axis xyz="5e-324 0 0"/>'))
    assert_close(load_model(xml).axis[1], [1.0, 0.0, 0.0], 'subnormal axis')


def test_absurd_inputs_are_rejected():
    model = load_model(bundled_model('quadruped_rotors'))
    q = model.complete_positions(QUADRUPED_STANDING)
    for call in (lambda: model.bias_forces(q, np.full(model.ny, 1e200)),
                 lambda: model.forward_dynamics(q, np.full(model.ny, 1e200), np.zeros(model.ny))):
        with pytest.raises(ModelError, match=r'^v\[0\] is 1e\+200; expected finite numbers of '
                                             r'magnitude at most 1e\+06$'):
            call()
    with pytest.raises(ModelError, match=r'^tau\[3\] is 1e\+10; expected finite numbers of '
                                         r'magnitude at most 1e\+09$'):
        model.forward_dynamics(q, np.zeros(model.ny), [0, 0, 0, 1e10] + [0] * (model.ny - 4))
    with pytest.raises(ModelError,
                       match=r"^force on 'FL_foot'\[2\] is 1e\+10; expected finite numbers"):
        model.inverse_dynamics(q, np.zeros(model.ny), np.zeros(model.ny),
                               {'FL_foot': ((0, 0, 1e10), (0, 0, 0))})


def test_lambda_inverse_refuses_duplicate_links():
    """links=['FL_foot'] * 2000 used to take 4.7 s and 1.4 GB: now refused before any buffer for
    them is made (the memory the call allocates, not its time, is measured)."""
    model = load_model(bundled_model('quadruped_rotors'))
    q = model.complete_positions(QUADRUPED_STANDING)
    tracemalloc.start()
    try:
        with pytest.raises(ModelError,
                           match=r"^link 'FL_foot' is named twice in links; name each link once$"):
            model.inverse_osim(q, ['FL_foot'] * 200_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak


@pytest.mark.parametrize('value, message', [
    ([0, 0, -1e308],
     r'gravity\[2\] is -1e\+308; expected finite numbers of magnitude at most 1000'),
    ('abc', r"gravity must be a vector of real numbers, got 'abc'"),
    (10 ** 400, r'gravity has 1 entries; expected 3 \(x y z, m/s\^2\)'),
    ([0, 0, 10 ** 400],
     r'gravity\[2\] is 100000000000000000\.\.\.0000000000000000000; expected finite'),
    ([0, 0, -9.81 + 1j], r'gravity must be a vector of real numbers, got \[0, 0, \(-9.81\+1j\)\]'),
    (None, r'gravity must be a vector of real numbers, got None'),
])
def test_gravity_setter_accepts_numbers_only(value, message):
    model = load_model(four_bar())
    with pytest.raises(ModelError, match=message):
        model.gravity = value
    assert_close(model.gravity, [0.0, 0.0, -9.81], 'gravity unchanged')
    model.gravity = [0, 0, -3]                        # ints and lists are numbers
    assert_close(model.gravity, [0.0, 0.0, -3.0], 'gravity set')


# ---- finding 4: nothing but ModelError escapes ----

def test_load_model_raises_model_errors_only(tmp_path):
    with pytest.raises(ModelError, match=r'^the robot has no moving joint \(revolute, continuous, '
                                         r'prismatic, floating, spherical, planar or universal\): '
                                         r'it has no dynamics to compute$'):
        load_model(robot(link('base')))
    floating = robot(link('base', ''), link('b'), link('c'), joint('j1', 'base', 'b', 'floating'),
                     joint('j2', 'base', 'c', 'floating'),
                     '<loop name="l" type="fixed"><predecessor link="b"/><successor '
                     'link="c"/></loop>')
    with pytest.raises(ModelError, match=r"^loop 'l' closes through floating joint 'j1'; only "
                                         r"1-DoF joints can be part of a loop$"):
        load_model(floating)
    latin1 = tmp_path / 'latin1.urdf'
    latin1.write_bytes(robot(link('b\xe9se')).encode('latin-1'))
    with pytest.raises(ModelError, match=r'^malformed XML: Invalid bytes in character encoding'):
        load_model(str(latin1))
    with pytest.raises(ModelError, match=r"^the description holds '\\udc80' at character 32, "
                                         r"which is not Unicode"):
        load_model(robot(link('b\udc80se')))


def test_public_calls_raise_model_errors_only():
    model = load_model(bundled_model('quadruped_rotors'))
    q, zero = model.complete_positions(QUADRUPED_STANDING), np.zeros(model.ny)
    cases = [
        (lambda: model.mass_matrix([10 ** 400] * model.nq),
         r'^q\[0\] is 100000000000000000\.\.\.0000000000000000000; expected finite numbers'),
        (lambda: model.forward_dynamics(q, zero, zero, [1, 2]),
         r'^wrenches must be a dict \{link: \(force, torque\)\} or None, got \[1, 2\]$'),
        (lambda: model.forward_dynamics(q, zero, zero, method='lcaba', settings='x'),
         r"^settings must be a ProximalSettings or None, got 'x'$"),
        (lambda: model.forward_dynamics(q, zero, zero, method=np.array(['aba', 'x'])),
         r"^forward dynamics method array\(\['aba', 'x'\], dtype='<U3'\) is unknown"),
        (lambda: model.inverse_osim(q, None),
         r'^links must be a link name or a list of them, got None$'),
        (lambda: model.link_pose(q, ['FL_foot']),
         r"^unknown link \['FL_foot'\]; links are \['FL_abad', "),
        (lambda: model.link_jacobian(q, None), r'^unknown link None; links are '),
        (lambda: model.link_kinematics(q, zero, None),
         r'^links must be a link name or a list of them, got None$'),
        (lambda: model.link_kinematics(q, zero, {'FL_foot': 1, 'trunk': 2, 'x': 3}),
         r"^unknown link 'x'; links are \['FL_abad', "),
        (lambda: model.mass_matrix(q + 0j), r'^q must be a vector of real numbers, got array\('),
        (lambda: model.mass_matrix([str(x) for x in q]),
         r"^q must be a vector of real numbers, got \['0.0', "),
        (lambda: model.complete_positions(QUADRUPED_STANDING, budget_ms=0),
         r'^budget_ms is 0; expected a time budget > 0 ms or None$'),
    ]
    for call, message in cases:
        with pytest.raises(ModelError, match=message):
            call()
    leg = load_model(bundled_model('linkage_leg'))
    with pytest.raises(ModelError,
                       match=r'^q_independent\[0\] is 1e\+308; expected finite numbers'):
        leg.complete_positions([1e308, 1e308])


def test_messages_quote_at_most_80_characters_of_input():
    with pytest.raises(ModelError) as error:
        load_model(one_joint(joint('j', 'base', 'a', 'x' * 5_000_000)))
    assert str(error.value) == (f'joint \'j\': type="{"x" * 80}... (5000000 characters)" is not '
                                'supported; expected one of revolute, continuous, prismatic, '
                                'fixed, floating, spherical, planar, universal')
    model = load_model(four_bar())
    with pytest.raises(ModelError) as error:
        model.link_pose(model.complete_positions([0.3]), 'y' * 1_000_000)
    assert len(str(error.value)) < 250, str(error.value)


# ---- finding 6: completion fails fast ----

def test_unreachable_poses_are_rejected_in_a_bounded_number_of_newton_solves(monkeypatch):
    """Before: 0.2-1.8 s on a four-bar whose crank cannot turn fully, 2-9 s on a 41-body loop. A
    pose off the reference branch now ends the continuation where it meets the dead point or the
    edge of the reach: the Newton solves (counted on the NumPy path) stay within the continuation's
    bound, however busy the machine."""
    solves = collections.Counter()
    newton = completion._newton

    def counted(*args):
        solves['newton'] += 1
        return newton(*args)
    monkeypatch.setattr(completion, '_newton', counted)
    bound = (completion.MAX_CONTINUATION_STEPS + 1) * (completion.HALVINGS + 1) + 1
    four = load_model(four_bar(lengths=(0.3, 1.0, 0.2)), compiled=False)
    with pytest.raises(ModelError, match=r"^cannot close the constraints \['closure'\] of cluster "
                                         r"'crank' on the reference assembly branch: .+ of the "
                                         r"way.*; (the independent positions may be out of "
                                         r"the mechanism's reach|the positions lie beyond a "
                                         r'singularity from the reference configuration: raise '
                                         r'amplification_limit, or give reference_positions on '
                                         r'their side)$'):
        four.complete_positions([np.pi])
    assert 0 < solves['newton'] <= bound, solves
    angles = np.random.default_rng(1).uniform(-0.3, 0.3, 41)
    chain = load_model(chain_loop(angles), compiled=False)
    solves.clear()
    with pytest.raises(ModelError, match=r'cannot close'):
        chain.complete_positions(np.zeros(39))
    assert 0 < solves['newton'] <= bound, solves
    q = chain.complete_positions(angles[:39])   # a reachable pose is still found
    assert np.array_equal(q[:39], angles[:39]) and chain.mass_matrix(q).shape == (39, 39)


def test_links_are_checked_once_per_workspace(monkeypatch):
    """inverse_osim checks a list of links the first time a workspace meets it: named again (as a
    list, a tuple or a single name), it goes straight to the kernel; a new list is checked, and
    refused, as before."""
    model = load_model(bundled_model('quadruped_rotors'))
    q = model.complete_positions(QUADRUPED_STANDING)
    links, single = list(model.links[1:3]), model.links[3]
    expected = model.inverse_osim(q, links), model.inverse_osim(q, single)

    def checked_again(model, links, empty=False):
        raise AssertionError(f'{links} checked again')
    monkeypatch.setattr(model_module, 'checked_links', checked_again)
    for again in (links, tuple(links)):
        assert_close(model.inverse_osim(q, again), expected[0], 'Lambda^-1 of links named before')
    assert_close(model.inverse_osim(q, single), expected[1], 'Lambda^-1 of a link named before')
    monkeypatch.undo()
    with pytest.raises(ModelError, match=r"unknown link 'nope'"):
        model.inverse_osim(q, links + ['nope'])
    with pytest.raises(ModelError, match=r'unknown link'):      # equal to a name, but not a string
        model.inverse_osim(q, [collections.UserString(link) for link in links])
    with pytest.raises(ModelError, match=r'named twice'):
        model.inverse_osim(q, links + links[:1])


def test_lambda_inverse_buffers_stay_bounded():
    """Requests for ever new link lists (a hostile client of the node) keep at most FRAME_SETS
    buffers."""
    model = load_model(bundled_model('quadruped_rotors'))
    q = model.complete_positions(QUADRUPED_STANDING)
    pairs = list(itertools.islice(itertools.permutations(model.links, 2), 2 * FRAME_SETS))
    for pair in pairs:
        model.inverse_osim(q, pair)
    assert len(model._local.data.engine._frame_sets) == FRAME_SETS
    fresh = load_model(bundled_model('quadruped_rotors'))
    assert_close(model.inverse_osim(q, pairs[0]), fresh.inverse_osim(q, pairs[0]),
                 'Lambda^-1 of an evicted list')
