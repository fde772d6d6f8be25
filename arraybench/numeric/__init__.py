"""Numerical helpers that both the parent and the workers use: the median and its interval
(``medians``), finite differences (``finite_diff``). A leaf: imports nothing of arraybench."""
