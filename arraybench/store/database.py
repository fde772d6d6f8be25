"""Where a store is (a file path, a PostgreSQL URL, or ``results.sqlite`` in the user's data folder) and
one connection to it, SQLite or PostgreSQL, behind the same few calls and the same SQL, and the
versioned schema (``MIGRATIONS``: append a version, never edit a shipped one). Every write is one
transaction (SQLite's ``BEGIN IMMEDIATE``: writers queue instead of failing half-way)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import platformdirs

from ..errors import StoreError

STORE_FILE = "results.sqlite"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def default_location() -> str:
    """The store every run goes to unless told otherwise."""
    try:
        return str(Path(platformdirs.user_data_dir("arraybench", appauthor=False)) / STORE_FILE)
    except RuntimeError as exc:  # Path.home() without a home
        raise StoreError(f"no user data folder for the default store ({exc}); give --store PATH") from None


def is_postgres(location: str) -> bool:
    return location.startswith(POSTGRES_SCHEMES)


def resolve_location(location: str | os.PathLike[str] | None) -> str:
    """A store location as given (``None``: the default); a path made absolute."""
    if location is None:
        return default_location()
    text = os.fspath(location)
    if not str(text).strip():
        raise StoreError("--store is empty; give a file path or a postgresql:// URL")
    if is_postgres(str(text)):
        return str(text)
    try:
        return str(Path(text).expanduser().resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise StoreError(f"store {text}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None


#: A URL's ``user:password@``, a ``password=`` query parameter or connection option.
_USERINFO = re.compile(r"(://[^:/@\s\"']*:)[^@\s\"']*@")
# The value ends at a separator; a colon just before one is the sentence's ("…password=***: refused").
_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s\"']*?(?=:?(?:[&\s\"']|$)))",
                       re.IGNORECASE)


def redact(text: object, location: str | None = None) -> str:
    """``text`` with every password replaced by ``***`` (a URL's ``user:password@``, a ``password=``
    parameter, and ``location``'s own wherever quoted). Every shown location or message goes through here."""
    out = _PASSWORD.sub(r"\1***", _USERINFO.sub(r"\1***@", str(text)))
    for secret in _secrets(location) if location else ():
        out = out.replace(secret, "***")
    return out


def _secrets(location: str) -> list[str]:
    """The passwords a location holds, as written and as decoded (longest first)."""
    found = {m.group(0)[len(m.group(1)):-1] for m in _USERINFO.finditer(location)}
    found |= {m.group(2).strip("'") for m in _PASSWORD.finditer(location)}
    with contextlib.suppress(ValueError):  # a malformed URL: what the patterns found is all there is
        parts = urlsplit(location)
        found.add(parts.password or "")
        found |= {v for k, v in parse_qsl(parts.query) if k.lower() == "password"}
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if s and s != "***"), key=len, reverse=True)


def describe_location(location: str) -> str:
    """The location fit to print: its passwords replaced by ``***`` (``redact``)."""
    return redact(location, location)


#: How long a writer waits for another's transaction before giving up (seconds).
BUSY_TIMEOUT = 60.0
#: How long a PostgreSQL statement may run at most, lock waits aside (seconds).
STATEMENT_TIMEOUT = 600.0
#: SQLite waits this long inside the library at a time (seconds); Python retries in between.
_SQLITE_POLL = 0.05

T = TypeVar("T")


class Database:
    """A connection; ``dialect`` is ``"sqlite"`` or ``"postgresql"``."""

    dialect = ""
    _conn: Any

    def __init__(self, location: str) -> None:
        self.location = location

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement; return its rows (empty for a statement without any)."""
        return self._run(sql, params, lambda cur: cur.fetchall() if cur.description is not None else [])

    def changes(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement that writes; return how many rows it changed."""
        return self._run(sql, params, lambda cur: cur.rowcount)

    def _run(self, sql: str, params: Sequence[Any], read: Callable[[Any], T]) -> T:
        """``read`` of the cursor that ran one statement, the driver's errors a ``StoreError``."""
        raise NotImplementedError

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One transaction: everything inside is written, or nothing."""
        raise NotImplementedError
        yield

    def close(self) -> None:
        self._conn.close()

    def _fail(self, exc: Exception, note: str = "") -> StoreError:
        text = " ".join(str(exc).split()) or exc.__class__.__name__
        return StoreError(f"store {describe_location(self.location)}: {redact(text, self.location)}{note}")


class SQLite(Database):
    dialect = "sqlite"

    def __init__(self, location: str) -> None:
        super().__init__(location)
        path = Path(location)
        if path.is_dir():
            raise StoreError(f"store {path}: is a folder; name a file, e.g. {path / 'results.sqlite'}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; ``write`` opens its own.
            self._conn = sqlite3.connect(str(path), timeout=_SQLITE_POLL, isolation_level=None)
        except OSError as exc:
            raise StoreError(f"store {path}: cannot create it ({exc.strerror or exc})") from None
        except sqlite3.Error as exc:
            raise self._fail(exc) from None

    def _patiently(self, call: Callable[[], T]) -> T:
        """``call()``, retried in short waits (so a signal is handled) while another process holds the database."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                return call()
            except sqlite3.OperationalError as exc:
                busy = getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) \
                    or "database is locked" in str(exc)
                if not busy:
                    raise self._fail(exc) from None
                if time.monotonic() >= deadline:
                    raise self._fail(exc, f" (another process holds it; gave up after {BUSY_TIMEOUT:g} s)") from None
            except sqlite3.Error as exc:
                raise self._fail(exc) from None
            time.sleep(_SQLITE_POLL)

    def _run(self, sql: str, params: Sequence[Any], read: Callable[[Any], T]) -> T:
        return self._patiently(lambda: read(self._conn.execute(sql, tuple(params))))

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        self.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise
        self.execute("COMMIT")


class PostgreSQL(Database):
    dialect = "postgresql"

    def __init__(self, location: str) -> None:
        super().__init__(location)
        try:
            import psycopg
        except ImportError:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'arraybench[postgres]'") from None
        self._errors = psycopg.Error
        try:
            self._conn = psycopg.connect(location, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        # A table lock held elsewhere (LOCK TABLE, a stuck migration) must not hang a run for ever.
        try:
            self.execute("SELECT set_config('lock_timeout', ?, false), set_config('statement_timeout', ?, false)",
                         (f"{int(BUSY_TIMEOUT * 1000)}ms", f"{int(STATEMENT_TIMEOUT * 1000)}ms"))
        except BaseException:
            self._conn.close()
            raise

    def _fail(self, exc: Exception, note: str = "") -> StoreError:
        if getattr(exc, "sqlstate", None) == "55P03":  # lock_not_available: lock_timeout ran out
            note = f" (another session holds a lock on it; gave up after {BUSY_TIMEOUT:g} s)"
        return super()._fail(exc, note)

    def _run(self, sql: str, params: Sequence[Any], read: Callable[[Any], T]) -> T:
        try:
            return read(self._conn.execute(sql.replace("?", "%s"), tuple(params)))
        except self._errors as exc:
            raise self._fail(exc) from None

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        try:
            with self._conn.transaction():
                yield
        except self._errors as exc:
            raise self._fail(exc) from None


def connect(location: str) -> Database:
    """A connection to the store at ``location`` (a resolved path or a postgresql:// URL)."""
    return PostgreSQL(location) if is_postgres(location) else SQLite(location)


SCHEMA_VERSION = 2

#: PostgreSQL advisory lock key: two processes opening a new store do not both create it.
_LOCK_KEY = 16_016

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        # One row per run, with its whole results.json; ``run_id`` is stable across --resume, and
        # ``content_sha`` tells a re-import of the same file from a run that went on.
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
        # The folder a run began in (``refs``): ``last`` is the user's project's, not the machine's.
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
