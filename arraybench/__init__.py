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

#: Where each public name lives. They are imported on first use (PEP 562), not with the package:
#: ``arraybench`` on the command line and every worker import the package first, and importing
#: NumPy and the rest here would leave a Ctrl-C during that second with nothing but a traceback
#: (and every worker slower to start).
_HOMES = {
    "Check": "workloads.check", "compare": "api", "merge": "api", "numerics": "api", "resume": "api",
    "run": "api", "sweep": "api", "ResultsError": "errors", "SaveError": "errors", "UsageError": "errors",
    "Replicate": "model.replicate", "RunOptions": "model.options", "Record": "model.record",
    "Reporter": "model.journal", "Results": "model.results", "Interrupted": "executors.session",
    "Work": "workloads.definition", "Workload": "workloads.definition",
    "workload": "workloads.registry", "fixed": "workloads.inputs", "load_results": "api",
}
__all__ = sorted(_HOMES)  # type checkers read __init__.pyi


def __getattr__(name: str) -> object:
    if name == "__version__":  # read when asked: the metadata lookup costs a few milliseconds
        from .model import version

        return version()
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
