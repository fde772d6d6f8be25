"""Keeping finished runs in a store, and reading a run's history back for its report. A run is saved
before it is stored, so nothing here may undo it: a store that fails is one ``StoreWarning``."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, Union

from ..errors import StoreWarning, UsageError, one_line
from .location import redact
from .store import REFUSED, open_store

if TYPE_CHECKING:
    from ..analysis.history import History
    from ..model.results import Results

#: Where a run is stored: ``True`` the default store (the user's data folder), ``False`` none, or
#: a file path (SQLite) or ``postgresql://`` URL.
StoreChoice = Union[bool, str, "os.PathLike[str]"]


def store_run(results: Results, store: StoreChoice = True, *, source: str = "",
              history: bool = False) -> "History | None":
    """Append ``results`` to a store (see ``run``), never raising for the store's sake; with ``history``,
    the history of its cells on its machine where the store holds earlier runs of them."""
    if store is False or store is None:
        return None
    location = None if store is True else store
    where = f" (`arraybench store import {source}` adds it later)" if source else ""
    try:
        opened = open_store(location)
    except Exception as exc:  # the run is measured and saved: the store must not undo that
        _warn(f"the run was not stored: {_text(exc, location)}{where}")
        return None
    with opened:
        try:
            added = opened.add(results, source=source)
        except Exception as exc:
            _warn(f"the run was not stored: {_text(exc, location)}{where}")
            return None
        if added.outcome == REFUSED:
            _warn(f"the run was not stored: the store {opened.describe()} holds another run with its id "
                  f"{added.run_id}, with measurements this one lacks")
        if not history:
            return None
        try:
            return _history_of_run(opened, results)
        except Exception as exc:  # the run is stored; its report goes without history
            _warn(f"the run was stored, but its report has no history: {_text(exc, location)}")
            return None


def _text(exc: Exception, location: Any) -> str:
    """An exception as one line, its passwords redacted."""
    text = str(exc) if isinstance(exc, UsageError) else one_line(f"{exc.__class__.__name__}: {exc}")
    return redact(text, None if location is None else os.fspath(location))


def _warn(text: str) -> None:
    warnings.warn(StoreWarning(text), stacklevel=3)


def history_of_run(results: Results, store: StoreChoice = True) -> "History | None":
    """The history of ``results``' cells on its machine from a store, or None (a failure is a ``StoreWarning``)."""
    if store is False or store is None:
        return None
    try:
        with open_store(None if store is True else store) as opened:
            return _history_of_run(opened, results)
    except Exception as exc:  # a report is still written without it
        _warn(f"no history in the report: {_text(exc, None if store is True else store)}")
        return None


def _history_of_run(opened: Any, results: Results) -> "History | None":
    """The history of the run's own cells, from the store; None where no cell has two runs."""
    from ..analysis.history import history
    from ..model.runs import machine_id_of

    single = "machines" not in results.environment
    entries, runs = opened.entries(workloads=sorted({r.workload for r in results.records}),
                                   machine=(machine_id_of(results.environment) or None) if single else None)
    cells = {r.key for r in results.records}
    found = history([e for e in entries if e.cell in cells], runs).restricted(cells)
    return found if found.series else None
