"""Statistics over timing samples in the parent: location, spread, clusters and the geometric mean.

The median, its distribution-free interval, the quantile and the samples' spread are the worker's
(``numeric.medians``, which decides when a worker has sampled enough, and a record derives its
figures with) and are re-exported here, so that the parent and
the worker compute them one way. Pure Python on lists of floats: no array library.
"""

from __future__ import annotations

import math
from statistics import geometric_mean
from typing import Sequence

from ..numeric.medians import (coefficient_of_variation, iqr, median, median_ci, quantile,
                               relative_ci_halfwidth, two_sided_z)

__all__ = ["coefficient_of_variation", "geometric_mean", "iqr", "median", "median_ci", "quantile",
           "relative_ci_halfwidth", "two_clusters", "two_sided_z"]


def two_clusters(values: Sequence[float], min_share: float = 0.2,
                 min_separation: float = 4.0) -> tuple[float, float] | None:
    """Detect two well-separated clusters (a bimodal distribution) in log space.

    Splits the sorted values at the point that minimises within-group variance (1-D 2-means) and
    reports the two group medians when each group holds at least ``min_share`` of the values and
    the gap between their means is ``min_separation`` pooled standard deviations or more. Returns
    None when the values look like one cluster.
    """
    data = sorted(v for v in values if v > 0)
    n = len(data)
    if n < 4:
        return None
    logs = [math.log(v) for v in data]
    prefix = [0.0]
    prefix_sq = [0.0]
    for v in logs:
        prefix.append(prefix[-1] + v)
        prefix_sq.append(prefix_sq[-1] + v * v)

    def sse(i: int, j: int) -> float:
        m = j - i
        s = prefix[j] - prefix[i]
        return (prefix_sq[j] - prefix_sq[i]) - s * s / m

    lo_count = max(1, math.ceil(min_share * n))
    best: tuple[float, int] | None = None
    for split in range(lo_count, n - lo_count + 1):
        cost = sse(0, split) + sse(split, n)
        if best is None or cost < best[0]:
            best = (cost, split)
    if best is None:
        return None
    cost, split = best
    mean_lo = (prefix[split]) / split
    mean_hi = (prefix[n] - prefix[split]) / (n - split)
    pooled_sd = math.sqrt(max(cost, 0.0) / max(n - 2, 1))
    gap = mean_hi - mean_lo
    # A relative gap under 10% is never called bimodal, however tight the clusters.
    if gap < math.log(1.10):
        return None
    if pooled_sd > 0 and gap / pooled_sd < min_separation:
        return None
    return median(data[:split]), median(data[split:])
