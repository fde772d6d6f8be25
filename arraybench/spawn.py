"""A worker process seen from the parent: start it, read its messages with a deadline, kill it.

Workers start in their own session, so a Ctrl-C in the terminal reaches only the parent, which then
stops the worker itself and keeps what was measured.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import heartbeat


class WorkerTimeout(Exception):
    """The worker made no progress within the deadline; ``cell`` is the index it was working on."""

    def __init__(self, cell: int, waited: float) -> None:
        self.cell = cell
        self.waited = waited
        super().__init__(f"no progress for {waited:.0f} s")


class WorkerExited(Exception):
    """The worker's output ended before it said it was done."""

    def __init__(self, returncode: int | None, last_error: str) -> None:
        self.returncode = returncode
        self.last_error = last_error
        super().__init__(describe_exit(returncode, last_error))


def describe_exit(returncode: int | None, last_error: str = "") -> str:
    """``killed by signal 11 (SIGSEGV)`` or ``exited with status 3``, plus the last error line."""
    if returncode is None:
        text = "stopped without an exit status"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        text = f"killed by signal {-returncode} ({name})"
    else:
        text = f"exited with status {returncode}"
    return f"{text}: {last_error}" if last_error else text


class WorkerProcess:
    """One running worker."""

    def __init__(self, job: dict[str, Any], *, env: Mapping[str, str], cpus: list[int] | None,
                 log_path: Path) -> None:
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.board_path = log_path.with_suffix(".board")
        heartbeat.create(self.board_path)
        job = {**job, "board": str(self.board_path)}
        self._log = open(log_path, "ab")
        preexec = None
        if cpus is not None and hasattr(os, "sched_setaffinity"):
            chosen = set(cpus)

            def preexec() -> None:  # runs in the child before exec: affinity is inherited
                os.sched_setaffinity(0, chosen)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arraybench.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(env),
            start_new_session=True,
            preexec_fn=preexec,
        )
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def current_cell(self) -> int:
        """The index (in the job's cells) of the cell the worker last said it was working on."""
        return heartbeat.read(self.board_path)[0]

    def messages(self, timeout: float) -> Iterator[dict[str, Any]]:
        """Messages as they come, while the worker shows progress at least every ``timeout`` seconds.

        Progress is a message or a change on the heartbeat board. Raises ``WorkerTimeout`` or
        ``WorkerExited``; returns normally after ``done``.
        """
        last_beat = heartbeat.read(self.board_path)
        last_progress = time.monotonic()
        while True:
            try:
                line = self._queue.get(timeout=min(1.0, timeout))
            except queue.Empty:
                beat = heartbeat.read(self.board_path)
                now = time.monotonic()
                if beat != last_beat:
                    last_beat, last_progress = beat, now
                elif now - last_progress >= timeout:
                    raise WorkerTimeout(beat[0], now - last_progress) from None
                continue
            last_progress = time.monotonic()
            if line is None:
                code = self._wait_exit()
                raise WorkerExited(code, self.last_error_line())
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue  # not ours: the protocol channel is private, but be tolerant
            yield msg
            if msg.get("event") == "done":
                return

    def _wait_exit(self) -> int | None:
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.returncode

    def last_error_line(self) -> str:
        """The last meaningful line the worker wrote to stderr (a Python error, a CUDA message)."""
        self._log.flush()
        try:
            data = self.log_path.read_bytes()[-20000:].decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
        for ln in reversed(lines):
            if not ln.startswith(("File ", "^", "~", "Traceback")):
                return ln[:300]
        return ""

    def kill(self) -> None:
        """Stop the worker and anything it started."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        """Wait for a normal exit (killing it if it lingers) and release resources."""
        deadline = time.monotonic() + 10
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.kill()
        self._log.close()
        try:
            self.board_path.unlink()
        except OSError:
            pass
        if self.proc.stdout is not None:
            self.proc.stdout.close()
