"""A resumed run measures the code its run began with: ``--against REF`` exports the commit it
recorded again (its tree went with the process that made it), a new commit in the work tree since
the interruption is refused rather than pooled with the old one, and a killed run's exported tree
is removed by the next export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from arraybench.host import git

from .conftest import ROOT, signals_setup, run_cli, wait_for

# Runs of exported git trees, killed and resumed: real workers throughout.
pytestmark = [pytest.mark.slow, pytest.mark.budget(45)]

WORKLOAD = '''from arraybench import workload
import helper


@workload(sizes={"small": 20_000})
def planted(xp, x):
    return helper.work(xp, x)
'''

# Each version of the helper leaves a file named for it where a worker imports it.
HELPER = '''import os
open(os.path.join(os.environ["MARKS"], {version!r}), "w").close()


def work(xp, x):
    return xp.sort(x)
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, version: str) -> str:
    (repo / "helper.py").write_text(HELPER.format(version=version))
    _git(repo, "add", "helper.py", "bench.py")
    _git(repo, "commit", "-qm", version)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(WORKLOAD)
    _git(repo, "init", "-q")
    _commit(repo, "one")
    (tmp_path / "marks").mkdir()
    (tmp_path / "tmp").mkdir()
    return repo


def _env(repo: Path) -> dict[str, str]:
    return {"MARKS": str(repo.parent / "marks"), "TMPDIR": str(repo.parent / "tmp"), "ARRAYBENCH_CONFIG": "",
            "PYTHONPATH": str(ROOT)}


def _start(repo: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "PYTHONPATH")}
    # Three processes of half a second each: after the first replicate is journalled, two more
    # worker starts and their sampling are left for the signal to land in, whatever the load.
    return subprocess.Popen([sys.executable, "-m", "arraybench", "run", "--workload-file", "bench.py",
                             "--backends", "numpy", "--processes", "3", "--max-time", "1.5", "--no-store",
                             "--no-plots", "-o", "out", "-q", *args], cwd=repo, env={**env, **_env(repo)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=signals_setup())


def _replicates(out: Path) -> int:
    try:
        return sum('"type": "replicate"' in line for line in (out / "journal.jsonl").read_text().splitlines())
    except OSError:
        return 0


def _interrupted(repo: Path, *args: str) -> None:
    """A run stopped by SIGTERM once it has measured something, with the rest still to do."""
    proc = _start(repo, *args)
    wait_for(lambda: _replicates(repo / "out") >= 1, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Continue with" in err, err


def _resume(repo: Path) -> subprocess.CompletedProcess:
    return run_cli("run", "--resume", "out", "-q", "--no-store", "--no-plots", cwd=repo, env=_env(repo))


def test_a_run_against_a_ref_resumes_at_the_commit_it_recorded(repo: Path):
    _git(repo, "branch", "base")
    recorded = _git(repo, "rev-parse", "base")
    (repo / "helper.py").write_text(HELPER.format(version="here"))  # the work tree's own version
    _interrupted(repo, "--against", "base")
    # The branch moves on after the interruption: the run goes on measuring the commit it began with.
    other = repo.parent / "other"
    _git(repo, "worktree", "add", "-q", str(other), "base")
    _commit(other, "moved")
    marks = repo.parent / "marks"
    for mark in marks.iterdir():
        mark.unlink()
    done = _resume(repo)
    assert done.returncode == 0, done.stderr
    data = json.loads((repo / "out" / "results.json").read_text())
    assert all(r["status"] == "ok" and len(r["replicates"]) == 3 for r in data["records"]), data["records"]
    assert data["settings"]["variants"]["base"][git.COMMIT] == recorded
    # Workers still to measure imported both versions of the helper again, never the moved branch's.
    assert {m.name for m in marks.iterdir()} <= {"one", "here"} and "one" in {m.name for m in marks.iterdir()}


def test_a_resume_after_a_new_commit_is_refused_not_pooled(repo: Path):
    _interrupted(repo)
    before = (repo / "out" / "journal.jsonl").read_text()
    old = _git(repo, "rev-parse", "HEAD")
    new = _commit(repo, "two")
    done = _resume(repo)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert old[:12] in line and new[:12] in line and "--resume" in line, line
    assert (repo / "out" / "journal.jsonl").read_text() == before
    # Back at the run's commit, it goes on.
    _git(repo, "checkout", "-q", old)
    done = _resume(repo)
    assert done.returncode == 0, done.stderr


def test_a_killed_runs_exported_tree_goes_with_the_next_export(repo: Path, monkeypatch):
    proc = _start(repo, "--against", "HEAD")
    tmp = repo.parent / "tmp"
    wait_for(lambda: _replicates(repo / "out") >= 1, proc)
    proc.kill()
    proc.communicate(timeout=60)
    [left] = [p for p in tmp.iterdir() if p.name.startswith("arraybench-against-")]
    assert (left / "HEAD" / "helper.py").is_file()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    _, tree = git.export("HEAD", repo)
    assert not left.exists() and tree.is_dir()
    assert [p for p in tmp.iterdir() if p.name.startswith("arraybench-against-")] == [tree.parent]


def test_a_branch_named_here_does_not_replace_the_work_trees_side(repo: Path):
    _git(repo, "branch", "here")
    root, tree = git.export("here", repo)
    assert set(git.variants("here", root, tree)) == {"ref-here", "here"}
