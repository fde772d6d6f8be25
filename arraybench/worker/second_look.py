"""A second look at a wrong first result, before it is reported ``wrong``.

Two questions, each answered by calling the workload once more, eager and untimed: does one more
call give the same wrong result (``second_opinion``: a deterministic error, or an intermittent
one that a user may meet only sometimes), and is the result wrong only through a known
limitation of the library, which its backend can show (``known_limitation``: then the cell is
skipped with that reason, never called ``wrong``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from . import accuracy
from ..backends.base import Backend, WrongResult
from ..model.cell import Cell
from ..workloads.definition import Workload
from .effects import FirstCall, to_host
from .timer import Timer


def host_copy(h: Any) -> Any:
    """A host input copied, as a list where the workload takes one."""
    return list(h) if isinstance(h, list) else np.array(h, copy=True)


def second_opinion(backend: Backend, wl: Workload, timer: Timer, seen: FirstCall,
                   arrays: tuple[Any, ...] | None, first_error: float | None,
                   judge: Callable[[Any], "accuracy.Verdict"]) -> str:
    """Whether one more call gives the same wrong result (``judge``: the first result's check):
    a deterministic error, or an intermittent one (a race, a library thread, the hardware) that a
    user may meet only sometimes.

    Only for calls that change none of their inputs (the inputs are then as the first call saw
    them); "" where it cannot be told.
    """
    if arrays is None or seen.changed or wl.mutated_positions(len(arrays)):
        return ""
    try:
        _, result = timer.first_call()  # one call, waited for, untimed as far as the samples go
        verdict = judge(to_host(backend, wl.result_of(result, list(arrays))))
    except Exception:
        return ""
    if verdict.ok:
        cause = backend.intermittent_cause(first_error)
        return ("a second call in the same process gave a correct result: the wrong one is "
                "intermittent, " + (cause or "a race or a fault, not the library's arithmetic on "
                                    "these inputs"))
    if verdict.max_rel_error == first_error:
        return "a second call gave the same error"
    return f"a second call was wrong too ({verdict.reason})"


def known_limitation(backend: Backend, wl: Workload, cell: Cell, host: tuple[Any, ...],
                     params: dict[str, Any], verdict: "accuracy.Verdict",
                     right: Callable[[Any], bool], same: Callable[[Any], bool]) -> str | None:
    """The backend's reason why a wrong first result is a known limitation of its library
    (``Backend.explain_wrong``), or None: then it stays wrong. Only an error the check measured,
    or a result in a narrower dtype than the run's (a library without the run's precision for
    some operation), is looked into (not a shape or NaNs), and not a gradient; whatever the
    backend's look raises leaves the verdict as it is."""
    if wl.grad or wl.namespace == "backend":
        return None
    measured = verdict.max_rel_error is not None and math.isfinite(verdict.max_rel_error)
    if not measured and not accuracy.is_dtype_reason(verdict.reason):
        return None
    fn = wl.function_for(backend.name)

    def rerun(xp: Any) -> Any:
        arrays = tuple(host_copy(h) for h in host) if wl.placement == "host" \
            else tuple(backend.asarray(h) for h in host)
        return to_host(backend, wl.result_of(fn(xp, *arrays, **params), list(arrays)))

    try:
        namespace = backend.namespace(wl.namespace_for(backend.name))
        return backend.explain_wrong(WrongResult(cell.dtype, namespace, verdict.reason.split(";")[0],
                                                 rerun, right, same))
    except Exception:  # looking into a wrong verdict must never cost it
        return None
