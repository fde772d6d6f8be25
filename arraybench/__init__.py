"""arraybench: which array library is fastest on your machine, for your workload, and why.

In a notebook or a script::

    import arraybench

    @arraybench.workload(sizes={"small": 1_000}, inputs=lambda n, rng: rng.standard_normal(n))
    def softplus(xp, x):
        return xp.log1p(xp.exp(x))

    results = arraybench.run(workloads=[softplus, "matmul"], backends=["numpy", "torch"])
    results                      # the results table (HTML in Jupyter, text in a terminal)
    results.findings()           # who wins, by how much, and why
    results.plot("summary")      # a matplotlib figure

``arraybench.load_results("benchmark_plots")`` reads a saved run; ``arraybench.compare(a, b)``
judges two runs cell by cell.
"""

from __future__ import annotations

import os

from .accuracy import Check
from .api import compare, numerics, resume, run, sweep
from .errors import ResultsError, UsageError
from .measurement import Replicate
from .options import RunOptions
from .records import Record
from .reporter import Reporter
from .results import Results
from .session import Interrupted
from .workloads.definition import Work, Workload, workload
from .workloads.inputs import fixed

__all__ = [
    "Check", "Interrupted", "Record", "Replicate", "Reporter", "Results", "ResultsError",
    "RunOptions", "UsageError", "Work", "Workload", "compare", "fixed", "load_results", "numerics",
    "resume", "run", "sweep", "workload",
]


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read a ``results.json``, or the one in a folder (validated).

    ``Results.records`` holds the records; ``Results.to_dataframe()`` gives them as a pandas
    DataFrame where pandas is installed. A missing or damaged file raises ``ResultsError``.
    """
    from .results import load, resolve

    return load(resolve(path))
