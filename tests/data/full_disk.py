"""Runs arraybench against a real full file system: a small tmpfs, mounted by this script as root
inside a private mount namespace (``unshare -m``; see tests/fullfs.py).

    python full_disk.py SCENARIO WORKDIR

The tmpfs lives only as long as the namespace, that is as long as this script, so the script does
every step of a scenario itself (run, free the space, resume, fill again, report) and leaves what
the test checks in WORKDIR, on the ordinary file system: ``steps.json`` (each step's exit status
and stderr) and copies of the output folder's files after each step (``copies/STEP/``).
The fault workloads (``fault_workloads.py``) are expected in WORKDIR. Each step is the command
line run in this process (``commands.main.main``), as a fresh interpreter would run it: what is
tested is what the command writes onto the full disk, and an interpreter start per step was most
of the scenarios' cost; the workers are real processes as ever.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from arraybench.commands.main import main
from arraybench.workloads import REGISTRY

SCENARIO, WORK = sys.argv[1], Path(sys.argv[2])
WORKLOADS = WORK / "fault_workloads.py"
QUICK = ["--max-time", "0.05", "--min-samples", "3", "-q", "--devices", "cpu",
         "--backends", "numpy"]
steps: dict[str, dict] = {}


def mount(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder``: every block, then every inode."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    i = 0
    try:
        while i < 100000:
            (folder / f"filler-{i}").touch()
            i += 1
    except OSError:
        pass


def free(folder: Path) -> None:
    for p in folder.glob("filler*"):
        p.unlink()


BUILTIN = dict(REGISTRY)


def arraybench(step: str, *args: str, out: Path, env: dict | None = None) -> None:
    # As a fresh interpreter starts: the built-in workloads only and no workload file imported
    # yet (a second step imports the same file again); ``env`` is the step's own, for its time.
    REGISTRY.clear()
    REGISTRY.update(BUILTIN)
    for name in [n for n in sys.modules if n.startswith("arraybench_user_")]:
        del sys.modules[name]
    os.environ.update(env or {})
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                rc = main(list(args))
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        for key in env or {}:
            del os.environ[key]
    steps[step] = {"rc": rc, "stderr": stderr.getvalue(), "stdout": stdout.getvalue()}
    copy = WORK / "copies" / step
    if out.exists():
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns("filler*"), symlinks=True)


def journal_full() -> None:
    """The disk fills while a run measures; later it is full before a report or a resume."""
    mnt = WORK / "mnt"
    mount(mnt, "size=2m,nr_inodes=256")
    out = mnt / "out"
    # 12 cells: the second process's replicates need more than the page the journal has left.
    arraybench("run", "run", "--workload-file", str(WORKLOADS), "--workloads", "fill_disk,ok_a,ok_b",
               "--sizes", "64,128,256,512", "--processes", "2", "--no-plots", "-o", str(out), *QUICK,
               out=out, env={"FAULT_FILL": str(mnt)})
    free(mnt)
    arraybench("resume", "run", "--resume", str(out), "-q", "--no-plots", out=out)
    fill(mnt)
    arraybench("report", "report", str(out), "-q", out=out)
    arraybench("rewrite", "run", "--resume", str(out), "-q", out=out)
    free(mnt)
    arraybench("rewrite_freed", "run", "--resume", str(out), "-q", out=out)


def report_full() -> None:
    """Every measurement journalled, then no room for a new file: results.json takes the inode
    the last worker's board gave back, and report.html finds none."""
    mnt = WORK / "mnt"
    mount(mnt, "size=2m,nr_inodes=64")
    out = mnt / "out"
    arraybench("run", "run", "--workload-file", str(WORKLOADS), "--workloads", "fill_disk,ok_a",
               "--sizes", "small", "--processes", "2", "--no-plots", "-o", str(out), *QUICK,
               out=out, env={"FAULT_FILL": str(mnt), "FAULT_FILL_KIND": "inodes"})
    free(mnt)
    arraybench("resume", "run", "--resume", str(out), "-q", "--no-plots", out=out)


def logs_full() -> None:
    """logs/ on a file system that runs out of room (inodes) as the second worker starts."""
    out = WORK / "out"
    # Three inodes: the root, the first worker's log, its board; the second log finds none.
    mount(out / "logs", "size=1m,nr_inodes=3")
    arraybench("run", "run", "--workload-file", str(WORKLOADS), "--workloads", "ok_a,ok_b",
               "--sizes", "small", "--processes", "2", "--no-plots", "-o", str(out), *QUICK, out=out)
    subprocess.run(["umount", str(out / "logs")], check=True)
    arraybench("resume", "run", "--resume", str(out), "-q", "--no-plots", out=out)


def logs_unwritable() -> None:
    """logs/ full, then read-only, before a run starts: refused before anything is measured."""
    full, readonly = WORK / "full", WORK / "readonly"
    mount(full / "logs", "size=4k,nr_inodes=16")  # few inodes: filling them is quick
    fill(full / "logs")
    arraybench("full", "run", "--workloads", "sort", "--sizes", "small", "--no-plots",
               "-o", str(full), *QUICK, out=full)
    mount(readonly / "logs", "size=64k,ro")
    arraybench("readonly", "run", "--workloads", "sort", "--sizes", "small", "--no-plots",
               "-o", str(readonly), *QUICK, out=readonly)


if __name__ == "__main__":
    os.chdir(WORK)
    {"journal_full": journal_full, "report_full": report_full, "logs_full": logs_full,
     "logs_unwritable": logs_unwritable}[SCENARIO]()
    (WORK / "steps.json").write_text(json.dumps(steps, indent=1))
