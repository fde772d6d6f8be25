"""A worker's log (``logs/<backend>-<device>-p<i>.log``) and what its end says of how the worker ended.

The parent copies the worker's output into the log, keeping its first ``HEAD_BYTES`` and last
``TAIL_BYTES`` (one workload wrote 150 MB in 2 s); the end, where a crash is, is kept whole.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

#: What a worker's log keeps of its output: its first and its last bytes.
HEAD_BYTES = 4 << 20
TAIL_BYTES = 4 << 20


class CappedLog:
    """One worker's output appended to its log: the first ``head`` bytes as they come, the last
    ``tail`` held until ``finish`` (or read by ``text``), what lies between dropped. Written by the
    thread that reads the worker's pipe, read by the one that reports an error."""

    def __init__(self, path: Path, file: BinaryIO, head: int = HEAD_BYTES,
                 tail: int = TAIL_BYTES) -> None:
        self._path = path
        self._file = file
        self._head_left = head
        self._head, self._tail_max = head, tail
        self._tail = bytearray()
        self._dropped = 0
        self._lock = threading.Lock()
        self.start = file.seek(0, os.SEEK_END)  # several workers (retries) share a log

    def write(self, data: bytes) -> None:
        """Add what the worker wrote."""
        with self._lock:
            if self._file.closed:
                return
            if self._head_left > 0:
                part = data[: self._head_left]
                # a log helps; it never costs a measurement (a full disk: see the journal)
                with suppress(OSError):
                    self._file.write(part)
                    self._file.flush()
                self._head_left -= len(part)
                data = data[len(part):]
            self._tail += data
            # Cut once it holds twice what it keeps, so that each byte is moved once at most.
            if len(self._tail) >= 2 * self._tail_max:
                self._dropped += len(self._tail) - self._tail_max
                del self._tail[: len(self._tail) - self._tail_max]

    def _tail_bytes(self) -> tuple[int, bytes]:
        cut = max(0, len(self._tail) - self._tail_max)
        return self._dropped + cut, bytes(self._tail[cut:])

    def close(self) -> None:
        """Close the log; what the worker writes after this is not kept."""
        with self._lock:
            self._file.close()

    def finish(self) -> None:
        """The output has ended: write the kept tail, after a line saying what was dropped, if any."""
        with self._lock:
            if self._file.closed:
                return
            dropped, tail = self._tail_bytes()
            self._tail.clear()
            self._dropped = 0
            with suppress(OSError, ValueError):  # a log helps; it never costs a measurement
                if dropped:
                    self._file.write(f"\n[arraybench: {dropped:,} bytes of this worker's output dropped here; a "
                                     f"log keeps the first {self._head >> 20} MiB and the last "
                                     f"{self._tail_max >> 20} MiB]\n".encode())
                self._file.write(tail)
                self._file.flush()

    def text(self, last: int = 20000) -> str:
        """The last ``last`` bytes this worker wrote (on disk and still held), as text."""
        with self._lock:
            try:
                if not self._file.closed:
                    self._file.flush()
                with open(self._path, "rb") as f:
                    end = f.seek(0, os.SEEK_END)
                    f.seek(max(self.start, end - last))
                    data = f.read()
            except (OSError, ValueError):
                data = b""
            data += self._tail_bytes()[1]
        return data[-last:].decode("utf-8", "replace")


# -- what a worker's log says of how it ended --------------------------------------------------
def describe_exit(returncode: int | None, last_error: str = "") -> str:
    """``killed by signal 11 (SIGSEGV)`` or ``exited with status 3``, plus the last error line."""
    if returncode is None:
        text = "stopped without an exit status"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        if -returncode == signal.SIGKILL:
            name += "; often the kernel's out-of-memory killer"
        text = f"killed by signal {-returncode} ({name})"
    else:
        text = f"exited with status {returncode}"
    if not last_error:
        return text
    return f"{text} {last_error}" if last_error.startswith("at ") else f"{text}: {last_error}"


def last_error(text: str) -> str:
    """The last meaningful line of a worker's stderr (a Python error, a CUDA message)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        # "Python runtime state: preinitialized" follows the fatal error that says what is wrong
        # (PYTHONHASHSEED=abc: "Fatal Python error: ... PYTHONHASHSEED must be ...").
        if not ln.startswith(("File ", "^", "~", "Traceback", "Python runtime state:")):
            return ln[:300]
    return ""


_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def crash_site(text: str) -> str:
    """``at FILE:LINE in FUNC`` from a faulthandler dump, or "": the crashing thread's innermost frame
    outside the standard library, site-packages and arraybench (the user's own line), else its first."""
    start = text.rfind("Fatal Python error:")
    if start < 0:
        return ""
    frames = []
    for line in text[start:].splitlines():
        m = _FAULT_FRAME.match(line)
        if m:
            frames.append(m)
        elif frames:
            break  # the first thread's frames end here
    if not frames:
        return ""
    ours = [m for m in frames if not m["file"].startswith("<") and not any(
        part in m["file"].replace("\\", "/") for part in ("/arraybench/", "site-packages", "/lib/python"))]
    chosen = (ours or frames)[0]
    return f"at {chosen['file']}:{chosen['line']} in {chosen['func']}"
