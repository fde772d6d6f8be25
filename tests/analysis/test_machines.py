"""Several machines: identity, merge with the machine as a dimension, findings across machines,
each machine's own ceilings, compare refused across machines, and the exports."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import arraybench
from arraybench.host import machine
from arraybench.render.findings import machine_findings
from arraybench.analysis.roofline import ceilings, share
from arraybench.model.runs import IDENTITY, CrossMachineError, fingerprint_changes, machine_id
from arraybench.model.runs import merge
from arraybench.render.files import bencher_metric_format, github_action_benchmark
from arraybench.model.results import load

from ..conftest import run_here
from ..synthetic import fingerprint, record, results, spread, timed_run


def test_a_driver_or_kernel_update_is_the_same_machine_and_a_new_host_is_not():
    base = fingerprint(driver="535.1")
    updated = fingerprint(driver="550.4", os_release="Linux 6.9")
    updated["memory_gib"] = 32.0
    assert machine_id(base) == machine_id(updated)
    assert machine_id(base) != machine_id(fingerprint(host="host-b"))
    assert machine_id(base) != machine_id(fingerprint(cpu="Other CPU"))
    assert fingerprint_changes(base, updated) == [("kernel", "Linux 6.1", "Linux 6.9"),
                                                  ("memory (GiB)", "16.0", "32.0"),
                                                  ("GPU driver", "535.1", "550.4")]


def test_this_machines_fingerprint_hashes_the_host_name_and_keeps_no_personal_data():
    import socket

    env = machine.collect()
    fp = env["fingerprint"]
    assert env["machine_id"] == machine_id(fp) and re.fullmatch(r"[0-9a-f]{12}", env["machine_id"])
    assert socket.gethostname() not in json.dumps(env["fingerprint"])
    assert set(IDENTITY) - {"gpu_models"} <= set(fp)


def _other_machine(run_dir: Path, dest: Path, factor: float) -> Path:
    """A copy of a real run, as if measured on another machine ``factor`` times faster."""
    data = json.loads((run_dir / "results.json").read_text())
    env = data["environment"]
    env["fingerprint"]["host_sha"] = "b0b0b0b0b0b0"
    env["fingerprint"]["cpu_model"] = env["cpu_model"] = "Big Box 128-core"
    env["machine_id"] = machine_id(env["fingerprint"])
    for r in data["records"]:
        for k in ("median_s", "ci_low_s", "ci_high_s", "min_s", "iqr_s"):
            if r.get(k):
                r[k] /= factor
        r["replicate_medians_s"] = [m / factor for m in r.get("replicate_medians_s", [])]
        for rep in r.get("replicates", []):
            rep["samples_s"] = [x / factor for x in rep["samples_s"]]
    dest.mkdir()
    (dest / "results.json").write_text(json.dumps(data))
    return dest


def test_merge_two_machines_gives_a_machine_column_and_a_finding_across_machines(real_run, tmp_path: Path):
    box = _other_machine(real_run.out, tmp_path / "box", factor=14.0)
    out = tmp_path / "merged"
    done = run_here("merge", f"laptop={real_run.out}", str(box), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    merged = load(out / "results.json")
    assert set(merged.environment["machines"]) == {"laptop", "box"}
    assert {r.machine for r in merged.records} == {"laptop", "box"}
    assert len(merged.records) == 2 * len(load(real_run.out / "results.json").records)
    # (the header may wrap "library / device" over two lines where the table is narrow)
    lines = done.stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    header = " ".join(lines[top + 1:next(i for i, line in enumerate(lines) if line.startswith("┡"))])
    assert "machine" in header
    assert re.search(r"matmul.*PyTorch CPU\s+│\s+laptop", done.stdout.replace("┃", "│"), re.S)
    findings = (out / "findings.md").read_text()
    # The fixture's run is short (3 samples a cell): where its intervals are wide, the machines are
    # said level; where they are apart, the sentence gives the factor.
    assert re.search(r"On (matmul|sort) small \(n = [\d,]+\), box is 14× faster than laptop \("
                     r"(NumPy|PyTorch) CPU [\d.]+ \w?s against", findings), findings
    assert "on laptop, " in findings  # libraries are still set against each other on one machine
    page = (out / "report.html").read_text()
    assert "<th class='' scope='col'>machine</th>" in page
    assert "Big Box 128-core" in page and "<td class='machine'>box</td>" in page
    assert (out / "matmul_small.svg").is_file()
    # Each machine's speed-ups are against its own NumPy.
    numpy_rows = re.findall(r"<td>NumPy CPU</td><td class='machine'>\w+</td>.*?</tr>", page)
    assert len(numpy_rows) >= 4 and all("<td class='num' data-v='1.0'>baseline</td>" in row for row in numpy_rows)


def test_merging_refuses_one_run_and_writing_over_an_input(real_run, tmp_path: Path):
    one = run_here("merge", str(real_run.out), "-o", str(tmp_path / "m"), cwd=tmp_path)
    assert one.returncode == 2 and "at least two runs" in one.stderr
    box = _other_machine(real_run.out, tmp_path / "box", factor=2.0)
    over = run_here("merge", str(real_run.out), str(box), "-o", str(box), cwd=tmp_path)
    assert over.returncode == 2 and "holds one of the runs" in over.stderr
    assert json.loads((box / "results.json").read_text())["records"]  # untouched


def test_each_machine_keeps_its_own_ceilings():
    def machine(label: str, peak_s: float) -> list:
        recs = [record("ceiling_matmul", samples=spread(peak_s), flops=1e10, bytes=1e8),
                record("ceiling_bandwidth", samples=spread(0.1), flops=1e7, bytes=1e9),
                record("matmul", "torch", samples=spread(0.04), flops=2e9, bytes=2.4e7)]
        return [results(recs, machine_id=label)]
    fast, slow = machine("a", 0.1)[0], machine("b", 0.2)[0]  # 100 and 50 GFLOP/s peaks
    merged = merge([fast, slow], ["fast", "slow"])
    table = ceilings(merged.records)
    assert table[("fast", "cpu", "float64")].peak_flops == pytest.approx(1e11)
    assert table[("slow", "cpu", "float64")].peak_flops == pytest.approx(5e10)
    shares = {r.machine: share(r, table) for r in merged.records if r.workload == "matmul"}
    assert shares == {"fast": pytest.approx(0.5), "slow": pytest.approx(1.0)}


def test_level_machines_are_said_level_and_one_machine_has_no_such_finding():
    a = results([record("sort", "numpy", samples=spread(1e-3, width=0.05))], machine_id="a")
    b = results([record("sort", "numpy", samples=spread(1.01e-3, width=0.05))], machine_id="b")
    assert machine_findings(a.records) == []
    (sentence,) = machine_findings(merge([a, b], ["x", "y"]).records)
    assert sentence.startswith("On sort small (n = 100), x and y are level")


def test_machines_no_verdict_separates_are_not_called_level():
    # Intervals of ±30%: they overlap, but neither lies within 5% of the other, so not "level".
    a = results([record("sort", "numpy", samples=spread(1e-3, width=0.6), replicates=3)], machine_id="a")
    b = results([record("sort", "numpy", samples=spread(1.05e-3, width=0.6), replicates=3)], machine_id="b")
    (sentence,) = machine_findings(merge([a, b], ["x", "y"]).records)
    assert "x and y are not told apart" in sentence or "y and x are not told apart" in sentence, sentence


def test_compare_across_machines_is_refused_unless_asked_and_then_said(real_run, tmp_path: Path):
    box = _other_machine(real_run.out, tmp_path / "box", factor=2.0)
    refused = run_here("compare", str(real_run.out), str(box), cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "different machines" in refused.stderr
    assert "--cross-machine" in refused.stderr
    allowed = run_here("compare", str(real_run.out), str(box), "--cross-machine", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "across machines (--cross-machine): base on" in allowed.stdout
    assert "Big Box 128-core" in allowed.stdout and "faster" in allowed.stdout
    with pytest.raises(CrossMachineError):
        arraybench.compare(real_run.out, box)
    same = run_here("compare", str(real_run.out), str(real_run.out), cwd=tmp_path)
    assert same.returncode == 0 and "across machines" not in same.stdout


def test_merged_results_compare_machine_by_machine():
    a = results([record("sort", "numpy", samples=spread(1e-3))], machine_id="a")
    b = results([record("sort", "numpy", samples=spread(2e-3))], machine_id="b")
    before = merge([a, b], ["x", "y"])
    after = merge([copy.deepcopy(a), copy.deepcopy(b)], ["x", "y"])
    comparison = after.compare(before)
    assert len(comparison.changes) == 2 and {c.new.machine for c in comparison.changes} == {"x", "y"}
    assert all(c.ratio == pytest.approx(1.0) for c in comparison.changes)


def test_exports_map_each_valid_record_to_nanoseconds_with_its_interval(tmp_path: Path):
    run = timed_run(1)
    run.records.append(record("fft", "jax", status="failed", reason="boom"))
    github = github_action_benchmark(run)
    assert [e["name"] for e in github] == ["matmul/small/NumPy CPU", "matmul/small/PyTorch CPU"]
    first, rec = github[0], run.records[0]
    assert first["unit"] == "ns/call" and first["value"] == pytest.approx(rec.median_s * 1e9)
    assert first["range"] == f"± {(rec.ci_high_s - rec.ci_low_s) / 2 * 1e9:.4g}"
    assert "numpy 2.0.0" in first["extra"]
    bmf = bencher_metric_format(run)
    assert set(bmf) == {"matmul/small/NumPy CPU", "matmul/small/PyTorch CPU"}
    latency = bmf["matmul/small/PyTorch CPU"]["latency"]
    assert latency == {"value": pytest.approx(run.records[1].median_s * 1e9),
                       "lower_value": pytest.approx(run.records[1].ci_low_s * 1e9),
                       "upper_value": pytest.approx(run.records[1].ci_high_s * 1e9)}
    run.save(tmp_path / "results.json")
    done = run_here("export", str(tmp_path), "--format", "bencher", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout) == json.loads(json.dumps(bmf))
    written = run_here("export", str(tmp_path), "--format", "github", "-o", str(tmp_path / "gab.json"),
                       cwd=tmp_path)
    assert written.returncode == 0 and json.loads((tmp_path / "gab.json").read_text()) == github
    bad = run_here("export", str(tmp_path), "--format", "csv", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown --format value 'csv'" in bad.stderr
