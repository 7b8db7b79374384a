"""The per-thread workspace of a Model: Data, and ThreadWorkspace, which gives each calling thread
its own."""

import threading

import numpy as np

from .engines.numpy_engine import ReferencePath


class ThreadWorkspace(threading.local):
    """``data``: a workspace (Data) per thread, made at the thread's first use, so that threads may
    share one model (threading.local runs __init__ in every thread that uses the object)."""

    def __init__(self, model):
        self.data = Data(model)


class Data:
    """Workspace reused across calls: per-body transforms and spatial vectors, per-cluster joint
    quantities (Chignoli et al. 2023 notation); and, from its engine (numba or NumPy, built at the
    first use), the public calls' entry points, their context, result buffers and fault
    (contract.Engine.attach)."""

    def __init__(self, model):
        nb, nc = model.nb, len(model.cluster_list)
        self.Xup = np.zeros((nb, 6, 6))   # ^iX_parent(i)
        self.Xup[0] = np.eye(6)
        self.q = None                     # the positions of Xup (update_transforms)
        self.Xo = np.zeros((nb, 6, 6))    # ^iX_output(i): to the body's output body
        self.v = np.zeros((nb, 6))        # body velocities, body coordinates
        self.a = np.zeros((nb, 6))        # body accelerations
        self.f = np.zeros((nb, 6))        # body forces (RNEA), articulated bias (ABA)
        self.f_ext = np.zeros((nb, 6))    # external forces on the bodies, body coordinates
        self.f_ext_set = False            # whether f_ext may hold non-zero entries
        self.S = [None] * nc              # cluster motion subspaces S_k (6 nb_k x m_k)
        self.G = [None] * nc              # explicit constraint Jacobians G_k (n_k x m_k)
        self.g = [None] * nc              # explicit constraint biases g_k (n_k)
        self.c = [None] * nc              # cluster velocity-product biases c_k (6 nb_k)
        self.qd = np.zeros(model.nv)      # spanning velocities G yd
        self.q_last = None                # last completed positions (tracking start of completion)
        self.pending = None               # a completion whose budget ran out (completion.py)
        self.partial = None               # where the last failed continuation stopped
        self._model = model

    def __getattr__(self, name):
        """The engine and what it attaches (context, *_entry, *_out, fault), at the first use:
        the compiled FastPath, or the NumPy ReferencePath; its whole-body calls (whole_body) at
        their first use."""
        if name == 'whole_body':
            self.whole_body = self.engine.whole_body()
            return self.whole_body
        if name.startswith('_') or 'engine' in self.__dict__:
            raise AttributeError(name)
        model = self._model
        if model.compiled:
            from .engines.numba_engine import FastPath
            self.engine = FastPath(model, model.flat, self.f_ext)
        else:
            self.engine = ReferencePath(model, self)
        self.engine.attach(self)
        return getattr(self, name)
