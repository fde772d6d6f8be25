"""Runs belong to a project: ``last`` is the latest run of the folder (git work tree) the user stands
in, ``machine:last`` the latest of every project on this machine, and a comparison names both runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arraybench.host import git
from arraybench.model.runs import run_id
from arraybench.store import StoreError, open_store
from arraybench.store.refs import load_run, run_line, this_machine

from ..conftest import run_here
from ..synthetic import timed_run

ONE_CELL = ("--backends", "numpy", "--devices", "cpu", "--workloads", "sort", "--sizes", "small",
            "--processes", "1", "--max-time", "0.05", "--min-samples", "3", "--no-plots")


def _git_repo(folder: Path) -> Path:
    """``folder`` as a git work tree with one commit, and a subfolder to stand in."""
    (folder / "sub").mkdir(parents=True)
    (folder / "README").write_text("a project\n")
    quiet = {"capture_output": True, "check": True, "cwd": folder}
    subprocess.run(["git", "init", "-q"], **quiet)
    subprocess.run(["git", "add", "README"], **quiet)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], **quiet)
    return folder


def _stored(store: Path, day: int, project: str | None) -> str:
    """A run of this machine, started on ``day``, from ``project`` (None: stored before projects
    were recorded); its id."""
    res = timed_run(day, torch_s=1e-3 * (1 + day / 100))  # each a distinct run
    res.environment["machine_id"] = this_machine()
    if project is not None:
        res.environment["project"] = project
    with open_store(store) as opened:
        opened.add(res)
    return run_id(res)


def test_last_is_this_projects_run_and_machine_last_is_anyones(tmp_path: Path, monkeypatch):
    repo, plain = _git_repo(tmp_path / "repo"), tmp_path / "plain"
    plain.mkdir()
    store = tmp_path / "runs.sqlite"
    a1 = _stored(store, 1, git.project(repo / "sub"))
    b1 = _stored(store, 2, git.project(plain))
    a2 = _stored(store, 3, git.project(repo))
    b2 = _stored(store, 4, git.project(plain))
    old = _stored(store, 5, None)  # the newest of all, but nobody's
    assert git.project(repo / "sub") == str(repo.resolve()) and git.project(plain) == str(plain.resolve())

    def named(ref: str, where: Path) -> str:
        monkeypatch.chdir(where)
        return run_id(load_run(ref, store))

    assert [named("last", repo / "sub"), named("last~1", repo / "sub"), named("last", repo)] == [a2, a1, a2]
    assert [named("last", plain), named("last~1", plain)] == [b2, b1]
    assert [named("machine:last", plain), named("machine:last~1", repo), named("machine:last~4", plain)] == [
        old, b2, a1]
    with pytest.raises(StoreError, match=r"last~2: .* holds 2 complete runs of this project .*"
                                         r"machine:last~2 counts every project's"):
        named("last~2", repo)
    with open_store(store) as opened:
        assert [r.project for r in opened.runs()] == [str(repo.resolve()), str(plain.resolve()),
                                                      str(repo.resolve()), str(plain.resolve()), None]
        assert [r.run_id for r in opened.runs(project=str(plain.resolve()))] == [b1, b2]


def test_compare_names_the_two_runs_it_compared(tmp_path: Path):
    repo = _git_repo(tmp_path / "repo")
    store = tmp_path / "runs.sqlite"
    first = _stored(store, 1, git.project(repo))
    second = _stored(store, 2, git.project(repo))
    _stored(store, 3, str(tmp_path / "someone-else"))  # newer, another project's

    shown = run_here("compare", "last~1", "last", "--store", str(store), cwd=repo / "sub")
    assert shown.returncode == 0, shown.stderr
    # Each run's line comes first, wrapped between words to the table's width under its first word.
    said = " ".join(shown.stdout.split())
    assert said.startswith(f"base: run {first}, 2026-01-01 00:00:00 UTC, {repo.resolve()}, no commit recorded "
                           f"new: run {second}, 2026-01-02 00:00:00 UTC, {repo.resolve()}, no commit recorded")

    as_json = run_here("compare", "last~1", "last", "--json", "--store", str(store), cwd=repo)
    doc = json.loads(as_json.stdout)
    assert doc["base"] == {"id": first, "date": "2026-01-01T00:00:00+00:00", "folder": str(repo.resolve()),
                           "commit": None}
    assert doc["new"]["id"] == second and doc["cells"]


@pytest.mark.slow
def test_a_run_records_its_project_and_run_compare_names_both_runs(tmp_path: Path):
    repo = _git_repo(tmp_path / "repo")
    store = str(tmp_path / "runs.sqlite")
    first = run_here("run", *ONE_CELL, "-o", str(tmp_path / "one"), "--store", store, cwd=repo / "sub")
    assert first.returncode == 0, first.stderr[-2000:]
    with open_store(store) as opened:
        (stored,) = opened.runs()
    assert stored.project == str(repo.resolve())
    base = load_run(tmp_path / "one")
    assert base.environment["project"] == str(repo.resolve())
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout.strip()
    assert run_line("base", base, 1000).endswith(f", {repo.resolve()}, commit {commit}")

    second = run_here("run", *ONE_CELL, "-o", str(tmp_path / "two"), "--store", store, "--compare", "last",
                      cwd=repo)
    assert second.returncode == 0, second.stderr[-2000:]
    new = load_run(tmp_path / "two")
    said = " ".join(second.stdout.split())
    assert all(" ".join(run_line(role, run, 1000).split()) in said for role, run in (("base", base), ("new", new)))


def test_pytests_last_is_this_projects_session_too(tmp_path: Path):
    from arraybench.store import refs as baseline

    store = tmp_path / "runs.sqlite"
    ours = _stored(store, 1, "/src/ours")
    theirs = _stored(store, 2, "/src/theirs")
    session = timed_run(3)
    session.environment.update(machine_id=this_machine(), project="/src/ours")
    with open_store(store) as opened:
        found, line = baseline.find(opened, "last", session)
        assert run_id(found) == ours and line.startswith(f"compared with run {ours}")
        found, _ = baseline.find(opened, "machine:last", session)
        assert run_id(found) == theirs
        found, line = baseline.find(opened, "last~1", session)
        assert found is None and "1 earlier run of these cells on this machine in this project" in line
        assert "machine:last~1 counts every project's" in line
        baseline.check_choice("machine:last~1")  # a spelling the option takes
