"""Naming a stored run: its id (or its first characters), ``last`` (the latest run stored from a
machine) or ``last~N`` (the N-th run before that one), as git names commits.

``compare``, ``report`` and ``history`` take these wherever they take a run's folder, so that a
run replaced in its folder (``--overwrite``) or measured elsewhere is still at hand:
``arraybench compare last~1 last``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import StoreError

if TYPE_CHECKING:
    from ..model.results import Results
    from .store import Store

_LAST = re.compile(r"last(?:~(\d{1,6}))?")
#: Run ids are hex digits (16 of them); four are enough to name one in most stores.
_ID = re.compile(r"[0-9a-f]{4,64}")

#: How a reference is written, for messages.
FORMS = "a stored run's id or its first characters, last, or last~N"


def is_reference(text: str) -> bool:
    """Whether ``text`` can name a stored run (it may still name none)."""
    return bool(_LAST.fullmatch(text) or _ID.fullmatch(text))


def run_id_of(store: "Store", ref: str, machine: str | None = None) -> str:
    """The id of the run ``ref`` names in ``store``; ``last`` counts only ``machine``'s runs (a
    machine id, None for every machine). ``StoreError`` says why none matches."""
    last = _LAST.fullmatch(ref)
    if last:
        back = int(last.group(1) or 0)
        # An interrupted run, or one that measured nothing, is stored but never `last`.
        runs = [r for r in store.runs(machine=machine) if r.complete and r.measured]
        if back >= len(runs):
            whose = " from this machine" if machine else ""
            held = f"holds {len(runs)} complete run{'s' if len(runs) != 1 else ''}{whose}"
            raise StoreError(f"{ref}: the store {store.describe()} {held}"
                             + ("" if runs else "; runs are stored as they finish"))
        return runs[-1 - back].run_id
    if not _ID.fullmatch(ref):  # never a pattern: `%` and `_` mean something to LIKE
        raise StoreError(f"{ref!r} names no stored run; give {FORMS}")
    ids = [r.run_id for r in store.runs()]
    if ref in ids:  # a whole id names its run, even where it is another's prefix
        return ref
    matches = [i for i in ids if i.startswith(ref)]
    if len(matches) != 1:
        what = "no run" if not matches else f"{len(matches)} runs ({', '.join(matches[:4])}…)"
        raise StoreError(f"{ref}: the store {store.describe()} holds {what} with that id")
    return matches[0]


def stored_results(store: "Store", ref: str, machine: str | None = None) -> "Results":
    """The run ``ref`` names, whole (see ``run_id_of``)."""
    return store.results(run_id_of(store, ref, machine))


def this_machine() -> str:
    """This machine's id, as its runs are stored under."""
    from ..host import machine
    from ..model.machines import machine_id

    return machine_id(machine.fingerprint(machine.gpus()))


def load_run(given: "str | os.PathLike[str]", location: "str | os.PathLike[str] | None" = None) -> "Results":
    """A run named by a user: a results.json or the folder holding one, else a run in the store
    at ``location`` (None: the default store) named by ``FORMS``; ``last`` is this machine's.

    A path that exists is always read as one; ``ResultsError`` or ``StoreError`` says in one
    line what is wrong."""
    from ..errors import ResultsError
    from ..model.results import load, resolve
    from .store import open_store

    text = os.fspath(given)
    path = Path(text)
    if path.exists() or path.is_symlink() or not is_reference(text):
        try:
            return load(resolve(path))
        except ResultsError as exc:
            if path.exists() or path.is_symlink():
                raise
            raise ResultsError(f"{exc}; nor does it name a stored run ({FORMS})") from None
    with open_store(location, create=False) as store:
        return stored_results(store, text, this_machine() if text.startswith("last") else None)
