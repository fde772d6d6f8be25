"""The commands: one module each, with ``register(subparsers)`` setting ``handler``."""

from __future__ import annotations

from . import (catalog, compare, doctor, export, history, info, merge, numerics, report, run, store,
               sweep)

#: In the order ``--help`` lists them.
COMMANDS = (run, sweep, report, compare, numerics, history, merge, store, export, catalog, info,
            doctor)
