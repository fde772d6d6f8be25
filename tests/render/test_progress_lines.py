"""Progress where there is no terminal (a CI log, a script's captured stderr): a line per cell as it
finishes, a heartbeat while nothing does, and nothing at all when asked to be quiet."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from rich.console import Console

from arraybench.render.progress import ConsoleReporter

from ..conftest import ROOT, signals_setup
from ..synthetic import record, spread

#: A workload whose workers, as they end, wait until the test has read a cell's line from the
#: run's stderr (the go file), and say so (a ``released-PID`` file): the run waits for its workers
#: to end, so a line that came only with the run's end would never reach them. The wait gives up
#: within the time the run waits for a worker.
GATED = textwrap.dedent('''
    import atexit, os, sys, time
    import arraybench

    def wait_for_a_line():
        gate = os.environ["ARRAYBENCH_TEST_GATE"]
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(gate, "go")):
                open(os.path.join(gate, f"released-{os.getpid()}"), "w").close()
                return
            time.sleep(0.02)

    main = sys.modules["__main__"].__spec__
    if main is not None and main.name == "arraybench.worker.__main__":  # a worker, not the run
        atexit.register(wait_for_a_line)

    @arraybench.workload(sizes={"small": 1000})
    def gated_sum(xp, a):
        """a sum, whose workers end once the test has seen a cell's line"""
        return a.sum()
''')


def _pipe_env(**more: str) -> dict[str, str]:
    """The inherited environment without a terminal's size, so that nothing tells the run it has one."""
    return {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, **more}


def test_a_run_without_a_terminal_prints_each_cell_as_it_finishes(tmp_path: Path):
    gate = tmp_path / "gate"
    gate.mkdir()
    (tmp_path / "gated.py").write_text(GATED)
    # Two environments of one library taking turns: two workers, each measuring one cell.
    argv = [sys.executable, "-m", "arraybench", "run", "--workload-file", str(tmp_path / "gated.py"),
            "--backends", "numpy", "--devices", "cpu", "--variant", "a:ARRAYBENCH_TEST_SIDE=a",
            "--variant", "b:ARRAYBENCH_TEST_SIDE=b", "--processes", "1",
            "--max-time", "0.05", "--min-samples", "3", "--no-plots", "--no-store",
            "--output-dir", str(tmp_path / "out")]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_pipe_env(ARRAYBENCH_TEST_GATE=str(gate)), preexec_fn=signals_setup())
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("✓") and not (gate / "go").exists():
                (gate / "go").write_text("")  # a cell's line is here: let the workers end
        stdout, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "\n".join(lines[-30:])
    cells = [line for line in lines if line.startswith(("✓", "✗"))]
    assert len(cells) == 2 and all(c.startswith("✓ gated_sum small  NumPy CPU [") for c in cells), lines
    # Both workers ended after the test read a line: it came as its cell finished, mid-run.
    assert len(list(gate.glob("released-*"))) == 2
    assert all(", 1 process" in c for c in cells), cells
    assert lines[0].startswith("measuring 2 cells, 2 measurements planned"), lines
    assert "time per call" in stdout


_SCRIPT = textwrap.dedent('''
    import sys
    import arraybench

    def one_cell(**quiet):
        arraybench.run(["sort"], backends=["numpy"], devices=["cpu"], sizes=["small"], processes=1,
                       max_time=0.05, min_samples=3, store=False, plots=False, **quiet)

    one_cell()
    print("QUIET FROM HERE", file=sys.stderr, flush=True)
    one_cell(progress=False)
''')


def test_the_api_in_a_script_says_what_it_does_unless_asked_to_be_quiet(tmp_path: Path):
    script = tmp_path / "bench.py"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          env=_pipe_env(), timeout=300, preexec_fn=signals_setup())
    assert done.returncode == 0, done.stderr[-3000:]
    said, quiet = done.stderr.split("QUIET FROM HERE\n")
    assert said.startswith("measuring 1 cell, 1 measurement planned"), said
    assert "✓ sort small  NumPy CPU" in said and ", 1 process" in said
    assert quiet == ""


_RESUMES = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    import arraybench

    out = Path("out")
    arraybench.run(["sort"], backends=["numpy"], devices=["cpu"], sizes=["small"], processes=2,
                   max_time=0.05, min_samples=3, store=False, plots=False, progress=False, output_dir=out)
    journal = out / "journal.jsonl"
    # What a run stopped after its first process leaves: the header and that process's lines.
    first = "".join(line for line in journal.read_text().splitlines(keepends=True)
                    if json.loads(line).get("index", 0) == 0)
    for progress in (False, True):
        journal.write_text(first)
        print(f"RESUMED progress={progress}", file=sys.stderr, flush=True)
        resumed = arraybench.resume(out, progress=progress, store=False, plots=False)
        assert len(resumed.records[0].replicates) >= 2  # process 1 measured again (more if they disagree)
''')


def test_resume_in_a_script_says_what_it_measures_unless_asked_to_be_quiet(tmp_path: Path):
    (tmp_path / "resume.py").write_text(_RESUMES)
    done = subprocess.run([sys.executable, "resume.py"], cwd=tmp_path, capture_output=True, text=True,
                          env=_pipe_env(), timeout=300, preexec_fn=signals_setup())
    assert done.returncode == 0, done.stderr[-3000:]
    before, quiet, said = done.stderr.split("RESUMED progress=")
    assert before == "" and quiet == "False\n"
    assert said.startswith("True\nmeasuring 1 cell, 1 measurement planned"), said
    assert "✓ sort small  NumPy CPU" in said


def test_a_heartbeat_names_what_is_still_measured_while_no_line_comes():
    shown = io.StringIO()
    reporter = ConsoleReporter(console=Console(file=shown, width=100, force_terminal=False), cells=2,
                               heartbeat_s=0)  # no thread: the test asks for the line itself
    reporter.run_started(total=4)
    assert shown.getvalue().startswith("measuring 2 cells, 4 measurements planned")
    said = reporter.said_at
    assert reporter.heartbeat_line(said + 10) is not None  # heartbeat_s=0: due at once
    reporter.heartbeat_s = 30.0
    assert reporter.heartbeat_line(said + 29.9) is None  # a line came within the heartbeat
    reporter.worker_started("numpy", "cpu", 1, 2)
    done = record("sort", "numpy", samples=spread(1e-3), replicates=2)
    from arraybench.model.cell import Cell

    cell = Cell("sort", "small", 100, "numpy", "cpu", "float64", "latency")
    reporter.replicate_done(cell, 0, done.replicates[0])
    reporter.replicate_done(cell, 1, done.replicates[1])
    line = reporter.heartbeat_line(said + 95)
    assert line == ("still measuring after 1:35: numpy/cpu process 2; 2/4 measurements, 0/2 cells done; "
                    "sort small NumPy CPU: 2 processes so far"), line
    reporter.record_done(done)
    assert "✓ sort small  NumPy CPU" in shown.getvalue().splitlines()[-1]
    assert reporter.heartbeat_line(reporter.said_at + 1) is None  # the cell's line was just said
    reporter.run_finished(None)
