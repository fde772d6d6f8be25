"""The terminal, whatever it is: a reader that leaves, an ASCII-only encoding,
a standard output that cannot be written, a Ctrl-C while arraybench starts, and escape sequences
in what a workload file says about itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arraybench import load_results

from ..conftest import ROOT, signals_setup, run_cli, run_here

QUICK = ("--workloads", "sort,matmul", "--sizes", "small", "--backends", "numpy", "--devices",
         "cpu", "--processes", "1", "--max-time", "0.05", "--min-samples", "3", "--no-plots")


def shell(command: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``command`` in bash with pipefail: a pipeline's status is its first failure's."""
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, **(env or {})})


AB = f"{sys.executable} -m arraybench"


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None,
                    reason="needs bash and head")
@pytest.mark.slow
def test_a_reader_that_leaves_does_not_change_the_exit_status(tmp_path: Path):
    out = tmp_path / "out"
    done = shell(f"{AB} run {' '.join(QUICK)} -o {out} | head -1", tmp_path)
    assert done.returncode == 0, done.stderr  # was 1: rich's broken-pipe exit
    assert done.stdout.startswith("arraybench: time per call")
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr
    assert load_results(out).complete  # the run itself went through and saved everything
    # The report's plots are files, not what it prints: without them it prints the same lines.
    for command in ("list", f"report {out} --no-plots", f"compare {out} {out}", "info"):
        done = shell(f"{AB} {command} | head -1", tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stderr == "", (command, done.stderr)


@pytest.mark.slow
def test_an_ascii_terminal_gets_replacement_characters_not_a_traceback(tmp_path: Path):
    out = tmp_path / "out"
    done = run_cli("run", *QUICK, "-o", str(out), cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr
    assert "arraybench: time per call" in done.stdout
    listed = run_cli("list", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert listed.returncode == 0 and "matmul" in listed.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("command", [["list"], ["run", *QUICK, "-o", "OUT"], ["report", "OUT", "--no-plots"]],
                         ids=["list", "run", "report"])
@pytest.mark.slow
def test_a_standard_output_that_cannot_be_written_is_one_line(command: list[str], tmp_path: Path):
    out = tmp_path / "out"
    if command[0] == "report":
        # The folder to report: made in this process, the report's own standard output is the test.
        assert run_here("run", *QUICK, "-q", "-o", str(out), cwd=tmp_path).returncode == 0
    args = [str(out) if a == "OUT" else a for a in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "arraybench", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if not ln.startswith(("✓", "✗", " "))]
    assert lines[-1] == "arraybench: error: cannot write to standard output (No space left on device)"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    if command[0] == "run":
        assert load_results(out).complete  # measured and saved before the table was printed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps")
def test_ctrl_c_while_arraybench_starts_is_one_line(tmp_path: Path):
    """The signal lands while the command imports NumPy (its shared library just mapped): before
    the fix, a KeyboardInterrupt traceback from inside ``import arraybench``."""
    proc = subprocess.Popen([sys.executable, "-m", "arraybench", "run", *QUICK, "-o",
                             str(tmp_path / "out")], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=signals_setup())
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if "_multiarray_umath" in maps.read_text():
                break
        except OSError:
            pass
        time.sleep(0.0005)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] in (
        "arraybench: interrupted",
        # landed later than NumPy's import, in the run itself: its own line
        f"arraybench: stopped by SIGINT; 0 of 2 cells have results, saved in {tmp_path}/out/"
        f"results.json and {tmp_path}/out/journal.jsonl. Continue with: arraybench run --resume "
        f"{tmp_path}/out")


def test_escape_sequences_in_a_workload_file_never_reach_the_terminal(tmp_path: Path):
    source = tmp_path / "loud.py"
    source.write_text(
        "import arraybench\n"
        "@arraybench.workload(sizes={'small': 8},\n"
        "                     description='\\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\u202etxt.exe')\n"
        "def loud(xp, x):\n    return x\n")
    done = run_here("list", "--workload-file", str(source), cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "\\x1b[31mred\\x1b[0m" in done.stdout  # shown, escaped, so the user sees what it says


def test_the_command_line_module_imports_nothing_heavy_before_main():
    """What keeps an early Ctrl-C quiet: the package and the CLI load NumPy, rich and the
    commands only inside main's try."""
    code = ("import sys; import arraybench, arraybench.commands.main; "
            "print(sorted(m for m in ('numpy', 'rich', 'matplotlib', 'arraybench.api') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
