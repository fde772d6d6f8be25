"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import catalog, compare, info, report, run

#: In the order ``--help`` lists them.
COMMANDS = (run, report, compare, catalog, info)
