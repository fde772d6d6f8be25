"""benchmarks/gpu_acceptance.py, the GPU acceptance run, on a machine without a GPU:
it says so in one line and exits non-zero; its offline install, its reference timing (a dry run on
the CPU) and its comparison run for real."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_acceptance.py"
NO_GPU = {"ARRAYBENCH_NVIDIA_DEVICES": "/nonexistent/nvidia[0-9]*"}  # whatever this machine has


def _module():
    spec = importlib.util.spec_from_file_location("gpu_acceptance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("cmd", [[sys.executable, str(SCRIPT)],
                                 ["bash", str(ROOT / "benchmarks" / "gpu_acceptance.sh")]])
def test_without_a_gpu_it_says_so_in_one_line_and_exits_non_zero(cmd, tmp_path):
    env = dict(os.environ, **NO_GPU, PYTHON=sys.executable)
    out = subprocess.run([*cmd, "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 3
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no NVIDIA GPU on this machine" in out.stderr
    assert not (tmp_path / "out").exists()  # nothing started


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel, as ``pip download`` leaves them."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": "VALUE = 42\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for p, text in {**files, f"{info}/RECORD": record}.items():
            z.writestr(p, text)
    return path


def test_what_python_lacks_is_installed_offline_from_a_folder_of_wheels(tmp_path, monkeypatch):
    acceptance = _module()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "abfakedep")
    monkeypatch.setattr(acceptance, "DEPENDENCIES", {**acceptance.DEPENDENCIES, "abfakedep": "abfakedep"})
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert "abfakedep" in acceptance.missing_modules()
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no registry is asked, as on a machine without network
    site = tmp_path / "site"
    assert acceptance.install_wheels(wheels, site, ["abfakedep"]) == []
    assert (site / "abfakedep" / "__init__.py").exists()
    child = acceptance.child_env(site)["PYTHONPATH"].split(os.pathsep)
    assert child[:2] == [str(site), str(ROOT)]


@pytest.mark.slow
@pytest.mark.parametrize("lib", ["torch", "jax"])
def test_the_reference_timing_runs_each_seed_workload_in_a_process_of_its_own(lib, tmp_path):
    """The reference's own code, on the CPU (small sizes): the GPU run differs by its device."""
    pytest.importorskip(lib)
    into = tmp_path / "reference.jsonl"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(SCRIPT), "--reference", lib, "--cpu", "--into", str(into)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in into.read_text().splitlines()]
    assert [r["workload"] for r in rows] == ["elementwise", "matmul", "gradient", "fft", "sort"]
    assert all(r["backend"] == lib and r["wall_s"] > 0 and r["size_label"] == "small" for r in rows)


def test_the_comparison_flags_cells_outside_the_range_and_cells_without_a_time(tmp_path, capsys):
    acceptance = _module()

    def record(workload, median, status="ok", device=None, size_label="large", dtype="float64"):
        return {"workload": workload, "size_label": size_label, "size": acceptance.SIZES[workload][1],
                "backend": "torch", "device": "gpu", "dtype": dtype, "mode": "latency", "transfer": False,
                "status": status, "median_s": median, "device_median_s": device, "reason": "boom"}

    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "results.json").write_text(json.dumps({"records": [
        record("elementwise", 1.1e-3), record("matmul", 2.0e-3), record("fft", None, "failed"),
        record("sort", 1e-3, device=5e-3)]}))
    refs = [{"backend": "torch", "workload": w, "size_label": "large", "size": acceptance.SIZES[w][1],
             "dtype": "float64", "wall_s": 1e-3, "device_s": d}
            for w, d in (("elementwise", None), ("matmul", None), ("fft", None), ("sort", 1.2e-3))]
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    flagged = acceptance.compare(tmp_path)
    text = capsys.readouterr().out
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("torch/")}
    elementwise = lines["torch/elementwise/large/float64"]
    assert "FLAG" not in elementwise and " 1.10 " in elementwise
    assert "FLAG" in lines["torch/matmul/large/float64"] and " 2.00 " in lines["torch/matmul/large/float64"]
    assert "FLAG: no arraybench time (failed: boom)" in lines["torch/fft/large/float64"]
    assert "events ratio 4.17 (outside)" in lines["torch/sort/large/float64"]
    assert flagged == 3 and "3 flagged cell(s) of 4" in text
    assert "MISSING" in text  # suite_f32 was not made
