"""A run's life: claim the output folder, measure through an executor, save, store and report,
and the same for a run resumed from its journal. The API (``api.execute``, ``api.resume``) is its
public face; Ctrl-C and SIGTERM end a run here with what it measured kept.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import warnings
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence, Union

from .model.context import parse_context
from .errors import SaveError, StoreWarning, UsageError, from_command_line, one_line
from .outdir import resume_command
from .model.options import RunOptions, refuse_other_settings
from .plan import Plan, validate
from .model.journal import JournalState
from .model.reporter import Reporter
from .model.results import Results
from .analysis.run_state import RunState
from .executors.session import Interrupted, Session, stop_signals
from .store.keeping import StoreChoice, store_run
from .workloads.trust import check_code, code_of
from .workloads.registry import REGISTRY
from .workloads.shipping import ShippingError, receive, ship
from .workloads.userfile import LoadedFiles, load_files

if TYPE_CHECKING:
    from .executors.base import Executor

#: A run's free labels: ``{"commit": "abc"}`` or ``["commit=abc"]``.
ContextLabels = Union[Mapping[str, str], Sequence[str], None]


def reporter_for(reporter: Reporter | None, progress: bool | None, cells: int | None = None) -> Reporter | None:
    """The reporter a call asked for: its own, else progress unless ``progress`` is False: in a
    Jupyter notebook a line updated in place, elsewhere on stderr (a bar on a terminal, a line per
    cell in a log)."""
    if reporter is not None:
        return reporter
    if progress is False:  # asked to be quiet
        return None
    from .render.progress import NotebookProgress, in_notebook

    notebook = in_notebook()
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
    from .outdir import claim
    from .outdir.lock import FolderLock

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
           trust_folder: bool = False, progress: bool | None = None,
           options: Mapping[str, Any] | None = None) -> Results:
    """Finish the interrupted run in ``output_dir`` with its own settings (measures only what is
    missing; a complete run is measured no further and its files are rewritten). ``store`` as in
    ``run``; ``context`` labels are added to the run's own. A cluster run goes on on its cluster;
    ``node_wait``: seconds an every-node run waits for a node it needs (default 60), before it
    says the node is missing.

    A folder is data: the workload files its journal names are imported, and its pickled
    workloads loaded, only where this user's arraybench wrote it, where ``workload_files`` names
    them, or with ``trust_folder=True`` (``workloads.trust``); else ``UsageError``, nothing run.
    A complete run needs no code and runs none. ``progress`` as in ``run``. ``options``: run
    options the caller gives by name (``{"dtype": "float32"}``); one that differs from the run's
    own is refused (``refuse_other_settings``), before anything is claimed or run."""
    from .model import journal
    from .outdir import claim
    from .workloads import trust

    out = Path(output_dir)
    journal.check_present(out)  # before anything is created or locked: is there a run at all?
    if options:
        refuse_other_settings(journal.read(out).options, options)
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
        if left:
            _refuse_other_commit(state)
            if state.options.against:
                from .host import against

                # The exported tree went with the process that made it: the recorded commit again.
                state = replace(state, options=replace(
                    state.options, variants=against.reexport(state.options.against, state.options.variants)))
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


def _refuse_other_commit(state: JournalState) -> None:
    """``UsageError`` where the work tree the run began in is now at another commit: the
    processes still to run would measure other code than those in the journal, and a cell's
    figures would pool both. Checked only where the run recorded git's commit."""
    from .host import git

    recorded = (state.environment.get("context") or {}).get("commit")
    if not isinstance(recorded, str) or not re.fullmatch(r"[0-9a-f]{7,40}", recorded):
        return  # none, or a label the user gave (--context commit=v1.2), not git's
    project = state.environment.get("project")
    where = Path(project) if isinstance(project, str) and Path(project).is_dir() else Path.cwd()
    now = git.labels(where).get("commit")
    shared = min(len(recorded), len(now or ""))
    if now and recorded[:shared] != now[:shared]:
        what = "--resume" if from_command_line() else "resume()"
        raise UsageError(f"{what}: the run began at commit {recorded} of {where}, which is now at "
                         f"{now}: its processes would pool two versions of the code; check out "
                         f"{recorded} to finish it, or start a new run")


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
    """The stop signals (``stop_signals``: SIGINT, SIGTERM, SIGHUP...) raise ``_Stopped`` inside (in
    the main thread; a signal the process ignores stays ignored): a run waiting on a locked store
    stops at once, and says so."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    previous = {s: signal.getsignal(s) for s in stop_signals()}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, stop)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
