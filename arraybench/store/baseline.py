"""The stored run a pytest session is compared with: ``last``, ``last~N`` or a run id.

``last`` is the newest run in the store, from this machine and this project (``refs``), that
measured any of the session's cells: a store shared with ``arraybench run``, with other test
suites or with other people's projects gives the run that can be compared, not merely the newest.
``machine:last`` looks at every project's runs on this machine. ``last~1`` is the one before it.
A run id (or a unique prefix of one, as ``arraybench store list`` shows them) names a baseline
that stays put, which a CI gate wants: ``last`` moves on with every saved session, a slow one
included.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import UsageError
from .refs import LAST

if TYPE_CHECKING:
    from ..model.results import Results
    from . import Store

_RUN_ID = re.compile(r"[0-9A-Za-z_-]+")


def check_choice(text: str) -> None:
    """``UsageError`` unless ``text`` is ``last``, ``last~N`` or something a run id could be."""
    if not (LAST.fullmatch(text) or _RUN_ID.fullmatch(text)):
        raise UsageError(f"--arraybench-compare: {text!r} is not last, last~N or a run id "
                         "(arraybench store list shows them)")


def check_named(store: "Store", text: str) -> None:
    """A named run must be in the store before anything is measured (``UsageError`` if not)."""
    if LAST.fullmatch(text):
        return
    matches = [r.run_id for r in store.runs() if r.run_id.startswith(text)]
    if len(matches) != 1:
        how = "no run" if not matches else f"{len(matches)} runs"
        raise UsageError(f"--arraybench-compare={text}: {how} in store {store.describe()} "
                         f"{'has' if not matches else 'have'} that id "
                         f"({'arraybench store list shows them' if not matches else 'give more of it'})")


def find(store: "Store", text: str, new: "Results") -> tuple["Results | None", str]:
    """The baseline for ``new`` and a line saying which run it is (or why there is none)."""
    from ..model.machines import machine_id_of

    last = LAST.fullmatch(text)
    if not last:
        base = store.results(text)
        return base, f"compared with run {_id(base)} (--arraybench-compare={text})"
    back = int(last.group(2) or 0)
    cells = {r.key for r in new.records}
    machine = machine_id_of(new.environment) or None
    # This project's runs only, unless `machine:` asks for every project's (see ``refs``).
    project = None if last.group(1) else new.environment.get("project")
    entries, runs = store.entries(workloads=sorted({r.workload for r in new.records}), machine=machine)
    own = new.environment.get("run_id")
    sharing = {e.run_id for e in entries if e.cell in cells and e.run_id != own
               and runs[e.run_id].complete and e.status == "ok"
               and (project is None or runs[e.run_id].environment.get("project") == project)}
    newest_first = sorted(sharing, key=lambda rid: (runs[rid].started_at, rid), reverse=True)
    if back >= len(newest_first):
        held = len(newest_first)
        return None, (f"nothing to compare with: store {store.describe()} holds {held} earlier "
                      f"run{'s' if held != 1 else ''} of these cells on this machine"
                      + (" in this project" if project else "")
                      + (" (--arraybench-save stores this one)" if not held else f", not {back + 1}")
                      + (f"; machine:{text} counts every project's" if project else ""))
    rid = newest_first[back]
    return store.results(rid), f"compared with run {rid}, started {runs[rid].started_at[:19]} ({text})"


def _id(results: "Results") -> str:
    from ..model.runs import run_id

    return run_id(results)
