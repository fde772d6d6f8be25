"""The Python API: the one way a run happens, from a notebook, a script or the command line.

>>> import arraybench
>>> r = arraybench.run(workloads=["matmul"], backends=["numpy", "torch"], sizes=["small"])  # doctest: +SKIP
>>> print(r)                                                                                 # doctest: +SKIP

``run`` measures and returns ``Results``; ``resume`` finishes an interrupted run; ``sweep`` runs
workloads across sizes; ``numerics`` compares each library's error in several dtypes; ``compare``
judges two runs cell by cell. Every ``arraybench`` command is a thin adapter over these.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence, Union

from .executors.cluster import check_options as check_cluster_options
from .model.context import parse_context
from .errors import SaveError, UsageError, one_line, option_name, resume_command, unknown_name
from .options import DTYPES, LEGACY_NAMES, OPTION_NAMES, RunOptions, legacy_names, parse_sizes, validate
from .plan import Cell, build_plan
from .reporter import Reporter
from .model.results import Results, load, resolve
from .run_state import RunState
from .session import Interrupted, Session
from .store.errors import StoreWarning
from .store.keeping import StoreChoice, store_run
from .workloads.definition import Workload
from .workloads.fingerprint import check_code, code_of
from .workloads.registry import BUILTIN, REGISTRY, register
from .workloads.shipping import ShippingError, needs_shipping, pack, receive, ship
from .workloads.userfile import LoadedFiles, load_files

if TYPE_CHECKING:
    from .analysis.compare import Comparison
    from .executors.base import Executor

#: A run's free labels: ``{"commit": "abc"}`` or ``["commit=abc"]``.
ContextLabels = Union[Mapping[str, str], Sequence[str], None]

__all__ = ["Interrupted", "Plan", "compare", "load_files", "load_results", "numerics", "plan", "resume",
           "run", "sweep", "sweep_sizes"]


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


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read a ``results.json``, or the one in a folder (validated).

    ``Results.records`` holds the records; ``Results.to_dataframe()`` gives them as a pandas
    DataFrame where pandas is installed. A missing or damaged file raises ``ResultsError``.
    """
    return load(resolve(path))


def options_from(workloads: Any = None, *, options: RunOptions | None = None,
                 **settings: Any) -> RunOptions:
    """``RunOptions`` from the keywords of ``run`` (names, lists, ``Workload`` objects, sizes as
    text or numbers); ``TypeError`` names an unknown keyword. Workload objects are registered."""
    base = options or RunOptions()
    for old, new in LEGACY_NAMES.items():
        if old in settings:
            warnings.warn(f"{old}= is now called {new}= (as --processes on the command line)",
                          DeprecationWarning, stacklevel=3)
    settings = legacy_names(settings)
    unknown = [k for k in settings if k not in OPTION_NAMES]
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r}; valid: {', '.join(OPTION_NAMES)}")
    changes = {k: v for k, v in settings.items() if v is not None}
    if "processes" in changes and "max_processes" not in settings:
        changes["max_processes"] = None  # processes=N alone is a fixed count, as --processes N
    if workloads is not None:
        changes["workloads"] = _workload_names(workloads)
    for name in ("backends", "devices", "modes", "workload_files"):
        if isinstance(changes.get(name), str):
            changes[name] = [p.strip() for p in changes[name].split(",") if p.strip()]
        elif name in changes:
            changes[name] = list(changes[name])
    if "sizes" in changes:
        changes["sizes"] = _sizes(changes["sizes"])
    if "workload_files" in changes:
        changes["workload_files"] = [str(Path(f).expanduser().resolve()) for f in changes["workload_files"]]
    return replace(base, **changes)


def _workload_names(workloads: Any) -> list[str]:
    if isinstance(workloads, (str, Workload)):
        workloads = [workloads]
    names = []
    for w in workloads:
        if isinstance(w, Workload):
            if REGISTRY.get(w.name) is not w:
                register(w)
            names.append(w.name)
        elif isinstance(w, str):
            names.append(w)
        else:
            raise TypeError(f"workloads: expected names or @arraybench.workload functions, not {w!r}")
    if not names:
        # An empty list is no selection, not "everything": leave workloads out for the suite.
        raise UsageError("workloads: none given (an empty list); name at least one, or leave "
                         "workloads out to measure the built-in suite")
    return names


def _sizes(sizes: Any) -> list[str]:
    if isinstance(sizes, str):
        return parse_sizes(sizes)
    if isinstance(sizes, int):
        sizes = [sizes]
    return parse_sizes(",".join(str(s) for s in sizes))


def plan(options: RunOptions) -> Plan:
    """Check options and build the cells; imports workload files, writes nothing.

    ``UsageError`` says in one line what is wrong. With workload files and no workloads named,
    the files' workloads run (not the built-in suite).
    """
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
    return Plan(options, cells, loaded, shipped, pack(shipped) if shipped else None)


def _with_against(options: RunOptions) -> RunOptions:
    """``options`` with the two environments of ``--against REF`` (``host/against``)."""
    from .host import against

    if options.variants or options.pythons:
        raise UsageError(f"{option_name('against')} compares two versions of the code in this interpreter; "
                         f"it cannot be combined with {option_name('variants')} or {option_name('pythons')}")
    root, tree = against.export(options.against)
    return replace(options, variants=against.variants(options.against, root, tree, os.environ.get("PYTHONPATH", "")))


def _check_saveable(options: RunOptions, cells: list[Cell]) -> None:
    """``UsageError`` for a setting the journal and results.json could not hold so that the run
    reads them back (a seed of 2**63, a setting of 10**400 or nan): refused now, before the
    output folder is touched, rather than measured and then unreadable."""
    from .model.untrusted import problem

    for name, value in options.to_dict().items():
        if name == "params":
            why = next(filter(None, (problem(v, f"--param {k}") for k, v in value.items())), None)
        else:
            why = problem(value, f"--{name.replace('_', '-')}")
        if why:
            raise UsageError(f"{why}; a run saves only what it can read back")
    for cell in cells:
        why = next(filter(None, (problem(v, f"workload {cell.workload}'s setting {k}")
                                 for k, v in cell.params.items())), None) \
            or problem(cell.to_dict(), f"cell {cell.key}")
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
      functions, defined anywhere (a notebook cell too); default: the seed's five.
    - ``backends``, ``devices``, ``modes``: lists or comma-separated text; ``sizes``: labels
      (``"small"``), element counts, or a range ``"16:4096:8"``; ``dtype``: ``"float64"`` or
      ``"float32"``.
    - ``output_dir``: where ``results.json``, the journal and the report go; ``None`` keeps the
      results in memory (a temporary folder holds the journal while the run lasts).
    - ``reporter``: progress events (``arraybench.Reporter``); default: ``progress``.
    - ``progress``: show it as it goes: in a Jupyter notebook a line updated in place, elsewhere
      a bar on stderr; default (None): in a notebook only. ``False`` is silent.
    - ``store``: where the finished run is appended (``True``: the default store in the user's
      data folder; a path or ``postgresql://`` URL; ``False``: nowhere). A store that cannot be
      written is a ``StoreWarning``, never an error: the run is kept all the same.
    - ``context``: free labels saved with the run (``{"commit": "abc123"}``), which history
      attributes changes to.
    - any other ``RunOptions`` field by name: ``processes=5`` (exactly five worker processes per
      cell; with ``max_processes=10``, from five up to ten while the interval is wide), ``max_time=2.0``,
      ``threads=1``, ``pythons={"np126": ".venv126/bin/python"}`` and
      ``variants={"t1": {"OPENBLAS_NUM_THREADS": "1"}}`` (each backend under each environment,
      side by side: docs/environments.md)...

    Raises ``UsageError`` for bad options (or a folder another run holds) before anything is
    measured, ``Interrupted`` (holding the partial results, saved) when a signal stops the run, and
    ``SaveError`` when a file cannot be written once measuring has begun (what was journalled is
    kept; ``resume`` goes on).
    """
    opts = options_from(workloads, options=options, backends=backends, devices=devices, sizes=sizes,
                        dtype=dtype, modes=modes, **settings)
    labels = parse_context(context)
    checked = plan(opts)
    return execute(checked, output_dir, overwrite=overwrite,
                   reporter=reporter_for(reporter, progress, len(checked.cells)), plots=plots,
                   store=store, context=labels)


def reporter_for(reporter: Reporter | None, progress: bool | None, cells: int | None = None) -> Reporter | None:
    """The reporter a call asked for: its own, else progress where wanted (``progress``: True,
    False, or None for "in a Jupyter notebook only"), else none."""
    if reporter is not None:
        return reporter
    from .render.notebook_progress import NotebookProgress, in_notebook

    notebook = in_notebook()
    if progress is False or (progress is None and not notebook):
        return None
    if notebook:
        return NotebookProgress(cells)
    from .render.progress import ConsoleReporter

    return ConsoleReporter(cells=cells)


def execute(checked: Plan, output_dir: str | os.PathLike[str] | None, *, overwrite: bool = False,
            reporter: Reporter | None = None, plots: bool = True, store: StoreChoice = True,
            context: ContextLabels = None) -> Results:
    """Run a checked plan into ``output_dir`` (see ``run``). In a git work tree the commit, branch
    and dirty state are recorded with the run's context; labels given win."""
    from .host import git
    from .outdir import FolderLock, claim

    labels = {**git.labels(), **parse_context(context)}
    # Connected and checked before the output folder is touched: a bad cluster costs nothing.
    executor = _executor(checked.options, measure=True)
    checked = replace(checked, cells=executor.plan(checked.cells))
    temporary = output_dir is None
    scratch: Path | None = None
    try:
        if temporary:
            scratch = Path(tempfile.mkdtemp(prefix="arraybench-"))
            lock = FolderLock.acquire(scratch)
        else:
            lock = claim(output_dir, overwrite=overwrite)
        out = lock.folder
        source = "" if temporary else str(out.resolve())
        with lock, _saving(out):
            if checked.shipped:
                ship(checked.shipped, out, checked.packed)
            session = Session.start(checked.cells, checked.options, out, reporter, context=labels,
                                    code=code_of(checked.cells, REGISTRY))
            try:
                results = session.run(executor)
            except Interrupted as stop:
                _finish(stop.results, checked.files, out, report=not temporary, plots=plots,
                        store=store, source=source)
                raise
            _finish(results, checked.files, out, report=not temporary, plots=plots, store=store,
                    source=source)
    except BaseException as exc:
        if scratch is not None and not _keep_scratch(scratch) and isinstance(exc, Interrupted):
            exc.results.output_dir = None  # removed: the results are only in memory
        raise
    finally:
        executor.close()
    if temporary:
        shutil.rmtree(out, ignore_errors=True)
        results.output_dir = None
    return results


def _keep_scratch(folder: Path) -> bool:
    """A run into a temporary folder (``output_dir=None``) that did not finish: the folder goes,
    unless its journal holds a measurement, which is never thrown away: then a warning says where
    it is and how to go on. Returns whether it was kept."""
    from .model import journal

    try:
        measured = any(journal.read(folder).replicates.values())
    except (UsageError, OSError):
        measured = False
    if not measured:
        shutil.rmtree(folder, ignore_errors=True)
        return False
    warnings.warn(f"the run did not finish; what it measured is kept in {folder} (continue with "
                  f"arraybench.resume({str(folder)!r}) or `arraybench run --resume {folder}`; "
                  "delete the folder when done)", UserWarning, stacklevel=3)
    return True


def resume(output_dir: str | os.PathLike[str], *, reporter: Reporter | None = None,
           plots: bool = True, store: StoreChoice = True, context: ContextLabels = None,
           node_wait: float | None = None, workload_files: Sequence[str | os.PathLike[str]] = (),
           trust_folder: bool = False, progress: bool | None = None) -> Results:
    """Finish the interrupted run in ``output_dir`` with its own settings (measures only what is
    missing; a complete run is measured no further and its files are rewritten). ``store`` as in
    ``run``; ``context`` labels are added to the run's own. A cluster run goes on on its cluster;
    ``node_wait``: seconds an every-node run waits for a node it needs (default 60), before it
    says the node is missing.

    A folder is data: the workload files its journal names are imported, and its pickled
    workloads loaded, only where this user's arraybench wrote it, where ``workload_files`` names
    them, or with ``trust_folder=True`` (``workloads.trust``); else ``UsageError``, nothing run.
    A complete run needs no code and runs none. ``progress`` as in ``run``."""
    from .model import journal
    from .outdir import claim
    from .workloads import trust

    out = Path(output_dir)
    journal.check_present(out)  # before anything is created or locked: is there a run at all?
    with claim(out, resume=True, what="--resume"), _saving(out):
        state = journal.read(out)  # once, now that no other run can be appending to it
        progress = RunState.of(state)
        left = progress.missing()
        unrun: list[str] = []
        if left or state.sealed or trust_folder:
            trust.check_resume(out, files=state.options.workload_files,
                               shipped=bool(state.options.shipped_workloads),
                               shipped_sha256=state.shipped_sha256, sealed=state.sealed,
                               named=[str(Path(f).expanduser().resolve()) for f in workload_files],
                               trust_folder=trust_folder,
                               environments=bool(state.options.pythons or state.options.variants))
            loaded = load_files(state.options.workload_files)
            if state.options.shipped_workloads:
                try:
                    receive(out / trust.SHIPPED_NAME)
                except ShippingError as exc:
                    raise UsageError(str(exc)) from None
        else:  # nothing to measure and no one vouches for the code: its results, unrun
            loaded = LoadedFiles()
            unrun = [c.workload for c in state.cells]
        try:
            validate(state.options, [*REGISTRY, *unrun])
        except UsageError as exc:
            raise UsageError(f"{out / journal.JOURNAL_NAME}: its saved settings are not valid here ({exc})") from None
        labels = parse_context(context)
        # A cluster run with nothing left is finished here, without connecting to its cluster.
        check_code(state.code, [c.workload for c in state.cells if progress.missing_indices(c)],
                   out, REGISTRY)
        executor = _executor(state.options, measure=left > 0, node_wait=node_wait)
        try:
            session = Session.resume(state, out, reporter_for(reporter, progress, len(state.cells)))
            if state.options.cluster is not None and not left:
                from .executors import shardlog

                shardlog.restore(session.environment, shardlog.read(out), state.options.on)
            if labels:
                session.environment["context"] = {**(session.environment.get("context") or {}), **labels}
            source = str(out.resolve())
            try:
                results = session.run(executor)
            except Interrupted as stop:
                _finish(stop.results, loaded, out, report=True, plots=plots, store=store,
                        source=source)
                raise
            _finish(results, loaded, out, report=True, plots=plots, store=store, source=source)
        finally:
            executor.close()
    return results


def _executor(options: RunOptions, *, measure: bool, node_wait: float | None = None) -> Executor:
    """Where the run's replicates are measured: its cluster's nodes (connected and checked now,
    a ``UsageError`` if they cannot serve it), or worker processes on this machine, which also
    finish a run with nothing left to measure."""
    if options.cluster is not None and measure:
        from .executors import cluster_executor

        return cluster_executor(options, node_wait=node_wait)
    from .executors.local import LocalExecutor

    if measure and options.pythons:
        from .executors.probe import check_interpreters

        # Each other interpreter asked once, now: one that cannot run the worker is one line
        # naming what to install, before the output folder is touched.
        check_interpreters(options)
    return LocalExecutor()


@contextmanager
def _saving(out: Path) -> Iterator[None]:
    """Turn a file that could not be written into one ``SaveError`` that says how to go on.

    Whatever reached the journal before the failure is kept there (it is fsynced line by line),
    and ``--resume`` rewrites results.json and the report from it once the cause is gone.
    """
    try:
        yield
    except SaveError as exc:
        raise SaveError(_resume_hint(str(exc), out), exc.path) from None
    except OSError as exc:  # a file named in the error could not be written; else, say what failed
        what = str(SaveError.from_os(exc)) if exc.filename else f"the run stopped ({exc.strerror or exc})"
        raise SaveError(_resume_hint(what, out), exc.filename) from None


def _resume_hint(what: str, out: Path) -> str:
    from .model.journal import JOURNAL_NAME

    return (f"{what}; every measurement made before it is kept in {out / JOURNAL_NAME}; once the "
            f"cause is fixed, continue with: {resume_command(out)}")


def _finish(results: Results, files: LoadedFiles, out: Path, *, report: bool, plots: bool,
            store: StoreChoice = False, source: str = "") -> None:
    """Record the files that did not load, store the run, then write the report files next to
    results.json (with the run's history, where the store has some)."""
    if files.errors:
        results.errors = [*results.errors, *files.error_entries()]
        results.save(out / "results.json")
    stopped: _Stopped | None = None
    with _stopping_on_signals():
        try:
            found = store_run(results, store, source=source, history=report)
        except _Stopped as exc:  # Ctrl-C or SIGTERM while the store was busy: report, then stop
            stopped, found = exc, None
    if report:
        try:
            results.write_report(out, plots=plots, history=found)
        except (OSError, SaveError):
            raise
        except Exception as exc:
            if found is None:
                raise
            # The store's history is the store's: it must not cost the run its report.
            warnings.warn(StoreWarning(f"the report is written without the store's history ({one_line(exc)})"),
                          stacklevel=2)
            results.write_report(out, plots=plots)
    if stopped is not None:
        raise Interrupted(results, stopped.signum, storing=True)


class _Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM while a finished run was being stored. A ``KeyboardInterrupt``, so that
    psycopg cancels the query it waits on, and no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stopping_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``_Stopped`` inside (in the main thread; a signal the process
    ignores stays ignored): a run waiting on a locked store stops at once, and says so."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, stop)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def sweep(workloads: Any, *, sizes: Any = None, output_dir: str | os.PathLike[str] | None = None,
          **kwargs: Any) -> Results:
    """``run`` across many sizes; ``sizes`` defaults to ``sweep_sizes``. The results' findings
    state the crossovers (from which size one library beats another)."""
    if sizes is None:
        opts = options_from(workloads, workload_files=kwargs.get("workload_files"))
        sizes = sweep_sizes(opts.workloads or load_files(opts.workload_files).names())
    return run(workloads, sizes=sizes, output_dir=output_dir, **kwargs)


def sweep_sizes(names: Sequence[str]) -> str:
    """Eight geometric steps from a tenth of the workloads' smallest size to their largest
    (``UsageError`` when the workloads disagree on their natural sizes)."""
    from .workloads.registry import expand

    if not names:
        raise UsageError("name the workload to sweep, e.g. `arraybench sweep --workloads matmul`")
    missing = [n for n in expand(list(names)) if n not in REGISTRY]
    if missing:
        raise UsageError(unknown_name("workload", missing[0], sorted(REGISTRY), more="see `arraybench list`"))
    ranges = set()
    for n in expand(list(names)):
        known = sorted(REGISTRY[n].sizes.values())
        ranges.add(f"{max(2, known[0] // 10)}:{known[-1]}:8")
    if len(ranges) > 1:
        raise UsageError("these workloads have different natural sizes; give --sizes, e.g. 16:4096")
    return ranges.pop()


def numerics(workloads: Any = ("numerics",), *, dtype: Iterable[str] | str | None = None,
             dtypes: Iterable[str] | None = None,
             sizes: Any = "small,large", output_dir: str | os.PathLike[str] | None = None,
             overwrite: bool = False, reporter: Reporter | None = None, progress: bool | None = None,
             **kwargs: Any) -> Results:
    """Each library's error against float64, per workload and dtype: a brief run per dtype (one
    replicate, a few samples: the time is not the point). With ``output_dir``, each dtype's run
    goes into its own subfolder. Returns the records of every dtype together. ``dtype``: one
    dtype or several (a list, or comma-separated text; default: float64 and float32), spelled as
    ``run``'s; ``dtypes`` is its old name."""
    from .outdir import prepare

    if dtypes is not None:
        warnings.warn("numerics(dtypes=...) is now numerics(dtype=...)", DeprecationWarning, stacklevel=2)
        dtype = dtypes if dtype is None else dtype
    chosen = DTYPES if dtype is None else dtype
    dtypes = [d.strip() for d in chosen.split(",")] if isinstance(chosen, str) else list(chosen)
    for dtype in dtypes:
        if dtype not in DTYPES:  # checked here too: before the first dtype's run starts
            raise UsageError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
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
    """Two runs cell by cell: faster, slower or not significant. Each run is a ``Results``, a results
    file or its folder, or a run in the results store (``store``: its location, None for the
    default) named by its id, ``"last"`` or ``"last~1"``: ``compare("last~1", "last")``. Runs from
    different machines raise ``machines.CrossMachineError`` unless ``cross_machine``."""
    from .store.refs import load_run

    a = base if isinstance(base, Results) else load_run(base, store)
    b = new if isinstance(new, Results) else load_run(new, store)
    return b.compare(a, threshold=threshold, alpha=alpha, cross_machine=cross_machine)



def merge(runs: Sequence[Results | str | os.PathLike[str]], *, labels: Sequence[str | None] | None = None,
          output_dir: str | os.PathLike[str] | None = None, plots: bool = True) -> Results:
    """Several runs (results, files or folders; usually one per machine) as one ``Results`` with
    the machine as a dimension: each record labelled with its run's machine label
    (``labels``, default: each folder's name), each machine's environment under
    ``environment["machines"]``. With ``output_dir``, writes results.json and the whole report
    there."""
    from .model.merge import default_label, merge as merge_runs
    from .outdir import claim_for_report

    loaded: list[Results] = []
    names: list[str] = []
    for i, run in enumerate(runs):
        res = run if isinstance(run, Results) else load(resolve(run))
        loaded.append(res)
        given = labels[i] if labels and i < len(labels) else None
        names.append(given or default_label(res, i, names))
    merged = merge_runs(loaded, names)
    if output_dir is not None:
        out = Path(output_dir)
        inputs = {r.output_dir.resolve() for r in loaded if r.output_dir is not None}
        if out.resolve() in inputs:
            raise UsageError(f"--output-dir {out} holds one of the runs being merged; name another folder")
        # Locked as a run locks its folder: never written while a run writes there, and never
        # over a run's own results (running, interrupted or finished).
        with claim_for_report(out) as lock:
            merged.save(lock.folder / "results.json")
            merged.output_dir = lock.folder
            merged.write_report(lock.folder, plots=plots)
    return merged
