"""The terminal shows, never obeys: rich markup and escape sequences in what
came from outside (a path, a ``--context`` value, a workload's name or error, a stored run) are
shown as written, never read as markup, styles or hyperlinks; results.csv never starts a cell with
a formula.

One real run (module-scoped) into a folder named with markup, with hostile context labels, is
shared by the command-line tests; the rest exercise the rendering functions directly.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from arraybench.render import report
from arraybench.render.files import csv_text
from arraybench.render.terminal import console, stdout_console

from ..conftest import FAST, run_here
from ..synthetic import record, results, spread

#: Clear the screen, set the title, open a hyperlink: what a terminal obeys if given raw.
CLEAR, TITLE, LINK = "\x1b[2J", "\x1b]0;pwned\x07", "\x1b]8;;http://evil.example\x1b\\x\x1b]8;;\x1b\\"


def _printed(renderable_or_text, **kwargs) -> str:
    """What a SafeConsole writes for ``renderable_or_text`` on a colour terminal."""
    buffer = io.StringIO()
    out = console(file=buffer, width=200, force_terminal=True, color_system="truecolor")
    out.print(renderable_or_text, **kwargs)
    return buffer.getvalue()


def _obeyed(text: str) -> list[str]:
    """The escape sequences in ``text`` other than rich's own colours (CSI ... m)."""
    import re

    return [m.group(0) for m in re.finditer(r"\x1b(?!\[[0-9;]*m)[^\x1b]{0,12}", text)]


def test_escape_sequences_are_shown_escaped_in_strings_markup_text_and_tables():
    from rich.table import Table
    from rich.text import Text

    table = Table("name")
    table.add_row(Text(f"cell{CLEAR}"))
    for shown in (f"plain {CLEAR}{TITLE}", Text(f"text {LINK}"), table):
        printed = _printed(shown)
        assert _obeyed(printed) == [], printed
    assert "\\x1b[2J" in _printed(f"plain {CLEAR}", highlight=False)
    assert "\\x1b]0;pwned" in _printed(Text(TITLE))  # (rich's Text drops the BEL itself)


def test_a_long_line_from_outside_is_printed_without_the_highlighter():
    # rich's highlighter backtracks over a long run of word characters, taking a minute for a
    # 100,000-character name: such a line prints plain (no colour for its numbers or paths).
    short, long = "took 12 s in /tmp/x", "took 12 s in /tmp/x " + "w" * 5000
    assert "\x1b[" in _printed(short)  # the number highlighted: the highlighter is on
    printed = _printed(long)
    assert "\x1b[" not in printed and "w" * 5000 in printed.replace("\n", "")


def test_markup_from_outside_is_neither_an_error_nor_a_link():
    printed = _printed("closing a[/] with nothing to close", highlight=False)  # MarkupError with a plain Console
    assert "a[/]" in printed
    linked = _printed("[link=http://evil.example]click[/link]", highlight=False)
    assert "\x1b]8" not in linked and "click" in linked  # no OSC 8 hyperlink, whatever the markup


def test_findings_and_errors_with_escape_sequences_are_shown_escaped():
    bad = record("matmul", "numpy", status="failed", reason=f"boom{CLEAR}{TITLE}")
    good = record("matmul", "torch", samples=spread(1e-3))
    run = results([bad, good])
    run.errors = [{"kind": "worker", "source": "jax/cpu", "error": f"no jax{LINK}"}]
    buffer = io.StringIO()
    report.show(run, console(file=buffer, width=160, force_terminal=True, color_system=None), errors=True)
    printed = buffer.getvalue()
    assert "\x1b" not in printed, printed
    assert "\\x1b[2J" in printed and "\\x1b]8;;" in printed


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised():
    hostile = record("=HYPERLINK(\"http://evil.example\")", "numpy", status="failed",
                     reason="+cmd|' /C calc'!A0")
    hostile.warnings = ["@SUM(1+1)", "-2+3", "\tTAB", "\rCR"]
    fine = record("matmul", "torch", samples=spread(1e-3))
    rows = list(csv.DictReader(io.StringIO(csv_text(results([hostile, fine])), newline="")))
    assert rows[0]["workload"] == "'=HYPERLINK(\"http://evil.example\")"
    assert rows[0]["reason"].startswith("'+cmd")
    assert rows[0]["warnings"].startswith("'@SUM")
    assert rows[0]["key"].startswith("'=")
    for row in rows:
        for value in row.values():
            assert not value or value[0] not in "=+@\t\r" and not (value[0] == "-" and not _number(value))
    assert float(rows[1]["median_s"]) == pytest.approx(1e-3, rel=0.05)  # numbers stay numbers


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- the command line, on one real run -----------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """A real run into a folder named ``a[/]``, labelled ``tag=[v1]`` and with an escape
    sequence, stored into a store of its own; then that store's list and history."""
    root = tmp_path_factory.mktemp("hostile")
    out, store = root / "a[/]", root / "store.sqlite"
    done = run_here("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small",
                    *(a for a in FAST if a != "-q"),
                    "--no-plots", "-o", str(out), "--store", str(store), "--context", "tag=[v1]",
                    "--context", f"esc=x{TITLE}[link=http://evil.example]y[/link]", cwd=root)
    wide = {"COLUMNS": "400"}  # no label folded over lines
    listed = run_here("store", "list", "--store", str(store), cwd=root, env=wide)
    history = run_here("history", "--store", str(store), "--no-plots", cwd=root, env=wide)
    return out, done, listed, history


def test_a_path_with_markup_is_printed_as_it_is(hostile_run):
    out, done, _, _ = hostile_run
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MarkupError" not in done.stderr
    assert f"results: {out / 'results.json'}" in done.stdout  # the folder named, as it exists
    assert (out / "report.html").is_file()
    assert json.loads((out / "results.json").read_text())["environment"]["context"]["tag"] == "[v1]"


@pytest.mark.parametrize("command", ["store list", "history"])
def test_stored_labels_are_shown_whole_and_escaped(hostile_run, command):
    _, _, listed, history = hostile_run
    shown = listed if command == "store list" else history
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout
    assert "tag=[v1]" in text  # not eaten as a style
    assert "\x1b" not in shown.stdout, repr(shown.stdout[shown.stdout.find("\x1b") - 80:][:160])
    assert "\\x1b]0;pwned\\x07" in text
    assert "[link=http://evil.example]y[/link]" in text


def test_stdout_console_is_the_safe_one():
    from arraybench.render.terminal import SafeConsole

    assert isinstance(stdout_console(), SafeConsole)


def test_every_console_the_commands_print_to_is_safe():
    """No module of the package builds a plain rich Console: they all come from render/terminal."""
    import re

    package = Path(report.__file__).resolve().parents[1]
    plain = [str(p.relative_to(package)) for p in package.rglob("*.py")
             if p.name != "terminal.py" and re.search(r"(?<![\w.])Console\(", p.read_text())]
    assert plain == [], plain


def test_merge_shows_escape_sequences_in_error_messages_escaped(tmp_path: Path):
    for host in ("a", "b"):
        run = results([record("matmul", "numpy", status="failed", reason=f"boom{CLEAR}{TITLE}"),
                       record("matmul", "torch", samples=spread(1e-3))], fingerprint={"host_sha": host})
        run.errors = [{"kind": "worker", "source": "jax/cpu", "error": f"no jax{LINK}"}]
        (tmp_path / host).mkdir()
        run.save(tmp_path / host / "results.json")
    done = run_here("merge", f"one={tmp_path / 'a'}", f"two={tmp_path / 'b'}", "-o", str(tmp_path / "m"),
                    "--no-plots", cwd=tmp_path, env={"COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "\x1b" not in done.stdout + done.stderr
    assert "boom\\x1b[2J\\x1b]0;pwned\\x07" in done.stdout


def test_escape_sequences_in_variables_labels_and_names_reach_no_markdown_raw(tmp_path: Path):
    # A --variant's variable is quoted by the finding that sets the two variants apart.
    out = tmp_path / "run"
    done = run_here("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
                    "--no-plots", "--no-store", "-o", str(out), "--variant", f"a:OMP_NUM_THREADS=1{TITLE}",
                    "--variant", "b:OMP_NUM_THREADS=2", "--context", f"tag=x{CLEAR}y", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    findings = (out / "findings.md").read_text()
    assert "OMP_NUM_THREADS=1\\x1b]0;pwned\\x07" in findings
    # A results file written by another hand: a workload's name and a library's version.
    data = json.loads((out / "results.json").read_text())
    for r in data["records"]:
        r["workload"] = f"mat{CLEAR}mul"
    for info in data["environment"]["backends"].values():
        info["version"] = f"2.0{TITLE}"
    (tmp_path / "edited").mkdir()
    (tmp_path / "edited" / "results.json").write_text(json.dumps(data))
    again = run_here("report", str(tmp_path / "edited"), "-o", str(tmp_path / "report"), "--no-plots",
                     cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for folder in (out, tmp_path / "report"):
        for name in ("findings.md", "results.md"):
            text = (folder / name).read_text()
            assert "\x1b" not in text and "\x07" not in text, (folder, name, text[:400])
    assert "mat\\\\x1b\\[2Jmul" in (tmp_path / "report" / "results.md").read_text()
