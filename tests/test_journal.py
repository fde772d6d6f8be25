"""The journal: torn last lines, damaged journals, and every way a journal can be corrupted.

Whatever is on disk, reading it back either gives a state the runner can resume from (and build a
valid results.json from) or one line saying what is wrong; never a traceback, never a change to
the file before the user says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arraybench import load_results
from arraybench.model import journal
from arraybench import plan
from arraybench.errors import UsageError
from arraybench.model.journal import Journal, JournalError
from arraybench.options import RunOptions
from arraybench.model.replicate import Replicate
from arraybench.session import Session
from arraybench.workloads import REGISTRY

OPTIONS = RunOptions(backends=["numpy"], devices=["cpu"], workloads=["elementwise", "sort"],
                     sizes=["small"], replicates=2)
ENV = {"python": "3.11", "backends": {}}
REPLICATE = {"status": "ok", "reason": "", "warnings": ["w"], "method": "eager", "timer": "wall clock",
         "samples_s": [1.0e-6, 1.1e-6, 0.9e-6], "number": 1000, "first_call_s": 2e-5,
         "warmup_calls": 10, "stop_reason": "converged", "elapsed_s": 0.01,
         "device_samples_s": None, "max_rel_error": 0.0, "tolerance": 1e-15,
         "flops": 1e3, "bytes": 8e3}


def make_journal(out: Path) -> list:
    """A real journal, written by Journal: header, a worker, replicates of index 0, one failure."""
    out.mkdir(parents=True, exist_ok=True)
    options = RunOptions(**OPTIONS.to_dict())
    cells = plan.build_plan(options, REGISTRY)
    j = Journal.create(out, options, cells, ENV)
    j.worker("numpy", "cpu", 0, {"library": "numpy", "blas": "openblas"}, pid=1234)
    j.replicate(cells[0].key, 0, Replicate.from_dict(REPLICATE))
    j.replicate(cells[1].key, 0, Replicate.ended("failed", "worker crashed: killed by signal 11"))
    j.unavailable("torch", "gpu", "no GPU on this machine")
    j.close()
    return cells


def test_a_journal_reads_back_what_was_written(tmp_path: Path):
    cells = make_journal(tmp_path)
    state = journal.read(tmp_path)
    assert state.cells == cells
    assert state.options == OPTIONS
    assert state.replicates == {
        cells[0].key: {0: Replicate.from_dict(REPLICATE)},
        cells[1].key: {0: Replicate.ended("failed", "worker crashed: killed by signal 11")}}
    assert state.unavailable == {("torch", "gpu"): "no GPU on this machine"}
    assert state.worker_info[("numpy", "cpu")]["blas"] == "openblas"


@pytest.mark.parametrize("tail", [
    '{"type": "replicate", "key": "elementwise|sm',  # cut mid-key
    '{"type": "replicate", "key": "x", "index": 0, "replicate": {}}',  # whole entry, newline missing
    '1',  # a prefix that happens to be valid JSON
    '{"type": "replicate", "reason": "caf\u00e9',  # cut ...
])
def test_a_torn_last_line_is_ignored_then_cut_off(tmp_path: Path, tail: str):
    make_journal(tmp_path)
    path = tmp_path / "journal.jsonl"
    whole = path.read_bytes()
    data = whole + tail.encode()
    if tail.endswith("\u00e9"):
        data = data[:-1]  # ... in the middle of a two-byte UTF-8 character
    path.write_bytes(data)
    state = journal.read(tmp_path)
    assert len(state.replicates) == 2
    assert path.read_bytes() == data  # reading changes nothing
    Journal.reopen(tmp_path).close()
    assert path.read_bytes() == whole


@pytest.mark.parametrize("edit, message", [
    (lambda lines: lines[:1] + ["not json"] + lines[1:], "line 2 is not a journal entry"),
    (lambda lines: lines[:2] + ["[1, 2]"] + lines[2:], "line 3 is not a journal entry"),
    (lambda lines: lines[1:], "not an arraybench journal"),
    (lambda lines: ['{"type": "header", "tool": "pyperf"}'] + lines[1:], "not an arraybench journal"),
    (lambda lines: [lines[0].replace('"version": 2', '"version": 7')] + lines[1:], "journal version 7"),
    (lambda lines: [lines[0].replace('"replicates": 2', '"replicates": "2"')] + lines[1:],
     "options.replicates"),
    (lambda lines: [lines[0].replace('"backend": "numpy"', '"backend": "numpi"', 1)] + lines[1:],
     "unknown backend 'numpi'"),
    (lambda lines: lines + [lines[2].replace('"index": 0', '"index": -1')], "a replicate numbered -1"),
    (lambda lines: lines + [lines[2].replace('"status": "ok"', '"status": "great"')], "status: 'great' is not one of"),
    (lambda lines: lines + [lines[2].replace('"samples_s": [', '"samples_s": ["x", ')], "samples_s"),
    (lambda lines: lines + [lines[2].replace('"first_call_s": 2e-05', '"first_call_s": -1')],
     "first_call_s: -1 is below 0"),
    (lambda lines: lines + ['{"type": "gossip"}'], "unknown entry type 'gossip'"),
    (lambda lines: ["[" * 100000], "not an arraybench journal"),
])
def test_a_damaged_journal_is_refused_with_one_line(tmp_path: Path, edit, message):
    make_journal(tmp_path)
    path = tmp_path / "journal.jsonl"
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")
    before = path.read_bytes()
    with pytest.raises(JournalError) as info:
        journal.read(tmp_path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [None, b"", b"\xff\xfe\x00garbage\n", "folder"])
def test_no_journal_or_not_one(tmp_path: Path, content):
    path = tmp_path / "journal.jsonl"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError) as info:
        journal.read(tmp_path)
    assert "\n" not in str(info.value)


def _corrupt(text: str, data) -> str:
    mode = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate", "lines", "value"]))
    if mode == "flip":
        i = data.draw(st.integers(0, len(text) - 1))
        return text[:i] + data.draw(st.characters()) + text[i + 1:]
    if mode == "delete":
        i = data.draw(st.integers(0, len(text) - 1))
        return text[:i] + text[data.draw(st.integers(i, min(len(text), i + 200))):]
    if mode == "insert":
        i = data.draw(st.integers(0, len(text)))
        return text[:i] + data.draw(st.text(max_size=30)) + text[i:]
    if mode == "truncate":
        return text[: data.draw(st.integers(0, len(text)))]
    lines = text.splitlines()
    if mode == "lines":
        op = data.draw(st.sampled_from(["duplicate", "drop", "swap"]))
        i = data.draw(st.integers(0, len(lines) - 1))
        j = data.draw(st.integers(0, len(lines) - 1))
        if op == "duplicate":
            lines.insert(j, lines[i])
        elif op == "drop":
            del lines[i]
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines) + "\n"
    # value: replace one field, anywhere in one entry, with any JSON value
    i = data.draw(st.integers(0, len(lines) - 1))
    entry = json.loads(lines[i])
    target = entry
    while True:
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        if not keys:
            break
        k = data.draw(st.sampled_from(keys))
        if isinstance(target[k], (dict, list)) and target[k] and data.draw(st.booleans()):
            target = target[k]
            continue
        target[k] = data.draw(st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
            max_leaves=5))
        break
    lines[i] = json.dumps(entry)
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_journals_give_one_line_or_a_state_that_resumes(tmp_path_factory, data):
    out = tmp_path_factory.mktemp("journal")
    make_journal(out)
    path = out / "journal.jsonl"
    path.write_bytes(_corrupt(path.read_text(), data).encode("utf-8", "surrogatepass"))
    try:
        state = journal.read(out)
    except UsageError as exc:
        assert str(exc) and len(str(exc).splitlines()) == 1
        return
    # Whatever reads back resumes: the session builds records from it and results.json validates.
    session = Session.resume(state, out)
    try:
        assert session.missing() >= 0
        session.save(session.results(complete=False))
    finally:
        session.sink.close()
    loaded = load_results(out / "results.json")
    assert [r.key for r in loaded.records] == [c.key for c in state.cells]
