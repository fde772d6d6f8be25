"""The one invariant, under faults at random points: every measurement that reached the
journal is in the final results, and no file outside the output folder changes.

Hypothesis plays a user at the command line: runs (plain, or ``--overwrite``, with a rival run
started into the same folder at the same moment), resumes and reports, each of them killed at a
random moment or not at all (SIGKILL, SIGTERM, SIGHUP, one or two Ctrl-C). After every step the
journal must still hold, byte for byte, every replicate line of the run it belongs to; a plain run
may start a new run only where nothing was journalled; only ``--overwrite`` may discard a run,
finished or not. At the end the run is resumed to completion and
every journalled replicate must be in results.json with its samples.

Real processes, real signals, real files; the budget is a handful of examples in CI (seconds);
``ARRAYBENCH_FAULT_EXAMPLES=200`` runs a longer search.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from arraybench import load_results

from .conftest import signals_setup, run_here

EXAMPLES = int(os.environ.get("ARRAYBENCH_FAULT_EXAMPLES", "4"))
WORKLOADS = '''
import time
import arraybench

def _steady(xp, x):
    time.sleep(0.0005)
    return x * 2.0

steady_a = arraybench.workload(sizes={"small": 64}, name="steady_a")(_steady)
steady_b = arraybench.workload(sizes={"small": 64}, name="steady_b")(_steady)
'''
OPTIONS = ("--workloads", "steady_a,steady_b", "--sizes", "small", "--backends", "numpy",
           "--devices", "cpu", "--processes", "2", "--max-time", "0.2", "--min-samples", "3",
           "-q", "--no-plots")
#: The ways a step ends: not stopped, or stopped by these after a delay.
STOPS = st.sampled_from([None, "SIGKILL", "SIGTERM", "SIGHUP", "SIGINT", "SIGINT twice"])
DELAYS = st.sampled_from([0.0, 0.15, 0.4, 0.8, 1.3, 2.0])


def snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every file and folder under ``root`` but ``skip``, with a digest of each file's bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        found[str(path.relative_to(root))] = (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir")
    return found


class Journal:
    """The journal as the test reads it, independently of arraybench: whole lines only."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes() if path.is_file() else b""
        self.lines = [ln + "\n" for ln in data.decode().split("\n")[:-1]]  # a torn tail is no line
        header = json.loads(self.lines[0]) if self.lines else None
        self.planned = set()
        if header is not None and header.get("type") == "header":
            replicates = header["options"]["processes"]
            keys = ["|".join(str(c[k]) for k in ("workload", "size_label", "backend", "device",
                                                 "dtype", "mode")) for c in header["cells"]]
            self.planned = {(k, i) for k in keys for i in range(replicates)}
        self.replicates = {}
        for line in self.lines[1:]:
            entry = json.loads(line)
            if entry["type"] == "replicate":
                self.replicates[(entry["key"], entry["index"])] = line


class Faults(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="arraybench-invariant-"))
        (self.root / "src").mkdir()
        self.workloads = self.root / "src" / "steady.py"
        self.workloads.write_text(WORKLOADS)
        self.out = self.root / "out"
        self.kept: dict[tuple[str, int], str] = {}  # the current run's journalled replicates
        self.planned: set[tuple[str, int]] = set()
        self.outside = snapshot(self.root, self.out)
        self.steps: list[str] = []

    # -- doing ------------------------------------------------------------------------------------
    def _start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "arraybench", *args], cwd=self.root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=signals_setup())

    @staticmethod
    def _stop(proc: subprocess.Popen, stop: str | None, delay: float) -> None:
        if stop is None:
            return
        deadline = time.monotonic() + delay
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(getattr(signal, stop.split()[0]))
            if stop == "SIGINT twice":
                time.sleep(0.1)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)

    def _finish(self, proc: subprocess.Popen, what: str) -> int:
        _, stderr = proc.communicate(timeout=300)
        # A Ctrl-C in Python's own first milliseconds (site, before any arraybench code runs)
        # prints Python's traceback; no program can stop that. Any arraybench frame is a bug.
        assert "arraybench/" not in stderr.partition("Traceback")[2], (what, stderr)
        self.steps.append(f"{what}: {proc.returncode}")
        return proc.returncode

    def _unfinished(self) -> bool:
        return bool(self.kept) and not self.planned <= set(self.kept)

    def _continues(self, what: str) -> None:
        """The current run goes on: every line journalled so far is still there, as it was."""
        now = Journal(self.out / "journal.jsonl")
        lost = [k for k, line in self.kept.items() if now.replicates.get(k) != line]
        assert not lost, f"{what} lost journalled replicates {lost}; steps: {self.steps}"
        self.kept.update(now.replicates)

    def _restarts(self) -> None:
        """A new run may have started: what the journal holds now is the current run."""
        now = Journal(self.out / "journal.jsonl")
        self.kept, self.planned = dict(now.replicates), now.planned

    @rule(overwrite=st.booleans(), rival=st.booleans(), stop=STOPS, delay=DELAYS)
    def run(self, overwrite: bool, rival: bool, stop: str | None, delay: float) -> None:
        args = ("run", "--workload-file", str(self.workloads), *OPTIONS, "-o", str(self.out))
        proc = self._start(*args, *(["--overwrite"] if overwrite else []))
        other = self._start(*args, "--overwrite") if rival else None  # at the same moment
        self._stop(proc, stop, delay)
        self._finish(proc, f"run{' --overwrite' if overwrite else ''} ({stop} at {delay})")
        rival_code = self._finish(other, "rival run --overwrite") if other is not None else 2
        if self.kept and not overwrite and rival_code == 2:
            # Only --overwrite may discard a run, finished or not, whatever this run's exit status.
            self._continues("a plain run into a folder holding a run")
        else:
            self._restarts()  # --overwrite (or a first run) starts a new one

    @rule(stop=STOPS, delay=DELAYS)
    def resume(self, stop: str | None, delay: float) -> None:
        proc = self._start("run", "--resume", str(self.out), "-q", "--no-plots")
        self._stop(proc, stop, delay)
        self._finish(proc, f"resume ({stop} at {delay})")
        self._continues("--resume")

    # No precondition (such as "results.json exists"): what is enabled must not depend on timing,
    # or hypothesis cannot replay a case. A report with nothing to read is one line and status 2.
    @rule(stop=STOPS, delay=DELAYS)
    def report(self, stop: str | None, delay: float) -> None:
        proc = self._start("report", str(self.out), "-q", "--no-plots")
        self._stop(proc, stop, delay)
        self._finish(proc, f"report ({stop} at {delay})")
        self._continues("report")

    # -- checking ---------------------------------------------------------------------------------
    @invariant()
    def nothing_outside_the_output_folder_changed(self) -> None:
        assert snapshot(self.root, self.out) == self.outside, self.steps

    def teardown(self) -> None:
        try:
            if self.planned:  # the user's last step: --resume (a finished run is only rewritten)
                done = run_here("run", "--resume", str(self.out), "-q", "--no-plots", cwd=self.root)
                assert done.returncode == 0, (done.stderr, self.steps)
                self._continues("the final --resume")
            if self.kept:
                final = load_results(self.out / "results.json")
                assert final.complete, self.steps
                samples = {r.key: [rep.samples_s for rep in r.replicates] for r in final.records}
                for (key, index), line in self.kept.items():
                    journalled = json.loads(line)["replicate"]["samples_s"]
                    assert samples[key][index] == journalled, (key, index, self.steps)
            assert snapshot(self.root, self.out) == self.outside, self.steps
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


Faults.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=4, deadline=None,
                                    suppress_health_check=list(HealthCheck))
# Runs stopped by signals at random moments: many real runs.
pytestmark = pytest.mark.slow

TestFaults = Faults.TestCase
