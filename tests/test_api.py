"""The Python API: ``arraybench.run`` and friends, as a script or a notebook uses them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import arraybench
from arraybench import Reporter, Results, UsageError
from arraybench.api import options_from, plan
from arraybench.workloads import REGISTRY

QUICK = dict(devices=["cpu"], processes=1, max_time=0.05, min_samples=3)


@arraybench.workload(sizes={"small": 64})
def api_double(xp, x):
    """2x: a workload defined in this test module, which the workers get by value."""
    return 2.0 * x


@arraybench.workload(sizes={"small": 8})
def api_broken(xp, x):
    return xp.no_such_function(x)  # THE USER'S LINE


class Collecting(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def run_started(self, total):
        self.events.append(("started", total))

    def replicate_done(self, cell, index, replicate):
        self.events.append(("replicate", cell.key, index, replicate.status))

    def record_done(self, record):
        self.events.append(("record", record.key, record.status))

    def run_finished(self, results):
        self.events.append(("finished", len(results.records)))


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory) -> tuple[Results, Collecting, set[str]]:
    private = tmp_path_factory.mktemp("tempdir")  # where the run's temporary folder goes
    saved, tempfile.tempdir = tempfile.tempdir, str(private)
    try:
        reporter = Collecting()
        # Small only: sort's large size added 5 s to this run and nothing its tests look at
        # (sizes=None, each workload's own sizes, is planned below without measuring).
        results = arraybench.run([api_double, "sort", api_broken], backends=["numpy", "torch"],
                                 sizes="small", reporter=reporter, **QUICK)
    finally:
        tempfile.tempdir = saved
    return results, reporter, {str(p) for p in private.iterdir()}


def test_no_sizes_given_plans_each_workloads_own_sizes(registry_restored):
    @arraybench.workload(sizes={"tiny": 8})
    def api_tiny(xp, x):
        return x

    cells = plan(options_from([api_tiny, "sort"], backends="numpy", devices="cpu", sizes=None)).cells
    assert sorted({(c.workload, c.size_label, c.size) for c in cells}) == [
        ("api_tiny", "tiny", 8), ("sort", "large", REGISTRY["sort"].sizes["large"]),
        ("sort", "small", REGISTRY["sort"].sizes["small"])]


def test_run_in_memory_returns_results_and_leaves_no_folder(in_memory):
    results, _, leftover = in_memory
    assert leftover == set()
    assert results.output_dir is None
    by = {(r.workload, r.backend): r for r in results.records}
    assert by[("api_double", "numpy")].status == "ok" and by[("api_double", "torch")].status == "ok"
    assert by[("sort", "torch")].status == "ok"
    assert by[("api_double", "numpy")].replicates[0].samples_s


def test_errors_in_a_workload_shipped_by_value_name_the_users_line(in_memory):
    results, _, _ = in_memory
    broken = [r for r in results.records if r.workload == "api_broken"]
    assert broken and all(r.status == "failed" for r in broken)
    assert all(f"{__file__}:" in r.reason and "# THE USER'S LINE" in r.reason for r in broken)


def test_the_reporter_hears_every_replicate_and_record(in_memory):
    results, reporter, _ = in_memory
    kinds = [e[0] for e in reporter.events]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    measured = [r for r in results.records if r.replicates]
    assert kinds.count("replicate") == sum(len(r.replicates) for r in measured)
    assert {e[1] for e in reporter.events if e[0] == "record"} == {r.key for r in results.records}


def test_results_print_as_a_table_without_samples(in_memory):
    results, _, _ = in_memory
    text = repr(results)
    assert "api_double" in text and "NumPy CPU" in text and "PyTorch CPU" in text
    sample = repr(results.records[0].replicates[0].samples_s[0]) if results.records[0].replicates else "@"
    assert sample not in text and len(text.splitlines()) < 60
    html = results._repr_html_()
    assert html.startswith("<div class='arraybench'>") and "<table" in html and "api_double" in html


def test_results_offer_findings_compare_dataframe_and_plots(in_memory):
    results, _, _ = in_memory
    assert any("api_double" in f or "sort" in f for f in results.findings())
    comparison = results.compare(results)
    assert comparison.counts()["slower"] == 0 and comparison.counts()["faster"] == 0
    df = results.to_dataframe()
    assert set(df["workload"]) == {"api_double", "sort", "api_broken"}
    fig = results.plot("case", workload="sort", size="small")
    assert type(fig).__name__ == "Figure" and fig.axes
    with pytest.raises(ValueError, match="needs workload="):
        results.plot("case")


def test_bad_options_fail_before_anything_runs():
    with pytest.raises(UsageError, match="unknown backend 'numpi'"):
        arraybench.run(["sort"], backends=["numpi"])
    with pytest.raises(TypeError, match="unknown option 'procesess'; did you mean 'processes'"):
        arraybench.run(["sort"], procesess=2)
    with pytest.raises(TypeError, match="unknown option 'output_dri'; did you mean 'output_dir'"):
        arraybench.run(["sort"], output_dri="out")
    with pytest.raises(UsageError, match="no size"):
        arraybench.run(["sort"], sizes=["medium"], backends="numpy")
    with pytest.raises(UsageError, match=r"dtype=\['float32'\]: a run measures one dtype, one of float64"):
        arraybench.run(["sort"], dtype=["float32"], backends="numpy")
    for none in ([], " , "):  # numerics takes several, but not none
        with pytest.raises(UsageError, match="no dtype selected; valid: float64, float32"):
            arraybench.numerics(dtype=none)


def test_run_into_a_folder_writes_every_file_and_resume_finishes_nothing_twice(tmp_path: Path):
    out = tmp_path / "run"
    first = arraybench.run(["sort"], backends="numpy", sizes="small", output_dir=out, **QUICK)
    assert first.output_dir == out and (out / "report.html").is_file()
    assert arraybench.load_results(out).records[0].median_s == first.records[0].median_s
    again = arraybench.resume(out)  # complete: nothing measured, files rewritten from the journal
    assert [r.median_s for r in again.records] == [r.median_s for r in first.records]


def test_compare_takes_results_or_folders(tmp_path: Path):
    out = tmp_path / "run"
    res = arraybench.run(["sort"], backends="numpy", sizes="small", output_dir=out, **QUICK)
    assert arraybench.compare(out, res).counts()["negligible"] == 1  # one process, the same run


def test_the_session_offers_an_executor_what_it_may_ask_and_imports_no_executor(tmp_path: Path):
    """The API picks the executor; the session knows it only as ``executors.session.Executor``."""
    import ast
    import inspect

    from arraybench.executors import session
    from arraybench.executors.local import LocalExecutor
    from arraybench.model.journal import Journal
    from arraybench.model.options import RunOptions

    options = RunOptions()
    live = session.Session(session.RunState([], options), tmp_path,
                           Journal.create(tmp_path, options, [], {}), {})
    live.sink.close()
    asked = [n for n in vars(session.RunHandle) if not n.startswith("_")]
    assert {"todo", "keep", "mark_unavailable", "stop_requested", "cells"} <= set(asked)
    for name in asked:
        theirs, ours = getattr(session.RunHandle, name), getattr(live, name)
        if callable(theirs):
            assert inspect.signature(ours) == inspect.signature(theirs.__get__(live)), name
        else:  # a property of the protocol: there on the session
            assert not callable(ours), name
    for name in ("plan", "run", "close"):
        assert inspect.signature(getattr(LocalExecutor, name)) == inspect.signature(
            getattr(session.Executor, name)), name
    tree = ast.parse(Path(session.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    # The session lives beside the executors: its imports of them are relative to executors/.
    assert imported & {"local", "ray", "ray_agent", "executors.local", "executors.ray"} == set()


def test_an_empty_list_of_workloads_is_refused_not_the_whole_suite(tmp_path):
    """``workloads=[]`` (a filter that matched nothing) must not measure every built-in workload."""
    from arraybench.errors import UsageError

    with pytest.raises(UsageError, match=r"workloads: none given \(an empty list\)"):
        arraybench.run(workloads=[], backends="numpy", output_dir=tmp_path / "out", store=False)
    assert not (tmp_path / "out").exists()


def test_results_carry_each_workloads_code_fingerprint(in_memory):
    from arraybench.workloads.trust import fingerprint

    results, _, _ = in_memory
    code = results.environment["workload_code"]
    assert set(code) == {"api_double", "sort", "api_broken"}
    assert code["api_double"] == fingerprint(api_double) and code["sort"] != code["api_double"]


def test_the_type_stub_names_each_public_name_from_its_home():
    # Type checkers read the stub, never ``_HOMES``: a stub importing from a module that moved
    # (``model.reporter``, since folded into ``model.journal``) leaves its name unresolved for them.
    import ast

    stub = ast.parse((Path(arraybench.__file__).parent / "__init__.pyi").read_text())
    imported = {a.asname or a.name: node.module for node in stub.body if isinstance(node, ast.ImportFrom)
                and node.level == 1 for a in node.names}
    defined = {node.name for node in stub.body if isinstance(node, ast.FunctionDef)}
    assert {name: home for name, home in imported.items() if home != arraybench._HOMES.get(name)} == {}
    assert set(arraybench._HOMES) - set(imported) - defined == set()


def test_the_version_is_the_one_a_run_records_even_from_a_checkout_never_installed(monkeypatch, capsys):
    # On PYTHONPATH, without distribution metadata, ``--version`` said "unknown" while results.json
    # and the doctor said "0.1.0+checkout".
    import importlib.metadata
    import tomllib

    from arraybench.commands.main import main
    from arraybench.host.machine import collect

    assert arraybench.__version__ == importlib.metadata.version("arraybench")

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    project = tomllib.loads((Path(arraybench.__file__).parents[1] / "pyproject.toml").read_text())["project"]
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.split() == ["arraybench", f"{project['version']}+checkout"]
    assert arraybench.__version__ == collect()["arraybench"] == f"{project['version']}+checkout"
