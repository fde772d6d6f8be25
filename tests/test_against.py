"""The same-session baseline: ``run --against REF`` measures REF's code beside the work tree's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from arraybench.errors import UsageError
from arraybench.host import git

from .conftest import run_cli, run_here

WORKLOAD = '''from arraybench import workload
import helper


@workload(sizes={{"small": 100_000}})
def planted(xp, x):
    return helper.work(xp, x, {k})
'''

HELPER = '''def work(xp, x, k):
    y = x
    for _ in range(k):
        y = xp.sqrt(xp.abs(y) + 1.0)
    return y
'''


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree whose committed helper does 1 step, and whose work tree's does 4."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(WORKLOAD.format(k=1), encoding="utf-8")
    (repo / "helper.py").write_text(HELPER, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "bench.py").write_text(WORKLOAD.format(k=4), encoding="utf-8")
    return repo


@pytest.mark.slow
def test_a_slowdown_in_the_work_tree_fails_the_gate_against_the_committed_code(repo: Path):
    done = run_cli("run", "--workload-file", "bench.py", "--against", "HEAD", "--backends", "numpy",
                   "--processes", "3", "--max-time", "0.3", "--allocator", "reused", "--no-store", "--no-plots",
                   "--output-dir", str(repo / "out"), "--fail-above", "10%", "-q", cwd=repo)
    data = json.loads((repo / "out" / "results.json").read_text())
    [pair] = data["pairs"]
    if done.returncode == 0:
        # Only where other processes loaded the rounds, and the quiet ones could not bear the
        # loaded ones out, may the gate leave a 4x slowdown undecided; it then says so and why.
        assert pair["verdict"] == "undecided" and "rounds under other processes' load" in pair["method"]
        assert "undecided" in done.stderr and "not judged: " in done.stderr, done.stderr
        return
    assert done.returncode == 1, done.stderr
    assert "NumPy CPU [here] is" in done.stderr and "the time of NumPy CPU [HEAD]" in done.stderr
    here_first = pair["a_label"].endswith("[here]")
    ratio = pair["ratio"] if here_first else 1 / pair["ratio"]
    # Four steps against one: the committed code ran in REF's workers, the work tree's in the others.
    assert ratio > 2 and pair["verdict"] == ("slower" if here_first else "faster")
    assert {r["environment"] for r in data["records"]} == {"HEAD", "here"}


def test_against_outside_a_git_work_tree_or_with_no_such_ref_is_one_line(tmp_path: Path, repo: Path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    with pytest.raises(UsageError, match="is not in a git work tree"):
        git.export("HEAD", nowhere)
    with pytest.raises(UsageError, match="no such commit, branch or tag"):
        git.export("no-such-branch", repo)


def test_a_refs_label_and_its_files_are_found_where_the_work_trees_are():
    assert git.label_for("HEAD~1") == "HEAD-1" and git.label_for("origin/main") == "origin-main"
    mapping = f"/work/tree{os.pathsep}/tmp/ref"
    assert git.mapped("/work/tree/src/bench.py", mapping) == "/tmp/ref/src/bench.py"
    assert git.mapped("/elsewhere/bench.py", mapping) == "/elsewhere/bench.py"
    assert git.mapped("/work/treehouse/x.py", mapping) == "/work/treehouse/x.py"


def test_a_gate_across_an_ignored_build_artifact_only_the_work_tree_has_is_refused(tmp_path: Path):
    """A generated ``_version.py`` and a compiled extension, ignored: REF's export lacks them, so
    the two sides differ by more than their code, and a gate across them is refused."""
    repo = tmp_path / "repo"
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / ".venv" / "lib").mkdir(parents=True)
    (repo / "bench.py").write_text(WORKLOAD.format(k=1), encoding="utf-8")
    (repo / "helper.py").write_text(HELPER, encoding="utf-8")
    (repo / "pkg" / "__init__.py").write_text("from ._version import version\n")
    (repo / ".gitignore").write_text("_version.py\n*.so\n__pycache__/\n.venv/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    for artifact in ("pkg/_version.py", "pkg/_fast.cpython-311-x86_64-linux-gnu.so",
                     "pkg/__pycache__/__init__.cpython-311.pyc", ".venv/lib/site.py"):
        (repo / artifact).write_text("version = '1'\n")
    done = run_here("run", "--workload-file", "bench.py", "--against", "HEAD", "--backends", "numpy",
                    "--no-store", "--output-dir", "out", "--fail-above", "10%", "-q", cwd=repo,
                    env={"ARRAYBENCH_CONFIG": ""})
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "--fail-above across --against HEAD" in line and "pkg/_version.py" in line, line
    assert not (repo / "out").exists()
    # Bytecode and a virtual environment at the top are no part of the code compared.
    root, tree = git.export("HEAD", repo)
    assert git.lacking(root, tree) == ["pkg/_fast.cpython-311-x86_64-linux-gnu.so", "pkg/_version.py"]
