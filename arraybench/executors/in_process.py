"""Cells called once in this process, nothing timed: the pytest plugin's ``--arraybench-disable``
(as pytest-benchmark's ``--benchmark-disable``). No worker starts, nothing is warmed up, sampled or
checked: a call that raises makes its cell ``failed``; a library or device missing, ``skipped``.
"""

from __future__ import annotations

import copy
import gc
import time
import uuid
from datetime import datetime, timezone
from typing import Any

from .. import backends
from ..analysis.aggregate import aggregate
from ..backends.base import Backend, Unavailable
from ..host import machine
from ..model.cell import Cell
from ..model.options import RunOptions
from ..model.replicate import Replicate
from ..model.results import Results
from ..workloads.inputs import bind, make_inputs
from ..workloads.registry import REGISTRY
from ..workloads.userfile import describe_exception

#: How a replicate of this module says what its one sample is.
ONE_CALL = "one call in the calling process (no worker, no warm-up): a check, not a measurement"


class CalledOnce:
    """Runs a plan's cells once each, here; the libraries opened stay open for the next plan."""

    def __init__(self) -> None:
        #: Each (library, device) opened, or why it cannot be.
        self._opened: dict[tuple[str, str], Backend | str] = {}
        #: The machine's facts by threads asked, collected once (hundredths of a second each time):
        #: nothing timed here reads them.
        self._machine: dict[int | None, dict[str, Any]] = {}

    def run(self, cells: list[Cell], options: RunOptions) -> Results:
        """The cells' records, one call each, as a run's ``Results``."""
        records = [aggregate(cell, [self._call(cell, options)], 1, options.rel_ci) for cell in cells]
        if options.threads not in self._machine:
            self._machine[options.threads] = machine.collect(options.threads)
        environment = copy.deepcopy(self._machine[options.threads])
        environment["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        environment["run_id"] = uuid.uuid4().hex[:16]
        return Results(environment=environment, settings=options.to_dict(), records=records)

    def _backend(self, cell: Cell, options: RunOptions) -> Backend | str:
        key = (cell.backend, cell.device)
        if key not in self._opened:
            opened: Backend | str | None = backends.SPECS[cell.backend].preflight(cell.device)
            if opened is None:
                try:
                    opened = backends.load(cell.backend)(cell.device, allow_tf32=options.allow_tf32)
                except Unavailable as exc:
                    opened = str(exc)
                except ImportError as exc:
                    opened = f"cannot import {cell.backend}: {exc}"
                except Exception as exc:  # a broken install is the library's, not the workload's
                    opened = f"{cell.backend} failed to start: {describe_exception(exc)}"
                else:  # what the import made, out of later collections' sight (1 s of CPU: PyTorch, JAX)
                    gc.freeze()
            self._opened[key] = opened
        return self._opened[key]

    def _call(self, cell: Cell, options: RunOptions) -> Replicate:
        """One call of ``cell``'s workload on fresh inputs; an exception is the cell's failure."""
        if cell.environment:  # another interpreter or its variables: only its own workers have them
            return Replicate.ended("skipped", f"environment {cell.environment!r} is not called in this process")
        backend = self._backend(cell, options)
        if isinstance(backend, str):
            return Replicate.ended("skipped", backend)
        wl = REGISTRY[cell.workload]
        why = wl.not_applicable(backend.name, cell.mode) or backend.unsupported_dtype(cell.dtype)
        if why:
            return Replicate.ended("skipped", why)
        origin = "" if wl.source == "builtin" else wl.origin(backend.name)
        try:
            params = wl.call_settings(cell.size, cell.params)
            host = make_inputs(wl, cell.size, cell.dtype, options.seed, params).arrays
            # Host-placed inputs are the workload's own to take; built for this one call, they
            # need no copy.
            arrays: tuple[Any, ...] = host if wl.placement == "host" else tuple(backend.asarray(h) for h in host)
            bound = bind(wl, backend, cell.mode, arrays, cell.dtype, params)
            started = time.perf_counter()
            result = bound.op(*bound.args, **bound.kwargs)
            if backend.sync is not None:  # an asynchronous library raises at the wait, if at all
                backend.sync(result)
            took = time.perf_counter() - started
        except Unavailable as exc:
            return Replicate.ended("skipped", str(exc))
        except Exception as exc:
            return Replicate.ended("failed", describe_exception(exc, origin))
        # The call's time, kept so the record reads as run (one sample, one process); the plugin
        # shows and stores none of it.
        return Replicate(method=bound.method, gradient=bound.gradient, timer=ONE_CALL, samples_s=[took],
                         first_call_s=took, number=1)
