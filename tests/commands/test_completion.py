"""``arraybench completion bash|zsh|fish``: scripts made from the parser itself, so every command
and every option is in them; bash's is valid bash and completes what it should (checked in a real
bash), zsh's and fish's are checked by their shells where installed."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from arraybench.commands.completion import SHELLS, script_of
from arraybench.commands.main import SUMMARY, build_parser

from ..conftest import run_here


def _commands(parser: argparse.ArgumentParser, path: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command by its typed path (``store list``), with its parser."""
    out = {path: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_commands(sub, f"{path} {name}".strip()))
    return out


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    return script_of(shell, parser._actions, parser.prog)


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    return {shell: script(shell, build_parser()) for shell in SHELLS}


@pytest.mark.parametrize("shell", SHELLS)
def test_the_command_prints_the_script(shell: str, tmp_path: Path, scripts):
    done = run_here("completion", shell, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == scripts[shell]


@pytest.mark.parametrize("shell", SHELLS)
def test_every_command_and_option_is_in_the_script(shell: str, scripts):
    text = scripts[shell]
    commands = _commands(build_parser())
    assert set(SUMMARY) | {"store list", "store import"} <= set(commands)
    for path, parser in commands.items():
        if path:
            assert path.rpartition(" ")[2] in text, path
        for action in parser._actions:
            for option in action.option_strings:
                # fish names an option without its dashes: -l warmup, -s o
                spelled = (f"-l '{option[2:]}'" if option.startswith("--") else f"-s '{option[1:]}'"
                           ) if shell == "fish" else option
                assert spelled in text, f"{path}: {option}"
    assert ("-l 'warmup'" if shell == "fish" else "--warmup") in text
    assert "float64 float32" in text  # --dtype's choices


def test_an_option_added_to_the_parser_is_in_the_script():
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command")
    go = sub.add_parser("go", help="go somewhere")
    go.add_argument("--speed", choices=["slow", "fast"], help="how fast (100%% of it)")
    go.add_argument("--quietly", action="store_true", help="say nothing")
    for shell in SHELLS:
        text = script(shell, parser)
        assert "slow fast" in text and "quietly" in text and "go" in text
        if shell != "bash":  # zsh and fish describe what they offer, as --help does
            assert "go somewhere" in text and "how fast (100% of it)" in text


def test_bash_reads_the_script(tmp_path: Path, scripts):
    path = tmp_path / "arraybench.bash"
    path.write_text(scripts["bash"])
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def _complete(script_path: Path, *words: str) -> list[str]:
    """What bash completes for the command line ``words`` (the last one being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source {script_path}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
               "_arraybench; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands_options_and_choices(tmp_path: Path, scripts):
    path = tmp_path / "arraybench.bash"
    path.write_text(scripts["bash"])
    assert _complete(path, "arraybench", "co") == ["compare", "completion"]
    assert _complete(path, "arraybench", "run", "--warm") == ["--warmup"]
    assert _complete(path, "arraybench", "sweep", "--backends", "numpy", "--dt") == ["--dtype"]
    assert _complete(path, "arraybench", "run", "--dtype", "") == ["float64", "float32"]
    assert _complete(path, "arraybench", "store", "") == ["import", "list"]
    assert "--machine" in _complete(path, "arraybench", "store", "list", "--")
    assert _complete(path, "arraybench", "completion", "") == ["bash", "zsh", "fish"]
    assert _complete(path, "arraybench", "show", "run1", "--hist") == ["--histogram"]
    # A value without choices is left to bash's own completion (files): nothing is offered here.
    assert _complete(path, "arraybench", "run", "--csv", "") == []


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_read_their_scripts(shell: str, tmp_path: Path, scripts):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    path = tmp_path / f"arraybench.{shell}"
    path.write_text(scripts[shell])
    done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
