"""Workloads: defining them, the built-in suite, and the registry users add to. Importing this
package registers the built-ins."""

from __future__ import annotations

from .definition import Work, Workload
from .registry import BUILTIN, GROUPS, REGISTRY, expand, workload  # (registers the built-ins)

__all__ = ["BUILTIN", "GROUPS", "REGISTRY", "Work", "Workload", "expand", "workload"]
