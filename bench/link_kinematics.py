"""Link kinematics (poses, Jacobians, bias accelerations Jdot yd) next to Pinocchio in one process.

On the geared quadruped_rotors and humanoid_belts, for one contact link and for every link of the
model: our public Model.link_kinematics (one fused compiled call, Jacobians in the independent
coordinates), the single calls link_pose + link_jacobian + link_bias_acceleration of one link, and
the node's ~/link_kinematics handler (dynamics_node/ros/services.py, called as
test/ros/test_services.py calls it, without DDS: the request's conversion, the library call and the
response's messages); next to Pinocchio on the spanning tree (test/oracle.py), whose frame
Jacobians are framesForwardKinematics (forwardKinematics + updateFramePlacements) +
computeJointJacobians + getFrameJacobian (LOCAL) per link, and with the bias forwardKinematics at
(q, v, 0) instead and getFrameClassicalAcceleration (LOCAL) per link as well.

Usage: .venv/bin/python bench/link_kinematics.py (make bench runs it as a section of
docs/performance.md).
"""

import os
import sys

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from cluster_dynamics.srv import LinkKinematics  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from dynamics_node import bundled_model  # noqa: E402
from dynamics_node.ros import description  # noqa: E402
from dynamics_node.ros.parameters import PARAMETERS, setting  # noqa: E402
from dynamics_node.ros.services import link_kinematics as handler  # noqa: E402
from conftest import random_state  # noqa: E402  (test helper: consistent random state)
from oracle import KKTOracle  # noqa: E402  (test-only Pinocchio model of the spanning tree)
from timing import interleaved_medians, Report  # noqa: E402

ROBOTS = ('quadruped_rotors', 'humanoid_belts')
ROUNDS, BATCH = 40, 10
HEADING = 'Link kinematics against Pinocchio'
COLUMNS = ('link_kinematics', 'single calls', 'handler', 'pin J', 'pin J + bias')


class _Quiet:
    """A logger that drops what it is told."""

    def __getattr__(self, level):
        return lambda *args, **kwargs: None


def request(model, q, v, links):
    """A LinkKinematics request at (q, v) as a client fills it: every spanning joint by name, a
    floating base's pose and twist in the base fields."""
    message = LinkKinematics.Request(links=list(links))
    joints = [i for i, name in enumerate(model.joint_names) if name != model.floating_base_joint]
    message.state = JointState(name=[model.joint_names[i] for i in joints],
                               position=[float(q[model.idx_q[i + 1]]) for i in joints],
                               velocity=[float(v[model.idx_v[i + 1]]) for i in joints])
    if model.floating_base:
        pose, twist = message.base_pose, message.base_twist
        pose.position.x, pose.position.y, pose.position.z = (float(x) for x in q[:3])
        o = pose.orientation
        o.x, o.y, o.z, o.w = (float(x) for x in q[3:7])
        twist.linear.x, twist.linear.y, twist.linear.z = (float(x) for x in v[:3])
        twist.angular.x, twist.angular.y, twist.angular.z = (float(x) for x in v[3:6])
    return message


def measure(name, rng):
    """Median microseconds per call of each column for one link and for every link."""
    settings = {key: setting(key, spec.default) for key, spec in PARAMETERS.items()}
    loaded = description.load(name, bundled_model(name), None, settings, _Quiet())
    model = loaded.model
    q, yd, _ = random_state(model, rng)
    v = model.spanning_velocities(q, yd)
    oracle = KKTOracle(bundled_model(name))
    oracle.set_layout(model.joint_names)
    tree, data = oracle.model, oracle.model.createData()
    qp, vp, zero = oracle.q_to_pin(q), oracle.v_to_pin(v), np.zeros(tree.nv)
    feet = [link for b in range(1, model.nb) for link in model.body_links[b][1:]]
    calls = {}
    for label, links in (('one', (feet or [model.links[-1]])[:1]), ('every', list(model.links))):
        frames = [oracle._body_frame_id(link) for link in links]
        message = request(model, q, v, links)

        def ours(links=links):
            model.link_kinematics(q, v, links)

        def singles(links=links):
            for link in links:
                model.link_pose(q, link)
                model.link_jacobian(q, link)
                model.link_bias_acceleration(q, v, link)

        def served(message=message):
            handler(loaded, message, LinkKinematics.Response())

        def jacobians(frames=frames):
            pin.framesForwardKinematics(tree, data, qp)
            pin.computeJointJacobians(tree, data)
            for frame in frames:
                pin.getFrameJacobian(tree, data, frame, pin.LOCAL)

        def with_bias(frames=frames):
            pin.forwardKinematics(tree, data, qp, vp, zero)
            pin.updateFramePlacements(tree, data)
            pin.computeJointJacobians(tree, data)
            for frame in frames:
                pin.getFrameJacobian(tree, data, frame, pin.LOCAL)
                pin.getFrameClassicalAcceleration(tree, data, frame, pin.LOCAL)

        for column, call in zip(COLUMNS, (ours, singles, served, jacobians, with_bias)):
            calls[column, label] = call
    return model, interleaved_medians(calls, ROUNDS, BATCH)


def report_section(report, heading, rng):
    rows = []
    for name in ROBOTS:
        model, t = measure(name, rng)
        for label, count in (('one', 1), ('every', len(model.links))):
            rows.append([name, f'{model.nv}/{model.ny}', count]
                        + [f'{t[column, label]:.1f}' for column in COLUMNS]
                        + [f'{t["link_kinematics", label] / t["pin J + bias", label]:.2f}'])
    report.heading(heading)
    report.text('Median microseconds per call from Python, for one contact link and for every '
                'link of the model. link_kinematics = Model.link_kinematics (poses, Jacobians in '
                'the ny independent coordinates and Jdot yd, one fused compiled call); single '
                'calls = link_pose + link_jacobian + link_bias_acceleration per link; handler = '
                'the ~/link_kinematics service handler without DDS (request conversion, the '
                'library call, the response messages); pin J = framesForwardKinematics + '
                'computeJointJacobians + getFrameJacobian (LOCAL) per link on the spanning tree '
                '(nv columns); pin J + bias = forwardKinematics at (q, v, 0) + '
                'updateFramePlacements + computeJointJacobians + getFrameJacobian and '
                'getFrameClassicalAcceleration (LOCAL) per link; ratio = link_kinematics / '
                'pin J + bias.')
    report.table(('robot', 'nv/ny', 'links') + tuple(f'{c} us' for c in COLUMNS) + ('ratio',),
                 rows)


if __name__ == '__main__':
    report_section(Report(HEADING), HEADING, np.random.default_rng(0))
