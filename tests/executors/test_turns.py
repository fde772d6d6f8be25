"""Turns between configurations, for real: every sample of a cell that took turns belongs to a
round, so that the pairs compare samples taken seconds apart, never a sample taken alone."""

from __future__ import annotations

import time

import arraybench
from arraybench.model.results import Results


@arraybench.workload(sizes={"small": 8}, namespace="native", reference=lambda x: x + 0.0)
def slow_call(xp, x):
    """A call slow enough (>= 0.1 s) that its warm-up call would be kept as a sample."""
    time.sleep(0.1)
    return x + 0.0


def test_a_slow_cells_warm_up_call_is_no_sample_of_its_turns(tmp_path):
    results: Results = arraybench.run(
        [slow_call], backends="numpy", devices="cpu", variants={"a": {}, "b": {"ARRAYBENCH_UNUSED": "1"}},
        processes=2, max_time=0.6, min_samples=6, output_dir=tmp_path / "out", store=False, plots=False)
    records = [r for r in results.records if r.status == "ok"]
    assert len(records) == 2
    for record in records:
        for rep in record.replicates:
            # One round per sample: the i-th sample was taken in the i-th round.
            assert len(rep.rounds) == len(rep.samples_s) >= 2
    [pair] = results.pairs
    assert pair.rounds == sum(len(rep.samples_s) for rep in records[0].replicates)
