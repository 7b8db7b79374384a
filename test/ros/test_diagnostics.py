"""What /diagnostics counts, without DDS: inputs lost before the node, inferred from the stamps
of a stream with known jitter and known drops (no clock is read)."""

import numpy as np

from dynamics_node.ros.stream import StreamStats

RATE = 500.0                    # Hz
PERIOD = int(1e9 / RATE)        # ns


def stamps(rng, count, dropped, jitter=0.45, start=10**18):
    """Stamps (ns) of inputs 0..count-1 at RATE, each up to jitter periods early or late but the
    first and the last, those in dropped left out."""
    kept = np.setdiff1d(np.arange(count), dropped)
    offsets = rng.uniform(-jitter, jitter, len(kept)) * PERIOD
    offsets[0] = offsets[-1] = 0.0
    return [int(start + i * PERIOD + o) for i, o in zip(kept, offsets)]


def test_jitter_alone_loses_nothing(rng):
    stats = StreamStats()
    for stamp in stamps(rng, 20_000, []):
        stats.arrive(stamp, RATE)
    assert stats.lost_inferred() == 0


def test_known_drops_are_counted_once_whatever_the_jitter(rng):
    """137 inputs dropped (a run of 5 and 132 at random) among 20,000 jittered ones, each
    received input published twice and one pair reordered: exactly 137 lost. Then the publisher
    restarts (stamps go back) and loses 5 more: 142. Then 100 inputs never come (a stall or a
    pause: the stamps cannot tell) and 2 more are lost: 244."""
    stats = StreamStats()
    run = np.arange(100, 105)
    dropped = np.union1d(run, rng.choice(np.setdiff1d(np.arange(1, 19_999), run), 132,
                                         replace=False))
    assert len(dropped) == 137
    received = stamps(rng, 20_000, dropped)
    received[500], received[501] = received[501], received[500]
    for stamp in received:
        stats.arrive(stamp, RATE)
        stats.arrive(stamp, RATE)
    assert stats.lost_inferred() == 137
    restart = stamps(rng, 1000, [10, 20, 30, 31, 32], start=10**17)
    for stamp in restart:
        stats.arrive(stamp, RATE)
    assert stats.lost_inferred() == 142
    for stamp in stamps(rng, 100, [50, 60], start=10**17 + 1100 * PERIOD):
        stats.arrive(stamp, RATE)
    assert stats.lost_inferred() == 244


def test_no_expected_rate_infers_nothing_and_keeps_what_was_inferred(rng):
    stats = StreamStats()
    for stamp in stamps(rng, 100, [7, 8]):
        stats.arrive(stamp, RATE)
    for stamp in stamps(rng, 100, [7, 8], start=10**18 + 100 * PERIOD):
        stats.arrive(stamp, 0.0)
    assert stats.lost_inferred() == 2
