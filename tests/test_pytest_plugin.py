"""The pytest plugin (``arraybench.pytest``), run by pytest's own ``pytester``: real sessions,
measuring real workloads in real worker processes, with a results store in the test's folder."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
from pathlib import Path

import pytest

# pytester's sessions run in this process and forget the modules they imported first (sys.modules
# is put back after each): a later session would import them again, beside classes its store still
# holds (a second ``Results``), and NumPy's extension modules cannot be loaded twice in a process.
# What the plugin imports during a session (the API, the comparison and its t distribution, the
# gate, the store, the summary) is imported here, once.
import arraybench.api  # noqa: F401
import arraybench.commands.compare  # noqa: F401
import arraybench.store.refs  # noqa: F401
import arraybench.render.report  # noqa: F401
import arraybench.store.store  # noqa: F401
import scipy.special  # noqa: F401

pytest_plugins = ["pytester"]

PLUGIN = "arraybench.pytest.plugin"


def _installed() -> bool:
    return any(e.value == PLUGIN for e in importlib.metadata.entry_points(group="pytest11"))


def test_pytest_finds_the_plugin_by_its_entry_point():
    assert _installed(), ("the pytest11 entry point is missing from the installed metadata: "
                          "reinstall arraybench (pip install -e .) after pulling pyproject.toml")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A pytest session in ``pytester``'s folder, in this process (where the entry point is not
    installed yet, the plugin is named: its own test above says so)."""
    named = () if _installed() else ("-p", PLUGIN)
    return pytester.runpytest(*named, "-p", "no:cacheprovider", *args)


# -- a bad option value: one line, before anything is measured ------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--arraybench-fail-above=ten", "--arraybench-compare=last"],
     "--arraybench-fail-above: 'ten' is not a percentage (10%) or a fraction (0.1)"),
    (["--arraybench-backends=nmupy"], "--arraybench-backends: unknown backend 'nmupy'"),
    (["--arraybench-processes=0"], "--arraybench-processes: "),
    (["--arraybench-fail-above=10%"], "--arraybench-fail-above needs a run to compare with"),
    (["--arraybench-memory", "--arraybench-compare=last"],
     "--arraybench-memory gates peak memory with --arraybench-fail-above's limit"),
    (["--arraybench-compare=last;rm"], "--arraybench-compare: 'last;rm' is not last, last~N or a run id"),
    (["--arraybench-compare=0123abcd"], "--arraybench-compare=0123abcd: no store at "),
    (["--arraybench-store="], "--arraybench-store is empty"),
    (["--arraybench-only", "--arraybench-skip"], "--arraybench-only and --arraybench-skip together"),
    (["--arraybench-rel-ci=7"], "--arraybench-rel-ci: '7' must be between 0 and 1"),
    (["--arraybench-allocator=fersh"], "--arraybench-allocator: unknown allocator 'fersh'; did you mean 'fresh'?"),
])
def test_a_bad_option_value_is_one_line_and_a_usage_error(pytester, tmp_path, args, message):
    pytester.makepyfile(test_nothing="def test_nothing(arraybench_run):\n    raise AssertionError\n")
    result = run(pytester, f"--arraybench-store={tmp_path / 'store.sqlite'}", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {message}"), result.errlines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (tmp_path / "store.sqlite").exists()  # reading a store never makes one


# -- measuring, storing, comparing: a chain of real sessions over one store -----------------------

#: A test file whose workload repeats its work ``repeat`` times: 20 is the planted regression.
BENCH = '''
import arraybench
import pytest

@arraybench.workload(sizes=[10_000])
def softplus(xp, x):
    for _ in range({repeat}):
        y = xp.log1p(xp.exp(x))
    return y

@pytest.mark.arraybench(max_time=0.1, min_samples=5)
def test_softplus(arraybench_run):
    results = arraybench_run(softplus)
    [record] = results.records
    assert record.status == "ok" and record.n_replicates == {processes}
'''


def _stored_id(result: pytest.RunResult) -> str:
    found = re.search(r"stored as run ([0-9a-f]{16}) in ", result.stdout.str())
    assert found, result.stdout.str()
    return found.group(1)


@pytest.mark.slow
def test_a_session_is_stored_compared_and_fails_on_a_planted_regression(pytester, tmp_path,
                                                                        registry_restored):
    from arraybench.store import open_store

    store = tmp_path / "store.sqlite"
    common = ("--arraybench-backends=numpy", f"--arraybench-store={store}")

    # A first session: measured on three processes, stored, passing (nothing to compare with).
    pytester.makepyfile(test_bench=BENCH.format(repeat=20, processes=3))
    slow = run(pytester, *common, "--arraybench-processes=3", "--arraybench-save")
    slow.assert_outcomes(passed=1)
    assert slow.ret == pytest.ExitCode.OK
    # The table's case column: the workload on its row, its n on the next.
    slow.stdout.fnmatch_lines(["*- arraybench -*", "*softplus*NumPy CPU*ok*", "*n = 10,000*"])
    first = _stored_id(slow)
    with open_store(store) as opened:
        assert [r.run_id for r in opened.runs()] == [first]

    # The code got 20 times faster: against `last`, significantly faster, and the gate passes.
    pytester.makepyfile(test_bench=BENCH.format(repeat=1, processes=3))
    fast = run(pytester, *common, "--arraybench-processes=3", "--arraybench-save",
               "--arraybench-compare=last", "--arraybench-fail-above=10%")
    fast.assert_outcomes(passed=1)
    assert fast.ret == pytest.ExitCode.OK, fast.stdout.str()
    fast.stdout.fnmatch_lines([f"compared with run {first}, started * (last)",
                               # The case's size may wrap to the next line, as the columns' widths
                               # (the p-value's digits) leave room: the row's first line is enough.
                               "*softplus*NumPy CPU*faster*"])
    baseline = _stored_id(fast)

    # The planted regression, against the fast run by its id: the test passes, the session fails.
    pytester.makepyfile(test_bench=BENCH.format(repeat=20, processes=3))
    regressed = run(pytester, *common, "--arraybench-processes=3",
                    f"--arraybench-compare={baseline[:8]}", "--arraybench-fail-above=10%")
    regressed.assert_outcomes(passed=1)
    assert regressed.ret == pytest.ExitCode.TESTS_FAILED
    regressed.stdout.fnmatch_lines([
        f"compared with run {baseline} (--arraybench-compare={baseline[:8]})",
        "*softplus*NumPy CPU*slower*",
        "arraybench: 1 significant slowdown above 10%: softplus 10000 NumPy CPU (*)"])
    assert "stored as run" not in regressed.stdout.str()  # without --arraybench-save

    # One process cannot show a regression: the gate cannot pass the slowdown, nor call it one.
    pytester.makepyfile(test_bench=BENCH.format(repeat=20, processes=1))
    alone = run(pytester, *common, "--arraybench-processes=1", "--arraybench-compare=last",
                "--arraybench-fail-above=10%")
    alone.assert_outcomes(passed=1)
    assert alone.ret == pytest.ExitCode.TESTS_FAILED
    alone.stdout.fnmatch_lines([f"compared with run {baseline}, started * (last)",
                                "*cannot tell*",
                                "arraybench: 1 cell slower than 10% could not be judged (one process "
                                "on a side; measure with --arraybench-processes 2 or more)*"])
    with open_store(store) as opened:
        assert [r.run_id for r in opened.runs()] == [first, baseline]


TWO = '''
def test_broken(arraybench_run):
    def broken(xp, x):
        raise ValueError("no such luck\\x1b]0;retitled\\x07\\x1b[2J")
    arraybench_run(broken, sizes=[10], max_time=0.02, min_samples=2)

def test_cube(arraybench_run):
    def cube(xp, x):
        return x * x * x
    [record] = arraybench_run(cube, sizes=[10], max_time=0.02, min_samples=2).records
    assert record.status == "ok"

def test_cube_again(arraybench_run):
    def cube(xp, x):
        return x * x * x
    arraybench_run(cube, sizes=[10])

def test_misspelt(arraybench_run):
    arraybench_run("matmul", procesess=2)

def test_own_store(arraybench_run):
    arraybench_run("matmul", store=False)

def test_lambda(arraybench_run):
    arraybench_run(lambda xp, x: x + 1)
'''


def test_a_cell_that_fails_or_a_bad_call_fails_its_test_in_one_line(pytester, tmp_path,
                                                                             registry_restored):
    from arraybench.store import open_store

    pytester.makepyfile(test_two=TWO)
    store = tmp_path / "store.sqlite"
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-processes=1",
                 f"--arraybench-store={store}", "--arraybench-save")
    result.assert_outcomes(failed=5, passed=1)
    result.stdout.fnmatch_lines([
        "*broken 10 NumPy CPU: failed: *no such luck*",
        "*arraybench_run: cube 10 on numpy cpu was measured already in this session, "
        "by test_two.py::test_cube; *",
        "*arraybench_run: unknown option 'procesess'; did you mean 'processes'?*",
        "*arraybench_run: store= is set by --arraybench-store and --arraybench-save, not by a test",
        "*arraybench_run: a workload made from a lambda needs a name: workload(name=...)*",
    ])
    assert "Traceback" not in result.stdout.str()
    # The workload's escape sequences are shown, never obeyed (pytest's failure line included).
    assert "\x1b]0;" not in result.stdout.str() and "\x1b[2J" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*no such luck\\x1b]0;retitled\\x07\\x1b[2J*"])
    # Both tests' records are the session's one run: in the summary and in the store.
    result.stdout.fnmatch_lines(["*- arraybench -*", "*broken*NumPy CPU*failed*", "*n = 10*",
                                 "*cube*NumPy CPU*ok*", "*n = 10*"])
    with open_store(store) as opened:
        [stored] = opened.runs()
        assert stored.run_id == _stored_id(result) and stored.records == 2


def test_skip_skips_the_tests_that_measure(pytester, tmp_path):
    pytester.makepyfile(test_skip="def test_x(arraybench_run):\n    raise AssertionError\n\n"
                                  "def test_y():\n    pass\n")
    result = run(pytester, "--arraybench-skip", f"--arraybench-store={tmp_path / 's.sqlite'}")
    result.assert_outcomes(skipped=1, passed=1)
    assert "- arraybench -" not in result.stdout.str()


def test_a_store_that_cannot_take_the_run_keeps_it_in_a_results_file(pytester, tmp_path,
                                                                     registry_restored):
    from arraybench import load_results

    pytester.makepyfile(test_one=TWO.split("def test_cube")[0].replace("broken", "fine").replace(
        'raise ValueError("no such luck\\x1b]0;retitled\\x07\\x1b[2J")', "return x + 1"))
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-processes=1",
                 f"--arraybench-store={folder}", "--arraybench-save")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK  # the store is a warning, never the tests' failure
    text = result.stdout.str()
    found = re.search(r"the run was not stored: store .*: is a folder; .*; the run is kept in "
                      r"(\S+results\.json) \(`arraybench store import \1` adds it later\)", text)
    assert found, text
    kept = Path(found.group(1))
    try:
        [record] = load_results(kept).records
        assert record.workload == "fine" and record.status == "ok"
    finally:
        shutil.rmtree(kept.parent)  # a temporary folder of the plugin's, outside tmp_path


def test_a_session_that_does_not_measure_imports_no_numpy_rich_or_commands(pytester):
    """pytest loads the plugin in every session of the environment: it must cost nothing there."""
    pytester.makeconftest("""
import sys
def pytest_unconfigure(config):
    heavy = ("numpy", "rich", "scipy", "arraybench.commands", "arraybench.api")
    print("LOADED", [m for m in heavy if m in sys.modules])
""")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    named = () if _installed() else ("-p", PLUGIN)
    result = pytester.runpytest_subprocess(*named, "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*arraybench-*", "LOADED []"])  # the plugin loaded, and cheaply


# -- the baseline, found in a store of synthetic runs ----------------------------------------------

def test_last_is_the_newest_run_of_these_cells_on_this_machine(tmp_path):
    from arraybench.errors import UsageError
    from arraybench.store import refs as baseline
    from arraybench.store import open_store
    from arraybench.model.runs import run_id

    from .synthetic import timed_run

    older, newer, elsewhere, other_cells = timed_run(1), timed_run(2), timed_run(3, host="host-b"), timed_run(4)
    for r in other_cells.records:
        r.workload = "sort"  # newer than both, on this machine, but none of the session's cells
    with open_store(tmp_path / "store.sqlite") as store:
        for run in (older, newer, elsewhere, other_cells):
            store.add(run)
        session = timed_run(5)
        found, line = baseline.find(store, "last", session)
        assert run_id(found) == run_id(newer) and line.startswith(f"compared with run {run_id(newer)}")
        found, _ = baseline.find(store, "last~1", session)
        assert run_id(found) == run_id(older)
        found, line = baseline.find(store, "last~2", session)
        assert found is None and "holds 2 earlier runs of these cells on this machine, not 3" in line
        found, line = baseline.find(store, run_id(elsewhere)[:6], session)  # named: any machine's
        assert run_id(found) == run_id(elsewhere)

        baseline.check_named(store, run_id(older)[:8])
        with pytest.raises(UsageError, match=r"--arraybench-compare=ffff0000: ffff0000: the store .* holds no run"):
            baseline.check_named(store, "ffff0000")


@pytest.mark.slow
def test_under_xdist_a_test_that_measures_is_skipped_saying_why(pytester, tmp_path):
    pytester.makepyfile(test_x="def test_x(arraybench_run):\n    raise AssertionError\n")
    result = run(pytester, "-n", "1", "-rs", f"--arraybench-store={tmp_path / 's.sqlite'}")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*arraybench does not measure under pytest-xdist*run these tests "
                                 "with -n 0*"])
    # Asked to gate, the session cannot pass what it never measured: the test fails, saying so.
    gated = run(pytester, "-n", "1", f"--arraybench-store={tmp_path / 's.sqlite'}",
                "--arraybench-compare=last", "--arraybench-fail-above=10%")
    gated.assert_outcomes(errors=1)
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["*run these tests with -n 0; --arraybench-fail-above passes nothing unseen*"])


def test_disable_checks_each_cell_once_and_json_writes_the_sessions_run(pytester, tmp_path,
                                                                         registry_restored):
    from arraybench import load_results

    pytester.makepyfile(test_one=TWO.split("def test_cube")[0].replace("broken", "fine").replace(
        'raise ValueError("no such luck\\x1b]0;retitled\\x07\\x1b[2J")', "return x + 1"))
    written = tmp_path / "session.json"
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-disable",
                 f"--arraybench-json={written}", f"--arraybench-store={tmp_path / 's.sqlite'}",
                 "--arraybench-rel-ci=2%")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 cells checked, not timed (--arraybench-disable): 1 ok*",
                                 f"*written to {written}*"])
    assert load_results(written).settings["rel_ci"] == 0.02  # as arraybench run's, where asked
    [record] = load_results(written).records
    assert record.workload == "fine" and record.status == "ok" and len(record.replicates) == 1
    assert not (tmp_path / "s.sqlite").exists()  # nothing stored or compared
    refused = run(pytester, "--arraybench-disable", "--arraybench-save")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR


def test_the_plugins_notes_name_its_own_options():
    from arraybench.analysis.policy import FIXED, explained
    from arraybench.errors import command_line, pytest_session, spell
    from arraybench.options import PYTEST_NAMES

    with pytest_session(PYTEST_NAMES):
        assert "--arraybench-processes=N" in explained(FIXED)
        assert spell("processes", 2) == "--arraybench-processes=2"
        assert spell("rel_ci", 0.01) == "--arraybench-rel-ci=0.01"
        assert spell("warmup", 0.1) == "warmup=0.1"  # no plugin option: the marker's keyword
    with command_line():
        assert "--processes N" in explained(FIXED)
    assert "processes=N" in explained(FIXED)  # the API's, in a notebook



_REUSED = """
import os
import arraybench
import pytest

def _note(which, x):
    with open({pids!r}, "a") as f:
        f.write(f"{{which}} {{os.getpid()}}\\n")
    return x

@arraybench.workload(sizes=[1000])
def first(xp, x):
    return _note("first", x + 1)

@arraybench.workload(sizes=[1000])
def second(xp, x):
    return _note("second", x * 2)

@pytest.mark.arraybench(max_time=0.05, min_samples=3)
def test_first(arraybench_run):
    arraybench_run(first)

@pytest.mark.arraybench(max_time=0.05, min_samples=3)
def test_second(arraybench_run):
    arraybench_run(second)
"""


def test_a_sessions_tests_share_their_workers_one_process_per_replicate_index(pytester, tmp_path, monkeypatch,
                                                                            registry_restored):
    # Each test's run has 2 processes; the second test's are the first's, given a new job: the
    # library is imported once per replicate index for the session, not once per test. Outputs of
    # 256 KiB are large: asked for both states, the second process measures them with fresh pages too (where glibc's
    # allocator is arraybench's to set), in a worker of that state, which the second test gets
    # from the session as the others.
    from arraybench.host.threads import uncontrolled_reason
    from arraybench.model.replicate import USER_VARIABLES

    for name in (*USER_VARIABLES, "GLIBC_TUNABLES", "LD_PRELOAD"):
        monkeypatch.delenv(name, raising=False)
    fresh = not uncontrolled_reason(os.environ)
    pids = tmp_path / "pids.txt"
    pytester.makepyfile(test_two=_REUSED.format(pids=str(pids)).replace("sizes=[1000]", "sizes=[32768]"))
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-processes=2",
                 "--arraybench-allocator=both", f"--arraybench-json={tmp_path / 'session.json'}")
    result.assert_outcomes(passed=2)
    from arraybench import load_results

    session = load_results(tmp_path / "session.json")
    assert session.settings["rel_ci"] == 0.05  # a session's own target, where none is given
    records = session.records
    assert sorted(r.workload for r in records) == ["first", "second"]
    assert all((r.replicates[1].other_allocator is not None) == fresh for r in records)  # measured both ways
    seen: dict[str, set[str]] = {}
    for line in pids.read_text().splitlines():
        which, pid = line.split()
        seen.setdefault(which, set()).add(pid)
    assert len(seen["first"]) == 2 + fresh  # two processes, independent samples of the machine (+ fresh pages')
    assert seen["second"] == seen["first"]


# -- which workers a session starts -----------------------------------------------------------------

#: A conftest that writes the names of the session's worker logs (one per worker process started,
#: in the session's pool folder, removed when the session ends) to ``{seen}`` as it ends.
_WORKER_LOGS = """
import glob, os, tempfile
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    pattern = os.path.join(tempfile.gettempdir(), f"arraybench-workers-{{os.getpid()}}-*", "*.log")
    with open({seen!r}, "w") as f:
        f.write("\\n".join(sorted(os.path.basename(p) for p in glob.glob(pattern))))
"""

_ONE_LIBRARY = """
import arraybench
import pytest

@arraybench.workload(sizes=[1000])
def plus_one(xp, x):
    return x + 1

@arraybench.workload(sizes=[1000])
def twice(xp, x):
    return x * 2

@pytest.mark.arraybench(backends=["numpy"], max_time=0.05, min_samples=3)
def test_plus_one(arraybench_run):
    [record] = arraybench_run(plus_one).records
    assert record.status == "ok"

@pytest.mark.arraybench(backends="numpy", max_time=0.05, min_samples=3)
def test_twice(arraybench_run):
    [record] = arraybench_run(twice).records
    assert record.status == "ok"

def test_plain():
    pass
"""


def _worker_logs(seen: Path) -> list[str]:
    return [name for name in seen.read_text().splitlines() if name]


def test_a_session_starts_workers_only_for_the_libraries_its_tests_measure(pytester, tmp_path,
                                                                          registry_restored):
    # No --arraybench-backends: every installed library is the session's default, and the tests
    # name NumPy alone. Two processes per cell, shared by both tests: two NumPy workers in all.
    # Their outputs of 256 KiB are large, timed at a session's default in the headline's allocator
    # state alone: no worker for fresh pages.
    seen = tmp_path / "workers.txt"
    pytester.makeconftest(_WORKER_LOGS.format(seen=str(seen)))
    pytester.makepyfile(test_one=_ONE_LIBRARY.replace("sizes=[1000]", "sizes=[32768]"))
    result = run(pytester, "--arraybench-processes=2")
    result.assert_outcomes(passed=3)
    assert _worker_logs(seen) == ["numpy-cpu-p0.log", "numpy-cpu-p1.log"]


def test_disable_starts_no_worker_and_calls_each_cell_once_in_the_session(pytester, tmp_path,
                                                                          registry_restored):
    from arraybench import load_results

    seen = tmp_path / "workers.txt"
    written = tmp_path / "session.json"
    pytester.makeconftest(_WORKER_LOGS.format(seen=str(seen)))
    pytester.makepyfile(test_one=_ONE_LIBRARY)
    result = run(pytester, "--arraybench-disable", f"--arraybench-json={written}")
    result.assert_outcomes(passed=3)
    assert _worker_logs(seen) == []  # no worker process, of any library
    result.stdout.fnmatch_lines(["*2 cells checked, not timed (--arraybench-disable): 2 ok*"])
    records = load_results(written).records
    assert sorted(r.workload for r in records) == ["plus_one", "twice"]
    assert all(r.status == "ok" and r.backend == "numpy" and len(r.replicates) == 1 for r in records)


def test_disable_keeps_what_a_library_import_made_out_of_the_collectors_sight(pytester, registry_restored):
    # In a fresh process: what a library's import made is frozen once it is opened, so that no
    # collection of the session walks it again (pytest collects five times at its end).
    pytester.makepyfile(test_frozen="""
import gc
import arraybench

@arraybench.workload(sizes=[10])
def plus_one(xp, x):
    return x + 1

def test_frozen(arraybench_run):
    assert gc.get_freeze_count() == 0
    arraybench_run(plus_one, backends=["numpy"])
    assert gc.get_freeze_count() > 0
""")
    named = () if _installed() else ("-p", PLUGIN)
    result = pytester.runpytest_subprocess(*named, "-p", "no:cacheprovider", "--arraybench-disable")
    result.assert_outcomes(passed=1)


def test_disable_fails_a_test_whose_workload_raises(pytester, registry_restored):
    pytester.makepyfile(test_broken=TWO.split("def test_cube")[0])
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-disable")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*broken 10 NumPy CPU: failed: *no such luck*"])
    assert "Traceback" not in result.stdout.str()


def test_only_runs_the_tests_that_measure_and_skips_the_others_saying_why(pytester, registry_restored):
    pytester.makepyfile(test_one=_ONE_LIBRARY)
    result = run(pytester, "--arraybench-only", "--arraybench-disable", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * test_one.py*: does not use arraybench_run (--arraybench-only)"])
    # Without it, the plain test runs.
    run(pytester, "--arraybench-disable").assert_outcomes(passed=3)
