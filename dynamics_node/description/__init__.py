"""Robot descriptions: the URDF+ reader (urdf.py) and the Extended URDF converter
(extended_urdf.py), which turn files into plain description records."""
