"""Peak memory and energy per call, measured for real in this process (``worker/footprint``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arraybench import workload
from arraybench.model.cell import Cell
from arraybench.model.replicate import Replicate, TimerSettings
from arraybench.worker import footprint
from arraybench.worker.prepare import ReferenceCache

from ..conftest import backend_or_skip
from ..measuring import measure_cell

QUICK = TimerSettings(min_samples=1, max_samples=2, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
TEMPORARY = 64 * 10**6  # bytes: 8,000,000 float64


def _big_temporary(xp, x):
    t = xp.ones(TEMPORARY // 8, dtype=xp.float64)  # written, so every page is resident
    return x + t[: x.shape[0]] - 1


def _nothing(xp, x):
    return x + 1


def _host_peak_or_skip() -> None:
    probe = footprint.host_peak(lambda: None)
    if probe.value is None:
        pytest.skip(probe.note)


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_a_known_temporary_shows_as_peak_memory(backend_name):
    _host_peak_or_skip()
    backend = backend_or_skip(backend_name)
    wl = workload(name="peak_temp_64mb", sizes={"small": 8})(_big_temporary)
    rep = measure_cell(backend, wl, Cell(wl.name, "small", 8, backend_name, "cpu", "float64", "latency"),
                       QUICK, ReferenceCache())
    assert rep.status == "ok", rep.reason
    assert rep.peak_bytes is not None, rep.peak_note
    # The kernel batches resident-page counts per thread (up to 64 pages a thread before they
    # reach the process's count), so VmHWM is exact to a few hundred KiB, not to the byte.
    assert rep.peak_bytes >= TEMPORARY - 2**20
    assert rep.peak_bytes < 2 * TEMPORARY  # one temporary, not the samples' many
    assert "VmHWM" in rep.peak_note


def test_a_call_allocating_nothing_shows_almost_no_peak():
    _host_peak_or_skip()
    backend = backend_or_skip("numpy")
    wl = workload(name="peak_nothing", sizes={"small": 8})(_nothing)
    rep = measure_cell(backend, wl, Cell(wl.name, "small", 8, "numpy", "cpu", "float64", "latency"),
                       QUICK, ReferenceCache())
    assert rep.status == "ok", rep.reason
    assert rep.peak_bytes is not None and rep.peak_bytes < 2**20


def test_a_cell_left_unchecked_still_has_its_peak_measured():
    """A reference that returned None leaves the result unjudged, not the call unmeasured."""
    _host_peak_or_skip()
    backend = backend_or_skip("numpy")
    wl = workload(name="peak_unchecked", sizes={"small": 8}, reference=lambda x: None)(_big_temporary)
    rep = measure_cell(backend, wl, Cell(wl.name, "small", 8, "numpy", "cpu", "float64", "latency"),
                       QUICK, ReferenceCache())
    assert rep.status == "ok" and any(w.startswith("not checked") for w in rep.warnings), rep.reason
    assert rep.peak_bytes is not None and rep.peak_bytes >= TEMPORARY - 2**20, rep.peak_note


def test_without_clear_refs_the_replicate_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(footprint, "_CLEAR_REFS", tmp_path / "absent" / "clear_refs")
    peak = footprint.host_peak(lambda: bytearray(10**6))
    assert peak.value is None
    assert "clear_refs not writable" in peak.note


def _zone(root: Path, name: str, energy_uj: int, wrap: int) -> Path:
    zone = root / name
    zone.mkdir()
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap}\n")
    return zone


def test_rapl_counts_packages_not_subzones_and_undoes_wraparound(tmp_path):
    _zone(tmp_path, "intel-rapl:0", 900, 1000)
    _zone(tmp_path, "intel-rapl:1", 100, 1000)
    _zone(tmp_path, "intel-rapl:0:0", 5, 1000)  # a package's core: inside package 0 already
    rapl = footprint.Rapl(tmp_path)
    assert [p.parent.name for p, _ in rapl.zones] == ["intel-rapl:0", "intel-rapl:1"]
    before = rapl.read()
    (tmp_path / "intel-rapl:0" / "energy_uj").write_text("100\n")  # wrapped: 900 -> 1000 -> 100
    (tmp_path / "intel-rapl:1" / "energy_uj").write_text("400\n")
    assert rapl.moved(before, rapl.read()) == [("RAPL counter intel-rapl:0", pytest.approx(200 / 1e6)),
                                               ("RAPL counter intel-rapl:1", pytest.approx(300 / 1e6))]


def test_energy_from_rapl_is_per_call(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", 0, 10**12)
    calls = []

    def call():
        calls.append(1)
        zone.joinpath("energy_uj").write_text(f"{len(calls) * 2_000_000}\n")  # 2 J a call

    spent = footprint.energy(backend_or_skip("numpy"), call, span_s=0.0, rapl=footprint.Rapl(tmp_path))
    assert spent.value == pytest.approx(2.0)
    assert "RAPL" in spent.note


def test_unreadable_rapl_says_why_and_gives_no_figure(tmp_path):
    spent = footprint.energy(backend_or_skip("numpy"), lambda: None, span_s=0.0,
                             rapl=footprint.Rapl(tmp_path / "powercap"))
    assert spent.value is None
    assert spent.note.startswith("RAPL not readable")


def test_replicate_carries_peak_and_energy_through_json():
    rep = Replicate(samples_s=[1e-3], peak_bytes=64_000_000, peak_note="host", energy_j=None,
                    energy_note="RAPL not readable: x")
    back = Replicate.from_dict(rep.to_dict())
    assert (back.peak_bytes, back.energy_j, back.energy_note) == (64_000_000, None, "RAPL not readable: x")


def test_record_takes_the_median_peak_and_the_table_shows_it():
    from arraybench.analysis.aggregate import aggregate
    from arraybench.render.tables import table_text

    cell = Cell("sum", "small", 8, "numpy", "cpu", "float64", "latency")
    reps = [Replicate(samples_s=[1e-3, 1.1e-3], number=1, peak_bytes=b, peak_note="host",
                      energy_note="RAPL not readable: x") for b in (64_000_000, 66_000_000, 90_000_000)]
    rec = aggregate(cell, reps, 3, 0.05)
    assert rec.peak_bytes == 66_000_000
    assert rec.energy_j is None and rec.energy_note == "RAPL not readable: x"
    wide = table_text([rec], width=200)
    assert "peak mem" in wide and "66 MB" in wide
    narrow = table_text([rec], width=60)
    assert "peak mem" in narrow.split("Hidden to fit")[1]  # the first column to go


_THREAD_ARENA = """
import numpy as np
from concurrent.futures import ThreadPoolExecutor
from arraybench.worker.footprint import host_peak
pool = ThreadPoolExecutor(1)
make = lambda: np.ones(4_000_000)
for _ in range(3):
    pool.submit(make).result()  # the thread's own arena keeps the freed 32 MB resident
print(host_peak(lambda: pool.submit(make).result()).value)
"""


def test_an_output_made_by_another_thread_in_memory_its_arena_kept_still_counts():
    # The reused state's variables, as a worker starts with them: glibc trims only the main
    # arena's top, so the thread's 32 MB come back without raising the resident size (XLA's
    # threads make JAX's outputs so: a 32 MB matmul output read 512 kB).
    import os
    import subprocess
    import sys

    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str((1 << 31) - 1)}
    done = subprocess.run([sys.executable, "-c", _THREAD_ARENA], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) >= 32_000_000
