"""The rendering facade: results are data that reach rendering by name, findings are computed once
per run, and a configuration is labelled by one function everywhere it is shown."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from arraybench.model.runs import merge
from arraybench.model.cell import config_label
from arraybench.render import report
from arraybench.render.html import render_html, results_table_html
from arraybench.render.report import markdown_report

from ..synthetic import record, results, spread


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loading_results_imports_no_rendering_and_no_analysis(tmp_path: Path):
    path = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(2e-3))]).save(
        tmp_path / "results.json")
    out = _fresh(
        "import sys\n"
        "from arraybench.model.results import load\n"
        f"res = load({str(path)!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith(('arraybench.render', 'arraybench.analysis.f'))))\n"
        "text = repr(res)\n"
        "assert 'NumPy CPU' in text and 'PyTorch CPU' in text, text\n"
        "assert '<table' in res._repr_html_()\n"
        "print('arraybench.render.report' in sys.modules)\n")
    before, after = out.splitlines()
    assert before == "[]"  # the model alone: no table, template or finding code loaded
    assert after == "True"  # shown, it reached the facade by name and rendered its table


def test_findings_are_computed_once_per_run_and_again_when_the_records_change(monkeypatch, tmp_path):
    calls = []
    compute = report.compute_findings

    def counted(records, environment, pairs):
        calls.append(len(records))
        return compute(records, environment, pairs)

    monkeypatch.setattr(report, "compute_findings", counted)
    res = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(0.5e-3))])
    written = res.write_report(tmp_path, plots=False)
    shown = io.StringIO()
    report.show(res, Console(file=shown, width=120))
    found = res.findings()
    assert calls == [2]  # the report files, the terminal and findings() share one computation
    assert found and found[0] in (tmp_path / "findings.md").read_text() and found[0] in shown.getvalue()
    assert found[0] in (tmp_path / "report.html").read_text() and found[0] in (tmp_path / "results.md").read_text()
    assert {p.name for p in written} == {"report.html", "results.md", "results.csv", "findings.md"}
    found.append("changed by the caller")
    assert "changed by the caller" not in res.findings()  # each caller gets its own list
    res.records.append(record(backend="jax", samples=spread(0.2e-3)))
    assert "JAX CPU" in " ".join(res.findings())
    assert calls == [2, 3]


def test_two_runs_have_their_own_findings():
    a = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(0.5e-3))])
    b = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(2e-3))])
    assert a.findings() != b.findings()
    assert "PyTorch CPU is fastest" in a.findings()[0] and "NumPy CPU is fastest" in b.findings()[0]


@pytest.mark.parametrize("args, kwargs, label", [
    (("torch", "cpu"), {}, "PyTorch CPU"),
    (("jax", "gpu", "compiled"), {}, "JAX GPU (compiled)"),
    (("cupy", "gpu"), {"transfer": True, "machine": "box"}, "CuPy GPU (+transfer) @ box"),
    (("numpy", "cpu"), {"gradient": "finite_differences"}, "NumPy CPU (finite diff.)"),
    (("mylib", "cpu"), {}, "mylib CPU"),
])
def test_a_configuration_has_one_label(args, kwargs, label):
    assert config_label(*args, **kwargs) == label


def test_every_format_names_a_merged_configuration_alike(tmp_path: Path):
    a = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(0.5e-3)),
                 record(backend="torch", device="gpu", status="skipped", reason="no GPU here")])
    b = results([record(samples=spread(2e-3)), record(backend="torch", samples=spread(1e-3))])
    merged = merge([a, b], ["laptop", "server"])
    torch = next(r for r in merged.records if r.backend == "torch" and r.machine == "server")
    assert torch.config_label == "PyTorch CPU @ server"
    text = merged.table(width=160)
    page = render_html(merged)
    fragment = results_table_html(merged)
    md = markdown_report(merged)
    # Tables with a machine column name the library without it; the rest name the machine too.
    assert "<td>PyTorch CPU</td><td class='machine'>server</td>" in page
    assert "PyTorch CPU" in text and "server" in text
    assert "PyTorch CPU @ server" in md and "<td>PyTorch CPU @ server</td>" in fragment
    # The configuration unavailable in every cell is said once, by the same label, in each.
    for shown in (text, page, md):
        assert shown.count("PyTorch GPU: no GPU here") + shown.count("PyTorch GPU</b>: no GPU here") == 1


def test_the_html_report_comes_from_autoescaped_templates():
    hostile = "<b onmouseover='x'>"
    res = results([record(hostile, samples=spread(1e-3), method=hostile),
                   record(hostile, "torch", status="failed", reason=hostile)], context=hostile)
    page = render_html(res, findings=[hostile])
    assert hostile not in page and "&lt;b onmouseover=&#39;x&#39;&gt;" in page
    assert page.count("&lt;b onmouseover") >= 5  # heading, finding, method, reason, environment
