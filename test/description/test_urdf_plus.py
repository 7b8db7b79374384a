"""Every validation rule gives a ModelError that names the element, the name and the
expectation."""

import numpy as np
import pytest

from dynamics_node import load_model, ModelError
from urdf_text import four_bar, geared, inertial, joint, link, robot


@pytest.mark.parametrize('xml, message', [
    ('<robot name="x"><link name="a"></robot>', 'malformed XML'),
    ('<model/>', r'expected <robot>'),
    (robot(link('base', ''), link('a'), joint('j', 'base', 'missing')),
     r"joint 'j' refers to unknown link 'missing'"),
    (robot(link('base', ''), link('a'), joint('j1', 'base', 'a'), joint('j2', 'base', 'a')),
     r"link 'a' has two parents: joints 'j1' and 'j2'"),
    (robot(link('base', ''), link('other', ''), link('a'), joint('j', 'base', 'a')),
     r"exactly one root link, found 'base', 'other'"),
    (robot(link('base', ''), link('a'), joint('j', 'base', 'a', 'ball')),
     r"joint 'j': type=\"ball\" is not supported"),
    (robot(link('base', ''), link('a'),
           joint('j', 'base', 'a').replace('xyz="0 0 0.1"', 'xyz="0 zero 1"')),
     r"joint 'j' <origin>: xyz=\"0 zero 1\" is not 3 numbers"),
    (robot(link('base', ''),
           link('a', '<inertial><mass value="-1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                'iyz="0" izz="1"/></inertial>'), joint('j', 'base', 'a')),
     r"link 'a': <mass value> is -1.0; expected a non-negative mass"),
    (robot(link('base', ''),
           link('a', '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="-0.5" '
                'iyz="0" izz="1"/></inertial>'), joint('j', 'base', 'a')),
     r"the body of joint 'j' \(links \['a'\]\) has principal moments \[-0.5, 1.0, 1.0\] about its "
     r"centre of mass; expected non-negative moments"),
    (robot(link('base', ''),
           link('a', '<inertial><mass value="nan"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                'iyz="0" izz="1"/></inertial>'), joint('j', 'base', 'a')),
     r"link 'a' <mass>: value=\"nan\" must be 1 finite numbers"),
    (robot(link('base', ''),
           link('a', '<inertial><mass value="1"/><inertia ixx="1" ixy="inf" ixz="0" iyy="1" '
                'iyz="0" izz="1"/></inertial>'), joint('j', 'base', 'a')),
     r"link 'a' <inertia>: ixy=\"inf\" must be 1 finite numbers"),
    (robot(link('base', ''), link('a'), joint('j', 'base', 'a').replace('0 0 1"/>', '0 0 0"/>')),
     r"joint 'j': <axis xyz> is zero"),
    (robot(link('base', ''), link('a'), joint('j', 'base', 'a', attributes='independent="maybe"')),
     r"joint 'j': independent=\"maybe\"; expected \"true\" or \"false\""),
    (robot(link('base', ''), link('a'), joint('j', 'base', 'a'), link('a')),
     r"duplicate link name 'a'"),
])
def test_malformed_descriptions(xml, message):
    with pytest.raises(ModelError, match=message):
        load_model(xml)


def test_missing_file():
    with pytest.raises(ModelError, match="robot description file not found: '/no/such.urdf'"):
        load_model('/no/such.urdf')


def test_coupling_between_joints_of_different_kinds():
    with pytest.raises(ModelError, match=r"coupling 'gear' couples joints of different kinds "
                                         r"\(rotational: \['arm_joint'\]; translational: "
                                         r"\['rotor_joint'\]\)"):
        load_model(geared(rotor_kind='prismatic'))


def test_malformed_ratio():
    with pytest.raises(ModelError,
                       match=r"coupling 'gear' <ratio>: value=\"six\" is not 1 numbers"):
        load_model(geared(ratio='six'))


def test_unknown_link_in_constraint():
    with pytest.raises(ModelError,
                       match=r"loop 'closure' <successor> refers to unknown link 'nowhere'"):
        load_model(four_bar().replace('<successor link="rocker">', '<successor link="nowhere">'))


def test_dependent_joints_without_constraints_are_named():
    xml = robot(link('base', ''), link('a'), link('b'),
                joint('ja', 'base', 'a', attributes='independent="false"'),
                joint('jb', 'a', 'b', attributes='independent="false"'))
    with pytest.raises(ModelError,
                       match=r"joints \['ja', 'jb'\] are marked independent=\"false\" but no "
                             r"<loop>, <coupling> or <constraint> constrains them"):
        load_model(xml)


def test_dependent_count_must_equal_constraint_rank():
    with pytest.raises(ModelError,
                       match=r"cluster 'crank' .* has constraint rank 2, so it needs 2 dependent "
                             r"joints, but 1 are marked independent=\"false\": "
                             r"\['rocker_joint'\]"):
        load_model(four_bar(marks=('', '', 'independent="false"')))


def test_unsolvable_dependent_choice():
    """Marking both joints of a gear pair dependent leaves nothing to drive it: rank 1, two
    marked."""
    with pytest.raises(ModelError, match=r"needs 1 dependent joints, but 2 are marked"):
        load_model(geared().replace('type="revolute" ><parent link="base"/><child link="arm"/>',
                                    'type="revolute" independent="false"><parent '
                                    'link="base"/><child link="arm"/>'))


def test_coupling_on_one_branch_is_rejected():
    xml = robot(link('base', ''), link('a'), link('b'), joint('ja', 'base', 'a'),
                joint('jb', 'a', 'b'), '<coupling name="c"><predecessor link="a"/><successor '
                                       'link="b"/><ratio value="2"/></coupling>')
    with pytest.raises(ModelError, match=r"coupling 'c': links 'a' and 'b' lie on one branch"):
        load_model(xml)


def test_automatic_dependent_choice_is_shown_in_clusters():
    model = load_model(four_bar(marks=('', '', '')))
    (cluster,) = model.clusters
    assert cluster.dependent_joints == ('coupler_joint', 'rocker_joint')
    assert model.independent_joint_names == ('crank_joint',)
    gear = load_model(geared(rotor_attributes=''))
    assert gear.clusters[0].dependent_joints == ('rotor_joint',)


def test_redundant_loop_rows_are_reduced():
    """A planar four-bar's revolute loop has 5 rows of rank 2; the loop is still solved exactly."""
    model = load_model(four_bar())
    assert model.ny == 1 and model.nv == 3
    q = model.complete_positions([0.3])
    assert np.all(np.isfinite(model.forward_dynamics(q, [0.5], [0.1])))


def test_inconsistent_states_are_rejected():
    model = load_model(four_bar())
    with pytest.raises(ModelError, match=r"q violates constraint 'closure' of cluster 'crank' by "
                                         r".*complete_positions"):
        model.forward_dynamics([0.3, 0.0, 0.0], [0.0], [0.0])
    q = model.complete_positions([0.3])
    with pytest.raises(ModelError, match=r"v violates the constraints of cluster 'crank'"):
        model.forward_dynamics(q, [1.0, 0.0, 0.0], [0.0])
    with pytest.raises(ModelError,
                       match=r"tau has 2 entries; expected 3 \(spanning\) or 1 \(independent\)"):
        model.forward_dynamics(q, [0.0], [0.0, 0.0])
    with pytest.raises(ModelError, match=r"v\[0\] is nan; expected finite numbers"):
        model.forward_dynamics(q, [np.nan], [0.0])
    with pytest.raises(ModelError, match=r"wrench on unknown link 'hand'"):
        model.inverse_dynamics(q, [0.0], [0.0], wrenches={'hand': ((0, 0, 1), (0, 0, 0))})
    with pytest.raises(ModelError, match=r"unknown link 'hand'"):
        model.inverse_osim(q, ['hand'])


def test_unreachable_loop_reports_newton_failure():
    # non-Grashof: the crank cannot turn fully
    model = load_model(four_bar(lengths=(0.8, 0.3, 0.3)))
    assert model.complete_positions([0.0]).shape == (3,)
    with pytest.raises(ModelError, match=r"cannot close the constraints \['closure'\] of cluster "
                                         r"'crank' on the reference assembly branch"):
        model.complete_positions([np.pi])


def test_cad_inertias_load_with_a_warning_naming_the_link():
    """Inertias that break the triangle inequality (CAD round-off) or have zero moments (a planar
    link) load; model.warnings names each link and the violation; strict=True rejects them."""
    xml = robot(link('base', ''), link('cad', inertial(0.001, 0.001, 0.0021)),
                link('plate', inertial(0, 0, 0.02)),
                link('fine'), joint('j1', 'base', 'cad'), joint('j2', 'cad', 'plate'),
                joint('j3', 'plate', 'fine'))
    model = load_model(xml)
    assert len(model.warnings) == 2
    assert model.warnings[0] == ("link 'cad': <inertia> with principal moments [0.001, 0.001, "
                                 "0.0021] breaks the triangle inequality by 0.0001 (0.001 + 0.001 "
                                 "< 0.0021)")
    assert model.warnings[1].startswith("link 'plate': <inertia> with principal moments [0.0, "
                                        "0.0, 0.02] has 2 zero principal moments and breaks the "
                                        "triangle inequality by 0.02")
    assert np.all(np.isfinite(model.mass_matrix(np.zeros(model.nq))))
    with pytest.raises(ModelError,
                       match=r"^link 'cad': <inertia> with principal moments .* \(strict=True\)$"):
        load_model(xml, strict=True)


def test_massless_links_and_round_off_give_no_warning():
    """A link without mass and inertia (a frame) and round-off in the triangle inequality are
    fine."""
    xml = robot(link('base', ''), link('frame', inertial(0, 0, 0, mass=0)),
                link('a', inertial(1, 1, 1)), link('b', inertial(1, 1, 2 + 1e-10)),
                joint('j1', 'base', 'frame'), joint('j2', 'frame', 'a'), joint('j3', 'a', 'b'))
    model = load_model(xml, strict=True)
    assert model.warnings == []
