"""Offline evaluation of recorded motion (the 'offline' extra: mcap, mcap-ros2-support, rosbags,
pyarrow, tqdm): joint states read from ROS 2 bags without ROS (bags.py), derivatives of sampled
signals (filters.py), the torques along a recording (torques.py) and the console script
``dynamics_offline`` (cli.py)."""
