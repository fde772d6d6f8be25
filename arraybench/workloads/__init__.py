"""Workloads: the built-in five from the seed article, and the registry users add to."""

from __future__ import annotations

from .api import REGISTRY, Bound, Work, Workload, workload
from . import ceilings, elementwise, fft, gradient, interop, matmul, reductions, sort  # noqa: F401  (registers the built-ins)

__all__ = ["BUILTIN", "GROUPS", "REGISTRY", "Bound", "Work", "Workload", "expand", "get", "workload"]

#: The seed article's suite, in its order: what runs when no workload is named.
BUILTIN: tuple[str, ...] = ("elementwise", "matmul", "gradient", "fft", "sort")

#: Names that stand for several workloads in ``--workloads``.
GROUPS: dict[str, tuple[str, ...]] = {
    "seed": BUILTIN,
    "interop": ("from_list", "from_numpy", "copy_from_numpy", "to_numpy"),
    "transfer": ("from_numpy", "to_numpy"),
    "numerics": ("elementwise", "matmul", "gradient", "fft", "sort", "stats"),
}


def expand(names: list[str]) -> list[str]:
    """Workload names with groups (``seed``, ``interop``, ``transfer``) expanded, in order, once each."""
    out: list[str] = []
    for n in names:
        for w in GROUPS.get(n, (n,)):
            if w not in out:
                out.append(w)
    return out


def get(name: str) -> Workload:
    """A registered workload by name; ``KeyError`` lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
