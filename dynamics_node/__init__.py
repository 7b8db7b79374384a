"""cluster_dynamics: exact rigid-body dynamics of URDF+ robots with kinematic loops, by clusters.

Library use (no ROS needed)::

    from dynamics_node import load_model
    model = load_model('robot.urdf')
    qdd = model.forward_dynamics(q, v, tau)
"""

from .algorithms.lcaba import ProximalSettings
from .batch import Batch
from .contacts import Contact, ContactBiasInfo, InverseDynamicsInfo
from .description.compose import compose, Part
from .errors import ModelError, SingularConfigurationError
from .forward_dynamics import ForwardDynamicsInfo
from .data import Data
from .layout import ClusterInfo
from .loading import load_model
from .model import Model
from .robots import bundled_extended_urdf, bundled_model, bundled_models

__all__ = ['Batch', 'ClusterInfo', 'Contact', 'ContactBiasInfo', 'Data', 'ForwardDynamicsInfo',
           'InverseDynamicsInfo', 'Model', 'ModelError', 'Part', 'ProximalSettings',
           'SingularConfigurationError', 'bundled_extended_urdf', 'bundled_model',
           'bundled_models', 'compose', 'load_model']
