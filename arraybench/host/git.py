"""The source a run measured, as git knows it: commit, branch and whether the work tree is dirty.

Recorded with every run started inside a git work tree, as asv and pytest-benchmark record them,
so that history can name the commit a step came with without ``--context commit=...``. Outside a
work tree, or without git, there is nothing to record and nothing is said.

A work tree may come from anyone (a colleague's benchmark folder, a CI artifact with its
``.git``), and git runs commands a repository's own configuration names: ``core.fsmonitor`` on
``status``, the clean and smudge filters ``.gitattributes`` assigns, hooks. Every git call here
(``command``) switches those off, so reading a repository runs nothing of its choosing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: How long git may take to answer; a slow network file system must not hold a run up.
TIMEOUT_S = 5.0
#: Settings that keep git from running what the repository's configuration names: its fsmonitor
#: hook (or daemon), its hooks, and any transport (a partial clone fetches missing objects,
#: through whatever ``core.sshCommand`` says).
NEUTRAL = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")


def command(cwd: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argument list and environment of ``git args`` run in ``cwd`` with nothing of the
    repository's choosing executed: ``NEUTRAL``, and every filter driver its configuration
    defines emptied (a filter's name comes from ``.gitattributes``, its command from the config)."""
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


def _git(cwd: Path, *args: str) -> str | None:
    try:
        argv, env = command(cwd, *args)
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=env)
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
    # Submodules left out: status would run in each, under its own configuration.
    status = _git(where, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all")
    if status is not None:
        out["dirty"] = "yes" if status else "no"
    return out


def project(cwd: str | os.PathLike[str] | None = None) -> str:
    """The folder a run belongs to: the top of the git work tree holding ``cwd`` (default: the
    current folder), else that folder itself; resolved, so that two spellings of one folder agree."""
    where = Path(cwd if cwd is not None else os.getcwd()).resolve()
    top = _git(where, "rev-parse", "--show-toplevel")
    return str(Path(top).resolve()) if top else str(where)
