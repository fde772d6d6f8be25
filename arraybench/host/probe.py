"""Which backends work here, and why not: each asked in its own worker process, measuring nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .. import backends
from ..executors.worker_process import WorkerExited, WorkerProcess, WorkerTimeout
from ..worker.protocol import Job, Ready, Unavailable
from .threads import worker_env


def probe(backend: str, device: str, timeout: float = 120.0) -> tuple[str | None, dict[str, Any]]:
    """(None, info) when ``backend`` runs on ``device`` here, else (reason, {})."""
    reason = backends.SPECS[backend].preflight(device)
    if reason:
        return reason, {}
    job = Job(backend=backend, device=device, task="probe")
    env = worker_env(os.environ, threads=None, backend=backend, device=device, allow_tf32=False)
    with tempfile.TemporaryDirectory() as tmp:
        worker = WorkerProcess(job, env=env, cpus=None, log_path=Path(tmp) / "probe.log")
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
    for name, spec in backends.SPECS.items():
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
