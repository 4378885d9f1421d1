"""capelab.secagg: exact sums over the survivors, dropouts at every point, SecAgg+ costs that grow
with k rather than S, and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from capelab import secagg


def quantised_sum(r, sites):
    return np.sum([r.sites[i].quantised_input for i in sites], axis=0)


def test_the_sum_is_exact_over_every_site():
    x = np.random.default_rng(1).uniform(-1, 1, (6, 9))
    r = secagg.simulate(x, bound=1.0, seed=3)
    assert r.error is None and r.survivors == list(range(6)) and r.dropouts == []
    assert np.array_equal(r.sum, quantised_sum(r, range(6)))
    assert np.abs(r.sum - x.sum(axis=0)).max() < 6 * 2.0**-32
    assert r.threshold == 5  # ⌊2S/3⌋ + 1
    assert r.bytes == r.aggregator_bytes_sent + sum(s.bytes_sent for s in r.sites)


@pytest.mark.parametrize("point", secagg.DROP_POINTS)
@pytest.mark.parametrize("mode", ["disconnect", "silent"])
def test_a_dropout_at_every_point(point, mode):
    x = np.arange(18, dtype=float).reshape(6, 3) / 20
    r = secagg.simulate(x, bound=1.0, seed=7, dropouts=[(2, point, mode)])
    assert r.error is None, r.error
    in_sum = point in ("after_masked_input", "during_unmask", "after_unmask")
    assert (2 in r.survivors) == in_sum
    assert np.array_equal(r.sum, quantised_sum(r, r.survivors))
    assert r.sites[2].vanished is not None
    if mode == "silent" and point != "after_unmask":
        assert r.finished_at_ms >= 1000  # the aggregator waited for a deadline


def test_too_many_dropouts_abort_the_round():
    x = np.ones((5, 2)) / 2
    r = secagg.simulate(x, bound=1.0, seed=1, dropouts=[(0, "after_advertise"), (1, "after_advertise")])
    assert r.sum is None and "t = 4" in r.error


def test_secagg_plus_costs_a_site_its_neighbourhood_not_the_room():
    choice = secagg.choose_harary(40, 0.05, 0.05, sigma=20)
    assert choice["k"] % 2 == 0 and choice["k"] < 39
    x = np.full((40, 4), 0.25)
    complete = secagg.simulate(x, bound=1.0, seed=5)
    plus = secagg.simulate(x, bound=1.0, seed=5, harary_k=choice["k"], threshold=choice["threshold"])
    assert np.array_equal(plus.sum, complete.sum)
    mean = lambda r: np.mean([s.bytes_sent for s in r.sites])  # noqa: E731
    assert mean(plus) < mean(complete) * (choice["k"] + 2) / 39


def test_the_same_seed_reproduces_the_round():
    x = np.random.default_rng(2).uniform(-1, 1, (4, 5))
    a = secagg.simulate(x, bound=1.0, seed=9, dropouts=[(1, "after_share_keys", "silent")])
    b = secagg.simulate(x, bound=1.0, seed=9, dropouts=[(1, "after_share_keys", "silent")])
    assert np.array_equal(a.sum, b.sum) and a.bytes == b.bytes and a.dropouts == b.dropouts
    assert [s.quantised_input for s in a.sites] == [s.quantised_input for s in b.sites]
