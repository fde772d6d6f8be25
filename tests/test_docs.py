"""The docs cannot go stale where a program can check them: every ``arraybench`` command line in
README.md and docs/*.md parses against the real parser, every option they name exists, a sentence
saying which commands take an option names exactly those, and every file they say a run or
``report`` writes is one the code writes. In-process, no command is run."""

from __future__ import annotations

import argparse
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from arraybench.commands.main import RENAMED, build_parser
from arraybench.model.journal import JOURNAL_NAME
from arraybench.outdir import LOCK_NAME
from arraybench.outdir import LOGS_NAME, OTHER_OWN, REPLACED, WORKER_LOG
from arraybench.options import PYTEST_NAMES
from arraybench.render.files import MANIFEST_NAME

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
#: Options the docs name that belong to other programs, and which.
FOREIGN = {
    "pip": {"--index-url", "--find-links", "--no-index", "--no-deps", "--target"},
    "ray start": {"--head", "--port", "--address", "--num-cpus", "--labels", "--block",
                  "--include-dashboard", "--disable-usage-stats", "--object-store-memory", "--force"},
    "Slurm": {"--nodes", "--ntasks", "--ntasks-per-node", "--exclusive", "--time"},
    "git": {"--short"},
    "pytest-benchmark": {"--benchmark-autosave", "--benchmark-compare", "--benchmark-compare-fail",
                         "--benchmark-disable", "--benchmark-json", "--benchmark-max-time",
                         "--benchmark-only", "--benchmark-skip", "--benchmark-storage"},
    # cli.md shows the did-you-mean a mistyped option gets.
    "a typo on purpose": {"--proceses"},
}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9](?![\w*-])")
#: File names as the docs write them: a name with one of these extensions, a dot file, a folder.
FILE_EXTENSIONS = ("json", "jsonl", "svg", "png", "html", "md", "csv", "pickle", "log", "lock", "txt")


def blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """The fenced code blocks of a Markdown file: (language, first line number, lines)."""
    out: list[tuple[str, int, list[str]]] = []
    current: tuple[str, int, list[str]] | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fence = re.match(r"\s*(```|~~~)\s*(\S*)", line)
        if fence and current is None:
            current = (fence.group(2), number + 1, [])
        elif fence:
            out.append(current)
            current = None
        elif current is not None:
            current[2].append(line)
    return out


def prose(path: Path) -> str:
    """The text outside code blocks, each paragraph on one line."""
    text = path.read_text()
    text = re.sub(r"(?ms)^\s*```.*?^\s*```", "\n\n", text)
    return "\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text))


def command_lines(path: Path) -> list[tuple[str, list[str]]]:
    """Every ``arraybench`` command in a file's code blocks: (where, its arguments)."""
    name = str(path.relative_to(ROOT))
    return [(f"{name}:{n}", argv) for language, first, lines in blocks(path)
            for n, argv in commands_in(language, first, lines)]


def commands_in(language: str, first: int, lines: list[str]) -> list[tuple[int, list[str]]]:
    """The ``arraybench`` commands of one code block, by line number: in a shell block every
    command; in any other (output beside commands) those after a ``$`` prompt."""
    joined: list[tuple[int, str]] = []
    for offset, line in enumerate(lines):
        if joined and joined[-1][1].endswith("\\"):
            joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + line.strip())
        else:
            joined.append((first + offset, line))
    found = []
    for number, line in joined:
        text = line.strip()
        if not (text.startswith("$ ") or language in SHELL):
            continue
        text = re.sub(r"\$\([^)]*\)", "X", text.removeprefix("$ "))  # command substitution: a value
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True  # words as the shell splits them; | && ; > still apart
        words = list(lexer)
        segment: list[str] = []
        for word in [*words, ";"]:  # shlex drops comments
            if word not in ("|", "||", "&&", ";", ">", ">>", "<", "&"):
                segment.append(word)
                continue
            # arraybench as the command: first, after environment assignments, or after `--`
            # (kubectl exec … -- arraybench run).
            start = next((i for i, w in enumerate(segment) if w == "arraybench" and (
                i == 0 or segment[i - 1] == "--" or all("=" in s for s in segment[:i]))), None)
            if start is not None:
                found.append((number, segment[start + 1:]))
            segment = []
    return found


@cache
def parser() -> argparse.ArgumentParser:
    return build_parser()


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
    return dict(action.choices) if action else {}


@cache
def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command by its name as typed (``store list`` too), with its parser."""
    out = {}
    for name, sub in subparsers(parser()).items():
        out[name] = sub
        out.update({f"{name} {n}": s for n, s in subparsers(sub).items()})
    return out


def options_of(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


@cache
def known_options() -> set[str]:
    """Every option of arraybench's commands, its old spellings, its pytest plugin's, and those of
    the scripts in benchmarks/ the docs describe."""
    known = options_of(parser()).union(*(options_of(p) for p in commands().values()))
    known |= {old for table in RENAMED.values() for old in table}
    known |= set(PYTEST_NAMES.values())
    for script in (ROOT / "benchmarks").glob("*.*"):
        known |= set(re.findall(r"""add_argument\(\s*["'](--[a-z0-9-]+)""", script.read_text()))
        known |= set(re.findall(r"^\s*(--[a-z0-9-]+)\)", script.read_text(), re.M))  # a shell case
    return known


ALL_COMMANDS = [c for path in DOCS for c in command_lines(path)]


def test_the_docs_have_command_lines_to_check():
    assert len(ALL_COMMANDS) > 50  # the extraction itself still finds them


@pytest.mark.parametrize("where, argv", ALL_COMMANDS, ids=[w for w, _ in ALL_COMMANDS])
def test_every_command_line_in_the_docs_parses(where, argv):
    try:
        parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version
        assert exc.code == 0, f"{where}: arraybench {shlex.join(argv)}"
    except Exception as exc:  # noqa: BLE001 - the parser's one-line UsageError, said with the place
        pytest.fail(f"{where}: arraybench {shlex.join(argv)}: {exc}")
    # argparse takes a prefix of an option (--thread for --threads): the docs spell it whole.
    names = [" ".join(argv[:2]), argv[0]] if argv else []
    command = next((commands()[n] for n in names if n in commands()), parser())
    typed = {w.split("=", 1)[0] for w in argv if w.startswith("--")}
    assert typed <= options_of(command) | options_of(parser()), f"{where}: {sorted(typed - options_of(command))}"


def test_every_option_the_docs_name_exists():
    foreign = set().union(*FOREIGN.values())
    unknown = [f"{path.relative_to(ROOT)}:{n}: {option}"
               for path in DOCS for n, line in enumerate(path.read_text().splitlines(), 1)
               for option in OPTION.findall(line) if option not in known_options() | foreign]
    assert not unknown, "options no command has:\n" + "\n".join(unknown)
    assert not foreign & known_options(), "FOREIGN lists an option arraybench has"


def test_which_commands_take_an_option_is_said_exactly():
    """A sentence "`a`, `b` and `c` take `--x`": each named command has the option, and a list
    of two or more names every command that has it."""
    claim = re.compile(r"((?:`[a-z]+(?: [a-z]+)?`(?:,| and| or)?\s+)+)takes?\s+`(--[a-z-]+)`")
    checked = 0
    for path in DOCS:
        for m in claim.finditer(prose(path)):
            named = set(re.findall(r"`([a-z]+(?: [a-z]+)?)`", m.group(1)))
            option = m.group(2)
            having = {name for name, p in commands().items() if option in options_of(p)}
            where = f"{path.relative_to(ROOT)}: {m.group(0)!r}"
            assert named <= set(commands()), f"{where}: no such command"
            assert named <= having, f"{where}: {sorted(named - having)} do not take {option}"
            if len(named) > 1:
                assert named == having, f"{where}: {sorted(having - named)} take it too"
            checked += 1
    assert checked


def written_by_a_run(name: str) -> bool:
    """Whether ``name`` (as the docs write it: ``matmul_large.svg``, ``history_<workload>.svg``,
    ``logs/<node>/``) is a file or folder a run writes in its output folder."""
    fixed = {*REPLACED, *OTHER_OWN, JOURNAL_NAME, MANIFEST_NAME, LOCK_NAME, f"{LOGS_NAME}/"}
    if name in fixed or WORKER_LOG.fullmatch(name):
        return True
    if name.startswith(f"{LOGS_NAME}/"):  # a cluster node's folder of logs
        return re.fullmatch(rf"{LOGS_NAME}/[^/]+/", name) is not None
    # The plots (render/files.py): WORKLOAD_SIZE.svg, summary_SIZE.svg, sweep_WORKLOAD.svg,
    # history_WORKLOAD.svg and roofline.svg.
    return name == "roofline.svg" or re.fullmatch(r"[\w<>.-]+_[\w<>.-]+\.svg", name) is not None


def file_names(text: str) -> list[str]:
    """The file and folder names in backticks in ``text``."""
    names = re.findall(r"`([^`\s]+)`", text)
    return [n for n in names if n.endswith("/") or n.startswith(".") and len(n) > 1
            or n.rsplit(".", 1)[-1] in FILE_EXTENSIONS and "." in n]


def test_the_files_a_run_writes_are_the_ones_results_md_lists():
    text = (ROOT / "docs" / "results.md").read_text()
    section = text.split("## The files", 1)[1].split("\n## ", 1)[0]
    items = section.split("\n- ", 1)[1]  # the list, not the sentence naming the folder
    listed = file_names(items)
    assert listed, "docs/results.md lists no files"
    assert not [n for n in listed if not written_by_a_run(n)], "files no run writes"
    # Every file a run writes under a fixed name is listed (the plots by their patterns).
    missing = {*REPLACED, *OTHER_OWN, JOURNAL_NAME, MANIFEST_NAME, LOCK_NAME} - set(listed)
    assert not missing, f"docs/results.md does not list {sorted(missing)}"


def wrote_lines(lines: list[str]) -> list[str]:
    """``wrote …`` lines of a block, joined with their continuations (a list split across lines)."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith(","):
            out[-1] += " " + line.strip()
        elif line.startswith("wrote "):
            out.append(line.strip())
    return out


def test_what_a_command_says_it_wrote_is_what_it_writes_where_it_was_told():
    """``wrote 10 files to DIR: …`` names every file ``report`` always writes and only names a
    run writes, as many as it counts, in the folder the command above it gave."""
    always = set(REPLACED) - {"results.json"}  # what write_report writes whatever the run
    checked = 0
    for path in DOCS:
        for language, first, lines in blocks(path):
            commands_here = [argv for _, argv in commands_in(language, first, lines)]
            for line in wrote_lines(lines):
                where = f"{path.relative_to(ROOT)}: {line!r}"
                folder = _output_dir(commands_here)
                counted = re.fullmatch(r"wrote (\d+) files? to (\S+): (.+)", line)
                if counted:
                    names = counted.group(3).split(", ")
                    assert int(counted.group(1)) == len(names), where
                    assert not [n for n in names if not written_by_a_run(n)], where
                    assert always <= set(names), f"{where}: {sorted(always - set(names))} missing"
                    paths = [counted.group(2)]
                else:
                    paths = [str(Path(p).parent) for p in line.removeprefix("wrote ").split(", ")]
                if folder is not None:
                    assert set(paths) == {folder}, f"{where}: the command above writes to {folder}"
                checked += 1
    assert checked


def _output_dir(commands_here: list[list[str]]) -> str | None:
    """The ``--output-dir`` of the last command in the block that gives one."""
    for argv in reversed(commands_here):
        out = getattr(parser().parse_args(argv), "output_dir", None)
        if out is not None:
            return str(out)
    return None
