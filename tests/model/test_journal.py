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
from arraybench.model.options import RunOptions
from arraybench.model.replicate import Replicate
from arraybench.executors.session import Session
from arraybench.workloads import REGISTRY

OPTIONS = RunOptions(backends=["numpy"], devices=["cpu"], workloads=["elementwise", "sort"],
                     sizes=["small"], processes=2)
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
    assert state.unavailable == {("torch", "gpu", ""): "no GPU on this machine"}
    assert state.worker_info[("numpy", "cpu", "")]["blas"] == "openblas"


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
    (lambda lines: [lines[0].replace('"processes": 2', '"processes": "2"')] + lines[1:],
     "options.processes"),
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


class _Gapped:
    """An executor (``executors.session.Executor``) that brings home replicates 0, 1 and 3 of the
    first cell and nothing else: a gap no worker process leaves, which every reader must count."""

    def plan(self, cells):
        return cells

    def run(self, run, options, out_dir):
        run.begin()
        first = run.cells[0]
        for index in (0, 1, 3):
            run.keep(first, index, Replicate.from_dict(REPLICATE))

    def close(self):
        pass


def test_the_live_run_and_its_journal_read_back_agree_on_what_is_missing(tmp_path: Path):
    from arraybench.outdir import unfinished
    from arraybench.analysis.policy import RunState

    options = RunOptions(**{**OPTIONS.to_dict(), "processes": 3, "max_processes": None})
    cells = plan.build_plan(options, REGISTRY)
    session = Session.start(cells, options, tmp_path)
    results = session.run(_Gapped())
    # Fixed at three: the first cell lacks its index 2 although it holds three replicates.
    assert session.missing_indices(cells[0]) == [2]
    assert session.missing() == 1 + 3 * (len(cells) - 1)
    assert results.complete is False
    read_back = RunState.of(journal.read(tmp_path))
    assert read_back.missing_indices(cells[0]) == [2]
    assert read_back.missing() == session.missing()
    assert read_back.cells_done() == 0
    assert "holds an unfinished run" in (unfinished(tmp_path) or "")


def test_resume_reads_the_journal_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import arraybench

    options = RunOptions(**{**OPTIONS.to_dict(), "processes": 1, "max_processes": None})
    cells = plan.build_plan(options, REGISTRY)
    j = Journal.create(tmp_path, options, cells, ENV)
    for c in cells:
        j.replicate(c.key, 0, Replicate.from_dict(REPLICATE))
    j.close()
    reads = []
    real = journal.read
    monkeypatch.setattr(journal, "read", lambda out: reads.append(out) or real(out))
    results = arraybench.resume(tmp_path, plots=False, store=False)
    assert results.complete and len(results.records) == len(cells)
    assert reads == [tmp_path]


@pytest.mark.parametrize("make", ["nothing", "folder", "link"])
def test_resume_without_a_journal_says_so_and_leaves_the_folder_as_it_was(tmp_path: Path, make: str):
    import arraybench

    out = tmp_path / "out"
    out.mkdir()
    if make == "folder":
        (out / "journal.jsonl").mkdir()
    elif make == "link":
        (tmp_path / "elsewhere.jsonl").write_text("")
        (out / "journal.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(JournalError) as cheap:
        arraybench.resume(out, plots=False, store=False)
    with pytest.raises(JournalError) as full:
        journal.read(out)
    assert str(cheap.value) == str(full.value)  # the check before the lock says what read says
    assert sorted(p.name for p in out.iterdir()) == before  # no lock file, no logs folder


def test_a_node_journals_into_a_queue_and_writes_no_journal(tmp_path: Path):
    import queue

    pytest.importorskip("ray")
    from arraybench.executors.ray_agent import _QueueSink
    from arraybench.model.journal import Reporter
    from arraybench.analysis.policy import RunState

    options = RunOptions(**{**OPTIONS.to_dict(), "processes": 3, "max_processes": None})
    cells = plan.build_plan(options, REGISTRY)
    events: queue.Queue = queue.Queue()
    session = Session(RunState(cells, options), tmp_path, _QueueSink(events), {}, Reporter())
    session.run(_Gapped())
    sent = [events.get_nowait() for _ in range(events.qsize())]
    assert [(e["event"], e["key"], e["index"]) for e in sent] == [
        ("replicate", cells[0].key, i) for i in (0, 1, 3)]
    assert Replicate.from_dict(sent[0]["replicate"]) == Replicate.from_dict(REPLICATE)
    assert not (tmp_path / "journal.jsonl").exists()


def test_resume_refuses_other_settings_from_python_as_the_command_line_does(tmp_path: Path):
    import arraybench

    options = RunOptions(**{**OPTIONS.to_dict(), "processes": 1, "max_processes": None})
    cells = plan.build_plan(options, REGISTRY)
    j = Journal.create(tmp_path, options, cells, ENV)
    j.replicate(cells[0].key, 0, Replicate.from_dict(REPLICATE))
    j.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    other = "float32" if options.dtype == "float64" else "float64"
    with pytest.raises(UsageError) as refused:
        arraybench.resume(tmp_path, plots=False, store=False,
                          options={"dtype": other, "processes": 1, "seed": options.seed})
    # The same processes and seed are no difference: only the dtype is named.
    assert str(refused.value) == ("resume() uses the run's own settings; these differ: dtype "
                                  f"(saved {options.dtype!r}, given {other!r})")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
