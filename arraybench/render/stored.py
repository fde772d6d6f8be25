"""The runs the results store holds, as ``arraybench store list`` prints them."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table

from ..store.store import StoredRun
from .terminal import plain


def runs_table(runs: Sequence[StoredRun], where: str) -> Table:
    """One row per stored run: its id, when it started, its machine, records, whether it is
    complete, its context and the folder it came from."""
    table = Table(title=plain(f"arraybench store {where}: {len(runs)} run{'s' if len(runs) != 1 else ''}"),
                  title_justify="left", header_style="bold", pad_edge=False)
    for name in ("run", "started", "machine", "records", "complete", "context", "from"):
        table.add_column(name, overflow="fold", no_wrap=name in ("run", "started"))
    for r in runs:
        table.add_row(*map(plain, (r.run_id, r.started_at[:19].replace("T", " "), r.machine_id, r.records,
                                   "yes" if r.complete else "no",
                                   ", ".join(f"{k}={v}" for k, v in r.context.items()),
                                   r.source or "(in memory)")))
    return table
