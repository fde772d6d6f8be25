"""Shared test helpers: real libraries where installed, skips with the reason where not."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from arraybench import backends

from .measuring import freeze_what_lives

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

# Every run stores itself in the user's results store: tests never write to the real one.
# A session-wide folder first (for session fixtures), then one per test (``_own_store``).
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="arraybench-tests-data-")
atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _module_store(tmp_path_factory):
    """A module's shared fixtures (real runs made once per module) store into a store of their own:
    a run's report shows history when its store holds earlier runs of its cells."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("module-data")))
        yield


@pytest.fixture(autouse=True)
def _own_store(monkeypatch, tmp_path_factory):
    """Each test's runs go to a results store of its own, in a fresh XDG data folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))


#: The signals a test may send to a command it starts.
_SENT = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)


def default_signals() -> None:
    """``preexec_fn`` of every command a test starts: the signals it may be sent act as they do
    in a terminal, whatever pytest inherited (under ``nohup`` SIGHUP is ignored, in a shell's
    background job SIGINT is, and an ignored signal is inherited across exec)."""
    for s in _SENT:
        signal.signal(s, signal.SIG_DFL)


def signals_setup():
    """``preexec_fn`` for a command a test starts: ``default_signals`` where this process ignores a
    signal a test may send, else None. Exec itself resets handled signals (and ``restore_signals``
    SIGPIPE); only an ignored one survives it. A preexec_fn makes Python fork with its at-fork
    hooks, which JAX answers, once its threads run, with a warning of a deadlock."""
    ignored = any(signal.getsignal(s) == signal.SIG_IGN for s in _SENT if s != signal.SIGPIPE)
    return default_signals if ignored else None


def wait_for(condition, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Poll ``condition`` until it holds; fail if ``proc`` (a run started by the test) ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended first: {proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def backend_or_skip(name: str, device: str = "cpu"):
    """An opened backend, or a skip saying why it cannot be opened here."""
    reason = backends.SPECS[name].preflight(device)
    if reason:
        pytest.skip(reason)
    cls = backends.load(name)
    try:
        backend = cls(device)
    except backends.Unavailable as exc:
        pytest.skip(str(exc))
    freeze_what_lives()
    return backend


INSTALLED_CPU = [n for n, s in backends.SPECS.items() if "cpu" in s.devices]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter."""
    # The caller's terminal width stays out ($COLUMNS sets the tables' width): a test says its own.
    inherited = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full_env = {k: v for k, v in {**inherited, **(env or {})}.items() if v is not None}  # None: unset
    return subprocess.run([sys.executable, "-m", "arraybench", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=timeout, env=full_env,
                          preexec_fn=signals_setup())


#: The names workload files are imported under (``workloads/userfile.import_workload_file``).
_USER_MODULES = "arraybench_user_"


def run_here(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real command line (``commands.main.main``) in this process, as ``run_cli`` returns it: for a
    command that refuses or only reads, or a run whose test looks at its results, where starting
    an interpreter costs more than the test. As in a fresh interpreter, no workload file is
    imported yet when it starts (the test's own imports of them are set aside for its time), and
    what the files it loads leave (workloads, modules, ``sys.path``) is forgotten after it.
    ``env`` sets variables for the command's time (None: unset), as run_cli's does; not for what
    a process reads as it starts (PYTHONIOENCODING, PYTHONPATH): that takes run_cli."""
    from arraybench.commands.main import main
    from arraybench.render.terminal import TABLE_WIDTH
    from arraybench.workloads import REGISTRY

    registry, path, here = dict(REGISTRY), list(sys.path), os.getcwd()
    # A fresh interpreter knows the built-in workloads only: what this process's tests defined
    # (pytester's in-process sessions, fixtures) would clash with a file defining the same name.
    for name in [n for n, wl in REGISTRY.items() if wl.source != "builtin"]:
        del REGISTRY[name]
    # A file already imported in this process is not imported again (its workloads would not be
    # defined again): set the test's own user modules aside.
    users = {name: sys.modules.pop(name) for name in list(sys.modules) if name.startswith(_USER_MODULES)}
    # As run_cli's pipe: tables as wide as a pipe gets, whatever terminal pytest's own
    # descriptors reach (rich asks them, under ``-s`` too).
    given = {"COLUMNS": str(TABLE_WIDTH), "LINES": None, **(env or {})}
    environ = {k: os.environ.pop(k, None) for k in given}
    os.environ.update({k: v for k, v in given.items() if v is not None})
    out, err = io.StringIO(), io.StringIO()
    os.chdir(cwd)  # the project file is looked for from here, as from a shell's cwd
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exc:  # what the interpreter would make of it (argparse's --help)
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(here)
        for k, v in environ.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        REGISTRY.clear()
        REGISTRY.update(registry)
        for name in [n for n in sys.modules if n.startswith(_USER_MODULES)]:
            del sys.modules[name]
        sys.modules.update(users)
        sys.path[:] = path
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())


_PROBED: dict[tuple[str, str, float], tuple] = {}


@contextlib.contextmanager
def probes_once():
    """Each library's worker asked once per test process what it is (``info``'s probe, seconds
    a library: PyTorch and JAX import in it) while this holds: its answer here is the same for
    every test. The first asking is real; another interpreter (``environment``) is always asked.
    For a module's fixture; a test takes ``probed_once``."""
    from arraybench.executors import probe as module

    real = module.probe

    def probe(backend: str, device: str, timeout: float = 120.0, *, environment=None):
        if environment is not None:
            return real(backend, device, timeout, environment=environment)
        key = (backend, device, timeout)
        if key not in _PROBED:
            _PROBED[key] = real(backend, device, timeout)
        return _PROBED[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "probe", probe)
        yield


@pytest.fixture
def probed_once():
    """A test's ``info`` probes each library once per test process (see ``probes_once``)."""
    with probes_once():
        yield


#: Options that keep a real run short in tests: one process, a few samples per cell.
FAST = ("--processes", "1", "--max-time", "0.05", "--min-samples", "3", "-q")


class RealRun:
    """A finished real run: its folder, and what the command printed."""

    def __init__(self, out: Path, result: subprocess.CompletedProcess) -> None:
        self.out = out
        self.result = result


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder that ``make`` fills once per test session, whichever xdist worker asks first (the
    others wait on its lock, beside their own temporary folders): a session fixture is made once
    per worker otherwise. Read it, or copy it before changing it: every worker sees this one."""
    base = tmp_path_factory.getbasetemp()
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one session
    root = base.parent / f"made-once-{run}" if run else base / "made-once"
    root.mkdir(exist_ok=True)
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
        if not (root / f"{name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)  # a failure leaves it undone: the next worker tries, and fails the same way
            (root / f"{name}.done").touch()
    return folder


def _make_real_run(folder: Path) -> None:
    out = folder / "run"
    result = run_cli("run", "--backends", "numpy,torch", "--workloads", "matmul,sort",
                     "--sizes", "small", "--processes", "1", "--max-time", "0.05",
                     "--min-samples", "3", "--json", "--output-dir", str(out),
                     "--store", str(folder / "store.sqlite"))  # a store of its own: no history
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "printed.json").write_text(json.dumps([result.stdout, result.stderr]))


@pytest.fixture(scope="session")
def real_run(tmp_path_factory) -> RealRun:
    """One short real run (NumPy and PyTorch, two workloads, --json), shared by the report tests:
    made once per session, and copied for each worker (some tests write into its folder)."""
    made = made_once(tmp_path_factory, "real-run", _make_real_run)
    mine = tmp_path_factory.mktemp("real")
    shutil.copytree(made, mine, dirs_exist_ok=True)
    stdout, stderr = json.loads((mine / "printed.json").read_text())
    return RealRun(mine / "run", subprocess.CompletedProcess([], 0, stdout, stderr))


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server on 127.0.0.1 for this test session (see tests/postgres.py)."""
    from .postgres import new_root, start

    yield from start(new_root())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_location(request, tmp_path):
    """A fresh, empty store: an SQLite file, or a new database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite")
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture()
def workload_file(tmp_path: Path) -> Path:
    """A copy of tests/data/fault_workloads.py (workloads that crash, hang, fault or behave) in a
    folder of the test's own, where it leaves its marker files."""
    target = tmp_path / "fault_workloads.py"
    shutil.copy(DATA / "fault_workloads.py", target)
    return target


@pytest.fixture
def registry_restored():
    """Workloads a test defines stay in that test: the registry is put back as it was."""
    from arraybench.workloads import REGISTRY

    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


#: The files that take longest, longest first (a real Ray cluster, the default suite, the full disk,
#: resumed exports, signals; 15-150 s each on the 2-core machine): started first, so that under two
#: test processes (pyproject's ``-n 2 --dist loadfile --no-loadscope-reorder``: files in this order,
#: not by their number of tests) neither is left alone on a long file at the end while the other
#: has nothing to do.
LONG_FILES = ("executors/test_cluster.py", "test_run.py", "test_disk.py", "test_resume_code.py",
              "executors/test_interrupt.py", "executors/test_concurrency.py", "test_environments.py",
              "worker/test_worker_faults.py", "worker/test_doctor.py", "worker/test_measurement.py",
              "workloads/test_worldly_files.py", "executors/test_faults.py", "store/test_store.py",
              "executors/test_small_faults.py", "test_pytest_plugin.py", "commands/test_timeit.py",
              "commands/test_config_trust.py", "test_invariant.py", "worker/test_inplace.py",
              "analysis/test_history.py", "workloads/test_examples.py", "render/test_terminal.py",
              "render/test_report_browser.py", "test_architecture.py", "worker/test_compiled.py",
              "store/test_store_hostile.py", "workloads/test_workloads.py", "workloads/test_userfile.py")

#: A file's wall time that the session reports it over (never fails on: a busy machine is slow);
#: a file that needs more says so, with why, as ``pytestmark = pytest.mark.budget(seconds)``.
BUDGET_S = 20.0

#: The marks of each fixture that starts a real server, browser or cluster: a test using it has
#: them (a browser's start is seconds: the quick lane leaves it out).
FIXTURE_MARKS = {"postgres": ("postgres",), "browser": ("browser", "slow"), "ray_cluster": ("cluster",)}


def _in_tests(item: pytest.Item) -> str:
    return Path(str(item.fspath)).relative_to(Path(__file__).parent).as_posix()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = _in_tests(item)
        return LONG_FILES.index(path) if path in LONG_FILES else len(LONG_FILES)

    items.sort(key=rank)  # stable: within a file, and among the rest, the order is unchanged
    for item in items:
        marks = [m for f, ms in FIXTURE_MARKS.items() if f in getattr(item, "fixturenames", ()) for m in ms]
        for mark in marks:
            item.add_marker(mark)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """Each report carries its file's budget: under xdist the reports reach the session's own
    process, which collects no test to read the marks from."""
    outcome = yield
    budget = item.get_closest_marker("budget")
    outcome.get_result().budget_s = float(budget.args[0]) if budget else BUDGET_S


_SPENT: dict[str, list[float]] = {}  # file -> [seconds, budget]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    spent = _SPENT.setdefault(report.fspath, [0.0, getattr(report, "budget_s", BUDGET_S)])
    spent[0] += report.duration  # setup, call and teardown: under --dist loadfile, the file's wall time


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The files over their time budget, slowest first: a report, never a failure."""
    over = sorted(((s, b, f) for f, (s, b) in _SPENT.items() if s > b), reverse=True)
    if not over or hasattr(config, "workerinput"):
        return
    terminalreporter.section("files over their time budget")
    for spent, budget, path in over:
        terminalreporter.write_line(f"{spent:7.1f} s  {path}  (budget {budget:g} s)")
