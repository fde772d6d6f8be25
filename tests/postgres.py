"""A throwaway PostgreSQL server on 127.0.0.1 for the store's tests, started from Debian's
``postgresql`` package (``.ci/run`` installs it, best effort); the tests skip, saying why, where
it is not installed or cannot start."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running server: ``url(db)`` for a database in it, ``new_database()`` for a fresh one."""

    def __init__(self, port: int) -> None:
        self.port = port

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://arraybench@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def start(root: Path):
    """Start a server under ``root``; yield it; stop it. Skips with the reason where it cannot."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package; .ci/run installs it)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[postgres]')")
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the package's own user
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run PostgreSQL as")
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()
    init = subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "arraybench",
                           "--auth=trust", "-E", "UTF8", "--no-sync"], capture_output=True, text=True,
                          timeout=120)
    if init.returncode != 0:
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    started = subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
                              "-l", str(root / "log"), "-w", "-t", "60", "start"],
                             capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        log = (root / "log").read_text(errors="replace")[-300:] if (root / "log").exists() else ""
        pytest.skip(f"PostgreSQL did not start: {started.stderr.strip()[-200:]} {log}")
    try:
        yield Server(port)
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def new_root() -> Path:
    """A folder the server's user can enter (pytest's own tmp folders are private to root)."""
    return Path(tempfile.mkdtemp(prefix="arraybench-pg-"))
