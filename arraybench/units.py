"""Numbers as text, in one place: times, rates, sizes, intervals, shares and ratios with their
direction. Every table, sentence and plot words a number through here, so one 1.5 reads the same
in all of them."""

from __future__ import annotations

import math


def format_seconds(seconds: float | None, digits: int = 3) -> str:
    """``0.00123`` -> ``"1.23 ms"``; picks ns, µs, ms or s."""
    if seconds is None or (isinstance(seconds, float) and not math.isfinite(seconds)):
        return "—"
    value, unit = time_unit(abs(seconds))
    return f"{seconds / value:.{digits}g} {unit}"


def time_unit(seconds: float) -> tuple[float, str]:
    """The unit (its size in seconds, its name) that suits a duration."""
    for value, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= value:
            return value, unit
    return 1e-9, "ns"


#: An interval reaching further than this factor either side of its median says nothing worth a
#: number: it is shown as undecided.
UNDECIDED_FACTOR = 2.0
#: An interval whose two sides differ by more than this share of the median is shown as a range.
LOPSIDED = 0.1


def format_interval(low: float | None, median: float | None, high: float | None) -> str:
    """A 95% interval around a median: ``±1.2%``, half the interval's width as a share of the
    median (the measure the ±2% target is set in); a lopsided one as its two ends (``-8/+31%``);
    one wider than a factor of 2 either way as ``undecided``."""
    if low is None or high is None or not median or median <= 0:
        return "—"
    if low <= 0 or high / median > UNDECIDED_FACTOR or median / low > UNDECIDED_FACTOR:
        return "undecided"
    below, above = (median - low) / median, (high - median) / median
    if abs(above - below) > LOPSIDED:
        return f"-{below * 100:.0f}/+{above:.0%}"
    return f"±{(high - low) / (2 * median):.1%}"


def format_rate(value: float | None, unit: str) -> str:
    """``3.2e10, "FLOP/s"`` -> ``"32 GFLOP/s"``."""
    if value is None or not math.isfinite(value):
        return "—"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_ratio(x: float) -> str:
    """How many times, as every sentence, table and plot says it: ``1.50×``, ``3.8×``, ``16×``,
    ``1,258×``. Two decimals below 2 (a real 1.4% lead reads ``1.01×``, not ``1×``), one below
    10, none from there."""
    if x < 2:
        return f"{x:.2f}×"
    if x < 9.95:  # 9.96 rounds to "10.0" with one decimal: shown as "10×" like its neighbours
        return f"{x:.1f}×"
    return f"{x:,.0f}×"


def format_speedup(factor: float) -> str:
    """How many times faster ``factor`` says, with its direction: ``1.50× faster``, and below 1
    ``139× slower`` (a bare ``0.0072×`` says neither)."""
    if factor <= 0 or not math.isfinite(factor):
        return "—"
    return f"{format_ratio(factor)} faster" if factor >= 1 else f"{format_ratio(1 / factor)} slower"


def format_change(ratio: float) -> str:
    """A new time over a base time in words: ``1.05`` -> ``"5.0% slower"``, ``0.5`` ->
    ``"2.0× faster"``. Changes under 10% are the share of time gained or lost; larger ones a factor."""
    if ratio <= 0 or not math.isfinite(ratio):
        return "—"
    if abs(ratio - 1) < 5e-4:
        return "same"
    if 0.9 < ratio < 1.1:
        return f"{ratio - 1:.1%} slower" if ratio > 1 else f"{1 - ratio:.1%} faster"
    return format_speedup(1 / ratio)


def format_share(share: float | None) -> str:
    """A share as a whole percentage: ``0.42`` -> ``"42%"``; ``None`` -> ``"—"``."""
    return "—" if share is None else f"{share:.0%}"


#: A peak below one page is below what the resident high-water mark can tell apart from none.
PAGE_BYTES = 4096


def format_peak(n: float | None) -> str:
    """A peak memory per call: ``format_size``, but ``< 4.1 kB`` below one page, where the
    kernel's resident high-water mark cannot tell a small peak from none."""
    if n is not None and n < PAGE_BYTES:
        return f"< {format_size(PAGE_BYTES)}"
    return format_size(n)


def format_size(n: float | None) -> str:
    """Bytes in decimal units, three figures: ``64000000`` -> ``"64 MB"``; ``None`` -> ``"-"``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if abs(value) < 999.5:  # 999.6 kB shows as "1 MB", not "1e+03 kB"
            return f"{int(value)} B" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1000
    return f"{value:.3g} TB"
