"""The services (private names): ``~/forward_dynamics``, ``~/inverse_dynamics``,
``~/inverse_operational_space_inertia``, ``~/mass_matrix``, ``~/bias_forces``,
``~/link_kinematics``, ``~/centroidal``, ``~/describe_model``.

Each handler is a plain function of (Loaded model, request, response) that fills the response or
raises ModelError with the reason; service_callback makes one the callback of its service,
answering success=true, or success=false with the reason.
"""

import numpy as np
from cluster_dynamics.msg import ClusterInfo
from geometry_msgs.msg import Wrench
from cluster_dynamics.srv import (BiasForces, Centroidal, DescribeModel, ForwardDynamics,
                                  InverseDynamics, InverseOperationalSpaceInertia, LinkKinematics,
                                  MassMatrix)
from geometry_msgs.msg import Accel, Point, Pose, Vector3

from ..forward_dynamics import check_method
from ..spatial import matrix_quaternion
from . import conversions as conv
from .guard import Guard


def _positions(layout, request):
    """(Selection, spanning q) of a request's state and base_pose."""
    state = request.state
    selection = layout.select(state.name)
    base = conv.pose_to_array(request.base_pose) if layout.floating else None
    return selection, layout.positions(selection, state.position, state.name, base)


def coordinate_names(model):
    """Names of the ny independent coordinates y: the independent joints, a floating base as six
    (its twist [linear; angular] in the base frame: <joint>.linear.x ... <joint>.angular.z)."""
    names, base = [], model.floating_base_joint
    for name in model.independent_joint_names:
        if name == base:
            names += [f'{name}.{part}.{axis}' for part in ('linear', 'angular') for axis in 'xyz']
        else:
            names.append(name)
    return names


def _velocities(layout, selection, request):
    """v (spanning) or y (independent) of a request's state and base_twist."""
    base = conv.twist_to_array(request.base_twist) if layout.floating else None
    return layout.velocity_like(selection, request.state.velocity, 'state.velocity',
                                request.state.name, base)


def forward_dynamics(loaded, request, response, default_method='auto'):
    """Accelerations of every joint and the base; default_method when the request names none
    (forward_dynamics.method)."""
    layout = loaded.layout
    method = request.method or default_method
    check_method(method)
    selection, q = _positions(layout, request)
    v = _velocities(layout, selection, request)
    tau = layout.velocity_like(selection, request.state.effort, 'state.effort',
                               request.state.name, forces=True)
    info = loaded.model.forward_dynamics(
        q, v, tau, conv.link_wrenches_to_dict(request.external_wrenches),
        conv.contacts_from_msgs(request.contacts), method=method, info=True)
    response.contact_wrenches = _wrenches(info.contact_forces)
    joints, base = layout.split_spanning(info.acceleration)
    response.name = list(layout.joint_names)
    response.acceleration = conv.float64_array(joints)
    conv.array_to_accel(base, response.base_acceleration)
    response.method_used = info.method_used
    response.constraint_residual = float(info.constraint_residual)
    response.iterations = int(info.iterations)
    if info.fallback_reason:
        response.message = f'fell back to {info.method_used}: {info.fallback_reason}'


def inverse_dynamics(loaded, request, response):
    """Efforts of the independent joints and the base wrench."""
    layout = loaded.layout
    selection, q = _positions(layout, request)
    v = _velocities(layout, selection, request)
    a = layout.velocity_like(
        selection, request.acceleration, 'acceleration', request.state.name,
        conv.accel_to_array(request.base_acceleration) if layout.floating else None)
    wrenches = conv.link_wrenches_to_dict(request.external_wrenches)
    contacts = conv.contacts_from_msgs(request.contacts)
    if contacts is None:
        tau = loaded.model.inverse_dynamics(q, v, a, wrenches)
    else:                   # the actuated efforts of least norm (projected inverse dynamics)
        info = loaded.model.inverse_dynamics(q, v, a, wrenches, contacts, info=True)
        tau = info.efforts
        response.contact_wrenches = _wrenches(info.contact_forces)
    joints, base = layout.split_independent(tau)
    response.name = list(layout.independent_names)
    response.effort = conv.float64_array(joints)
    conv.array_to_wrench(base, response.base_wrench)


def _wrenches(forces):
    """geometry_msgs/Wrench[] of contact forces (contacts.Contact's order and frames)."""
    return [conv.contact_force_to_wrench(force, Wrench()) for force in forces]


def inverse_operational_space_inertia(loaded, request, response):
    """The inverse operational-space inertia of request.links, row-major."""
    _, q = _positions(loaded.layout, request)
    matrix = loaded.model.inverse_osim(q, list(request.links))
    response.rows = matrix.shape[0]
    response.matrix = conv.float64_array(matrix.reshape(-1))


def mass_matrix(loaded, request, response):
    """H_y (ny x ny, row-major) in the independent coordinates, a floating base's six
    included."""
    _, q = _positions(loaded.layout, request)
    response.name = coordinate_names(loaded.model)
    response.matrix = conv.float64_array(loaded.model.mass_matrix(q).reshape(-1))


def bias_forces(loaded, request, response):
    """Bias (or, with gravity_only, gravity) efforts of the independent joints and the base
    wrench."""
    layout = loaded.layout
    selection, q = _positions(layout, request)
    if request.gravity_only:
        tau = loaded.model.gravity_forces(q)
    else:
        tau = loaded.model.bias_forces(q, _velocities(layout, selection, request))
    joints, base = layout.split_independent(tau)
    response.name = list(layout.independent_names)
    response.effort = conv.float64_array(joints)
    conv.array_to_wrench(base, response.base_wrench)


def link_kinematics(loaded, request, response):
    """Pose (world frame), Jacobian (6 x ny, row-major) and Jdot yd of each of request.links, from
    one Model.link_kinematics call: the links must be distinct names of the model, checked before
    any kinematics, so that a request names at most as many links as the model has."""
    layout, model = loaded.layout, loaded.model
    selection, q = _positions(layout, request)
    v = _velocities(layout, selection, request)
    R, p, J, bias = model.link_kinematics(q, v, list(request.links))
    response.name = coordinate_names(model)
    response.poses = [conv.array_to_pose(np.concatenate((p[e], matrix_quaternion(R[e]))), Pose())
                      for e in range(len(p))]
    response.jacobians = conv.float64_array(J.reshape(-1))
    response.bias_accelerations = [conv.array_to_accel(b, Accel()) for b in bias]


def centroidal(loaded, request, response):
    """A_g (6 x ny, row-major), h_g, the centroidal bias, the centre of mass, its velocity and
    Jacobian (3 x ny, row-major) and the total mass at the requested state."""
    layout, model = loaded.layout, loaded.model
    selection, q = _positions(layout, request)
    v = _velocities(layout, selection, request)
    A = model.centroidal_momentum_matrix(q)
    com, com_velocity = model.center_of_mass(q, v)
    response.name = coordinate_names(model)
    response.total_mass = float(model.total_mass)
    response.center_of_mass = Point(x=com[0], y=com[1], z=com[2])
    response.center_of_mass_velocity = Vector3(x=com_velocity[0], y=com_velocity[1],
                                               z=com_velocity[2])
    response.center_of_mass_jacobian = conv.float64_array(
        model.center_of_mass_jacobian(q).reshape(-1))
    response.centroidal_momentum_matrix = conv.float64_array(A.reshape(-1))
    response.centroidal_momentum = conv.float64_array(model.centroidal_momentum(q, v))
    response.centroidal_bias = conv.float64_array(model.centroidal_bias(q, v))


def describe_model(loaded, request, response):
    """The served model: its source, names, sizes, floating-base joint, links, effort limits,
    clusters, total mass and load warnings."""
    model = loaded.model
    response.message = 'ok'
    response.description_source = loaded.source
    response.warnings = list(model.warnings)
    response.robot_name = model.name
    response.joint_names = list(model.joint_names)
    response.independent_joint_names = list(model.independent_joint_names)
    response.nq, response.nv, response.ny = model.nq, model.nv, model.ny
    response.floating_base = model.floating_base
    response.floating_base_joint = model.floating_base_joint
    response.link_names = list(model.links)
    response.effort_limits = [float(model.effort_limits.get(name, np.inf))
                              for name in model.independent_joint_names]
    response.clusters = [ClusterInfo(
        name=c.name, links=list(c.links), joints=list(c.joints),
        independent_joints=list(c.independent_joints), constraints=list(c.constraints))
        for c in model.clusters]
    response.total_mass = float(model.total_mass)


def service_callback(name, handler, served, stats, logger, counted=True):
    """The callback of service name: handler(served.current(), request, response) answered with
    success=true; a failure answers success=false with the reason, logged and, if counted, counted
    as a rejected request in stats."""
    def callback(request, response):
        with Guard(name, logger) as outcome:
            handler(served.current(), request, response)
            response.success = True
            return response
        if counted:
            stats.reject(f'{name}: {outcome.reason}')
        logger.warning(f'{name}: {outcome.reason}', throttle_duration_sec=1.0)
        return type(response)(success=False, message=outcome.reason)
    return callback


def create_services(node, served, settings, stats):
    """Create the services on node and return them, answered from served's model
    (forward_dynamics with the default method of settings); describe_model, a question about the
    node, counts no rejected request."""
    def forward(loaded, request, response):
        forward_dynamics(loaded, request, response, settings['forward_dynamics.method'])
    handlers = ((ForwardDynamics, 'forward_dynamics', forward, True),
                (InverseDynamics, 'inverse_dynamics', inverse_dynamics, True),
                (InverseOperationalSpaceInertia, 'inverse_operational_space_inertia',
                 inverse_operational_space_inertia, True),
                (MassMatrix, 'mass_matrix', mass_matrix, True),
                (BiasForces, 'bias_forces', bias_forces, True),
                (LinkKinematics, 'link_kinematics', link_kinematics, True),
                (Centroidal, 'centroidal', centroidal, True),
                (DescribeModel, 'describe_model', describe_model, False))
    return [node.create_service(srv_type, f'~/{name}',
                                service_callback(name, handler, served, stats, node.get_logger(),
                                                 counted))
            for srv_type, name, handler, counted in handlers]
