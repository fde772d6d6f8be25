"""Builds side by side: ``--python`` and ``--variant`` through the real command line.

A second real venv with NumPy 1.26 is made once (a session fixture, cached in pytest's cache
folder, so later sessions reuse it) and run beside this interpreter's NumPy 2.x in one run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import arraybench
from arraybench.commands.main import main
from arraybench.errors import UsageError
from arraybench.host import environments
from arraybench.model.cell import config_label
from arraybench.model.options import RunOptions
from arraybench.model.cell import cell_key

from .conftest import FAST, ROOT, run_here

OLD_NUMPY = "1.26.4"


# Another interpreter with another NumPy, made for the session, and runs in both.
pytestmark = pytest.mark.slow


def _make_venv(folder: Path, *packages: str) -> str | None:
    """A venv at ``folder`` with ``packages``; None, or why it could not be made."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    python = str(tmp / "bin" / "python")
    install = ["install", "-q", "--disable-pip-version-check", *packages]
    # This interpreter's pip installs into the venv (pip's --python, 22.3+): bootstrapping a pip
    # of the venv's own (ensurepip) took 4 of the fixture's 8 s. Where that pip cannot, the venv
    # gets its own, as before.
    if packages and subprocess.run([sys.executable, "-m", "pip", "--python", sys.executable, "--version"],
                                   capture_output=True).returncode == 0:
        steps = [[sys.executable, "-m", "venv", "--without-pip", str(tmp)],
                 [sys.executable, "-m", "pip", "--python", python, *install]]
    elif packages:
        steps = [[sys.executable, "-m", "venv", "--clear", str(tmp)], [python, "-m", "pip", *install]]
    else:
        steps = [[sys.executable, "-m", "venv", "--without-pip", str(tmp)]]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(step[:4])}: {exc}"
        if done.returncode != 0:
            return f"{' '.join(step[:4])}: {(done.stderr or done.stdout).strip()[-300:]}"
    os.replace(tmp, folder)  # whole or not at all: a half-made venv is never reused
    return None


@pytest.fixture(scope="session")
def old_numpy_python(request, tmp_path_factory) -> str:
    """The interpreter of a real venv with NumPy 1.26 (made once, kept in pytest's cache; in the
    session's temporary folder where the cache is switched off, ``-p no:cacheprovider``)."""
    cache = getattr(request.config, "cache", None)
    home = cache.mkdir("arraybench-numpy126-venv") if cache is not None else tmp_path_factory.mktemp("np126")
    folder = Path(home) / "venv"
    python = folder / "bin" / "python"
    probe = [str(python), "-c", f"import numpy; assert numpy.__version__ == {OLD_NUMPY!r}"]
    if not (python.exists() and subprocess.run(probe, capture_output=True).returncode == 0):
        shutil.rmtree(folder, ignore_errors=True)
        why = _make_venv(folder, f"numpy=={OLD_NUMPY}")
        if why:
            pytest.skip(f"a venv with NumPy {OLD_NUMPY} could not be made: {why}")
    return str(python)


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory, old_numpy_python):
    """One real run: NumPy 2.x (this interpreter) and NumPy 1.26 (the venv), two workloads."""
    out = tmp_path_factory.mktemp("envs") / "run"
    result = run_here("run", "--python", f"np2={sys.executable}", "--python", f"np126={old_numpy_python}",
                      "--backends", "numpy", "--devices", "cpu", "--workloads", "matmul,sort",
                      "--sizes", "small", *[a for a in FAST if a != "-q"], "--output-dir", str(out),
                      "--store", str(out.parent / "store.sqlite"), env={"COLUMNS": "200"}, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result


def test_both_environments_run_with_their_own_numpy(side_by_side):
    out, result = side_by_side
    data = json.loads((out / "results.json").read_text())
    records = data["records"]
    assert sorted((r["workload"], r["environment"], r["status"]) for r in records) == [
        ("matmul", "np126", "ok"), ("matmul", "np2", "ok"), ("sort", "np126", "ok"), ("sort", "np2", "ok")]
    workers = data["environment"]["backends"]
    assert workers["numpy/cpu[np126]"]["version"] == OLD_NUMPY
    assert workers["numpy/cpu[np2]"]["version"] == numpy.__version__
    assert workers["numpy/cpu[np126]"]["executable"] != workers["numpy/cpu[np2]"]["executable"]
    described = data["environment"]["environments"]
    assert described["np2"]["python"] == sys.executable and described["np126"]["variables"] == {}
    # Each environment's workers log apart; one worker per replicate each.
    assert sorted(p.name for p in (out / "logs").glob("*.log")) == [
        "numpy-cpu-np126-p0.log", "numpy-cpu-np2-p0.log"]


def test_the_table_and_findings_name_both(side_by_side):
    out, result = side_by_side
    assert "NumPy CPU [np126]" in result.stdout and "NumPy CPU [np2]" in result.stdout
    res = arraybench.load_results(out)
    found = " ".join(res.findings())
    assert f"NumPy {OLD_NUMPY}" in found and f"NumPy {numpy.__version__}" in found, found
    assert "[np126]" in found and "[np2]" in found
    assert {r.config_label for r in res.records} == {"NumPy CPU [np126]", "NumPy CPU [np2]"}


def test_compare_matches_each_environment_with_itself(side_by_side):
    out, _ = side_by_side
    res = arraybench.load_results(out)
    comparison = arraybench.compare(res, res)
    assert not comparison.only_base and not comparison.only_new
    assert sorted(c.key for c in comparison.changes) == sorted(r.key for r in res.records)
    assert all(r.key.endswith(("[np2]", "[np126]")) for r in res.records)
    # A run of one environment shares no cell with it: a build is never compared with another.
    assert {r.key.partition("[")[0] for r in res.records} == {
        "matmul|small|numpy|cpu|float64|latency", "sort|small|numpy|cpu|float64|latency"}


def test_resume_measures_an_environment_s_missing_replicates(side_by_side, tmp_path):
    out, _ = side_by_side
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    journal = copy / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not (json.loads(ln).get("type") == "replicate"
                                       and json.loads(ln)["key"].endswith("[np126]"))]
    assert len(kept) == len(lines) - 2
    journal.write_text("".join(kept))
    (copy / "results.json").unlink()
    shutil.rmtree(copy / "logs")
    # This test's data folder is not the run's (its own key): the folder is someone else's, and
    # the interpreters its journal names are not run unless the user trusts it.
    refused = run_here("run", "--resume", str(copy), "-q", "--store", str(tmp_path / "store.sqlite"), cwd=ROOT)
    assert refused.returncode == 2 and "--trust-folder" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and not list(copy.glob("logs/*.log"))
    result = run_here("run", "--resume", str(copy), "--trust-folder", "-q",
                      "--store", str(tmp_path / "store.sqlite"), cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads((copy / "results.json").read_text())
    assert sorted((r["environment"], r["status"]) for r in data["records"]) == [
        ("np126", "ok"), ("np126", "ok"), ("np2", "ok"), ("np2", "ok")]
    # Only the environment that lacked its replicates ran again, with its own interpreter.
    assert sorted(p.name for p in (copy / "logs").glob("*.log")) == ["numpy-cpu-np126-p0.log"]
    assert data["environment"]["backends"]["numpy/cpu[np126]"]["version"] == OLD_NUMPY


def test_a_variant_sets_its_variables_in_its_workers(tmp_path):
    out = tmp_path / "run"
    result = run_here("run", "--variant", "t1:OPENBLAS_NUM_THREADS=1", "--variant", "t2:OPENBLAS_NUM_THREADS=2",
                      "--backends", "numpy", "--devices", "cpu", "--workloads", "matmul", "--sizes", "small",
                      *FAST, "--output-dir", str(out), "--store", str(tmp_path / "store.sqlite"), cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads((out / "results.json").read_text())
    assert sorted(r["environment"] for r in data["records"]) == ["t1", "t2"]
    workers = data["environment"]["backends"]
    assert workers["numpy/cpu[t1]"]["kernel_env"]["OPENBLAS_NUM_THREADS"] == "1"
    assert workers["numpy/cpu[t2]"]["kernel_env"]["OPENBLAS_NUM_THREADS"] == "2"
    pools = workers["numpy/cpu[t1]"].get("threadpools")
    if pools:  # threadpoolctl reports what OpenBLAS really took
        assert pools[0]["num_threads"] == 1
    assert data["environment"]["environments"]["t2"]["variables"] == {"OPENBLAS_NUM_THREADS": "2"}
    found = " ".join(arraybench.load_results(out).findings())
    assert "[t1: OPENBLAS_NUM_THREADS=1]" in found and "[t2: OPENBLAS_NUM_THREADS=2]" in found, found


def test_an_interpreter_without_numpy_is_one_line_naming_it(tmp_path):
    bare = tmp_path / "bare"
    why = _make_venv(bare)
    if why:
        pytest.skip(f"a bare venv could not be made: {why}")
    python = bare / "bin" / "python"
    result = run_here("run", "--python", f"bare={python}", "--backends", "numpy", "--devices", "cpu",
                      "--workloads", "sort", "--sizes", "small", *FAST, "--output-dir", str(tmp_path / "out"),
                      cwd=ROOT)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{python} -m pip install numpy" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "out").exists()  # refused before the output folder is touched


def test_threads_need_threadpoolctl_there(old_numpy_python, tmp_path):
    result = run_here("run", "--python", f"np126={old_numpy_python}", "--threads", "1", "--backends", "numpy",
                      "--devices", "cpu", "--workloads", "sort", "--sizes", "small", *FAST,
                      "--output-dir", str(tmp_path / "out"), cwd=ROOT)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{old_numpy_python} -m pip install threadpoolctl" in result.stderr


def test_bad_environments_are_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ARRAYBENCH_CONFIG", "")  # the command's own defaults, not this project's
    for args, said in [
        (["--python", f"x={tmp_path / 'nope'}"], "no such interpreter"),
        (["--python", "np126"], "LABEL=INTERPRETER"),
        (["--variant", "t1"], "LABEL:VAR=VALUE"),
        (["--variant", "bad label:X=1"], "must be 1 to 40 letters"),
        (["--variant", "t1:1X=1"], "is not the name of an environment variable"),
        # A cluster's nodes look for the interpreter themselves: a path relative to here means nothing there.
        (["--python", "a=venv/bin/python", "--cluster", "auto"], "on a cluster give an absolute path"),
    ]:
        # In-process (the command's real parsing and checks): each is refused before anything runs.
        try:
            status = main(["run", *args, "--backends", "numpy", "--workloads", "sort", "--sizes", "small",
                           *FAST, "--output-dir", str(tmp_path / "out")])
        except SystemExit as exc:  # argparse's own refusal of a malformed option
            status = exc.code
        err = capsys.readouterr().err
        assert status == 2, (args, err)
        assert said in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "out").exists()


def test_pythons_and_variants_combine():
    options = RunOptions(pythons={"a": sys.executable, "b": sys.executable},
                         variants={"t1": {"OMP_NUM_THREADS": "1"}, "base": {}})
    found = environments.of(options)
    assert [e.label for e in found] == ["a/t1", "a/base", "b/t1", "b/base"]
    assert found[0].variables == {"OMP_NUM_THREADS": "1"} and found[0].python == sys.executable
    assert [e.label for e in environments.of(RunOptions())] == [""]
    assert environments.parse_variant("t1:A=1,B=x=y") == ("t1", {"A": "1", "B": "x=y"})
    assert environments.parse_variant("base:") == ("base", {})
    with pytest.raises(UsageError):
        environments.parse_python("=python")


def test_without_environments_nothing_changes():
    # A run without --python or --variant: keys and labels as they always were.
    assert cell_key("matmul", "small", "numpy", "cpu", "float64", "latency") == \
        "matmul|small|numpy|cpu|float64|latency"
    assert config_label("numpy", "cpu") == "NumPy CPU"
    assert config_label("numpy", "cpu", environment="np126") == "NumPy CPU [np126]"
    assert config_label("numpy", "cpu", environment="np126", machine="lap") == "NumPy CPU [np126] @ lap"
    record = arraybench.Record.from_dict({
        "workload": "sort", "size_label": "small", "size": 10, "backend": "numpy", "device": "cpu",
        "dtype": "float64", "mode": "latency", "status": "ok", "reason": "", "median_s": 1e-6,
        "iqr_s": 0.0, "min_s": 1e-6, "n_samples": 3, "first_call_s": 1e-6, "max_rel_error": 0.0})
    assert record.environment == "" and record.key == "sort|small|numpy|cpu|float64|latency"


def test_a_project_file_sets_environments(tmp_path):
    from arraybench import config
    from arraybench.commands.main import build_parser

    project = tmp_path / "pyproject.toml"
    project.write_text(f'[tool.arraybench]\npython = ["np2={sys.executable}"]\n'
                       'variant = ["t1:OPENBLAS_NUM_THREADS=1", "base:"]\n')
    parser = build_parser()
    run_parser = parser._subparsers._group_actions[0].choices["run"]
    defaults = config.load(run_parser, project)
    assert defaults.values["pythons"] == [("np2", sys.executable)]
    assert defaults.values["variants"] == [("t1", {"OPENBLAS_NUM_THREADS": "1"}), ("base", {})]


def test_a_library_that_environment_lacks_is_skipped_there(old_numpy_python, tmp_path):
    # The venv has NumPy only: PyTorch is "not run" there, with its worker's own reason.
    out = tmp_path / "run"
    result = run_here("run", "--python", f"np126={old_numpy_python}", "--backends", "torch", "--devices", "cpu",
                      "--workloads", "sort", "--sizes", "small", *[a for a in FAST if a != "-q"],
                      "--output-dir", str(out), "--store", str(tmp_path / "store.sqlite"), cwd=ROOT)
    # A run that measured nothing is no success: status 1 and one line, its results kept.
    assert result.returncode == 1, result.stderr[-3000:]
    assert "nothing was measured: every cell was skipped (cannot import torch" in result.stderr
    (record,) = json.loads((out / "results.json").read_text())["records"]
    assert (record["environment"], record["status"]) == ("np126", "skipped")
    assert "cannot import torch" in record["reason"]
    assert "not run: PyTorch CPU [np126]: cannot import torch" in result.stdout


def test_history_keeps_each_environment_s_series(side_by_side):
    out, _ = side_by_side
    result = run_here("history", "--store", str(out.parent / "store.sqlite"), env={"COLUMNS": "200"}, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "NumPy CPU [np126]" in result.stdout and "NumPy CPU [np2]" in result.stdout
    assert "4 series over 1 runs" in result.stdout


def test_merge_keeps_environments_apart_on_each_machine(side_by_side):
    out, _ = side_by_side
    merged = arraybench.merge([out, out], labels=["a", "b"], plots=False)
    assert {r.config_label for r in merged.records} == {
        "NumPy CPU [np126] @ a", "NumPy CPU [np2] @ a", "NumPy CPU [np126] @ b", "NumPy CPU [np2] @ b"}
    # Each machine's workers' versions are found under its own environment.
    assert any(f"NumPy {OLD_NUMPY}" in f and " on b" in f for f in merged.findings())


@arraybench.workload(sizes={"small": 8})
def env_shipped(xp, a):
    return a + 1


def test_a_workload_sent_by_value_needs_cloudpickle_there(old_numpy_python, tmp_path):
    # The venv has NumPy only; a workload defined in Python reaches its workers pickled.
    out = tmp_path / "out"
    with pytest.raises(UsageError) as refused:
        arraybench.run(env_shipped, pythons={"np126": old_numpy_python}, backends="numpy", devices="cpu",
                       sizes="small", processes=1, max_time=0.05, min_samples=3, output_dir=out,
                       store=False, plots=False)
    text = str(refused.value)
    assert "\n" not in text and f"install it there: {old_numpy_python} -m pip install cloudpickle" in text
    assert not out.exists()  # refused before the output folder is touched


def test_the_progress_names_each_worker_s_environment(tmp_path):
    from arraybench.render.progress import progress_text

    started: list[tuple] = []

    class Recording(arraybench.Reporter):
        def worker_started(self, backend, device, replicate, cells, environment=""):
            started.append((backend, device, replicate, environment))

    arraybench.run(["sort"], variants={"t1": {"OPENBLAS_NUM_THREADS": "1"}, "base": {}}, backends="numpy",
                   devices="cpu", sizes="small", processes=1, max_time=0.02, min_samples=3,
                   output_dir=tmp_path / "out", store=False, plots=False, reporter=Recording())
    assert sorted(started) == [("numpy", "cpu", 0, "base"), ("numpy", "cpu", 0, "t1")]
    assert progress_text("numpy", "cpu", 0, "t1") == "numpy/cpu \\[t1] process 1"  # rich markup, escaped
    assert progress_text("numpy", "cpu", 1) == "numpy/cpu process 2"  # without environments, as always


def _numpy_worker(version: str, blas: str, arch: str, **env: str) -> dict:
    return {"library": "numpy", "version": version, "blas": blas, "blas_architecture": arch, "kernel_env": env}


def test_kernel_explanations_are_per_environment_where_builds_differ():
    from arraybench.render.explanations import forced_kernels

    avx512 = {"cpu_model": "Test CPU", "fingerprint": {"cpu_isa": ["avx", "avx2", "avx512f"]}, "kernel_env": {}}
    two_builds = {**avx512, "backends": {
        "numpy/cpu[np126]": _numpy_worker("1.26.4", "openblas 0.3.23", "Haswell"),
        "numpy/cpu[np2]": _numpy_worker("2.4.6", "openblas 0.3.31", "SkylakeX")}}
    slow, both = forced_kernels(two_builds)
    # Only the environment whose OpenBLAS runs below the CPU is blamed, by its version and label.
    assert slow.startswith("NumPy 1.26.4 [np126]'s OpenBLAS runs Haswell kernels (AVX2)")
    assert "this CPU supports AVX-512" in slow and "[np2]" not in slow
    assert both == ("NumPy runs different BLAS builds in this run's environments: NumPy 1.26.4 [np126] "
                    "with OpenBLAS 0.3.23 Haswell; NumPy 2.4.6 [np2] with OpenBLAS 0.3.31 SkylakeX. On "
                    "BLAS-bound cells (matmul above all) a difference between them is the BLAS's as much "
                    "as NumPy's.")
    # A cluster run's workers report per node: the same sentences, each build said once.
    on_nodes = {"backends": {}, "machines": {"n1": two_builds, "n2": two_builds}}
    assert forced_kernels(on_nodes) == [slow, both]
    # A variant that forces a core type is a build apart; the same build twice is said once, unnamed.
    forced = {**avx512, "backends": {
        "numpy/cpu[base]": _numpy_worker("2.4.6", "openblas 0.3.31", "SkylakeX"),
        "numpy/cpu[hsw]": _numpy_worker("2.4.6", "openblas 0.3.31", "Haswell", OPENBLAS_CORETYPE="Haswell")}}
    assert forced_kernels(forced)[0].startswith(
        "NumPy 2.4.6 [hsw]'s OpenBLAS runs Haswell kernels (AVX2) because OPENBLAS_CORETYPE=Haswell is set")
    same = {**avx512, "backends": {f"numpy/cpu[{k}]": _numpy_worker("2.4.6", "openblas 0.3.31", "Haswell")
                                   for k in ("a", "b")}}
    (once,) = forced_kernels(same)
    assert once.startswith("NumPy's OpenBLAS runs Haswell kernels (AVX2)")
