"""Results files and journals written by someone else, for real.

Each case edits a real results.json or journal.jsonl the way a hostile (or careless) hand would
and hands it to the real command line: it is refused in one line, or, where the data is valid but
awkward (no valid result at a size, a ``$`` in a name), every report file is still written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from arraybench import load_results
from arraybench.render.mpl import Figure, PlotWarning, drawn

from ..conftest import ROOT, run_cli, run_here

DATA = Path(__file__).resolve().parents[1] / "data"
QUICK = ("--sizes", "small", "--backends", "numpy", "--devices", "cpu", "--processes", "1",
         "--max-time", "0.05", "--min-samples", "3", "-q")
REPORT_FILES = ("report.html", "results.md", "results.csv", "findings.md")


def assert_report_written(folder: Path) -> None:
    for name in REPORT_FILES[:3]:
        assert (folder / name).stat().st_size > 200, name
    assert (folder / "findings.md").is_file()  # empty when there is nothing to find


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """A real run of two workloads: its results.json and journal are what the cases edit."""
    out = tmp_path_factory.mktemp("hostile") / "run"
    done = run_here("run", "--workloads", "sort,matmul", "--no-plots", "-o", str(out), *QUICK, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def edited(source: Path, folder: Path, edit: Callable[[dict], Any]) -> Path:
    data = json.loads((source / "results.json").read_text())
    text = edit(data)
    folder.mkdir()
    (folder / "results.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return folder / "results.json"


def setting(path: str, value: Any) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return edit


DEEP = json.loads("[" * 500 + "]" * 500)


@pytest.mark.parametrize("edit, message", [
    (setting("environment", 5), "'environment' and 'settings' must be objects"),
    (setting("environment", ["a"]), "'environment' and 'settings' must be objects"),
    (setting("environment.thread_env", 5), "environment.thread_env: expected an object, got int"),
    (setting("environment.libraries", "numpy"), "environment.libraries: expected an object, got str"),
    (setting("environment.backends", {"numpy/cpu": 5}), "environment.backends.numpy/cpu: expected an object, got int"),
    (setting("environment.gpus", [3]), "environment.gpus[0]: expected an object, got int"),
    (setting("environment.machines", {"lab": 7}), "environment.machines.lab: expected an object, got int"),
    (setting("environment.x", DEEP), "nested too deeply"),
    (setting("settings.max_time", 10**400), "too large to be a measurement"),
    (setting("environment.cpu_count", 10**400), "too large to be a measurement"),
    (lambda d: json.dumps(d).replace('"median_s": ', '"median_s": NaN, "x": ', 1), "holds NaN"),
    (lambda d: json.dumps(d).replace('"median_s": ', '"median_s": 1e999, "x": ', 1), "beyond any float"),
    (setting("records.0.first_call_s", -1.0), "record 0.first_call_s: -1.0 is below 0"),
    (setting("records.0.replicates.0.first_call_s", -0.5), "record 0.replicates[0].first_call_s: -0.5 is below 0"),
    (setting("records.0.replicates.0.output_names", 5), "output_names: expected a list, got int"),
    (setting("records.0.replicates.0.output_errors", "abc"), "output_errors: expected a list, got str"),
    (setting("records.0.median_s", "fast"), "record 0.median_s: expected a number, got str"),
], ids=["env-int", "env-list", "thread-env", "libraries", "backends-entry", "gpus-entry",
        "machines-entry", "deep", "huge-setting", "huge-env", "nan", "infinity", "negative-first",
        "negative-first-replicate", "output-names", "output-errors", "median-text"])
def test_a_hostile_results_file_is_refused_in_one_line(edit, message: str, measured: Path,
                                                       tmp_path: Path):
    path = edited(measured, tmp_path / "case", edit)
    before = path.read_bytes()
    for command in (["report", str(path)], ["compare", str(path), str(measured)]):
        result = run_here(*command, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stderr)
        assert message in one_line(result.stderr)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]


@pytest.mark.parametrize("edit, field", [
    (setting("records.0.median_s", 1e308), "record 0.median_s: 1e+308 is above 1e+06"),
    (setting("records.1.ci_high_s", 2e6), "record 1.ci_high_s: 2000000.0 is above 1e+06"),
    (setting("records.0.replicates.0.samples_s.0", 1e300),
     "record 0.replicates[0].samples_s: 1e+300 is above 1e+06"),
], ids=["median", "interval", "sample"])
def test_an_absurd_time_is_refused_by_every_reader(edit, field: str, measured: Path, tmp_path: Path):
    path = edited(measured, tmp_path / "case", edit)
    for command in (["report", str(path)], ["compare", str(measured), str(path), "--fail-above", "10%"],
                    ["export", str(path), "--format", "bencher"], ["export", str(path), "--format", "github"],
                    ["store", "import", str(path), "--store", str(tmp_path / "s.sqlite")]):
        result = run_here(*command, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        line = next(x for x in result.stderr.splitlines() if field in x)
        assert str(path) in line, (command, result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path, field", [
    ("records.0.workload", "record 0.workload: a name of 100,000 characters"),
    ("records.1.size_label", "record 1.size_label: a name of 100,000 characters"),
    ("records.0.backend", "record 0.backend: a name of 100,000 characters"),
], ids=["workload", "size", "backend"])
def test_a_name_too_long_to_read_is_refused_by_every_reader(path: str, field: str, measured: Path,
                                                            tmp_path: Path):
    # Both sides hold the name, so that a reader that took it would match the cells and compare them.
    case = edited(measured, tmp_path / "case", setting(path, "w" * 100_000))
    twin = edited(measured, tmp_path / "twin", setting(path, "w" * 100_000))
    for command in (["store", "import", str(case), "--store", str(tmp_path / "s.sqlite")],
                    ["compare", str(twin), str(case)], ["report", str(case)],
                    ["export", str(case), "--format", "github"]):
        result = run_here(*command, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stdout[-500:], result.stderr[-500:])
        line = one_line(result.stderr)
        assert field in line and (str(case) in line or str(twin) in line), line[:300]
    assert "more than the 1,000 a name may have" in result.stderr


@pytest.mark.parametrize("edit, message", [
    (lambda lines: [lines[0].replace('"thread_env": {}', '"thread_env": 5')] + lines[1:],
     "line 1 (the header) is damaged: environment.thread_env: expected an object, got int"),
    (lambda lines: [lines[0].replace('"environment": {', '"environment": {"x": ' + json.dumps(DEEP) + ", ")]
     + lines[1:], "not an arraybench journal (its first line is nested too deeply"),
    (lambda lines: [ln.replace('"first_call_s": ', '"first_call_s": -1, "_": ', 1) for ln in lines],
     "is damaged: replicate.first_call_s: -1 is below 0"),
    (lambda lines: [ln.replace('"output_names": []', '"output_names": 5') for ln in lines],
     "is damaged: replicate.output_names: expected a list, got int"),
    (lambda lines: [ln.replace('"output_errors": []', '"output_errors": "abc"') for ln in lines],
     "is damaged: replicate.output_errors: expected a list, got str"),
    (lambda lines: [ln.replace('"elapsed_s": ', '"elapsed_s": ' + "9" * 400 + ', "_": ', 1) for ln in lines],
     "too large to be a measurement"),
], ids=["thread-env", "deep", "negative-first", "output-names", "output-errors", "huge"])
def test_a_hostile_journal_is_refused_and_left_as_it_is(edit, message: str, measured: Path,
                                                        tmp_path: Path):
    out = tmp_path / "run"
    shutil.copytree(measured, out)
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines()
    changed = edit(lines)
    assert changed != lines  # the edit found what it changes
    journal.write_text("\n".join(changed) + "\n")
    before = journal.read_bytes()
    result = run_here("run", "--resume", str(out), "-q", cwd=tmp_path)
    assert result.returncode == 2
    assert message in one_line(result.stderr)
    assert journal.read_bytes() == before
    plain = run_here("run", "--workloads", "sort", "-o", str(out), *QUICK, cwd=tmp_path)
    assert plain.returncode == 2  # a journal --resume cannot continue is not wiped either
    assert "start afresh with --overwrite" in one_line(plain.stderr)
    assert journal.read_bytes() == before


def test_dollar_signs_in_names_are_drawn_as_text(measured: Path, tmp_path: Path):
    """matplotlib reads $...$ as mathtext: an odd one lost the plot, an even one was typeset."""
    def rename(data: dict) -> None:
        data["records"][0]["workload"] = r"$\frac{a}{$"
        data["records"][1]["workload"] = "$x^2$"
    path = edited(measured, tmp_path / "case", rename)
    result = run_cli("report", str(path), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no plot was left out
    svgs = {p.name: p.read_text() for p in path.parent.glob("*.svg")}
    case = next(text for name, text in svgs.items() if name.startswith("_x_2_"))
    assert "$x^2$" in case  # the name as text, not a typeset x squared
    assert any(r"$\frac{a}{$" in text for text in svgs.values())
    assert_report_written(path.parent)


def test_a_size_with_no_valid_result_still_gets_every_report_file(tmp_path: Path):
    """Every cell fails (an exception; out of memory): the summary's log axis has nothing to
    show. It used to raise 'Data cannot be log-scaled' before report.html was written."""
    workloads = tmp_path / "fault_workloads.py"
    shutil.copy(DATA / "fault_workloads.py", workloads)
    out = tmp_path / "out"
    result = run_cli("run", "--workload-file", str(workloads), "--workloads", "always_raises,oom",
                     "-o", str(out), *QUICK, cwd=tmp_path)
    assert result.returncode == 1  # the cells failed; the run itself went through
    assert result.stderr == "", result.stderr
    assert {r.status for r in load_results(out).records} == {"failed"}
    assert_report_written(out)
    assert not (out / "summary_small.svg").exists()  # nothing valid to summarise
    assert (out / "always_raises_small.svg").exists()  # the failures are marked on their plots


@pytest.mark.parametrize("median", [0.0, None], ids=["zero", "null"])
def test_report_on_ok_records_without_a_positive_median(median, measured: Path, tmp_path: Path):
    def no_median(data: dict) -> None:
        for r in data["records"]:
            r["median_s"] = median
    path = edited(measured, tmp_path / "case", no_median)
    result = run_here("report", str(path), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert_report_written(path.parent)


def test_a_figure_that_cannot_be_drawn_is_left_out_with_a_warning():
    """Whatever else matplotlib refuses costs only its own plot: here a title it cannot typeset
    (the plots escape names with ``mpl.plain``; this one is left raw on purpose)."""
    def broken():
        fig = Figure(figsize=(3, 3))
        fig.subplots().set_title(r"$\frac{a}{$")
        return fig

    with pytest.warns(PlotWarning, match=r"summary_small.svg could not be drawn \(ValueError: "):
        assert drawn(broken, "summary_small.svg") is None
