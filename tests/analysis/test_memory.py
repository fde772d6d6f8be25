"""Peak memory set side by side: beside the output, between libraries on a case (a finding), and
between two runs of a cell (compare and its gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from arraybench.analysis.aggregate import aggregate
from arraybench.analysis.compare import compare
from arraybench.render.findings import findings
from arraybench.analysis.memory import (allocator_reserve, memory_changes, memory_gaps,
                                        memory_growth_above, times_output)
from arraybench.commands.main import main
from arraybench.render.comparison import gate_failures
from arraybench.render.tables import gap_sentence
from arraybench.model.cell import Cell
from arraybench.model.record import Record
from arraybench.model.replicate import Replicate
from arraybench.model.results import Results

from ..synthetic import results, spread

MB = 10**6


def peaked(backend: str, peaks: Sequence[int], *, output: int | None = None, note: str = "host VmHWM",
           seconds: float = 1e-3) -> Record:
    """fft large on ``backend``, one process per peak, each with the timing of a real process."""
    cell = Cell("fft", "large", 4096, backend, "cpu", "float64", "latency")
    samples = spread(seconds, n=20)
    reps = [Replicate(status="ok", samples_s=samples[i::len(peaks)], number=1, first_call_s=seconds * 3,
                      max_rel_error=1e-16, tolerance=1e-14, peak_bytes=p, peak_note=note,
                      output_bytes=output, energy_note="RAPL not readable: no intel-rapl zone")
            for i, p in enumerate(peaks)]
    rec = aggregate(cell, reps, len(reps), rel_ci=1.0)
    rec.warnings = []
    return rec


def test_a_library_needing_twice_the_memory_is_a_finding():
    jax, torch = peaked("jax", [48 * MB, 48 * MB], output=16 * MB), peaked("torch", [24 * MB, 24 * MB])
    gaps = memory_gaps([torch, jax])
    assert [(g.more.backend, g.less.backend) for g in gaps] == [("jax", "torch")]
    assert gaps[0].ratio == 2.0
    sentence = next(f for f in findings([torch, jax]) if "memory" in f)
    assert sentence.startswith("JAX CPU needs 2.0× the memory of PyTorch CPU for fft large (n = 4,096): "
                               "48 MB against 24 MB")
    assert "JAX CPU's peak is 3.0× the output" in sentence  # where the output's size is known


def test_close_or_small_peaks_are_no_finding():
    assert memory_gaps([peaked("jax", [30 * MB] * 2), peaked("torch", [24 * MB] * 2)]) == []  # 1.25×
    # 3× apart but only 400 kB: within what pages and the C allocator move a resident peak
    assert memory_gaps([peaked("jax", [600_000] * 2), peaked("torch", [200_000] * 2)]) == []
    # a library whose call adds nothing measurable beside one that needs 48 MB
    (gap,) = memory_gaps([peaked("jax", [48 * MB] * 2), peaked("torch", [0, 0])])
    assert "needs 48 MB per call" in gap_sentence(gap) and "PyTorch CPU under 1 MB" in gap_sentence(gap)


def test_peak_beside_output_and_the_caching_allocators_reserve():
    rec = peaked("torch", [21 * MB] * 2, output=10 * MB,
                 note="PyTorch's caching allocator: max_memory_allocated over one call less what was "
                      "allocated before; 67108864 bytes reserved at most")
    assert times_output(rec) == 2.1
    assert allocator_reserve(rec) == 67108864
    assert times_output(peaked("numpy", [MB] * 2)) is None  # output size unknown
    assert allocator_reserve(peaked("numpy", [MB] * 2)) is None


def test_a_peak_below_a_page_is_not_a_figure_of_the_output():
    from arraybench.render.tables import peak_details
    from arraybench.render.tables import peak_text

    tiny = peaked("numpy", [0, 0], output=800)
    # The resident high-water mark counts pages: below one it cannot tell a small peak from none.
    assert peak_text(tiny) == "< 4.1 kB" and peak_details(tiny) == []
    assert peak_text(peaked("numpy", [8192, 8192], output=800)) == "8.19 kB"


def _runs(base_peaks: Sequence[int], new_peaks: Sequence[int]) -> tuple[Results, Results]:
    return results([peaked("torch", base_peaks)]), results([peaked("torch", new_peaks)])


def test_compare_reports_a_memory_growth_and_the_gate_fails_on_it_only_when_asked():
    base, new = _runs([24 * MB, 25 * MB], [48 * MB, 49 * MB])  # same times, memory doubled
    comparison = compare(base, new)
    (moved,) = memory_changes(comparison)
    assert moved.grew and moved.text() == "fft large PyTorch CPU: 24.5 MB → 48.5 MB (1.98× more)"
    assert gate_failures(comparison, 0.10) == []  # time alone: no slowdown
    (line,) = gate_failures(comparison, 0.10, memory=True)
    assert line.startswith("1 peak memory growth above 10%: fft large PyTorch CPU: 24.5 MB → 48.5 MB")
    assert memory_growth_above(comparison, 1.5) == []  # 2.0× is within a 150% limit


def test_overlapping_processes_or_a_shrink_do_not_fail_the_memory_gate():
    overlapping = compare(*_runs([24 * MB, 40 * MB], [30 * MB, 50 * MB]))
    assert memory_changes(overlapping) == []  # a process that peaked high is not a change
    shrunk = compare(*_runs([48 * MB, 49 * MB], [24 * MB, 25 * MB]))
    (moved,) = memory_changes(shrunk)
    assert not moved.grew and "(1.98× less)" in moved.text()
    assert gate_failures(shrunk, 0.10, memory=True) == []


def test_compare_memory_gate_on_the_command_line(tmp_path: Path, capsys):
    base, new = _runs([24 * MB, 25 * MB], [48 * MB, 49 * MB])
    paths = [str(res.save(tmp_path / f"{name}.json")) for name, res in (("base", base), ("new", new))]
    assert main(["compare", *paths]) == 0
    out = capsys.readouterr().out
    assert "peak memory per call:" in out and "24.5 MB → 48.5 MB" in out
    assert main(["compare", *paths, "--fail-above", "10%"]) == 0
    capsys.readouterr()
    assert main(["compare", *paths, "--fail-above", "10%", "--memory"]) == 1
    assert "peak memory growth above 10%" in capsys.readouterr().err
    assert main(["compare", *paths, "--memory"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--memory gates peak memory with --fail-above" in err[0]
