"""Bad input on the real command line: one line naming the problem, exit status 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import run_cli, run_here

BAD = [
    (["run", "--backends", "numpi"], "unknown backend 'numpi'"),
    (["run", "--workloads", "matmull"], "unknown workload 'matmull'"),
    (["run", "--devices", "tpu"], "unknown device 'tpu'"),
    (["run", "--dtype", "float16"], "unknown --dtype value 'float16'"),
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
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["run", "--workload-file", "/no/such/file.py"], "no such file"),
    (["run", "--resume", "/no/such/dir"], "no journal.jsonl"),
]

#: More bad input, checked in-process (the same code path as the command line, without paying an
#: interpreter start for each) by test_bad_input_leaves_a_previous_run_untouched.
MORE_BAD = [
    (["run", "--seed", "-1"], "'-1' must be 0 or more"),
    (["run", "--seed", "1.5"], "'1.5' is not a whole number"),
    (["run", "--sizes", "16:4096:100000000"], "STEPS must be at most 1000"),
    (["run", "--sizes", "16:4096:1"], "STEPS must be at least 2"),
    (["run", "--sizes", "16:"], "size '' is not a number"),
    (["run", "--sizes", "1:2:3:4"], "must be LO:HI or LO:HI:STEPS"),
    (["run", "--sizes", "1e999"], "not a whole number"),
    (["run", "--sizes", "10000000001"], "absurdly large"),
    (["run", "--sizes", "small,0"], "size 0 must be positive"),
    (["run", "--timeout", "0"], "must be a positive number"),
    (["run", "--timeout", "inf"], "must be a positive number"),
    (["run", "--processes", "1.5"], "not a whole number"),
    (["run", "--min-samples", "-3"], "must be at least 1"),
    (["run", "--rel-ci", "0"], "between 0 and 1"),
    (["run", "--rel-ci", "two"], "not a fraction"),
    (["run", "--backends", ""], "no backend selected"),
    (["run", "--mode", ","], "no mode selected"),
    (["run", "--backends", "cupy", "--devices", "cpu"], "gives nothing to run"),
    (["run", "--workloads", "matmul,nonsense"], "unknown workload 'nonsense'"),
    (["run", "--backends", "numpy\nimport os"], "unknown backend 'numpy\\nimport os'"),
]


#: Bad input given to a fresh interpreter (``python -m arraybench``: the exit status and standard
#: error a shell sees), one of each way the command line refuses: argparse, an unknown command, the
#: options' check, a missing file. The rest take the same code path in this process (``run_here``),
#: without paying an interpreter start each.
IN_A_PROCESS_OF_ITS_OWN = {"run --bogus", "frobnicate", "run --backends numpi",
                           "run --workload-file /no/such/file.py"}


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_gets_one_line_and_status_2(args, message, tmp_path: Path):
    call = run_cli if " ".join(args) in IN_A_PROCESS_OF_ITS_OWN else run_here
    result = call(*args, "--output-dir", str(tmp_path / "out"), cwd=tmp_path) \
        if args[0] == "run" else call(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_unwritable_output_dir_is_refused_before_measuring(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("I am a file")
    result = run_here("run", "--output-dir", str(blocker / "sub"), cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot write there" in result.stderr
    assert blocker.read_text() == "I am a file"


def test_an_output_dir_that_is_a_file_is_refused(tmp_path: Path):
    target = tmp_path / "results"
    target.write_text("keep me")
    result = run_here("run", "--output-dir", str(target), cwd=tmp_path)
    assert result.returncode == 2 and "not a folder" in result.stderr
    assert target.read_text() == "keep me"


def test_an_interrupted_run_is_not_overwritten_by_accident(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    journal = out / "journal.jsonl"
    journal.write_text(json.dumps({"type": "header", "tool": "arraybench"}) + "\n")
    result = run_here("run", "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 2
    assert "--resume" in result.stderr
    assert journal.read_text().startswith('{"type": "header"')


def test_help_documents_every_option(tmp_path: Path):
    result = run_here("run", "--help", cwd=tmp_path)
    assert result.returncode == 0
    for option in ("--backends", "--devices", "--workloads", "--sizes", "--dtype", "--output-dir",
                   "--mode", "--processes", "--max-time", "--rel-ci", "--threads", "--cold",
                   "--timeout", "--resume", "--include-transfer", "--workload-file"):
        assert option in result.stdout


def test_list_shows_the_builtin_workloads(tmp_path: Path):
    result = run_here("list", cwd=tmp_path)
    assert result.returncode == 0
    for name in ("elementwise", "matmul", "gradient", "fft", "sort"):
        assert name in result.stdout


# -- nothing on disk is overwritten or lost ---------------------------------------------------------
def _previous_run(out: Path) -> dict[str, bytes]:
    """An output folder holding a finished run: what a bad command must leave exactly as it is."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"tool": "arraybench", "schema_version": 1,
                                                  "complete": True, "environment": {},
                                                  "settings": {}, "records": []}))
    (out / "journal.jsonl").write_text('{"type": "header", "tool": "arraybench"}\n')
    (out / "matmul_small.svg").write_text("<svg/>")
    return {p.name: p.read_bytes() for p in out.iterdir()}


RUN_BAD = [b for b in BAD + MORE_BAD if b[0][0] == "run"]


@pytest.mark.parametrize("args, message", RUN_BAD, ids=[" ".join(a) for a, _ in RUN_BAD])
def test_bad_input_leaves_a_previous_run_untouched(args, message, tmp_path: Path, capsys):
    from arraybench.commands.main import main

    out = tmp_path / "out"
    before = _previous_run(out)
    assert main([*args, "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_an_unfinished_run_with_a_garbled_results_file_is_still_protected(tmp_path: Path, capsys):
    from arraybench.commands.main import main

    out = tmp_path / "out"
    before = _previous_run(out)
    (out / "results.json").write_text("[" * 100000)  # not a results file: not a finished run
    before["results.json"] = (out / "results.json").read_bytes()
    assert main(["run", "--backends", "numpy", "--output-dir", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_an_empty_output_dir_name_is_refused(tmp_path: Path, capsys):
    from arraybench.commands.main import main

    assert main(["run", "--backends", "numpy", "--output-dir", ""]) == 2
    assert "--output-dir is empty" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--dtype", "float32"], "these differ: dtype (saved 'float64', given 'float32')"),
    (["--backends", "numpy,torch", "--processes", "5"],
     "these differ: backends (saved ['numpy'], given ['numpy', 'torch']); processes (saved 2:6, given 5)"),
    (["--overwrite"], "--resume continues a run and --overwrite starts afresh"),
    (["--output-dir", "elsewhere"], "leave out --output-dir elsewhere"),
])
def test_resume_refuses_conflicting_options_and_changes_nothing(extra, message, tmp_path: Path,
                                                                capsys):
    from arraybench.commands.main import main

    from ..model.test_journal import make_journal

    out = tmp_path / "run"
    make_journal(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["run", "--resume", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not (tmp_path / "elsewhere").exists()


def test_resume_refuses_a_damaged_journal_with_its_line(tmp_path: Path, capsys):
    from arraybench.commands.main import main

    from ..model.test_journal import make_journal

    out = tmp_path / "run"
    make_journal(out)
    lines = (out / "journal.jsonl").read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a middle line cut short: damage, not a torn tail
    (out / "journal.jsonl").write_text("\n".join(lines) + "\n")
    before = (out / "journal.jsonl").read_bytes()
    assert main(["run", "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 3 is not a journal entry" in err and "--overwrite" in err
    assert (out / "journal.jsonl").read_bytes() == before
