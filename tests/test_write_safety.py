"""Writing through special files: an output replaces only a regular
file (by a rename), a device, pipe or link is written through (a target the user named) or
refused (a file of an output folder), a file with other hard links is never changed in place
(``cp -al src dst; run -o dst`` leaves src as it was), and ``merge -o`` keeps off a folder that a
run holds or that holds a run."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arraybench import api, files
from arraybench.errors import UsageError
from arraybench.files import NotReplaceable, write_atomic
from arraybench.model.results import load, resolve
from arraybench.outdir import claim
from arraybench.outdir import FolderLock

from .conftest import FAST, ROOT, run_cli, run_here

WORKLOAD = """
import arraybench

@arraybench.workload(sizes={"small": 8})
def safe_tiny(xp, a):
    return a + 1
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished real run (one cell, one process)."""
    root = tmp_path_factory.mktemp("finished")
    (root / "wl.py").write_text(WORKLOAD)
    out = root / "run"
    done = run_here("run", "--workload-file", str(root / "wl.py"), "--backends", "numpy",
                    "--devices", "cpu", *FAST, "--no-plots", "--no-store", "-o", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _export(results: Path, target: Path | str, **kwargs) -> subprocess.CompletedProcess:
    return run_cli("export", str(results), "--format", "github", "-o", str(target), **kwargs)


def test_export_writes_through_a_pipe_and_a_link_to_stdout_and_replaces_neither(finished, tmp_path,
                                                                                monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    done = _export(finished, fifo)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and b"safe_tiny/small" in got[0]
    # The same writer, called directly (no interpreter to start each time):
    # a pipe nobody reads is refused after a short wait, never waited on for ever;
    monkeypatch.setattr(files, "PIPE_READER_WAIT_S", 0.1)
    with pytest.raises(OSError, match="nobody reads"):
        write_atomic(fifo, "x", through=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # -o DIR/stdout, a link to a process's standard output (here a pipe): written through;
    read_end, write_end = os.pipe()
    (tmp_path / "stdout").symlink_to(f"/proc/self/fd/{write_end}")
    try:
        write_atomic(tmp_path / "stdout", "printed", through=True)
        assert os.read(read_end, 100) == b"printed" and (tmp_path / "stdout").is_symlink()
    finally:
        os.close(read_end)
        os.close(write_end)
    # a link to a regular file: that file gets the text, renamed into place; the link stays.
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    write_atomic(tmp_path / "link.json", "new", through=True)
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mknod"),
                    reason="a device node is made only by root, in a private mount namespace (unshare -m)")
def test_export_to_a_device_node_writes_through_it_as_root(finished, tmp_path):
    """``export -o /dev/null`` as root once replaced the device by a regular file. Here a fake
    /dev/null is made in a tmpfs mounted in a private mount namespace, so the real one is safe."""
    dev = tmp_path / "dev"
    dev.mkdir()
    script = (f"mount -t tmpfs none {dev} && mknod {dev}/null c 1 3 && "
              f"{sys.executable} -m arraybench export {finished} --format github -o {dev}/null && "
              f"stat -c %F {dev}/null")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "character special file"


def test_a_run_folders_own_files_are_replaced_only_where_regular(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("mine")
    for name, plant in (("results.json", lambda p: p.symlink_to(outside)),
                        ("report.html", lambda p: os.mkfifo(p))):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        plant(out / name)
        with pytest.raises(UsageError, match=f"{name}: is a (symbolic link|named pipe)"):
            claim(out)
    # The writer itself refuses too, whatever got past the check.
    (tmp_path / "link.svg").symlink_to(outside)
    with pytest.raises(NotReplaceable):
        write_atomic(tmp_path / "link.svg", "<svg/>")
    assert outside.read_text() == "mine" and (tmp_path / "link.svg").is_symlink()


def test_a_run_into_a_hard_linked_copy_leaves_the_original_as_it_was(finished, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(finished, src)
    lines = (src / "journal.jsonl").read_text().splitlines(keepends=True)
    before_done = _snapshot(src)
    dst = tmp_path / "dst"
    subprocess.run(["cp", "-al", str(src), str(dst)], check=True)
    wl = finished.parent / "wl.py"
    again = run_here("run", "--workload-file", str(wl), "--backends", "numpy", "--devices", "cpu",
                     *FAST, "--no-plots", "--no-store", "--overwrite", "-o", str(dst),  # replaced on purpose
                     cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _snapshot(src) == before_done
    # An unfinished one, continued in the copy: the original's journal is not appended to.
    (src / "journal.jsonl").unlink()
    (src / "journal.jsonl").write_text(lines[0])  # the header alone: nothing measured yet
    before = _snapshot(src)
    shutil.rmtree(dst)
    subprocess.run(["cp", "-al", str(src), str(dst)], check=True)
    # The file named: the module's run was sealed under another data folder.
    resumed = run_here("run", "--resume", str(dst), "--workload-file", str(wl), "-q", "--no-plots",
                       "--no-store", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _snapshot(src) == before
    assert len((dst / "journal.jsonl").read_text().splitlines()) > 1


def test_merge_keeps_off_a_folder_a_run_holds_or_that_holds_a_run(finished, tmp_path):
    runs = [load(resolve(finished)), load(resolve(finished))]
    locked = tmp_path / "locked"
    locked.mkdir()
    with FolderLock.acquire(locked):  # a run writing there now
        with pytest.raises(UsageError, match="another arraybench run is writing there"):
            api.merge(runs, labels=["a", "b"], output_dir=locked, plots=False)
    assert not (locked / "results.json").exists()
    interrupted = tmp_path / "interrupted"
    shutil.copytree(finished, interrupted)
    header = (interrupted / "journal.jsonl").read_text().splitlines(keepends=True)[0]
    (interrupted / "journal.jsonl").write_text(header + '{"type": "unavailable"')  # + a torn line
    (interrupted / "results.json").write_text("partial")
    (interrupted / "journal.jsonl").write_text(header)
    with pytest.raises(UsageError, match="holds an unfinished run"):
        api.merge(runs, labels=["a", "b"], output_dir=interrupted, plots=False)
    assert (interrupted / "results.json").read_text() == "partial"
    # An empty folder (or an earlier merge's) is written as before.
    merged = api.merge(runs, labels=["a", "b"], output_dir=tmp_path / "merged", plots=False)
    assert (merged.output_dir / "results.json").is_file()
