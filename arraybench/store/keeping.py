"""Keeping finished runs in a store, and reading a run's own history back for its report.

A run is measured and saved before it is stored, so nothing here may undo it: a store that cannot
be opened, written or read is one ``StoreWarning``, and results.json keeps the run
(``arraybench store import`` adds it later).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, Union

from ..errors import UsageError, one_line
from .errors import StoreWarning
from .store import open_store

if TYPE_CHECKING:
    from ..analysis.history import History
    from ..model.results import Results

#: Where a run is stored: ``True`` the default store (the user's data folder), ``False`` none, or
#: a file path (SQLite) or ``postgresql://`` URL.
StoreChoice = Union[bool, str, "os.PathLike[str]"]


def store_run(results: Results, store: StoreChoice = True, *, source: str = "",
              history: bool = False) -> "History | None":
    """Append ``results`` to a store (see ``run``); with ``history``, return the history of the
    run's cells on its machine when the store holds earlier runs of them.

    Never raises for the store's sake: a store that cannot be opened or written is one
    ``StoreWarning``, and results.json keeps the run (``arraybench store import`` adds it later).
    """
    if store is False or store is None:
        return None
    try:
        with open_store(None if store is True else store) as opened:
            opened.add(results, source=source)
            return _history_of_run(opened, results) if history else None
    except Exception as exc:  # the run is measured and saved: the store must not undo that
        where = f" (`arraybench store import {source}` adds it later)" if source else ""
        text = str(exc) if isinstance(exc, UsageError) else one_line(f"{exc.__class__.__name__}: {exc}")
        warnings.warn(StoreWarning(f"the run was not stored: {text}{where}"), stacklevel=2)
        return None


def history_of_run(results: Results, store: StoreChoice = True) -> "History | None":
    """The history of ``results``' cells on its machine, from a store (as a run's report shows
    it); None where the store holds no earlier run of them. A store that cannot be read is a
    ``StoreWarning`` and None."""
    if store is False or store is None:
        return None
    try:
        with open_store(None if store is True else store) as opened:
            return _history_of_run(opened, results)
    except Exception as exc:  # a report is still written without it
        text = str(exc) if isinstance(exc, UsageError) else one_line(f"{exc.__class__.__name__}: {exc}")
        warnings.warn(StoreWarning(f"no history in the report: {text}"), stacklevel=2)
        return None


def _history_of_run(opened: Any, results: Results) -> "History | None":
    """The history of the run's own cells, from the store; None where no cell has two runs."""
    from ..analysis.history import history
    from ..model.machines import machine_id_of

    single = "machines" not in results.environment
    entries, runs = opened.entries(workloads=sorted({r.workload for r in results.records}),
                                   machine=(machine_id_of(results.environment) or None) if single else None)
    cells = {r.key for r in results.records}
    found = history([e for e in entries if e.cell in cells], runs).restricted(cells)
    return found if found.series else None
