"""A results folder is data, never code: ``--resume`` imports the workload
files its journal names and unpickles ``workloads.pickle`` only where this user's arraybench wrote
the folder (its sealed header), where the user names the file, or with ``--trust-folder``; and the
pickle only if it is the very file its run recorded. Each case plants code that would leave a
marker file, and checks that the marker never appears."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

import arraybench
from arraybench.commands.main import main
from arraybench.errors import UsageError

from .conftest import ROOT, run_here


@arraybench.workload(sizes={"small": 8})
def trust_tiny(xp, a):
    return a + 1


class _Marker:
    """Unpickling this creates ``path``: the code a planted pickle runs."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


class Shipped:
    def __init__(self, out: Path, xdg: str) -> None:
        self.out, self.xdg = out, xdg


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Shipped:
    """A finished run of a workload defined in Python (so shipped, pickled in its folder), made
    under the module's data folder: its key sealed the header."""
    out = tmp_path_factory.mktemp("shipped") / "run"
    arraybench.run(trust_tiny, backends="numpy", devices="cpu", sizes="small", processes=1,
                   max_time=0.05, min_samples=3, output_dir=out, store=False, plots=False)
    assert (out / "workloads.pickle").is_file()
    return Shipped(out, os.environ["XDG_DATA_HOME"])


def _copy(src: Path, dst: Path, *, unfinished: bool = False, header: dict | None = None) -> Path:
    shutil.copytree(src, dst)
    lines = (dst / "journal.jsonl").read_text().splitlines(keepends=True)
    if header is not None:
        lines[0] = json.dumps(header) + "\n"
    (dst / "journal.jsonl").write_text("".join(lines[:1] if unfinished else lines))
    return dst


def _plant_pickle(folder: Path, marker: Path) -> None:
    (folder / "workloads.pickle").write_bytes(pickle.dumps(_Marker(marker)))


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("arraybench: error: "), stderr
    return lines[0]


def test_a_received_folders_pickle_is_never_unpickled(shipped, tmp_path: Path):
    """Under another data folder (another user's key: a folder received from elsewhere)."""
    marker = tmp_path / "MARKER"
    done = _copy(shipped.out, tmp_path / "done")
    _plant_pickle(done, marker)
    # A finished run needs no code: its files are rewritten from the journal, nothing is loaded.
    assert arraybench.resume(done, store=False, plots=False).complete
    assert not marker.exists()
    # An unfinished one would need the pickle: refused in one line, unread.
    left = _copy(shipped.out, tmp_path / "left", unfinished=True)
    _plant_pickle(left, marker)
    refused = run_here("run", "--resume", str(left), "-q", "--no-plots", "--no-store", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--trust-folder" in _one_error_line(refused.stderr)
    # Trusting the folder still checks the pickle against the SHA-256 its run recorded.
    with pytest.raises(UsageError, match="is not the file its run wrote"):
        arraybench.resume(left, store=False, plots=False, trust_folder=True)
    assert not marker.exists()


def test_ones_own_folder_refuses_a_swapped_pickle_and_a_changed_header(shipped, tmp_path: Path):
    marker = tmp_path / "MARKER"
    own = {"XDG_DATA_HOME": shipped.xdg}  # the key that sealed the run's header
    left = _copy(shipped.out, tmp_path / "left", unfinished=True)
    _plant_pickle(left, marker)
    swapped = run_here("run", "--resume", str(left), "-q", "--no-plots", "--no-store", env=own, cwd=ROOT)
    assert swapped.returncode == 2
    assert "is not the file its run wrote" in _one_error_line(swapped.stderr)
    # A header changed to name a file of code: its seal no longer holds, so the file is not run.
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w')\n")
    header = json.loads((shipped.out / "journal.jsonl").read_text().splitlines()[0])
    header["options"]["workload_files"] = [str(evil)]
    changed = _copy(shipped.out, tmp_path / "changed", unfinished=True, header=header)
    refused = run_here("run", "--resume", str(changed), "-q", "--no-plots", "--no-store", env=own, cwd=ROOT)
    assert refused.returncode == 2
    line = _one_error_line(refused.stderr)
    assert f"--workload-files {evil}" in line and "was not written by your arraybench" in line
    assert not marker.exists()


def test_ones_own_interrupted_notebook_run_resumes_from_its_pickle(shipped, tmp_path: Path,
                                                                    monkeypatch, registry_restored):
    from arraybench.workloads import REGISTRY

    left = _copy(shipped.out, tmp_path / "left", unfinished=True)
    del REGISTRY["trust_tiny"]  # the notebook's kernel is gone: only the pickle has the code
    with pytest.raises(UsageError, match="trust_folder=True"):  # another user's key
        arraybench.resume(left, store=False, plots=False)
    monkeypatch.setenv("XDG_DATA_HOME", shipped.xdg)
    results = arraybench.resume(left, store=False, plots=False)
    assert [r.status for r in results.records] == ["ok"]


def test_only_the_named_workload_file_of_a_received_folder_is_imported(tmp_path: Path, capsys):
    """A folder whose header names a workload file that is not the user's: refused until named."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w')\n")
    out = tmp_path / "run"
    out.mkdir()
    header = {"type": "header", "tool": "arraybench", "version": 2,
              "options": {"workloads": ["evil"], "workload_files": [str(evil)], "backends": ["numpy"],
                          "devices": ["cpu"]},
              "cells": [{"workload": "evil", "size": 8, "size_label": "small", "backend": "numpy",
                         "device": "cpu", "dtype": "float64", "mode": "latency"}],
              "environment": {}}
    (out / "journal.jsonl").write_text(json.dumps(header) + "\n")
    refused = run_here("run", "--resume", str(out), "-q", "--no-store", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert f"--workload-files {evil}" in _one_error_line(refused.stderr)
    other = tmp_path / "mine.py"
    other.write_text("")
    assert main(["run", "--resume", str(out), "--workload-file", str(other), "-q", "--no-store"]) == 2
    assert "is not one the run used" in _one_error_line(capsys.readouterr().err)
    assert main(["run", "--trust-folder", "-o", str(tmp_path / "new"), "-q", "--no-store"]) == 2
    assert "goes with --resume" in _one_error_line(capsys.readouterr().err)
    assert not marker.exists()
