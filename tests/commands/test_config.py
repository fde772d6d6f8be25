"""[tool.arraybench] in pyproject.toml: project defaults, the command line winning, bad files refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from arraybench import load_results

from ..conftest import run_here

PROJECT = """
[project]
name = "someone-elses"

[tool.arraybench]
backends = ["numpy"]
devices = "cpu"
workloads = "sort"
sizes = ["small"]
processes = 1
max-time = 0.05
min_samples = 3
quiet = true
"""


def project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(text)
    return tmp_path


@pytest.mark.slow
def test_the_project_file_sets_defaults_and_the_command_line_wins(tmp_path: Path, monkeypatch):
    folder = project(tmp_path, PROJECT)
    monkeypatch.setenv("ARRAYBENCH_CONFIG", str(folder / "pyproject.toml"))
    done = run_here("run", "-o", "a", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # quiet = true
    res = load_results(folder / "a")
    assert [(r.workload, r.backend, r.size_label) for r in res.records] == [("sort", "numpy", "small")]
    assert res.settings["processes"] == 1 and res.settings["max_time"] == 0.05

    done = run_here("run", "-o", "b", "--backends", "numpy,torch", "--sizes", "100", cwd=folder)
    assert done.returncode == 0, done.stderr
    res = load_results(folder / "b")
    assert {(r.backend, r.size) for r in res.records} == {("numpy", 100), ("torch", 100)}


@pytest.mark.slow
def test_the_nearest_pyproject_is_found_from_a_subfolder(tmp_path: Path, monkeypatch, probed_once):
    folder = project(tmp_path, PROJECT)
    deep = folder / "src" / "deeper"
    deep.mkdir(parents=True)
    monkeypatch.delenv("ARRAYBENCH_CONFIG", raising=False)
    done = run_here("info", cwd=deep)
    assert done.returncode == 0, done.stderr
    assert f"project defaults from {folder / 'pyproject.toml'}" in done.stdout
    assert "max-time = 0.05" in done.stdout and "backends = ['numpy']" in done.stdout


@pytest.mark.parametrize("text, message", [
    ("[tool.arraybench\nbackends = 1", "not valid TOML"),
    ("[tool]\narraybench = 5", "[tool.arraybench] must be a table"),
    ("[tool.arraybench]\nbackend = ['numpy']", "unknown key 'backend' in [tool.arraybench]"),
    ("[tool.arraybench]\nprocesses = 0", "processes: '0' must be at least 1"),
    ("[tool.arraybench]\ndtype = 'float16'", "'float16' is not one of float64, float32"),
    ("[tool.arraybench]\ncold = 'yes'", "cold must be true or false"),
    ("[tool.arraybench]\nmax-time = [true]", "max-time must be a list of names or numbers"),
])
def test_a_bad_project_file_is_one_line_and_exit_2(tmp_path: Path, text: str, message: str,
                                                   monkeypatch):
    folder = project(tmp_path, text)
    monkeypatch.setenv("ARRAYBENCH_CONFIG", str(folder / "pyproject.toml"))
    done = run_here("run", "-o", "x", cwd=folder)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert not (folder / "x").exists()


def test_resume_refuses_an_option_typed_even_when_it_equals_the_default(tmp_path: Path, capsys):
    from arraybench.commands.main import main

    folder = project(tmp_path, "[tool.arraybench]\ndtype = 'float32'\n")
    from arraybench.model import journal
    from arraybench import plan
    from arraybench.model import options
    from arraybench.workloads import REGISTRY

    opts = plan.validate(options.RunOptions(backends=["numpy"], devices=["cpu"], workloads=["sort"],
                                            sizes=["small"], dtype="float32"), REGISTRY)
    out = folder / "run"
    out.mkdir()
    journal.Journal.create(out, opts, plan.build_plan(opts, REGISTRY), {"backends": {}}).close()
    assert main(["run", "--resume", str(out), "--dtype", "float64"]) == 2
    assert "dtype (saved 'float32', given 'float64')" in capsys.readouterr().err


def test_a_preset_in_the_project_file_yields_to_the_same_files_budgets(tmp_path: Path):
    """``fast = true`` beside ``max-time = 3.0``: the file's own max-time holds, the preset fills in
    the rest; ``--fast`` typed wins over the file, and a typed option over either."""
    import argparse

    from arraybench import config
    from arraybench.commands.main import build_parser, parse
    from arraybench.options import apply_preset

    path = project(tmp_path, "[tool.arraybench]\nfast = true\nmax-time = 3.0\n") / "pyproject.toml"
    run_parser = next(a for a in build_parser()._actions
                      if isinstance(a, argparse._SubParsersAction)).choices["run"]
    defaults = config.load(run_parser, path)

    def budgets(*argv: str) -> tuple:
        args = parse(["run", *argv], defaults)
        apply_preset(args)
        return args.max_time, args.min_samples, args.processes

    assert budgets() == (3.0, 5, (2, 2))
    assert budgets("--fast") == (0.25, 5, (2, 2))
    assert budgets("--fast", "--max-time", "1") == (1.0, 5, (2, 2))
