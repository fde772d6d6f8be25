"""Bad input on the real command line: one line naming the problem, exit status 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import run_cli

BAD = [
    (["run", "--backends", "numpi"], "unknown backend 'numpi'"),
    (["run", "--workloads", "matmull"], "unknown workload 'matmull'"),
    (["run", "--devices", "tpu"], "unknown device 'tpu'"),
    (["run", "--dtype", "float16"], "invalid choice: 'float16'"),
    (["run", "--mode", "fast"], "unknown mode 'fast'"),
    (["run", "--sizes", "0"], "size 0 must be positive"),
    (["run", "--sizes", "-5"], "size -5 must be positive"),
    (["run", "--sizes", "ten"], "has no size 'ten'"),
    (["run", "--sizes", "1e30"], "absurdly large"),
    (["run", "--sizes", "12.5"], "not a whole number"),
    (["run", "--sizes", "4096:16"], "goes down"),
    (["run", "--sizes", ","], "names no size"),
    (["run", "--processes", "0"], "must be at least 1"),
    (["run", "--max-time", "-1"], "must be a positive number"),
    (["run", "--max-time", "nan"], "must be a positive number"),
    (["run", "--rel-ci", "150%"], "between 0 and 1"),
    (["run", "--threads", "zero"], "not a whole number"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run", "--workload-file", "/no/such/file.py"], "no such file"),
    (["run", "--resume", "/no/such/dir"], "no journal.jsonl"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_gets_one_line_and_status_2(args, message, tmp_path: Path):
    result = run_cli(*args, "--output-dir", str(tmp_path / "out"), cwd=tmp_path) \
        if args[0] == "run" else run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_unwritable_output_dir_is_refused_before_measuring(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("I am a file")
    result = run_cli("run", "--output-dir", str(blocker / "sub"), cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot write there" in result.stderr
    assert blocker.read_text() == "I am a file"


def test_an_output_dir_that_is_a_file_is_refused(tmp_path: Path):
    target = tmp_path / "results"
    target.write_text("keep me")
    result = run_cli("run", "--output-dir", str(target), cwd=tmp_path)
    assert result.returncode == 2 and "not a folder" in result.stderr
    assert target.read_text() == "keep me"


def test_an_interrupted_run_is_not_overwritten_by_accident(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    journal = out / "journal.jsonl"
    journal.write_text(json.dumps({"type": "header", "tool": "arraybench"}) + "\n")
    result = run_cli("run", "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 2
    assert "--resume" in result.stderr
    assert journal.read_text().startswith('{"type": "header"')


def test_help_documents_every_option():
    result = run_cli("run", "--help")
    assert result.returncode == 0
    for option in ("--backends", "--devices", "--workloads", "--sizes", "--dtype", "--output-dir",
                   "--mode", "--processes", "--max-time", "--rel-ci", "--threads", "--cold",
                   "--timeout", "--resume", "--include-transfer", "--workload-file"):
        assert option in result.stdout


def test_list_shows_the_builtin_workloads():
    result = run_cli("list")
    assert result.returncode == 0
    for name in ("elementwise", "matmul", "gradient", "fft", "sort"):
        assert name in result.stdout
