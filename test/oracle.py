"""Independent, non-recursive test oracle for URDF+ models (test-only code).

Built on Pinocchio (spanning-tree kinematics and dynamics) plus an own lxml
reading of the URDF+ extras (``<loop>``, ``<coupling>``, ``<mimic>``,
``independent=``).  It deliberately does NOT import ``dynamics_node``.

Everything is done the slow, obvious way: spanning-tree CRBA/RNEA from
Pinocchio, stacked constraint Jacobians, and a dense rank-revealing
(SVD null-space) solve of the KKT system.

Conventions (see the cluster spec):
  * q: 7 per floating joint (x y z qx qy qz qw), 4 per spherical joint
    (qx qy qz qw), 3 per planar joint (x y theta in the plane basis e1 e2 of
    the documented convention; Pinocchio: x y cos sin in its own XY plane),
    1 per other joint (continuous joints are a plain angle here; Pinocchio
    uses cos/sin).  A universal joint u (Pinocchio's JointModelUniversal) is
    the two coordinates u_1, u_2 of the library's layout.
  * v: 6 per floating joint ([linear; angular] in the child frame), 3 per
    spherical (angular, child frame) or planar (e1, e2 linear and axis
    angular, child frame) joint, 1 otherwise.
  * vector order: ``set_layout(joint_names)`` (default: Pinocchio's order).
  * wrenches: {link: (force[3], torque[3])} in the link frame at the link
    origin, acting ON the body: H qdd + C - J^T f = tau.
  * Jacobians: Pinocchio LOCAL frame Jacobians, rows [linear; angular].

Constraint rows (K qdd = k, k = -Kdot v):
  * <loop>: frames P = pose(pred) * origin_pred, S = pose(succ) * origin_succ.
    Relative spatial velocity of S w.r.t. P, expressed in P (at P's origin):
    v_rel = Ad(pMs) v_S - v_P, then rows selected by the loop type
    (revolute/continuous: 3 linear + 2 angular perpendicular to the axis;
    fixed: 6; prismatic: 2 linear perpendicular to the axis + 3 angular;
    spherical: 3 linear; planar: 1 linear along the axis + 2 angular
    perpendicular to it; universal: 3 linear + 1 angular along n = a1 x a2,
    a1 = <axis> in P, a2 = <axis2> in S, whose bias also carries the
    turning of n with S: d/dt n = a1 x (w_rel x a2) in P).
    Time derivative: d/dt v_rel = Ad(pMs) a_S - a_P - v_P x v_rel
    (a_* = body-frame spatial accelerations), hence k = -T (that at qdd = 0).
  * <coupling> (pred A, succ B, ratio r): r * sum(v on NCA->A) - sum(v on NCA->B).
  * <mimic joint=J multiplier=m> in joint K: v_K - m v_J.
  * implicit constraints phi(x) = 0 of joint positions x (the library's <constraint>, given
    here as CasADi functions written from their derivation, not read from the file): K rows
    dphi/dx and k = -d/dt(K) v, both by CasADi's symbolic differentiation.

``independent_oracle(text, urdf)``: the oracle of an Extended URDF pair (the
closures' YAML text, the URDF's path), converted without the library.
"""

from __future__ import annotations

import os

import casadi
import numpy as np
import pinocchio as pin
from lxml import etree
import yaml

__all__ = ["independent_oracle", "KKTOracle", "rpy_to_matrix"]


# ----------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------

def rpy_to_matrix(r: float, p: float, y: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr = np.cos(r), np.sin(r)
    cp, sp = np.cos(p), np.sin(p)
    cy, sy = np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _unit(axis):
    """axis normalized (a fixed joint's zero axis, as published files carry, stays zero)."""
    norm = np.linalg.norm(axis)
    return axis / norm if norm else axis


def _floats(text, n, default):
    if text is None:
        return np.array(default, dtype=float)
    vals = [float(t) for t in text.split()]
    if len(vals) != n:
        raise ValueError(f"expected {n} numbers, got {text!r}")
    return np.array(vals, dtype=float)


def _origin(elem) -> pin.SE3:
    """SE3 from an <origin xyz rpy/> child of elem (identity when absent)."""
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return pin.SE3.Identity()
    xyz = _floats(o.get("xyz"), 3, [0, 0, 0])
    rpy = _floats(o.get("rpy"), 3, [0, 0, 0])
    return pin.SE3(rpy_to_matrix(*rpy), xyz)


def _perp_basis(axis: np.ndarray) -> np.ndarray:
    """3x2 orthonormal basis of the plane perpendicular to the unit axis."""
    a = axis / np.linalg.norm(axis)
    h = np.eye(3)[int(np.argmin(np.abs(a)))]
    b1 = np.cross(a, h)
    b1 /= np.linalg.norm(b1)
    b2 = np.cross(a, b1)
    return np.column_stack([b1, b2])


def _plane_frame(axis: np.ndarray) -> np.ndarray:
    """The library's documented plane basis of a planar joint: e1 = axis x (1, 0, 0) normalized
    (axis x (0, 1, 0) when |axis_x| >= 0.9), e2 = axis x e1; columns (e1, e2, axis)."""
    h = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, h)
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(axis, e1), axis])


def _is_true(text, default=True):
    if text is None:
        return default
    t = text.strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise ValueError(f"bad boolean {text!r}")


# ----------------------------------------------------------------------------
# the oracle
# ----------------------------------------------------------------------------

class KKTOracle:
    """Reference dynamics for URDF+ models via spanning tree + dense KKT."""

    rank_rtol = 1e-9  # relative singular-value threshold of the rank-revealing step

    def __init__(self, urdf: str, implicit=()):
        """implicit: (name, joint names, phi) per implicit constraint, phi(x) a list of CasADi
        expressions of the joints' positions x (an SX vector)."""
        text = urdf
        if not urdf.lstrip().startswith("<"):
            with open(os.fspath(urdf), "rb") as fh:
                text = fh.read().decode("utf-8")
        if isinstance(text, str):
            raw = text.encode("utf-8")
        else:
            raw = text
        parser = etree.XMLParser(remove_comments=True)
        root = etree.fromstring(raw, parser)
        if root.tag != "robot":
            raise ValueError("root element must be <robot>")

        # ---- lxml reading of the tree and the URDF+ extras -----------------
        self._urdf_joints = {}  # name -> dict(type, parent, child)
        self._link_parent = {}  # child link -> (joint name, parent link)
        self.links = [l.get("name") for l in root.findall("link")]
        independent = {}
        mimics = []
        for j in root.findall("joint"):
            name = j.get("name")
            jtype = j.get("type")
            parent = j.find("parent").get("link")
            child = j.find("child").get("link")
            ax, ax2 = j.find("axis"), j.find("axis2")
            axis = _floats(ax.get("xyz") if ax is not None else None, 3, [1, 0, 0])
            axis2 = _floats(ax2.get("xyz") if ax2 is not None else None, 3, [0, 1, 0])
            self._urdf_joints[name] = dict(type=jtype, parent=parent, child=child,
                                           origin=_origin(j), axis=_unit(axis),
                                           axis2=_unit(axis2))
            if child in self._link_parent:
                raise ValueError(f"link {child} has two parent joints")
            self._link_parent[child] = (name, parent)
            independent[name] = _is_true(j.get("independent"), True)
            mm = j.find("mimic")
            if mm is not None:
                mimics.append(dict(kind="mimic", name=f"mimic:{name}", joint=name,
                                   master=mm.get("joint"),
                                   multiplier=float(mm.get("multiplier", "1")),
                                   offset=float(mm.get("offset", "0"))))
        self._independent_attr = independent

        def _link_of(elem):
            ln = elem.get("link")
            if ln is None:
                ln = elem.get("name")
            if ln is None:
                raise ValueError("predecessor/successor without link")
            return ln

        self.constraints = []  # loops and couplings in document order, then mimics
        for el in root:
            if not isinstance(el.tag, str):
                continue
            if el.tag == "loop":
                ltype = el.get("type")
                if ltype not in ("revolute", "continuous", "prismatic", "fixed", "spherical",
                                 "planar", "universal"):
                    raise ValueError(f"unsupported loop type {ltype}")
                pe, se = el.find("predecessor"), el.find("successor")
                ax, ax2 = el.find("axis"), el.find("axis2")
                axis = _floats(ax.get("xyz") if ax is not None else None, 3, [1, 0, 0])
                axis = axis / np.linalg.norm(axis)
                axis2 = _floats(ax2.get("xyz") if ax2 is not None else None, 3, [0, 1, 0])
                self.constraints.append(dict(
                    kind="loop", name=el.get("name"), type=ltype,
                    pred=_link_of(pe), pred_origin=_origin(pe),
                    succ=_link_of(se), succ_origin=_origin(se), axis=axis,
                    axis2=axis2 / np.linalg.norm(axis2)))
            elif el.tag == "coupling":
                ratio = float(el.find("ratio").get("value"))
                self.constraints.append(dict(
                    kind="coupling", name=el.get("name"),
                    pred=_link_of(el.find("predecessor")),
                    succ=_link_of(el.find("successor")), ratio=ratio))
        self.constraints.extend(mimics)
        for name, joints, phi in implicit:
            x, xd = casadi.SX.sym("x", len(joints)), casadi.SX.sym("xd", len(joints))
            residual = casadi.vertcat(*phi(x))
            K = casadi.jacobian(residual, x)
            self.constraints.append(dict(
                kind="implicit", name=name, joints=list(joints), rows=residual.shape[0],
                residual=casadi.Function("phi", [x], [residual]),
                K=casadi.Function("K", [x], [K]),
                k=casadi.Function("k", [x, xd], [-casadi.jtimes(K @ xd, x, xd)])))

        # ---- Pinocchio model of the spanning tree, joint by joint -----------
        self.model = self._build_tree(root)

        # ---- frames for the loop joints ------------------------------------
        for c in self.constraints:
            if c["kind"] != "loop":
                continue
            for side in ("pred", "succ"):
                fid = self._body_frame_id(c[side])
                f = self.model.frames[fid]
                placement = f.placement * c[side + "_origin"]
                fname = f"__oracle_{c['name']}_{side}"
                c[side + "_frame"] = self.model.addFrame(
                    pin.Frame(fname, f.parentJoint, fid, placement, pin.FrameType.OP_FRAME))
        self.data = self.model.createData()

        # ---- joint bookkeeping ---------------------------------------------
        self._pj = {}  # our joint name -> dict(kind, idx_q, nq, idx_v, nv)
        pin_order = []
        for jid in range(1, self.model.njoints):
            jm = self.model.joints[jid]
            name = self.model.names[jid]
            utype = self._urdf_joints[name]["type"]
            kind = "scalar" if utype in ("revolute", "continuous", "prismatic") else utype
            if utype == "universal":  # the library's two coordinates u_1, u_2
                for h in (0, 1):
                    self._pj[f"{name}_{h + 1}"] = dict(kind="scalar", idx_q=jm.idx_q + h, nq=1,
                                                       idx_v=jm.idx_v + h, nv=1, jid=jid)
                    pin_order.append(f"{name}_{h + 1}")
                continue
            self._pj[name] = dict(kind=kind, idx_q=jm.idx_q, nq=jm.nq, idx_v=jm.idx_v, nv=jm.nv,
                                  jid=jid)
            pin_order.append(name)
        self.pinocchio_joint_names = list(pin_order)
        self.set_layout(pin_order)

    # ------------------------------------------------------------- the tree
    @staticmethod
    def _inertia(link_elem):
        """pin.Inertia of a <link> about its frame origin, link axes."""
        inertial = link_elem.find("inertial")
        if inertial is None:
            return pin.Inertia.Zero()
        mass = float(inertial.find("mass").get("value"))
        o = _origin(inertial)
        t = inertial.find("inertia")
        e = {k: float(t.get(k)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[e["ixx"], e["ixy"], e["ixz"]], [e["ixy"], e["iyy"], e["iyz"]],
                      [e["ixz"], e["iyz"], e["izz"]]])
        c, I_c = o.translation, o.rotation @ I @ o.rotation.T
        try:
            return pin.Inertia(mass, c, I_c)
        # unphysical alone (a CAD round-off link merged into a heavier body): same parameters
        except RuntimeError:
            I_o = I_c + mass * (c @ c * np.eye(3) - np.outer(c, c))
            return pin.Inertia.FromDynamicParameters(np.array(
                [mass, *(mass * c), I_o[0, 0], I_o[0, 1], I_o[1, 1], I_o[0, 2], I_o[1, 2],
                 I_o[2, 2]]))

    def _build_tree(self, root):
        """pin.Model of the spanning tree: one Pinocchio joint per moving URDF joint (a universal
        joint is one JointModelUniversal), fixed joints merged, a BODY frame per link.  A planar
        joint is Pinocchio's JointModelPlanar (XY plane, z rotation) in the joint frame turned by F
        = [e1 e2 axis]: its child frame is then ours turned by F, so everything it carries is
        placed through F^T."""
        links = {l.get("name"): l for l in root.findall("link")}
        children = {name: [] for name in links}
        for name, j in self._urdf_joints.items():
            children[j["parent"]].append(name)
        roots = [l for l in links if l not in self._link_parent]
        model = pin.Model()
        model.name = root.get("name", "")
        stack = [(roots[0], 0, pin.SE3.Identity(), None)]
        # depth first, a joint added when its child is visited: subtrees stay contiguous
        while stack:
            # M: pose of the link (or joint) frame in joint jid's frame
            link, jid, M, name = stack.pop()
            if name is not None:
                j = self._urdf_joints[name]
                placement, M = M, pin.SE3.Identity()
                if j["type"] == "planar":
                    F = _plane_frame(j["axis"])
                    placement, M = placement * pin.SE3(F, np.zeros(3)), pin.SE3(F.T, np.zeros(3))
                jm = {"revolute": lambda: pin.JointModelRevoluteUnaligned(j["axis"]),
                      # same dynamics
                      "continuous": lambda: pin.JointModelRevoluteUnaligned(j["axis"]),
                      "prismatic": lambda: pin.JointModelPrismaticUnaligned(j["axis"]),
                      "floating": pin.JointModelFreeFlyer, "spherical": pin.JointModelSpherical,
                      "planar": pin.JointModelPlanar,
                      "universal": lambda: pin.JointModelUniversal(j["axis"], j["axis2"])
                      }[j["type"]]()
                jid = model.addJoint(jid, jm, placement, name)
            model.appendBodyToJoint(jid, self._inertia(links[link]), M)
            model.addFrame(pin.Frame(link, jid, 0, M, pin.FrameType.BODY))
            for child in reversed(children[link]):
                j = self._urdf_joints[child]
                stack.append((j["child"], jid, M * j["origin"],
                              None if j["type"] == "fixed" else child))
        return model

    # ------------------------------------------------------------------ layout
    def set_layout(self, joint_names):
        """Use the library's joint order for every vector in/out."""
        names = list(joint_names)
        if sorted(names) != sorted(self._pj):
            raise ValueError(f"layout {names} != spanning joints {sorted(self._pj)}")
        self.joint_names = names
        self._q_slices, self._v_slices = {}, {}
        vperm = []
        iq = iv = 0
        for n in names:
            info = self._pj[n]
            nq = {"floating": 7, "spherical": 4, "planar": 3}.get(info["kind"], 1)
            nv = info["nv"]
            self._q_slices[n] = slice(iq, iq + nq)
            self._v_slices[n] = slice(iv, iv + nv)
            vperm.extend(range(info["idx_v"], info["idx_v"] + nv))
            iq += nq
            iv += nv
        self.nq, self.nv = iq, iv
        self._vperm = np.array(vperm, dtype=int)  # our index i -> pinocchio index

    @property
    def independent_joint_names(self):
        return [n for n in self.joint_names if self._independent_attr.get(n, True)]

    def q_slice(self, name):
        return self._q_slices[name]

    def v_slice(self, name):
        return self._v_slices[name]

    def v_index(self, names):
        """Our velocity indices of the listed joints (in the order given)."""
        return np.concatenate([np.arange(self.nv)[self._v_slices[n]] for n in names]).astype(int)

    # ---- gravity
    @property
    def gravity(self):
        return np.array(self.model.gravity.linear)

    @gravity.setter
    def gravity(self, g):
        self.model.gravity = pin.Motion(np.asarray(g, dtype=float).reshape(3), np.zeros(3))

    # ---- conversions
    def q_to_pin(self, q):
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.size != self.nq:
            raise ValueError(f"q has size {q.size}, expected {self.nq}")
        qp = np.zeros(self.model.nq)
        for n, info in self._pj.items():
            qs = q[self._q_slices[n]]
            a = info["idx_q"]
            if info["kind"] == "floating":
                quat = qs[3:7]
                qp[a:a + 3] = qs[:3]
                qp[a + 3:a + 7] = quat / np.linalg.norm(quat)
            elif info["kind"] == "spherical":
                qp[a:a + 4] = qs / np.linalg.norm(qs)
            elif info["kind"] == "planar":
                qp[a:a + 4] = [qs[0], qs[1], np.cos(qs[2]), np.sin(qs[2])]
            else:
                qp[a] = qs[0]
        return qp

    def q_from_pin(self, qp):
        qp = np.asarray(qp, dtype=float).reshape(-1)
        q = np.zeros(self.nq)
        for n, info in self._pj.items():
            a = info["idx_q"]
            if info["kind"] == "planar":
                q[self._q_slices[n]] = [qp[a], qp[a + 1], np.arctan2(qp[a + 3], qp[a + 2])]
            else:
                q[self._q_slices[n]] = qp[a:a + info["nq"]]
        return q

    def v_to_pin(self, v):
        v = np.asarray(v, dtype=float).reshape(-1)
        if v.size != self.nv:
            raise ValueError(f"vector has size {v.size}, expected {self.nv}")
        vp = np.zeros(self.model.nv)
        vp[self._vperm] = v
        return vp

    def v_from_pin(self, vp):
        return np.asarray(vp, dtype=float).reshape(-1)[self._vperm]

    def cols_from_pin(self, M):
        """Reorder the columns (velocity axis) of a matrix from Pinocchio to our layout."""
        return np.asarray(M)[:, self._vperm]

    def neutral(self):
        return self.q_from_pin(pin.neutral(self.model))

    def random_configuration(self, rng, scale=1.0):
        """Random q in our layout (angles in [-scale, scale], unit quaternions)."""
        q = np.zeros(self.nq)
        for n, info in self._pj.items():
            s = self._q_slices[n]
            if info["kind"] == "floating":
                quat = rng.normal(size=4)
                q[s] = np.concatenate([rng.uniform(-scale, scale, 3), quat / np.linalg.norm(quat)])
            elif info["kind"] == "spherical":
                quat = rng.normal(size=4)
                q[s] = quat / np.linalg.norm(quat)
            elif info["kind"] == "planar":
                q[s] = rng.uniform(-scale, scale, 3)
            else:
                q[s] = rng.uniform(-scale, scale)
        return q

    def integrate(self, q, v, dt=1.0):
        """q (+) v*dt on the configuration manifold (our layout)."""
        qp = pin.integrate(self.model, self.q_to_pin(q), self.v_to_pin(v) * dt)
        return self.q_from_pin(qp)

    # ------------------------------------------------------------ dynamics
    def mass_matrix(self, q):
        M = pin.crba(self.model, self.data, self.q_to_pin(q))
        M = np.triu(M) + np.triu(M, 1).T  # Pinocchio fills the upper triangle only
        return M[np.ix_(self._vperm, self._vperm)]

    def _body_frame_id(self, link):
        if link not in self.links:
            raise KeyError(f"unknown link {link!r}")
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        if fid >= len(self.model.frames):
            raise KeyError(f"no Pinocchio frame for link {link!r}")
        return fid

    def _fext(self, wrenches):
        """Our link wrenches -> Pinocchio per-joint forces (LOCAL joint frame, joint origin)."""
        fext = [pin.Force.Zero() for _ in range(self.model.njoints)]
        for link, (f, t) in (wrenches or {}).items():
            fid = self._body_frame_id(link)
            fr = self.model.frames[fid]
            w = pin.Force(np.asarray(f, dtype=float).reshape(3),
                          np.asarray(t, dtype=float).reshape(3))
            # jMf.act maps a force expressed in the link frame into the joint frame
            fext[fr.parentJoint] = fext[fr.parentJoint] + fr.placement.act(w)
        return pin.StdVec_Force(fext)

    def bias(self, q, v, wrenches=None):
        """C(q, v) = RNEA(q, v, 0) incl. gravity, minus the external wrenches' J^T f."""
        qp, vp = self.q_to_pin(q), self.v_to_pin(v)
        a0 = np.zeros(self.model.nv)
        if wrenches:
            tau = pin.rnea(self.model, self.data, qp, vp, a0, self._fext(wrenches))
        else:
            tau = pin.rnea(self.model, self.data, qp, vp, a0)
        return self.v_from_pin(tau)

    def rnea(self, q, v, a, wrenches=None):
        qp, vp, ap = self.q_to_pin(q), self.v_to_pin(v), self.v_to_pin(a)
        if wrenches:
            tau = pin.rnea(self.model, self.data, qp, vp, ap, self._fext(wrenches))
        else:
            tau = pin.rnea(self.model, self.data, qp, vp, ap)
        return self.v_from_pin(tau)

    def frame_jacobian(self, q, link):
        """6 x nv LOCAL Jacobian of the link frame ([linear; angular])."""
        qp = self.q_to_pin(q)
        pin.computeJointJacobians(self.model, self.data, qp)
        pin.updateFramePlacements(self.model, self.data)
        J = pin.getFrameJacobian(self.model, self.data, self._body_frame_id(link),
                                 pin.ReferenceFrame.LOCAL)
        return self.cols_from_pin(J)

    def link_placement(self, q, link):
        """World pose (pin.SE3) of the link frame."""
        pin.framesForwardKinematics(self.model, self.data, self.q_to_pin(q))
        return pin.SE3(self.data.oMf[self._body_frame_id(link)])

    def kinetic_energy(self, q, v):
        v = np.asarray(v, dtype=float)
        return 0.5 * v @ self.mass_matrix(q) @ v

    def potential_energy(self, q):
        """Sum of -m g . c over all bodies (uses the current gravity)."""
        return float(pin.computePotentialEnergy(self.model, self.data, self.q_to_pin(q)))

    def energy(self, q, v):
        return self.kinetic_energy(q, v) + self.potential_energy(q)

    # ------------------------------------------------------------ constraints
    @staticmethod
    def _selector(c, pMs=None):
        """Rows of the relative motion (Pinocchio [linear; angular], in P) that a loop constrains;
        a universal loop's angular row n = a1 x (R a2) needs the relative pose pMs (zero
        without)."""
        t = c["type"]
        if t == "fixed":
            return np.eye(6)
        B = _perp_basis(c["axis"])
        if t == "spherical":
            return np.eye(6)[:3]
        if t == "universal":
            T = np.zeros((4, 6))
            T[:3, :3] = np.eye(3)
            if pMs is not None:
                T[3, 3:] = np.cross(c["axis"], pMs.rotation @ c["axis2"])
            return T
        if t == "planar":
            T = np.zeros((3, 6))
            T[0, :3] = c["axis"]
            T[1:, 3:] = B.T
            return T
        T = np.zeros((5, 6))
        if t in ("revolute", "continuous"):
            T[:3, :3] = np.eye(3)
            T[3:, 3:] = B.T
        elif t == "prismatic":
            T[:2, :3] = B.T
            T[2:, 3:] = np.eye(3)
        else:
            raise ValueError(t)
        return T

    def _path_joints(self, anc, link):
        """Non-fixed joints on the tree path anc -> link (anc must be an ancestor)."""
        out = []
        cur = link
        while cur != anc:
            if cur not in self._link_parent:
                raise ValueError(f"{anc} is not an ancestor of {link}")
            jname, parent = self._link_parent[cur]
            jt = self._urdf_joints[jname]["type"]
            if jt == "floating":
                raise ValueError(f"coupling path crosses floating joint {jname}")
            if jt == "universal":
                out.extend([f"{jname}_2", f"{jname}_1"])
            elif jt != "fixed":
                out.append(jname)
            cur = parent
        return out[::-1]

    def _ancestors(self, link):
        out = [link]
        while out[-1] in self._link_parent:
            out.append(self._link_parent[out[-1]][1])
        return out

    def nca(self, a, b):
        anc_a = self._ancestors(a)
        anc_b = set(self._ancestors(b))
        for l in anc_a:
            if l in anc_b:
                return l
        raise ValueError(f"links {a} and {b} have no common ancestor")

    def _coupling_row(self, c):
        row = np.zeros(self.nv)
        if c["kind"] == "coupling":
            n = self.nca(c["pred"], c["succ"])
            for j in self._path_joints(n, c["pred"]):
                row[self._v_slices[j]] += c["ratio"]
            for j in self._path_joints(n, c["succ"]):
                row[self._v_slices[j]] -= 1.0
        else:  # mimic
            for j in (c["joint"], c["master"]):
                if self._pj[j]["kind"] == "floating":
                    raise ValueError("mimic on a floating joint")
            row[self._v_slices[c["joint"]]] += 1.0
            row[self._v_slices[c["master"]]] -= c["multiplier"]
        return row

    def _coupling_residual(self, c, q):
        q = np.asarray(q, dtype=float)
        if c["kind"] == "coupling":
            n = self.nca(c["pred"], c["succ"])
            sp = sum(q[self._q_slices[j]][0] for j in self._path_joints(n, c["pred"]))
            ss = sum(q[self._q_slices[j]][0] for j in self._path_joints(n, c["succ"]))
            return c["ratio"] * sp - ss
        return (q[self._q_slices[c["joint"]]][0]
                - c["multiplier"] * q[self._q_slices[c["master"]]][0]
                - c["offset"])

    @property
    def row_labels(self):
        """(constraint name, row within constraint) for every row of K."""
        out = []
        for c in self.constraints:
            m = (self._selector(c).shape[0] if c["kind"] == "loop"
                 else c["rows"] if c["kind"] == "implicit" else 1)
            out.extend((c["name"], i) for i in range(m))
        return out

    def _loop_kin(self, c):
        """Frames P, S: poses and LOCAL velocities/accelerations from self.data."""
        fp, fs = c["pred_frame"], c["succ_frame"]
        oMp, oMs = self.data.oMf[fp], self.data.oMf[fs]
        return fp, fs, oMp, oMs, oMp.actInv(oMs)

    def constraint_jacobian(self, q):
        qp = self.q_to_pin(q)
        pin.computeJointJacobians(self.model, self.data, qp)
        pin.updateFramePlacements(self.model, self.data)
        rows = []
        for c in self.constraints:
            if c["kind"] == "loop":
                fp, fs, _, _, pMs = self._loop_kin(c)
                Jp = pin.getFrameJacobian(self.model, self.data, fp, pin.ReferenceFrame.LOCAL)
                Js = pin.getFrameJacobian(self.model, self.data, fs, pin.ReferenceFrame.LOCAL)
                Jrel = pMs.action @ Js - Jp
                rows.append(self._selector(c, pMs) @ self.cols_from_pin(Jrel))
            elif c["kind"] == "implicit":
                row = np.zeros((c["rows"], self.nv))
                row[:, self.v_index(c["joints"])] = np.array(c["K"](self._implicit_x(c, q)))
                rows.append(row)
            else:
                rows.append(self._coupling_row(c)[None, :])
        if not rows:
            return np.zeros((0, self.nv))
        return np.vstack(rows)

    def constraint_bias(self, q, v):
        """k = -Kdot v (so that K qdd = k on constraint-consistent motions)."""
        qp, vp = self.q_to_pin(q), self.v_to_pin(v)
        pin.forwardKinematics(self.model, self.data, qp, vp, np.zeros(self.model.nv))
        pin.updateFramePlacements(self.model, self.data)
        out = []
        LOCAL = pin.ReferenceFrame.LOCAL
        for c in self.constraints:
            if c["kind"] == "loop":
                fp, fs, _, _, pMs = self._loop_kin(c)
                vP = pin.getFrameVelocity(self.model, self.data, fp, LOCAL)
                vS = pin.getFrameVelocity(self.model, self.data, fs, LOCAL)
                aP = pin.getFrameAcceleration(self.model, self.data, fp, LOCAL)
                aS = pin.getFrameAcceleration(self.model, self.data, fs, LOCAL)
                vrel = pMs.act(vS) - vP
                drel = pMs.act(aS) - aP - vP.cross(vrel)
                k = -self._selector(c, pMs) @ drel.vector
                if c["type"] == "universal":  # d/dt n = a1 x (w_rel x R a2) in P
                    w = np.array(vrel.angular)
                    k[3] -= np.cross(c["axis"], np.cross(w, pMs.rotation @ c["axis2"])) @ w
                out.append(k)
            elif c["kind"] == "implicit":
                xd = np.asarray(v, dtype=float)[self.v_index(c["joints"])]
                out.append(np.array(c["k"](self._implicit_x(c, q), xd)).reshape(-1))
            else:
                out.append(np.zeros(1))
        if not out:
            return np.zeros(0)
        return np.concatenate(out)

    def loop_residual(self, q):
        """Position residual of every loop/coupling/mimic (same row layout as K)."""
        pin.framesForwardKinematics(self.model, self.data, self.q_to_pin(q))
        out = []
        for c in self.constraints:
            if c["kind"] == "loop":
                _, _, _, _, pMs = self._loop_kin(c)
                p = np.array(pMs.translation)
                r = np.array(pin.log3(pMs.rotation))
                t = c["type"]
                if t == "fixed":
                    out.append(np.concatenate([p, r]))
                elif t == "spherical":
                    out.append(p)
                elif t == "universal":
                    out.append(np.concatenate([p, [-c["axis"] @ pMs.rotation @ c["axis2"]]]))
                elif t == "planar":
                    out.append(np.concatenate([[c["axis"] @ p], _perp_basis(c["axis"]).T @ r]))
                else:
                    B = _perp_basis(c["axis"])
                    if t in ("revolute", "continuous"):
                        out.append(np.concatenate([p, B.T @ r]))
                    else:
                        out.append(np.concatenate([B.T @ p, r]))
            elif c["kind"] == "implicit":
                out.append(np.array(c["residual"](self._implicit_x(c, q))).reshape(-1))
            else:
                out.append(np.array([self._coupling_residual(c, q)]))
        if not out:
            return np.zeros(0)
        return np.concatenate(out)

    def _implicit_x(self, c, q):
        return np.array([np.asarray(q, dtype=float)[self._q_slices[j]][0] for j in c["joints"]])

    # ------------------------------------------------------------ solvers
    def _svd(self, K):
        U, s, Vt = np.linalg.svd(K)
        if s.size == 0:
            return U, s, Vt, 0
        r = int(np.sum(s > self.rank_rtol * max(1.0, s[0])))
        return U, s, Vt, r

    def constraint_rank(self, q):
        return self._svd(self.constraint_jacobian(q))[3]

    def forward_dynamics(self, q, v, tau, wrenches=None, held=()):
        """Spanning qdd from [[H, K^T],[K, 0]] [qdd; -lam] = [tau - C; k] (null-space solve); the
        velocity entries held (the library's held coordinates: idle spins) keep zero acceleration,
        as rows e_i^T qdd = 0 added to K."""
        H = self.mass_matrix(q)
        C = self.bias(q, v, wrenches)
        rhs = np.asarray(tau, dtype=float).reshape(-1) - C
        K = np.vstack([self.constraint_jacobian(q), np.eye(self.nv)[list(held)]])
        if K.shape[0] == 0:
            return np.linalg.solve(H, rhs)
        k = np.concatenate([self.constraint_bias(q, v), np.zeros(len(held))])
        U, s, Vt, r = self._svd(K)
        # least-squares particular solution of K qdd = k, then free motion in null(K)
        qdd_p = Vt[:r].T @ ((U[:, :r].T @ k) / s[:r])
        N = Vt[r:].T
        if N.shape[1] == 0:
            return qdd_p
        z = np.linalg.solve(N.T @ H @ N, N.T @ (rhs - H @ qdd_p))
        return qdd_p + N @ z

    def forward_dynamics_lstsq_kkt(self, q, v, tau, wrenches=None):
        """Second route: least-squares solve of the full (singular) KKT matrix."""
        H = self.mass_matrix(q)
        C = self.bias(q, v, wrenches)
        K = self.constraint_jacobian(q)
        k = self.constraint_bias(q, v)
        m = K.shape[0]
        A = np.block([[H, K.T], [K, np.zeros((m, m))]])
        b = np.concatenate([np.asarray(tau, dtype=float) - C, k])
        x = np.linalg.lstsq(A, b, rcond=1e-12)[0]
        return x[:self.nv]

    def inverse_dynamics_projected(self, q, v, qdd, G, wrenches=None):
        H = self.mass_matrix(q)
        C = self.bias(q, v, wrenches)
        return G.T @ (H @ np.asarray(qdd, dtype=float) + C)

    def _split(self, independent_names):
        """(independent, dependent) velocity indices; independent_names are joint names (all their
        velocities) or velocity indices (a joint may then be split)."""
        names = list(independent_names)
        y = (self.v_index(names) if names and isinstance(names[0], str)
             else np.array(names, dtype=int))
        d = np.array([i for i in range(self.nv) if i not in set(y.tolist())], dtype=int)
        return y, d

    def null_space_G(self, q, independent_names):
        """G (nv x ny) with v = G y, y = velocities of independent_names (in that order)."""
        K = self.constraint_jacobian(q)
        y, d = self._split(independent_names)
        G = np.zeros((self.nv, y.size))
        G[y, np.arange(y.size)] = 1.0
        if d.size:
            Kd = K[:, d]
            if self._svd(Kd)[3] < d.size:
                raise ValueError("dependent velocities not determined by K (bad independent set)")
            G[d, :] = -np.linalg.lstsq(Kd, K[:, y], rcond=None)[0]
        res = np.abs(K @ G).max() if K.size else 0.0
        if res > 1e-8 * max(1.0, np.abs(K).max(initial=0.0)):
            raise ValueError(f"independent set incompatible with constraints (|K G| = {res:g})")
        return G

    def explicit_bias_g(self, q, v, independent_names):
        """g with g[y] = 0 and K g = k, so that qdd = G ydd + g."""
        K = self.constraint_jacobian(q)
        k = self.constraint_bias(q, v)
        y, d = self._split(independent_names)
        g = np.zeros(self.nv)
        if d.size:
            g[d] = np.linalg.lstsq(K[:, d], k, rcond=None)[0]
        return g

    def osim_inverse(self, q, G, links):
        """J_y H_y^{-1} J_y^T, J = stacked LOCAL link Jacobians, J_y = J G, H_y = G^T H G."""
        J = np.vstack([self.frame_jacobian(q, l) for l in links])
        Jy = J @ G
        Hy = G.T @ self.mass_matrix(q) @ G
        return Jy @ np.linalg.solve(Hy, Jy.T)

    def solve_closure(self, q, independent_names, tol=1e-13, max_iter=50):
        """Newton on the dependent (scalar) coordinates so that loop_residual(q) = 0."""
        q = np.array(q, dtype=float)
        y, d = self._split(independent_names)
        dep = [n for n in self.joint_names if n not in set(independent_names)]
        for n in dep:
            if self._pj[n]["kind"] == "floating":
                raise ValueError("solve_closure: floating dependent joint")
        qidx = np.array([self._q_slices[n].start for n in dep], dtype=int)
        for _ in range(max_iter):
            phi = self.loop_residual(q)
            if np.abs(phi).max() < tol:
                return q
            Kd = self.constraint_jacobian(q)[:, d]
            q[qidx] -= np.linalg.lstsq(Kd, phi, rcond=None)[0]
        if np.abs(self.loop_residual(q)).max() > 1e3 * tol:
            raise RuntimeError("closure did not converge")
        return q


def independent_oracle(text, urdf):
    """A URDF+ of the pair built without the library: each closure frame resolved by Pinocchio's
    frames of the original URDF (frame -> parent joint's child link + placement), the joint
    replacements by hand."""
    closures = yaml.safe_load(text)
    root = etree.parse(urdf, etree.XMLParser(remove_comments=True)).getroot()
    tree = pin.buildModelFromXML(etree.tostring(root).decode())
    child_link = {j.get('name'): j.find('child').get('link') for j in root.findall('joint')}
    for (a, b), kind in zip(closures['closed_loop'], closures['type']):
        loop = etree.SubElement(root, 'loop', name=f'{a}-{b}',
                                type={'6D': 'fixed', '3D': 'spherical'}[kind.upper()])
        for tag, name in (('predecessor', a), ('successor', b)):
            frame = tree.frames[tree.getFrameId(name)]
            side = etree.SubElement(loop, tag, link=child_link[tree.names[frame.parentJoint]])
            rpy = ' '.join(f'{x:.17g}' for x in pin.rpy.matrixToRpy(frame.placement.rotation))
            xyz = ' '.join(f'{x:.17g}' for x in frame.placement.translation)
            etree.SubElement(side, 'origin', xyz=xyz, rpy=rpy)
    for name, kind in zip(closures.get('joint_name', []), closures.get('joint_type', [])):
        joint = root.find(f"joint[@name='{name}']")
        if kind in ('FIXED', 'SPHERICAL'):
            joint.set('type', kind.lower())
            continue
        assert kind == 'UJOINT_YX'
        child = joint.find('child').get('link')
        joint.set('name', f'{name}_a')
        joint.set('type', 'continuous')
        joint.find('axis').set('xyz', '0 1 0')
        joint.find('child').set('link', f'{name}_cross')
        root.append(etree.fromstring(f'<link name="{name}_cross"/>'))
        root.append(etree.fromstring(
            f'<joint name="{name}_b" type="continuous"><parent link="{name}_cross"/><child '
            f'link="{child}"/><axis xyz="1 0 0"/></joint>'))
    return KKTOracle(etree.tostring(root).decode())
