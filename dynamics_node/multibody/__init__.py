"""The multibody model built from a description: spatial algebra, the joint-type table (joints.py),
the spanning tree, loop and coupling constraints, clusters, their closed configurations and
coordinate roles."""
