"""What to run: checked options in, a list of cells out.

A cell is one (workload, size, backend, device, dtype, mode[, transfer]); the plan is the list of
cells. Nothing is measured or imported here, so a plan can be checked before anything starts.
"""

from __future__ import annotations

import difflib

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from . import backends
from .host import environments
from .model import schema
from .errors import UsageError
from .options import Dtype, Mode, RunOptions, parse_size
from .workloads.params import ParamValue, aimed, coerce, text as params_text


def cell_key(workload: str, size_label: str, backend: str, device: str, dtype: str, mode: str,
             transfer: bool = False, machine: str = "",
             params: Mapping[str, Any] | None = None, environment: str = "") -> str:
    """A cell's identity, the same in the journal, in results and across runs.

    Settings (``params``) end the key only when there are some, the environment (``--python``,
    ``--variant``: ``[np126]``) only in a run of several, and the machine only for a cell of an
    every-node cluster run (measured once per node), so keys of other cells are what they always
    were.
    """
    parts = [workload, size_label, backend, device, dtype, mode]
    if transfer:
        parts.append("transfer")
    if params:
        parts.append(params_text(params))
    return ("|".join(parts) + (f"[{environment}]" if environment else "")
            + (f"@{machine}" if machine else ""))


@dataclass(frozen=True, order=True)
class Cell:
    """One measurement to make."""

    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: Dtype
    mode: Mode
    transfer: bool = False
    # -- issue 17: cluster runs --
    #: The node that must measure it (an every-node cluster run); "" for any machine.
    machine: str = ""
    # -- issue 14 --
    #: The workload's settings at this size (``workloads/params.py``); part of the cell's identity.
    #: Not hashed (a dict); cells are told apart by ``key``.
    params: dict[str, ParamValue] = field(default_factory=dict, hash=False)
    # -- issue 27 --
    #: The environment it runs in (``host/environments.py``: an interpreter, variables); "" for
    #: the run's own (a run without ``--python`` or ``--variant``).
    environment: str = ""

    @property
    def key(self) -> str:
        return cell_key(self.workload, self.size_label, self.backend, self.device, self.dtype,
                        self.mode, self.transfer, machine=self.machine, params=self.params,
                        environment=self.environment)

    @property
    def config(self) -> tuple[str, str, str]:
        """The worker that measures it: one process type per (backend, device, environment)."""
        return self.backend, self.device, self.environment

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "cell") -> "Cell":
        """A cell read back from JSON, each field checked (``schema.SchemaError`` names a bad one)."""
        cell = schema.from_json(cls, data, where=where)
        if cell.size < 1:
            raise schema.SchemaError(f"{where}.size: {cell.size} is not a positive size")
        if cell.backend not in backends.SPECS:
            raise schema.SchemaError(f"{where}.backend: unknown backend {cell.backend!r}")
        if cell.device not in backends.DEVICES:
            raise schema.SchemaError(f"{where}.device: unknown device {cell.device!r}")
        return cell


def _settings(wl: Any, size: int, given: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """A workload's settings at a size, the run's ``--param`` values over its own (one aimed at
    this workload, ``WL.NAME``, over one for every workload); a ``params=`` that fails, or a
    value of the wrong type, is a usage error, said in one line."""
    try:
        settings = wl.params_for(size)
    except Exception as exc:
        from .worker.tracebacks import describe_exception

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
            params = _settings(wl, n, options.params)
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
