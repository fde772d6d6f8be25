"""The results schema: round trip, validation, and every way a results file can be broken."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arraybench import load_results
from arraybench.model import results as results_mod
from arraybench.errors import ResultsError
from arraybench.model.replicate import Replicate
from arraybench.model.record import Record
from arraybench.model.record import Summary
from arraybench.model.results import Results

CORE_FIELDS = ["workload", "size_label", "size", "backend", "device", "dtype", "mode", "status",
               "reason", "median_s", "iqr_s", "min_s", "n_samples", "first_call_s", "max_rel_error"]


def sample_results() -> Results:
    ok = Record("matmul", "small", 100, "numpy", "cpu", "float64", "latency", "ok",
                replicates=[Replicate(samples_s=[1e-4] * 30, first_call_s=2e-4, max_rel_error=1e-16)],
                warnings=["a warning"])
    skipped = Record("matmul", "small", 100, "cupy", "gpu", "float64", "latency", "skipped",
                     reason="no GPU")
    wrong = Summary("fft", "large", 10**6, "jax", "cpu", "float64", "latency", "wrong",
                   reason="result is float32, expected float64", max_rel_error=float("inf"))
    return Results(environment={"python": "3.11"}, settings={"dtype": "float64"},
                   records=[ok, skipped, wrong])


def test_round_trip(tmp_path: Path):
    path = sample_results().save(tmp_path / "results.json")
    loaded = load_results(path)
    assert [r.key for r in loaded.records] == [r.key for r in sample_results().records]
    assert loaded.records[0].samples_s == [1e-4] * 30
    assert loaded.records[0].warnings == ["a warning"]
    assert loaded.records[2].max_rel_error is None  # inf is not JSON: stored as null


def test_every_record_carries_the_contract_fields(tmp_path: Path):
    data = json.loads(sample_results().save(tmp_path / "r.json").read_text())
    assert data["schema_version"] == results_mod.SCHEMA_VERSION
    assert {"environment", "records"} <= set(data)
    for rec in data["records"]:
        assert set(CORE_FIELDS) <= set(rec)


def test_saving_is_atomic(tmp_path: Path):
    path = tmp_path / "results.json"
    sample_results().save(path)
    before = path.read_text()

    class Boom(Exception):
        pass

    res = sample_results()
    res.records[0].reason = "x"
    original = results_mod.json.dumps

    def failing_dumps(*a, **kw):
        raise Boom()

    results_mod.json.dumps = failing_dumps
    try:
        with pytest.raises(Boom):
            res.save(path)
    finally:
        results_mod.json.dumps = original
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary left behind


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("", "is empty"),
    ('{"tool": "arraybench", "schema_version": 1, "records": [', "not valid JSON"),
    ("[1, 2]", "not an arraybench results file"),
    ('{"tool": "pyperf", "schema_version": 1, "records": []}', "not an arraybench results file"),
    ('{"tool": "arraybench", "schema_version": 99, "environment": {}, "records": []}', "schema version 99"),
    ('{"tool": "arraybench", "schema_version": 1, "environment": {}}', "'records'"),
    ('{"tool": "arraybench", "schema_version": 1, "environment": {}, "records": [{"workload": 1}]}', "record 0"),
])
def test_broken_results_files_give_one_line(tmp_path: Path, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_truncated_real_file_is_rejected(tmp_path: Path):
    text = sample_results().save(tmp_path / "full.json").read_text()
    for cut in (10, len(text) // 3, len(text) // 2, len(text) - 3):
        broken = tmp_path / f"cut{cut}.json"
        broken.write_text(text[:cut])
        with pytest.raises(ResultsError):
            load_results(broken)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_files_never_raise_anything_but_results_error(tmp_path: Path, data):
    text = json.dumps(sample_results().to_dict())
    mode = data.draw(st.sampled_from(["flip", "delete", "insert", "replace_value"]))
    if mode == "flip":
        i = data.draw(st.integers(0, len(text) - 1))
        text = text[:i] + data.draw(st.characters()) + text[i + 1:]
    elif mode == "delete":
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i, len(text)))
        text = text[:i] + text[j:]
    elif mode == "insert":
        i = data.draw(st.integers(0, len(text)))
        text = text[:i] + data.draw(st.text(max_size=20)) + text[i:]
    else:
        doc = json.loads(text)
        field = data.draw(st.sampled_from(CORE_FIELDS + ["replicates", "warnings"]))
        doc["records"][0][field] = data.draw(st.one_of(
            st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(),
            st.lists(st.integers()), st.dictionaries(st.text(), st.integers())))
        text = json.dumps(doc)
    path = tmp_path / "fuzz.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        loaded = load_results(path)
    except ResultsError as exc:
        assert "\n" not in str(exc)
    else:
        for r in loaded.records:  # whatever loads is well-typed
            assert isinstance(r.workload, str) and isinstance(r.size, int)
            assert r.median_s is None or isinstance(r.median_s, (int, float))


def test_errors_outside_any_cell_round_trip_and_are_optional(tmp_path: Path):
    res = sample_results()
    res.errors = [{"kind": "workload file", "source": "/x/bench.py", "error": "SyntaxError [at ...]"}]
    loaded = load_results(res.save(tmp_path / "results.json"))
    assert loaded.errors == res.errors
    data = sample_results().to_dict()
    del data["errors"]  # written before the field existed
    assert results_mod.from_dict(data).errors == []
    data["errors"] = "not a list"
    with pytest.raises(ResultsError, match="errors"):
        results_mod.from_dict(data)


@pytest.mark.parametrize("content, message", [
    (b"[" * 100000, "nested too deeply"),  # json raises RecursionError, not a JSONDecodeError
    (b"\xff\xfe\x00\x01 binary", "cannot be read"),
    (b'{"tool": "arraybench", "schema_version": 1, "environment": [], "records": []}', "must be objects"),
    (b'{"tool": "arraybench", "schema_version": "1", "environment": {}, "records": []}', "schema version '1'"),
    (b'{"tool": "arraybench", "schema_version": 1, "environment": {}, "records": [[]]}', "record 0 is not an object"),
    (b'NaN', "not an arraybench results file"),
    (b'"results"', "not an arraybench results file"),
])
def test_more_broken_results_files_give_one_line(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "results.json"
    path.write_bytes(content)
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == content


def test_a_folder_is_not_a_results_file(tmp_path: Path):
    with pytest.raises(ResultsError, match="is a folder"):
        load_results(tmp_path)


def test_saved_files_are_readable_like_any_file(tmp_path: Path):
    import os
    import stat

    path = sample_results().save(tmp_path / "results.json")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask  # not mkstemp's private 0600


def test_a_record_derives_its_figures_and_a_file_without_replicates_reads_as_a_summary(tmp_path: Path):
    from arraybench.analysis.aggregate import aggregate
    from arraybench.model.cell import Cell

    cell = Cell("matmul", "small", 100, "numpy", "cpu", "float64", "latency")
    reps = [Replicate(samples_s=[1e-3 * (1 + 0.01 * ((i * 3 + p) % 7)) for i in range(12)], number=2,
                      first_call_s=5e-3, max_rel_error=1e-16 * (p + 1), flops=1e9) for p in range(3)]
    rec = aggregate(cell, reps, 3, rel_ci=0.5)
    assert not {"median_s", "ci_low_s", "n_samples", "cv"} & {f.name for f in fields(Record)}  # derived, not stored
    assert rec.n_samples == 36 and rec.n_replicates == 3 and rec.max_rel_error == 3e-16 and rec.number == 2
    assert rec.ci_low_s < rec.median_s < rec.ci_high_s and len(rec.replicate_medians_s) == 3
    written = rec.to_dict()
    back = Record.from_dict(written)
    assert isinstance(back, Record) and back.to_dict() == written  # the same figures, derived again
    stored = {k: v for k, v in written.items() if k != "replicates"}
    summary = Record.from_dict(stored)
    assert isinstance(summary, Summary) and summary.to_dict() == {**written, "replicates": []}
    assert summary.median_s == rec.median_s and summary.key == rec.key and summary.config_label == rec.config_label
