"""The source a run measured, as git knows it: commit, branch and whether the work tree is dirty.

Recorded with every run started inside a git work tree, as asv and pytest-benchmark record them,
so that history can name the commit a step came with without ``--context commit=...``. Outside a
work tree, or without git, there is nothing to record and nothing is said.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: How long git may take to answer; a slow network file system must not hold a run up.
TIMEOUT_S = 5.0


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})  # never lock the index
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def labels(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{"commit", "branch", "dirty"}`` of the git work tree holding ``cwd`` (default: the current
    folder); empty outside one. ``branch`` is left out on a detached HEAD; ``dirty`` is ``yes`` when
    tracked files differ from the commit."""
    where = Path(cwd if cwd is not None else os.getcwd())
    commit = _git(where, "rev-parse", "--verify", "--quiet", "--short=12", "HEAD")
    if not commit:
        return {}
    out = {"commit": commit}
    branch = _git(where, "symbolic-ref", "--quiet", "--short", "HEAD")
    if branch:
        out["branch"] = branch
    status = _git(where, "status", "--porcelain", "--untracked-files=no")
    if status is not None:
        out["dirty"] = "yes" if status else "no"
    return out
