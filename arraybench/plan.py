"""What to run: options checked (``validate``), then the cells, one (workload, size, backend, device,
dtype, mode[, transfer]) each. Nothing is measured here, so a plan is checked before anything starts."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Iterable

from . import backends
from .host import environments
from .errors import UsageError, from_command_line, option_name, unknown_name
from .model.cell import DTYPES, MODES, Cell
from .model.options import MAX_PROCESSES, RunOptions
from .workloads.definition import parse_size
from .options import ALLOCATOR_CHOICES
from .workloads.registry import CEILING_WORKLOADS, GROUPS, expand
from .workloads.userfile import LoadedFiles, describe_exception
from .workloads.params import ParamValue, aimed, check_settings, coerce


def _params(wl: Any, size: int, given: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """A workload's settings at a size: ``--params`` over its own (one aimed at it, ``WL.NAME``, over
    one for all); a failing ``params=`` or a value of the wrong type is a ``UsageError``."""
    try:
        settings = wl.params_for(size)
    except Exception as exc:
        raise UsageError(f"workload {wl.name!r}: its params= failed at n = {size:,}: "
                         f"{describe_exception(exc)}") from None
    keys = sorted(given, key=lambda k: aimed(k)[0] is not None)  # the aimed ones last: they win
    for key in keys:
        target, name = aimed(key)
        if target in (None, wl.name) and name in settings:
            try:
                settings[name] = coerce(name, given[key], settings[name])
            except ValueError as exc:
                raise UsageError(f"--params {key}={given[key]}: {exc} (workload {wl.name!r})") from None
    return settings


def _check_params_used(given: dict[str, ParamValue], settings_of: dict[str, set[str]]) -> None:
    """A ``--params`` that no selected workload takes is a typo until shown otherwise."""
    have = [f"{w}: {', '.join(sorted(names))}" for w, names in settings_of.items() if names]
    for key in given:
        target, name = aimed(key)
        if target is None and not any(name in names for names in settings_of.values()):
            every = sorted({n for names in settings_of.values() for n in names})
            close = difflib.get_close_matches(name, every, n=1, cutoff=0.6)
            raise UsageError(f"--params {key}: no selected workload has a setting of that name; "
                             + (f"did you mean {close[0]!r}? " if close else "")
                             + ("their settings: " + "; ".join(have) if have else "they have none"))
        if target is not None and target not in settings_of:
            close = difflib.get_close_matches(target, list(settings_of), n=1, cutoff=0.6)
            raise UsageError(f"--params {key}: no selected workload is named {target!r}"
                             + (f"; did you mean {close[0]!r}?" if close else "")
                             + f" (selected: {', '.join(settings_of)})")
        if target is not None and name not in settings_of[target]:
            own = ", ".join(sorted(settings_of[target])) or "none"
            close = difflib.get_close_matches(name, sorted(settings_of[target]), n=1, cutoff=0.6)
            raise UsageError(f"--params {key}: workload {target!r} has no setting {name!r}"
                             + (f"; did you mean {close[0]!r}?" if close else "")
                             + f" (its settings: {own})")


#: The most cells one run may plan: a stop saves every cell, and tens of thousands took minutes.
MAX_CELLS = 5_000


def _planned(options: RunOptions, workloads_by_name: dict[str, Any], selected: list[str]) -> int:
    """How many cells the options ask for (before equal sizes are merged), counted, not built."""
    per_size = sum(len(options.modes) * (2 if options.include_transfer and dev != "cpu" else 1)
                   for b in options.backends for dev in options.devices
                   if dev in backends.SPECS[b].devices) * len(environments.of(options))
    return sum(len(options.sizes or workloads_by_name[w].sizes) for w in selected) * per_size


def build_plan(options: RunOptions, workloads_by_name: dict[str, Any],
               default: list[str] | None = None) -> list[Cell]:
    """The cells of a checked run in a canonical order; without ``options.workloads``, ``default`` (all if None)."""
    selected = options.workloads or default or list(workloads_by_name)
    cells: list[Cell] = []
    # Counted as they are made: a plan far too big is refused before it is all built.
    made: set[str] = set()

    def add(cell: Cell) -> None:
        cells.append(cell)
        made.add(cell.key)
        if len(made) > MAX_CELLS:
            raise UsageError(
                f"the run would measure more than {MAX_CELLS:,} cells (it asks for "
                f"{_planned(options, workloads_by_name, selected):,}: workloads × sizes × backends "
                "× devices × modes × environments); select fewer sizes or workloads, or split it into several runs")

    settings_of: dict[str, set[str]] = {}
    labels = [e.label for e in environments.of(options) if e.label != environments.TWIN]
    configs = [(b, d) for b in options.backends for d in options.devices if d in backends.SPECS[b].devices]
    # The self-check's twin: the first configuration of the plan again, in every case it measures.
    twin = configs[0] if options.self_check and configs else None
    for wname in selected:
        wl = workloads_by_name[wname]
        for s in options.sizes or list(wl.sizes):
            if s.isidentifier():
                if s not in wl.sizes:
                    raise UsageError(
                        f"workload {wname!r} has no size {s!r}; its sizes: {', '.join(wl.sizes)} "
                        "(or give a number)"
                    )
                label, n = s, wl.sizes[s]
            else:
                n = parse_size(s)
                label = next((k for k, v in wl.sizes.items() if v == n), str(n))
            params = _params(wl, n, options.params)
            settings_of.setdefault(wname, set()).update(params)
            for bname, dev in configs:
                for mode in options.modes:
                    cell = partial(Cell, wname, label, n, bname, dev, options.dtype, mode, params=params)
                    for env in labels:
                        add(cell(environment=env))
                        if options.include_transfer and dev != "cpu":
                            add(cell(True, environment=env))
                    if twin == (bname, dev):
                        add(cell(environment=environments.TWIN))
    _check_params_used(options.params, settings_of)
    if not cells:
        raise UsageError("the selection gives nothing to run (check --backends against --devices)")
    if options.roofline:
        for backend, device, env in dict.fromkeys(c.config for c in cells):
            for wname in CEILING_WORKLOADS:
                if wname in workloads_by_name and wname not in selected:
                    n = workloads_by_name[wname].sizes[device]
                    cells.append(Cell(wname, device, n, backend, device, options.dtype, "latency",
                                      environment=env))
    # "small,100" (when small is 100) or "1e2,100" name one cell twice; measure it once.
    return list({c.key: c for c in cells}.values())


@dataclass
class Plan:
    """A checked run, before anything is measured: options, cells, and the workload files as they loaded."""

    options: RunOptions
    cells: list[Cell]
    files: LoadedFiles
    #: The workloads defined in Python (a notebook) that the workers receive by value, pickled when
    #: planning (so one that cannot be is refused early); None where there are none.
    packed: bytes | None = None


def check_choices(kind: str, given: Iterable[str], valid: Iterable[str], *,
                   listed: Iterable[str] | None = None, more: str = "") -> list[str]:
    """``given`` without repeats, each one of ``valid``; ``UsageError`` names an unknown one, or none given."""
    valid = list(valid)
    given = list(dict.fromkeys(given))  # de-duplicate, keep order
    for g in given:
        if g not in valid:
            raise UsageError(unknown_name(kind, g, valid, more=more,
                                          listed=None if listed is None else list(listed)))
    if not given:
        raise UsageError(f"no {kind} selected; valid: {', '.join(valid)}")
    return given


def _short(value: Any) -> str:
    """A value for a message, cut short: ``--processes 10**100`` must not print 100 digits."""
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "…"


def _range_name() -> str:
    return "--processes MIN:MAX" if from_command_line() else "processes=MIN, max_processes=MAX"


def validate(options: RunOptions, known_workloads: Iterable[str]) -> RunOptions:
    """A checked copy of ``options`` (choices de-duplicated, groups expanded); ``UsageError`` in one line."""
    changes: dict[str, Any] = {
        "backends": check_choices("backend", options.backends, backends.SPECS),
        "devices": check_choices("device", options.devices, backends.DEVICES),
        "modes": check_choices("mode", options.modes, MODES),
    }
    if not isinstance(options.dtype, str):  # a list would fail as unhashable, not as a usage error
        raise UsageError(f"dtype={_short(options.dtype)}: a run measures one dtype, one of {', '.join(DTYPES)}")
    check_choices("dtype", [options.dtype], DTYPES)
    if options.workloads:
        known = list(known_workloads)
        names = known + [g for g in GROUPS if g not in known]
        # The ceilings are internal (--roofline runs them): accepted, never offered.
        check_choices("workload", options.workloads, names, more="see `arraybench list`",
                       listed=[n for n in names if n not in CEILING_WORKLOADS])
        changes["workloads"] = expand(options.workloads)
    for name, lo in (("processes", 1), ("min_samples", 1), ("seed", 0)):
        value = getattr(options, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise UsageError(f"{option_name(name)} must be a whole number >= {lo}, not {_short(value)}")
    if options.processes > MAX_PROCESSES:
        raise UsageError(f"{option_name('processes')} must be at most {MAX_PROCESSES}, not {_short(options.processes)}")
    if options.max_processes is not None:
        most = options.max_processes
        if not isinstance(most, int) or isinstance(most, bool) or most < options.processes:
            raise UsageError(f"{_range_name()} needs MAX >= MIN, not {options.processes}:{most!r}")
        if most > MAX_PROCESSES:
            raise UsageError(f"{option_name('max_processes')} must be at most {MAX_PROCESSES}, not {_short(most)}")
        if most > options.processes and options.processes < 2:
            raise UsageError(f"{_range_name()} needs MIN >= 2: one process cannot show the "
                             "variation between processes")
    for name in ("max_time", "timeout", "target_sample"):
        value = getattr(options, name)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise UsageError(f"{option_name(name)} must be a positive number of seconds, not {value!r}")
    if not (isinstance(options.rel_ci, (int, float)) and 0 < options.rel_ci < 1):
        raise UsageError(f"{option_name('rel_ci')} must be a fraction between 0 and 1 (0.02 is 2%), not {options.rel_ci!r}")
    if not (isinstance(options.warmup, (int, float)) and options.warmup >= 0):
        raise UsageError(f"{option_name('warmup')} must be >= 0 seconds, not {options.warmup!r}")
    if options.allocator not in ALLOCATOR_CHOICES:
        raise UsageError(f"{option_name('allocator')} must be one of {', '.join(ALLOCATOR_CHOICES)}, "
                         f"not {_short(options.allocator)}")
    if options.threads is not None:
        from .host.threads import available_cpus

        if not isinstance(options.threads, int) or options.threads < 1:
            raise UsageError(f"{option_name('threads')} must be >= 1, not {_short(options.threads)}")
        cpus = len(available_cpus())
        if options.threads > cpus:  # more threads than CPUs only measures contention (and can crash torch)
            raise UsageError(f"{option_name('threads')} must be at most {cpus} (the CPUs this process may use), "
                             f"not {_short(options.threads)}")
    for s in options.sizes:
        if not s.isidentifier():
            parse_size(s)
    try:
        changes["params"] = check_settings("--params", options.params, aimable=True)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    # On a cluster the nodes run the interpreters: each node checks its own (executors/ray_agent).
    changes["pythons"] = environments.check_pythons(options.pythons, here=options.cluster is None)
    changes["variants"] = environments.check_variants(options.variants)
    return replace(options, **changes)
