"""``arraybench doctor``: prove that a run's assumptions hold on this machine, one line per check.

The parent imports no array library: each library and device gets a worker process of its own (a
``selfcheck`` job, its outcomes streamed back as they come), started with the environment a
benchmark worker gets. A GPU
library is asked twice, the second time with ``--allow-tf32``, to see that the precision the run
records follows the flag. Libraries or devices that are not there get one line saying why.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..backends import SPECS
from .worker_process import WorkerExited, WorkerProcess, WorkerTimeout
from ..worker.protocol import CHECKS, CheckDone, Job, Unavailable, check_applies
from ..host.threads import worker_env

#: One library's checks may take this long, its start included (a CUDA context can take seconds).
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Line:
    """One check's outcome for one library on one device."""

    backend: str
    device: str
    check: str
    status: str  # passed | failed | skipped
    detail: str

    @property
    def text(self) -> str:
        config = f"{self.backend} {self.device}"
        return f"{self.status:<7}  {config:<10} {self.check:<12} {self.detail}"


def configs(names: Sequence[str], devices: Sequence[str]) -> list[tuple[str, str]]:
    """(backend, device) pairs to check, in the registry's order."""
    return [(b, d) for b in names for d in devices if d in SPECS[b].devices]


def check_config(backend: str, device: str, *, allow_tf32: bool = False,
                 only: Sequence[str] = CHECKS, timeout: float = TIMEOUT_S) -> list[Line]:
    """Run the checks of one library on one device in a process of its own."""
    suffix = " (--allow-tf32)" if allow_tf32 else ""

    def line(check: str, status: str, detail: str) -> Line:
        return Line(backend, device, check + suffix, status, detail)

    applicable = [c for c in only if check_applies(c, backend, device)]

    def not_run(status: str, why: str) -> list[Line]:
        return [line("all" if len(applicable) > 1 else applicable[0], status,
                     f"{why}; not run: {', '.join(applicable)}" if len(applicable) > 1 else why)]

    reason = SPECS[backend].preflight(device)
    if reason:
        return not_run("skipped", reason)
    job = Job(backend=backend, device=device, task="selfcheck", allow_tf32=allow_tf32,
              only=tuple(only))
    env = worker_env(os.environ, threads=None, backend=backend, device=device, allow_tf32=allow_tf32)
    out: list[Line] = []
    deadline = time.monotonic() + timeout  # the process's start included
    with tempfile.TemporaryDirectory() as tmp:
        worker = WorkerProcess(job, env=env, cpus=None, log_path=Path(tmp) / "selfcheck.log")
        try:
            for msg in worker.messages(timeout, deadline=deadline):
                if isinstance(msg, Unavailable):
                    return not_run("failed" if msg.broken else "skipped", msg.reason)
                if isinstance(msg, CheckDone):
                    out.append(line(msg.check, msg.status, msg.detail))
        except WorkerTimeout:
            return not_run("failed", f"did not finish within {timeout:g} s")
        except WorkerExited as exc:
            out.append(line("worker", "failed", f"the check process ended before it was done: {exc}"))
        finally:
            worker.kill()
            worker.close()
    if not out:
        out.append(line("worker", "failed", "the check process reported no check"))
    return out


def run_doctor(names: Iterable[str], devices: Iterable[str], timeout: float = TIMEOUT_S) -> list[Line]:
    """Every check for every (library, device) asked for."""
    lines: list[Line] = []
    for backend, device in configs(list(names), list(devices)):
        found = check_config(backend, device, timeout=timeout)
        lines += found
        opened = not (len(found) == 1 and found[0].status == "skipped")
        if device != "cpu" and opened:  # does the recorded precision follow the flag?
            lines += check_config(backend, device, allow_tf32=True, only=("precision",), timeout=timeout)
    return lines


def header() -> str:
    """The machine and library versions, so that pasted output says where it came from."""
    from ..host import machine

    env = machine.collect()
    libs = ", ".join(f"{k} {v}" for k, v in env["libraries"].items()
                     if v and k in (*SPECS, "jaxlib", "numba", "jax-metal"))
    gpus = "; ".join(g["name"] for g in env["gpus"]) or "none found"
    settings = ", ".join(f"{k}={v}" for k, v in env.get("gpu_env", {}).items())
    return (f"arraybench doctor {env['arraybench']}: Python {env['python']} on {env['cpu_model']}; "
            f"GPUs: {gpus}; {libs}" + (f"; {settings}" if settings else ""))


def summary(lines: Sequence[Line], seconds: float) -> str:
    """``10 passed, 0 failed, 5 skipped in 4 s``."""
    counts = ", ".join(f"{sum(1 for x in lines if x.status == s)} {s}" for s in ("passed", "failed", "skipped"))
    return f"{counts} in {seconds:.0f} s"


def wrapped(text: str, width: int, indent: int = 0) -> str:
    """``text`` in lines of at most ``width`` columns, broken between words (a word longer than a
    line stays whole), the lines after the first indented by ``indent``."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width=max(width, indent + 20), subsequent_indent=" " * indent,
                                   break_long_words=False, break_on_hyphens=False)) or text


def main(names: Sequence[str], devices: Sequence[str], timeout: float = TIMEOUT_S,
         write=print, *, json_lines: bool = False, width: int | None = None) -> int:
    """Print the header, one line per check as it finishes, and a summary; 1 if any failed.
    Each is wrapped to ``width`` (default: the terminal's, 80 for a pipe unless $COLUMNS says),
    a check's detail under its own column. ``json_lines``: one JSON object per check instead."""
    import json
    import shutil

    if width is None:
        width = shutil.get_terminal_size((80, 24)).columns
    started = time.perf_counter()
    if not json_lines:
        write(wrapped(header(), width, 2))
    lines: list[Line] = []
    for backend, device in configs(names, devices):
        found = run_doctor([backend], [device], timeout)
        for x in found:
            if json_lines:
                write(json.dumps({"backend": x.backend, "device": x.device, "check": x.check,
                                  "status": x.status, "detail": x.detail}))
            else:
                write(wrapped(x.text, width, DETAIL_COLUMN))
        lines += found
    if not json_lines:
        write(summary(lines, time.perf_counter() - started))
    return 1 if any(x.status == "failed" for x in lines) else 0


#: Where a check's detail starts in ``Line.text`` (status, library and device, check).
DETAIL_COLUMN = 7 + 2 + 10 + 1 + 12 + 1
