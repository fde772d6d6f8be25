"""The interval of a cell's median, with the process as the unit: its coverage on synthetic data
with a known process effect, against the pooled interval it replaced, and the t distribution."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest

from arraybench.numeric.medians import Interval, median, median_ci, replicate_interval, spread_factor
from arraybench.analysis.compare import LogEstimate, welch_test


def pooled_interval(per_process, confidence=0.95):
    """The old interval: every sample of every process pooled, as if independent."""
    pooled = [x for s in per_process for x in s]
    lo, hi = median_ci(pooled, confidence)
    return Interval(median(pooled), lo, hi, len([s for s in per_process if s]),
                    "order statistics of the pooled samples")


def _process_samples(rng: random.Random, processes: int, samples: int, process_sd: float,
                     sample_sd: float = 0.02, slow_share: float | None = None) -> list[list[float]]:
    """Per-call times of one cell whose true median is 1.0: each process off by its own factor for
    its whole life (lognormal, or 2x slow with probability ``slow_share``), its samples
    autocorrelated within it (AR(1), as a slow phase of a machine makes them)."""
    out = []
    for _ in range(processes):
        if slow_share is None:
            offset = rng.gauss(0.0, process_sd)
        else:
            offset = math.log(2.0) if rng.random() < slow_share else 0.0
        e, s = 0.0, []
        for _ in range(samples):
            e = 0.7 * e + rng.gauss(0.0, sample_sd)
            s.append(math.exp(offset + e))
        out.append(s)
    return out


def _facing(a, b) -> float:
    """``a``'s half-width on the side facing ``b``'s center."""
    return (a.center - a.low) if b.center < a.center else (a.high - a.center)


def _rates(interval, processes: int, process_sd: float, trials: int = 400, seed: int = 0,
           slow_share: float | None = None) -> tuple[float, float]:
    """(coverage of the true median, calibration of two independent runs as the issue measures it:
    |m1 - m2| <= sqrt(h1^2 + h2^2), h each interval's half-width facing the other median)."""
    rng = random.Random(seed)
    covered = held = 0
    for _ in range(trials):
        a = interval(_process_samples(rng, processes, 20, process_sd, slow_share=slow_share))
        b = interval(_process_samples(rng, processes, 20, process_sd, slow_share=slow_share))
        covered += a.low <= 1.0 <= a.high
        held += abs(a.center - b.center) <= math.hypot(_facing(a, b), _facing(b, a))
    return covered / trials, held / trials


@pytest.mark.parametrize("processes, process_sd", [(3, 0.02), (5, 0.05), (8, 0.03)])
def test_the_interval_over_processes_covers_the_true_median_95_percent(processes, process_sd):
    coverage, calibration = _rates(replicate_interval, processes, process_sd)
    assert 0.91 <= coverage <= 0.99
    assert calibration >= 0.93


@pytest.mark.parametrize("processes, process_sd", [(3, 0.02), (5, 0.05), (8, 0.03)])
def test_the_old_pooled_interval_falls_far_short_on_the_same_data(processes, process_sd):
    # The samples of one process are not independent draws: pooled, they claim far too much.
    coverage, calibration = _rates(pooled_interval, processes, process_sd)
    assert coverage < 0.75 and calibration < 0.8


def test_processes_that_are_2x_slow_for_life_keep_two_runs_calibrated():
    # Like NumPy FFT large: some processes take fresh pages from the kernel on every call.
    _, new = _rates(replicate_interval, 6, 0.0, slow_share=0.3, seed=3)
    _, old = _rates(pooled_interval, 6, 0.0, slow_share=0.3, seed=3)
    assert new >= 0.93 and old < 0.6


def test_more_processes_give_a_narrower_interval():
    rng = random.Random(4)
    widths = {k: sorted(replicate_interval(_process_samples(rng, k, 20, 0.02)).half_width
                        for _ in range(200))[100] for k in (3, 6, 10)}
    assert widths[3] > widths[6] > widths[10]
    assert widths[10] < 0.025  # a 2% process effect, ten processes: near the 2% target


def test_the_headline_is_the_geometric_mean_of_the_processes_medians():
    iv = replicate_interval([[2.0] * 9, [8.0] * 9])
    assert iv.center == pytest.approx(4.0) and iv.processes == 2
    assert "span of 2 processes" in iv.method  # no t interval from 2 processes


def test_identical_medians_by_chance_keep_the_samples_own_uncertainty():
    # Three processes with the same median: the t interval alone would have zero width.
    samples = [1.0, 0.9, 1.1, 0.95, 1.05, 1.0, 0.97, 1.03, 0.99, 1.01]
    iv = replicate_interval([samples, list(reversed(samples)), samples[::-1]])
    assert iv.low < 1.0 < iv.high and iv.half_width > 0.005
    assert "widened to the samples' own uncertainty" in iv.method


def test_one_process_gets_its_own_samples_interval_and_says_it_is_blind():
    iv = replicate_interval([[1.0 + i / 100 for i in range(20)]])
    assert iv.processes == 1 and iv.low < iv.center < iv.high
    assert "blind to variation between processes" in iv.method


def _p(t: float, df: float) -> float:
    """The two-sided p-value of a t statistic on ``df`` degrees of freedom, through the one test."""
    return welch_test(LogEstimate(0.0, 1.0, df), LogEstimate(t, 0.0, math.inf)).p_value


@pytest.mark.parametrize("df, value", [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)])
def test_t_quantiles_match_the_tables(df, value):
    assert spread_factor(df + 1) == pytest.approx(value, abs=1e-3)
    assert _p(value, df) == pytest.approx(0.05, abs=1e-4)


def test_the_tabled_quantiles_are_scipys_and_more_processes_ask_scipy():
    from scipy.special import chdtri, stdtrit

    from arraybench.numeric.medians import chi2_upper_10

    for df in range(1, 41):  # the table holds 1-31; the rest are scipy's own
        assert spread_factor(df + 1) == pytest.approx(stdtrit(df, 0.975), rel=1e-11)
        assert chi2_upper_10(df) == pytest.approx(chdtri(df, 0.1), rel=1e-11)


def test_a_run_reads_its_quantiles_without_importing_scipy():
    # A fresh interpreter: this one has scipy loaded. A run's intervals and its pairs' reach.
    script = ("import sys; from arraybench.numeric.medians import chi2_upper_10, spread_factor; "
              "[spread_factor(k) + chi2_upper_10(k - 1) for k in range(2, 21)]; "
              "print(sorted(m for m in sys.modules if m.startswith('scipy')))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_t_tails_are_symmetric_and_approach_the_normal():
    assert _p(-1.3, 5) == pytest.approx(_p(1.3, 5))
    assert _p(1.959964, 1e7) == pytest.approx(0.05, abs=1e-5)
    assert _p(1.959964, math.inf) == pytest.approx(0.05, abs=1e-6)
    assert spread_factor(1) == pytest.approx(1.959964, abs=1e-6)  # one process: the normal quantile


def test_every_interval_reads_in_one_form_half_its_width_as_a_share_of_the_median():
    from arraybench.units import format_interval

    # The interval column mixed ±21.7% and ×/÷2; one form now, whatever the width.
    # Two processes on a busy machine: t(1) = 12.7 makes the log interval a factor of ~2.6 either way.
    iv = replicate_interval([[0.0076] * 10, [0.0093] * 10])
    low, high, center = iv.low, iv.high, iv.center
    text = format_interval(low, center, high)
    assert text.startswith("±") and text.endswith("%")
    assert float(text[1:-1]) / 100 == pytest.approx((high - low) / (2 * center), abs=1e-3)
    assert low > 0  # built on log times: lopsided when wide, never below zero
    assert format_interval(center / 1.2, center, center * 1.2) == "±18.3%"
    assert format_interval(None, center, high) == "—" and format_interval(low, 0.0, high) == "—"
