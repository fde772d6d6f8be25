"""Naming a stored run, as git names commits: its id (or its first characters), ``last`` (the latest
of this project on this machine), ``last~N``; ``machine:`` counts every project's. A project is the
git work tree a run began in, else its folder: a shared store holds everyone's runs, and ``last``
must be yours (runs stored before projects were recorded are named only machine-wide). A pytest
session's baseline (``find``) is the newest such run that measured any of its cells."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

from ..errors import ResultsError, StoreError, UsageError
from ..model.results import Results, load, resolve
from ..model.runs import machine_id, machine_id_of, run_id
from .store import Store, open_store

#: ``last``, ``last~N``, and the same after ``machine:`` (every project's runs on this machine).
LAST = re.compile(r"(machine:)?last(?:~(\d{1,6}))?")
#: Run ids are hex digits (16 of them); four are enough to name one in most stores.
_ID = re.compile(r"[0-9a-f]{4,64}")

#: How a reference is written, for messages.
FORMS = "a stored run's id or its first characters, last or last~N (this project's), or machine:last"


def run_id_of(store: Store, ref: str, machine: str | None = None, project: str | None = None) -> str:
    """The id of the run ``ref`` names; ``last`` counts ``machine``'s runs of ``project`` (None: all); ``StoreError`` if none."""
    last = LAST.fullmatch(ref)
    if last:
        back = int(last.group(2) or 0)
        scoped = project if not last.group(1) else None
        # An interrupted run, or one that measured nothing, is stored but never `last`.
        runs = [r for r in store.runs(machine=machine, project=scoped) if r.complete and r.measured]
        if back >= len(runs):
            whose = (f" of this project ({scoped})" if scoped else "") + (" from this machine" if machine else "")
            held = f"holds {len(runs)} complete run{'s' if len(runs) != 1 else ''}{whose}"
            wider = f"; machine:{ref} counts every project's" if scoped else ""
            raise StoreError(f"{ref}: the store {store.describe()} {held}"
                             + ("" if runs else "; runs are stored as they finish") + wider)
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


def stored_results(store: Store, ref: str, machine: str | None = None,
                   project: str | None = None) -> Results:
    """The run ``ref`` names, whole (see ``run_id_of``)."""
    return store.results(run_id_of(store, ref, machine, project))


def this_machine() -> str:
    """This machine's id, as its runs are stored under."""
    from ..host import machine

    return machine_id(machine.fingerprint(machine.gpus()))


def run_fields(results: Results) -> dict[str, str | None]:
    """Which run ``results`` is: ``id``, ``date``, ``folder`` and ``commit`` (``+dirty``); None where unrecorded."""
    env = results.environment
    context = env.get("context") if isinstance(env.get("context"), dict) else {}
    commit = context.get("commit")
    if commit and context.get("dirty") == "yes":
        commit = f"{commit}+dirty"
    return {"id": run_id(results), "date": _text(env.get("timestamp")),
            "folder": _text(env.get("project")), "commit": _text(commit)}


def run_line(role: str, results: Results, width: int) -> str:
    """``base: run 1a2b…, 2026-12-06 07:29:41 UTC, /src/proj, commit abc123``, wrapped to ``width``."""
    fields = run_fields(results)
    date = fields["date"]
    if date and len(date) >= 16 and date[10] == "T":  # ISO 8601 in UTC, as runs record it
        date = f"{date[:10]} {date[11:19]}" + (" UTC" if date.endswith(("+00:00", "Z")) else "")
    line = (f"{role + ':':<5} run {fields['id']}, {date or 'date not recorded'}, "
            f"{fields['folder'] or 'folder not recorded'}, "
            + (f"commit {fields['commit']}" if fields["commit"] else "no commit recorded"))
    return textwrap.fill(line, width=max(width, 40), subsequent_indent=" " * 6, break_long_words=False,
                         break_on_hyphens=False)


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def load_run(given: "str | os.PathLike[str]", location: "str | os.PathLike[str] | None" = None) -> Results:
    """A run a user named: a results.json or its folder (a path that exists is always read as one), else a
    stored run named by ``FORMS``; ``ResultsError`` or ``StoreError`` in one line."""
    from ..host import git

    text = os.fspath(given)
    path = Path(text)
    if path.exists() or path.is_symlink() or not (LAST.fullmatch(text) or _ID.fullmatch(text)):
        try:
            return load(resolve(path))
        except ResultsError as exc:
            if path.exists() or path.is_symlink():
                raise
            raise ResultsError(f"{exc}; nor does it name a stored run ({FORMS})") from None
    last = LAST.fullmatch(text)
    with open_store(location, create=False) as store:
        return stored_results(store, text, this_machine() if last else None,
                              git.project() if last and not last.group(1) else None)


#: What a run id given to the pytest plugin may be (checked before anything is measured).
_RUN_ID = re.compile(r"[0-9A-Za-z_-]+")


def check_choice(text: str) -> None:
    """``UsageError`` unless ``text`` is ``last``, ``last~N`` or something a run id could be."""
    if not (LAST.fullmatch(text) or _RUN_ID.fullmatch(text)):
        raise UsageError(f"--arraybench-compare: {text!r} is not last, last~N or a run id "
                         "(arraybench store list shows them)")


def check_named(store: Store, text: str) -> None:
    """A named run must be in the store before anything is measured (``UsageError`` if not)."""
    if not LAST.fullmatch(text):
        try:
            run_id_of(store, text)
        except StoreError as exc:
            raise UsageError(f"--arraybench-compare={text}: {exc} (arraybench store list shows them)") from None


def find(store: Store, text: str, new: Results) -> tuple[Results | None, str]:
    """The baseline for ``new`` and a line saying which run it is (or why there is none)."""
    last = LAST.fullmatch(text)
    if not last:
        base = stored_results(store, text)
        return base, f"compared with run {run_id(base)} (--arraybench-compare={text})"
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
