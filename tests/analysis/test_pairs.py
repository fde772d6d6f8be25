"""One verdict per pair, from turns taken together: a busy machine's drift falls on both sides."""

from __future__ import annotations

import math
import random

from arraybench.analysis import pairs
from arraybench.analysis.aggregate import aggregate
from arraybench.analysis.grouping import comparison, decided_winner
from arraybench.analysis.replication import DECIDED, Policy, decide
from arraybench.model.cell import Cell, case_key
from arraybench.model.pair import Pair
from arraybench.model.record import Record
from arraybench.model.replicate import Replicate
from arraybench.render.tables import speedup_text


def _paired(backend: str, per_call: float, load: list[list[float]], noise: float = 0.01, seed: int = 0) -> Record:
    """A record whose processes sampled ``per_call`` in rounds slowed by ``load[process][round]``."""
    rng = random.Random(seed)
    reps = []
    for factors in load:
        samples = [per_call * f * (1 + rng.uniform(-noise, noise)) for f in factors]
        reps.append(Replicate(status="ok", samples_s=samples, number=1, first_call_s=per_call,
                              rounds=list(range(len(factors)))))
    cell = Cell("matmul", "small", 100, backend, "cpu", "float64", "latency")
    return aggregate(cell, reps, len(reps), rel_ci=0.02)


def _bursty(processes: int, rounds: int, seed: int = 1) -> list[list[float]]:
    """Each round's slow-down from a tenant that takes the core in bursts: 1× to 6×."""
    rng = random.Random(seed)
    return [[rng.choice([1.0, 1.0, 2.5, 6.0]) for _ in range(rounds)] for _ in range(processes)]


def test_a_pair_sees_through_a_load_that_swamps_each_side_alone():
    load = _bursty(3, 30)
    fast, slow = _paired("numpy", 1e-3, load, seed=2), _paired("torch", 1.5e-3, load, seed=3)
    # Each side alone: the bursts make its interval wide (the medians alone cannot be trusted).
    assert fast.ci_high_s / fast.ci_low_s > 1.2 or slow.ci_high_s / slow.ci_low_s > 1.2
    found = pairs.pair(slow, fast)
    assert found is not None and found.verdict == "slower"
    assert 1.4 < found.ratio < 1.6 and found.ci_low > 1.3 and found.ci_high < 1.7
    assert found.processes == 3 and found.rounds == 90 and found.method.startswith("t over 3")
    back = pairs.pair(fast, slow)
    assert back.verdict == "faster" and math.isclose(back.ratio, 1 / found.ratio)


def test_two_processes_give_no_t_interval_and_equal_sides_are_level():
    load = _bursty(2, 40)
    a, b = _paired("numpy", 1e-3, load, noise=0.005, seed=4), _paired("torch", 1e-3, load, noise=0.005, seed=5)
    found = pairs.pair(a, b)
    assert found.method == "span of 2 processes' intervals"
    assert found.verdict == "level" and found.ci_low >= 1 / 1.05 and found.ci_high <= 1.05


def test_verdict_words_follow_the_interval_alone():
    assert pairs.verdict(0.5, 0.9) == "faster"
    assert pairs.verdict(1.1, 3.0) == "slower"
    assert pairs.verdict(0.97, 1.04) == "level"
    # An interval that includes 1 and is wide is undecided, never level: a 139x gap with a
    # huge interval on one side must not read "level".
    assert pairs.verdict(0.01, 1.5) == "undecided"


def test_records_without_turns_are_not_paired_and_pairs_read_back():
    cell = Cell("matmul", "small", 100, "numpy", "cpu", "float64", "latency")
    rep = Replicate(status="ok", samples_s=[1e-3] * 5, number=1, first_call_s=1e-3)
    unpaired = aggregate(cell, [rep], 1, rel_ci=0.02)
    assert pairs.pairs_of([unpaired, unpaired]) == []
    load = _bursty(3, 10)
    made = pairs.pairs_of([_paired("numpy", 1e-3, load), _paired("torch", 3e-3, load), _paired("jax", 2e-3, load)])
    assert len(made) == 3 and {p.case for p in made} == {case_key(cell)}
    assert Pair.from_dict(made[0].to_dict()) == made[0]


def test_the_table_and_the_winner_read_the_pair_verdict():
    load = _bursty(3, 20)
    base = _paired("numpy", 1e-3, load, seed=6)
    slower = _paired("torch", 2e-3, load, seed=7)
    same = _paired("jax", 1e-3, load, seed=8)
    assert speedup_text(slower, base).endswith("slower")
    assert comparison(same, base)[0] in ("level", "undecided")
    assert not speedup_text(same, base).endswith(("faster", "slower"))
    # NumPy and JAX cannot be told apart: no library is bold as the winner.
    assert decided_winner([base, slower, same]) is None
    assert decided_winner([base, slower]) is base


def test_a_cell_whose_pairs_are_answered_wants_no_more_processes():
    policy = Policy(least=3, most=6, rel_ci=0.02, budget_s=100.0)
    reps = [Replicate(status="ok", samples_s=[1e-3 * (1 + 0.3 * (i % 2))] * 5, number=1, first_call_s=1e-3,
                      elapsed_s=0.01) for i in range(3)]
    assert decide(reps, policy, open_pairs=False).stop == DECIDED
    assert decide(reps, policy, open_pairs=True).wanted == 4  # a verdict still open: one more process
