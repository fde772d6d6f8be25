"""History: a known step is called with its cause, noise within the intervals never is, false
discoveries are controlled across series, runs measured with one process never make a step (and
history says why), only what both runs recorded differently is named, and --fail-above
gates a pipeline."""

from __future__ import annotations

import datetime as _dt
import io
import math
import random
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

import arraybench
from arraybench.analysis.compare import CANNOT_TELL, SAME, compare
from arraybench.analysis.history import Point, history, step_p_value
from arraybench.render.comparison import step_sentence
from arraybench.model.runs import Entry, RunInfo
from arraybench.numeric.medians import replicate_interval
from arraybench.analysis.compare import welch
from arraybench.commands.compare import parse_since
from arraybench.model.runs import machine_id
from arraybench.render.comparison import history_section, print_history
from arraybench.store import open_store

from ..conftest import FAST, run_cli, run_here
from ..synthetic import fingerprint, record, results, timed_run

# PyTorch's matmul: ~2 ms on torch 2.4, 20% slower from the version change on; NumPy's: noise
# that stays inside the intervals (each run's medians within ±0.4%, each CI about ±1%).
NUMPY_NOISE = (1.000e-3, 1.004e-3, 0.997e-3, 1.002e-3, 0.998e-3, 1.003e-3)
TORCH = (2.000e-3, 2.004e-3, 1.998e-3, 2.400e-3, 2.404e-3, 2.398e-3)
VERSIONS = ("2.4.0", "2.4.0", "2.4.0", "2.5.0", "2.5.0", "2.5.0")


def _feed(location: str) -> None:
    with open_store(location) as s:
        for day, (n, t, v) in enumerate(zip(NUMPY_NOISE, TORCH, VERSIONS), start=1):
            s.add(timed_run(day, torch=v, numpy_s=n, torch_s=t, context={"commit": f"c{day}"}))


def _history(location: str, **kw):
    with open_store(location) as s:
        entries, runs = s.entries(**kw)
    return history(entries, runs)


def test_the_step_and_only_the_step_is_called_with_its_cause(store_location):
    _feed(store_location)
    found = _history(store_location)
    assert [s.label for s in found.series] == ["NumPy CPU", "PyTorch CPU"]
    assert all(len(s.points) == 6 for s in found.series)
    assert found.tested == 10  # five consecutive pairs in each of the two series
    (step,) = found.steps
    assert step.series.label == "PyTorch CPU" and step.slower
    assert step.ratio == pytest.approx(1.2, rel=0.01)
    assert step.before.run.started_at.startswith("2026-01-03") and step.after.run.started_at.startswith("2026-01-04")
    assert step.causes == ["torch 2.4.0 → 2.5.0", "context commit: c3 → c4"]
    assert "20.0% slower" not in step_sentence(step) and "1.20× slower" in step_sentence(step)
    (change,) = found.version_changes  # the mark on the time axis
    assert change.text == "torch 2.4.0 → 2.5.0" and change.run.started_at.startswith("2026-01-04")
    # The NumPy series moved too, every time, but always within its intervals: no step.
    numpy = found.series[0]
    assert max(p.median_s for p in numpy.points) / min(p.median_s for p in numpy.points) > 1.005


def test_filters_narrow_the_history(store_location):
    _feed(store_location)
    assert [s.label for s in _history(store_location, backends=["numpy"]).series] == ["NumPy CPU"]
    assert _history(store_location, workloads=["fft"]).series == []
    assert all(len(s.points) == 3 for s in _history(store_location, since="2026-01-04").series)
    machine = timed_run(1).environment["machine_id"]
    assert len(_history(store_location, machine=machine[:5]).series) == 2
    assert _history(store_location, machine="ffffffff").series == []


def _point(run: str, day: int, median: float, half: float, machine: str = "m", processes: int = 3,
           context: dict | None = None, libraries: dict | None = None,
           code: dict | None = None) -> tuple[Entry, RunInfo]:
    """A point whose 95% interval is median × exp(±half) (half: in log units)."""
    env = {"libraries": libraries or {}} | ({"workload_code": code} if code is not None else {})
    info = RunInfo(run, f"2026-01-{day:02d}T00:00:00+00:00", True, env, {}, context or {})
    entry = Entry(run, "", machine, f"cell-{machine}", "matmul", "small", 100, "numpy", "cpu", "float64",
                  "latency", False, "ok", median, median * math.exp(-half), median * math.exp(half),
                  processes)
    return entry, info


def _history_of(points: list[tuple[Entry, RunInfo]]):
    return history([e for e, _ in points], {i.run_id: i for _, i in points})


def _series_pair(machine: str, ratio: float, se: float) -> list[tuple[Entry, RunInfo]]:
    half = 1.959963984540054 * se
    return [_point(f"{machine}-1", 1, 1e-3, half, machine), _point(f"{machine}-2", 2, 1e-3 * ratio, half, machine)]


def test_false_discoveries_are_controlled_across_all_series():
    # A 10% change whose intervals are just apart (p ≈ 0.003): called when it is the only pair...
    marginal = _series_pair("marginal", 1.10, 0.023)
    alone = history([e for e, _ in marginal], {i.run_id: i for _, i in marginal})
    assert len(alone.steps) == 1 and alone.steps[0].p_value == pytest.approx(0.0034, abs=0.0005)
    # ...but not among 49 other series that did not change: 0.003 is no longer surprising.
    crowd = marginal + [p for k in range(49) for p in _series_pair(f"quiet{k:02d}", 1.0, 0.02)]
    many = history([e for e, _ in crowd], {i.run_id: i for _, i in crowd})
    assert many.tested == 50 and many.steps == []
    # A large change stays called in the same crowd.
    big = crowd + _series_pair("big", 1.5, 0.02)
    assert [s.series.machine_id for s in history([e for e, _ in big], {i.run_id: i for _, i in big}).steps] == ["big"]


def test_a_separated_change_under_the_threshold_is_not_a_step():
    tiny = _series_pair("tiny", 1.01, 0.001)  # 1%: intervals far apart, p tiny, but 1% < 2%
    found = history([e for e, _ in tiny], {i.run_id: i for _, i in tiny})
    assert found.tested == 1 and found.steps == []
    assert len(history([e for e, _ in tiny], {i.run_id: i for _, i in tiny}, threshold=0.005).steps) == 1


def test_history_judges_a_change_by_compares_test():
    # The store keeps a median and its interval over k processes; read back, they give the p-value
    # that compare's Welch test gives on the processes' medians themselves.
    base, new = [1.00e-3, 1.04e-3, 0.97e-3, 1.01e-3], [1.08e-3, 1.15e-3, 1.02e-3]
    points = []
    for day, medians in enumerate((base, new), start=1):
        iv = replicate_interval([[m] * 20 for m in medians])
        info = RunInfo(f"r{day}", f"2026-01-{day:02d}T00:00:00+00:00", True, {"libraries": {}}, {}, {})
        points.append(Point(info, Entry(f"r{day}", "", "m", "cell", "matmul", "small", 100, "numpy", "cpu",
                                        "float64", "latency", False, "ok", iv.center, iv.low, iv.high,
                                        len(medians))))
    assert step_p_value(*points) == pytest.approx(welch(base, new).p_value, rel=1e-9)


def test_a_kernel_update_keeps_the_machine_and_is_named_as_a_cause(store_location):
    with open_store(store_location) as s:
        s.add(timed_run(1, os_release="Linux 6.1.0"))
        s.add(timed_run(2, os_release="Linux 6.5.0", torch_s=3e-3))
        s.add(timed_run(3, host="host-b"))  # another machine: a series of its own
    found = _history(store_location)
    assert len({s.machine_id for s in found.series}) == 2
    (step,) = found.steps
    assert step.causes == ["machine: kernel Linux 6.1.0 → Linux 6.5.0"]


def test_history_command_table_plots_and_regression_gate(tmp_path: Path):
    store = str(tmp_path / "s.sqlite")
    _feed(store)
    out = tmp_path / "plots"
    done = run_here("history", "--store", store, "-o", str(out), "--fail-above", "10%", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the step is not in the latest run any more
    said = " ".join(done.stdout.split())  # prose wraps between words at the console's 80 columns
    assert "1 step called" in said and "torch 2.4.0 → 2.5.0" in said
    root = ET.parse(out / "history_matmul.svg").getroot()
    assert root.tag.endswith("svg") and "torch 2.4.0 → 2.5.0" in (out / "history_matmul.svg").read_text()
    with open_store(store) as s:  # a new run, 25% slower again: the latest run is a regression
        s.add(timed_run(7, torch="2.6.0", torch_s=3.0e-3))
    gate = run_here("history", "--store", store, "--no-plots", "--fail-above", "10%", cwd=tmp_path)
    assert gate.returncode == 1
    assert gate.stderr.startswith("arraybench: 1 regression above 10% in the latest runs: matmul small PyTorch CPU")
    lenient = run_here("history", "--store", store, "--no-plots", "--fail-above", "30%", cwd=tmp_path)
    assert lenient.returncode == 0
    assert run_here("history", "--store", store, "--since", "yesterday-ish", cwd=tmp_path).returncode == 2


def test_parse_since():
    now = _dt.datetime(2026, 2, 1, 12, 0, tzinfo=_dt.timezone.utc)
    assert parse_since("30d", now) == "2026-01-02T12:00:00+00:00"
    assert parse_since("12h", now) == "2026-02-01T00:00:00+00:00"
    assert parse_since("2026-01-31") == "2026-01-31T00:00:00+00:00"
    assert parse_since(None) is None


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Two real runs of one cell into one store, the second labelled with a new commit: a folder
    holding one/, two/ and s.sqlite. Copy what a test changes."""
    root = tmp_path_factory.mktemp("two-runs")
    args = ("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
            "--store", str(root / "s.sqlite"))
    # A process each, not run_here: a run's start is stored to the second, and two runs started
    # within one second are ordered by their ids, not by when they ran.
    first = run_cli(*args, "-o", str(root / "one"))
    assert first.returncode == 0, first.stderr
    second = run_cli(*args, "-o", str(root / "two"), "--context", "commit=new")
    assert second.returncode == 0, second.stderr
    return root


@pytest.mark.slow
def test_a_run_report_shows_its_history_when_the_store_has_earlier_runs(two_runs: Path):
    assert "id='history'" not in (two_runs / "one" / "report.html").read_text()
    page = (two_runs / "two" / "report.html").read_text()
    assert "id='history'" in page and "data-plot='history_matmul.svg'" in page
    assert "2 runs" in page and (two_runs / "two" / "history_matmul.svg").is_file()
    # One process each: the report calls no step (nor blames the new label) and says why.
    assert "1 cell measured with one process: no step can be called; use --processes 2 or more" in page
    assert "STEP" not in page and "commit: —" not in page


@pytest.mark.slow
def test_history_of_this_machine_and_a_rebuilt_report_keep_the_history(two_runs: Path, tmp_path: Path):
    shutil.copytree(two_runs, tmp_path, dirs_exist_ok=True)  # this test rewrites a report
    store = str(tmp_path / "s.sqlite")
    mine = run_here("history", "--store", store, "--machine", "this", "--no-plots", cwd=tmp_path)
    assert mine.returncode == 0 and "matmul small" in mine.stdout and "over 2 runs" in mine.stdout
    other = run_here("history", "--store", store, "--machine", "ffffff", "--no-plots", cwd=tmp_path)
    assert other.returncode == 0 and "no stored run matches" in other.stdout
    (tmp_path / "two" / "report.html").unlink()
    rebuilt = run_here("report", str(tmp_path / "two"), "--store", store, "-q", cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "id='history'" in (tmp_path / "two" / "report.html").read_text()
    bare = run_here("report", str(tmp_path / "two"), "--no-store", "-q", cwd=tmp_path)
    assert bare.returncode == 0 and "id='history'" not in (tmp_path / "two" / "report.html").read_text()


# -- one process cannot show the variation between processes ----------------
def _noisy_single_process_runs(rng: random.Random, series: int, runs: int, processes: int = 1):
    """``runs`` runs of the same code: each cell's one process lands ~5% off for its whole life
    while its own samples give an interval of ±1%; each run has a new commit label, the first
    none."""
    points = []
    for r in range(runs):
        for k in range(series):
            median = 1e-3 * math.exp(rng.gauss(0, 0.05))
            points.append(_point(f"run{r}", r + 1, median, 0.01, machine=f"m{k:02d}", processes=processes,
                                 context={"commit": f"c{r}"} if r else {}))
    return points


def test_single_process_noise_never_makes_a_step():
    rng = random.Random(23)
    noise = _noisy_single_process_runs(rng, series=40, runs=10)
    found = _history_of(noise)
    assert found.steps == [] and found.tested == 0
    assert len(found.one_process) == 40 * 9 and len(found.one_process_series) == 40
    # The same numbers claimed over three processes fool the test: the data are noise the
    # intervals do not hold, which is why one process must not be tested.
    trusted = _history_of([(Entry(**{**vars(e), "n_replicates": 3}), i) for e, i in noise])
    assert len(trusted.steps) > 100
    # One process on either side of a pair is enough to leave it untested.
    mixed = _history_of([_point("a", 1, 1e-3, 0.01, processes=3), _point("b", 2, 3e-3, 0.01, processes=1),
                         _point("c", 3, 1e-3, 0.01, processes=3)])
    assert mixed.steps == [] and mixed.tested == 0 and len(mixed.one_process) == 2


def test_a_regression_gate_does_not_pass_a_slowdown_it_could_not_judge():
    # The latest run is 3x slower, measured by one process: no step, and not a pass either.
    latest = _history_of([_point("a", 1, 1e-3, 0.01, processes=3), _point("b", 2, 3e-3, 0.01, processes=1)])
    assert latest.regressions(0.1) == [] and len(latest.unjudged_above(0.1)) == 1
    assert latest.unjudged_above(2.5) == []  # 3x is not above +250%
    # Only what arrived with the latest run: an old unjudged slowdown that stayed does not gate.
    older = _history_of([_point("a", 1, 1e-3, 0.01, processes=1), _point("b", 2, 3e-3, 0.01, processes=1),
                         _point("c", 3, 3e-3, 0.01, processes=1)])
    assert older.unjudged_above(0.1) == []


def _console() -> Console:
    return Console(file=io.StringIO(), width=200, color_system=None)


@pytest.mark.slow
def test_identical_single_process_runs_give_no_step_and_say_why(tmp_path: Path):
    # The case, for real: the same code run twice with one process, the second labelled.
    store = str(tmp_path / "s.sqlite")
    quick = dict(backends="numpy", devices="cpu", sizes="small", processes=1, max_time=0.05,
                 min_samples=3, store=store)
    first = arraybench.run(["sort", "matmul"], **quick)
    second = arraybench.run(["sort", "matmul"], context={"commit": "a1"}, **quick)
    with open_store(store) as s:
        entries, runs = s.entries()
    assert sorted(e.n_replicates for e in entries) == [1, 1, 1, 1]  # the store keeps the count
    found = history(entries, runs)
    assert found.steps == [] and found.tested == 0 and len(found.one_process_series) == 2
    console = _console()
    print_history(found, console, "here")
    text = console.file.getvalue()
    # Called from Python: the API's name (the command line says --processes 2).
    assert "2 cells measured with one process: no step can be called; use processes=2 or more" in text
    assert "step:" not in text and "STEP" not in text and "commit: — → a1" not in text
    assert "use processes=2 or more" in history_section(found, [])["summary"]
    # compare's verdicts on the same two runs: never faster or slower.
    verdicts = {c.verdict for c in compare(first, second).changes}
    assert verdicts <= {SAME, CANNOT_TELL}


def _two_process_run(day: int, numpy_s: float, torch_s: float, torch: str = "2.4.0",
                     context: dict | None = None):
    """matmul small on NumPy and PyTorch measured in two processes that sit 1% apart."""
    fp = fingerprint()
    env = {"timestamp": f"2026-01-{day:02d}T00:00:00+00:00", "fingerprint": fp,
           "machine_id": machine_id(fp), "python": "3.11.7",
           "libraries": {"numpy": "2.0.0", "torch": torch}, "context": dict(context or {})}

    def two(t: float) -> list[float]:
        a, b = [t * 1.01 * (1 + 0.002 * i) for i in range(20)], [t * 0.99 * (1 + 0.002 * i) for i in range(20)]
        return [x for pair in zip(a, b) for x in pair]  # dealt back to the two processes by record()

    return results([record("matmul", "numpy", samples=two(numpy_s), replicates=2),
                    record("matmul", "torch", samples=two(torch_s), replicates=2)], **env)


def test_a_2x_slowdown_between_two_process_runs_is_a_step_named_only_by_what_changed(tmp_path: Path):
    store = str(tmp_path / "s.sqlite")
    with open_store(store) as s:
        s.add(_two_process_run(1, 1e-3, 2e-3))  # no label
        s.add(_two_process_run(2, 2e-3, 2e-3, context={"commit": "c1"}))  # NumPy 2x slower
        s.add(_two_process_run(3, 2e-3, 4e-3, torch="2.5.0", context={"commit": "c2"}))  # PyTorch 2x
    found = _history(store)
    assert all(p.processes == 2 for se in found.series for p in se.points)
    assert found.tested == 4 and found.one_process == []
    numpy_step, torch_step = sorted(found.steps, key=lambda st: st.series.label)
    assert numpy_step.series.label == "NumPy CPU" and numpy_step.ratio == pytest.approx(2.0, rel=0.01)
    assert torch_step.series.label == "PyTorch CPU" and torch_step.ratio == pytest.approx(2.0, rel=0.01)
    # The earlier run had no label: a label appearing is not a change of the code.
    assert numpy_step.causes == [] and "changed: nothing recorded changed" in step_sentence(numpy_step)
    assert torch_step.causes == ["torch 2.4.0 → 2.5.0", "context commit: c1 → c2"]


def test_causes_name_only_what_both_runs_recorded_differently():
    def pair(before: dict, after: dict, ctx_before: dict, ctx_after: dict) -> list[str]:
        (step,) = _history_of([_point("a", 1, 1e-3, 0.01, libraries=before, context=ctx_before),
                               _point("b", 2, 2e-3, 0.01, libraries=after, context=ctx_after)]).steps
        return step.causes

    # A library an older arraybench did not list, a label one run lacks: nothing named.
    assert pair({"numpy": "2.0"}, {"numpy": "2.0", "jax": "0.4.30"}, {}, {"commit": "a1"}) == []
    assert pair({"numpy": "2.0"}, {"numpy": "2.0"}, {"commit": "a1", "branch": "x"}, {"commit": "a1"}) == []
    # Listed by both, not installed before: an install is a change; so is a label that moved.
    assert pair({"numpy": "2.0", "jax": None}, {"numpy": "2.0", "jax": "0.4.30"},
                {"commit": "a1"}, {"commit": "b2"}) == ["jax none → 0.4.30", "context commit: a1 → b2"]


def test_a_step_whose_workload_code_changed_says_so():
    def step_of(before: dict | None, after: dict | None):
        return _history_of([_point("a", 1, 1e-3, 0.01, code=before), _point("b", 2, 2e-3, 0.01, code=after)]).steps[0]

    changed = step_of({"matmul": "aaaa1111ffff", "other": "1"}, {"matmul": "bbbb2222ffff", "other": "2"})
    assert changed.causes == ["the workload's code (aaaa1111 → bbbb2222)"]
    assert "changed: the workload's code (aaaa1111 → bbbb2222)" in step_sentence(changed)
    # Another workload's code, the same code, or a run that did not record it: not named.
    assert step_of({"matmul": "x", "other": "1"}, {"matmul": "x", "other": "2"}).causes == []
    assert step_of(None, {"matmul": "bbbb2222"}).causes == []
