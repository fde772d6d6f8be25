"""A finished run is never lost, a stored run is named like a folder, and
the small snags (unknown names, a --param given twice, `store = false`, history's files).

One pair of real runs (NumPy, sort, one process: seconds) serves the whole module.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

import arraybench
from arraybench import config
from arraybench.commands import main as cli
from arraybench.commands.run import run_store_choice
from arraybench.errors import UsageError, unknown_name
from arraybench.outdir import clear_previous
from arraybench.render.files import MANIFEST_NAME, manifest
from arraybench.store import open_store
from arraybench.store.refs import run_id_of

from ..conftest import FAST, run_cli, run_here
from ..synthetic import timed_run

RUN = ("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "sort", "--sizes", "16", *FAST)


class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = str(root / "store.sqlite")
        self.first = root / "first"
        self.second = root / "second"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    """Two finished runs, one after the other, in a store of their own."""
    r = Runs(tmp_path_factory.mktemp("kept"))
    for out in (r.first, r.second):
        # A process each, not run_here: a run's start is stored to the second, and two runs
        # started within one second are ordered by their ids, not by when they ran.
        done = run_cli(*RUN, "-o", str(out), "--store", r.store, cwd=r.root)
        assert done.returncode == 0, done.stderr
    return r


# -- item 4: runs are never lost ---------------------------------------------------------------------
def _cli(argv: list[str], capsys, monkeypatch, cwd: Path) -> tuple[int, str, str]:
    """The command line in this process (no run is started): status, stdout, stderr."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("ARRAYBENCH_CONFIG", "")
    monkeypatch.setenv("COLUMNS", "200")  # never the caller's terminal: the tables' cells whole
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_a_plain_run_into_a_finished_run_is_refused_and_keeps_it(runs: Runs, capsys, monkeypatch):
    before = {p.name: p.read_bytes() for p in runs.first.iterdir() if p.is_file()}
    status, _, err = _cli([*RUN, "-o", str(runs.first), "--store", runs.store], capsys, monkeypatch,
                          runs.root)
    assert status == 2
    (line,) = err.strip().splitlines()
    assert "holds a finished run" in line and "--overwrite" in line and "--output-dir" in line
    assert {p.name: p.read_bytes() for p in runs.first.iterdir() if p.is_file()} == before
    # From Python, the same refusal in the API's words.
    with pytest.raises(UsageError, match=r"output_dir.*overwrite=True"):
        arraybench.run(["sort"], backends="numpy", devices="cpu", sizes=[16], processes=1,
                       output_dir=runs.first, store=False)


def test_overwrite_removes_what_the_earlier_run_wrote_and_only_that(runs: Runs, tmp_path: Path):
    out = tmp_path / "reused"
    done = run_here(*RUN, "-o", str(out), "--no-store", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert manifest(out) == ["sort_16.svg"]
    # The user's own files beside the run, and a plot of theirs the manifest does not list.
    (out / "notes.txt").write_text("mine")
    (out / "mine.svg").write_text("<svg/>")
    (out / "logs" / "app.log").write_text("my application's log")
    earlier_logs = sorted(p.name for p in (out / "logs").glob("*-p*.log"))
    assert earlier_logs == ["numpy-cpu-p0.log"]
    (out / "logs" / "numpy-cpu-p0.log").write_text("the earlier run's worker")
    again = run_here("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "matmul",
                     "--sizes", "16", *FAST, "-o", str(out), "--no-store", "--overwrite", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert not (out / "sort_16.svg").exists()  # no stale plot of the earlier run
    assert (out / "matmul_16.svg").is_file() and manifest(out) == ["matmul_16.svg"]
    assert (out / "notes.txt").read_text() == "mine" and (out / "mine.svg").is_file()
    assert (out / "logs" / "app.log").read_text() == "my application's log"
    assert "earlier" not in (out / "logs" / "numpy-cpu-p0.log").read_text()  # the new run's own
    assert [r.workload for r in arraybench.load_results(out).records] == ["matmul"]


def test_overwrite_of_a_folder_that_never_held_a_run_removes_nothing(tmp_path: Path):
    """The user's files under the names a run uses, with a manifest naming their image: no
    journal and no results.json, so none of them is the earlier run's."""
    out = tmp_path / "mine"
    (out / "logs").mkdir(parents=True)
    files = {"workloads.pickle": "my pickle", "cluster.jsonl": "{}", "figure.png": "png",
             MANIFEST_NAME: "figure.png\n", "logs/app.log": "log", "logs/numpy-cpu-p0.log": "log"}
    for name, text in files.items():
        (out / name).write_text(text)
    done = run_here(*RUN, "-o", str(out), "--no-store", "--no-plots", "--overwrite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert all((out / name).read_text() == text for name, text in files.items() if name != "logs/numpy-cpu-p0.log")
    assert [r.workload for r in arraybench.load_results(out).records] == ["sort"]


def test_a_manifest_names_only_plots_in_the_folder_itself(tmp_path: Path):
    out = tmp_path / "run"
    out.mkdir()
    outside = tmp_path / "outside.svg"
    outside.write_text("keep")
    (out / "keep.md").write_text("keep")
    (out / "a_16.svg").write_text("<svg/>")
    (out / "sub.svg").mkdir()  # a folder is never removed
    (out / "journal.jsonl").write_text("{}\n")  # a run was here: its manifest is its own
    (out / MANIFEST_NAME).write_text(f"a_16.svg\n../outside.svg\n{outside}\nkeep.md\n.arraybench.lock\n"
                                     "sub.svg\n")
    assert manifest(out) == ["a_16.svg", "sub.svg"]
    removed = clear_previous(out)
    assert removed == ["a_16.svg", MANIFEST_NAME]
    assert outside.read_text() == "keep" and (out / "keep.md").is_file() and (out / "sub.svg").is_dir()


def test_compare_report_and_history_take_a_stored_run(runs: Runs, tmp_path: Path, capsys, monkeypatch):
    with open_store(runs.store) as store:
        first_id, second_id = (r.run_id for r in store.runs())
    # `last` is the latest run of the folder the runs were made in; elsewhere, machine:last.
    both = run_here("compare", "last~1", "last", "--store", runs.store, cwd=runs.root)
    assert both.returncode == 0, both.stderr
    elsewhere = run_here("compare", "last~1", "last", "--store", runs.store, cwd=tmp_path)
    assert elsewhere.returncode == 2 and "machine:last~1 counts every project's" in elsewhere.stderr
    assert "sort 16" in both.stdout and "geometric mean of new/base over 1 cell" in both.stdout
    status, out, _ = _cli(["compare", first_id[:8], str(runs.second), "--store", runs.store], capsys,
                          monkeypatch, tmp_path)
    assert status == 0 and "sort 16" in out
    status, _, err = _cli(["compare", "machine:last~5", "last", "--store", runs.store], capsys, monkeypatch,
                          tmp_path)
    assert status == 2 and "holds 2 complete runs from this machine" in err
    status, _, err = _cli(["compare", "no-such-thing", "last", "--store", runs.store], capsys,
                          monkeypatch, tmp_path)
    assert status == 2 and "no-such-thing: no such file; nor does it name a stored run" in err
    # report: a stored run gets a folder named after it, in the current folder.
    status, _, _ = _cli(["report", "machine:last~1", "--store", runs.store, "--no-plots", "-q"], capsys,
                        monkeypatch, tmp_path)
    assert status == 0 and (tmp_path / f"report-{first_id}" / "report.html").is_file()
    # history: that run's cells up to it; no file written unless asked.
    before = sorted(os.listdir(tmp_path))
    status, out, _ = _cli(["history", "machine:last~1", "--store", runs.store], capsys, monkeypatch, tmp_path)
    assert status == 0 and sorted(os.listdir(tmp_path)) == before
    assert "add --output-dir DIR" in out and "1 series over 1 run" in out
    # The API names stored runs the same way.
    assert len(arraybench.compare("machine:last~1", second_id, store=runs.store).changes) == 1


def test_last_counts_one_machines_runs_and_an_id_is_never_a_pattern(tmp_path: Path):
    location = str(tmp_path / "s.sqlite")
    with open_store(location) as store:
        for day, host in ((1, "host-a"), (2, "host-b"), (3, "host-a")):
            store.add(timed_run(day, host=host))
        runs = store.runs()
        a_machine = runs[0].machine_id
        assert run_id_of(store, "last", a_machine) == runs[2].run_id
        assert run_id_of(store, "last~1", a_machine) == runs[0].run_id
        assert run_id_of(store, "last") == runs[2].run_id  # no machine: every run counts
        with pytest.raises(UsageError, match="names no stored run"):
            run_id_of(store, "%")


# -- item 6: the snags -----------------------------------------------------------------------------
def test_unknown_names_get_the_close_one_and_never_the_internal_ones():
    assert unknown_name("workload", "matmull", ["matmul", "sort"]) == \
        "unknown workload 'matmull'; did you mean 'matmul'?"
    many = [f"w{i}" for i in range(30)]
    text = unknown_name("workload", "zzz", many, more="see `arraybench list`")
    assert text.endswith("w11 and 18 more (see `arraybench list`)")


@pytest.mark.parametrize("argv, message", [
    (["run", "--workloads", "matmull"], "unknown workload 'matmull'; did you mean 'matmul'?"),
    (["run", "--backends", "pytorch"], "unknown backend 'pytorch'; did you mean 'torch'?"),
    (["run", "--devices", "cpus"], "unknown device 'cpus'; did you mean 'cpu'?"),
    (["run", "--mode", "latncy"], "unknown mode 'latncy'; did you mean 'latency'?"),
    (["runn"], "unknown command 'runn'; did you mean 'run'?"),
    (["run", "--param", "tsteps=10", "--param", "tsteps=20"],
     "tsteps is given twice (tsteps=10, then tsteps=20); give it once"),
])
def test_a_bad_name_is_one_line_that_suggests(argv, message, capsys, monkeypatch, tmp_path):
    status, _, err = _cli(argv, capsys, monkeypatch, tmp_path)
    assert status == 2 and message in err and err.count("\n") == 1, err
    assert "ceiling_" not in err


def test_a_workload_typo_lists_no_internal_workload(capsys, monkeypatch, tmp_path):
    status, _, err = _cli(["run", "--workloads", "pairwise"], capsys, monkeypatch, tmp_path)
    assert status == 2 and "unknown workload 'pairwise'; valid: " in err and "ceiling_" not in err


def _run_args(tmp_path: Path, text: str, argv: list[str]) -> argparse.Namespace:
    project = tmp_path / "pyproject.toml"
    project.write_text("[tool.arraybench]\n" + text)
    run_parser = next(a for a in cli.build_parser()._actions
                      if isinstance(a, argparse._SubParsersAction)).choices["run"]
    return cli.parse(["run", *argv], config.load(run_parser, project))


def test_store_false_in_the_project_file_stores_nothing_and_typed_wins(tmp_path: Path):
    assert run_store_choice(_run_args(tmp_path, "store = false\n", [])) is False
    assert run_store_choice(_run_args(tmp_path, "store = true\n", [])) is True
    assert run_store_choice(_run_args(tmp_path, "store = false\n", ["--store", "x.sqlite"])) == "x.sqlite"


def test_params_typed_replace_the_project_files_and_a_name_twice_there_is_refused(tmp_path: Path):
    from arraybench.commands.run import options_from_args

    args = _run_args(tmp_path, 'param = ["tsteps=3", "alpha=2"]\n', ["--param", "tsteps=4"])
    assert options_from_args(args).params == {"tsteps": "4"}
    args = _run_args(tmp_path, 'param = ["tsteps=3", "tsteps=5"]\n', [])
    with pytest.raises(UsageError, match="tsteps is given twice"):
        options_from_args(args)


def test_the_sweep_axis_says_what_n_counts_for_each_workload(registry_restored):
    from arraybench.render.plots import size_axis_label

    @arraybench.workload
    def cumsum_axis(xp, x):
        return xp.cumsum(x)

    assert size_axis_label("matmul") == "size n: the side of each n x n matrix"
    assert size_axis_label("cumsum_axis") == "size n: elements of each input"
    assert "matrix" not in size_axis_label("sort")
    assert size_axis_label("not_known_here") == "size n"


# -- item 5: the notebook's pieces, without a kernel (tests/test_notebook.py has the real one) -------
def test_a_comparison_is_one_line_a_table_and_a_row_per_cell():
    from ..synthetic import record, results, spread

    base = results([record("matmul", "numpy", samples=spread(1e-3), replicates=3),
                    record("sort", "numpy", samples=spread(1e-4), replicates=3)])
    new = results([record("matmul", "numpy", samples=spread(2e-3), replicates=3),
                   record("fft", "numpy", samples=spread(1e-4), replicates=3)])
    c = new.compare(base)
    assert repr(c) == ("<arraybench Comparison of 1 cell: 1 slower, 1 only in base, 1 only in new; "
                       "geometric mean new/base 2.000 (2.0× slower)>")
    assert "matmul small" in c.table() and str(c) == c.table()
    page = c._repr_html_()
    assert page.count("<tr>") == 2 and "only in base: sort small" in page and "2.0× slower" in page
    rows = c.rows()
    assert [(r["workload"], r["verdict"]) for r in rows] == [
        ("matmul", "slower"), ("sort", "only in base"), ("fft", "only in new")]
    frame = c.to_dataframe()
    assert list(frame["workload"]) == ["matmul", "sort", "fft"] and frame["ratio"][0] == pytest.approx(2.0)


def test_findings_stay_a_list_and_progress_is_on_where_asked():
    from arraybench.api import reporter_for
    from arraybench.render.progress import ConsoleReporter
    from arraybench.render.report import Findings
    from arraybench.model.journal import Reporter

    found = Findings(["NumPy wins.", "PyTorch <b>loses</b>."])
    assert found == ["NumPy wins.", "PyTorch <b>loses</b>."] and found[1].startswith("PyTorch")
    assert str(found) == repr(found) == "- NumPy wins.\n- PyTorch <b>loses</b>."
    assert "<li>PyTorch &lt;b&gt;loses&lt;/b&gt;.</li>" in found._repr_html_()
    # Outside a notebook: on stderr unless asked to be quiet; a reporter given is used as it is.
    assert reporter_for(None, False) is None
    assert isinstance(reporter_for(None, None, 3), ConsoleReporter)
    assert isinstance(reporter_for(None, True, 3), ConsoleReporter)
    own = Reporter()
    assert reporter_for(own, False) is own
