"""The ROS 2 adapter: the node (node.py, wiring its parts: parameters, description, services,
stream, diagnostics, each callback in guard.Guard), its conversions between messages and the
library's vectors, and a Python client of its services."""
