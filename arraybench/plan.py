"""What to run: checked options in, a list of cells out.

A cell is one (workload, size, backend, device, dtype, mode[, transfer]); the plan is the list of
cells. Nothing is measured or imported here, so a plan can be checked before anything starts.
"""

from __future__ import annotations

import difflib

from dataclasses import dataclass
from typing import Any

from . import backends
from .host import environments
from .errors import UsageError
from .model.cell import Cell
from .options import RunOptions, parse_size
from .workloads.definition import Workload
from .workloads.userfile import LoadedFiles
from .workloads.params import ParamValue, aimed, coerce


def _params(wl: Any, size: int, given: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """A workload's settings at a size, the run's ``--param`` values over its own (one aimed at
    this workload, ``WL.NAME``, over one for every workload); a ``params=`` that fails, or a
    value of the wrong type, is a usage error, said in one line."""
    try:
        settings = wl.params_for(size)
    except Exception as exc:
        from .workloads.tracebacks import describe_exception

        raise UsageError(f"workload {wl.name!r}: its params= failed at n = {size:,}: "
                         f"{describe_exception(exc)}") from None
    keys = sorted(given, key=lambda k: aimed(k)[0] is not None)  # the aimed ones last: they win
    for key in keys:
        target, name = aimed(key)
        if target in (None, wl.name) and name in settings:
            try:
                settings[name] = coerce(name, given[key], settings[name])
            except ValueError as exc:
                raise UsageError(f"--param {key}={given[key]}: {exc} (workload {wl.name!r})") from None
    return settings


def _check_params_used(given: dict[str, ParamValue], settings_of: dict[str, set[str]]) -> None:
    """A ``--param`` that no selected workload takes is a typo until shown otherwise."""
    have = [f"{w}: {', '.join(sorted(names))}" for w, names in settings_of.items() if names]
    for key in given:
        target, name = aimed(key)
        if target is None and not any(name in names for names in settings_of.values()):
            every = sorted({n for names in settings_of.values() for n in names})
            close = difflib.get_close_matches(name, every, n=1, cutoff=0.6)
            raise UsageError(f"--param {key}: no selected workload has a setting of that name; "
                             + (f"did you mean {close[0]!r}? " if close else "")
                             + ("their settings: " + "; ".join(have) if have else "they have none"))
        if target is not None and target not in settings_of:
            close = difflib.get_close_matches(target, list(settings_of), n=1, cutoff=0.6)
            raise UsageError(f"--param {key}: no selected workload is named {target!r}"
                             + (f"; did you mean {close[0]!r}?" if close else "")
                             + f" (selected: {', '.join(settings_of)})")
        if target is not None and name not in settings_of[target]:
            own = ", ".join(sorted(settings_of[target])) or "none"
            close = difflib.get_close_matches(name, sorted(settings_of[target]), n=1, cutoff=0.6)
            raise UsageError(f"--param {key}: workload {target!r} has no setting {name!r}"
                             + (f"; did you mean {close[0]!r}?" if close else "")
                             + f" (its settings: {own})")


#: The most cells one run may plan. Every cell is journalled, saved, analysed and reported, and a
#: stop (Ctrl-C, SIGTERM) saves them all before it ends: a plan of tens of thousands of cells took
#: minutes to stop, and no one reads a table of them.
MAX_CELLS = 5_000


def _planned(options: RunOptions, workloads_by_name: dict[str, Any], selected: list[str]) -> int:
    """How many cells the options ask for (before equal sizes are merged), counted, not built."""
    per_size = sum(len(options.modes) * (2 if options.include_transfer and dev != "cpu" else 1)
                   for b in options.backends for dev in options.devices
                   if dev in backends.SPECS[b].devices) * len(environments.of(options))
    return sum(len(options.sizes or workloads_by_name[w].sizes) for w in selected) * per_size


def build_plan(options: RunOptions, workloads_by_name: dict[str, Any],
               default: list[str] | None = None) -> list[Cell]:
    """The cells of a run, in a canonical order (the executor shuffles per replicate).

    ``options`` must have been through ``options.validate``. Without ``options.workloads``, the
    ``default`` list runs (every known workload if None).
    """
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
    labels = [e.label for e in environments.of(options)]
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
            for bname in options.backends:
                for dev in options.devices:
                    if dev not in backends.SPECS[bname].devices:
                        continue
                    for mode in options.modes:
                        for env in labels:
                            add(Cell(wname, label, n, bname, dev, options.dtype, mode,
                                     params=params, environment=env))
                            if options.include_transfer and dev != "cpu":
                                add(Cell(wname, label, n, bname, dev, options.dtype, mode, True,
                                         params=params, environment=env))
    _check_params_used(options.params, settings_of)
    if not cells:
        raise UsageError("the selection gives nothing to run (check --backends against --devices)")
    if options.roofline:
        from .workloads.ceilings import CEILING_WORKLOADS

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
    """A checked run, before anything is measured or written: its options and cells, and the
    workload files as they loaded (a file that did not load costs only its own workloads)."""

    options: RunOptions
    cells: list[Cell]
    files: LoadedFiles
    #: Workloads defined in Python (a notebook) that the workers receive by value.
    shipped: list[Workload]
    #: ``shipped`` as pickled for the workers (checked when planning: one that cannot be pickled
    #: is refused before the output folder exists); None: packed when the run starts.
    packed: bytes | None = None
