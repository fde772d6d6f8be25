"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import catalog, compare, doctor, info, numerics, report, run, sweep

#: In the order ``--help`` lists them.
COMMANDS = (run, sweep, report, compare, numerics, catalog, info, doctor)
