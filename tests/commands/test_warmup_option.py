"""The warm-up on every surface: ``--warmup`` on ``run`` and ``sweep``, ``warmup`` in
``[tool.arraybench]`` and ``warmup=`` in the API reach the same ``RunOptions.warmup``; a bad value
is one line and exit status 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from arraybench.config import load as project_defaults
from arraybench.commands.main import build_parser, parse
from arraybench.commands.run import options_from_args

from ..conftest import run_here


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_warmup_on_the_command_line_reaches_the_run_options(command: str):
    args = parse([command, "--workloads", "sort", "--warmup", "0.25"])
    assert options_from_args(args).warmup == 0.25
    assert options_from_args(parse([command, "--workloads", "sort", "--warmup", "0"])).warmup == 0.0
    # left out, it is the API's own default
    assert options_from_args(parse([command, "--workloads", "sort"])).warmup == 0.02


def test_warmup_in_the_project_file_is_a_default_the_command_line_overrides(tmp_path: Path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.arraybench]\nwarmup = 0.125\n")
    defaults = project_defaults(_run_parser(), path)
    assert options_from_args(parse(["run"], defaults)).warmup == 0.125
    assert options_from_args(parse(["run", "--warmup", "0.5"], defaults)).warmup == 0.5


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf"])
def test_a_bad_warmup_is_one_line_and_status_2(value: str, tmp_path: Path):
    done = run_here("run", "--warmup", value, cwd=tmp_path, env={"ARRAYBENCH_CONFIG": ""})
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--warmup" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written


@pytest.mark.parametrize("value", ['-0.5', '"soon"', "true"])
def test_a_bad_warmup_in_the_project_file_is_one_line_and_status_2(value: str, tmp_path: Path,
                                                                     monkeypatch):
    (tmp_path / "pyproject.toml").write_text(f"[tool.arraybench]\nwarmup = {value}\n")
    monkeypatch.setenv("ARRAYBENCH_CONFIG", str(tmp_path / "pyproject.toml"))
    done = run_here("run", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "warmup" in done.stderr
    assert not (tmp_path / "benchmark_plots").exists()
