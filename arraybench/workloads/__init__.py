"""Workloads: the built-in five from the seed article, and the registry users add to."""

from __future__ import annotations

from .api import REGISTRY, Bound, Work, Workload, workload
from . import elementwise, fft, gradient, matmul, sort  # noqa: F401  (registers the built-ins)

__all__ = ["BUILTIN", "REGISTRY", "Bound", "Work", "Workload", "get", "workload"]

#: The seed article's suite, in its order.
BUILTIN: tuple[str, ...] = ("elementwise", "matmul", "gradient", "fft", "sort")


def get(name: str) -> Workload:
    """A registered workload by name; ``KeyError`` lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
