"""Energy counters that lie: frozen, running backwards, jumping. A bad side reading gives no energy
figure, says why, and costs nothing else: the cell keeps its timing samples.

The real runs read fake RAPL counters: in a private mount namespace (``unshare --mount``, root) a
folder of this test's is bound over ``/sys/class/powercap``, where ``worker/footprint`` looks, and
the test moves the counters from outside while the run measures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arraybench.worker import footprint
from arraybench.worker.protocol import ReplicateDone, parse

from ..conftest import ROOT, backend_or_skip, signals_setup

#: A real package's counter range (microjoules), where the kernel wraps it.
RANGE = 262_143_328_850


def _zone(root: Path, energy_uj: int, wrap: int = RANGE) -> Path:
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap}\n")
    return zone


def _set(zone: Path, value: int) -> None:
    """A new count, replaced at once: a read sees the old count or the new, never half of one."""
    part = zone / "energy_uj.part"
    part.write_text(f"{value}\n")
    os.replace(part, zone / "energy_uj")


# -- the judgement, on counters moved by the calls themselves ----------------------------------------

@pytest.mark.parametrize("step, wrap, word", [
    (0, RANGE, "frozen"),                       # the counter never moves
    (-1_000_000, 1_000_000, "backwards"),       # down by 1 J a call, beyond what a wrap explains
    (-1_000, RANGE, "jumped"),                  # down a little: read as a wrap, 262 kJ in a moment
    (2_012_000_000, RANGE, "jumped"),           # 2,012 J for one call of a 1,000-element sort
], ids=["frozen", "backwards", "backwards-as-wrap", "jump"])
def test_an_implausible_counter_gives_no_figure_and_says_why(tmp_path, step, wrap, word):
    zone = _zone(tmp_path, 5_000_000_000, wrap)
    count = [5_000_000_000]

    def call():
        count[0] += step
        _set(zone, count[0])

    spent = footprint.energy(backend_or_skip("numpy"), call, span_s=0.0, rapl=footprint.Rapl(tmp_path))
    assert spent.value is None
    assert spent.note.startswith("energy not given") and word in spent.note, spent.note


def test_a_plausible_wrap_is_still_a_reading(tmp_path):
    zone = _zone(tmp_path, RANGE - 500_000)

    def call():
        _set(zone, 500_000)  # 1 J across the wrap

    spent = footprint.energy(backend_or_skip("numpy"), call, span_s=0.0, rapl=footprint.Rapl(tmp_path))
    assert spent.value == pytest.approx(1.0)


def test_a_replicate_whose_energy_is_not_valid_keeps_its_samples():
    """A worker that still sends a negative figure (another version, a GPU counter gone wrong):
    the energy goes, the replicate stays."""
    line = json.dumps({"event": "replicate", "key": "k", "replicate": {
        "status": "ok", "samples_s": [1e-3, 2e-3], "number": 1, "energy_j": -4.5,
        "energy_note": "CPU package energy from RAPL"}})
    msg = parse(line)
    assert isinstance(msg, ReplicateDone)
    assert msg.replicate.status == "ok" and msg.replicate.samples_s == [1e-3, 2e-3]
    assert msg.replicate.energy_j is None and msg.replicate.energy_note.startswith("energy not given")


# -- real runs reading fake counters ------------------------------------------------------------------

def _namespaces_or_skip() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("mount namespaces are Linux's")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare command to make a private mount namespace")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"a private mount namespace is not permitted here: {probe.stderr.strip()}")


#: In the private namespace: the test's folder over /sys/class/powercap (where there is none, a
#: tmpfs over /sys/class makes a place for it), then the run.
_MOUNT = ('set -e; if [ ! -d /sys/class/powercap ]; then mount -t tmpfs fake-rapl /sys/class; '
          'mkdir /sys/class/powercap; fi; mount --bind "$1" /sys/class/powercap; shift; exec "$@"')


@pytest.mark.parametrize("step, wrap", [(0, RANGE), (-1_000_000, 1_000_000), (1_000_000_000, RANGE)],
                         ids=["frozen", "backwards", "jump"])
@pytest.mark.slow
def test_a_run_reading_a_bad_counter_keeps_its_timing(tmp_path, step, wrap):
    _namespaces_or_skip()
    powercap = tmp_path / "powercap"
    zone = _zone(powercap, 5_000_000_000, wrap)
    done = threading.Event()

    def move() -> None:  # every 5 ms: thousands of moves over a run, dozens in one energy burst
        value = 5_000_000_000
        while not done.wait(0.005):
            value = (value + step) % RANGE if step > 0 else value + step
            _set(zone, value)

    mover = threading.Thread(target=move, daemon=True)
    if step:
        mover.start()
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    try:
        proc = subprocess.run(
            ["unshare", "--mount", "sh", "-c", _MOUNT, "sh", str(powercap), sys.executable, "-m", "arraybench",
             "run", "--workloads", "sort", "--sizes", "1000", "--backends", "numpy", "--devices", "cpu",
             "--processes", "1", "--max-time", "0.3", "--min-samples", "5", "-q", "--no-plots",
             "--no-store", "-o", str(out)],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, preexec_fn=signals_setup())
    finally:
        done.set()
        if step:
            mover.join()
    assert proc.returncode == 0, proc.stderr
    [record] = json.loads((out / "results.json").read_text())["records"]
    assert record["status"] == "ok" and record["n_samples"] >= 5, record.get("reason")
    # The fake counter was read (else "RAPL not readable"), judged, and given no figure.
    assert record["energy_j"] is None
    assert record["energy_note"].startswith("energy not given"), record["energy_note"]
