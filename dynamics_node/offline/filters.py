"""Derivatives of sampled signals on uneven stamps by Savitzky-Golay smoothing (Savitzky & Golay
1964): at each sample, the least-squares polynomial of degree ``order`` through the ``window``
samples around it (the window slides inwards at the ends of the recording, where the error is
larger), differentiated at the sample's own stamp. Time is scaled by the window's half span so that
the normal equations stay well conditioned."""

import numpy as np

from ..errors import ModelError, quote

WINDOW, ORDER = 21, 3          # the defaults: 21 samples (20 ms at 1 kHz), a cubic


def check_filter(window, order):
    """ModelError unless window is an odd integer above order + 1 and order one from 2 to 6."""
    if type(order) is not int or not 2 <= order <= 6:
        raise ModelError(f'filter order is {order!r}; expected an integer from 2 to 6')
    if type(window) is not int or window % 2 == 0 or window < order + 2:
        raise ModelError(f'filter window is {window!r}; expected an odd number of samples above '
                         f'order + 1 = {order + 1}')


def derivatives(t, y, window=WINDOW, order=ORDER):
    """(y', y'') of the samples y (N x n) at the stamps t (N, seconds, increasing)."""
    check_filter(window, order)
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    n = len(t)
    if y.ndim != 2 or len(y) != n:
        raise ModelError(f'samples of shape {y.shape}; expected {n} rows, one per stamp')
    if not (np.isfinite(t).all() and np.isfinite(y).all()):
        row = int(np.flatnonzero(~(np.isfinite(t) & np.isfinite(y).all(axis=1)))[0])
        raise ModelError(f'sample {row} is not finite (stamp {t[row]!r}, values '
                         f'{quote(y[row].tolist())}); expected finite numbers')
    if n < window:
        raise ModelError(f'{n} samples; the filter window needs at least {window}')
    if not np.all(np.diff(t) > 0.0):
        raise ModelError('stamps must increase strictly; found a repeated or earlier stamp at '
                         f'sample {int(np.argmin(np.diff(t) > 0.0)) + 1}')
    half = window // 2
    first = np.clip(np.arange(n) - half, 0, n - window)              # each window's first sample
    rows = first[:, None] + np.arange(window)                        # N x window sample indices
    span = 0.5 * (t[rows[:, -1]] - t[rows[:, 0]])                    # the window's half span
    s = (t[rows] - t[:, None]) / span[:, None]                       # scaled offsets
    V = s[:, :, None] ** np.arange(order + 1)                        # N x window x (order + 1)
    coefficients = np.linalg.solve(np.einsum('nwi,nwj->nij', V, V),
                                   np.einsum('nwi,nwk->nik', V, y[rows]))
    return (coefficients[:, 1] / span[:, None],
            2.0 * coefficients[:, 2] / (span ** 2)[:, None])
