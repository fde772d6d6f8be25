"""Every known workload by name, and the names that stand for several (groups).

The built-in workloads register when ``arraybench.workloads`` is imported; a user's register when
their file is imported or their ``@workload`` runs (in a notebook, say).
"""

from __future__ import annotations

import functools
from typing import Any

from .definition import Workload, define

REGISTRY: dict[str, "Workload"] = {}

#: The seed article's suite, in its order: what runs when no workload is named.
BUILTIN: tuple[str, ...] = ("elementwise", "matmul", "gradient", "fft", "sort")

#: Names that stand for several workloads in ``--workloads``.
GROUPS: dict[str, tuple[str, ...]] = {
    "seed": BUILTIN,
    "interop": ("from_list", "from_numpy", "copy_from_numpy", "to_numpy"),
    "transfer": ("from_numpy", "to_numpy"),
    "numerics": ("elementwise", "matmul", "gradient", "fft", "sort", "stats"),
}


def register(wl: "Workload") -> None:
    """Make a workload known by its name (a later definition of a name replaces the earlier)."""
    REGISTRY[wl.name] = wl


def expand(names: list[str]) -> list[str]:
    """Workload names with groups (``seed``, ``interop``, ``transfer``) expanded, in order, once each."""
    return list(dict.fromkeys(w for n in names for w in GROUPS.get(n, (n,))))


@functools.wraps(define)
def workload(fn: Any = None, /, **options: Any) -> Any:
    def decorate(f: Any) -> Workload:
        wl = define(**options)(f)
        register(wl)
        return wl

    return decorate(fn) if fn is not None else decorate


workload.__name__ = workload.__qualname__ = "workload"
workload.__doc__ = (define.__doc__ or "").replace("Define a workload", "Define a workload and make it known by name", 1)
