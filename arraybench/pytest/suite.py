"""A pytest session: its options, checked in ``pytest_configure`` (a bad one is one line and exit 4,
not a failure after minutes of measuring); each ``arraybench_run`` call, one ``arraybench.run`` kept in
memory; and at the end the session's one run made of them, compared with the baseline, judged by the
gate of ``arraybench compare --fail-above`` and stored when asked (as pytest-benchmark saves a file).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import uuid
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UsageError, pytest_session
from ..options import API, PYTEST, PYTEST_NAMES, on, option

if TYPE_CHECKING:
    from ..analysis.compare import Comparison
    from ..executors.in_process import CalledOnce
    from ..executors.pool import WorkerPool
    from ..model.results import Results

#: What --arraybench-disable's run says it ran with: one call, in one process.
DISABLED_RUN = {"processes": 1, "max_processes": 1, "max_time": 1e-3, "min_samples": 1}
#: Where a session's defaults differ from arraybench run's (its cells are gated, not published): ±5%,
#: as a gate fails above 5% or more and ±5% needs about half the processes ±2% does (two NumPy tests:
#: 1.7-2.1 s against 1.8-4.2 s); reused memory alone, the state a gate compares, as fresh pages take a
#: worker more per library (three libraries, two tests: median 7.4 s against 9.3 s).
SESSION_REL_CI, SESSION_ALLOCATOR = 0.05, "reused"


@dataclass(frozen=True)
class Settings:
    """The session's options (``options.OPTIONS`` on ``PYTEST``, whose help says what each means),
    checked; ``None`` where not given (the API's defaults apply)."""

    backends: list[str] | None = None
    processes: int | None = None
    max_processes: int | None = None
    max_time: float | None = None
    rel_ci: float = SESSION_REL_CI
    allocator: str = SESSION_ALLOCATOR
    compare: str | None = None  # "last", "last~N", a run id (a prefix of one) or "git:REF"
    fail_above: float | None = None
    memory: bool = False
    store: str | None = None
    save: bool = False
    skip: bool = False
    only: bool = False
    disable: bool = False
    json: str | None = None

    def run_options(self) -> dict[str, Any]:
        """Keywords for ``arraybench.run`` from the options given."""
        out = {o.name: getattr(self, o.name) for o in on(PYTEST)
               if API in o.on and getattr(self, o.name) is not None}
        if self.processes is not None and self.max_processes is not None:  # processes= alone: exactly N
            out["max_processes"] = self.max_processes
        if self.disable:
            out.update(DISABLED_RUN)
        if self.against is not None:
            out["against"] = self.against
        return out

    @property
    def against(self) -> str | None:
        """The git ref of ``--arraybench-compare=git:REF``: measured beside this code, each test."""
        return self.compare[len(GIT):] if self.compare is not None and self.compare.startswith(GIT) else None


#: ``--arraybench-compare=git:REF``: the same session measures REF's code beside this code.
GIT = "git:"


def read(get: Callable[[str], Any]) -> Settings:
    """The checked settings from ``get(dest)`` (``config.getoption``); ``UsageError`` names the
    option and what is wrong with it in one line."""
    def parsed(name: str) -> Any:
        """The option's text, read by the command line's own value type, or one of its choices."""
        text, declared = get("arraybench_" + name), option(name, PYTEST)
        if text is None:
            return None
        try:
            if declared.choices is None:
                return declared.type(text)
            from ..plan import check_choices

            valid = declared.choices() if callable(declared.choices) else declared.choices
            return check_choices(name.replace("_", " "), [text], valid)[0]
        except (argparse.ArgumentTypeError, UsageError) as exc:
            raise UsageError(f"--arraybench-{name.replace('_', '-')}: {exc}") from None

    backends = parsed("backends")
    if backends is not None:  # as ``arraybench run --backends`` checks them (without importing one)
        from ..backends import SPECS
        from ..plan import check_choices

        try:
            check_choices("backend", backends, SPECS)
        except UsageError as exc:
            raise UsageError(f"--arraybench-backends: {exc}") from None
    processes, max_processes = parsed("processes") or (None, None)
    compare = get("arraybench_compare")
    if compare is not None:
        compare = compare.strip()
        from ..store.refs import check_choice

        if compare.startswith(GIT):
            if not compare[len(GIT):].strip():
                raise UsageError("--arraybench-compare=git:REF needs a ref, such as git:main or git:HEAD~1")
        else:
            check_choice(compare)
    flags = {o.name: bool(get("arraybench_" + o.name)) for o in on(PYTEST) if o.action == "store_true"}
    settings = Settings(
        backends=backends, processes=processes, max_processes=max_processes, max_time=parsed("max_time"),
        rel_ci=parsed("rel_ci") or SESSION_REL_CI, allocator=parsed("allocator") or SESSION_ALLOCATOR, compare=compare,
        fail_above=parsed("fail_above"), store=_store(get("arraybench_store")),
        json=_json_path(get("arraybench_json")), **flags)
    if settings.disable and (settings.compare is not None or settings.save):
        raise UsageError("--arraybench-disable times nothing worth keeping: leave out "
                         + ("--arraybench-compare" if settings.compare is not None else "--arraybench-save"))
    if settings.only and settings.skip:
        raise UsageError("--arraybench-only and --arraybench-skip together would skip every test: "
                         "give one of them")
    if settings.fail_above is not None and settings.compare is None:
        raise UsageError("--arraybench-fail-above needs a run to compare with: add "
                         "--arraybench-compare=last (or a run id)")
    if settings.memory and settings.fail_above is None:
        raise UsageError("--arraybench-memory gates peak memory with --arraybench-fail-above's limit: "
                         "add --arraybench-fail-above=PERCENT (e.g. 10%)")
    return settings


def _store(text: str | None) -> str | None:
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--arraybench-store is empty; give a file path or a postgresql:// URL")
    from ..store import resolve_location

    return resolve_location(text)  # a path made absolute, as --store


def _json_path(text: str | None) -> str | None:
    """``--arraybench-json PATH``, absolute (tests may change the folder), its folder existing."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--arraybench-json is empty; give a file path")
    path = os.path.abspath(text)
    if not os.path.isdir(os.path.dirname(path)):
        raise UsageError(f"--arraybench-json {text}: no folder {os.path.dirname(path)}")
    return path


#: Keywords of ``arraybench.run`` that belong to the plugin: where a run goes is the session's.
_THE_SESSIONS = {"store": "--arraybench-store and --arraybench-save", "output_dir": "the session",
                 "reporter": "the session", "overwrite": "the session", "plots": "the session"}


@dataclass
class Outcome:
    """What the end of the session says: the session's run and, where asked, its comparison."""

    results: "Results | None" = None
    #: Which run it was compared with, or why it was not.
    compared: str = ""
    comparison: "Comparison | None" = None
    #: Why the session fails (the gate's reasons, or a comparison that could not be made with
    #: --arraybench-fail-above): one line each.
    failures: list[str] = field(default_factory=list)
    #: Where the run was stored (or written), or why it was not.
    stored: str = ""
    #: Ctrl-C came while the run was compared or stored.
    interrupted: bool = False


class Suite:
    """The measurements of one pytest session, under its settings."""

    def __init__(self, settings: "Settings") -> None:
        self.settings = settings
        self.runs: list[Results] = []
        #: Which test measured each cell: a cell twice in one session cannot be one run.
        self._measured_by: dict[str, str] = {}
        #: The session's workers, kept from one test's run to the next (``executors.pool``).
        self._workers: "WorkerPool | None" = None
        #: ``--arraybench-disable``'s libraries, opened in this process once for the session.
        self._called_once: "CalledOnce | None" = None
        #: What git said of the work tree (its commit, the project): asked once for the session.
        self._git: dict[tuple[str, ...], str | None] = {}

    def measure(self, test: str, workload: Any, options: dict[str, Any]) -> "Results":
        """One ``arraybench.run`` of ``workload`` for test ``test``; ``options`` are its keywords
        (the marker's and the call's), over the command line's. ``UsageError`` for a bad one."""
        from .. import api
        from ..executors.session import Interrupted
        from ..host.git import asked_once
        from ..workloads.definition import define, Workload

        for name, whose in _THE_SESSIONS.items():
            if name in options:
                raise UsageError(f"arraybench_run: {name}= is set by {whose}, not by a test")
        kwargs = {**self.settings.run_options(), **options}
        if "processes" in options and "max_processes" not in options:
            kwargs.pop("max_processes", None)  # processes=N in a test is exactly N, as in the API
        if callable(workload) and not isinstance(workload, Workload):
            try:
                workload = define()(workload)  # a plain f(xp, ...): a workload with the defaults
            except ValueError as exc:  # a lambda has no name to measure it under
                raise UsageError(f"arraybench_run: {exc}") from None
        context = kwargs.pop("context", None)
        # arraybench.run's own steps (options, plan, execute), taken one by one so that a cell
        # another test measured is refused before anything is measured.
        try:
            options_checked = api.options_from(workload, **kwargs)
        except TypeError as exc:  # the API names the unknown keyword
            raise UsageError(f"arraybench_run: {exc}") from None
        planned = api.plan(options_checked)
        twice = [c for c in planned.cells if c.key in self._measured_by]
        if twice:
            c = twice[0]
            raise UsageError(f"arraybench_run: {c.workload} {c.size_label} on {c.backend} {c.device} "
                             f"was measured already in this session, by {self._measured_by[c.key]}; "
                             "one session's run holds a cell once (give the workload another name, "
                             "size or params)")
        if self.settings.disable:
            # Checks only: each cell called once in this process, as pytest-benchmark's
            # --benchmark-disable calls its function; a worker would cost a library's import.
            from ..executors.in_process import CalledOnce

            self._called_once = self._called_once or CalledOnce()
            results = self._called_once.run(planned.cells, planned.options)
        else:
            from ..executors.pool import sharing, WorkerPool

            self._workers = self._workers or WorkerPool()
            try:
                # Notes name the plugin's options, not the command line's; each library is
                # imported once per replicate index for the whole session.
                with pytest_session(PYTEST_NAMES), sharing(self._workers), asked_once(self._git):
                    results = api.execute(planned, None, context=context, store=False, plots=False)
            except Interrupted as stop:  # what was measured before the signal is the session's too
                self._keep(test, stop.results)
                raise
        self._keep(test, results)
        return results

    def _keep(self, test: str, results: "Results") -> None:
        for r in results.records:
            self._measured_by[r.key] = test
        self.runs.append(results)

    def close(self) -> None:
        """End the workers the session kept."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    def combined(self) -> "Results | None":
        """The session's run: every test's records, with the first run's machine and settings
        and an identity of its own."""
        if not self.runs:
            return None
        if len(self.runs) == 1:
            return self.runs[0]
        first = self.runs[0]
        settings = dict(first.settings)
        for key in ("workloads", "sizes", "shipped_workloads"):
            settings[key] = list(dict.fromkeys(v for run in self.runs for v in run.settings.get(key) or []))
        return replace(first, environment={**first.environment, "run_id": uuid.uuid4().hex[:16]},
                       settings=settings, records=[r for run in self.runs for r in run.records],
                       complete=all(run.complete for run in self.runs),
                       errors=[e for run in self.runs for e in run.errors],
                       pairs=[p for run in self.runs for p in run.pairs])

    def finish(self) -> Outcome:
        """Compare (and gate) the session's run, then store it where asked."""
        self.close()  # nothing is measured after the last test: free their cores and memory
        results = self.combined()
        outcome = Outcome(results)
        if results is None:
            return outcome
        try:
            if self.settings.against is not None:
                self._compare_against(results, outcome)
            elif self.settings.compare is not None:
                self._compare(results, outcome)
            if self.settings.save:
                outcome.stored = self._store(results)
        except KeyboardInterrupt:
            # Ctrl-C while the store waits on another session's lock: the run is kept, and said.
            outcome.interrupted = True
            if self.settings.save and not outcome.stored:
                outcome.stored = "interrupted before the run was stored; " + _kept(results)
        if self.settings.json is not None:
            try:
                results.save(self.settings.json)
                outcome.stored = "; ".join(filter(None, (outcome.stored, f"written to {self.settings.json}")))
            except Exception as exc:  # the summary says so; the session's tests are not undone
                outcome.failures.append(f"--arraybench-json: {exc}")
        return outcome

    def _compare(self, results: "Results", outcome: Outcome) -> None:
        from .. import api
        from ..render.comparison import gate_failures, gate_notes
        from ..store import open_store
        from ..store.refs import find as find_baseline

        choice, limit = self.settings.compare, self.settings.fail_above
        try:
            with open_store(self.settings.store, create=False) as store:
                base, outcome.compared = find_baseline(store, choice, results)
            if base is None:
                return  # nothing stored to compare with yet: no regression can be seen
            outcome.comparison = api.compare(base, results)
        except UsageError as exc:  # a store that cannot be read, a run from another machine
            outcome.compared = f"not compared: {exc}"
            if limit is not None:
                outcome.failures.append(f"{outcome.compared}; --arraybench-fail-above passes nothing unseen")
            return
        if limit is not None:
            outcome.failures += gate_failures(outcome.comparison, limit,
                                              fail_option="--arraybench-fail-above",
                                              processes_option="--arraybench-processes",
                                              memory=self.settings.memory)
            notes = gate_notes(outcome.comparison, limit, against_option="--arraybench-compare=git:REF")
            outcome.compared = "; ".join(filter(None, [outcome.compared, *notes]))

    def _compare_against(self, results: "Results", outcome: Outcome) -> None:
        """The gate of ``git:REF``: each test's cells were measured on both versions of the code,
        side by side, and each pair has its verdict (``analysis.pairs``)."""
        from ..analysis.pairs import against_regressions
        from ..host.git import HERE
        from ..units import format_ratio

        limit = self.settings.fail_above
        slower, undecided = against_regressions(results.pairs, HERE, limit if limit is not None else 0.0)
        outcome.compared = (f"measured beside {self.settings.compare} in this session: "
                            f"{len(slower)} slower, {len(undecided)} undecided")
        if limit is None:
            return
        for p in slower:
            outcome.failures.append(f"{p.a_label} is {format_ratio(p.ratio)} the time of {p.b_label} (95% interval "
                                    f"{p.ci_low:.2f}-{p.ci_high:.2f}), above --arraybench-fail-above {limit:.0%}")
        if not any((p.a.environment == HERE) != (p.b.environment == HERE) for p in results.pairs):
            outcome.failures.append("no cell was measured on both sides of git:REF; "
                                    "--arraybench-fail-above passes nothing unseen")

    def _store(self, results: "Results") -> str:
        """Store the run; where the store cannot take it, keep it in a results.json and say so."""
        from ..errors import StoreWarning
        from ..model.runs import run_id
        from ..store import describe_location, resolve_location
        from ..store.store import store_run

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store_run(results, self.settings.store or True)  # a location, or the default store
        problems = [w for w in caught if issubclass(w.category, StoreWarning)]
        for w in caught:
            if w not in problems:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not problems:
            where = describe_location(resolve_location(self.settings.store))
            return f"stored as run {run_id(results)} in {where}"
        return f"{problems[0].message}; {_kept(results)}"


def _kept(results: "Results") -> str:
    """Keep a run the store did not take in a results.json of its own (the store can take it
    later), and say where; or, where no such file can be written either, say why in one line."""
    from ..errors import SaveError, one_line

    folder = None
    try:
        folder = Path(tempfile.mkdtemp(prefix="arraybench-pytest-"))
        kept = folder / "results.json"
        results.save(kept)
    except (OSError, SaveError) as exc:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return (f"nor could it be kept in a results.json under {tempfile.gettempdir()} "
                f"({one_line(why)}); measure again with --arraybench-store "
                "naming a store that can take it")
    return f"the run is kept in {kept} (`arraybench store import {kept}` adds it later)"
