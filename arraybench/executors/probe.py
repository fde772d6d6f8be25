"""Asking libraries in worker processes of their own, measuring nothing: which backends work here and
why not, whether another interpreter (``--python``) can run the worker (the probe job), and
``arraybench doctor``'s self-checks (the selfcheck job, its outcomes streamed back as they come; a GPU
library is asked again with ``--allow-tf32``, to see that the precision recorded follows the flag)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ..backends import SPECS
from ..errors import UsageError, option_name
from ..host import machine
from ..host.environments import Environment, of, worker_env as in_environment
from ..host.threads import worker_env
from ..worker.protocol import CHECKS, CheckDone, Job, Ready, Unavailable, check_applies
from .worker_process import WorkerExited, WorkerProcess, WorkerTimeout

if TYPE_CHECKING:
    from ..model.options import RunOptions


def probe(backend: str, device: str, timeout: float = 120.0, *,
          environment: Environment | None = None) -> tuple[str | None, dict[str, Any]]:
    """(None, info) when ``backend`` runs on ``device`` here (in ``environment``: another
    interpreter, other variables), else (reason, {})."""
    reason = SPECS[backend].preflight(device)
    if reason:
        return reason, {}
    with _asking(Job(backend=backend, device=device, task="probe"), environment) as worker:
        try:
            for msg in worker.messages(timeout=timeout):
                if isinstance(msg, Ready):
                    return None, msg.info
                if isinstance(msg, Unavailable):
                    return msg.reason, {}
        except WorkerTimeout:
            return f"did not start within {timeout:g} s", {}
        except WorkerExited as exc:
            return f"worker could not start: {exc}", {}
    return "worker ended without reporting", {}


@contextmanager
def _asking(job: Job, environment: Environment | None = None) -> Iterator[WorkerProcess]:
    """A worker given ``job`` with a benchmark worker's variables, its log in a folder that goes with it."""
    env = worker_env(os.environ, threads=None, backend=job.backend, device=job.device, allow_tf32=job.allow_tf32)
    python = None
    if environment is not None:
        env, python = in_environment(environment, env), environment.python
    with tempfile.TemporaryDirectory() as tmp:
        worker = WorkerProcess(job, env=env, cpus=None, log_path=Path(tmp) / f"{job.task}.log", python=python)
        try:
            yield worker
        finally:
            worker.kill()
            worker.close()


def probe_backends() -> dict[str, dict[str, Any]]:
    """For every known backend: version, usable devices with reasons, and what its worker reports."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in SPECS.items():
        probed = {dev: probe(name, dev) for dev in spec.devices}
        devices = {dev: reason for dev, (reason, _) in probed.items()}
        out[name] = {"version": spec.version(), "usable": None in devices.values(), "devices": devices,
                     "info": next((info for reason, info in probed.values() if reason is None), {})}
    return out


_MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")


def _interpreter_problem(environment: Environment, *, threads: bool, shipped: bool) -> str | None:
    """Why ``environment``'s interpreter cannot run arraybench's worker, naming what to install;
    None when it can. ``threads``: the run limits thread pools (threadpoolctl needed);
    ``shipped``: it sends workloads by value (cloudpickle needed)."""
    python = environment.python or sys.executable
    if os.sep not in python:  # a bare name (a cluster's nodes look it up on their PATH)
        python = shutil.which(python) or python
    if not os.access(python, os.X_OK):  # gone since the run began (--resume), or never there
        return "no such interpreter (or it is not executable)"
    reason, info = probe("numpy", "cpu", environment=environment)
    install = f"{python} -m pip install"
    if reason is not None:
        missing = _MISSING.search(reason)
        if missing:
            name = missing.group(1).split(".")[0]
            return f"it lacks {name}, which arraybench's worker needs; install it there: {install} {name}"
        if "SyntaxError" in reason or "TypeError: unsupported operand" in reason:
            return f"it cannot run arraybench (Python >= 3.10 needed): {reason}"
        return f"arraybench's worker cannot start there: {reason}"
    ours = str(Path(__file__).resolve().parent.parent)
    theirs = info.get("arraybench_path")
    if theirs and os.path.realpath(theirs) != ours:
        return (f"it imports another arraybench ({theirs}), not this one ({ours}); uninstall it "
                f"there ({python} -m pip uninstall arraybench) or install this one")
    if threads and info.get("threadpools_error"):
        return f"it lacks threadpoolctl, which --threads needs; install it there: {install} threadpoolctl"
    if shipped and info.get("cloudpickle") is False:
        return (f"it lacks cloudpickle, which workloads defined in Python (a notebook's) need to "
                f"reach its workers; install it there: {install} cloudpickle")
    return None


def interpreter_problems(options: "RunOptions", *, known: Mapping[str, str] | None = None,
                         first: bool = False) -> dict[str, str]:
    """``{interpreter: why it cannot run the worker, "" if it can}`` for the run's ``--python``
    interpreters, each asked once (``known``: answers had already; ``first``: stop at a problem)."""
    out: dict[str, str] = {}
    for environment in of(options):
        if environment.python is None or environment.python in out:
            continue
        python = environment.python
        if known is not None and python in known:
            out[python] = known[python]
        else:
            out[python] = _interpreter_problem(environment, threads=options.threads is not None,
                                              shipped=bool(options.shipped_workloads)) or ""
        if first and out[python]:
            break
    return out


def python_label(options: "RunOptions", python: str) -> str:
    """``--python np126=/path``: how the user named ``python``, for a message about it."""
    label = next((k for k, v in options.pythons.items() if v == python), "?")
    return f"{option_name('pythons')} {label}={python}"


def check_interpreters(options: "RunOptions") -> None:
    """``UsageError`` in one line for the first interpreter of the run that cannot run the worker."""
    for python, problem in interpreter_problems(options, first=True).items():
        if problem:
            raise UsageError(f"{python_label(options, python)}: {problem}")


# -- arraybench doctor ---------------------------------------------------------------------------
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
    out: list[Line] = []
    deadline = time.monotonic() + timeout  # the process's start included
    with _asking(job) as worker:
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
    if not out:
        out.append(line("worker", "failed", "the check process reported no check"))
    return out


def header() -> str:
    """The machine and library versions, so that pasted output says where it came from."""
    env = machine.collect()
    libs = ", ".join(f"{k} {v}" for k, v in env["libraries"].items()
                     if v and k in (*SPECS, "jaxlib", "numba", "jax-metal"))
    gpus = "; ".join(g["name"] for g in env["gpus"]) or "none found"
    settings = ", ".join(f"{k}={v}" for k, v in env.get("gpu_env", {}).items())
    return (f"arraybench doctor {env['arraybench']}: Python {env['python']} on {env['cpu_model']}; "
            f"GPUs: {gpus}; {libs}" + (f"; {settings}" if settings else ""))


def wrapped(text: str, width: int, indent: int = 0) -> str:
    """``text`` in lines of at most ``width`` columns, broken between words (a word longer than a
    line stays whole), the lines after the first indented by ``indent``."""
    return textwrap.fill(text, width=max(width, indent + 20), subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False) or text


def main(names: Sequence[str], devices: Sequence[str], timeout: float = TIMEOUT_S, *,
         json_lines: bool = False) -> int:
    """Print the header, one line per check as it finishes, and a summary; 1 if any failed.
    Each is wrapped to the terminal's width (80 for a pipe unless $COLUMNS says), a check's
    detail under its own column. ``json_lines``: one JSON object per check instead."""
    width = shutil.get_terminal_size((80, 24)).columns
    started = time.perf_counter()
    if not json_lines:
        print(wrapped(header(), width, 2))
    lines: list[Line] = []
    for backend, device in configs(names, devices):
        found = check_config(backend, device, timeout=timeout)
        if device != "cpu" and not (len(found) == 1 and found[0].status == "skipped"):
            # Opened: does the recorded precision follow the flag?
            found += check_config(backend, device, allow_tf32=True, only=("precision",), timeout=timeout)
        for x in found:
            print(json.dumps(asdict(x)) if json_lines else wrapped(x.text, width, DETAIL_COLUMN))
        lines += found
    if not json_lines:  # 10 passed, 0 failed, 5 skipped in 4 s
        counts = ", ".join(f"{sum(1 for x in lines if x.status == s)} {s}" for s in ("passed", "failed", "skipped"))
        print(f"{counts} in {time.perf_counter() - started:.0f} s")
    return 1 if any(x.status == "failed" for x in lines) else 0


#: Where a check's detail starts in ``Line.text`` (status, library and device, check).
DETAIL_COLUMN = 7 + 2 + 10 + 1 + 12 + 1
