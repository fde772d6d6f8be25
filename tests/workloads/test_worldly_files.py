"""Workload files that change the world around them, each done for real.

A workload file is the user's code, imported in the parent (to plan) and in every worker. What it
does at import or on every call — start a thread, change folder, print without end, close over a
lock — must end in one clear line or a safe success, never a hang, a lost result or a run in the
wrong folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import arraybench
from arraybench import load_results
from arraybench.errors import UsageError
from arraybench.executors.worker_log import HEAD_BYTES, TAIL_BYTES, CappedLog
from arraybench.files import NotReplaceable, open_append
from arraybench.model.journal import JOURNAL_NAME
from arraybench.plan import MAX_CELLS
from arraybench.workloads.trust import fingerprint
from arraybench.workloads.params import accepted

from ..conftest import FAST, signals_setup, run_cli, run_here, wait_for

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


# -- one real run of a file that starts a thread, changes folder, names settings n and rng, and
#    prints 4 MiB on every call ---------------------------------------------------------------

WORLDLY = '''
import atexit
import os
import sys
import threading
import time

import arraybench

# Not a daemon: Python waits for it at exit, for an hour.
threading.Thread(target=time.sleep, args=(3600,), name="left-running").start()
MARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "marks")


@atexit.register
def _mark() -> None:
    """Say which kind of process ran its atexit handlers."""
    role = "worker" if sys.argv[0].endswith(os.path.join("worker", "__main__.py")) else "other"
    open(os.path.join(MARKS, f"{role}-{os.getpid()}"), "w").close()


os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "elsewhere"))


@arraybench.workload(sizes={"tiny": 8}, inputs=lambda n, rng, **settings: rng.standard_normal(n),
                     work=lambda n, itemsize: (n, 2 * n * itemsize))
def power(xp, x, *, n=3, rng=0.5):
    """settings named as inputs(n, rng) and work(n, itemsize) name the size"""
    return x ** n + rng


CHUNK = "x" * 1023 + "\\n"


@arraybench.workload(sizes={"tiny": 8})
def chatty(xp, x):
    sys.stdout.write(CHUNK * 4096)  # 4 MiB on every call
    return x + 1
'''


@pytest.fixture(scope="module")
def worldly_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("worldly")
    (root / "elsewhere").mkdir()
    (root / "marks").mkdir()
    write(root / "bench.py", WORLDLY)
    started = time.monotonic()
    # Before the fix the command never ended (the thread), so run_cli's timeout fails the test.
    result = run_cli("run", "--workload-file", "bench.py", "--backends", "numpy", *FAST,
                     "--output-dir", "relout", "--no-store", cwd=root, timeout=300)
    return root, result, time.monotonic() - started


def test_a_thread_a_file_leaves_running_does_not_keep_the_command_alive(worldly_run):
    root, result, _ = worldly_run
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [ln for ln in result.stderr.splitlines() if "left-running" in ln]
    assert warnings == [f"arraybench: warning: {root / 'bench.py'} started thread 'left-running' "
                        "when imported and it is still running; arraybench ends without waiting "
                        "for it (start it with daemon=True, or inside the workload)"]
    assert (root / "relout" / "results.json").is_file()


def test_a_workers_end_still_runs_what_a_file_registered_with_atexit(worldly_run):
    """A worker ends without the interpreter's teardown, but not without the atexit handlers a
    library or a workload file registered."""
    root, result, _ = worldly_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert any(mark.name.startswith("worker-") for mark in (root / "marks").iterdir())


def test_a_file_that_changes_folder_at_import_does_not_move_the_run(worldly_run):
    root, result, _ = worldly_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert (root / "relout" / "results.json").is_file()
    assert (root / "relout" / "report.html").is_file()
    assert not (root / "elsewhere" / "relout").exists()
    assert list((root / "elsewhere").iterdir()) == []


def test_settings_named_n_and_rng_reach_the_function_and_inputs_get_the_size(worldly_run):
    root, result, _ = worldly_run
    power = next(r for r in load_results(root / "relout").records if r.workload == "power")
    assert power.status == "ok", power.reason
    assert power.params == {"n": 3, "rng": 0.5}
    assert power.size == 8


def test_a_chatty_workloads_log_keeps_its_first_and_last_megabytes(worldly_run):
    root, result, _ = worldly_run
    chatty = next(r for r in load_results(root / "relout").records if r.workload == "chatty")
    assert chatty.status == "ok", chatty.reason
    log = root / "relout" / "logs" / "numpy-cpu-p0.log"
    size = log.stat().st_size
    assert size <= HEAD_BYTES + TAIL_BYTES + 1000  # it wrote far more: 4 MiB a call
    with open(log, "rb") as f:
        f.seek(HEAD_BYTES - 100)
        middle = f.read(1000).decode()
    assert "bytes of this worker's output dropped here; a log keeps the first 4 MiB" in middle


# -- the parts, directly ----------------------------------------------------------------------

def test_accepted_leaves_out_what_a_call_fills_by_position():
    def inputs(n, rng, *, tsteps):
        return n

    def catch_all(n, rng, **settings):
        return n

    assert accepted(inputs, {"n": 3, "rng": 1, "tsteps": 5}, filled=2) == {"tsteps": 5}
    assert accepted(catch_all, {"n": 3, "tsteps": 5}, filled=2) == {"tsteps": 5}
    assert accepted(inputs, {"n": 3, "tsteps": 5}, filled=1) == {"tsteps": 5}
    assert accepted(inputs, {"n": 3, "tsteps": 5}) == {"n": 3, "tsteps": 5}  # a call by name


def test_the_capped_log_drops_the_middle_and_says_how_much(tmp_path: Path):
    path = tmp_path / "w.log"
    path.write_bytes(b"an earlier worker\n")  # retries share a log: it is kept
    with os.fdopen(open_append(path), "ab") as f:
        log = CappedLog(path, f, head=10, tail=10)
        for chunk in (b"0123456789ab", b"cdefgh", b"ijklmnopqrstuvwxyz"):
            log.write(chunk)
        assert log.text().endswith("0123456789qrstuvwxyz")  # the held tail is read too
        log.finish()
    text = path.read_text()
    assert text.startswith("an earlier worker\n0123456789\n[arraybench: 16 bytes of this "
                           "worker's output dropped here")
    assert text.endswith("]\nqrstuvwxyz")


def test_a_log_that_is_a_named_pipe_or_a_link_is_refused_at_once(tmp_path: Path):
    pipe = tmp_path / "p.log"
    os.mkfifo(pipe)
    with pytest.raises(NotReplaceable, match="is a named pipe"):
        open_append(pipe)  # before: blocked for ever (no reader)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(NotReplaceable, match="is a named pipe"):
            open_append(pipe)
    finally:
        os.close(reader)
    link = tmp_path / "l.log"
    link.symlink_to(tmp_path / "elsewhere.log")
    with pytest.raises(NotReplaceable, match="is a symbolic link"):
        open_append(link)
    assert not (tmp_path / "elsewhere.log").exists()


@pytest.mark.parametrize("name", ["numpy-cpu-p0.log", "node-a/numpy-cpu-p0.log"],
                         ids=["local", "a-cluster-nodes"])
def test_a_named_pipe_planted_in_logs_is_refused_in_one_line(name: str, tmp_path: Path):
    out = tmp_path / "out"
    (out / "logs" / name).parent.mkdir(parents=True)
    os.mkfifo(out / "logs" / name)
    result = run_here("run", "--workloads", "sort", "--sizes", "small", "--backends", "numpy",
                      *FAST, "--output-dir", str(out), "--no-store", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"arraybench: error: {out}/logs/{name}: is a named pipe, not a log; arraybench "
        "writes only files of its own in its output folder (remove it, or choose another folder)")
    assert sorted(p.name for p in out.iterdir()) == ["logs"]


def test_a_cluster_nodes_logs_are_never_written_into_a_pipe_or_through_a_link(tmp_path: Path):
    pytest.importorskip("ray")
    from arraybench.executors.ray import RayExecutor

    folder = tmp_path / "logs" / "node-a"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "numpy-cpu-p0.log")
    (folder / "numpy-cpu-p1.log").symlink_to(tmp_path / "outside.log")
    # Before: blocked for ever on the pipe; wrote through the link.
    RayExecutor._save_logs(tmp_path, "node-a", {"numpy-cpu-p0.log": "a", "numpy-cpu-p1.log": "b",
                                                "numpy-cpu-p2.log": "c"})
    assert not (tmp_path / "outside.log").exists()
    assert (folder / "numpy-cpu-p0.log").is_fifo() and (folder / "numpy-cpu-p1.log").is_symlink()
    assert (folder / "numpy-cpu-p2.log").read_text() == "c"  # the others are kept all the same
    RayExecutor._save_logs(tmp_path, "node-a", {"numpy-cpu-p2.log": "again"})
    assert (folder / "numpy-cpu-p2.log").read_text() == "again"


def test_a_plan_of_too_many_cells_is_refused_before_anything_is_made(tmp_path: Path):
    sizes = ",".join(str(n) for n in range(1, 20_001))
    out = tmp_path / "out"
    started = time.monotonic()
    result = run_here("run", "--workloads", "sort", "--sizes", sizes, "--backends", "numpy",
                      "--output-dir", str(out), "--no-store", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"arraybench: error: the run would measure more than {MAX_CELLS:,} cells (it asks for "
        "20,000: workloads × sizes × backends × devices × modes × environments); select fewer sizes or "
        "workloads, or split it into several runs")
    assert not out.exists()
    assert time.monotonic() - started < 60


def test_sigterm_while_a_file_is_imported_ends_the_command_at_once(tmp_path: Path):
    marker = tmp_path / "importing"
    write(tmp_path / "slow.py", f'''
        import pathlib, time
        import arraybench
        pathlib.Path({str(marker)!r}).touch()
        time.sleep(300)

        @arraybench.workload
        def never(xp, x):
            return x
    ''')
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "arraybench", "run", "--workload-file",
                             str(tmp_path / "slow.py"), "--output-dir", str(out), "--no-store"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            preexec_fn=signals_setup())
    try:
        wait_for(marker.exists, proc)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert time.monotonic() - sent < 10
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM)
    assert not out.exists()  # nothing was made: nothing to lose


# -- code that changed under a resume -------------------------------------------------------

STEADY = '''
import arraybench


@arraybench.workload(sizes={"tiny": 8})
def scaled(xp, x):
    return x * 2
'''


def _unfinished_run(bench: Path, out: Path) -> None:
    """A run that was stopped before its first replicate: the header of its journal, written by
    the session as a real run writes it."""
    from arraybench.api import plan
    from arraybench.model.options import RunOptions
    from arraybench.executors.session import Session
    from arraybench.workloads.trust import code_of
    from arraybench.workloads.registry import REGISTRY

    checked = plan(RunOptions(backends=["numpy"], workload_files=[str(bench)], processes=1,
                              max_processes=None, max_time=0.05, min_samples=3))
    out.mkdir()
    session = Session.start(checked.cells, checked.options, out,
                            code=code_of(checked.cells, REGISTRY))
    session.sink.close()


@pytest.mark.slow
def test_resume_refuses_a_workload_whose_code_changed_and_goes_on_when_it_is_back(tmp_path: Path):
    bench = write(tmp_path / "bench.py", STEADY)
    out = tmp_path / "out"
    _unfinished_run(bench, out)
    journal = (out / JOURNAL_NAME).read_bytes()
    assert json.loads(journal.splitlines()[0])["code"].keys() == {"scaled"}

    bench.write_text(STEADY.replace("x * 2", "x * 3"))  # the body changed: a different workload
    refused = run_here("run", "--resume", str(out), "--no-store", cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"arraybench: error: --resume {out}: the code of workload 'scaled' changed since the run "
        f"began (in {bench}); resuming would pool measurements of the old code and the new in one "
        "cell. Put the code back as it was to resume, or measure the new code afresh in another "
        f"folder (or with --overwrite, which discards what {out} holds)")
    assert (out / JOURNAL_NAME).read_bytes() == journal  # untouched

    # Back as it was, with a comment and a blank line above it: the same code, so it goes on.
    bench.write_text("# a note\n\n" + STEADY)
    resumed = run_here("run", "--resume", str(out), "--no-store", "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [r.status for r in load_results(out).records] == ["ok"]


def test_a_fingerprint_follows_the_code_not_its_place(tmp_path: Path):
    def first(xp, x):
        return helper(x) + 1

    def again(xp, x):  # the same code under another name and line
        return helper(x) + 1

    def other(xp, x):
        return helper(x) + 2

    wl = arraybench.workload(name="fp_a")(first)
    assert fingerprint(wl) == fingerprint(arraybench.workload(name="fp_a")(first))
    assert fingerprint(wl) != fingerprint(arraybench.workload(name="fp_b")(other))
    assert fingerprint(arraybench.workload(name="fp_c")(again)) != fingerprint(
        arraybench.workload(name="fp_c", params={"k": 1})(lambda xp, x, k=0: x))
    global helper
    before = fingerprint(wl)
    helper = _helper_two  # an edited helper changes what the workload does
    try:
        assert fingerprint(wl) != before
    finally:
        helper = _helper_one


def _helper_one(x):
    return x


def _helper_two(x):
    return -x


helper = _helper_one


def test_a_workload_sent_by_value_keeps_its_fingerprint():
    """A notebook's workload is resumed from its pickle: it must still be the same code."""
    import cloudpickle

    scale = 3

    @arraybench.workload(sizes={"tiny": 8}, work=lambda n, itemsize: (n, n))
    def shipped(xp, x, *, k=2):
        return _helper_one(x) * scale * k

    again = cloudpickle.loads(cloudpickle.dumps(shipped))
    assert again is not shipped and fingerprint(again) == fingerprint(shipped)


def test_builtin_fingerprints_are_the_same_in_every_process():
    code = ("import arraybench.api, json; from arraybench.workloads.registry import REGISTRY; "
            "from arraybench.workloads.trust import fingerprint; "
            "print(json.dumps({n: fingerprint(w) for n, w in REGISTRY.items()}))")
    seen = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert seen[0] == seen[1] and json.loads(seen[0])


# -- the Python API ---------------------------------------------------------------------------

def test_a_workload_closing_over_a_lock_is_refused_by_name_before_the_folder(tmp_path: Path):
    import threading

    lock = threading.Lock()

    @arraybench.workload(sizes={"tiny": 8})
    def locked(xp, x):
        with lock:
            return x + 1

    out = tmp_path / "out"
    with pytest.raises(UsageError) as refused:
        arraybench.run(locked, backends="numpy", processes=1, output_dir=out, store=False)
    assert str(refused.value).startswith(
        "workload 'locked' cannot be sent to the worker processes (TypeError: cannot pickle "
        "'_thread.lock' object): what its functions refer to must be picklable")
    assert not out.exists()


INTERRUPTED = '''
import os, signal, sys, time, warnings
import arraybench

warnings.simplefilter("always")
MARK = sys.argv[1]
ASKED = []  # the worker was asked to stop


@arraybench.workload(sizes={"tiny": 8})
def stalls(xp, x):
    if os.path.exists(MARK) and not ASKED:  # from then on a call lasts until the worker is asked to stop
        stop = signal.getsignal(signal.SIGTERM)  # the worker's own: it must still hear the request

        def asked(signum, frame):
            ASKED.append(signum)
            stop(signum, frame)

        signal.signal(signal.SIGTERM, asked)
        while not ASKED:
            time.sleep(0.01)
    return x + 1


try:
    arraybench.run(stalls, backends="numpy", processes=2, max_time=0.05, min_samples=3,
                   store=False, output_dir=None)
except arraybench.Interrupted as stop:
    print("interrupted", stop.results.output_dir)
'''


@pytest.mark.slow
@pytest.mark.parametrize("kept", [False, True], ids=["nothing-measured", "one-replicate-measured"])
def test_ctrl_c_in_a_run_without_a_folder(kept: bool, tmp_path: Path):
    script = write(tmp_path / "script.py", INTERRUPTED)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    mark = tmp_path / "stall"
    if not kept:
        mark.touch()  # the first replicate hangs
    proc = subprocess.Popen([sys.executable, str(script), str(mark)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "TMPDIR": str(scratch)}, preexec_fn=signals_setup())

    def journalled() -> bool:
        journals = list(scratch.glob("arraybench-*/" + JOURNAL_NAME))
        lines = journals[0].read_text().splitlines()[1:] if journals else []
        return any(json.loads(ln).get("type") == "replicate" for ln in lines if ln.endswith("}"))

    try:
        if kept:  # the first replicate is journalled; the second process hangs
            wait_for(journalled, proc)
            mark.touch()
        wait_for(lambda: any(scratch.glob(f"arraybench-*/logs/numpy-cpu-p{int(kept)}.log")), proc)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    left = list(scratch.iterdir())
    if not kept:
        assert stdout.strip() == "interrupted None", stderr[-3000:]
        assert left == []  # nothing measured: nothing left behind
        return
    assert stdout.strip() == f"interrupted {left[0]}", stderr[-3000:]
    assert len(left) == 1 and (left[0] / JOURNAL_NAME).is_file()
    assert (f"UserWarning: the run did not finish; what it measured is kept in {left[0]} "
            f"(continue with arraybench.resume('{left[0]}')") in stderr


@pytest.mark.slow
def test_a_file_that_prints_at_import_leaves_json_on_stdout_whole(tmp_path: Path):
    chatty = tmp_path / "chatty.py"
    chatty.write_text(textwrap.dedent("""
        import os
        import arraybench

        print("loading my benchmarks...")
        os.write(1, b"a C library says hello\\n")  # below Python: straight to descriptor 1

        @arraybench.workload(sizes={"small": 8}, inputs=lambda n, rng: (rng.standard_normal(n),))
        def chatty_add(xp, a):
            return a + 1
    """))
    listed = run_cli("list", "--json", "--workload-file", str(chatty), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "chatty_add" in json.dumps(json.loads(listed.stdout))
    assert "loading my benchmarks..." in listed.stderr and "a C library says hello" in listed.stderr
    ran = run_cli("run", "--json", "--workload-file", str(chatty), "--workloads", "chatty_add",
                  "--backends", "numpy", "--devices", "cpu", *FAST, "--no-plots", "--no-store",
                  "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert [json.loads(line)["workload"] for line in ran.stdout.splitlines()] == ["chatty_add"]
    assert "loading my benchmarks..." in ran.stderr
