"""Statistics on samples whose answers are known."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from arraybench.numeric import medians as stats

floats = st.lists(st.floats(min_value=1e-9, max_value=1e3, allow_nan=False), min_size=1, max_size=200)


@given(floats)
def test_iqr_matches_numpy(values):
    expected = float(np.quantile(values, 0.75) - np.quantile(values, 0.25))
    assert stats.iqr(values) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_median_and_iqr_of_known_samples():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert stats.median(values) == 3.0
    assert stats.iqr(values) == 2.0  # quartiles 2 and 4
    assert stats.median([1.0, 2.0, 3.0, 10.0]) == 2.5


def test_median_ci_ranks_from_the_binomial():
    # n = 10: P(B <= 1) = 11/1024 <= 2.5% < P(B <= 2) = 56/1024, so the interval is X(2)..X(9).
    values = [float(i) for i in range(1, 11)]
    assert stats.median_ci(values) == (2.0, 9.0)
    # n = 5 is too few for 95%: the interval is the whole range.
    assert stats.median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) == (1.0, 5.0)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_median_ci_ranks_are_the_binomials_quantiles(confidence):
    # The lower bound is X_(j) (1-based) for the smallest j with P(Bin(n, 1/2) <= j) > alpha / 2,
    # the upper X_(n+1-j): the ranks scipy.stats.binom gives, for every n the exact sum serves.
    alpha = 1 - confidence
    for n in [*range(1, 200), 500, 1999, 2000]:
        values = [float(i) for i in range(1, n + 1)]
        j = int(scipy.stats.binom.ppf(alpha / 2, n, 0.5))
        if scipy.stats.binom.cdf(j, n, 0.5) <= alpha / 2:
            j += 1  # ppf's >= where the ranks need >
        expected = (values[0], values[-1]) if j < 1 else (values[j - 1], values[n - j])
        assert stats.median_ci(values, confidence) == expected, n


def test_the_normal_quantile_is_the_standard_librarys():
    assert stats.two_sided_z(0.95) == pytest.approx(1.959963984540054, rel=1e-12)
    assert stats.two_sided_z(0.99) == pytest.approx(float(scipy.stats.norm.ppf(0.995)), rel=1e-12)


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(1)
    hits = 0
    trials = 2000
    for _ in range(trials):
        sample = [rng.expovariate(1.0) for _ in range(25)]
        lo, hi = stats.median_ci(sample)
        hits += lo <= math.log(2) <= hi
    assert 0.93 <= hits / trials <= 0.995


def test_large_samples_use_the_normal_approximation_consistently():
    rng = random.Random(2)
    sample = [rng.gauss(10, 1) for _ in range(5000)]
    lo, hi = stats.median_ci(sample)
    assert lo < stats.median(sample) < hi
    assert hi - lo < 0.2  # ~ 2 * 1.96 * 1.25 / sqrt(5000)


def test_relative_ci_halfwidth_shrinks_with_samples():
    rng = random.Random(3)
    few = [rng.gauss(1.0, 0.05) for _ in range(10)]
    many = few + [rng.gauss(1.0, 0.05) for _ in range(990)]
    assert stats.relative_ci_halfwidth(many) < stats.relative_ci_halfwidth(few)


def test_coefficient_of_variation():
    assert stats.coefficient_of_variation([2.0, 2.0, 2.0]) == 0.0
    assert stats.coefficient_of_variation([1.0, 3.0]) == pytest.approx(math.sqrt(2) / 2)
    assert stats.coefficient_of_variation([5.0]) == 0.0


@given(st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=2, max_size=200))
def test_coefficient_of_variation_matches_numpy(values):
    expected = float(np.std(values, ddof=1) / np.mean(values))
    assert stats.coefficient_of_variation(values) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_two_clusters_finds_a_bimodal_sample():
    rng = random.Random(5)
    fast = [rng.gauss(1.0, 0.01) for _ in range(60)]
    slow = [rng.gauss(2.0, 0.02) for _ in range(30)]
    found = stats.two_clusters(fast + slow)
    assert found is not None
    assert found[0] == pytest.approx(1.0, rel=0.02)
    assert found[1] == pytest.approx(2.0, rel=0.02)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=2**31))
def test_two_clusters_stays_quiet_on_one_cluster(seed):
    rng = random.Random(seed)
    assert stats.two_clusters([rng.lognormvariate(0, 0.03) for _ in range(100)]) is None


def test_two_clusters_ignores_a_small_minority_of_outliers():
    values = [1.0 + 0.001 * i for i in range(95)] + [3.0] * 5
    assert stats.two_clusters(values) is None


def test_geometric_mean():
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        stats.geometric_mean([1.0, 0.0])
