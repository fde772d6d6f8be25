"""The conventions users of pytest-benchmark, pyperf, asv and hyperfine rely on: help for a bare
command, --version, one spelling per option, did-you-mean, reference-first comparisons, `last`
meaning the latest complete run."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from arraybench.commands.main import main

from ..conftest import run_here
from ..synthetic import record, results, spread, timed_run


def test_bare_arraybench_prints_help_and_measures_nothing(tmp_path: Path):
    done = run_here(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: arraybench") and "COMMAND" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no ./benchmark_plots: nothing ran


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str, tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as stop:
        main([flag])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and out.startswith("arraybench ") and len(out.split()) == 2


def test_a_run_option_without_a_command_is_refused_with_the_command_to_type(tmp_path: Path):
    done = run_here("--output-dir", "x", cwd=tmp_path)
    assert done.returncode == 2
    assert "arraybench run --output-dir x" in done.stderr and not (tmp_path / "x").exists()


@pytest.mark.parametrize("argv, suggestion", [
    (["run", "--proceses", "2"], "did you mean --processes?"),
    (["compare", "a", "b", "--fail-abve", "10%"], "did you mean --fail-above?"),
    (["history", "--workload-s", "x"], "did you mean --workloads?"),
])
def test_a_mistyped_option_gets_a_did_you_mean(argv, suggestion, tmp_path: Path):
    done = run_here(*argv, cwd=tmp_path)
    assert done.returncode == 2 and suggestion in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_old_spellings_still_work_with_one_line_saying_the_new_one(tmp_path: Path):
    from arraybench.store import open_store

    store = str(tmp_path / "store.sqlite")
    open_store(store, create=True).close()  # an empty store: history reads, never makes one
    done = run_here("history", "--store", store, "--workload", "matmul", "--backend", "numpy",
                    "--fdr", "0.1", "--fail-on-regression", "10%", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warned = done.stderr.strip().splitlines()
    assert warned == [f"arraybench: warning: history {old} is now {new} (the old spelling will go)"
                      for old, new in (("--workload", "--workloads"), ("--backend", "--backends"),
                                       ("--fdr", "--alpha"), ("--fail-on-regression", "--fail-above"))]


def test_every_command_spells_shared_options_alike():
    from arraybench.commands.main import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    spelled = {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}
    for old in ("--workload", "--backend", "--fail-on-regression", "--fdr", "--dtypes"):
        assert not [c for c, options in spelled.items() if old in options], old
    for command in ("run", "sweep", "history", "numerics"):
        assert {"--workloads", "--backends"} <= spelled[command]
    assert {"--fail-above", "--alpha"} <= spelled["history"] & spelled["compare"]
    assert "--dtype" in spelled["numerics"] and "--dtype" in spelled["run"]


def test_results_compare_reads_reference_first_as_the_api_does():
    import arraybench

    slow = results([record("matmul", "numpy", samples=spread(1e-3), replicates=4)])
    fast = results([record("matmul", "numpy", samples=spread(1e-4), replicates=4)])
    # README: `results.compare(earlier)`; the same two runs read the same way from the function.
    method = fast.compare(slow)
    function = arraybench.compare(slow, fast)
    assert [c.verdict for c in method.changes] == [c.verdict for c in function.changes] == ["faster"]
    assert method.changes[0].ratio == pytest.approx(0.1, rel=0.01)


def test_a_change_the_test_does_not_call_says_not_significant_beside_its_ratio():
    from arraybench.analysis.compare import compare

    # Processes that disagree: a large ratio no test can call.
    base = results([record("sort", "numpy", samples=[1e-3] * 10 + [3e-3] * 10, replicates=4)])
    new = results([record("sort", "numpy", samples=[3e-3] * 10 + [1e-3] * 10, replicates=4)])
    c = compare(base, new)
    assert c.changes[0].verdict == "not significant"
    assert "not significant" in c.summary() and "no change" not in c.summary()


def test_last_is_the_latest_complete_run_that_measured_something(tmp_path: Path):
    from arraybench.analysis.history import history
    from arraybench.store import open_store
    from arraybench.model.runs import run_id
    from arraybench.store.refs import run_id_of

    first, second = timed_run(1), timed_run(2, torch_s=3e-3)
    interrupted = timed_run(3, torch_s=9e-3, complete=False)
    nothing = timed_run(4)
    for r in nothing.records:
        r.status, r.replicates = "skipped", []
    with open_store(tmp_path / "store.sqlite") as store:
        for run in (first, second, interrupted, nothing):
            store.add(run)
        assert run_id_of(store, "last") == run_id(second)
        assert run_id_of(store, "last~1") == run_id(first)
        entries, runs = store.entries(workloads=["matmul"])
    found = history(entries, runs)
    assert {p.run.run_id for s in found.series for p in s.points if p.valid} == {run_id(first), run_id(second)}


@pytest.mark.slow
def test_run_compare_fail_above_gates_in_one_command(tmp_path: Path):
    run = ("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "sort", "--sizes", "small",
           "--processes", "2", "--max-time", "0.02", "--min-samples", "2", "-q", "--no-plots",
           "--store", str(tmp_path / "store.sqlite"))
    first = run_here(*run, "-o", str(tmp_path / "a"), "--compare", "last", "--fail-above", "10%",
                     cwd=tmp_path)
    # Nothing to compare with: a gate passes nothing unseen, and the run is kept and stored.
    assert first.returncode == 1 and "nothing to compare with" in first.stderr
    assert (tmp_path / "a" / "results.json").is_file()
    second = run_here(*run, "-o", str(tmp_path / "b"), "--compare", "last", "--fail-above", "1000%",
                      cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    refused = run_here(*run, "-o", str(tmp_path / "c"), "--fail-above", "10%", cwd=tmp_path)
    assert refused.returncode == 2 and "--compare last" in refused.stderr and "--against REF" in refused.stderr
    assert not (tmp_path / "c").exists()


def test_presets_set_the_budgets_and_typed_options_win():
    from arraybench.commands.main import parse
    from arraybench.options import PRESETS, apply_preset
    from arraybench.commands.run import options_from_args

    fast = parse(["run", "--fast"])
    apply_preset(fast)
    opts = options_from_args(fast)
    assert (opts.processes, opts.max_processes, opts.max_time) == (2, 2, PRESETS["fast"]["max_time"])
    rigorous = parse(["run", "--rigorous", "--max-time", "9"])
    apply_preset(rigorous)
    opts = options_from_args(rigorous)
    assert opts.max_time == 9 and opts.rel_ci == PRESETS["rigorous"]["rel_ci"]
    with pytest.raises(Exception, match="not allowed with argument"):
        parse(["run", "--fast", "--rigorous"])


def test_git_state_is_recorded_from_a_work_tree(tmp_path: Path):
    import subprocess

    from arraybench.host import git

    assert git.labels(tmp_path) == {}
    quiet = dict(cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", "-b", "trunk"], **quiet)
    (tmp_path / "f.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "f.py"], **quiet)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], **quiet)
    head = subprocess.run(["git", "rev-parse", "HEAD"], text=True, **quiet).stdout.strip()
    found = git.labels(tmp_path)
    assert head.startswith(found["commit"]) and found["branch"] == "trunk" and found["dirty"] == "no"
    (tmp_path / "f.py").write_text("x = 2\n")
    assert git.labels(tmp_path)["dirty"] == "yes"


def test_a_gpu_run_without_a_gpu_is_one_line_and_writes_nothing(tmp_path: Path):
    import os

    if any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")):
        pytest.skip("this machine has a GPU")
    done = run_here("run", "--devices", "gpu", "--backends", "torch", "--workloads", "sort",
                    "-o", str(tmp_path / "out"), "--store", str(tmp_path / "s.sqlite"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "nothing to run here: --devices gpu: no GPU" in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.sqlite").exists()


def test_compare_history_and_store_list_speak_json(tmp_path: Path):
    import json

    base, new = timed_run(1), timed_run(2, torch_s=4e-3)
    base.save(tmp_path / "base.json")
    new.save(tmp_path / "new.json")
    done = run_here("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "--json",
                    "--fail-above", "10%", cwd=tmp_path)
    doc = json.loads(done.stdout)
    verdicts = {c["backend"]: c["verdict"] for c in doc["cells"]}
    assert verdicts == {"numpy": "not significant", "torch": "slower"}
    assert done.returncode == 1 and doc["gate"]["passed"] is False and "slowdown" in done.stderr
    store = str(tmp_path / "s.sqlite")
    for f in ("base.json", "new.json"):
        assert run_here("store", "import", str(tmp_path / f), "--store", store, cwd=tmp_path).returncode == 0
    listed = run_here("store", "list", "--store", store, "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["started_at"][:10] for r in rows] == ["2026-01-01", "2026-01-02"]
    assert all(r["complete"] and r["measured"] == 2 for r in rows)
    history = run_here("history", "--store", store, "--json", cwd=tmp_path)
    found = json.loads(history.stdout)
    assert history.returncode == 0 and len(found["series"]) == 2
    (step,) = found["steps"]
    assert step["label"] == "PyTorch CPU" and step["change"] == "2.0× slower"


def test_progress_counts_only_cells_that_run_and_draws_its_eta_from_measurements():
    import io

    from rich.console import Console

    from arraybench.model.record import Record
    from arraybench.render.progress import ConsoleReporter, live_line

    shown = Console(file=io.StringIO(), width=120, force_terminal=False)
    reporter = ConsoleReporter(console=shown, cells=4)
    reporter.run_started(total=8)  # 4 cells, 2 processes each
    assert reporter._eta() == "ETA …"  # nothing measured: no guess
    gpu = Record(workload="matmul", size_label="small", size=100, backend="torch", device="gpu",
                 dtype="float64", mode="latency", status="skipped", reason="no GPU on this machine")
    reporter.record_done(gpu)
    assert reporter._cells_text() == "· 0/3 cells"
    assert reporter.progress.tasks[0].total == 6
    done = record("sort", "numpy", samples=spread(1e-3), replicates=2)
    for i, rep in enumerate(done.replicates):
        reporter.replicate_done(done.cell, i, rep)
    reporter.record_done(done)
    assert reporter._cells_text() == "· 1/3 cells" and reporter._eta().startswith("ETA 0:")
    reporter.run_finished(None)
    done.warnings = ["bimodal timings"]
    assert "(1 note under the table)" in live_line(done)


def test_findings_take_a_screenful_and_say_where_the_rest_are():
    import io

    from rich.console import Console

    from arraybench.render.tables import FINDINGS_LINES, print_findings

    found = [f"On case {i}, NumPy CPU is fastest at {i} µs, {i}.5× faster than PyTorch CPU, "
             "for reasons this sentence spells out at some length." for i in range(20)]
    out = io.StringIO()
    print_findings(found, Console(file=out, width=80, color_system=None))
    lines = out.getvalue().strip().splitlines()
    assert lines[0] == "Findings" and len(lines) - 1 <= FINDINGS_LINES
    assert lines[-1].startswith("… ") and "more in findings.md" in lines[-1]
    assert all(len(x) <= 80 for x in lines)
    everything = io.StringIO()
    print_findings(found, Console(file=everything, width=80, color_system=None), limit=None)
    assert everything.getvalue().count("\n- ") == 20


def test_piped_findings_hang_under_their_first_word_and_no_line_ends_in_a_space():
    import io

    from arraybench.render.tables import print_findings
    from arraybench.render.terminal import console

    found = ["On elementwise large (n = 1,000,000), PyTorch CPU is fastest at 2.91 ms, 3.0× faster "
             "than JAX CPU and 4.5× faster than NumPy CPU.", "On sort small, NumPy CPU is fastest."]
    out = io.StringIO()
    print_findings(found, console(file=out, width=50, color_system=None), limit=None)
    lines = out.getvalue().splitlines()
    assert [x for x in lines if x != x.rstrip()] == []  # a log or a diff shows no padding
    bullets = lines[lines.index("Findings") + 1:]
    starts = [x[:2] for x in bullets]
    assert starts.count("- ") == 2 and set(starts) == {"- ", "  "}  # wrapped lines hang
    assert " ".join(x[2:] for x in bullets[:3]) == found[0]  # the first finding, whole, in 3 lines


def test_a_bimodal_note_states_the_pattern_once_with_its_rows():
    from arraybench.render.notes import NoteBook, Row, note_texts

    book = NoteBook()
    rows = [Row(f"case{i} large", "NumPy CPU") for i in range(6)]
    for i, row in enumerate(rows):
        book.add(i, row, [f"bimodal: samples cluster at {i} ms and {2 * i + 3} ms (cause {'xyz'[i % 3]})"])
    quiet = [Row(f"other{i} small", "NumPy CPU") for i in range(7)]
    for row in quiet:
        book.add(row, row, [])
    (brief,) = note_texts(book, brief=True)
    assert brief.text.count("bimodal") == 1 and brief.text.count("cluster") == 1 and not brief.subs
    assert all(r.case in brief.text for r in rows)
    (full,) = note_texts(book)
    assert len(full.subs) == 3  # the files keep each cause


def _docs_script():
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("regenerate_docs", root / "benchmarks" / "regenerate_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return root, module


def test_the_docs_script_replaces_only_its_blocks_and_finds_each_of_them():
    root, script = _docs_script()
    text = "before\n<!-- generated: t -->\nold\nlines\n<!-- end: t -->\nafter\n"
    assert script.replace_block(text, "t", "new") == "before\n<!-- generated: t -->\nnew\n<!-- end: t -->\nafter\n"
    with pytest.raises(ValueError):
        script.replace_block(text + text, "t", "new")
    for path, name in (("README.md", "readme-table"), ("README.md", "readme-findings"),
                       ("README.md", "readme-duration"), ("docs/example-cpu.md", "example-cpu"),
                       ("docs/pytest.md", "pytest-session"), ("docs/workloads.md", "workloads-table")):
        script.replace_block((root / path).read_text(encoding="utf-8"), name, "x")  # there, once
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250 and "The default suite took" in readme


def test_the_docs_script_keeps_readmes_columns_from_a_results_table():
    _, script = _docs_script()
    table = ("| case | library / device | median | 95% CI | vs NumPy | rel. error | status |\n"
             "|:-----|:-----------------|-------:|-------:|---------:|-----------:|:-------|\n"
             "| fft large (n = 1,000,000) | NumPy CPU | 29.1 ms | ±7.6% | baseline | 0.0e+00 | ok \\[1,2\\] |\n"
             "|  | **PyTorch CPU** | **9.68 ms** | ±3.5% | 3.0× faster | 6.2e-16 | ok |\n"
             "| sort small (n = 1,000) | NumPy CPU | 5.9 µs | ±0.9% | baseline | 0.0e+00 | ok |\n")
    assert script._table_rows(table, ("fft large",)) == [
        "| case | library / device | median | 95% CI | vs NumPy | status |",
        "|:-----|:-----------------|-------:|-------:|---------:|:-------|",
        "| fft large (n = 1,000,000) | NumPy CPU | 29.1 ms | ±7.6% | baseline | ok |",
        "|  | **PyTorch CPU** | **9.68 ms** | ±3.5% | 3.0× faster | ok |"]


def test_compare_history_and_store_list_fit_80_columns_without_a_split_word(tmp_path: Path):
    import re

    from arraybench.store import open_store

    store = str(tmp_path / "s.sqlite")
    runs = [timed_run(d, torch="2.4.0" if d < 3 else "2.5.0", torch_s=2e-3 if d < 3 else 3e-3,
                      context={"commit": f"c{d}"}) for d in (1, 2, 3, 4)]
    with open_store(store) as s:
        for run in runs:
            s.add(run)
        ids = [r.run_id for r in s.runs()]
    runs[0].save(tmp_path / "a.json")
    runs[3].save(tmp_path / "b.json")
    # Paths relative to the folder the commands run in: a temporary folder's long name would fold
    # wherever it lands, whatever the table does.
    for argv in (["compare", "a.json", "b.json"], ["history", "--store", "s.sqlite"],
                 ["store", "list", "--store", "s.sqlite"]):
        narrow = run_here(*argv, cwd=tmp_path, env={"COLUMNS": "80"})
        wide = run_here(*argv, cwd=tmp_path, env={"COLUMNS": "250"})
        assert narrow.returncode == wide.returncode == 0, narrow.stderr
        lines = [ln for ln in narrow.stdout.splitlines() if not ln.startswith("store /")]
        assert max(len(ln) for ln in lines) <= 80, argv
        # A word split over two lines leaves pieces the wide output never shows.
        words = set(re.findall(r"\w+", wide.stdout)) | {"Hidden", "fit", "columns", "wider",
                                                           "terminal", "or", "COLUMNS", "160",
                                                           "shows", "them", "json", "gives",
                                                           "everything", "a", "to", "80"}
        # (the store's own path, printed whole, folds where it is longer than a line: its pieces
        # are not a table's words)
        pieces = {w for w in set(re.findall(r"\w+", narrow.stdout)) - words if w not in store}
        assert not pieces, (argv, pieces)
    assert all(i in narrow.stdout for i in ids)  # store list: every run id whole, to copy


def test_a_fitted_table_keeps_its_right_edge_where_richs_measure_is_a_column_short():
    import io

    from rich.console import Console

    from arraybench.render.terminal import Column, Row, fitted_table

    columns = (Column("case"), Column("library / device"), Column("base", True), Column("new", True),
               Column("new/base", True, 4), Column("change", True), Column("p", True, 2),
               Column("q (BH)", True, 3), Column("verdict"))
    rows = [Row(["softplus 10000", "NumPy CPU", "36.6 µs", "1.23 ms", "33.511", "33.51× slower",
                 "0.01", "0.01", "slower"])]
    table, dropped = fitted_table("t", columns, rows, 80)
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(table)
    drawn = [ln.rstrip() for ln in out.getvalue().splitlines()[1:]]
    assert all(ln.endswith(("┓", "┃", "┩", "│", "┘")) for ln in drawn), drawn
    assert dropped[:2] == ["new/base", "q (BH)"]


def test_the_notebook_line_counts_only_cells_that_run():
    pytest.importorskip("IPython")
    from arraybench.model.record import Record
    from arraybench.render.progress import NotebookProgress

    shown = NotebookProgress(cells=4)
    shown.run_started(8)
    gpu = Record(workload="matmul", size_label="small", size=100, backend="torch", device="gpu",
                 dtype="float64", mode="latency", status="skipped", reason="no GPU on this machine")
    shown.record_done(gpu)
    assert (shown.cells_done, shown.total) == (0, 6)
    done = record("sort", "numpy", samples=spread(1e-3), replicates=2)
    for i, rep in enumerate(done.replicates):
        shown.replicate_done(done.cell, i, rep)
    shown.record_done(done)
    assert (shown.cells_done, shown.measured, shown.total) == (1, 2, 6)
    assert "2/6 measurements · 1 cells done" in shown._data("measuring")["text/plain"]


def test_a_warning_from_any_module_of_the_package_is_one_line(capsys):
    """The command line words arraybench's own warnings, from whichever folder raised them, as
    one line; a library's keep Python's form (its file and line say where to look)."""
    import arraybench
    from arraybench.commands.main import _show_warning

    root = Path(arraybench.__file__).parent
    _show_warning(UserWarning("the run did not finish"), UserWarning, str(root / "lifecycle.py"), 99)
    _show_warning(UserWarning("not drawn"), UserWarning, str(root / "render" / "mpl.py"), 111)
    with warnings.catch_warnings(record=True) as shown:  # Python's own form, kept here
        _show_warning(UserWarning("deprecated"), UserWarning, "/elsewhere/numpy/core.py", 7)
    assert capsys.readouterr().err.splitlines() == ["arraybench: warning: the run did not finish",
                                                    "arraybench: warning: not drawn"]
    assert [(str(w.message), w.filename, w.lineno) for w in shown] == [
        ("deprecated", "/elsewhere/numpy/core.py", 7)]
