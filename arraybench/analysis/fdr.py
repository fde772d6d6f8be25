"""False discovery rate control across many tests: Benjamini–Hochberg (``scipy.stats``).

Testing 30 cells of a comparison, or hundreds of (series, step) pairs of a history, at p < 0.05
each would call a few changes by chance alone. Benjamini–Hochberg keeps the expected share of false
calls among all calls at ``q`` instead. ``compare`` and ``history`` both use it, from here.

>>> [round(v, 4) for v in q_values([0.01, 0.04, 0.03, 0.5])]
[0.04, 0.0533, 0.0533, 0.5]
>>> benjamini_hochberg([0.001, 0.04, 0.03, 0.5], q=0.05)
[True, False, False, False]
"""

from __future__ import annotations

from typing import Sequence

#: How the corrections are named in what arraybench prints.
CORRECTION = "Benjamini–Hochberg"


def q_values(p_values: Sequence[float]) -> list[float]:
    """Adjusted p-values (q-values), in the order given: a test is a discovery at false discovery
    rate ``q`` when its q-value is at most ``q``."""
    if not p_values:
        return []
    # Imported here: scipy.stats takes seconds to import, which only a comparison should pay.
    from scipy.stats import false_discovery_control

    return [float(q) for q in false_discovery_control(list(p_values), method="bh")]


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses to reject at false discovery rate ``q``, in the order given.

    >>> benjamini_hochberg([0.01, 0.02, 0.03, 0.04], q=0.05)
    [True, True, True, True]
    """
    return [v <= q for v in q_values(p_values)]
