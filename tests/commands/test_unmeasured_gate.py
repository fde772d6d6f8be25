"""A gate never passes a cell it could not measure: a library whose import breaks between two
runs leaves its cells skipped in the new run, and ``compare --fail-above`` fails, saying which."""

from __future__ import annotations

import os
from pathlib import Path

from ..conftest import FAST, run_here


def test_a_library_whose_import_breaks_fails_the_gate(real_run, tmp_path: Path):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    # Found before the real torch by every worker: the install broke since the base run.
    (shadow / "__init__.py").write_text("raise ImportError('libtorch_cpu.so: cannot open shared object file')\n")
    new = tmp_path / "new"
    path = os.pathsep.join(p for p in (str(shadow.parent), os.environ.get("PYTHONPATH", "")) if p)
    done = run_here("run", "--backends", "numpy,torch", "--workloads", "matmul,sort", "--sizes", "small",
                    *FAST, "--no-plots", "--no-store", "-o", str(new), cwd=tmp_path,
                    env={"PYTHONPATH": path})
    assert done.returncode == 0, done.stderr  # a run is not a gate: skipped cells are said, not failed
    plain = run_here("compare", str(real_run.out), str(new), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    gated = run_here("compare", str(real_run.out), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    line = next(x for x in gated.stderr.splitlines() if "not measured in the new run" in x)
    assert line.startswith("arraybench: 2 cells measured in the base run were not measured")
    assert "matmul small PyTorch CPU" in line and "libtorch_cpu.so" in line
    assert "--fail-above passes nothing unseen" in line
