"""Numerical helpers that both the parent and the workers use: the median and its interval
(``medians``), a cell's interval over its processes (``intervals``, which a record derives),
finite differences (``finite_diff``), and every threshold that decides when measuring stops
(``stopping``). A leaf: imports nothing of arraybench."""
