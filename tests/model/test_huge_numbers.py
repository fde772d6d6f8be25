"""A replicate whose work (flops, bytes) is beyond 2**63 — a work model's exact ``n**4``, or the
matmul at a billion — is written as the float the schema declares: it never ends the run, and
the cells beside it are measured, resumed and reported as usual."""

from __future__ import annotations

from pathlib import Path


import arraybench
from arraybench import plan
from arraybench.model import journal
from arraybench.model.journal import Journal
from arraybench.model.replicate import Replicate
from arraybench.model.options import RunOptions
from arraybench.workloads import REGISTRY, Work

HUGE = 10**5  # n**4 = 1e20 > 2**63


@arraybench.workload(sizes={"tiny": 8, "huge": HUGE},
                     inputs=lambda n, rng: rng.standard_normal(8),
                     work=lambda n, itemsize: Work(flops=n**4, bytes=n**4 * itemsize))
def quartic_work(xp, a):
    return a + 1


def test_exact_ints_beyond_64_bits_are_journalled_as_floats(tmp_path: Path):
    options = RunOptions(backends=["numpy"], devices=["cpu"], workloads=["sort"], sizes=["small"],
                         processes=1)
    cells = plan.build_plan(options, REGISTRY)
    j = Journal.create(tmp_path, options, cells, {"python": "3.11", "backends": {}})
    j.replicate(cells[0].key, 0, Replicate(samples_s=[1e-6, 1e-6], number=1, flops=2 * 1_100_000_000**3,
                                           bytes=3 * 8 * 1_100_000_000**2))
    # A value no float holds either: the cell is journalled as failed, the journal goes on.
    j.replicate(cells[0].key, 1, Replicate(samples_s=[1e-6], number=1, output_bytes=2**70))
    j.close()
    state = journal.read(tmp_path)
    first, second = state.replicates[cells[0].key][0], state.replicates[cells[0].key][1]
    assert isinstance(first.flops, float) and first.flops == float(2 * 1_100_000_000**3)
    assert first.bytes == float(3 * 8 * 1_100_000_000**2)
    assert second.status == "failed" and "no results file can hold" in second.reason


def test_a_work_model_beyond_2_63_ends_nothing(tmp_path: Path):
    out = tmp_path / "run"
    kwargs = dict(backends="numpy", devices="cpu", processes=1, max_time=0.02, min_samples=3,
                  store=False, plots=False)
    res = arraybench.run(quartic_work, sizes="tiny,huge", output_dir=out, **kwargs)
    assert res.complete
    by_size = {r.size: r for r in res.records}
    assert set(by_size) == {8, HUGE}
    assert all(r.status == "ok" and r.n_samples for r in by_size.values())
    assert by_size[HUGE].replicates[0].flops == 1e20
    # The journal reads back: a resume of the finished run rewrites it, losing nothing.
    again = arraybench.resume(out, store=False, plots=False)
    assert {r.size: r.replicates[0].flops for r in again.records} == {8: 8.0**4, HUGE: 1e20}
