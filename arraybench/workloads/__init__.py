"""Workloads: the built-in suite from the seed article, and the registry users add to.

Importing this package registers the built-ins. Defining a workload is ``definition``; building
its inputs ``inputs``; its float64 reference ``reference``; binding it to a library in a worker
``binding``; the names known ``registry``.
"""

from __future__ import annotations

from . import builtin  # noqa: F401  (registers the built-ins)
from .definition import Work, Workload
from .registry import workload
from .registry import BUILTIN, GROUPS, REGISTRY, expand

__all__ = ["BUILTIN", "GROUPS", "REGISTRY", "Work", "Workload", "expand", "workload"]
