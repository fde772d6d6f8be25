"""Workloads: the built-in suite from the seed article, and the registry users add to.

Importing this package registers the built-ins. Defining a workload is ``definition``; building
its inputs ``inputs``; its float64 reference ``reference``; binding it to a library in a worker
``binding``; the names known, the built-ins among them, ``registry``.
"""

from __future__ import annotations

from .definition import Work, Workload
from .registry import BUILTIN, GROUPS, REGISTRY, expand, workload  # (registers the built-ins)

__all__ = ["BUILTIN", "GROUPS", "REGISTRY", "Work", "Workload", "expand", "workload"]
