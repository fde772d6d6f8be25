"""report.html in a real headless Chromium: it loads cleanly, loads nothing else, every plot renders.

Uses Debian's ``chromium`` (``apt-get install chromium``; .ci/run installs it) or the executable in
$ARRAYBENCH_CHROMIUM. Set $ARRAYBENCH_SCREENSHOT_DIR to keep the screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench.render.html import render_html, write_html
from arraybench.render.plots import write_plots
from arraybench.render.tables import unavailable_configs

from ..chromium import Chromium, find_chromium
from ..synthetic import record, results, spread

EXE = find_chromium()
pytestmark = pytest.mark.skipif(
    EXE is None, reason="Chromium not found (Debian: apt-get install chromium; or set ARRAYBENCH_CHROMIUM)")

PLOTS_JS = """JSON.stringify([...document.querySelectorAll('figure.plot svg')].map(s => {
  const box = s.getBoundingClientRect();
  const inner = s.querySelector('g').getBBox();
  return {name: s.closest('figure').dataset.plot, width: box.width, height: box.height,
          innerWidth: inner.width, innerHeight: inner.height,
          texts: s.querySelectorAll('text').length, bars: s.querySelectorAll('path').length};
}))"""


@pytest.fixture(scope="module")
def browser():
    with Chromium(EXE) as b:
        yield b


def keep(path: Path) -> None:
    target = os.environ.get("ARRAYBENCH_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def test_the_report_of_a_real_run_loads_cleanly_and_every_plot_renders(real_run, browser, tmp_path):
    import json

    page = browser.open(real_run.out / "report.html")
    assert page.errors() == []
    # Nothing but the page itself was requested: it works offline and leaks nothing.
    assert page.requests() == [(real_run.out / "report.html").resolve().as_uri()]
    assert page.evaluate("performance.getEntriesByType('resource').length") == 0
    plots = json.loads(page.evaluate(PLOTS_JS))
    on_disk = sorted(p.name for p in real_run.out.glob("*.svg"))
    assert sorted(p["name"] for p in plots) == on_disk and len(on_disk) == 3
    for p in plots:
        assert p["width"] > 300 and p["height"] > 150, p
        assert p["innerWidth"] > 100 and p["innerHeight"] > 100, p
        assert p["texts"] > 5 and p["bars"] > 5, p
    res = load_results(real_run.out / "results.json")
    unavailable = unavailable_configs(res.records)
    expected_rows = sum(1 for r in res.records if (r.backend, r.device) not in unavailable)
    assert page.evaluate("document.querySelectorAll('table.records tr[data-key]').length") == expected_rows
    assert page.evaluate("document.title").startswith("arraybench")

    shot = page.screenshot(tmp_path / "report.png")
    keep(shot)
    from PIL import Image

    with Image.open(shot) as im:
        assert im.width == 1280 and im.height > 1500
        colours = {c for _, c in im.convert("RGB").getcolors(maxcolors=1 << 20)}
    # The bars' colours are on screen: NumPy's blue, and PyTorch's orange where it ran.
    assert (0x4C, 0x72, 0xB0) in colours
    if any(r.backend == "torch" and r.status == "ok" for r in res.records):
        assert (0xDD, 0x84, 0x52) in colours


def test_hostile_strings_stay_text_in_the_browser(browser, tmp_path):
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    res = results([record(evil, "numpy", samples=spread(1e-3), warnings=[evil]),
                   record(evil, "torch", status="failed", reason=evil)], cpu_model=evil)
    path = write_html(res, tmp_path, plots=write_plots(res.records, tmp_path), findings=[evil])
    page = browser.open(path)
    assert page.errors() == []
    assert page.evaluate("document.scripts.length") == 0
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("document.body.innerText").count(evil) >= 4


def test_a_load_the_policy_blocks_is_reported_as_an_error(browser, tmp_path):
    # The negative control: the page's policy refuses network loads, and the test would see one.
    page_text = render_html(results([record("matmul", "numpy", samples=spread(1e-3))]))
    path = tmp_path / "tampered.html"
    path.write_text(page_text.replace("</main>", "<img src='http://127.0.0.1:9/x.png'></main>"))
    page = browser.open(path)
    errors = page.errors()
    assert errors and any("Content Security Policy" in e or "127.0.0.1" in e for e in errors), errors


def test_a_report_with_history_and_machines_loads_cleanly_with_every_plot(browser, tmp_path):
    """A merged report (two machines) with a History section: no errors, every plot drawn."""
    import copy

    from arraybench.analysis.history import history
    from arraybench.model.merge import merge
    from arraybench.render.report import write_report
    from arraybench.store import open_store

    from ..synthetic import timed_run

    with open_store(tmp_path / "s.sqlite") as store:
        for day, torch_s in ((1, 2e-3), (2, 2.01e-3), (3, 2.5e-3)):
            store.add(timed_run(day, torch_s=torch_s, torch="2.5.0" if day < 3 else "2.6.0"))
        entries, runs = store.entries()
    found = history(entries, runs)
    assert len(found.steps) == 1
    merged = merge([timed_run(3), copy.deepcopy(timed_run(3, host="host-b", numpy_s=5e-4))], ["a", "b"])
    out = tmp_path / "report"
    written = write_report(merged, out, history=found)
    page = browser.open(out / "report.html")
    assert page.errors() == []
    plots = json.loads(page.evaluate(PLOTS_JS))
    names = sorted(p["name"] for p in plots)
    assert "history_matmul.svg" in names and names == sorted(p.name for p in written if p.suffix == ".svg")
    assert all(p["width"] > 300 and p["innerHeight"] > 100 for p in plots), plots
    text = page.evaluate("document.body.innerText")
    assert "History" in text and "torch 2.5.0 → 2.6.0" in text and "machine" in text
    keep(page.screenshot(tmp_path / "history-report.png"))
