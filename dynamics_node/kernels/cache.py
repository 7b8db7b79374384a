"""numba's on-disk cache for kernel modules that reuse the kernels of other modules.

numba keys the cache of a function on the source file that defines it, but inlines the helpers it
calls from other modules: a kernel of lcaba.py would keep running the old spatial.py helpers after
spatial.py changed. ``key_on_helpers(path)`` keys the cache of the module at path on every module
of this folder (borrowed.py, which lowers their field reads, included) and on the joint-type table
(joint_types.py, whose codes the kernels switch on): numba's cache locators, with their
modification times and sizes added to the stamp (numba 0.68's CacheImpl._locator_classes; a change
of that interface fails at import).
"""

import glob
import os

from numba.core import caching

_HERE = os.path.dirname(os.path.abspath(__file__))
HELPERS = sorted(glob.glob(os.path.join(_HERE, '**', '*.py'), recursive=True) +
                 [os.path.join(os.path.dirname(_HERE), 'joint_types.py')])
_MODULES = set()


def key_on_helpers(path):
    """Key the numba cache of the kernels defined in the file at path on every kernel module as
    well."""
    if not _MODULES:
        locators = caching.CacheImpl._locator_classes
        locators[:0] = [_with_helpers(caching.UserProvidedCacheLocator),
                        _with_helpers(caching.InTreeCacheLocator)]
    _MODULES.add(os.path.abspath(path))


def _with_helpers(base):
    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            return (super().from_function(py_func, py_file) if os.path.abspath(py_file) in _MODULES
                    else None)

        def get_source_stamp(self):
            return (super().get_source_stamp(),) + tuple((os.stat(p).st_mtime, os.stat(p).st_size)
                                                         for p in HELPERS)
    return Locator
