"""The ``--store`` option shared by the commands that write or read the results store.

The location comes from what was typed, else ``[tool.arraybench] store`` in the project file
(``config``), else the default store in the user's data folder.
"""

from __future__ import annotations

import argparse

from ..errors import UsageError


def add_store_option(p: argparse.ArgumentParser | argparse._ArgumentGroup, what: str) -> None:
    p.add_argument("--store", default=None, metavar="PATH|URL",
                   help=f"the results store {what}: an SQLite file or a postgresql:// URL (default: "
                        "[tool.arraybench] store, else results.sqlite in your data folder, e.g. "
                        "~/.local/share/arraybench)")


def store_location(args: argparse.Namespace) -> str | None:
    """The store a reading command uses: typed, else the project's, else None (the default)."""
    typed = getattr(args, "store", None)
    if typed is not None:
        return typed
    project = getattr(args, "project", None)
    return project.values.get("store") if project is not None else None


def run_store_choice(args: argparse.Namespace) -> bool | str:
    """Where ``run`` stores: ``False`` with --no-store, a location, or ``True`` (the default)."""
    typed = getattr(args, "typed", set())
    if "store" in typed and "no_store" in typed and args.no_store:
        raise UsageError("--store and --no-store contradict each other; give one of them")
    if "store" in typed:
        return args.store
    if args.no_store:
        return False
    return args.store if args.store is not None else True
