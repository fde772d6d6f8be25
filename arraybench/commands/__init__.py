"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import catalog, info, numerics, run

#: In the order ``--help`` lists them.
COMMANDS = (run, numerics, catalog, info)
