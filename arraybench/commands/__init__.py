"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import catalog, info, numerics, run, sweep

#: In the order ``--help`` lists them.
COMMANDS = (run, sweep, numerics, catalog, info)
