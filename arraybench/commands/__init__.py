"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import catalog, info, run

#: In the order ``--help`` lists them.
COMMANDS = (run, catalog, info)
