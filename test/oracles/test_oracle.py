"""Self-checks of the independent KKT oracle (test/oracle.py).

Every model here is an inline URDF+ string; expected values are derived by
hand, by finite differences of positions, or by a second solver route
(Pinocchio's own constrained dynamics), never by the library under test.
"""

import os
import sys

import numpy as np
import pinocchio as pin
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from oracle import KKTOracle, rpy_to_matrix  # noqa: E402

G0 = 9.81


def fmt(x):
    return " ".join(repr(float(v)) for v in np.ravel(x))


def inertial(m, com, I, rpy=(0, 0, 0)):
    ixx, ixy, ixz, iyy, iyz, izz = (float(x) for x in I)
    m = float(m)
    return (f'<inertial><origin xyz="{fmt(com)}" rpy="{fmt(rpy)}"/><mass value="{m!r}"/>'
            f'<inertia ixx="{ixx!r}" ixy="{ixy!r}" ixz="{ixz!r}" iyy="{iyy!r}" iyz="{iyz!r}" '
            f'izz="{izz!r}"/></inertial>')


def quat_to_R(x, y, z, w):
    n = np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def unskew(S):
    return np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]]) / 2


def fd_link_jacobian(o, q, link, h=1e-6):
    """LOCAL 6 x nv Jacobian of a link frame from finite differences of its pose only."""
    J = np.zeros((6, o.nv))
    M0 = o.link_placement(q, link)
    R0 = M0.rotation
    for i in range(o.nv):
        e = np.zeros(o.nv)
        e[i] = 1.0
        Mp = o.link_placement(o.integrate(q, e, h), link)
        Mm = o.link_placement(o.integrate(q, e, -h), link)
        J[:3, i] = R0.T @ (Mp.translation - Mm.translation) / (2 * h)
        J[3:, i] = unskew(R0.T @ (Mp.rotation - Mm.rotation) / (2 * h))
    return J


# ============================================================================
# Models
# ============================================================================

# --- fixed-base 2-link pendulum (axes along y, links along x) ---------------
P_M1, P_C1, P_L1, P_I1 = 1.3, 0.45, 0.9, 0.07
P_M2, P_C2, P_I2 = 0.8, 0.35, 0.05
PEND = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="l1">{inertial(P_M1, (P_C1, 0.05, 0.0), (0.02, 0.003, 0.001, P_I1, -0.004, 0.06),
                            rpy=(0, 0.3, 0))}</link>
  <link name="l2">{inertial(P_M2, (P_C2, -0.02, 0.0), (0.01, -0.002, 0.002, P_I2, 0.001, 0.045),
                            rpy=(0, -0.7, 0))}</link>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="{P_L1!r} 0 0"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="j_tip" type="fixed"><parent link="l2"/><child link="tip"/>
    <origin xyz="0.7 0.1 -0.05" rpy="0.4 -0.3 1.1"/></joint>
</robot>"""


def pendulum_hand(q, v):
    t1, t2 = q
    d1, d2 = v
    c2, s2 = np.cos(t2), np.sin(t2)
    H11 = P_I1 + P_M1 * P_C1 ** 2 + P_I2 + P_M2 * (P_L1 ** 2 + P_C2 ** 2 + 2 * P_L1 * P_C2 * c2)
    H12 = P_I2 + P_M2 * (P_C2 ** 2 + P_L1 * P_C2 * c2)
    H22 = P_I2 + P_M2 * P_C2 ** 2
    H = np.array([[H11, H12], [H12, H22]])
    h = P_M2 * P_L1 * P_C2 * s2
    cor = np.array([-h * (2 * d1 * d2 + d2 ** 2), h * d1 ** 2])
    grav = np.array([
        -G0 * (P_M1 * P_C1 * np.cos(t1) + P_M2 * (P_L1 * np.cos(t1) + P_C2 * np.cos(t1 + t2))),
        -G0 * P_M2 * P_C2 * np.cos(t1 + t2)])
    return H, cor + grav


# --- geared single joint with a rotor sibling on the fixed base ------------
GR_N = 6.0
GR_M, GR_COM = 1.5, np.array([0.3, 0.1, 0.2])
GR_I = (0.02, 0.001, 0.002, 0.03, 0.003, 0.04)
GR_IROT = 0.002
GR_ILINK = GR_I[5] + GR_M * (GR_COM[0] ** 2 + GR_COM[1] ** 2)


def geared_xml(mode="coupling"):
    mimic = f'<mimic joint="j_link" multiplier="{GR_N!r}" offset="0"/>' if mode == "mimic" else ""
    coupling = (f'<coupling name="gear"><predecessor link="link"/><successor link="rotor"/>'
                f'<ratio value="{GR_N!r}"/></coupling>') if mode == "coupling" else ""
    return f"""<robot name="geared">
  <link name="base"/>
  <link name="link">{inertial(GR_M, GR_COM, GR_I)}</link>
  <link name="rotor">{inertial(0.3, (0, 0, 0.05), (0.001, 0, 0, 0.001, 0, GR_IROT))}</link>
  <joint name="j_link" type="revolute"><parent link="base"/><child link="link"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>\
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j_rotor" type="continuous" independent="false"><parent link="base"/>\
<child link="rotor"/>
    <origin xyz="0.05 0 0"/><axis xyz="0 0 -1"/>{mimic}</joint>
  {coupling}
</robot>"""


# --- belt: rotor on the thigh coupled to knee + ankle -----------------------
BELT = f"""<robot name="belt">
  <link name="hip"/>
  <link name="thigh">{inertial(1.0, (0, 0, -0.2), (0.01, 0, 0, 0.01, 0, 0.002))}</link>
  <link name="shank">{inertial(0.5, (0, 0, -0.2), (0.01, 0, 0, 0.01, 0, 0.002))}</link>
  <link name="foot">{inertial(0.2, (0.05, 0, 0), (0.001, 0, 0, 0.001, 0, 0.001))}</link>
  <link name="knee_rotor">{inertial(0.1, (0, 0, 0), (0.0001, 0, 0, 0.0002, 0, 0.0001))}</link>
  <link name="ankle_rotor">{inertial(0.1, (0, 0, 0), (0.0001, 0, 0, 0.0002, 0, 0.0001))}</link>
  <joint name="hip_j" type="revolute"><parent link="hip"/><child link="thigh"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="knee" type="revolute"><parent link="thigh"/><child link="shank"/>
    <origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="ankle" type="revolute"><parent link="shank"/><child link="foot"/>
    <origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="knee_rotor_j" type="continuous" independent="false"><parent link="thigh"/>
    <child link="knee_rotor"/><axis xyz="0 1 0"/></joint>
  <link name="rotor_mount"/>
  <link name="shank_cover">{inertial(0.05, (0, 0, 0), (0.0001, 0, 0, 0.0001, 0, 0.0001))}</link>
  <joint name="mount_fix" type="fixed"><parent link="thigh"/><child link="rotor_mount"/>
    <origin xyz="0 0.02 -0.1" rpy="0.1 0 0"/></joint>
  <joint name="cover_fix" type="fixed"><parent link="shank"/><child link="shank_cover"/>
    <origin xyz="0.03 0 -0.1"/></joint>
  <joint name="ankle_rotor_j" type="continuous" independent="false"><parent link="rotor_mount"/>
    <child link="ankle_rotor"/><origin xyz="0 0.05 0"/><axis xyz="0 1 0"/></joint>
  <coupling name="knee_belt"><predecessor link="shank_cover"/><successor link="knee_rotor"/>
    <ratio value="2.5"/></coupling>
  <coupling name="ankle_belt"><predecessor link="foot"/><successor link="ankle_rotor"/>\
<ratio value="3.0"/></coupling>
</robot>"""


# --- planar four-bar (x-z plane, axes y), closed at q = 0 -------------------
def fourbar_xml(loop_attr="link"):
    return f"""<robot name="fourbar">
  <link name="ground"/>
  <link name="crank">{inertial(0.6, (0.15, 0.0, 0.2),
                               (0.01, 0.0, 0.001, 0.012, 0.0, 0.004))}</link>
  <link name="coupler">{inertial(0.9, (0.3, -0.02, 0.05),
                                 (0.003, 0.0, 0.0, 0.03, 0.0, 0.028))}</link>
  <link name="rocker">{inertial(0.7, (-0.05, 0.0, 0.25),
                                (0.015, 0.0, -0.002, 0.016, 0.0, 0.003))}</link>
  <joint name="j_crank" type="revolute"><parent link="ground"/><child link="crank"/>
    <origin xyz="0 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/>\
</joint>
  <joint name="j_coupler" type="revolute" independent="false"><parent link="crank"/>\
<child link="coupler"/>
    <origin xyz="0.3 0.1 0.4"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j_rocker" type="revolute" independent="false"><parent link="ground"/>\
<child link="rocker"/>
    <origin xyz="1.0 0.2 0"/><axis xyz="0 1 0"/>\
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <loop name="closure" type="revolute">
    <predecessor {loop_attr}="coupler"><origin xyz="0.6 -0.05 0.1" rpy="0 0.4 0"/></predecessor>
    <successor {loop_attr}="rocker"><origin xyz="-0.1 -0.15 0.5" rpy="0 -0.2 0"/></successor>
    <axis xyz="0 1 0"/>
  </loop>
</robot>"""


# --- floating base with one (continuous) child ------------------------------
FB_MB, FB_CB = 3.0, np.array([0.05, -0.02, 0.1])
FB_IB = np.array([[0.10, 0.01, -0.02], [0.01, 0.12, 0.015], [-0.02, 0.015, 0.09]])
FB_MA, FB_CA = 0.8, np.array([0.0, 0.1, 0.25])
FB_IA = np.array([[0.02, 0.002, 0.0], [0.002, 0.025, -0.003], [0.0, -0.003, 0.01]])
FB_AXIS = np.array([0.6, 0.0, 0.8])


def sym6(I):
    return (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])


def floating_xml(child_type="continuous"):
    lim = ('<limit lower="-10" upper="10" effort="1" velocity="1"/>' if child_type == "revolute"
           else "")
    return f"""<robot name="floater">
  <link name="world"/>
  <link name="base">{inertial(FB_MB, FB_CB, sym6(FB_IB))}</link>
  <link name="arm">{inertial(FB_MA, FB_CA, sym6(FB_IA))}</link>
  <link name="hand"/>
  <joint name="float" type="floating"><parent link="world"/><child link="base"/></joint>
  <joint name="shoulder" type="{child_type}"><parent link="base"/><child link="arm"/>
    <origin xyz="0.2 -0.1 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="{fmt(FB_AXIS)}"/>{lim}</joint>
  <joint name="wrist" type="fixed"><parent link="arm"/><child link="hand"/>
    <origin xyz="0.05 0.02 0.4" rpy="-0.5 0.25 0.9"/></joint>
</robot>"""


# --- spatial mechanism with every loop type (for k / K checks) --------------
def spatial_xml(floating=False, loops=None):
    """Two spatial chains off a common root; `loops` = list of (name, type, pred, succ,
    pred_origin(xyz,rpy), succ_origin(xyz,rpy), axis)."""
    rng = np.random.default_rng(42)
    links, joints = [], []
    root = "ground"
    links.append('<link name="ground">'
                 f'{inertial(2.0, (0.1, 0, 0), (0.1, 0, 0, 0.1, 0, 0.1))}</link>')
    if floating:
        links.append('<link name="world"/>')
        joints.append('<joint name="float" type="floating"><parent link="world"/><child '
                      'link="ground"/></joint>')
    spec = [("a1", root, "revolute"), ("a2", "a1", "continuous"), ("a3", "a2", "prismatic"),
            ("b1", root, "revolute"), ("b2", "b1", "prismatic"), ("b3", "b2", "revolute")]
    for name, parent, jt in spec:
        com = rng.uniform(-0.2, 0.2, 3)
        A = rng.normal(size=(3, 3))
        I = 0.02 * (A @ A.T) + 0.01 * np.eye(3)
        links.append(f'<link name="{name}">{inertial(rng.uniform(0.5, 2), com, sym6(I))}</link>')
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        lim = '<limit lower="-3" upper="3" effort="1" velocity="1"/>' if jt != "continuous" else ""
        joints.append(
            f'<joint name="j_{name}" type="{jt}"><parent link="{parent}"/><child link="{name}"/>'
            f'<origin xyz="{fmt(rng.uniform(-0.4, 0.4, 3))}" rpy="{fmt(rng.uniform(-1, 1, 3))}"/>'
            f'<axis xyz="{fmt(axis)}"/>{lim}</joint>')
    loop_xml = []
    for (name, lt, pred, succ, po, so, axis) in (loops or []):
        loop_xml.append(
            f'<loop name="{name}" type="{lt}">'
            f'<predecessor link="{pred}"><origin xyz="{fmt(po[0])}" '
            f'rpy="{fmt(po[1])}"/></predecessor><successor link="{succ}"><origin '
            f'xyz="{fmt(so[0])}" rpy="{fmt(so[1])}"/></successor><axis xyz="{fmt(axis)}"/></loop>')
    return '<robot name="spatial">' + "".join(links + joints + loop_xml) + "</robot>"


def all_loop_types():
    rng = np.random.default_rng(7)
    out = []
    for i, lt in enumerate(["revolute", "fixed", "prismatic", "continuous"]):
        pred, succ = [("a3", "b3"), ("a2", "b3"), ("b2", "a3"), ("a1", "b2")][i]
        ax = rng.normal(size=3)
        out.append((f"L{i}", lt, pred, succ,
                    (rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3)),
                    (rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3)), ax / np.linalg.norm(ax)))
    return out


def closed_loop(o_open, q, name, lt, pred, succ, po, axis, alpha=0.37):
    """Successor origin (xyz, rpy) that closes loop `name` at configuration q."""
    oMa = o_open.link_placement(q, pred)
    oMp = oMa * pin.SE3(rpy_to_matrix(*po[1]), np.asarray(po[0]))
    if lt in ("revolute", "continuous"):
        J = pin.SE3(pin.exp3(alpha * np.asarray(axis)), np.zeros(3))
    elif lt == "prismatic":
        J = pin.SE3(np.eye(3), alpha * np.asarray(axis))
    else:
        J = pin.SE3.Identity()
    oMs = oMp * J
    bMs = o_open.link_placement(q, succ).inverse() * oMs
    return (np.array(bMs.translation), pin.rpy.matrixToRpy(bMs.rotation))


# ============================================================================
# (0) parsing / layout
# ============================================================================

def test_rpy_matches_pinocchio():
    rng = np.random.default_rng(0)
    for _ in range(10):
        r = rng.uniform(-3, 3, 3)
        assert np.allclose(rpy_to_matrix(*r), pin.rpy.rpyToMatrix(*r), atol=1e-14)


def test_parse_extras_and_layout():
    o = KKTOracle(BELT)
    assert set(o.joint_names) == {"hip_j", "knee", "ankle", "knee_rotor_j", "ankle_rotor_j"}
    assert o.independent_joint_names == [n for n in o.joint_names if "rotor" not in n]
    K = o.constraint_jacobian(np.zeros(o.nq))
    assert K.shape == (2, 5)
    ix = {n: o.v_slice(n).start for n in o.joint_names}
    # knee_belt: NCA(shank_cover, knee_rotor) = thigh (cover fixed to shank): 2.5 v_knee -
    # v_knee_rotor
    exp0 = np.zeros(5)
    exp0[ix["knee"]], exp0[ix["knee_rotor_j"]] = 2.5, -1.0
    # ankle_belt: NCA(foot, ankle_rotor) = thigh (rotor hangs from a fixed mount on the thigh):
    # 3 (v_knee + v_ankle) - v_ankle_rotor
    exp1 = np.zeros(5)
    exp1[ix["knee"]], exp1[ix["ankle"]], exp1[ix["ankle_rotor_j"]] = 3.0, 3.0, -1.0
    assert np.array_equal(K, np.vstack([exp0, exp1]))
    assert np.array_equal(o.constraint_bias(np.zeros(5), np.ones(5)), np.zeros(2))
    q = np.zeros(5)
    q[o.q_slice("knee")], q[o.q_slice("ankle")] = 0.2, -0.5
    q[o.q_slice("ankle_rotor_j")] = 3.0 * (0.2 - 0.5)
    q[o.q_slice("knee_rotor_j")] = 2.5 * 0.2 + 0.1
    assert np.allclose(o.loop_residual(q), [-0.1, 0.0], atol=1e-15)


def test_belt_dynamics_consistency():
    o = KKTOracle(BELT)
    y = o.independent_joint_names
    rng = np.random.default_rng(20)
    for _ in range(5):
        q = o.random_configuration(rng)
        q = o.solve_closure(q, y)
        assert np.abs(o.loop_residual(q)).max() < 1e-14
        G = o.null_space_G(q, y)
        v, tau = G @ rng.normal(size=len(y)), rng.normal(size=o.nv)
        qdd = o.forward_dynamics(q, v, tau)
        scale = max(1.0, np.abs(qdd).max())       # a light rotor's acceleration reaches ~1e4
        assert np.abs(o.constraint_jacobian(q) @ qdd).max() < 1e-14 * scale
        assert np.allclose(o.inverse_dynamics_projected(q, v, qdd, G), G.T @ tau, atol=1e-11)
        # rotors spin at ratio * (sum of the predecessor path) also in acceleration
        assert abs(qdd[o.v_slice("ankle_rotor_j")][0]
                   - 3.0
                   * (qdd[o.v_slice("knee")][0] + qdd[o.v_slice("ankle")][0])) < 1e-14 * scale


def test_layout_permutation():
    o = KKTOracle(fourbar_xml())
    rng = np.random.default_rng(1)
    q, v = rng.normal(size=3), rng.normal(size=3)
    H, C, K, k = o.mass_matrix(q), o.bias(q, v), o.constraint_jacobian(q), o.constraint_bias(q, v)
    names = list(o.joint_names)
    perm = [2, 0, 1]
    o.set_layout([names[i] for i in perm])
    qp, vp = q[perm], v[perm]
    assert np.allclose(o.mass_matrix(qp), H[np.ix_(perm, perm)], atol=1e-14)
    assert np.allclose(o.bias(qp, vp), C[perm], atol=1e-13)
    assert np.allclose(o.constraint_jacobian(qp), K[:, perm], atol=1e-14)
    assert np.allclose(o.constraint_bias(qp, vp), k, atol=1e-13)
    with pytest.raises(ValueError):
        o.set_layout(names[:2])


def test_path_and_string_inputs(tmp_path):
    p = tmp_path / "fb.urdf"
    p.write_text(fourbar_xml())
    a, b = KKTOracle(str(p)), KKTOracle(fourbar_xml("name"))
    q = np.array([0.1, -0.2, 0.3])
    assert np.array_equal(a.constraint_jacobian(q), b.constraint_jacobian(q))


# ============================================================================
# (1) pendulum: H, C by hand; RNEA consistency
# ============================================================================

def test_pendulum_hand_H_C():
    o = KKTOracle(PEND)
    assert o.joint_names == ["j1", "j2"]
    rng = np.random.default_rng(2)
    for _ in range(20):
        q, v = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2) * 2
        Hh, Ch = pendulum_hand(q, v)
        assert np.allclose(o.mass_matrix(q), Hh, rtol=0, atol=1e-12)
        assert np.allclose(o.bias(q, v), Ch, rtol=0, atol=1e-11)
        a = rng.normal(size=2)
        assert np.allclose(o.rnea(q, v, a), Hh @ a + Ch, atol=1e-11)
        qdd = o.forward_dynamics(q, v, np.array([0.3, -0.2]))
        assert np.allclose(Hh @ qdd + Ch, [0.3, -0.2], atol=1e-10)


def test_gravity_setter():
    o = KKTOracle(PEND)
    q, v = np.array([0.3, 0.4]), np.zeros(2)
    o.gravity = (0, 0, -2 * G0)
    assert np.allclose(o.bias(q, v), 2 * pendulum_hand(q, v)[1], atol=1e-11)
    o.gravity = (0, 0, 0)
    assert np.allclose(o.bias(q, v), 0, atol=1e-14)


def test_rnea_consistency_random_models():
    rng = np.random.default_rng(3)
    for xml in (PEND, floating_xml(), spatial_xml(True)):
        o = KKTOracle(xml)
        for _ in range(5):
            q = o.random_configuration(rng)
            v, a = rng.normal(size=o.nv), rng.normal(size=o.nv)
            H, C = o.mass_matrix(q), o.bias(q, v)
            assert np.allclose(H, H.T, atol=0)
            assert np.all(np.linalg.eigvalsh(H) > 0)
            tau = pin.rnea(o.model, o.model.createData(), o.q_to_pin(q), o.v_to_pin(v),
                           o.v_to_pin(a))
            assert np.allclose(H @ a + C, o.v_from_pin(tau), atol=1e-10)


# ============================================================================
# (2) geared joint: closed form (I_link + N^2 I_rot) qdd = tau_link + N tau_rot
# ============================================================================

@pytest.mark.parametrize("mode", ["coupling", "mimic"])
def test_geared_closed_form(mode):
    o = KKTOracle(geared_xml(mode))
    il, ir = o.v_slice("j_link").start, o.v_slice("j_rotor").start
    K = o.constraint_jacobian(np.zeros(2))
    row = np.zeros(2)
    row[il], row[ir] = GR_N, -1.0
    assert np.allclose(K, (1 if mode == "coupling" else -1) * row[None, :], atol=0)
    rng = np.random.default_rng(4)
    Ieff = GR_ILINK + GR_N ** 2 * GR_IROT
    for _ in range(10):
        q = np.zeros(2)
        q[il] = rng.uniform(-2, 2)
        q[ir] = GR_N * q[il]
        v = np.zeros(2)
        v[il] = rng.normal() * 3
        v[ir] = GR_N * v[il]
        tau = rng.normal(size=2)
        qdd = o.forward_dynamics(q, v, tau)
        expect = (tau[il] + GR_N * tau[ir]) / Ieff
        assert abs(qdd[il] - expect) < 1e-12
        assert abs(qdd[ir] - GR_N * expect) < 1e-11
        assert np.allclose(o.forward_dynamics_lstsq_kkt(q, v, tau), qdd, atol=1e-10)
        G = o.null_space_G(q, ["j_link"])
        assert np.allclose(G[:, 0], [1, GR_N] if il == 0 else [GR_N, 1], atol=1e-14)
        Hy = G.T @ o.mass_matrix(q) @ G
        assert abs(Hy[0, 0] - Ieff) < 1e-12
        assert abs(o.inverse_dynamics_projected(q, v, qdd, G)[0]
                   - (tau[il] + GR_N * tau[ir])) < 1e-11
        # Lambda^{-1} of link and rotor (both frames on their spin axes)
        Om = o.osim_inverse(q, G, ["link", "rotor"])
        Jy = np.zeros(12)
        Jy[5], Jy[11] = 1.0, -GR_N
        assert np.allclose(Om, np.outer(Jy, Jy) / Ieff, atol=1e-12)


# ============================================================================
# (3) four-bar
# ============================================================================

def fourbar_closed_state(o, rng, crank):
    q = np.zeros(3)
    q[o.q_slice("j_crank")] = crank
    q = o.solve_closure(q, ["j_crank"])
    G = o.null_space_G(q, ["j_crank"])
    v = G @ np.array([rng.normal() * 2])
    return q, v


def test_fourbar_structure_and_redundancy():
    o = KKTOracle(fourbar_xml())
    assert np.abs(o.loop_residual(np.zeros(3))).max() < 1e-15
    rng = np.random.default_rng(5)
    for _ in range(10):
        q, v = fourbar_closed_state(o, rng, rng.uniform(-0.3, 0.3))
        assert np.abs(o.loop_residual(q)).max() < 1e-13
        K = o.constraint_jacobian(q)
        assert K.shape == (5, 3)
        s = np.linalg.svd(K, compute_uv=False)
        assert s[1] > 1e-2 and s[2] < 1e-14
        assert o.constraint_rank(q) == 2
        G = o.null_space_G(q, ["j_crank"])
        assert np.abs(K @ G).max() < 1e-13
        assert G[o.v_slice("j_crank").start, 0] == 1.0
        # null space of K = null space of d(phi)/dq at closure (FD of positions)
        h = 1e-6
        Jphi = np.column_stack([(o.loop_residual(q + h * e) - o.loop_residual(q - h * e)) / (2 * h)
                                for e in np.eye(3)])
        assert np.abs(Jphi @ G).max() < 1e-8
        # other choices of independent joint give the same motion direction
        G2 = o.null_space_G(q, ["j_rocker"])
        assert np.abs(K @ G2).max() < 1e-13
        assert abs(abs(G[:, 0] @ G2[:, 0]) - np.linalg.norm(G) * np.linalg.norm(G2)) < 1e-10
        with pytest.raises(ValueError):
            o.null_space_G(q, ["j_crank", "j_rocker"])  # 2 independent for 1 dof


def test_fourbar_k_finite_differences():
    o = KKTOracle(fourbar_xml())
    rng = np.random.default_rng(6)
    for _ in range(5):
        q0, v0 = fourbar_closed_state(o, rng, rng.uniform(-0.3, 0.3))
        k = o.constraint_bias(q0, v0)
        # (a) generic: d/dt K(q + t v) v = Kdot v = -k
        h = 1e-5
        Kdv = ((o.constraint_jacobian(q0 + h * v0) - o.constraint_jacobian(q0 - h * v0)) @ v0
               / (2 * h))
        assert np.allclose(-Kdv, k, atol=1e-8)
        # (b) along a constraint-consistent trajectory crank(t) = c0 + w t + a t^2 / 2
        c0, w, acc = q0[o.q_slice("j_crank")][0], v0[o.v_slice("j_crank")][0], rng.normal()
        ic = o.q_slice("j_crank").start

        def traj(t, qg):
            qg = qg.copy()
            qg[ic] = c0 + w * t + 0.5 * acc * t * t
            return o.solve_closure(qg, ["j_crank"], tol=1e-15)

        h = 1e-4
        qp, qm = traj(h, q0), traj(-h, q0)
        qd_fd = (qp - qm) / (2 * h)
        qdd_fd = (qp - 2 * q0 + qm) / h ** 2
        assert np.allclose(qd_fd, v0, atol=1e-7)
        K = o.constraint_jacobian(q0)
        assert np.allclose(K @ qdd_fd, k, atol=2e-6)
        # and the explicit form: qdd = G ydd + g
        g = o.explicit_bias_g(q0, v0, ["j_crank"])
        G = o.null_space_G(q0, ["j_crank"])
        assert np.allclose(G @ [acc] + g, qdd_fd, atol=2e-6)
        assert np.allclose(K @ g, k, atol=1e-12)


def test_fourbar_forward_dynamics_routes():
    o = KKTOracle(fourbar_xml())
    rng = np.random.default_rng(7)
    ic = o.v_slice("j_crank").start
    for _ in range(10):
        q, v = fourbar_closed_state(o, rng, rng.uniform(-0.3, 0.3))
        tau = rng.normal(size=3)
        wr = {"coupler": (rng.normal(size=3), rng.normal(size=3))}
        qdd = o.forward_dynamics(q, v, tau, wr)
        H, C = o.mass_matrix(q), o.bias(q, v, wr)
        K, k = o.constraint_jacobian(q), o.constraint_bias(q, v)
        assert np.allclose(K @ qdd, k, atol=1e-11)
        # route 2: least-squares solve of the singular 8x8 KKT system
        assert np.allclose(o.forward_dynamics_lstsq_kkt(q, v, tau, wr), qdd, atol=1e-9)
        # route 3: explicit projection with G, g
        G, g = o.null_space_G(q, ["j_crank"]), o.explicit_bias_g(q, v, ["j_crank"])
        ydd = np.linalg.solve(G.T @ H @ G, G.T @ (tau - C - H @ g))
        assert np.allclose(G @ ydd + g, qdd, atol=1e-10)
        assert abs(ydd[0] - qdd[ic]) < 1e-10
        # tau_y = G^T tau is all that matters: projected inverse dynamics reproduces it
        assert np.allclose(o.inverse_dynamics_projected(q, v, qdd, G, wr), G.T @ tau, atol=1e-10)
        # route 4: Pinocchio's own KKT solver with the 2 independent rows (x, z position);
        # it solves J a = -gamma (gamma = Jdot v), so gamma = -k.  No wrench here.
        rows = [0, 2]
        Kp = np.zeros((2, 3))
        Kp[:, o._vperm] = K[rows]
        a_pin = pin.forwardDynamics(o.model, o.model.createData(), o.q_to_pin(q), o.v_to_pin(v),
                                    o.v_to_pin(tau), Kp, -k[rows], 0.0)
        assert np.allclose(o.v_from_pin(a_pin), o.forward_dynamics(q, v, tau), atol=1e-10)


def pinocchio_constraint(m, contact_type, joint1, placement1, joint2, placement2):
    """(data, models, datas, settings) for pin.constraintDynamics with one constraint between two
    joint-attached frames (LOCAL), nearly exact proximal settings."""
    cm = pin.RigidConstraintModel(contact_type, m, joint1, placement1, joint2, placement2,
                                  pin.ReferenceFrame.LOCAL)
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    data = m.createData()
    pin.initConstraintDynamics(m, data, cms, cds)
    return data, cms, cds, pin.ProximalSettings(1e-14, 1e-10, 200)


def test_fourbar_against_pinocchio_constraint_dynamics():
    """Independent check of k: Pinocchio's proximal constraint dynamics with a 3D point
    contact between the two loop frames (the angular rows are inactive in the plane)."""
    o = KKTOracle(fourbar_xml())
    m = o.model
    cpl = m.frames[m.getFrameId("coupler", pin.FrameType.BODY)]
    rck = m.frames[m.getFrameId("rocker", pin.FrameType.BODY)]
    P = cpl.placement * pin.SE3(rpy_to_matrix(0, 0.4, 0), np.array([0.6, -0.05, 0.1]))
    S = rck.placement * pin.SE3(rpy_to_matrix(0, -0.2, 0), np.array([-0.1, -0.15, 0.5]))
    data, cms, cds, prox = pinocchio_constraint(m, pin.ContactType.CONTACT_3D, cpl.parentJoint, P,
                                                rck.parentJoint, S)
    rng = np.random.default_rng(8)
    for _ in range(5):
        q, v = fourbar_closed_state(o, rng, rng.uniform(-0.3, 0.3))
        tau = rng.normal(size=3)
        a_pin = pin.constraintDynamics(m, data, o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau), cms,
                                       cds, prox)
        assert np.allclose(o.v_from_pin(a_pin), o.forward_dynamics(q, v, tau), atol=1e-9)


def rk4(o, q, v, dt, tau, wrenches=None):
    """RK4 on (q, v) for scalar-coordinate models (no quaternions)."""
    def f(q, v):
        return v, o.forward_dynamics(q, v, tau, wrenches)
    k1q, k1v = f(q, v)
    k2q, k2v = f(q + 0.5 * dt * k1q, v + 0.5 * dt * k1v)
    k3q, k3v = f(q + 0.5 * dt * k2q, v + 0.5 * dt * k2v)
    k4q, k4v = f(q + dt * k3q, v + dt * k3v)
    return (q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q),
            v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


def test_fourbar_energy_conservation():
    o = KKTOracle(fourbar_xml())
    q = np.zeros(3)
    v = o.null_space_G(q, ["j_crank"]) @ [0.5]
    E0 = o.energy(q, v)
    dt, tau = 1e-3, np.zeros(3)
    for _ in range(300):  # 0.3 s, tau = 0, gravity on
        q, v = rk4(o, q, v, dt, tau)
    assert abs(o.energy(q, v) - E0) < 1e-9 * max(1.0, abs(E0))
    assert np.abs(o.loop_residual(q)).max() < 1e-9
    assert np.abs(o.constraint_jacobian(q) @ v).max() < 1e-8
    assert np.abs(q).max() > 0.5  # it really moved
    # a deliberately wrong k (sign flip) must be caught by the same checks
    bad = KKTOracle(fourbar_xml())
    bad.constraint_bias = lambda q, v, _f=bad.constraint_bias: -_f(q, v)
    q, v = np.zeros(3), bad.null_space_G(np.zeros(3), ["j_crank"]) @ [0.5]
    for _ in range(300):
        q, v = rk4(bad, q, v, dt, tau)
    assert np.abs(bad.loop_residual(q)).max() > 1e-2


def test_fourbar_osim_inverse():
    o = KKTOracle(fourbar_xml())
    rng = np.random.default_rng(9)
    for _ in range(5):
        q, _ = fourbar_closed_state(o, rng, rng.uniform(-0.3, 0.3))
        links = ["coupler", "rocker", "crank"]
        O1 = o.osim_inverse(q, o.null_space_G(q, ["j_crank"]), links)
        O2 = o.osim_inverse(q, o.null_space_G(q, ["j_rocker"]), links)
        O3 = o.osim_inverse(q, o.null_space_G(q, ["j_coupler"]), links)
        assert O1.shape == (18, 18)
        assert np.allclose(O1, O1.T, atol=1e-12)
        assert np.allclose(O1, O2, atol=1e-11) and np.allclose(O1, O3, atol=1e-11)
        ev = np.linalg.eigvalsh(O1)
        assert ev.min() > -1e-12 and np.sum(ev > 1e-9) == 1


# ============================================================================
# spatial loops of every type: k by finite differences, closure, simulation
# ============================================================================

@pytest.mark.parametrize("floating", [False, True])
def test_spatial_k_finite_differences(floating):
    o = KKTOracle(spatial_xml(floating, all_loop_types()))
    assert o.constraint_jacobian(o.neutral()).shape == (5 + 6 + 5 + 5, o.nv)
    rng = np.random.default_rng(10)
    for _ in range(10):
        q, v = o.random_configuration(rng), rng.normal(size=o.nv)
        k = o.constraint_bias(q, v)
        h = 1e-5
        Kdv = (o.constraint_jacobian(o.integrate(q, v, h)) -
               o.constraint_jacobian(o.integrate(q, v, -h))) @ v / (2 * h)
        assert np.allclose(-Kdv, k, atol=1e-7 * max(1, np.abs(k).max()))
        # a wrong k (classical vs spatial confusion: drop the v_P x v_rel term) would fail
        assert np.abs(k).max() > 1e-2


def _closed_spatial(floating, lt, seed=11):
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    po = (rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3))
    o_open = KKTOracle(spatial_xml(floating))
    q = o_open.random_configuration(rng, 0.8)
    so = closed_loop(o_open, q, "L", lt, "a3", "b3", po, axis)
    o = KKTOracle(spatial_xml(floating, [("L", lt, "a3", "b3", po, so, axis)]))
    return o, q, axis, po, so


@pytest.mark.parametrize("lt", ["revolute", "continuous", "prismatic", "fixed"])
def test_spatial_closed_loop_simulation(lt):
    o, q, *_ = _closed_spatial(False, lt)
    assert np.abs(o.loop_residual(q)).max() < 1e-12
    K = o.constraint_jacobian(q)
    assert np.linalg.matrix_rank(K) == K.shape[0]
    N = np.linalg.svd(K)[2][K.shape[0]:].T
    rng = np.random.default_rng(12)
    v = N @ rng.normal(size=N.shape[1])
    E0 = o.energy(q, v)
    for _ in range(100):
        q, v = rk4(o, q, v, 1e-3, np.zeros(o.nv))
    assert np.abs(o.loop_residual(q)).max() < 1e-9
    assert abs(o.energy(q, v) - E0) < 1e-8 * max(1, abs(E0))


def test_spatial_fixed_loop_against_pinocchio_6d():
    """Floating base + fixed loop: compare with Pinocchio CONTACT_6D constraint dynamics."""
    o, q, axis, po, so = _closed_spatial(True, "fixed", seed=13)
    m = o.model
    fa = m.frames[m.getFrameId("a3", pin.FrameType.BODY)]
    fb = m.frames[m.getFrameId("b3", pin.FrameType.BODY)]
    P = fa.placement * pin.SE3(rpy_to_matrix(*po[1]), np.asarray(po[0]))
    S = fb.placement * pin.SE3(rpy_to_matrix(*so[1]), np.asarray(so[0]))
    data, cms, cds, prox = pinocchio_constraint(m, pin.ContactType.CONTACT_6D, fa.parentJoint, P,
                                                fb.parentJoint, S)
    rng = np.random.default_rng(14)
    K = o.constraint_jacobian(q)
    N = np.linalg.svd(K)[2][6:].T
    for _ in range(5):
        v = N @ rng.normal(size=N.shape[1])
        tau = rng.normal(size=o.nv)
        a_pin = pin.constraintDynamics(m, data, o.q_to_pin(q), o.v_to_pin(v), o.v_to_pin(tau), cms,
                                       cds, prox)
        assert np.allclose(o.v_from_pin(a_pin), o.forward_dynamics(q, v, tau), atol=1e-8)


# ============================================================================
# (4) continuous joints and the floating base
# ============================================================================

def test_continuous_round_trip_and_equivalence():
    oc, orv = KKTOracle(floating_xml("continuous")), KKTOracle(floating_xml("revolute"))
    # a plain angle for Pinocchio too
    assert (oc.nq, oc.nv, oc.model.nq, oc.model.nv) == (8, 7, 8, 7)
    assert orv.model.nq == 8
    rng = np.random.default_rng(15)
    s = oc.q_slice("shoulder").start
    for _ in range(20):
        q = oc.random_configuration(rng)
        q[s] = rng.uniform(-np.pi + 1e-6, np.pi - 1e-6)
        qp = oc.q_to_pin(q)
        assert qp[oc._pj["shoulder"]["idx_q"]] == q[s]
        assert np.allclose(oc.q_from_pin(qp), q, atol=1e-15)
        v = rng.normal(size=7)
        assert np.allclose(oc.mass_matrix(q), orv.mass_matrix(q), atol=1e-13)
        assert np.allclose(oc.bias(q, v), orv.bias(q, v), atol=1e-12)
        qn = oc.integrate(q, v, 0.1)
        assert (abs(np.angle(np.exp(1j * (qn[s] - q[s] - 0.1 * v[oc.v_slice("shoulder")][0]))))
                < 1e-14)


def test_floating_base_conventions():
    o = KKTOracle(floating_xml())
    assert o.joint_names == ["float", "shoulder"]
    assert o._pj["float"]["kind"] == "floating"
    rng = np.random.default_rng(16)
    for _ in range(5):
        q = o.random_configuration(rng)
        R = quat_to_R(*q[3:7])
        Mb = o.link_placement(q, "base")
        assert (np.allclose(Mb.translation, q[:3], atol=1e-15)
                and np.allclose(Mb.rotation, R, atol=1e-14))
        # v = [linear; angular] in the base frame
        vl = rng.normal(size=3)
        q1 = o.integrate(q, np.r_[vl, 0, 0, 0, 0], 1.0)
        assert np.allclose(q1[:3], q[:3] + R @ vl, atol=1e-14)
        w = rng.normal(size=3)
        h = 1e-6
        Rp = quat_to_R(*o.integrate(q, np.r_[0, 0, 0, w, 0], h)[3:7])
        Rm = quat_to_R(*o.integrate(q, np.r_[0, 0, 0, w, 0], -h)[3:7])
        assert np.allclose(unskew(R.T @ (Rp - Rm) / (2 * h)), w, atol=1e-8)
        # gravity bias at rest: total weight in base frame, moment about the base origin
        C = o.bias(q, np.zeros(7))
        Ma = o.link_placement(q, "arm")
        cb, ca = Mb.act(FB_CB), Ma.act(FB_CA)
        Fw = np.array([0, 0, G0])  # the force the actuators must supply = -gravity
        assert np.allclose(C[:3], R.T @ ((FB_MB + FB_MA) * Fw), atol=1e-12)
        mom = np.cross(cb - q[:3], FB_MB * Fw) + np.cross(ca - q[:3], FB_MA * Fw)
        assert np.allclose(C[3:6], R.T @ mom, atol=1e-12)
        arm_axis_w = Ma.rotation @ FB_AXIS
        assert abs(C[6] - arm_axis_w @ np.cross(ca - Ma.translation, FB_MA * Fw)) < 1e-12


def test_floating_kinetic_energy_by_fd_of_poses():
    o = KKTOracle(floating_xml())
    rng = np.random.default_rng(17)
    h = 1e-6
    for _ in range(5):
        q, v = o.random_configuration(rng), rng.normal(size=7)
        T = 0.0
        for link, m, c, I in (("base", FB_MB, FB_CB, FB_IB), ("arm", FB_MA, FB_CA, FB_IA)):
            Mp, Mm = (o.link_placement(o.integrate(q, v, h), link),
                      o.link_placement(o.integrate(q, v, -h), link))
            M0 = o.link_placement(q, link)
            cdot = (Mp.act(c) - Mm.act(c)) / (2 * h)
            wb = unskew(M0.rotation.T @ (Mp.rotation - Mm.rotation) / (2 * h))
            T += 0.5 * m * cdot @ cdot + 0.5 * wb @ I @ wb
        assert abs(o.kinetic_energy(q, v) - T) < 1e-8


# ============================================================================
# (5) wrenches
# ============================================================================

@pytest.mark.parametrize("xml,links", [(PEND, ["l1", "l2", "tip"]),
                                       (floating_xml(), ["base", "arm", "hand"])])
def test_wrench_equals_JT_f(xml, links):
    o = KKTOracle(xml)
    rng = np.random.default_rng(18)
    for _ in range(5):
        q, v, tau = o.random_configuration(rng), rng.normal(size=o.nv), rng.normal(size=o.nv)
        for link in links:
            f, t = rng.normal(size=3), rng.normal(size=3)
            J = o.frame_jacobian(q, link)
            Jfd = fd_link_jacobian(o, q, link)
            assert np.allclose(J, Jfd, atol=1e-8)
            JTf = Jfd.T @ np.r_[f, t]
            assert np.allclose(o.bias(q, v, {link: (f, t)}), o.bias(q, v) - JTf, atol=1e-7)
            assert np.allclose(o.forward_dynamics(q, v, tau, {link: (f, t)}),
                               o.forward_dynamics(q, v, tau + J.T @ np.r_[f, t]), atol=1e-10)
        # several links at once superpose
        w = {l: (rng.normal(size=3), rng.normal(size=3)) for l in links}
        JT = sum(o.frame_jacobian(q, l).T @ np.r_[w[l][0], w[l][1]] for l in links)
        assert np.allclose(o.bias(q, v, w), o.bias(q, v) - JT, atol=1e-11)


def test_wrench_cancels_gravity_by_hand():
    """Wrench = -weight at the COM, expressed in the link frame at the link origin."""
    o = KKTOracle(PEND)
    rng = np.random.default_rng(19)
    for _ in range(5):
        q = rng.uniform(-3, 3, 2)
        w = {}
        for link, m, c in (("l1", P_M1, (P_C1, 0.05, 0.0)), ("l2", P_M2, (P_C2, -0.02, 0.0))):
            R = o.link_placement(q, link).rotation
            f = R.T @ np.array([0, 0, m * G0])
            w[link] = (f, np.cross(c, f))
        assert np.allclose(o.bias(q, np.zeros(2), w), 0, atol=1e-12)
        assert np.abs(o.bias(q, np.zeros(2))).max() > 0.1
    # merged link: the tip frame is offset and rotated w.r.t. l2
    q = np.array([0.3, -0.8])
    Mt, M2 = o.link_placement(q, "tip"), o.link_placement(q, "l2")
    Fw = np.array([1.0, -2.0, 0.5])
    base_only = (o.bias(q, np.zeros(2), {"tip": (Mt.rotation.T @ Fw, np.zeros(3))})
                 - o.bias(q, np.zeros(2)))
    # torque about j2 axis (world y, through l2 origin) from a force at the tip origin
    ay = M2.rotation @ np.array([0, 1, 0])
    assert abs(-base_only[1] - ay @ np.cross(Mt.translation - M2.translation, Fw)) < 1e-12
    assert abs(-base_only[0] - ay @ np.cross(Mt.translation, Fw)) < 1e-12


# ============================================================================
# (6) the oracle's own Pinocchio tree, new joint types and loop rows
# ============================================================================

def _parser_model(xml_path):
    """Pinocchio's URDF parser on the spanning tree of a URDF+ file (extras stripped)."""
    from lxml import etree
    root = etree.parse(xml_path, etree.XMLParser(remove_comments=True)).getroot()
    for tag in ("loop", "coupling"):
        for el in root.findall(tag):
            root.remove(el)
    for j in root.findall("joint"):
        for mm in j.findall("mimic"):
            j.remove(mm)
        j.attrib.pop("independent", None)
    return pin.buildModelFromXML(etree.tostring(root).decode())


def _to_parser_q(o, parser, q):
    """Our q (the oracle's layout) in the parser model's layout (continuous joints as cos, sin)."""
    qp = np.zeros(parser.nq)
    for jid in range(1, parser.njoints):
        jm, name = parser.joints[jid], parser.names[jid]
        qs = q[o.q_slice(name)]
        qp[jm.idx_q:jm.idx_q + jm.nq] = [np.cos(qs[0]), np.sin(qs[0])] if jm.nq == 2 else qs
    return qp


@pytest.mark.parametrize("name", ["four_bar", "geared_chain", "belt_leg", "quadruped_rotors"])
def test_tree_builder_matches_pinocchio_urdf_parser(name):
    """The oracle builds its Pinocchio tree joint by joint (for spherical, planar and universal
    joints, which URDF parsers do not know): on standard URDF it equals Pinocchio's own parser."""
    from dynamics_node import bundled_model
    path = bundled_model(name)
    o, parser = KKTOracle(path), _parser_model(path)
    data = parser.createData()
    perm = np.concatenate([np.arange(parser.joints[parser.getJointId(n)].idx_v,
                                     parser.joints[parser.getJointId(n)].idx_v + o._pj[n]["nv"])
                           for n in o.joint_names])
    rng = np.random.default_rng(20)
    for _ in range(3):
        q = o.random_configuration(rng)
        v, a = rng.normal(size=o.nv), rng.normal(size=o.nv)
        qp = _to_parser_q(o, parser, q)
        M = pin.crba(parser, data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        assert np.allclose(o.mass_matrix(q), M[np.ix_(perm, perm)], rtol=0, atol=1e-12)
        vp, ap = np.zeros(parser.nv), np.zeros(parser.nv)
        vp[perm], ap[perm] = v, a
        assert np.allclose(o.rnea(q, v, a), pin.rnea(parser, data, qp, vp, ap)[perm], rtol=0,
                           atol=1e-11)
        pin.framesForwardKinematics(parser, data, qp)
        for link in o.links:
            assert np.allclose(o.link_placement(q, link).homogeneous,
                               data.oMf[parser.getFrameId(link)].homogeneous, atol=1e-12)


def _universal_pair(as_universal):
    """An arm on a universal joint (x then y) or on two revolute joints with a massless cross."""
    arm = inertial(0.9, (0.1, 0.05, 0.3), (0.02, 0.001, 0.002, 0.025, 0.003, 0.01))
    joints = ('<joint name="u" type="universal"><parent link="base"/><child link="arm"/>'
              '<origin xyz="0.1 0 0.2" rpy="0.2 0 0"/><axis xyz="1 0 0"/><axis2 xyz="0 1 0"/>'
              '</joint>'
              if as_universal else
              '<link name="cross"/><joint name="u_1" type="revolute"><parent link="base"/>'
              '<child link="cross"/><origin xyz="0.1 0 0.2" rpy="0.2 0 0"/><axis xyz="1 0 0"/>'
              '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
              '<joint name="u_2" type="revolute"><parent link="cross"/><child link="arm"/>'
              '<axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    return f'<robot name="u"><link name="base"/><link name="arm">{arm}</link>{joints}</robot>'


def test_universal_joint_is_two_revolute_joints():
    """Pinocchio's JointModelUniversal (the oracle's) equals two revolute joints through one point,
    with the coordinates u_1, u_2 of the library's layout."""
    ou, o2 = KKTOracle(_universal_pair(True)), KKTOracle(_universal_pair(False))
    assert ou.joint_names == ["u_1", "u_2"] and ou.model.nv == 2 and ou.model.njoints == 2
    o2.set_layout(ou.joint_names)
    rng = np.random.default_rng(21)
    for _ in range(5):
        q, v = rng.uniform(-2, 2, 2), rng.normal(size=2)
        assert np.allclose(ou.mass_matrix(q), o2.mass_matrix(q), atol=1e-13)
        assert np.allclose(ou.bias(q, v), o2.bias(q, v), atol=1e-12)
        assert np.allclose(ou.link_placement(q, "arm").homogeneous,
                           o2.link_placement(q, "arm").homogeneous)


PLANAR_Z = f"""<robot name="p"><link name="base"/>
  <link name="puck">{inertial(0.7, (0.1, -0.05, 0.02),
                              (0.01, 0.001, 0.0, 0.012, 0.0, 0.015))}</link>
  <joint name="slide" type="planar"><parent link="base"/><child link="puck"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.1 0.2 0.3"/><axis xyz="{{axis}}"/></joint></robot>"""


def test_planar_joint_layout():
    """Planar joint about z: our q = x y theta is Pinocchio's x y cos sin in the plane basis e1 = z
    x x = y, e2 = z x e1 = -x; v = velocity of the child frame along its e1, e2 and the turn rate
    (checked by finite differences of the pose)."""
    o = KKTOracle(PLANAR_Z.format(axis="0 0 1"))
    assert o.model.joints[1].shortname() == "JointModelPlanar" and o.nq == 3 and o.nv == 3
    q = np.array([0.3, -0.2, 0.7])
    M0 = o.link_placement(np.zeros(3), "puck")
    M = o.link_placement(q, "puck")
    e1, e2 = np.array([0.0, 1.0, 0.0]), np.array([-1.0, 0.0, 0.0])
    turn = rpy_to_matrix(0, 0, 0.7)
    assert np.allclose(M.translation, M0.translation + M0.rotation @ (0.3 * e1 - 0.2 * e2))
    assert np.allclose(M.rotation, M0.rotation @ turn)
    assert np.allclose(fd_link_jacobian(o, q, "puck"), o.frame_jacobian(q, "puck"), atol=1e-6)
    assert np.allclose(o.frame_jacobian(q, "puck")[:3, :2], np.column_stack((e1, e2)), atol=1e-12)
    assert np.allclose(o.frame_jacobian(q, "puck")[3:, 2], [0, 0, 1], atol=1e-12)


def _rsur_oracle(loop_type):
    """Crank - rod on a spherical joint - rocker, closed by a universal (or spherical) loop."""
    link_ = inertial(0.5, (0.1, 0.02, 0.03), (0.01, 0.001, 0.0, 0.012, 0.0, 0.009))
    loop_axes = '<axis xyz="0 0 1"/><axis2 xyz="1 0 0"/>' if loop_type == "universal" else ""
    return KKTOracle(f"""<robot name="rsur"><link name="base"/><link name="crank">{link_}</link>
  <link name="rod">{link_}</link><link name="rocker">{link_}</link>
  <joint name="crank_joint" type="continuous"><parent link="base"/><child link="crank"/>\
<axis xyz="0 0 1"/></joint>
  <joint name="rod_ball" type="spherical"><parent link="crank"/><child link="rod"/>\
<origin xyz="0.2 0 0"/></joint>
  <joint name="rocker_joint" type="continuous"><parent link="base"/><child link="rocker"/>
    <origin xyz="0.6 0.2 0"/><axis xyz="1 0 0"/></joint>
  <loop name="end" type="{loop_type}"><predecessor link="rod"><origin xyz="0.4 0.2 0.3"/>\
</predecessor>
    <successor link="rocker"><origin xyz="0 0 0.3"/></successor>{loop_axes}</loop></robot>""")


@pytest.mark.parametrize("loop_type", ["universal", "spherical"])
def test_new_loop_rows_by_finite_differences(loop_type):
    """K is the derivative of the residual at a closed configuration (q = 0 here), and k = -Kdot v
    along v on the configuration manifold anywhere (the universal row a1 x a2 turns with both
    ends)."""
    o = _rsur_oracle(loop_type)
    rng = np.random.default_rng(22)
    q = o.neutral()
    assert np.abs(o.loop_residual(q)).max() < 1e-15
    K = o.constraint_jacobian(q)
    h = 1e-6
    for i in range(o.nv):
        e = np.zeros(o.nv)
        e[i] = h
        dphi = (o.loop_residual(o.integrate(q, e)) - o.loop_residual(o.integrate(q, -e))) / (2 * h)
        assert np.allclose(dphi, K[:, i], atol=1e-7), i
    q, v = o.random_configuration(rng), rng.normal(size=o.nv)
    h = 1e-5
    Kdv = (o.constraint_jacobian(o.integrate(q, h * v))
           - o.constraint_jacobian(o.integrate(q, -h * v))) @ v / (2 * h)
    assert np.allclose(-Kdv, o.constraint_bias(q, v), atol=1e-7)
