"""A run's life: claim the output folder, measure through an executor, save, store and report, fresh
or resumed from its journal; ``api`` is its public face. Ctrl-C and SIGTERM end a run here, its
measurements kept."""

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

from .errors import SaveError, StoreWarning, UsageError, from_command_line, one_line
from .files import write_bytes_atomic
from .outdir import FolderLock, claim, resume_command
from .model.options import RunOptions, parse_context, refuse_other_settings
from .plan import Plan, validate
from .host import git
from .model import journal
from .model.journal import JOURNAL_NAME, JournalState
from .model.journal import Reporter
from .model.results import Results
from .analysis.policy import RunState
from .executors import cluster_executor
from .executors.cluster import read_shard_log, restore_shard_log
from .executors.session import Interrupted, Session, stop_signals
from .store.store import StoreChoice, store_run
from .workloads import trust
from .workloads.trust import check_code, code_of, receive
from .workloads.registry import REGISTRY
from .workloads.userfile import LoadedFiles, load_files

if TYPE_CHECKING:
    from .executors.session import Executor

#: A run's free labels: ``{"commit": "abc"}`` or ``["commit=abc"]``.
ContextLabels = Union[Mapping[str, str], Sequence[str], None]


def reporter_for(reporter: Reporter | None, progress: bool | None, cells: int | None = None) -> Reporter | None:
    """The caller's reporter, else progress (a line in a notebook, a bar or lines on stderr) unless ``progress`` is False."""
    if reporter is not None or progress is False:
        return reporter
    from .render.progress import ConsoleReporter, NotebookProgress, in_notebook

    return NotebookProgress(cells) if in_notebook() else ConsoleReporter(cells=cells)


def execute(checked: Plan, output_dir: str | os.PathLike[str] | None, *, overwrite: bool = False,
            reporter: Reporter | None = None, plots: bool = True, store: StoreChoice = True,
            context: ContextLabels = None) -> Results:
    """Run a checked plan into ``output_dir`` (see ``run``); a git work tree's commit is recorded in its context."""
    labels = {**git.labels(), **parse_context(context)}
    # Connected and checked before the output folder is touched: a bad cluster costs nothing.
    executor = _executor(checked.options, measure=True)
    checked = replace(checked, cells=executor.plan(checked.cells))
    scratch: Path | None = None  # output_dir=None: a temporary folder, removed at the end
    try:
        if output_dir is None:
            scratch = Path(tempfile.mkdtemp(prefix="arraybench-"))
        lock = FolderLock.acquire(scratch) if scratch is not None else claim(output_dir, overwrite=overwrite)
        out = lock.folder
        with lock, _saving(out):
            if checked.packed is not None:
                write_bytes_atomic(out / trust.SHIPPED_NAME, checked.packed)
            session = Session.start(checked.cells, checked.options, out, reporter, context=labels,
                                    code=code_of(checked.cells, REGISTRY))
            results = _run(session, executor, checked.files, out, report=scratch is None, plots=plots,
                           store=store, source="" if scratch is not None else str(out.resolve()))
    except BaseException as exc:
        if scratch is not None and not _keep_scratch(scratch) and isinstance(exc, Interrupted):
            exc.results.output_dir = None  # removed: the results are only in memory
        raise
    finally:
        executor.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
        results.output_dir = None
    return results


def _keep_scratch(folder: Path) -> bool:
    """Remove a temporary folder (``output_dir=None``) unless its journal holds a measurement, which is
    never thrown away (a warning says where); whether it was kept."""
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
    """Finish the interrupted run in ``output_dir`` with its own settings, measuring only what is missing.

    A folder is data: its workload files and pickled workloads run only where this user's arraybench
    wrote it, ``workload_files`` names them, or ``trust_folder=True`` (``workloads.trust``); else
    ``UsageError``. ``options``: settings by name, refused where they differ from the run's own.
    ``node_wait``: seconds an every-node cluster run waits for a node it needs."""
    out = Path(output_dir)
    journal.check_present(out)  # before anything is created or locked: is there a run at all?
    if options:
        refuse_other_settings(journal.read(out).options, options)
    with claim(out, resume=True, what="--resume"), _saving(out):
        state = journal.read(out)  # once, now that no other run can be appending to it
        measured = RunState.of(state)  # not ``progress``: the caller's say on progress is kept
        left = measured.missing()
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
                receive(out / trust.SHIPPED_NAME)
        else:  # nothing to measure and no one vouches for the code: its results, unrun
            loaded = LoadedFiles()
            unrun = [c.workload for c in state.cells]
        if left:
            _refuse_other_commit(state)
            if state.options.against:
                # The exported tree went with the process that made it: the recorded commit again.
                state = replace(state, options=replace(
                    state.options, variants=git.reexport(state.options.against, state.options.variants)))
        try:
            validate(state.options, [*REGISTRY, *unrun])
        except UsageError as exc:
            raise UsageError(f"{out / journal.JOURNAL_NAME}: its saved settings are not valid here ({exc})") from None
        labels = parse_context(context)
        # A cluster run with nothing left is finished here, without connecting to its cluster.
        check_code(state.code, [c.workload for c in state.cells if measured.missing_indices(c)],
                   out, REGISTRY)
        executor = _executor(state.options, measure=left > 0, node_wait=node_wait)
        try:
            session = Session.resume(state, out, reporter_for(reporter, progress, len(state.cells)))
            if state.options.cluster is not None and not left:
                restore_shard_log(session.environment, read_shard_log(out), state.options.on)
            if labels:
                session.environment["context"] = {**(session.environment.get("context") or {}), **labels}
            results = _run(session, executor, loaded, out, report=True, plots=plots, store=store,
                           source=str(out.resolve()))
        finally:
            executor.close()
    return results


def _refuse_other_commit(state: JournalState) -> None:
    """``UsageError`` where the work tree is now at another commit than the run recorded: a cell would pool two codes."""
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
    """The cluster's nodes (checked now) or worker processes on this machine."""
    if options.cluster is not None and measure:
        return cluster_executor(options, node_wait=node_wait)
    from .executors.local import LocalExecutor

    if measure and options.pythons:
        from .executors.probe import check_interpreters

        # Each other interpreter asked now, before the folder is touched: what to install, in one line.
        check_interpreters(options)
    return LocalExecutor()


@contextmanager
def _saving(out: Path) -> Iterator[None]:
    """A file that could not be written as one ``SaveError`` saying how to go on; what reached the
    journal is kept, and ``--resume`` rewrites the rest from it."""
    try:
        yield
    except (SaveError, OSError) as exc:
        if isinstance(exc, SaveError):
            what, path = str(exc), exc.path
        else:  # a file named in the error could not be written; else, say what failed
            what = str(SaveError.from_os(exc)) if exc.filename else f"the run stopped ({exc.strerror or exc})"
            path = exc.filename
        raise SaveError(f"{what}; every measurement made before it is kept in {out / JOURNAL_NAME}; once the "
                        f"cause is fixed, continue with: {resume_command(out)}", path) from None


def _run(session: Session, executor: Executor, files: LoadedFiles, out: Path, **finish: Any) -> Results:
    """The session's run through ``executor``, finished (``_finish``) even where a signal stops it."""
    try:
        results = session.run(executor)
    except Interrupted as stop:
        _finish(stop.results, files, out, **finish)
        raise
    _finish(results, files, out, **finish)
    return results


def _finish(results: Results, files: LoadedFiles, out: Path, *, report: bool, plots: bool,
            store: StoreChoice = False, source: str = "") -> None:
    """Store the run, then write the report beside results.json (with its history, where the store has some)."""
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
        except Exception as exc:
            if found is None or isinstance(exc, (OSError, SaveError)):
                raise
            # The store's history is the store's: it must not cost the run its report.
            warnings.warn(StoreWarning(f"the report is written without the store's history ({one_line(exc)})"),
                          stacklevel=2)
            results.write_report(out, plots=plots)
    if stopped is not None:
        raise Interrupted(results, stopped.args[0], storing=True)


class _Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM (its number the one argument) while a finished run was stored: a
    ``KeyboardInterrupt``, so that psycopg cancels its query and no ``except Exception`` swallows it."""


@contextmanager
def _stopping_on_signals() -> Iterator[None]:
    """Stop signals raise ``_Stopped`` inside (main thread; an ignored signal stays ignored): a run
    waiting on a locked store stops at once."""
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
