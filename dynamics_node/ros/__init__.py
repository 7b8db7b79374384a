"""The ROS 2 adapter: the node, its conversions between messages and the library's vectors, and a Python
client of its services."""
