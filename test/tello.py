"""Tello's differentials written independently of the library, from generalized_rbda's derivations
(scripts/matlab/derive_tello_hip_differential.m, derive_tello_knee_ankle_differential.m): the
implicit constraints phi(y, q) = 0 as CasADi expressions for the KKT oracle, and the derivations'
inverse kinematics (the rotor angles y = q_rotor / N for given joint angles), test-only code."""

import casadi
import numpy as np

from oracle import KKTOracle

N = 6.0                         # gear ratio of every Tello rotor
TELLO_ROBOTS = ('tello_legs', 'tello_humanoid')


def hip_phi(x, sin=casadi.sin, cos=casadi.cos):
    """x = (q_rotor1, q_rotor2, q_gimbal, q_thigh)."""
    y1, y2, q1, q2 = x[0] / N, x[1] / N, x[2], x[3]
    return [57 * sin(y1) / 2500 - 49 * cos(q1) / 5000 - 399 * sin(q1) / 20000
            - 8 * cos(y1) * cos(q2) / 625 - 57 * cos(q1) * sin(q2) / 2500
            - 7 * sin(y1) * sin(q1) / 625 + 7 * sin(q1) * sin(q2) / 625
            - 8 * cos(q1) * sin(y1) * sin(q2) / 625 + 3021 / 160000,
            57 * sin(y2) / 2500 - 49 * cos(q1) / 5000 + 399 * sin(q1) / 20000
            - 8 * cos(y2) * cos(q2) / 625 - 57 * cos(q1) * sin(q2) / 2500
            + 7 * sin(y2) * sin(q1) / 625 - 7 * sin(q1) * sin(q2) / 625
            - 8 * cos(q1) * sin(y2) * sin(q2) / 625 + 3021 / 160000]


def knee_ankle_phi(x, sin=casadi.sin, cos=casadi.cos):
    """x = (q_rotor1, q_rotor2, q_shin, q_foot)."""
    y1, y2, q1, q2 = x[0] / N, x[1] / N, x[2], x[3]
    pi = np.pi
    half = y1 / 2 - y2 / 2
    return [21 * cos(half + 1979 * pi / 4500) / 6250 - 13 * cos(half + 493 * pi / 1500) / 625
            - 273 * np.cos(pi / 9) / 12500 - 7 * sin(half + q2 + 231 * pi / 500) / 2500
            + 91 * sin(q2 + 2 * pi / 15) / 5000 - 147 * sin(q2 + pi / 45) / 50000
            + 163349 / 6250000,
            q1 - y2 / 2 - y1 / 2]


def hip_rotors(q1, q2):
    """The derivation's inverse kinematics: (y1, y2) for gimbal q1 and thigh q2."""
    def branch(sign):
        a = 57 / 2500 - 8 * np.cos(q1) * np.sin(q2) / 625 - sign * 7 * np.sin(q1) / 625
        b = -8 * np.cos(q2) / 625
        c = (49 * np.cos(q1) / 5000 + sign * 399 * np.sin(q1) / 20000
             + 57 * np.cos(q1) * np.sin(q2) / 2500 - sign * 7 * np.sin(q1) * np.sin(q2) / 625
             - 3021 / 160000)
        d = np.sqrt(a * a + b * b - c * c)
        return np.arctan2(-b * d + a * c, b * c + a * d)
    return branch(1.0), branch(-1.0)


def knee_ankle_rotors(q1, q2):
    """The derivation's inverse kinematics: (y1, y2) for knee q1 and ankle q2."""
    alpha0, beta = (180 - 59.16) * np.pi / 180, q2 + (180 - 66) * np.pi / 180
    a = -21 * np.sin(np.pi / 9) / 6250 - 7 * np.sin(beta) / 2500
    b = 13 / 625 - 7 * np.cos(beta) / 2500 - 21 * np.cos(np.pi / 9) / 6250
    c = (273 * np.cos(np.pi / 9) / 12500 + 91 * np.cos(beta) / 5000
         - 147 * np.cos(np.pi / 9) * np.cos(beta) / 50000
         - 147 * np.sin(np.pi / 9) * np.sin(beta) / 50000 - 163349 / 6250000)
    d = np.sqrt(a * a + b * b - c * c)
    alpha = np.arctan2(b * d + a * c, b * c - a * d)
    return q1 - (alpha - alpha0), q1 + (alpha - alpha0)


def differentials():
    """(name, joints, phi) of the four differentials, as the bundled files name them."""
    out = []
    for side in ('left', 'right'):
        out.append((f'{side}-hip-differential',
                    [f'{side}-hip-clamp-to-hip-rotor-1', f'{side}-hip-clamp-to-hip-rotor-2',
                     f'{side}-hip-clamp-to-gimbal', f'{side}-gimbal-to-thigh'], hip_phi))
        out.append((f'{side}-knee-ankle-differential',
                    [f'{side}-thigh-to-knee-ankle-rotor-1', f'{side}-thigh-to-knee-ankle-rotor-2',
                     f'{side}-thigh-to-shin', f'{side}-shin-to-foot'], knee_ankle_phi))
    return out


def tello_oracle(path, joint_names):
    """The KKT oracle of a Tello file with the differentials written here."""
    reference = KKTOracle(path, implicit=differentials())
    reference.set_layout(joint_names)
    return reference
