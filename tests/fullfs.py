"""A real full file system for the tests: a small tmpfs in a private mount namespace.

Mounting needs root (or a user namespace) and ``unshare``; where either is missing the tests that
need a full disk skip and say why. The namespace ends with the process that made it, so a whole
scenario runs inside one script (tests/data/full_disk.py) and leaves its findings outside the
tmpfs, in a folder of the test.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@functools.lru_cache(maxsize=None)
def why_not() -> str | None:
    """Why no tmpfs can be mounted here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "a tmpfs in a private mount namespace is Linux's"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "needs unshare and mount (util-linux) to make a small full file system"
    with tempfile.TemporaryDirectory() as where:
        done = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=4k tmpfs "$0"',
                               where], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return ("cannot mount a tmpfs in a private mount namespace (needs root): "
                + (done.stderr.strip().splitlines() or ["unknown error"])[-1])
    return None


def scenario(name: str, work: Path) -> dict[str, dict]:
    """Run ``name`` of tests/data/full_disk.py in ``work``; each step's exit status and stderr.

    The output folder's files after each step are in ``work/copies/STEP``.
    """
    reason = why_not()
    if reason:
        pytest.skip(reason)
    shutil.copy(DATA / "fault_workloads.py", work / "fault_workloads.py")
    done = subprocess.run(["unshare", "-m", sys.executable, str(DATA / "full_disk.py"), name,
                           str(work)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((work / "steps.json").read_text())
