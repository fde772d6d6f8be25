"""The C allocator's state is controlled, both states of a large-output cell are kept
apart, and the headline is one of them, never a mix.

One real run (NumPy, two processes) of a cell whose call returns 4 MiB in ~1 ms, next to a small
one; the rest reads its records, plus the pure parts (when the allocator is left alone, reading a
results file from before the allocator was controlled, the finding's words).
"""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path

import pytest

import arraybench
from arraybench.analysis.aggregate import allocator_states_differ
from arraybench.render.explanations import allocator_states
from arraybench.numeric.medians import replicate_interval
from arraybench.host.threads import uncontrolled_reason, with_state
from arraybench.model.replicate import LARGE_OUTPUT_BYTES, USER_VARIABLES, environment
from arraybench.analysis.policy import takes_turn
from arraybench.model.record import Record
from arraybench.model.record import Summary
from arraybench.units import format_seconds

WORKLOADS = '''
import arraybench

@arraybench.workload(sizes={"small": 1_000, "big": 1 << 19}, namespace="native",
                     reference=lambda x: x * 2.0, backends=("numpy",))
def doubled(xp, x):
    return x * 2.0
'''
PAGE = 4096
#: What makes arraybench leave the allocator alone (host/threads): not inherited by these runs.
CHOSEN_BY_USER = (*USER_VARIABLES, "GLIBC_TUNABLES", "LD_PRELOAD")


@contextlib.contextmanager
def allocator_not_chosen():
    with pytest.MonkeyPatch.context() as mp:
        for name in CHOSEN_BY_USER:
            mp.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("allocator")
    (folder / "big_output.py").write_text(WORKLOADS)
    out = folder / "run"
    with allocator_not_chosen():
        arraybench.run(["doubled"], backends=["numpy"], devices=["cpu"], sizes=["small", "big"],
                       workload_files=[str(folder / "big_output.py")], output_dir=out, processes=2,
                       max_time=0.2, min_samples=5, plots=False, store=False)
    return out


def _records(run: Path) -> dict[str, Record]:
    return {r.size_label: r for r in arraybench.load_results(run).records}


def test_a_large_output_cell_records_both_states_the_other_from_one_process(run):
    big = _records(run)["big"]
    assert big.status == "ok" and big.n_replicates == 2
    assert (big.allocator, big.other_allocator, big.other_n_replicates) == ("reused", "fresh", 1)
    for rep in big.replicates:
        assert rep.allocator == "reused" and rep.output_bytes == 8 << 19
    # The second process measures the other state too (the first said which outputs are large).
    first, second = big.replicates
    assert first.other_allocator is None
    assert second.other_allocator is not None and second.other_allocator.allocator == "fresh"
    assert second.other_allocator.samples_s and second.other_allocator.usage is not None
    assert big.other_ci_low_s <= big.other_median_s <= big.other_ci_high_s


def test_the_other_state_takes_no_turn_once_its_own_rule_stops_it():
    """A headline cell pairs on with its case's others, up to as many turns again as it took; the
    other allocator state's samples are paired with nothing, so it stops when it is done."""
    assert takes_turn(extra=False, taken=7, done_at=None) and takes_turn(extra=True, taken=7, done_at=None)
    assert takes_turn(extra=False, taken=10, done_at=8) and not takes_turn(extra=False, taken=16, done_at=8)
    assert not takes_turn(extra=True, taken=8, done_at=8)


def _thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "never"
    return text[text.index("[") + 1:text.index("]")] if "[" in text else "never"


def test_the_headline_is_the_reused_state_alone(run):
    big = _records(run)["big"]
    pages = big.replicates[0].output_bytes / PAGE
    # Every headline process kept its memory; every fresh-pages process faulted its output in
    # every call: no process of the headline is in the other state.
    for rep in big.replicates:
        assert rep.usage.minor_faults_per_call < 0.05 * pages
    others = [rep.other_allocator for rep in big.replicates if rep.other_allocator is not None]
    assert others and all(o.usage.minor_faults_per_call >= 0.5 * pages for o in others)
    assert big.other_faults_per_call >= 0.5 * pages
    if _thp_mode() != "always":  # NumPy's advice is off: no part of it is a 2 MiB page
        assert min(o.usage.minor_faults_per_call for o in others) >= 0.95 * pages
    # The headline and its interval come from the headline's samples only.
    headline = replicate_interval([rep.samples_s for rep in big.replicates])
    assert big.median_s == pytest.approx(headline.center)
    assert big.n_samples == sum(len(rep.samples_s) for rep in big.replicates)
    # The note shows the other state exactly where the two differ.
    noted = [w for w in big.warnings if "with fresh pages" in w]
    assert bool(noted) == allocator_states_differ(big)
    if noted:
        assert format_seconds(big.other_median_s) in noted[0]


def test_a_small_output_cell_is_measured_in_the_headline_state_only(run):
    small = _records(run)["small"]
    assert small.replicates[0].output_bytes < LARGE_OUTPUT_BYTES
    assert small.allocator == "reused" and small.other_allocator == "" and small.other_median_s is None
    assert all(rep.other_allocator is None for rep in small.replicates)


def test_the_files_keep_both_states_apart(run):
    rows = {r["size_label"]: r for r in csv.DictReader((run / "results.csv").open())}
    assert rows["big"]["allocator"] == "reused" and rows["big"]["other_allocator"] == "fresh"
    assert float(rows["big"]["other_median_s"]) > 0
    journal = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    kept = [e["replicate"]["other_allocator"] for e in journal if e.get("type") == "replicate"]
    assert sum(1 for k in kept if k and k["allocator"] == "fresh") == 1  # the big cell's second process


def test_results_from_before_issue_23_still_load_as_not_controlled(run):
    data = json.loads((run / "results.json").read_text())
    for rec in data["records"]:
        for name in ("allocator", "other_allocator", "other_median_s", "other_ci_low_s", "other_ci_high_s",
                     "other_n_replicates", "other_faults_per_call"):
            rec.pop(name)
        for rep in rec["replicates"]:
            for name in ("allocator", "other_allocator", "output_bytes"):
                rep.pop(name)
    old = run.parent / "old"
    old.mkdir()
    (old / "results.json").write_text(json.dumps(data))
    records = arraybench.load_results(old).records
    assert records and all(r.allocator == "" and r.other_median_s is None for r in records)


@pytest.mark.parametrize("env, reason", [
    ({}, ""),
    ({"MALLOC_ARENA_MAX": "2"}, "MALLOC_ARENA_MAX set by the user"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, "GLIBC_TUNABLES"),
    ({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, "another allocator preloaded"),
])
def test_the_users_own_allocator_settings_are_left_alone(env, reason):
    found = uncontrolled_reason(env)
    assert (reason in found and bool(found)) if reason else found == ""


def test_each_state_sets_its_variables_and_keeps_numpys_advice_where_the_user_gave_it():
    reused, fresh = with_state({"PATH": "/bin"}, "reused"), with_state({"PATH": "/bin"}, "fresh")
    # glibc's own arenas in both: one arena for every thread costs a threaded library a lock per allocation
    assert "MALLOC_ARENA_MAX" not in reused and "MALLOC_ARENA_MAX" not in fresh
    assert reused["MALLOC_MMAP_THRESHOLD_"] == "1073741824" and fresh["MALLOC_MMAP_THRESHOLD_"] == "131072"
    assert fresh["NUMPY_MADVISE_HUGEPAGE"] == "0" and "NUMPY_MADVISE_HUGEPAGE" not in reused
    assert reused["PATH"] == fresh["PATH"] == "/bin"
    assert with_state({"NUMPY_MADVISE_HUGEPAGE": "1"}, "fresh")["NUMPY_MADVISE_HUGEPAGE"] == "1"


def test_the_finding_says_what_decides_the_state_and_how_to_get_the_faster_one():
    rec = Summary(workload="fft", size_label="large", size=10**6, backend="numpy", device="cpu",
                 dtype="float64", mode="latency", status="ok", median_s=0.0178, ci_low_s=0.0175,
                 ci_high_s=0.0181, n_samples=30, n_replicates=3, allocator="reused",
                 other_allocator="fresh", other_median_s=0.0378, other_ci_low_s=0.0370,
                 other_ci_high_s=0.0386, other_n_replicates=3, other_faults_per_call=8438)
    (text,) = allocator_states([rec])
    # Two times, each with its processes, and no multiple of them: a ratio of medians from other
    # processes is no paired measurement (one such ratio read 70× under load, where plain
    # processes give 3.4-3.8×).
    assert "17.8 ms with reused memory, 37.8 ms with fresh pages (in 3 processes, 8,438 page faults per call)" in text
    assert "2.1×" not in text
    for advice in ("MALLOC_MMAP_THRESHOLD_=1073741824", "MALLOC_TRIM_THRESHOLD_=", "out=", "jemalloc", "tcmalloc"):
        assert advice in text
    assert environment("reused")["MALLOC_MMAP_THRESHOLD_"] in text
    # Overlapping intervals: a difference not shown to be one is not stated as one.
    rec.other_ci_low_s = 0.0170
    assert allocator_states([rec]) == []


@pytest.mark.parametrize("state", ["fresh", "reused"])
def test_one_state_alone_is_the_headline_and_starts_no_second_worker(tmp_path, state):
    (tmp_path / "big_output.py").write_text(WORKLOADS)
    out = tmp_path / "run"
    with allocator_not_chosen():
        arraybench.run(["doubled"], backends=["numpy"], devices=["cpu"], sizes=["big"],
                       workload_files=[str(tmp_path / "big_output.py")], output_dir=out, processes=1,
                       max_time=0.05, min_samples=3, plots=False, store=False, allocator=state)
    (big,) = arraybench.load_results(out).records
    assert big.status == "ok" and big.allocator == state and big.other_allocator in ("", None)
    (rep,) = big.replicates
    assert rep.other_allocator is None
    pages = rep.output_bytes / PAGE
    if state == "fresh":  # every call faults its output in: the state asked for, not an accident
        assert rep.usage.minor_faults_per_call >= 0.5 * pages
        # In Python, the note names the API's keyword (the command line's own: --allocator fresh).
        assert any("fresh pages only (allocator=fresh)" in w for w in big.warnings)
    else:
        assert rep.usage.minor_faults_per_call < 0.05 * pages
        assert not any("fresh pages" in w for w in big.warnings)
    assert [p.name for p in (out / "logs").iterdir()] == ["numpy-cpu-p0.log"]  # no second worker


def test_an_unknown_allocator_state_is_one_line():
    with pytest.raises(arraybench.UsageError, match="allocator must be one of both, reused, fresh"):
        arraybench.run(["sort"], allocator="jemalloc", store=False, plots=False)
