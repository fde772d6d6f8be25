"""A project file chooses no code for the user unless it is the user's own: ``[tool.arraybench]``
in a ``pyproject.toml`` another user owns (or others may write), in any parent folder, may not
set a workload file, an interpreter, environment variables or a cluster; and ``trust_folder`` is
never taken from a file. Each case plants code that would leave a marker file."""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from arraybench import config
from arraybench.commands.main import build_parser, parse

from ..conftest import run_here

OTHER_UID = 65534  # nobody

# What the libraries are does not change with the project file: ``info`` asks them once.
pytestmark = pytest.mark.usefixtures("probed_once")


def _evil(tmp_path: Path) -> tuple[Path, Path]:
    """An executable and a workload file that each leave ``MARKER`` when run."""
    marker = tmp_path / "MARKER"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    module = tmp_path / "evil_workloads.py"
    module.write_text(f"open({str(marker)!r}, 'w')\n")
    return marker, script


def _tree(tmp_path: Path, table: str, *, uid: int | None = None, mode: int = 0o644) -> Path:
    """A parent folder holding the project file, and the folder below it where the user runs."""
    (tmp_path / "pyproject.toml").write_text("[tool.arraybench]\n" + table)
    if uid is not None:
        os.chown(tmp_path / "pyproject.toml", uid, -1)
    (tmp_path / "pyproject.toml").chmod(mode)
    below = tmp_path / "work" / "here"
    below.mkdir(parents=True)
    return below


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("arraybench: error: "), stderr
    return lines[0]


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="giving a file to another user takes root")


@needs_root
@pytest.mark.parametrize("key", ["python", "variant", "workload-file", "workload_file"])
def test_another_users_project_file_in_a_parent_folder_runs_no_code(tmp_path: Path, key: str):
    marker, script = _evil(tmp_path)
    module = tmp_path / "evil_workloads.py"
    value = {"python": f'["x={script}"]', "variant": f'["x:PYTHONPATH={tmp_path}"]',
             "workload-file": f'["{module}"]', "workload_file": f'["{module}"]'}[key]
    below = _tree(tmp_path, f"{key} = {value}\n", uid=OTHER_UID)
    done = run_here("run", "--workloads", "sort", "--sizes", "8", "--backends", "numpy",
                    "--processes", "1", "-o", "out", "-q", "--no-store", cwd=below,
                    env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert str(tmp_path / "pyproject.toml") in line and f"uid {OTHER_UID}" in line and key in line
    assert not marker.exists() and not (below / "out").exists()


@needs_root
def test_another_users_project_file_still_sets_harmless_defaults(tmp_path: Path):
    below = _tree(tmp_path, 'max-time = 0.07\nbackends = ["numpy"]\n', uid=OTHER_UID)
    done = run_here("info", cwd=below, env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 0, done.stderr
    assert "max-time = 0.07" in done.stdout


@pytest.mark.parametrize("mode", [0o666, 0o664])
def test_a_project_file_others_may_write_runs_no_code(tmp_path: Path, mode: int):
    marker, script = _evil(tmp_path)
    below = _tree(tmp_path, f'python = ["x={script}"]\n', mode=mode)
    done = run_here("run", "--sizes", "8", "-o", "out", "-q", "--no-store", cwd=below,
                    env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 2, done.stderr
    assert "may be written by other users" in _one_error_line(done.stderr)
    assert not marker.exists()
    # The user's own file, writable by the user alone, is the user's choice: taken.
    (tmp_path / "pyproject.toml").chmod(stat.S_IRUSR | stat.S_IWUSR)
    done = run_here("info", cwd=below, env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 0 and f"python = ['x={script}']" in done.stdout, done.stderr


def test_trust_folder_in_a_project_file_is_ignored_and_grants_nothing(tmp_path: Path):
    """A received, unfinished folder whose journal names a workload file: a file's
    ``trust_folder = true`` neither lets --resume import it nor stops a plain run."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w')\n")
    below = _tree(tmp_path, "trust_folder = true\n")
    out = below / "received"
    out.mkdir()
    header = {"type": "header", "tool": "arraybench", "version": 2,
              "options": {"workloads": ["evil"], "workload_files": [str(evil)], "backends": ["numpy"],
                          "devices": ["cpu"]},
              "cells": [{"workload": "evil", "size": 8, "size_label": "small", "backend": "numpy",
                         "device": "cpu", "dtype": "float64", "mode": "latency"}],
              "environment": {}}
    (out / "journal.jsonl").write_text(json.dumps(header) + "\n")
    refused = run_here("run", "--resume", str(out), "-q", "--no-store", cwd=below,
                       env={"ARRAYBENCH_CONFIG": None})
    assert refused.returncode == 2, refused.stderr
    assert f"--workload-files {evil}" in refused.stderr.splitlines()[-1]
    assert "trust_folder is ignored" in refused.stderr
    assert not marker.exists()
    # A plain command is not stopped by the key: it says once that it is ignored.
    done = run_here("info", cwd=below, env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 0, done.stderr
    assert "trust_folder is ignored" in done.stderr and "sets no option" in done.stdout
    # ... and a plain run's options carry no trust (it was refused as --trust-folder without --resume).
    run_parser = next(a for a in build_parser()._actions
                      if isinstance(a, argparse._SubParsersAction)).choices["run"]
    args = parse(["run", "-o", "x"], config.load(run_parser, tmp_path / "pyproject.toml"))
    assert args.trust_folder is False


@needs_root
@pytest.mark.parametrize("key", ["against", "store", "output-dir", "output_dir", "overwrite"])
def test_another_users_project_file_chooses_neither_the_code_nor_where_results_go(tmp_path: Path, key: str):
    """``against`` would measure a branch's code, ``store`` send the run to (and take baselines
    from) a store of the file's choosing, ``output-dir`` and ``overwrite`` decide where results go
    and what is removed: from a file another user owns above the repository each is refused."""
    theirs = tmp_path / "theirs"
    value = {"against": '"pr-42"', "store": f'"{theirs / "other.sqlite"}"', "output-dir": f'"{theirs}"',
             "output_dir": f'"{theirs}"', "overwrite": "true"}[key]
    below = _tree(tmp_path, f"{key} = {value}\n", uid=OTHER_UID)
    # The repository below it has a branch whose code leaves MARKER in any Python that starts on it.
    marker = tmp_path / "MARKER"
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], cwd=below, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], cwd=below, check=True)
    subprocess.run([*git, "checkout", "-q", "-b", "pr-42"], cwd=below, check=True)
    (below / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w')\n")
    subprocess.run([*git, "add", "sitecustomize.py"], cwd=below, check=True)
    subprocess.run([*git, "commit", "-qm", "pr"], cwd=below, check=True)
    subprocess.run([*git, "checkout", "-q", "-"], cwd=below, check=True)
    for argv in (["run", "--workloads", "sort", "--sizes", "8", "--backends", "numpy", "--processes", "1",
                  "--max-time", "0.05", "--no-plots", "-q"], ["compare", "last"]):
        done = run_here(*argv, cwd=below, env={"ARRAYBENCH_CONFIG": None})
        assert done.returncode == 2, done.stderr
        line = _one_error_line(done.stderr)
        assert str(tmp_path / "pyproject.toml") in line and f"uid {OTHER_UID}" in line and key in line
    assert not marker.exists() and not theirs.exists() and not (below / "benchmark_plots").exists()
    # The same keys from the user's own file are the user's choice: taken.
    os.chown(tmp_path / "pyproject.toml", os.getuid(), -1)
    done = run_here("info", cwd=below, env={"ARRAYBENCH_CONFIG": None})
    assert done.returncode == 0 and f"{key} = " in done.stdout, done.stderr
