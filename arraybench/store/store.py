"""The store: runs in, history out. ``Store.add`` appends a run in one transaction, idempotently; a
run that went on (``--resume``) replaces its interrupted self, but a copy lacking a measurement the
stored one holds never does (a results.json is anyone's to edit). Rows are read as untrusted: one
of the wrong shape is skipped, and ``Store.notes`` says which. A run is saved before it is stored,
so ``store_run`` may not undo it: a store that fails is one ``StoreWarning``."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import warnings
from collections import Counter
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterable, Sequence, TypeVar, Union

from ..errors import StoreWarning, UsageError, one_line
from ..model import schema
from ..model.schema import check_environment
from ..model.results import Results, from_dict
from ..model.runs import Entry, RunInfo, content_sha, machine_environment, machine_id_of, run_id
from .database import (Database, StoreError, connect, default_location, describe_location, is_postgres,
                       migrate, redact, resolve_location)

if TYPE_CHECKING:
    from ..analysis.history import History

T = TypeVar("T")

ADDED, SAME, UPDATED, KEPT, NOT_A_RUN, REFUSED = ("added", "already stored", "updated", "kept",
                                                  "not a run", "refused")


@dataclass(frozen=True)
class Added:
    """What ``Store.add`` did with one run: ``outcome`` is ``added``, ``already stored``, ``updated`` (it
    went on), ``kept`` (the stored one is complete and this is not), ``refused`` (it lacks measurements
    the stored one holds) or ``not a run`` (a merge: its runs are stored on their own)."""

    run_id: str
    outcome: str
    records: int = 0


@dataclass(frozen=True)
class StoredRun:
    """One run in the store, without its records."""

    run_id: str
    started_at: str
    stored_at: str
    complete: bool
    arraybench: str
    machine_id: str
    source: str
    context: dict[str, str]
    records: int
    #: Records with a measured time: 0 for a run whose every cell was skipped or failed.
    measured: int = 0
    #: The folder the run was started in (its git work tree's top); None for runs stored before
    #: arraybench recorded it.
    project: str | None = None


#: A run's row, as a first add inserts it and a later one of the same run (resumed, longer) replaces it.
_INSERT_RUN = ("INSERT INTO runs (run_id, content_sha, started_at, stored_at, complete, arraybench, "
               "machine_id, source, context, settings, environment, results, project) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_RECORD_COLUMNS = tuple(f.name for f in fields(Entry))


class Store(contextlib.AbstractContextManager):
    """An open store; use ``open_store``, and close it (or use it in ``with``)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = db.location
        #: What reading skipped, one line each ("run 1a2b…: context is not an object").
        self.notes: list[str] = []

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def describe(self) -> str:
        return describe_location(self.location)

    # -- writing --------------------------------------------------------------------------------
    def add(self, results: Results, source: str = "") -> Added:
        """Append one run (see the module's docstring)."""
        rid = run_id(results)
        if "merged_from" in results.settings:
            return Added(rid, NOT_A_RUN)
        sha = content_sha(results)
        env = results.environment
        rows = [(rid, r.machine, machine_id_of(machine_environment(env, r.machine)), r.key, r.workload,
                 r.size_label, r.size, r.backend, r.device, r.dtype, r.mode, int(r.transfer), r.status,
                 r.median_s, r.ci_low_s, r.ci_high_s, r.n_replicates) for r in results.records]  # ``Entry``'s order
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        project = env.get("project")
        run_row = (rid, sha, str(env.get("timestamp") or now), now, int(results.complete),
                   str(env.get("arraybench") or ""), machine_id_of(env), source,
                   _json(env.get("context") or {}), _json(results.settings), _json(env),
                   _json(results.to_dict()), project if isinstance(project, str) and project else None)
        with self.db.write():
            inserted = self.db.changes(_INSERT_RUN + " ON CONFLICT (run_id) DO NOTHING", run_row)
            if not inserted:
                stored = self.db.execute("SELECT content_sha, complete, results FROM runs WHERE run_id = ?",
                                         (rid,))
                if stored and stored[0][0] == sha:
                    return Added(rid, SAME)
                if stored and stored[0][1] and not results.complete:
                    return Added(rid, KEPT)
                if stored and not _continues(_loads(stored[0][2]), results):
                    return Added(rid, REFUSED)
                self.db.execute("DELETE FROM records WHERE run_id = ?", (rid,))
                self.db.execute("DELETE FROM runs WHERE run_id = ?", (rid,))
                self.db.execute(_INSERT_RUN, run_row)
            placeholders = ", ".join("?" for _ in _RECORD_COLUMNS)
            for row in rows:
                self.db.execute(f"INSERT INTO records ({', '.join(_RECORD_COLUMNS)}) "
                                f"VALUES ({placeholders})", row)
        return Added(rid, ADDED if inserted else UPDATED, len(rows))

    # -- reading --------------------------------------------------------------------------------
    def runs(self, *, machine: str | None = None, project: str | None = None) -> list[StoredRun]:
        """The runs stored, oldest first, of a machine id prefix, of a project (columns in
        ``StoredRun``'s order)."""
        where, params = _where(machine=machine, project=project, table="runs")
        rows = self.db.execute(
            "SELECT run_id, started_at, stored_at, complete, arraybench, machine_id, source, context, "
            "(SELECT COUNT(*) FROM records WHERE records.run_id = runs.run_id), "
            "(SELECT COUNT(*) FROM records WHERE records.run_id = runs.run_id "
            "AND records.status = 'ok'), project "
            f"FROM runs{where} ORDER BY started_at, run_id", params)
        out = []
        for r in rows:
            data = dict(zip((f.name for f in fields(StoredRun)), r))
            data.update(complete=bool(r[3]) if isinstance(r[3], int) else r[3], context=_loads(r[7]))
            if (run := self._read(StoredRun, data, f"run {str(r[0])[:120]}")) is not None:
                out.append(run)
        return out

    def entries(self, *, workloads: Sequence[str] = (), backends: Sequence[str] = (),
                machine: str | None = None, since: str | None = None) -> tuple[list[Entry], dict[str, RunInfo]]:
        """The records that match, and the runs they belong to (for ``analysis.history``)."""
        where, params = _where(since=since, machine=machine, table="records",
                               workloads=workloads, backends=backends)
        cols = ", ".join(f"records.{c}" for c in _RECORD_COLUMNS)
        rows = self.db.execute(
            f"SELECT {cols} FROM records JOIN runs ON runs.run_id = records.run_id{where} "
            "ORDER BY runs.started_at, records.run_id", params)
        entries = []
        for row in rows:
            data = dict(zip(_RECORD_COLUMNS, row))
            data["transfer"] = bool(data["transfer"]) if isinstance(data["transfer"], int) else data["transfer"]
            label = f"record {str(data['cell'])[:80]} of run {str(data['run_id'])[:16]}"
            if (entry := self._read(Entry, data, label)) is not None:
                entries.append(entry)
        ids = sorted({e.run_id for e in entries})
        runs: dict[str, RunInfo] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            for r in self.db.execute(
                    "SELECT run_id, started_at, complete, environment, settings, context FROM runs "
                    f"WHERE run_id IN ({', '.join('?' for _ in part)})", part):
                data = dict(zip((f.name for f in fields(RunInfo)), r))
                data.update({k: _loads(data[k]) for k in ("environment", "settings", "context")},
                            complete=bool(data["complete"]))
                if (info := self._read(RunInfo, data, f"run {str(r[0])[:120]}")) is not None:
                    runs[r[0]] = info
        return [e for e in entries if e.run_id in runs], runs

    def _read(self, cls: type[T], data: dict[str, Any], label: str) -> T | None:
        """A row as ``cls``; None, and a note naming ``label``, where a part has the wrong type or shape."""
        try:
            check_environment(data.get("environment", {}))
            return schema.from_json(cls, data)
        except schema.SchemaError as exc:
            note = one_line(f"store {self.describe()}: skipped {label}: {exc}")
            if note not in self.notes:
                self.notes.append(note)
            return None

    def results(self, run: str) -> Results:
        """A stored run back whole, by its id (``refs.run_id_of`` finds one from a prefix)."""
        rows = self.db.execute("SELECT results FROM runs WHERE run_id = ?", (run,))
        if not rows:
            raise StoreError(f"store {self.describe()}: no run {run!r}")
        return from_dict(_loads(rows[0][0]), f"stored run {run}")


def open_store(location: str | os.PathLike[str] | None = None, *, create: bool = True) -> Store:
    """Open (creating and migrating) the store at ``location`` (None: the default). ``create=False``: a
    missing SQLite file is a ``StoreError``, not a new store at a mistyped path."""
    resolved = resolve_location(location)
    if not create and not is_postgres(resolved) and not os.path.lexists(resolved):
        default = location is None or resolved == default_location()
        raise StoreError(f"no store at {redact(resolved)}" + (
            ": no run has been stored yet" if default else
            ": nothing was ever stored there (a mistyped path?)"))
    db = connect(resolved)
    try:
        migrate(db)  # a file that is no database says so at its first statement, here
    except BaseException:
        db.close()
        raise
    return Store(db)


def _where(*, since: str | None = None, machine: str | None, table: str, project: str | None = None,
           workloads: Iterable[str] = (), backends: Iterable[str] = ()) -> tuple[str, list[Any]]:
    given = [("runs.started_at >= ?", since or None), ("runs.project = ?", project),
             (f"{table}.machine_id LIKE ?", f"{machine}%" if machine else None)]
    clauses = [clause for clause, value in given if value is not None]
    params: list[Any] = [value for _, value in given if value is not None]
    for column, values in (("workload", list(workloads)), ("backend", list(backends))):
        if values:
            clauses.append(f"records.{column} IN ({', '.join('?' for _ in values)})")
            params.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _loads(text: Any) -> Any:
    """A stored JSON column, parsed as untrusted (plain JSON, bounded); None where it is not JSON."""
    try:
        return schema.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _replicates(data: Any) -> dict[tuple[str, str], list[str]]:
    """A results dict's replicates by (machine, cell), each as canonical JSON."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in (data.get("records") if isinstance(data, dict) else None) or []:
        if isinstance(r, dict) and isinstance(r.get("replicates"), list):
            key = (str(r.get("machine") or ""), _json([r.get(k) for k in (
                "workload", "size_label", "backend", "device", "dtype", "mode", "transfer", "params",
                "environment")]))
            out.setdefault(key, []).extend(_json(rep) for rep in r["replicates"])
    return out


def _continues(stored: Any, results: Results) -> bool:
    """Whether ``results`` holds every replicate the stored copy holds (it went on), so replacing loses none."""
    new = _replicates(json.loads(_json(results.to_dict())))
    return all(not Counter(reps) - Counter(new.get(key, [])) for key, reps in _replicates(stored).items())


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
    with contextlib.ExitStack() as stack:
        try:
            opened = stack.enter_context(open_store(location))
            added = opened.add(results, source=source)
        except Exception as exc:  # the run is measured and saved: the store must not undo that
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
    location = None if store is True else store
    try:
        with open_store(location) as opened:
            return _history_of_run(opened, results)
    except Exception as exc:  # a report is still written without it
        _warn(f"no history in the report: {_text(exc, location)}")
        return None


def _history_of_run(opened: Store, results: Results) -> "History | None":
    """The history of the run's own cells, from the store; None where no cell has two runs."""
    from ..analysis.history import history

    single = "machines" not in results.environment
    entries, runs = opened.entries(workloads=sorted({r.workload for r in results.records}),
                                   machine=(machine_id_of(results.environment) or None) if single else None)
    cells = {r.key for r in results.records}
    found = history([e for e in entries if e.cell in cells], runs).restricted(cells)
    return found if found.series else None
