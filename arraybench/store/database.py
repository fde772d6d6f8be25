"""One connection to a store's database, SQLite or PostgreSQL, behind the same few calls.

SQL is written once, with ``?`` placeholders and types both databases read the same way (TEXT,
INTEGER, DOUBLE PRECISION); PostgreSQL gets ``%s``. Every write happens in one transaction
(``write()``): SQLite's ``BEGIN IMMEDIATE`` takes the write lock at once, so two writers queue
instead of failing half-way, and a writer killed mid-transaction leaves the database as it was
before it (SQLite's rollback journal, PostgreSQL's own transactions). Driver errors become one
``StoreError`` line.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Sequence

from .errors import StoreError, StoreWarning
from .location import describe_location, is_postgres

__all__ = ["BUSY_TIMEOUT", "Database", "StoreError", "StoreWarning", "connect"]

#: How long a writer waits for another's transaction before giving up (seconds).
BUSY_TIMEOUT = 60.0


class Database:
    """A connection; ``dialect`` is ``"sqlite"`` or ``"postgresql"``."""

    dialect = ""

    def __init__(self, location: str) -> None:
        self.location = location

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one statement; return its rows (empty for a statement without any)."""
        raise NotImplementedError

    def changes(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement that writes; return how many rows it changed."""
        raise NotImplementedError

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One transaction: everything inside is written, or nothing."""
        raise NotImplementedError
        yield

    def close(self) -> None:
        raise NotImplementedError

    def _fail(self, exc: Exception) -> StoreError:
        text = " ".join(str(exc).split()) or exc.__class__.__name__
        return StoreError(f"store {describe_location(self.location)}: {text}")


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
            self._conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT, isolation_level=None)
            self._conn.execute("PRAGMA schema_version").fetchall()  # "file is not a database" here
        except OSError as exc:
            raise StoreError(f"store {path}: cannot create it ({exc.strerror or exc})") from None
        except sqlite3.Error as exc:
            raise self._fail(exc) from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc) from None

    def changes(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            return self._conn.execute(sql, tuple(params)).rowcount
        except sqlite3.Error as exc:
            raise self._fail(exc) from None

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

    def close(self) -> None:
        self._conn.close()


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

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))
            return cur.fetchall() if cur.description is not None else []
        except self._errors as exc:
            raise self._fail(exc) from None

    def changes(self, sql: str, params: Sequence[Any] = ()) -> int:
        try:
            return self._conn.execute(sql.replace("?", "%s"), tuple(params)).rowcount
        except self._errors as exc:
            raise self._fail(exc) from None

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        try:
            with self._conn.transaction():
                yield
        except self._errors as exc:
            raise self._fail(exc) from None

    def close(self) -> None:
        self._conn.close()


def connect(location: str) -> Database:
    """A connection to the store at ``location`` (a resolved path or a postgresql:// URL)."""
    return PostgreSQL(location) if is_postgres(location) else SQLite(location)
