"""False discovery rate control across many tests: Benjamini–Hochberg, in pure Python.

Testing hundreds of (series, step) pairs at p < 0.05 each would call a few changes by chance
alone. Benjamini–Hochberg keeps the expected share of false calls among all calls at ``q``.
(Issue 11 adds the same correction to ``compare``; the two belong together in one place.)
"""

from __future__ import annotations

from typing import Sequence


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses to reject, in the order given: the largest k with p_(k) <= k/m * q, and
    every p-value ranked at or below it.

    >>> benjamini_hochberg([0.001, 0.04, 0.03, 0.5], q=0.05)
    [True, False, False, False]
    >>> benjamini_hochberg([0.01, 0.02, 0.03, 0.04], q=0.05)
    [True, True, True, True]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    cutoff = 0
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= rank / m * q:
            cutoff = rank
    reject = [False] * m
    for i in order[:cutoff]:
        reject[i] = True
    return reject
