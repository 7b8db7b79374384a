"""Offline evaluation of recorded motion (the 'offline' extra: mcap, mcap-ros2-support, rosbags,
pyarrow, tqdm, dask, distributed): joint states read from ROS 2 bags without ROS (bags.py),
derivatives of sampled signals (filters.py), the torques along a recording (torques.py), answered
in windows on this process or a Dask cluster (scale.py), and the console script
``dynamics_offline`` (cli.py)."""
