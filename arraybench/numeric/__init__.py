"""Numerical helpers both the parent and the workers use: the median and its intervals
(``medians``), finite differences (``finite_diff``), and every threshold that decides when
measuring stops (``stopping``). A leaf: imports nothing of arraybench."""
