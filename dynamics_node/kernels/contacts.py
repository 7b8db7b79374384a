"""Numba kernel of the contacts' rows in independent coordinates (algorithms/contacts.py): after a
compiled cluster ABA or RNEA left transforms, velocities and accelerations in the workspace, the
Jacobian J_c = sum_b K^b J_b, the residual sum_b K^b a_b - k and the velocity sum_b K^b v_b of
every contact of an LcabaPlan built with contacts (flat/lcaba.py), its rows from contact_rows
(lcaba.py).

J_b is walked up as in the cluster EFPA's propagators: a row K of body b is a force on b; on the
body i of each cluster k on the path, J[row, y_k] += K S_k (its rows of body i), then K <- K
^iX_output (a force moved to the output body), Chignoli et al. 2023 Sec. 5.2.
"""

from numba import njit

from .cache import key_on_helpers
from .lcaba import contact_rows, row6, row6_of
from .rnea import bias_acceleration
from .spatial import dot6, transform_at, transposed_force

key_on_helpers(__file__)


@njit(cache=True, nogil=True, error_model='numpy', fastmath={'contract'})
def contact_jacobian(m, d, p, w, J, out, drift):
    """Rows of every contact of p (K, k into w.K, w.k) at the workspace's state d: J_c into the
    rows con_row0[c] of J (rows x ny, the loops' rows left as they are), the residual K a - k into
    out[0] and K v into out[1] (contact_state)."""
    contact_state(m, d, p, w, J, out, drift, True)


@njit(error_model='numpy', fastmath={'contract'})
def contact_state(m, d, p, w, J, out, drift, jacobian):
    """contact_jacobian; J left as it is without jacobian. The rows are blind to gravity (a_0 =
    -a_g in d.a cancels); with drift, d.a is first replaced by the accelerations at ydd = 0
    without gravity, a_i = ^iX_o a_o + c_i from a_0 = 0 (Chignoli et al. 2023 eq. 33), so that
    the residual is Jdot yd, exactly zero on a contact whose bodies' paths do not move."""
    cluster, output, y_range, S, Xo_E, Xo_r, a, v = (
        m.cluster, m.output, m.y_range, d.S, d.Xo_E, d.Xo_r, d.a, d.v)
    if drift:
        for e in range(6):
            a[0, e] = 0.0
        for i in range(1, len(cluster)):
            bias_acceleration(Xo_E, Xo_r, a, d.c, i, output[cluster[i]])
    con_rows, con_row0, con_entries, entry_body, K, k = (
        p.con_rows, p.con_row0, p.con_entries, p.entry_body, w.K, w.k)
    for con in range(len(con_rows)):
        if p.con_contact[con] < 0:
            continue
        contact_rows(d, p, w, con)
        for row in range(con_rows[con]):
            r = con_row0[con] + row
            if jacobian:
                for y in range(J.shape[1]):
                    J[r, y] = 0.0
            residual, velocity = -k[con, row], 0.0
            for e in range(con_entries[con, 0], con_entries[con, 1]):
                body = entry_body[e]
                chi = row6_of(K, e, row)
                residual += dot6(chi, row6(a, body))
                velocity += dot6(chi, row6(v, body))
                while jacobian and body > 0:
                    c = cluster[body]
                    y0 = y_range[c, 0]
                    for j in range(y_range[c, 1] - y0):
                        J[r, y0 + j] += dot6(chi, row6_of(S, body, j))
                    E, x = transform_at(Xo_E, Xo_r, body)
                    chi = transposed_force(E, x, chi)
                    body = output[c]
            out[0, r], out[1, r] = residual, velocity
