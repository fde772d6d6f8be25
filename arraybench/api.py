"""The Python API: the one way a run happens, from a notebook, a script or the command line.

>>> import arraybench
>>> r = arraybench.run(workloads=["matmul"], backends=["numpy", "torch"], sizes=["small"])  # doctest: +SKIP

A run's life (its folder, executor, journal, store and report) is ``lifecycle``'s."""

from __future__ import annotations

import inspect
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .executors.cluster import check_options as check_cluster_options
from .errors import UsageError, option_name, unknown_name
from .host import git
from .model.options import DTYPES, RunOptions, parse_context
from .options import KEYWORDS, csv_list
from .lifecycle import ContextLabels, execute, reporter_for, resume
from .plan import Cell, Plan, build_plan, check_choices, validate
from .model.journal import Reporter
from .model.results import LEGACY_NAMES, Results, legacy_names, load, resolve
from .model.runs import default_label, merge as merge_runs
from .model.schema import problem
from .executors.session import Interrupted
from .store.store import StoreChoice
from .workloads.definition import Workload, parse_sizes
from .workloads.registry import BUILTIN, REGISTRY, expand, register
from .workloads.trust import needs_shipping, pack
from .workloads.userfile import load_files
from .outdir import claim_for_report, prepare
from .store.refs import load_run

if TYPE_CHECKING:
    from .analysis.compare import Comparison


__all__ = ["Interrupted", "Plan", "compare", "load_files", "load_results", "numerics", "plan", "resume",
           "run", "sweep", "sweep_sizes"]


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read a ``results.json``, or the one in a folder (validated); ``ResultsError`` if missing or damaged."""
    return load(resolve(path))


def options_from(workloads: Any = None, *, options: RunOptions | None = None,
                 **settings: Any) -> RunOptions:
    """``RunOptions`` from ``run``'s keywords (names, lists, ``Workload`` objects, sizes as text or
    numbers); ``TypeError`` names an unknown keyword and the closest one. Workload objects are registered."""
    base = options or RunOptions()
    for old, new in LEGACY_NAMES.items():
        if old in settings:
            warnings.warn(f"{old}= is now called {new}= (as --processes on the command line)",
                          DeprecationWarning, stacklevel=3)
    settings = legacy_names(settings)
    unknown = [k for k in settings if k not in KEYWORDS]
    if unknown:
        # run's own keywords are named too: output_dri= gets a did-you-mean
        valid = [*KEYWORDS, *(k for k in inspect.signature(run).parameters if k != "settings")]
        raise TypeError(unknown_name("option", unknown[0], valid, more="see help(arraybench.run)"))
    changes = {k: v for k, v in settings.items() if v is not None}
    if "processes" in changes and "max_processes" not in settings:
        changes["max_processes"] = None  # processes=N alone is a fixed count, as --processes N
    if workloads is not None:
        changes["workloads"] = _workload_names(workloads)
    for name in {"backends", "devices", "modes", "workload_files"} & set(changes):
        changes[name] = csv_list(changes[name]) if isinstance(changes[name], str) else list(changes[name])
    if "sizes" in changes:
        changes["sizes"] = parse_sizes(changes["sizes"])
    if "workload_files" in changes:
        changes["workload_files"] = [str(Path(f).expanduser().resolve()) for f in changes["workload_files"]]
    return replace(base, **changes)


def _workload_names(workloads: Any) -> list[str]:
    names = []
    for w in [workloads] if isinstance(workloads, (str, Workload)) else workloads:
        if isinstance(w, Workload):
            register(w)
            w = w.name
        elif not isinstance(w, str):
            raise TypeError(f"workloads: expected names or @arraybench.workload functions, not {w!r}")
        names.append(w)
    if not names:
        # An empty list is no selection, not "everything": leave workloads out for the suite.
        raise UsageError("workloads: none given (an empty list); name at least one, or leave "
                         "workloads out to measure the built-in suite")
    return names


def plan(options: RunOptions) -> Plan:
    """Check options and build the cells; imports workload files, writes nothing (``UsageError`` in
    one line). With workload files and no workloads named, the files' workloads run."""
    loaded = load_files(options.workload_files)
    known = dict(REGISTRY)
    if options.workload_files:
        errors = "; ".join(loaded.errors.values())
        if not options.workloads:
            options = replace(options, workloads=loaded.names())
            if not options.workloads:
                raise UsageError(errors or "the workload files define no workload")
        unknown = [w for w in options.workloads if w not in known]
        if unknown and errors:
            raise UsageError(f"unknown workload {unknown[0]!r} (a workload file did not load: {errors})")
    options = validate(options, known)
    if options.against:
        options = _with_against(options)
    check_cluster_options(options)
    cells = build_plan(options, known, list(BUILTIN))
    names = list(dict.fromkeys(c.workload for c in cells))
    shipped = [known[n] for n in names if needs_shipping(known[n], options.workload_files)]
    options = replace(options, shipped_workloads=[w.name for w in shipped])
    _check_saveable(options, cells)
    return Plan(options, cells, loaded, pack(shipped) if shipped else None)


def _with_against(options: RunOptions) -> RunOptions:
    if options.variants or options.pythons:
        raise UsageError(f"{option_name('against')} compares two versions of the code in this interpreter; "
                         f"it cannot be combined with {option_name('variants')} or {option_name('pythons')}")
    root, tree = git.export(options.against)
    return replace(options, variants=git.variants(options.against, root, tree, os.environ.get("PYTHONPATH", "")))


def _check_saveable(options: RunOptions, cells: list[Cell]) -> None:
    """``UsageError`` for a setting results.json could not read back (a seed of 2**63, nan): refused
    before the output folder is touched, rather than measured and then unreadable."""
    checks = [check for name, value in options.to_dict().items()
              for check in ([(v, f"--params {k}") for k, v in value.items()] if name == "params"
                            else [(value, f"--{name.replace('_', '-')}")])]
    for cell in cells:
        checks += [(v, f"workload {cell.workload}'s setting {k}") for k, v in cell.params.items()]
        checks.append((cell.to_dict(), f"cell {cell.key}"))
    why = next(filter(None, (problem(value, where) for value, where in checks)), None)
    if why:
        raise UsageError(f"{why}; a run saves only what it can read back")


def run(workloads: Any = None, *, backends: Sequence[str] | str | None = None,
        devices: Sequence[str] | str | None = None, sizes: Any = None, dtype: str | None = None,
        modes: Sequence[str] | str | None = None, output_dir: str | os.PathLike[str] | None = None,
        overwrite: bool = False, reporter: Reporter | None = None, plots: bool = True,
        options: RunOptions | None = None, store: StoreChoice = True,
        context: ContextLabels = None, progress: bool | None = None, **settings: Any) -> Results:
    """Measure workloads on libraries and devices; return the results.

    - ``workloads``: names (``"matmul"``, groups such as ``"interop"``) or ``@arraybench.workload``
      functions; default: the seed's five.
    - ``backends``, ``devices``, ``modes``: lists or comma-separated text; ``sizes``: labels
      (``"small"``), element counts, or a range ``"16:4096:8"``.
    - ``output_dir``: where ``results.json``, the journal and the report go; ``None`` keeps the
      results in memory.
    - ``reporter``: progress events (``arraybench.Reporter``); ``progress``: say on stderr (or in a
      notebook) what the run is doing; ``False`` is quiet.
    - ``store``: where the finished run is appended (``True``: the default store; a path or
      ``postgresql://`` URL; ``False``: nowhere). A store that cannot be written is a ``StoreWarning``.
    - ``context``: free labels saved with the run (``{"commit": "abc123"}``).
    - any other option by name (``options.OPTIONS``): ``processes=5``, ``max_time=2.0``,
      ``pythons={"np126": ".venv126/bin/python"}``... (docs/environments.md).

    Raises ``UsageError`` for bad options before anything is measured, ``Interrupted`` (holding the
    partial results, saved) when a signal stops the run, and ``SaveError`` when a file cannot be
    written once measuring has begun (``resume`` goes on)."""
    opts = options_from(workloads, options=options, backends=backends, devices=devices, sizes=sizes,
                        dtype=dtype, modes=modes, **settings)
    labels = parse_context(context)
    checked = plan(opts)
    return execute(checked, output_dir, overwrite=overwrite,
                   reporter=reporter_for(reporter, progress, len(checked.cells)), plots=plots,
                   store=store, context=labels)


def sweep(workloads: Any, *, sizes: Any = None, output_dir: str | os.PathLike[str] | None = None,
          **kwargs: Any) -> Results:
    """``run`` across many sizes (default: ``sweep_sizes``); the findings state the crossovers."""
    if sizes is None:
        opts = options_from(workloads, workload_files=kwargs.get("workload_files"))
        sizes = sweep_sizes(opts.workloads or load_files(opts.workload_files).names())
    return run(workloads, sizes=sizes, output_dir=output_dir, **kwargs)


def sweep_sizes(names: Sequence[str]) -> str:
    """Eight geometric steps from a tenth of the workloads' smallest size to their largest."""
    if not names:
        raise UsageError("name the workload to sweep, e.g. `arraybench sweep --workloads matmul`")
    missing = [n for n in expand(list(names)) if n not in REGISTRY]
    if missing:
        raise UsageError(unknown_name("workload", missing[0], sorted(REGISTRY), more="see `arraybench list`"))
    ranges = {f"{max(2, min(REGISTRY[n].sizes.values()) // 10)}:{max(REGISTRY[n].sizes.values())}:8"
              for n in expand(list(names))}
    if len(ranges) > 1:
        raise UsageError("these workloads have different natural sizes; give --sizes, e.g. 16:4096")
    return ranges.pop()


def numerics(workloads: Any = ("numerics",), *, dtype: Iterable[str] | str | None = None,
             dtypes: Iterable[str] | None = None,
             sizes: Any = "small,large", output_dir: str | os.PathLike[str] | None = None,
             overwrite: bool = False, reporter: Reporter | None = None, progress: bool | None = None,
             **kwargs: Any) -> Results:
    """Each library's error against float64, per workload and dtype: a brief run per dtype, each in
    its own subfolder of ``output_dir``; the records of every dtype together. ``dtype``: one or several
    (a list, or comma-separated text; default: float64 and float32); ``dtypes`` is its old name."""
    if dtypes is not None:
        warnings.warn("numerics(dtypes=...) is now numerics(dtype=...)", DeprecationWarning, stacklevel=2)
        dtype = dtypes if dtype is None else dtype
    chosen = DTYPES if dtype is None else dtype
    dtypes = csv_list(chosen) if isinstance(chosen, str) else list(chosen)
    dtypes = check_choices("dtype", dtypes, DTYPES)  # none at all is refused here, not after the runs
    # Every dtype planned (and so checked) before the first one's run starts.
    checked = [plan(options_from(workloads, sizes=sizes, dtype=dtype, processes=1, max_time=0.05,
                                 min_samples=3, **kwargs)) for dtype in dtypes]
    out = None if output_dir is None else prepare(output_dir, overwrite=overwrite)
    reporter = reporter_for(reporter, progress)
    records = []
    results: Results | None = None
    for dtype, p in zip(dtypes, checked):
        sub = None if out is None else out / dtype
        try:
            results = execute(p, sub, overwrite=overwrite, reporter=reporter, plots=False,
                              store=False)  # a check of errors, not of time
        except Interrupted as stop:
            stop.results.records = records + stop.results.records
            stop.results.output_dir = out
            raise
        records += results.records
    assert results is not None
    combined = replace(results, records=records, settings={**results.settings, "dtypes": dtypes})
    combined.output_dir = out
    return combined


def compare(base: Results | str | os.PathLike[str], new: Results | str | os.PathLike[str], *,
            threshold: float | None = None, alpha: float | None = None,
            cross_machine: bool = False, store: str | os.PathLike[str] | None = None) -> "Comparison":
    """Two runs cell by cell: faster, slower or not significant. Each is a ``Results``, a results file or
    folder, or a stored run (id, ``"last"``, ``"last~1"``; ``store``: where). Runs of different
    machines raise ``machines.CrossMachineError`` unless ``cross_machine``."""
    a = base if isinstance(base, Results) else load_run(base, store)
    b = new if isinstance(new, Results) else load_run(new, store)
    return b.compare(a, threshold=threshold, alpha=alpha, cross_machine=cross_machine)


def merge(runs: Sequence[Results | str | os.PathLike[str]], *, labels: Sequence[str | None] | None = None,
          output_dir: str | os.PathLike[str] | None = None, plots: bool = True) -> Results:
    """Several runs (usually one per machine) as one ``Results``, the machine a dimension: each record
    labelled with its run's label (``labels``, default: each folder's name). With ``output_dir``,
    writes results.json and the report there."""
    loaded = [run if isinstance(run, Results) else load_results(run) for run in runs]
    names: list[str] = []
    for i, res in enumerate(loaded):
        given = labels[i] if labels and i < len(labels) else None
        names.append(given or default_label(res, i, names))
    merged = merge_runs(loaded, names)
    if output_dir is not None:
        out = Path(output_dir)
        inputs = {r.output_dir.resolve() for r in loaded if r.output_dir is not None}
        if out.resolve() in inputs:
            raise UsageError(f"--output-dir {out} holds one of the runs being merged; name another folder")
        # Locked as a run's folder is: never over a run's own results, running or not.
        with claim_for_report(out) as lock:
            merged.save(lock.folder / "results.json")
            merged.output_dir = lock.folder
            merged.write_report(lock.folder, plots=plots)
    return merged
