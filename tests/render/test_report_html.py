"""report.html from synthetic results: escaping, sections, optional columns, inlined plots."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from arraybench.render.html import inline_svg, render_html
from arraybench.render.plots import write_plots

from ..synthetic import record, results, spread

HOSTILE = "<script>alert('x')</script>&\"'"


class _Collect(HTMLParser):
    """Tags and text of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    return p


def sample_results():
    return results([
        record("matmul", "numpy", samples=spread(1e-3), flops=2e6, bytes=2.4e5),
        record("matmul", "torch", samples=spread(0.5e-3), flops=2e6, bytes=2.4e5,
               warnings=["bimodal: samples cluster at 0.4 ms and 0.6 ms"]),
        record("matmul", "jax", status="wrong", reason="max relative error 1e-3 > tolerance 1e-14",
               max_rel_error=1e-3, tolerance=1e-14),
        record("matmul", "torch", "gpu", status="skipped", reason="no GPU on this machine"),
        record("sort", "numpy", samples=spread(2e-3)),
        record("sort", "torch", status="failed", reason="worker crashed: SIGSEGV"),
        record("sort", "torch", "gpu", status="skipped", reason="no GPU on this machine"),
    ])


def test_the_page_has_every_section_and_every_record():
    page = render_html(sample_results(), findings=["PyTorch CPU is 2× faster than NumPy on matmul."])
    assert page.startswith("<!DOCTYPE html>")
    for anchor in ("findings", "not-measured", "environment"):
        assert f"id='{anchor}'" in page
    assert "PyTorch CPU is 2× faster than NumPy on matmul." in page
    # Every record that ran has a row; the unavailable GPU is said once, not once per cell.
    assert len(re.findall(r"<tr class='[^']*' data-key=", page)) == 5
    assert page.count("no GPU on this machine") == 1
    assert "worker crashed: SIGSEGV" in page and "max relative error 1e-3" in page
    assert "Test CPU 9000" in page
    # The fastest correct configuration is marked; a wrong result shows no time.
    assert re.search(r"<tr class='best' data-key='matmul\|small\|torch", page)
    wrong_row = re.search(r"data-key='matmul\|small\|jax[^>]*>(.*?)</tr>", page).group(1)
    assert "ms" not in wrong_row and "st-wrong" in wrong_row
    assert "bimodal: samples cluster" in page


def test_achieved_rates_are_shown_and_the_share_only_with_ceilings():
    plain = render_html(sample_results())
    assert ">achieved<" in plain and "2 GFLOP/s" in plain  # 2e6 flops in 1 ms
    assert "share of ceiling" not in plain  # no ceilings measured: no column
    res = sample_results()
    # The run's own ceiling records (--roofline): 8 GFLOP/s peak, 10 GB/s bandwidth.
    res.records += [record("ceiling_matmul", "numpy", samples=spread(1.0), flops=8e9, bytes=1e6),
                    record("ceiling_bandwidth", "numpy", samples=spread(1.0), flops=1e3, bytes=1e10)]
    with_ceiling = render_html(res)
    assert "share of ceiling" in with_ceiling
    # NumPy: 2 GFLOP/s of 8 = 25%, 0.24 GB/s of 10 = 2.4%: the roofline share is the larger.
    numpy_row = re.search(r"data-key='matmul\|small\|numpy[^>]*>(.*?)</tr>", with_ceiling).group(1)
    assert ">25%<" in numpy_row


def test_device_time_has_a_column_only_where_a_record_has_one():
    """CUDA event times are shown next to the wall-clock median."""
    assert "device time" not in render_html(sample_results())
    res = sample_results()
    res.records.append(record("matmul", "torch", "gpu", samples=spread(2e-4), device_median_s=1.5e-4,
                              size_label="large", size=2000))
    page = render_html(res)
    assert ">device time<" in page
    gpu_row = re.search(r"data-key='matmul\|large\|torch\|gpu[^>]*>(.*?)</tr>", page).group(1)
    assert ">150 µs<" in gpu_row


def test_every_string_from_data_is_escaped(tmp_path: Path):
    res = results([
        record(HOSTILE, "numpy", samples=spread(1e-3), warnings=[HOSTILE]),
        record(HOSTILE, "torch", status="failed", reason=HOSTILE),
    ], cpu_model=HOSTILE, findings=[HOSTILE])
    page = render_html(res, plots=write_plots(res.records, tmp_path))
    assert page.count("<svg") == 2  # the case plot and the summary
    parsed = parse(page)
    # One script, the page's own (sorting), allowed by its hash; none from the data.
    assert parsed.tags.count("script") == 1 and page.count("<script>") == 1
    assert_only_our_script(page)
    # The text survives as text: a reader sees exactly what the data said.
    assert sum(HOSTILE in t for t in parsed.text) >= 4


def assert_only_our_script(page: str) -> None:
    """The page's one script is the sorting script, and the CSP allows exactly it, by its hash."""
    import base64
    import hashlib

    body = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    policy = re.search(r'Content-Security-Policy\' content="([^"]+)"', page).group(1)
    assert f"script-src 'sha256-{digest}'" in policy and "unsafe-inline'; img" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1] and "unsafe-eval" not in policy
    assert "addEventListener" in body and "innerHTML" not in body and "eval(" not in body


def test_findings_come_from_the_argument_or_the_results_and_are_left_out_when_none():
    assert "id='findings'" not in render_html(sample_results())
    res = sample_results()
    res.environment["findings"] = ["stored sentence"]  # not a place findings are read from
    assert "<li>stored sentence</li>" not in render_html(res)
    assert "<li>given</li>" in render_html(res, findings=["given"])


def test_an_interrupted_run_says_so():
    res = sample_results()
    res.complete = False
    assert "This run was interrupted" in render_html(res)


def test_plots_are_inlined_with_ids_that_cannot_collide(tmp_path: Path):
    res = sample_results()
    plots = write_plots(res.records, tmp_path)
    assert len(plots) == 3  # matmul, sort, summary
    page = render_html(res, plots=plots)
    assert page.count("<svg") == 3 and "<?xml" not in page and "<!DOCTYPE svg" not in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert ids and len(ids) == len(set(ids))
    for ref in re.findall(r'(?:url\(#|href="#)([^)"]+)', page):
        assert ref in ids  # every reference points at an id of the same page
    # The summary sits in its own section, each case plot with its workload.
    assert page.index("data-plot='summary_small.svg'") < page.index("id='workload-0'")
    assert page.index("id='workload-0'") < page.index("data-plot='matmul_small.svg'")
    assert "connect-src" not in page and "default-src 'none'" in page


def test_inline_svg_prefixes_ids_and_references():
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n "x.dtd">\n'
           '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
           '<defs><clipPath id="c1"><rect/></clipPath></defs>'
           '<g clip-path="url(#c1)"><use xlink:href="#c1"/></g></svg>')
    out = inline_svg(svg, "p7-")
    assert out.startswith("<svg")
    ET.fromstring(out)
    assert 'id="p7-c1"' in out and "url(#p7-c1)" in out and 'href="#p7-c1"' in out
