"""A worker process seen from the parent: start it, read its messages with a deadline, pause it, kill it.

Every child arraybench starts (measuring workers, the probe, the doctor's self-checks) is one of these.
Workers start in a session of their own, so a Ctrl-C reaches only the parent, which asks them to stop
(SIGTERM: send what is complete). A worker's whole process group (what its workload started) is
killed with it, while the worker is still a zombie, so that the group's id cannot have been reused.
"""

from __future__ import annotations

import math
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Callable, Hashable, Iterator, Mapping

from ..files import open_append
from ..worker import WORKER_CPUS, WORKER_PARENT
from ..worker.protocol import Board, Done, Job, Message, Unavailable, parse
from .watcher import unwatch, watch
from .worker_log import CappedLog, crash_site, describe_exit, last_error

#: How long a worker may take to import its library and open its device, however short ``--timeout``.
STARTUP_TIMEOUT_S = 120.0
#: How long the output of a worker that has exited is read on, for a child that still holds it.
PIPE_GRACE_S = 1.0
#: How long a worker asked to stop may take to send the cells it finished, with a core each.
STOP_GRACE_S = 5.0
#: The longest a stopping worker is waited for, however loaded the machine.
STOP_GRACE_MOST_S = 60.0


def stop_grace_s() -> float:
    """The grace a stopping worker gets now: ``STOP_GRACE_S`` times the run queue over the cores
    (sixteen processes on two cores left a fixed five seconds too short to send finished cells)."""
    try:
        queued = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        queued = 1.0
    return min(STOP_GRACE_MOST_S, STOP_GRACE_S * max(1.0, queued))


class WorkerTimeout(Exception):
    """The worker made no progress within the deadline; ``cell`` is the index it was working on."""

    def __init__(self, cell: int, waited: float) -> None:
        self.cell = cell
        super().__init__(f"no progress for {waited:.0f} s")


class StopRequested(Exception):
    """The parent was asked to stop (the ``stop`` callable of ``messages`` said so)."""


class WorkerExited(Exception):
    """The worker's output ended before it said it was done."""

    def __init__(self, returncode: int | None, last_error: str) -> None:
        self.returncode = returncode
        super().__init__(describe_exit(returncode, last_error))


class WorkerProcess:
    """One running worker."""

    def __init__(self, job: Job, *, env: Mapping[str, str], cpus: list[int] | None,
                 log_path: Path, python: str | None = None) -> None:
        """Start ``python -m arraybench.worker`` (None: this interpreter) with ``job`` on its stdin."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.board_path = log_path.with_suffix(".board")
        Board.create(self.board_path)
        job = replace(job, board=str(self.board_path))
        #: The cells of its job, in the job's order (a ``Turn`` names one by its index).
        self.cells = job.cells
        try:
            # Never through a link planted in logs/, nor into a pipe or a hard-linked copy's log.
            self._log = os.fdopen(open_append(log_path), "ab")
        except OSError:
            self.board_path.unlink(missing_ok=True)
            raise
        # Several workers (retries after a crash) share a log: read back only this one's part.
        self._output = CappedLog(log_path, self._log)
        self._output_ended = threading.Event()
        # What the worker does first (``worker.pin`` and ``worker.settle``), told in its variables: a
        # ``preexec_fn`` would fork through Python's at-fork hooks (JAX warns at each, in a parent that ran it).
        env = {**env, WORKER_PARENT: str(os.getpid())}
        if cpus is not None:
            env[WORKER_CPUS] = ",".join(map(str, cpus))
        try:
            self.proc = subprocess.Popen(
                [python or sys.executable, "-m", "arraybench.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Through the parent, which caps it (worker_log): never straight into the file.
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except BaseException:  # no process (out of memory, or of processes): nothing left behind
            self._log.close()
            self.board_path.unlink(missing_ok=True)
            raise
        watch(self.proc.pid)
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        #: A line taken from the queue ahead of ``messages`` (``wait_started``), read first there.
        self._early: list[bytes | None] = []
        # The reader sleeps in select() until the worker writes, or until close() wakes it.
        self._wake_r, self._wake_w = os.pipe()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._exited_at: float | None = None
        #: When it was last resumed or sent a line: paused, or waiting to be asked, is not stuck.
        self.asked_at = 0.0
        self.paused = False
        #: What made the worker, where a session's pool may keep it for another job (``pool``).
        self.pool_key: Hashable | None = None
        assert self.proc.stdin is not None
        with suppress(BrokenPipeError):
            self.proc.stdin.write((job.to_json() + "\n").encode())
            if job.task == "measure":
                self.proc.stdin.flush()  # kept open: the turns follow (``send``)
            else:
                self.proc.stdin.close()

    def send(self, line: str) -> None:
        """Write one line to a worker taking turns; one that is gone is found out by its messages."""
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            return
        self.asked_at = time.monotonic()
        with suppress(BrokenPipeError, OSError, ValueError):
            stdin.write((line + "\n").encode())
            stdin.flush()

    def _signal_group(self, sig: int) -> None:
        if not self.alive():
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)  # the workload's own children pause with it

    def pause(self) -> None:
        """Stop the worker and its group (SIGSTOP), a BLAS pool still spinning included."""
        if not self.paused:
            self._signal_group(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        """Let a paused worker run again (SIGCONT)."""
        if self.paused:
            self._signal_group(signal.SIGCONT)
            self.paused = False
            self.asked_at = time.monotonic()

    def _read(self) -> None:
        """Its lines into the queue, then None at their end (or at close); its stderr into its log."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        fd, err = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        pending = b""
        with selectors.DefaultSelector() as selector:
            for each in (fd, err, self._wake_r):
                selector.register(each, selectors.EVENT_READ)
            while len(selector.get_map()) > 1:
                ready = {key.fd for key, _ in selector.select()}
                if self._wake_r in ready:
                    break
                if err in ready and not self._copy_output(err):
                    selector.unregister(err)
                    self._end_output()
                if fd not in ready:
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    selector.unregister(fd)
                    if pending:
                        self._queue.put(pending)
                        pending = b""
                    self._queue.put(None)
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self._queue.put(line + b"\n")
            if fd in selector.get_map():  # woken by close() before the messages ended
                if pending:
                    self._queue.put(pending)
                self._queue.put(None)
        self._end_output()

    def _copy_output(self, fd: int) -> bool:
        """Copy what the worker wrote on stderr into its log; False at the end of it."""
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return False
        if chunk:
            self._output.write(chunk)
        return bool(chunk)

    def _end_output(self) -> None:
        if not self._output_ended.is_set():
            self._output.finish()
            self._output_ended.set()

    def alive(self) -> bool:
        """Whether the worker process is still running; one that exited is left a zombie (not reaped),
        so that its process group id stays its own until ``kill`` has killed the group."""
        if self.proc.returncode is not None:
            return False
        if _waitid is None:
            return self.proc.poll() is None
        try:
            return _waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:
            return False

    def messages(self, timeout: float, *, startup_timeout: float = 0.0, deadline: float = math.inf,
                 stop: Callable[[], bool] | None = None) -> Iterator[Message]:
        """Messages as they come, while the worker shows progress (a message, or a change on its
        heartbeat board) at least every ``timeout`` seconds; ``startup_timeout`` until the first.
        ``deadline`` (``time.monotonic()``) ends the wait whatever the progress; ``stop`` is asked
        only between messages, so a message is never half handled. Raises ``WorkerTimeout``,
        ``WorkerExited`` or ``StopRequested``; returns after ``Done`` or ``Unavailable``."""
        last_beat = Board.read(self.board_path)
        last_progress = time.monotonic()
        allowance = max(timeout, startup_timeout)
        while True:
            if stop is not None and stop():
                raise StopRequested()
            # At most one wake-up a second (the parent shares the cores with what is timed), and
            # none later than the moment the allowance runs out.
            now = time.monotonic()
            wait = max(0.01, min(1.0, last_progress + allowance - now))
            if self._exited_at is not None:
                wait = min(wait, 0.1)
            wait = max(0.0, min(wait, deadline - now))
            try:
                line = self._early.pop() if self._early else self._queue.get(timeout=wait)
            except queue.Empty:
                if not self.alive():
                    # The worker is gone but its output has not ended: a child it started holds
                    # the pipe. End the group; read what is left, then stop waiting for the end.
                    if self._exited_at is None:
                        self._exited_at = time.monotonic()
                        self.kill()
                    elif time.monotonic() - self._exited_at >= PIPE_GRACE_S:
                        raise WorkerExited(self.proc.returncode, self.last_error_line())
                    continue
                beat = Board.read(self.board_path)
                now = time.monotonic()
                last_progress = max(last_progress, self.asked_at)  # paused or unasked: not stuck
                if now >= deadline:
                    raise WorkerTimeout(beat[0], now - last_progress) from None
                if beat != last_beat:
                    last_beat, last_progress = beat, now
                elif now - last_progress >= allowance:
                    raise WorkerTimeout(beat[0], now - last_progress) from None
                continue
            last_progress = time.monotonic()
            allowance = timeout
            if line is None:
                code = self._wait_exit()
                raise WorkerExited(code, self.last_error_line())
            msg = parse(line)
            if msg is None:
                continue  # not ours: the protocol channel is private, but be tolerant
            yield msg
            if isinstance(msg, (Done, Unavailable)):
                return

    def assign(self, job: Job) -> None:
        """Give a worker done with its last job (``Job.reuse``) its next; it goes on as a fresh one would."""
        Board.create(self.board_path)  # the last job's progress is not this one's
        self.cells = job.cells
        self.resume()
        self.send(replace(job, board=str(self.board_path)).to_json())

    def wait_started(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the worker's first word (``Ready``, or why it cannot
        start, or the end of its output), leaving it for ``messages`` to read."""
        if not self._early:
            with suppress(queue.Empty):
                self._early.append(self._queue.get(timeout=max(timeout, 0.0)))

    def request_stop(self) -> None:
        """Ask the worker to stop after its current sample and send what it has completed."""
        if self.alive():
            with suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)  # not Popen.send_signal: it would reap
            self.resume()  # a paused worker acts on its signal only once it runs
            self._close_stdin()  # a worker waiting for its next turn stops waiting

    def _close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with suppress(OSError):
                self.proc.stdin.close()

    def _wait_exit(self) -> int | None:
        """Wait up to 10 s for the worker to exit, then end its group; its exit code."""
        deadline = time.monotonic() + 10
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.kill()  # whatever it left behind goes with it
        return self.proc.returncode

    def last_error_line(self) -> str:
        """What this worker last said on stderr: where it crashed, or its last error line."""
        if not self.alive():  # what it wrote as it ended may still be in the pipe
            self._output_ended.wait(PIPE_GRACE_S)
        data = self._output.text()
        return crash_site(data) or last_error(data)

    def kill(self, wait: bool = True) -> None:
        """Stop the worker and everything in its process group (what its workloads started);
        ``wait=False``: signalled only, reaped by a later ``kill`` (exits of several overlap)."""
        if self.proc.returncode is not None:
            return  # reaped: its group was killed before that, here
        self._close_stdin()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            self.proc.kill()
        if not wait:
            return
        unwatch(self.proc.pid)  # before it is reaped: until then its group id is its own
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def let_go(self) -> None:
        """Let the worker run to its end (resumed, its stdin closed) without waiting for it."""
        self.resume()
        self._close_stdin()

    def close(self) -> None:
        """Wait for a normal exit (killing it if it lingers), end its group, release resources."""
        self.let_go()
        self._wait_exit()
        self._output_ended.wait(PIPE_GRACE_S)  # the last of its output, into the log
        os.write(self._wake_w, b"x")  # the reader stops even if a stray child holds the pipe
        self._reader.join(timeout=5)
        os.close(self._wake_w)
        if not self._reader.is_alive():
            os.close(self._wake_r)
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
        self._output.close()
        with suppress(OSError):
            self.board_path.unlink()


_waitid = getattr(os, "waitid", None)


def end_together(workers: list[WorkerProcess]) -> None:
    """End ``workers`` (their stdin closed), all at once so that their exits, seconds of a
    library's teardown each, overlap; return once every one is closed."""
    for worker in workers:
        worker.let_go()
    for worker in workers:
        worker.close()
