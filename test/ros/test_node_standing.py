"""Bipeds with loop ankles standing on 6D feet, served by the node over DDS as a user runs them
from the files they have: the Talos-like Extended URDF pair with floating_base (no floating joint
in the file) and the WL16-like Stewart-legged biped, stream.contacts on both soles, placeholder
limits ignored, a driver publishing the actuated joints alone. The stream's efforts are the
library's (contact_bias_forces at the measured velocities), every link's pose chained from /tf and
/tf_static is link_pose, and ~/completed_joint_states names every joint of the file a JointState
can carry."""

from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from dynamics_node import Contact, load_model
from bipeds import stance, two_legs
from node_helpers import (MAX_AGE, NodeProcess, publish_and_wait,  # noqa: F401
                          robot_state_outputs, ros, stamp_of, wait_until_served)
from test_node_robot_state import chained_poses

MODELS = Path(__file__).parents[1] / 'models'
SOLES = "['left_sole:6D','right_sole:6D']"


def talos_like(tmp_path):
    urdf, closures = MODELS / 'loop_ankle_biped.urdf', MODELS / 'loop_ankle_biped.yaml'
    model = load_model(str(urdf), closures=str(closures), floating_base=True)
    parameters = dict(robot_description_file=str(urdf), closures_file=str(closures),
                      floating_base='true')
    return model, parameters, str(urdf)


def wl16_like(tmp_path):
    path = tmp_path / 'stewart_biped.urdf'
    path.write_text(two_legs('stewart_leg', 0.15, -0.05))
    return load_model(str(path)), dict(robot_description_file=str(path)), str(path)


@pytest.fixture(scope='module', params=[talos_like, wl16_like], ids=['talos', 'wl16'])
def standing(request, ros, tmp_path_factory):  # noqa: F811 - the fixture imported above
    model, parameters, urdf = request.param(tmp_path_factory.mktemp('robots'))
    process = NodeProcess(f'standing_{request.param.__name__}', stream__contacts=SOLES,
                          stream__effort_limits='ignore', stream__max_age=MAX_AGE, **parameters)
    try:
        wait_until_served(ros, process)
        yield process, model, urdf
    finally:
        process.stop()


def test_the_stream_holds_the_biped_on_its_feet(ros, standing, rng):  # noqa: F811
    """One input of the actuated joints at a bent stance, with velocities: the published efforts
    are contact_bias_forces' (zero on the passive idle spins the loops hold), TF chains into every
    link's pose, the completed joint states name the file's joints."""
    process, model, urdf = standing
    q = stance(model, rng)
    names = list(model.actuated_joint_names)
    index = {name: model.idx_q[model.joint_names.index(name) + 1] for name in names}
    velocities = rng.uniform(-0.3, 0.3, len(names))
    msg = JointState(name=names, position=[float(q[index[n]]) for n in names],
                     velocity=[float(x) for x in velocities])
    msg.header.stamp = stamp_of(11)
    publisher = ros.node.create_publisher(JointState,
                                          process.name.rsplit('/', 1)[0] + '/joint_states',
                                          qos_profile_sensor_data)
    try:
        with robot_state_outputs(ros, process) as (torques, tf, static, joints):
            answer = publish_and_wait(ros, publisher, torques, msg)
            assert answer is not None, process.output()

            def ours(messages):
                return [m for m in messages
                        if any(t.child_frame_id == model.links[-1] for t in m.transforms)]
            assert ros.spin_until(lambda: ours(static) or any(
                t.header.stamp == msg.header.stamp for m in ours(tf) for t in m.transforms))
            assert ros.spin_until(lambda: any(m.header.stamp == msg.header.stamp for m in joints)
                                  and any(t.header.stamp == msg.header.stamp
                                          for m in tf for t in m.transforms))
    finally:
        ros.node.destroy_publisher(publisher)
    y_of = {}
    for y, v in enumerate(model.independent_v):
        body = int(np.searchsorted(model.idx_v[1:], v, side='right'))
        y_of.setdefault(model.joint_names[body - 1], y)
    yd = np.zeros(model.ny)
    yd[[y_of[name] for name in names]] = velocities
    feet = [Contact('left_sole', '6D'), Contact('right_sole', '6D')]
    expected = model.contact_bias_forces(q, yd, feet)
    published = dict(zip(answer.name, answer.effort))
    for name in model.independent_joint_names[1:]:
        assert abs(published[name] - expected[y_of[name]]) <= \
            1e-9 * max(1.0, np.abs(expected).max()), name
    assert not any(published[name] for name in model.passive_joint_names)
    moving = [m for m in tf if m.transforms[0].header.stamp == msg.header.stamp]
    poses = chained_poses('pelvis', moving + static)        # the base at the identity pose
    for link in model.links[1:]:
        R, p = model.link_pose(q, link)
        assert np.allclose(poses[link][0], R, atol=1e-9) and \
            np.allclose(poses[link][1], p, atol=1e-9), link
    completed = next(m for m in joints if m.header.stamp == msg.header.stamp)
    carried = {j.get('name') for j in etree.parse(urdf).getroot().findall('joint')
               if j.get('type') not in ('fixed', 'floating')} - {'left_ankle'}
    assert carried <= set(completed.name), carried - set(completed.name)
