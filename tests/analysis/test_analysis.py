"""Crossovers, findings and the roofline, on synthetic records with known answers."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from arraybench.analysis.crossover import Point, crossovers, find
from arraybench.model.record import Summary
from arraybench.render.findings import (ceiling_shares, compiled_vs_eager, crossover_sentence, findings, overheads,
                                        problems, winners)
from arraybench.analysis.roofline import ceilings, share
from arraybench.render.mpl import render_svg
from arraybench.render.plots import sweep_figure


def rec(workload, size, backend, median, device="cpu", mode="latency", status="ok", ci=0.01,
        label=None, flops=None, bytes_=None, **kw):
    r = Summary(workload, label or str(size), size, backend, device, "float64", mode, status,
               median_s=median, min_s=median * 0.95, iqr_s=median * 0.02, n_samples=20,
               ci_low_s=median * (1 - ci), ci_high_s=median * (1 + ci), first_call_s=median * 2,
               max_rel_error=0.0, tolerance=1e-15, flops=flops, bytes=bytes_, **kw)
    return r


def series(pairs):
    return [Point(n, t, t * 0.99, t * 1.01) for n, t in pairs]


def test_crossover_is_interpolated_in_log_log_space():
    # a is 4x slower at n=100 and 4x faster at n=10,000: ratios 4 and 1/4 cross at n=1,000.
    a = series([(100, 4.0), (10_000, 1.0)])
    b = series([(100, 1.0), (10_000, 4.0)])
    c = find("matmul", "GPU", a, "NumPy", b)
    assert c.kind == "from"
    assert c.size == pytest.approx(1000.0)
    assert (c.lower, c.upper) == (100, 10_000)
    assert "from n ≈ 1,000" in crossover_sentence(c)


def test_always_never_and_level():
    fast = series([(10, 1.0), (100, 1.0), (1000, 1.0)])
    slow = series([(10, 2.0), (100, 2.0), (1000, 2.0)])
    assert find("w", "a", fast, "b", slow).kind == "always"
    never = find("w", "a", slow, "b", fast)
    assert never.kind == "never" and "2.0× its time" in crossover_sentence(never)
    assert find("w", "a", fast, "b", fast).kind == "level"


def test_overlapping_confidence_intervals_are_level_not_a_win():
    a = [Point(10, 1.00, 0.90, 1.10), Point(100, 1.0, 0.9, 1.1)]
    b = [Point(10, 1.05, 0.95, 1.15), Point(100, 2.0, 1.9, 2.1)]
    c = find("w", "a", a, "b", b)
    assert c.kind == "always"  # level at 10, a win at 100, never a loss


def test_a_lead_that_fades_into_a_tie_is_said():
    a = series([(10, 2.0), (100, 1.0), (1000, 1.0)])
    b = series([(10, 1.0), (100, 2.0), (1000, 1.0)])
    c = find("w", "a", a, "b", b)
    assert c.kind == "from" and c.level_from == 1000
    assert "level" in crossover_sentence(c)


def test_a_lead_lost_at_the_largest_size_is_never():
    a = series([(10, 1.0), (100, 1.0), (1000, 3.0)])
    b = series([(10, 2.0), (100, 2.0), (1000, 1.0)])
    assert find("w", "a", a, "b", b).kind == "never"


def test_too_few_common_sizes_give_nothing():
    assert find("w", "a", series([(10, 1.0)]), "b", series([(10, 2.0)])) is None


def test_crossovers_pair_gpu_with_numpy_and_with_its_cpu_and_compiled_with_eager():
    records = []
    for n, numpy_t, gpu_t, cpu_t, jit_t in [(10, 1e-6, 1e-5, 2e-6, 5e-7), (100, 1e-4, 2e-5, 1e-4, 5e-5),
                                             (1000, 1e-1, 1e-3, 5e-2, 4e-2)]:
        records += [rec("matmul", n, "numpy", numpy_t), rec("matmul", n, "torch", gpu_t, device="gpu"),
                    rec("matmul", n, "torch", cpu_t), rec("matmul", n, "jax", cpu_t),
                    rec("matmul", n, "jax", jit_t, mode="compiled")]
    found = {(c.a, c.b): c for c in crossovers(records)}
    assert found[("PyTorch GPU", "NumPy CPU")].kind == "from"
    assert 10 < found[("PyTorch GPU", "NumPy CPU")].size < 100
    assert ("PyTorch GPU", "PyTorch CPU") in found
    assert found[("JAX CPU (compiled)", "JAX CPU")].kind == "always"


def test_a_small_but_real_lead_is_not_written_one_times_faster():
    """The first GPU run said "PyTorch GPU is fastest at 365 µs, 1× faster than CuPy GPU" (370 µs,
    intervals apart): two figures of 1.014 round to 1."""
    records = [rec("matmul", 2000, "torch", 365e-6, device="gpu", ci=0.002, label="large"),
               rec("matmul", 2000, "cupy", 370e-6, device="gpu", ci=0.002, label="large")]
    (sentence,) = winners(records)
    assert "1.01× faster than CuPy GPU" in sentence, sentence
    records[1].median_s, records[1].ci_low_s, records[1].ci_high_s = 8.03e-3, 8e-3, 8.06e-3
    assert "22× faster than CuPy GPU" in winners(records)[0]


def test_findings_name_the_winner_and_the_margin():
    records = [rec("fft", 1000, "numpy", 4e-3, label="large"), rec("fft", 1000, "torch", 1e-3, label="large"),
               rec("fft", 1000, "jax", 2e-3, label="large")]
    (sentence,) = winners(records)
    assert sentence.startswith("On fft large (n = 1,000), PyTorch CPU is fastest at 1 ms")
    assert "2.0× faster than JAX CPU" in sentence and "4.0× faster than NumPy CPU" in sentence
    # Change the data, and the sentence follows.
    records[0].median_s = records[0].min_s = 5e-4
    records[0].ci_low_s, records[0].ci_high_s = 4.9e-4, 5.1e-4
    assert winners(records)[0].startswith("On fft large (n = 1,000), NumPy CPU is fastest")


def test_findings_name_no_winner_when_the_cis_overlap_and_level_only_within_ten_percent():
    # Tight intervals whose ratio lies within ±10% of 1: level.
    records = [rec("sort", 10, "numpy", 1.00e-3, ci=0.01), rec("sort", 10, "torch", 1.02e-3, ci=0.01)]
    assert "are level" in winners(records)[0]
    # Overlapping but wide: the ratio could be 0.89 (more than 10% apart), so not "level" but undecided.
    records = [rec("sort", 10, "numpy", 1.00e-3, ci=0.05), rec("sort", 10, "torch", 1.02e-3, ci=0.05)]
    assert "are not told apart" in winners(records)[0] and "fastest" not in winners(records)[0]


def test_per_call_floor_comes_from_the_fastest_call():
    records = [rec("a", 10, "numpy", 2e-6), rec("b", 10, "numpy", 1e-6), rec("a", 10, "jax", 3e-5)]
    (sentence,) = overheads(records)
    assert "NumPy CPU 1 µs (b 10); JAX CPU 30 µs (a 10)" in sentence


def test_compiled_versus_eager():
    eager = rec("elementwise", 1000, "jax", 8e-5, label="small")
    jit = rec("elementwise", 1000, "jax", 1e-5, mode="compiled", label="small", method="jax.jit", compile_s=0.05)
    (sentence,) = compiled_vs_eager([eager, jit])
    assert sentence.startswith("jax.jit on JAX CPU is 8.0× faster than eager on elementwise small")
    assert "compiling took 50 ms" in sentence
    assert "disk cache" not in sentence


def test_a_compile_served_from_a_disk_cache_says_so():
    eager = rec("elementwise", 1000, "torch", 8e-5, label="small")
    served = ("torch.compile's first call was served from a disk cache (2 hit(s) in Inductor's and "
              "AOTAutograd's caches, 0 graph(s) compiled): its compile time is mostly a cache load")
    hit = rec("elementwise", 1000, "torch", 1e-5, mode="compiled", label="small", method="torch.compile",
              compile_s=0.07, warnings=[served])
    (sentence,) = compiled_vs_eager([eager, hit])
    assert "compiling took 70 ms, served from a disk cache (a cold compile takes longer)" in sentence
    maybe = ("JAX's persistent compilation cache is on (/tmp/jc): the first call may be served from a "
             "disk cache, so its compile time may be a cache load, not a compile")
    jit = rec("elementwise", 1000, "jax", 1e-5, mode="compiled", label="small", method="jax.jit",
              compile_s=0.05, warnings=[maybe])
    (sentence,) = compiled_vs_eager([rec("elementwise", 1000, "jax", 8e-5, label="small"), jit])
    assert "compiling took 50 ms, which may have been served from a disk cache" in sentence


def test_problems_are_reported():
    bad = rec("fft", 10, "jax", 1e-3, status="wrong", reason="result is float32, expected float64")
    assert problems([bad]) == ["JAX CPU gave a wrong result on fft n = 10: result is float32, expected float64."]


def test_roofline_share_uses_the_best_ceiling_and_the_right_roof():
    peak = rec("ceiling_matmul", 2048, "numpy", 0.1, flops=1e10, bytes_=1e8)  # 100 GFLOP/s
    slower_peak = rec("ceiling_matmul", 2048, "torch", 0.2, flops=1e10, bytes_=1e8)
    stream = rec("ceiling_bandwidth", 1 << 25, "numpy", 0.1, flops=1e7, bytes_=1e9)  # 10 GB/s
    compute = rec("matmul", 1000, "torch", 0.04, flops=2e9, bytes_=2.4e7)  # 50 GFLOP/s, AI 83
    memory = rec("elementwise", 10**6, "torch", 0.004, flops=3e6, bytes_=2e7)  # 5 GB/s, AI 0.15
    table = ceilings([peak, slower_peak, stream, compute, memory])
    c = table[("", "cpu", "float64")]  # (machine, device, dtype): "" is the run's own machine
    assert c.peak_flops == pytest.approx(1e11) and c.bandwidth == pytest.approx(1e10)
    assert c.peak_by == "NumPy CPU"
    assert share(compute, table) == pytest.approx(0.5)
    assert share(memory, table) == pytest.approx(0.5)  # half of bandwidth x intensity
    sentences = ceiling_shares([peak, stream, compute, memory])
    assert any("matmul" in s and "50%" in s and "compute ceiling" in s for s in sentences)
    assert any("elementwise" in s and "memory ceiling" in s for s in sentences)


def test_findings_are_all_computed():
    records = [rec("matmul", n, b, t) for n, b, t in
               [(10, "numpy", 1e-6), (10, "torch", 5e-6), (100, "numpy", 1e-4), (100, "torch", 5e-5),
                (1000, "numpy", 0.1), (1000, "torch", 0.02)]]
    found = findings(records)
    assert any("PyTorch CPU beats NumPy CPU on matmul from n ≈" in f for f in found)
    assert not any("On matmul 100" in f for f in found)  # sweeps are summed up by crossovers
    svg = render_svg(sweep_figure(records, "matmul"))
    ET.fromstring(svg)
    assert "NumPy CPU" in svg and "PyTorch CPU" in svg and "ahead" in svg


def test_compile_time_is_the_first_call_over_the_fastest_later_one_and_never_a_silent_zero():
    from arraybench.analysis.aggregate import aggregate
    from arraybench.model.cell import Cell
    from arraybench.model.replicate import Replicate

    cell = Cell("matmul", "3000", 3000, "torch", "cpu", "float64", "compiled")
    # A loaded process whose median is as slow as its 1.9 s first call: the compile is still the
    # 1.4 s between the first call and the fastest later one (first minus median read 0 s).
    loaded = [Replicate(status="ok", samples_s=[0.5, 2.0, 2.1, 1.9], number=1, first_call_s=1.9),
              Replicate(status="ok", samples_s=[0.5, 0.52, 0.55], number=1, first_call_s=1.9)]
    found = aggregate(cell, loaded, 2, rel_ci=0.02)
    assert found.compile_s == pytest.approx(1.4)
    # A first call no slower than the calls after it: no compile seen, and said, not a 0 s.
    cached = [Replicate(status="ok", samples_s=[0.5, 0.52], number=1, first_call_s=0.49)]
    found = aggregate(cell, cached, 1, rel_ci=0.02)
    assert found.compile_s is None
    assert any(w.startswith("compiling not seen") for w in found.warnings)
