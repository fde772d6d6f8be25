"""The source a run measured, as git knows it (commit, branch, dirty), recorded as asv does so that
history can name a step's commit. A work tree may come from anyone, and git runs what a
repository's configuration names (fsmonitor, filters, hooks): every call here (``command``) turns
those off, so reading a repository runs nothing of its choosing."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: How long git may take to answer; a slow network file system must not hold a run up.
TIMEOUT_S = 5.0
#: Settings that keep git from running what the repository's configuration names: its fsmonitor
#: hook (or daemon), its hooks, and any transport (a partial clone fetches missing objects,
#: through whatever ``core.sshCommand`` says).
NEUTRAL = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")


def command(cwd: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``git args`` in ``cwd`` running nothing of the repository's choosing
    (``NEUTRAL``, and every filter driver its configuration defines emptied)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0",  # never lock (or rewrite) the index
           "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}
    filters: list[str] = []
    try:  # reading configuration runs nothing; git config lists what includes bring in too
        found = subprocess.run(["git", *NEUTRAL, "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
                               cwd=cwd, capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, env=env)
        keys = found.stdout.decode("utf-8", "surrogateescape").split("\0")
    except (OSError, subprocess.SubprocessError, ValueError):
        keys = []
    for name in sorted({k[len("filter."):k.rindex(".")] for k in keys if k.count(".") >= 2}):
        for var in ("clean", "smudge", "process"):
            filters += ["-c", f"filter.{name}.{var}="]  # empty: no command
        filters += ["-c", f"filter.{name}.required=false"]
    return ["git", *NEUTRAL, *filters, *args], env


#: git's answers kept while ``asked_once`` holds (None: git is asked every time).
_answers: dict[tuple[str, ...], str | None] | None = None


@contextmanager
def asked_once(answers: dict[tuple[str, ...], str | None]) -> Iterator[None]:
    """Inside, each question to git in each folder is asked once, its answer kept in ``answers``:
    a pytest session's tests measure one version of the code (each test's run asked 6-8 git
    processes the same questions)."""
    global _answers
    before, _answers = _answers, answers
    try:
        yield
    finally:
        _answers = before


def _git(cwd: Path, *args: str) -> str | None:
    key = (str(cwd), *args)
    if _answers is not None and key in _answers:
        return _answers[key]
    try:
        argv, env = command(cwd, *args)
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=env)
        answer = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        answer = None
    if _answers is not None:
        _answers[key] = answer
    return answer


def labels(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{"commit", "branch", "dirty"}`` of the work tree holding ``cwd``; empty outside one (no branch when detached)."""
    where = Path(cwd if cwd is not None else os.getcwd())
    commit = _git(where, "rev-parse", "--verify", "--quiet", "--short=12", "HEAD")
    if not commit:
        return {}
    out = {"commit": commit}
    branch = _git(where, "symbolic-ref", "--quiet", "--short", "HEAD")
    if branch:
        out["branch"] = branch
    # Submodules left out: status would run in each, under its own configuration.
    status = _git(where, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all")
    if status is not None:
        out["dirty"] = "yes" if status else "no"
    return out


def project(cwd: str | os.PathLike[str] | None = None) -> str:
    """The top of the git work tree holding ``cwd``, else that folder, resolved: the folder a run belongs to."""
    where = Path(cwd if cwd is not None else os.getcwd()).resolve()
    top = _git(where, "rev-parse", "--show-toplevel")
    return str(Path(top).resolve()) if top else str(where)
