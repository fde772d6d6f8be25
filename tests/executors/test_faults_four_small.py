"""Smaller faults around environments, the allocator and worker start,
each done for real: two environments' logs, a variant too long to start a process with, a comma
in a variant's value, MALLOC_ARENA_MAX under ``--allocator fresh``, PYTHONHASHSEED=abc, and the
import folder a SIGKILLed run leaves behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from arraybench.executors.local import worker_variables
from arraybench.executors.worker_log import last_error
from arraybench.host import environments
from arraybench.host.threads import choice_ignored
from arraybench.model.cell import Config
from arraybench.model.options import RunOptions
from arraybench.outdir import WORKER_LOG

from ..conftest import FAST, run_here


def test_environments_whose_labels_join_alike_keep_logs_of_their_own():
    chosen = RunOptions(pythons={"a": sys.executable, "a+b": sys.executable},
                        variants={"b+c": {"X": "1"}, "c": {"X": "2"}})
    names = {}
    for env in environments.of(chosen):
        _, name = worker_variables(chosen, Config("numpy", "cpu", env.label), env, "")
        names[env.label] = name
    # "a/b+c" and "a+b/c" both read "a+b+c" when "/" became "+".
    assert len(set(names.values())) == len(names) == 4, names
    for name in names.values():
        assert "/" not in name and WORKER_LOG.fullmatch(f"{name}-p0.log")  # --overwrite finds it


def test_a_variable_too_long_to_start_a_process_is_refused_in_one_line(tmp_path: Path):
    value = "x" * (130 * 1024)
    # The damage: the kernel starts no process with it (E2BIG), which read "could not write .../python".
    with pytest.raises(OSError) as started:
        subprocess.run([sys.executable, "-c", "pass"], env={"BIG": value}, check=False)
    assert started.value.errno == 7  # E2BIG
    done = run_here("run", "--workloads", "sort", "--backends", "numpy", "--devices", "cpu",
                    "--sizes", "small", "--variant", f"big:BIG={value}", *FAST,
                    "-o", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "BIG= is 133,124 bytes" in lines[0] and "128 KiB" in lines[0], lines
    assert not (tmp_path / "run").exists()
    # Just under the limit starts.
    ok = "x" * (128 * 1024 - len("BIG=") - 1)
    assert environments.check_variants({"big": {"BIG": ok}})["big"]["BIG"] == ok
    subprocess.run([sys.executable, "-c", "pass"], env={"BIG": ok}, check=True)


@pytest.mark.parametrize("text, expected", [
    (r"p:OMP_PLACES={0}\,{1},X=2", {"OMP_PLACES": "{0},{1}", "X": "2"}),
    (r"p:PATHS=a\b,Y=", {"PATHS": r"a\b", "Y": ""}),
    ("p:A=1,B=2", {"A": "1", "B": "2"}),
])
def test_a_comma_in_a_variant_value_is_written_escaped(text: str, expected: dict):
    assert environments.parse_variant(text) == ("p", expected)


def test_a_comma_reaches_the_worker_as_a_comma():
    label, variables = environments.parse_variant(r"p:AB_PLACES={0}\,{1}")
    chosen = RunOptions(variants=environments.check_variants({label: variables}))
    (env,) = environments.of(chosen)
    worker, _ = worker_variables(chosen, Config("numpy", "cpu", env.label), env, "")
    assert worker["AB_PLACES"] == "{0},{1}"


def test_an_allocator_state_the_shell_overrides_is_said_not_applied(tmp_path: Path):
    out = tmp_path / "run"
    done = run_here("run", "--workloads", "sort", "--backends", "numpy", "--devices", "cpu",
                    "--sizes", "small", "--allocator", "fresh", *FAST, "-o", str(out), cwd=tmp_path,
                    env={"MALLOC_ARENA_MAX": "2"})
    assert done.returncode == 0, done.stderr
    said = "--allocator fresh is not applied (MALLOC_ARENA_MAX set by the user)"
    assert said in done.stderr
    record = json.loads((out / "results.json").read_text())["records"][0]
    assert record["allocator"] == "" and any(said in w for w in record["warnings"])
    # Without the variable the state is applied and nothing is said; "both" (the default) is
    # the user's choice of nothing, and records say "" where it was not controlled, as before.
    assert choice_ignored("fresh", {}) == "" and choice_ignored("both", {"MALLOC_ARENA_MAX": "2"}) == ""


def test_a_bad_hash_seed_is_named_not_the_runtime_state():
    env = {**os.environ, "PYTHONHASHSEED": "abc"}
    done = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "preinitialized" in done.stderr  # what a worker writes
    assert "PYTHONHASHSEED must be" in last_error(done.stderr)


def test_the_import_folder_of_a_killed_run_goes_at_the_next_start(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    code = ("import os, signal, tempfile; tempfile.tempdir = None\n"
            "from arraybench.host.environments import import_dir\n"
            "print(import_dir(), flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert killed.returncode == -signal.SIGKILL
    left = Path(killed.stdout.strip())
    assert left.parent == tmp_path and left.is_dir() and (left / "arraybench").is_symlink()
    mine = tmp_path / f"{environments.IMPORT_PREFIX}{os.getpid()}-live"
    mine.mkdir()  # a live process's folder stays
    target = Path(environments.__file__).resolve().parent.parent
    assert environments.remove_stale_folders(str(tmp_path)) == [str(left)]
    assert not left.exists() and mine.is_dir() and target.is_dir()  # the link was not followed


def test_a_run_that_could_not_be_sealed_is_given_a_hint_that_resumes_it(tmp_path: Path):
    (tmp_path / "file").write_text("")
    unwritable = {"XDG_DATA_HOME": str(tmp_path / "file" / "data")}  # no key can be kept under a file
    source = tmp_path / "wl.py"
    source.write_text("import arraybench\n\n@arraybench.workload(sizes={'tiny': 64})\n"
                      "def h36_double(xp, x):\n    return x * 2\n")
    out = tmp_path / "run"
    args = ("run", "--workload-file", str(source), "--workloads", "h36_double", "--backends", "numpy",
            "--devices", "cpu", *FAST, "--no-store", "-o", str(out))
    assert run_here(*args, cwd=tmp_path, env=unwritable).returncode == 0
    journal = out / "journal.jsonl"
    header = journal.read_text().splitlines()[0]
    assert '"seal"' not in header
    journal.write_text(header + "\n")  # what a run stopped before its first cell leaves
    refused = run_here(*args, cwd=tmp_path, env=unwritable)
    assert refused.returncode == 2
    hint = refused.stderr.split("continue it with `")[1].split("`")[0]
    assert hint == f"arraybench run --resume {out} --trust-folder (the run could not be sealed as yours: " \
                   f"{tmp_path / 'file' / 'data' / 'arraybench'} cannot keep arraybench's key, so " \
                   "without it the code the run names is not run)"
    plain = run_here("run", "--resume", str(out), "--no-store", "-q", cwd=tmp_path, env=unwritable)
    assert plain.returncode == 2 and "not written by your arraybench" in plain.stderr  # the damage
    hinted = run_here(*hint.split(" (")[0].split()[1:], "--no-store", "-q", cwd=tmp_path, env=unwritable)
    assert hinted.returncode == 0, hinted.stderr
    assert json.loads((out / "results.json").read_text())["records"][0]["n_samples"] >= 3
