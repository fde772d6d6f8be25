"""The runs the results store holds, as ``arraybench store list`` prints them."""

from __future__ import annotations

from typing import Sequence

from rich.console import Group
from rich.text import Text

from ..store.store import StoredRun
from .fit import Column, Row, fitted_table, hidden_line
from .terminal import plain


def runs_table(runs: Sequence[StoredRun], where: str, width: int | None = None) -> Group:
    """One row per stored run: its id, when it started, its machine, records, whether it is
    complete (``no`` for an interrupted run, ``empty`` for one that measured nothing: neither is
    ever ``last``), its context and the folder it came from; fitted to ``width``."""
    columns = (Column("run", whole=True), Column("started", whole=True), Column("complete"),
               Column("records", True, 2),
               Column("machine", False, 3), Column("context", False, 1), Column("from", False, 4))
    rows = [Row([plain(x) for x in (r.run_id, r.started_at[:19].replace("T", " "),
                                     ("yes" if r.measured else "empty") if r.complete else "no",
                                     r.records, r.machine_id,
                                     ", ".join(f"{k}={v}" for k, v in r.context.items()),
                                     r.source or "(in memory)")]) for r in runs]
    # The store's location under the table, whole: a path folded into a title cannot be copied.
    title = f"arraybench store: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    table, dropped = fitted_table(title, columns, rows, width)
    line = hidden_line(dropped, width or 0)
    return Group(table, Text(f"store {where}", no_wrap=True, overflow="ignore"),
                 *([line] if line is not None else []))
