"""The store: runs in, history out.

``Store.add`` appends a run in one transaction (its row and its records, or nothing), and is
idempotent: the same results twice add nothing; a run that went on (``--resume``) replaces its
earlier, interrupted self. Concurrent writers queue on the database's write lock and lose nothing.
``Store.entries`` reads the records that ``arraybench history`` turns into series.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..analysis.history import Entry, RunInfo
from ..model.machines import environment_of, machine_id_of
from .database import Database, StoreError, connect
from .identity import content_sha, run_id
from .location import describe_location, resolve_location
from .migrations import migrate

if TYPE_CHECKING:
    from ..model.results import Results

ADDED, SAME, UPDATED, KEPT, NOT_A_RUN = ("added", "already stored", "updated", "kept",
                                         "not a run")


@dataclass(frozen=True)
class Added:
    """What ``Store.add`` did with one run: ``outcome`` is one of ``added``, ``already stored``,
    ``updated`` (the run went on since it was stored), ``kept`` (the store holds it complete and
    this copy is not), ``not a run`` (a merge of runs: its runs are stored on their own)."""

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


_RECORD_COLUMNS = ("run_id", "machine", "machine_id", "cell", "workload", "size_label", "size",
                   "backend", "device", "dtype", "mode", "transfer", "status", "median_s",
                   "ci_low_s", "ci_high_s", "n_replicates")


class Store:
    """An open store; use ``open_store``, and close it (or use it in ``with``)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.location = db.location

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def describe(self) -> str:
        return describe_location(self.location)

    # -- writing --------------------------------------------------------------------------------
    def add(self, results: "Results", source: str = "") -> Added:
        """Append one run (see the module's docstring)."""
        rid = run_id(results)
        if "merged_from" in results.settings:
            return Added(rid, NOT_A_RUN)
        sha = content_sha(results)
        env = results.environment
        rows = [_record_row(rid, results, r) for r in results.records]
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        run_row = (rid, sha, str(env.get("timestamp") or now), now, int(results.complete),
                   str(env.get("arraybench") or ""), machine_id_of(env), source,
                   _json(env.get("context") or {}), _json(results.settings), _json(env),
                   _json(results.to_dict()))
        with self.db.write():
            inserted = self.db.changes(
                "INSERT INTO runs (run_id, content_sha, started_at, stored_at, complete, arraybench, "
                "machine_id, source, context, settings, environment, results) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING", run_row)
            if not inserted:
                stored = self.db.execute("SELECT content_sha, complete FROM runs WHERE run_id = ?", (rid,))
                if stored and stored[0][0] == sha:
                    return Added(rid, SAME)
                if stored and stored[0][1] and not results.complete:
                    return Added(rid, KEPT)
                self.db.execute("DELETE FROM records WHERE run_id = ?", (rid,))
                self.db.execute("DELETE FROM runs WHERE run_id = ?", (rid,))
                self.db.execute(
                    "INSERT INTO runs (run_id, content_sha, started_at, stored_at, complete, "
                    "arraybench, machine_id, source, context, settings, environment, results) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", run_row)
            placeholders = ", ".join("?" for _ in _RECORD_COLUMNS)
            for row in rows:
                self.db.execute(f"INSERT INTO records ({', '.join(_RECORD_COLUMNS)}) "
                                f"VALUES ({placeholders})", row)
        return Added(rid, ADDED if inserted else UPDATED, len(rows))

    # -- reading --------------------------------------------------------------------------------
    def runs(self, *, since: str | None = None, machine: str | None = None) -> list[StoredRun]:
        """The runs stored, oldest first (``since``: an ISO time; ``machine``: a machine id prefix)."""
        where, params = _where(since=since, machine=machine, table="runs")
        rows = self.db.execute(
            "SELECT run_id, started_at, stored_at, complete, arraybench, machine_id, source, context, "
            "(SELECT COUNT(*) FROM records WHERE records.run_id = runs.run_id) "
            f"FROM runs{where} ORDER BY started_at, run_id", params)
        return [StoredRun(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], _loads(r[7]), int(r[8]))
                for r in rows]

    def entries(self, *, workloads: Sequence[str] = (), backends: Sequence[str] = (),
                machine: str | None = None, since: str | None = None) -> tuple[list[Entry], dict[str, RunInfo]]:
        """The records that match, and the runs they belong to (for ``analysis.history``)."""
        where, params = _where(since=since, machine=machine, table="records",
                               workloads=workloads, backends=backends)
        cols = ", ".join(f"records.{c}" for c in _RECORD_COLUMNS)
        rows = self.db.execute(
            f"SELECT {cols} FROM records JOIN runs ON runs.run_id = records.run_id{where} "
            "ORDER BY runs.started_at, records.run_id", params)
        entries = [Entry(**{**dict(zip(_RECORD_COLUMNS, r)), "transfer": bool(r[11])}) for r in rows]
        ids = sorted({e.run_id for e in entries})
        runs: dict[str, RunInfo] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            for r in self.db.execute(
                    "SELECT run_id, started_at, complete, environment, settings, context FROM runs "
                    f"WHERE run_id IN ({', '.join('?' for _ in part)})", part):
                runs[r[0]] = RunInfo(run_id=r[0], started_at=r[1], complete=bool(r[2]),
                                     environment=_loads(r[3]), settings=_loads(r[4]),
                                     context=_loads(r[5]))
        return entries, runs

    def results(self, run: str) -> "Results":
        """A stored run back whole, by its id (or a unique prefix of it)."""
        from ..model.results import from_dict

        rows = self.db.execute("SELECT run_id, results FROM runs WHERE run_id LIKE ?", (run + "%",))
        if len(rows) != 1:
            raise StoreError(f"store {self.describe()}: {'no' if not rows else 'more than one'} "
                             f"run {run!r}")
        return from_dict(_loads(rows[0][1]), f"stored run {rows[0][0]}")


def open_store(location: str | os.PathLike[str] | None = None) -> Store:
    """Open (creating and migrating as needed) the store at ``location``: a file path (SQLite),
    a ``postgresql://`` URL, or ``None`` for the default in the user's data folder."""
    db = connect(resolve_location(location))
    try:
        migrate(db)
    except BaseException:
        db.close()
        raise
    return Store(db)


def _record_row(rid: str, results: "Results", r: Any) -> tuple:
    return (rid, r.machine, machine_id_of(environment_of(results, r)), r.key, r.workload,
            r.size_label, r.size, r.backend, r.device, r.dtype, r.mode, int(r.transfer), r.status,
            r.median_s, r.ci_low_s, r.ci_high_s, r.n_replicates)


def _where(*, since: str | None, machine: str | None, table: str, workloads: Iterable[str] = (),
           backends: Iterable[str] = ()) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if since:
        clauses.append("runs.started_at >= ?" if table == "records" else "started_at >= ?")
        params.append(since)
    if machine:
        clauses.append(f"{table}.machine_id LIKE ?")
        params.append(machine + "%")
    for column, values in (("workload", list(workloads)), ("backend", list(backends))):
        if values:
            clauses.append(f"records.{column} IN ({', '.join('?' for _ in values)})")
            params.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {}
