"""The pytest plugin (entry point ``pytest11``): the ``arraybench_run`` fixture, the ``arraybench``
marker, the ``--arraybench-*`` options and the session's summary (docs/pytest.md). pytest loads it in
every session where arraybench is installed: until an option is given or a test measures, it imports
only its own small modules (no NumPy, no rich, no array library).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .suite import Suite

_SUITE = pytest.StashKey["Suite"]()
_OUTCOME = pytest.StashKey["Outcome"]()
_WORKER = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    from ..options import pytest_options

    group = parser.getgroup("arraybench", "arraybench: time array code on several libraries")
    for name, kwargs in pytest_options():
        group.addoption(name, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "arraybench(**options): arraybench.run options for this test's arraybench_run "
                   "calls (sizes=, backends=, params=, max_time=...)")
    from ..errors import UsageError
    from .suite import Suite, read

    try:
        settings = read(config.getoption)
        if settings.against is not None:
            from ..host.git import export

            export(settings.against)  # no git work tree, or no such ref: said before any test runs
        elif settings.compare is not None and not settings.compare.startswith("last"):
            # A named baseline must exist before minutes of measuring (``last`` is found at the
            # end: a store not made yet holds none, which the end of the session says).
            from ..store import open_store, StoreError
            from ..store.refs import check_named

            try:
                store = open_store(settings.store, create=False)
            except StoreError as exc:  # a mistyped path: said, never made
                raise StoreError(f"--arraybench-compare={settings.compare}: {exc}") from None
            with store:
                check_named(store, settings.compare)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_SUITE] = Suite(settings)
    # pytest-xdist's workers run tests side by side on the same cores: timings taken there would
    # measure the contention. The tests that measure are skipped there, saying so.
    config.stash[_WORKER] = hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = config.stash.get(_SUITE, None)
    if suite is None or not suite.settings.only:
        return
    # Marked at collection, as pytest-benchmark's --benchmark-only skips: the skip and its reason
    # show in -rs, and the fixtures of a skipped test never set up.
    skip = pytest.mark.skip(reason="does not use arraybench_run (--arraybench-only)")
    for item in items:
        if "arraybench_run" not in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


@dataclass(frozen=True)
class ArraybenchRun:
    """The ``arraybench_run`` fixture: ``arraybench_run(workload, **options)`` measures as
    ``arraybench.run`` does (its options over the marker's, over ``--arraybench-*``) and returns
    its ``Results``; a cell that failed or was wrong fails the test, its record kept in the run."""

    _suite: "Suite"
    _test: str
    _defaults: dict[str, Any]

    def __call__(self, workload: Any, **options: Any) -> Any:
        from ..errors import UsageError, printable
        from ..executors.session import Interrupted

        refused, stopped = "", None
        try:
            results = self._suite.measure(self._test, workload, {**self._defaults, **options})
        except UsageError as exc:
            refused = str(exc)
        except Interrupted as stop:  # a signal during the run: the session ends, as on Ctrl-C
            stopped = stop
        # Failed out of the except block: one line, not "during handling of ... another exception".
        if stopped is not None:
            folder = stopped.results.output_dir  # the test's scratch folder, kept where it measured
            kept = f", and kept in {folder} (delete it when done)" if folder is not None else ""
            # pytest's own code for Ctrl-C: pytest shows the terminal summary (the session's
            # table) only after its own exit codes, never after 130.
            pytest.exit(f"arraybench: the run was interrupted ({stopped}); what it measured is in "
                        f"the session's run{kept}", returncode=pytest.ExitCode.INTERRUPTED)
        if refused:
            pytest.fail(printable(refused), pytrace=False)
        broken = [r for r in results.records if r.status in ("failed", "wrong")]
        if broken:
            # printable: a workload's own error text must not drive the terminal pytest prints to.
            pytest.fail(printable("; ".join(f"{r.workload} {r.size_label} {r.config_label}: {r.status}"
                                            + (f": {r.reason}" if r.reason else "") for r in broken)),
                        pytrace=False)
        return results


@pytest.fixture
def arraybench_run(request: pytest.FixtureRequest) -> ArraybenchRun:
    """Measure a workload on the session's libraries (``ArraybenchRun``); the session stores
    and compares every test's measurements as one run."""
    config = request.config
    if config.stash[_WORKER]:
        why = ("arraybench does not measure under pytest-xdist (tests side by side share the "
               "cores): run these tests with -n 0")
        if config.stash[_SUITE].settings.fail_above is not None:
            # Asked to gate: a skip would let the session pass what it never measured.
            pytest.fail(f"{why}; --arraybench-fail-above passes nothing unseen", pytrace=False)
        pytest.skip(why)
    suite = config.stash[_SUITE]
    if suite.settings.skip:
        pytest.skip("--arraybench-skip")
    marker = request.node.get_closest_marker("arraybench")
    if marker is not None and marker.args:
        pytest.fail("@pytest.mark.arraybench takes keywords only (sizes=..., backends=...)",
                    pytrace=False)
    return ArraybenchRun(suite, request.node.nodeid, dict(marker.kwargs) if marker else {})


def pytest_sessionfinish(session: pytest.Session) -> None:
    suite = session.config.stash.get(_SUITE, None)
    if suite is None or not suite.runs:
        return
    outcome = suite.finish()
    session.config.stash[_OUTCOME] = outcome
    if outcome.interrupted:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    elif outcome.failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    suite = config.stash.get(_SUITE, None)
    if suite is not None:
        suite.close()  # a session that ended before its finish (an error, Ctrl-C) too


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The session's table, its comparison, the verdict and where the run went, as ``arraybench
    run`` and ``compare`` print them; rendering is imported here, so that a session under
    ``--arraybench-disable`` prints one line and pays for none of it."""
    outcome = config.stash.get(_OUTCOME, None)
    if outcome is None or outcome.results is None:
        return
    import io
    from collections import Counter

    from rich.markup import escape

    from ..errors import pytest_session
    from ..options import PYTEST_NAMES
    from ..render.terminal import TABLE_WIDTH, console as safe_console

    writer = config.get_terminal_writer()
    colour, buffer, width = writer.hasmarkup, io.StringIO(), writer.fullwidth
    if not colour:  # a file or a pipe (CI's log): as wide as `arraybench run` prints there
        width = max(width, TABLE_WIDTH)
    console = safe_console(file=buffer, width=width, force_terminal=colour, highlight=False,
                           color_system="standard" if colour else None, soft_wrap=False)
    with pytest_session(PYTEST_NAMES):  # notes name the plugin's options (--arraybench-processes=2)
        if config.stash[_SUITE].settings.disable:  # checks only: times taken so are not worth showing
            records = outcome.results.records
            counts = Counter(r.status for r in records)
            console.print(f"{len(records)} cells checked, not timed (--arraybench-disable): "
                          + ", ".join(f"{n} {status}" for status, n in counts.items()))
        else:
            from ..render import report

            report.show(outcome.results, console, errors=True, with_findings=False)
        if outcome.compared:
            console.print(escape(outcome.compared), soft_wrap=True)
        if outcome.comparison is not None:
            from ..render.comparison import print_comparison

            print_comparison(outcome.comparison, console)
        for line in outcome.failures:
            console.print(f"[bold red]arraybench:[/] {escape(line)}", soft_wrap=True)
        if outcome.stored:
            console.print(escape(outcome.stored), soft_wrap=True)
    terminalreporter.section("arraybench", sep="-")
    terminalreporter.write(buffer.getvalue())
