"""The store's schema, versioned: each version's statements, applied once, in order, in one transaction.

``schema_version`` holds one row per version applied. Opening a store brings it to
``SCHEMA_VERSION``; a store written by a later arraybench (a higher version) is refused rather
than written in a shape it does not expect. To change the schema, append a version: never edit
one that has shipped. The same statements run on SQLite and PostgreSQL.
"""

from __future__ import annotations

import datetime as _dt

from .database import Database
from .errors import StoreError
from .location import describe_location

SCHEMA_VERSION = 2

#: PostgreSQL advisory lock key: two processes opening a new store do not both create it.
_LOCK_KEY = 16_016

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        # One row per run: who, where, when, and the whole results.json (the store can give a run
        # back whole: merge, exports). ``run_id`` is stable across --resume; ``content_sha`` tells
        # a re-import of the same file from a run that went on.
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            content_sha TEXT NOT NULL,
            started_at TEXT NOT NULL,
            stored_at TEXT NOT NULL,
            complete INTEGER NOT NULL,
            arraybench TEXT NOT NULL,
            machine_id TEXT NOT NULL,
            source TEXT NOT NULL,
            context TEXT NOT NULL,
            settings TEXT NOT NULL,
            environment TEXT NOT NULL,
            results TEXT NOT NULL
        )""",
        # One row per record, with what history filters and plots on.
        """CREATE TABLE records (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            machine TEXT NOT NULL,
            machine_id TEXT NOT NULL,
            cell TEXT NOT NULL,
            workload TEXT NOT NULL,
            size_label TEXT NOT NULL,
            size INTEGER NOT NULL,
            backend TEXT NOT NULL,
            device TEXT NOT NULL,
            dtype TEXT NOT NULL,
            mode TEXT NOT NULL,
            transfer INTEGER NOT NULL,
            status TEXT NOT NULL,
            median_s DOUBLE PRECISION,
            ci_low_s DOUBLE PRECISION,
            ci_high_s DOUBLE PRECISION,
            n_replicates INTEGER NOT NULL,
            PRIMARY KEY (run_id, machine, cell)
        )""",
        "CREATE INDEX records_series ON records (machine_id, workload, cell)",
        "CREATE INDEX runs_started ON runs (started_at)",
    ),
    2: (
        # The folder a run was started in (its git work tree's top, else the current folder):
        # ``last`` is the latest run of the project the user stands in, not of whoever shares the
        # machine. Runs stored before have none (NULL) and are named only machine-wide.
        "ALTER TABLE runs ADD COLUMN project TEXT",
    ),
}


def current_version(db: Database) -> int:
    """The store's schema version (0: an empty database)."""
    if db.dialect == "sqlite":
        exists = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
    else:
        exists = [r for r in db.execute("SELECT to_regclass('schema_version')") if r[0] is not None]
    if not exists:
        return 0
    rows = db.execute("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0] or 0) if rows else 0


def migrate(db: Database) -> int:
    """Bring the store to ``SCHEMA_VERSION``; return the version it had."""
    found = current_version(db)
    if found == SCHEMA_VERSION:
        return found
    _refuse_newer(db, found)
    with db.write():
        if db.dialect == "postgresql":
            db.execute(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})")
        db.execute("CREATE TABLE IF NOT EXISTS schema_version "
                   "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        found = current_version(db)  # again, under the lock: another process may have migrated
        _refuse_newer(db, found)
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[version]:
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, now))
    return found


def _refuse_newer(db: Database, found: int) -> None:
    if found > SCHEMA_VERSION:
        raise StoreError(f"store {describe_location(db.location)}: schema version {found} is newer than "
                         f"this arraybench's ({SCHEMA_VERSION}); upgrade arraybench to use it")
