"""pip installation of the dynamics_node Python package (pip install [-e] .).

The ROS build (colcon / CMake) uses CMakeLists.txt instead, which also generates the interfaces.
"""
import os
import xml.etree.ElementTree as ElementTree

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
# Single source of truth for the version: package.xml.
VERSION = ElementTree.parse(os.path.join(HERE, 'package.xml')).getroot().findtext('version')

setup(
    # Not 'cluster_dynamics': that distribution name belongs to the generated interfaces (rosidl
    # installs a cluster_dynamics egg-info next to the `cluster_dynamics` Python module).
    name='dynamics_node',
    version=VERSION,
    description='Cluster-based rigid-body dynamics (URDF+) and its ROS 2 node',
    license='BSD-3-Clause',
    python_requires='>=3.10',
    packages=find_packages(include=['dynamics_node', 'dynamics_node.*']),
    package_data={'dynamics_node': ['robots/*.urdf', 'robots/extended_urdf/*.urdf',
                                    'robots/extended_urdf/*.yaml']},
    install_requires=['numpy', 'lxml', 'numba', 'pyyaml'],
    # dynamics_offline (dynamics_node/offline): bags without ROS, Parquet tables, progress bars,
    # Dask clusters
    extras_require={'offline': ['mcap', 'mcap-ros2-support', 'rosbags', 'pyarrow', 'tqdm', 'dask',
                                'distributed']},
    entry_points={'console_scripts': [
        'dynamics_node = dynamics_node.ros.node:main',
        'dynamics_offline = dynamics_node.offline.cli:main',
        'extended_urdf_to_urdfplus = dynamics_node.convert:main']},
)
