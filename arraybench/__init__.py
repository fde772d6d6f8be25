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

import importlib
import os

# Not `from typing import ...`: importing typing takes milliseconds, and a Ctrl-C landing in them
# would be a traceback from inside arraybench (type checkers read the name TYPE_CHECKING as True).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .worker.accuracy import Check
    from .api import compare, merge, numerics, resume, run, sweep
    from .errors import ResultsError, SaveError, UsageError
    from .model.replicate import Replicate
    from .options import RunOptions
    from .model.record import Record
    from .reporter import Reporter
    from .model.results import Results
    from .session import Interrupted
    from .workloads.definition import Work, Workload, workload
    from .workloads.inputs import fixed

__all__ = [
    "Check", "Interrupted", "Record", "Replicate", "Reporter", "Results", "ResultsError",
    "RunOptions", "SaveError", "UsageError", "Work", "Workload", "compare", "fixed",
    "load_results", "merge", "numerics", "resume", "run", "sweep", "workload",
]

#: Where each public name lives. They are imported on first use (PEP 562), not with the package:
#: ``arraybench`` on the command line and every worker import the package first, and importing
#: NumPy and the rest here would leave a Ctrl-C during that second with nothing but a traceback
#: (and every worker slower to start).
_HOMES = {
    "Check": "worker.accuracy", "compare": "api", "merge": "api", "numerics": "api", "resume": "api",
    "run": "api", "sweep": "api", "ResultsError": "errors", "SaveError": "errors", "UsageError": "errors",
    "Replicate": "model.replicate", "RunOptions": "options", "Record": "model.record",
    "Reporter": "reporter", "Results": "model.results", "Interrupted": "session",
    "Work": "workloads.definition", "Workload": "workloads.definition",
    "workload": "workloads.definition", "fixed": "workloads.inputs",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        try:  # a submodule not imported yet: ``arraybench.backends``
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read a ``results.json``, or the one in a folder (validated).

    ``Results.records`` holds the records; ``Results.to_dataframe()`` gives them as a pandas
    DataFrame where pandas is installed. A missing or damaged file raises ``ResultsError``.
    """
    from .model.results import load, resolve

    return load(resolve(path))
