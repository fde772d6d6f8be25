"""A repository's own configuration runs nothing: a work tree may come from anyone (a colleague's
benchmark folder, a CI artifact with its ``.git``), and git would run the fsmonitor hook, the
clean, smudge and process filters and the hooks its ``.git/config`` names. The git facts a run
records and ``--against``'s export read the repository without any of them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from arraybench.host import git

from .conftest import run_here

WORKLOAD = '''from arraybench import workload


@workload(sizes={"small": 1000})
def planted(xp, x):
    return x + 1
'''


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A committed repository whose configuration (and a file it includes) names an fsmonitor
    hook and filters that each leave MARKER, with a work tree file git must look at again."""
    repo, marker = tmp_path / "repo", tmp_path / "MARKER"
    repo.mkdir()
    quiet = {"cwd": repo, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **quiet)
    (repo / "bench.py").write_text(WORKLOAD)
    (repo / ".gitattributes").write_text("*.py filter=evil\n*.txt filter=other\n")
    (repo / "notes.txt").write_text("x\n")
    subprocess.run(["git", "add", "."], **quiet)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one"], **quiet)
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\ncat\n")
    hook.chmod(0o755)
    for name in ("post-index-change", "reference-transaction", "post-checkout"):  # in its hooksPath
        (tmp_path / name).symlink_to(hook)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = {hook} fsmonitor\n\thooksPath = {tmp_path}\n'
                     f'[filter "evil"]\n\tclean = {hook} clean\n\tsmudge = {hook} smudge\n\trequired = true\n'
                     f'[include]\n\tpath = {tmp_path / "more.config"}\n')
    (tmp_path / "more.config").write_text(f'[filter "other"]\n\tprocess = {hook} process\n'
                                          f'\tsmudge = {hook} smudge-other\n')
    # Stat information that no longer matches the index: git reads (and would clean) the files.
    for name in ("bench.py", "notes.txt"):
        os.utime(repo / name, (1_000_000_000, 1_000_000_000))
    return repo, marker


def test_the_git_facts_of_a_run_run_nothing_the_repository_names(hostile: tuple[Path, Path]):
    repo, marker = hostile
    found = git.labels(repo)
    assert len(found["commit"]) == 12 and found["dirty"] == "no", found
    assert not marker.exists(), marker.read_text()


def test_against_exports_the_blobs_as_stored_and_runs_no_filter(hostile: tuple[Path, Path]):
    repo, marker = hostile
    root, tree = git.export("HEAD", repo)
    assert root == repo and (tree / "bench.py").read_text() == WORKLOAD
    assert (tree / "notes.txt").read_text() == "x\n"
    assert not marker.exists(), marker.read_text()


def test_a_run_against_head_in_a_hostile_repository_runs_nothing_it_names(hostile: tuple[Path, Path]):
    repo, marker = hostile
    done = run_here("run", "--workload-file", "bench.py", "--against", "HEAD", "--backends", "numpy",
                    "--processes", "1", "--max-time", "0.05", "--no-store", "--no-plots", "-o", "out", "-q",
                    cwd=repo, env={"ARRAYBENCH_CONFIG": ""})
    assert done.returncode == 0, done.stderr
    data = json.loads((repo / "out" / "results.json").read_text())
    assert {r["environment"] for r in data["records"]} == {"HEAD", "here"}
    assert not marker.exists(), marker.read_text()
