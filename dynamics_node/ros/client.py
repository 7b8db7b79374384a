"""A blocking Python client of the dynamics node's services, NumPy in and out.

For controllers written in Python::

    import rclpy
    from dynamics_node.ros.client import DynamicsClient

    rclpy.init()
    dynamics = DynamicsClient('/dynamics_node')
    tau = dynamics.inverse_dynamics(joints, q, v, a).effort
    H = dynamics.mass_matrix(joints, q).matrix          # ny x ny, the base's six included

The client has a node and an executor of its own (in the given rclpy context), spun only while it
waits for an answer, so it works next to any executor of the caller; it sends a request again every
RESEND_S seconds until an answer or the timeout. A failed request (the node's ``success=false``, no
answer in time, inputs of the wrong shape) raises ModelError with the reason.
Joint arrays follow ``joints`` (every spanning joint, or exactly the independent ones, as the
services accept); a floating base goes in ``base_pose`` [x y z qx qy qz qw], ``base_twist`` and
``base_acceleration`` [linear; angular].
"""

from collections import namedtuple
import itertools
import time

from cluster_dynamics.msg import Contact as ContactMsg, LinkWrench
from cluster_dynamics.srv import (BiasForces, Centroidal as CentroidalSrv, DescribeModel,
                                  ForwardDynamics, InverseDynamics,
                                  InverseOperationalSpaceInertia, LinkKinematics, MassMatrix)
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

from ..errors import ModelError
from . import conversions as conv

Accelerations = namedtuple('Accelerations',
                           'names acceleration base_acceleration method_used contact_wrenches')
Efforts = namedtuple('Efforts', 'names effort base_wrench contact_wrenches')
Matrix = namedtuple('Matrix', 'names matrix')
Kinematics = namedtuple('Kinematics', 'names poses jacobians bias_accelerations')
Centroidal = namedtuple('Centroidal', 'names total_mass center_of_mass center_of_mass_velocity '
                        'center_of_mass_jacobian momentum_matrix momentum bias')
_instances = itertools.count()
# An unanswered request is sent again after this many seconds: DDS can lose a response while
# discovery between a new client and the node completes (ros2/rmw_fastrtps#392); the services
# compute without side effects, so a repeat is harmless.
RESEND_S = 1.0


class DynamicsClient:
    """Calls the services of the dynamics node named node (e.g. '/dynamics_node')."""

    def __init__(self, node='/dynamics_node', *, context=None, timeout=5.0):
        self.timeout = timeout
        self._service = node.rstrip('/')
        self._node = rclpy.create_node(f'dynamics_client_{next(_instances)}', context=context)
        self._executor = SingleThreadedExecutor(context=self._node.context)
        self._executor.add_node(self._node)
        self._clients = {}

    def close(self):
        """Destroy the client's node."""
        self._executor.shutdown()
        self._node.destroy_node()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def describe(self):
        """The DescribeModel response of the served model."""
        return self._call(DescribeModel, 'describe_model', DescribeModel.Request())

    def forward_dynamics(self, joints, q, v, tau, *, base_pose=None, base_twist=None,
                         wrenches=None, contacts=None, method=''):
        """Accelerations(names, acceleration, base_acceleration, method_used, contact_wrenches)
        of the spanning joints (names) and the floating base; wrenches: {link: (force[3],
        torque[3])}; contacts: dynamics_node.Contact list, their wrenches [force; torque] (6
        each, in the contact frame) answered."""
        request = ForwardDynamics.Request(state=_state(joints, q, v, tau), method=method,
                                          external_wrenches=_wrenches(wrenches),
                                          contacts=_contacts(contacts))
        _base(request, base_pose, base_twist)
        response = self._call(ForwardDynamics, 'forward_dynamics', request)
        return Accelerations(tuple(response.name), np.array(response.acceleration),
                             _vector6(response.base_acceleration.linear,
                                      response.base_acceleration.angular),
                             response.method_used, _contact_wrenches(response))

    def inverse_dynamics(self, joints, q, v, a, *, base_pose=None, base_twist=None,
                         base_acceleration=None, wrenches=None, contacts=None):
        """Efforts(names, effort, base_wrench, contact_wrenches) of the independent joints
        (names) and the base; with contacts the actuated efforts of least norm."""
        request = InverseDynamics.Request(state=_state(joints, q, v),
                                          acceleration=_floats(a, 'a', len(joints)),
                                          external_wrenches=_wrenches(wrenches),
                                          contacts=_contacts(contacts))
        _base(request, base_pose, base_twist)
        if base_acceleration is not None:
            conv.array_to_accel(_floats(base_acceleration, 'base_acceleration', 6),
                                request.base_acceleration)
        response = self._call(InverseDynamics, 'inverse_dynamics', request)
        return Efforts(tuple(response.name), np.array(response.effort),
                       _vector6(response.base_wrench.force, response.base_wrench.torque),
                       _contact_wrenches(response))

    def inverse_osim(self, joints, q, links, *, base_pose=None):
        """Lambda^-1 (6k x 6k) of k links, [linear; angular] blocks in each link's frame."""
        request = InverseOperationalSpaceInertia.Request(state=_state(joints, q),
                                                         links=list(links))
        _base(request, base_pose, None)
        response = self._call(InverseOperationalSpaceInertia,
                              'inverse_operational_space_inertia', request)
        return np.array(response.matrix).reshape(response.rows, response.rows)

    def mass_matrix(self, joints, q, *, base_pose=None):
        """Matrix(names, matrix): H_y (ny x ny) in the independent coordinates names (a
        floating base as six, '<joint>.linear.x' ... '<joint>.angular.z')."""
        request = MassMatrix.Request(state=_state(joints, q))
        _base(request, base_pose, None)
        response = self._call(MassMatrix, 'mass_matrix', request)
        n = len(response.name)
        return Matrix(tuple(response.name), np.array(response.matrix).reshape(n, n))

    def bias_forces(self, joints, q, v, *, base_pose=None, base_twist=None):
        """Efforts(names, effort, base_wrench, no contact_wrenches): gravity + Coriolis and
        centrifugal forces of the independent joints (names) and the base."""
        return self._bias_forces(joints, q, v, base_pose, base_twist, gravity_only=False)

    def gravity_forces(self, joints, q, *, base_pose=None):
        """Efforts(names, effort, base_wrench, no contact_wrenches): gravity compensation of the
        independent joints (names) and the base."""
        return self._bias_forces(joints, q, (), base_pose, None, gravity_only=True)

    def _bias_forces(self, joints, q, v, base_pose, base_twist, gravity_only):
        request = BiasForces.Request(state=_state(joints, q, v), gravity_only=gravity_only)
        _base(request, base_pose, base_twist)
        response = self._call(BiasForces, 'bias_forces', request)
        return Efforts(tuple(response.name), np.array(response.effort),
                       _vector6(response.base_wrench.force, response.base_wrench.torque),
                       np.zeros((0, 6)))

    def link_kinematics(self, joints, q, v, links, *, base_pose=None, base_twist=None):
        """Kinematics(names, poses, jacobians, bias_accelerations) of k links (distinct link names
        of the model, as the service asks): poses (k x 7, x y z qx qy qz qw in the world frame),
        Jacobians (k x 6 x ny, columns names, rows [linear; angular] in the link frame) and
        Jdot yd (k x 6, [linear; angular] in the link frame)."""
        request = LinkKinematics.Request(state=_state(joints, q, v), links=list(links))
        _base(request, base_pose, base_twist)
        response = self._call(LinkKinematics, 'link_kinematics', request)
        k, n = len(response.poses), len(response.name)
        poses = np.array([[p.position.x, p.position.y, p.position.z, p.orientation.x,
                           p.orientation.y, p.orientation.z, p.orientation.w]
                          for p in response.poses]).reshape(k, 7)
        return Kinematics(tuple(response.name), poses,
                          np.array(response.jacobians).reshape(k, 6, n),
                          np.array([_vector6(a.linear, a.angular)
                                    for a in response.bias_accelerations]).reshape(k, 6))

    def centroidal(self, joints, q, v=(), *, base_pose=None, base_twist=None):
        """Centroidal(names, total_mass, center_of_mass, center_of_mass_velocity,
        center_of_mass_jacobian, momentum_matrix, momentum, bias): the CoM (3) and its velocity
        (3) in the world frame, its Jacobian (3 x ny) and A_g (6 x ny) with columns names, h_g (6)
        and the centroidal bias (6), [linear; angular] about the CoM on world axes."""
        request = CentroidalSrv.Request(state=_state(joints, q, v))
        _base(request, base_pose, base_twist)
        response = self._call(CentroidalSrv, 'centroidal', request)
        n = len(response.name)
        com, velocity = response.center_of_mass, response.center_of_mass_velocity
        return Centroidal(tuple(response.name), response.total_mass,
                          np.array([com.x, com.y, com.z]),
                          np.array([velocity.x, velocity.y, velocity.z]),
                          np.array(response.center_of_mass_jacobian).reshape(3, n),
                          np.array(response.centroidal_momentum_matrix).reshape(6, n),
                          np.array(response.centroidal_momentum),
                          np.array(response.centroidal_bias))

    def _call(self, srv_type, name, request):
        client = self._clients.get(name)
        if client is None:
            client = self._clients[name] = self._node.create_client(
                srv_type, f'{self._service}/{name}')
        if not client.wait_for_service(timeout_sec=self.timeout):
            raise ModelError(f'{self._service}/{name} is not available (is the node running and '
                             'active, on this ROS_DOMAIN_ID? Its services exist while it is '
                             'active)')
        end, sent = time.monotonic() + self.timeout, []
        while not any(future.done() for future in sent) and time.monotonic() < end:
            sent.append(client.call_async(request))        # again after RESEND_S without an answer
            resend = min(time.monotonic() + RESEND_S, end)
            while not any(future.done() for future in sent) and time.monotonic() < resend:
                self._executor.spin_once(timeout_sec=0.01)
        answered = [future for future in sent if future.done()]
        for future in sent:
            if not future.done():
                client.remove_pending_request(future)
        if not answered:
            raise ModelError(f'no answer from {self._service}/{name} within {self.timeout} s')
        response = answered[0].result()
        if not response.success:
            raise ModelError(f'{name}: {response.message}')
        return response


def _floats(values, field, size):
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size != size:
        raise ModelError(f'{field} has {x.size} entries; expected {size}')
    return x


def _state(joints, q, v=(), effort=()):
    joints = list(joints)
    n = len(joints)
    return JointState(
        name=joints, position=conv.float64_array(_floats(q, 'q', n)),
        velocity=conv.float64_array(_floats(v, 'v', n) if len(v) else []),
        effort=conv.float64_array(_floats(effort, 'tau', n) if len(effort) else []))


def _base(request, pose, twist):
    """Fill the floating-base fields (the base at rest at the identity pose by default; a fixed
    base ignores them)."""
    conv.array_to_pose(conv.IDENTITY_POSE if pose is None else _floats(pose, 'base_pose', 7),
                       request.base_pose)
    if twist is not None:
        conv.array_to_accel(_floats(twist, 'base_twist', 6), request.base_twist)


def _wrenches(wrenches):
    items = []
    for link, (force, torque) in (wrenches or {}).items():
        item = LinkWrench(link=link)
        conv.array_to_wrench(np.r_[_floats(force, f'force on {link}', 3),
                                   _floats(torque, f'torque on {link}', 3)], item.wrench)
        items.append(item)
    return items


def _contacts(contacts):
    """cluster_dynamics/Contact[] of dynamics_node.Contacts."""
    items = []
    for contact in contacts or ():
        item = ContactMsg(link=contact.link, kind=contact.kind, other=contact.other or '')
        conv.array_to_pose(np.r_[contact.placement[0], contact.placement[1]], item.placement)
        if contact.other is not None:
            conv.array_to_pose(np.r_[contact.other_placement[0], contact.other_placement[1]],
                               item.other_placement)
        items.append(item)
    return items


def _contact_wrenches(response):
    """(k, 6) array of a response's contact wrenches, [force; torque] each."""
    wrenches = [_vector6(w.force, w.torque) for w in response.contact_wrenches]
    return np.array(wrenches).reshape(-1, 6)


def _vector6(first, second):
    return np.array([first.x, first.y, first.z, second.x, second.y, second.z])
