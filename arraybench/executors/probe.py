"""Which backends work here, and why not, and whether another interpreter (``--python``) can run
arraybench's worker: each asked in its own worker process (the probe job), measuring nothing."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..backends import SPECS
from .worker_process import WorkerExited, WorkerProcess, WorkerTimeout
from ..worker.protocol import Job, Ready, Unavailable
from ..host.threads import worker_env

from ..errors import UsageError, option_name
from ..host.environments import Environment, of

if TYPE_CHECKING:
    from ..model.options import RunOptions


def probe(backend: str, device: str, timeout: float = 120.0, *,
          environment: Environment | None = None) -> tuple[str | None, dict[str, Any]]:
    """(None, info) when ``backend`` runs on ``device`` here (in ``environment``: another
    interpreter, other variables), else (reason, {})."""
    reason = SPECS[backend].preflight(device)
    if reason:
        return reason, {}
    job = Job(backend=backend, device=device, task="probe")
    env = worker_env(os.environ, threads=None, backend=backend, device=device, allow_tf32=False)
    python = None
    if environment is not None:
        from ..host.environments import worker_env as in_environment

        env, python = in_environment(environment, env), environment.python
    with tempfile.TemporaryDirectory() as tmp:
        worker = WorkerProcess(job, env=env, cpus=None, log_path=Path(tmp) / "probe.log", python=python)
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
        finally:
            worker.kill()
            worker.close()
    return "worker ended without reporting", {}


def probe_backends() -> dict[str, dict[str, Any]]:
    """For every known backend: version, usable devices with reasons, and what its worker reports."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in SPECS.items():
        devices: dict[str, str | None] = {}
        info: dict[str, Any] = {}
        for dev in spec.devices:
            reason, dev_info = probe(name, dev)
            devices[dev] = reason
            if reason is None and not info:
                info = dev_info
        out[name] = {
            "version": spec.version(),
            "usable": any(r is None for r in devices.values()),
            "devices": devices,
            "info": info,
        }
    return out


_MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")


def interpreter_problem(environment: Environment, *, threads: bool = False, shipped: bool = False,
                        timeout: float = 120.0) -> str | None:
    """Why ``environment``'s interpreter cannot run arraybench's worker, naming what to install;
    None when it can. Asked through the probe job (``executors/probe.py``), measuring nothing.
    ``threads``: the run limits thread pools (threadpoolctl needed); ``shipped``: it sends
    workloads by value (a notebook's: cloudpickle needed)."""
    python = environment.python or sys.executable
    if os.sep not in python:  # a bare name (a cluster's nodes look it up on their PATH)
        python = shutil.which(python) or python
    if not os.access(python, os.X_OK):  # gone since the run began (--resume), or never there
        return "no such interpreter (or it is not executable)"
    reason, info = probe("numpy", "cpu", timeout=timeout, environment=environment)
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
    """``{interpreter: why it cannot run the worker}`` for the run's ``--python`` interpreters
    that cannot ("" for one that can); each asked once, with its first environment's variables.
    ``known``: answers already had (a cluster node's earlier shards), not asked again;
    ``first``: stop at the first problem."""
    out: dict[str, str] = {}
    for environment in of(options):
        if environment.python is None or environment.python in out:
            continue
        python = environment.python
        if known is not None and python in known:
            out[python] = known[python]
        else:
            out[python] = interpreter_problem(environment, threads=options.threads is not None,
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
