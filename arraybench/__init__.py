"""arraybench: which array library is fastest on your machine, for your workload, and why.

The Python API mirrors the command line::

    import arraybench

    @arraybench.workload(sizes={"small": 1_000}, inputs=lambda n, rng: rng.standard_normal(n))
    def softplus(xp, x):
        return xp.log1p(xp.exp(x))

    results = arraybench.load_results("benchmark_plots/results.json")
"""

from __future__ import annotations

from .accuracy import Check
from .records import Record, Results
from .workloads.api import Work, Workload, workload

__all__ = ["Check", "Record", "Results", "Work", "Workload", "load_results", "workload"]


def load_results(path: str) -> Results:
    """Read a ``results.json``, or the one in a folder (validated).

    ``Results.records`` holds the records; ``Results.to_dataframe()`` gives them as a pandas
    DataFrame where pandas is installed. A missing or damaged file raises ``ResultsError``.
    """
    from .records import load, resolve

    return load(resolve(path))
