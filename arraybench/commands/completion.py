"""``arraybench completion bash|zsh|fish``: a shell completion script generated from the parser itself
(commands, options, argparse's choices), so it never names an option the program lacks. Each script
finds the command typed from the words before the cursor that name one; after an option that takes
a value come its choices, or a file."""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

SHELLS = ("bash", "zsh", "fish")
HELP = "print a shell completion script for bash, zsh or fish"
#: A description longer than this is cut (shells show them in a column beside the names).
DESCRIPTION_WIDTH = 72


@dataclass
class Option:
    """An option as a shell completes it: its names, whether a value follows, its choices."""

    names: list[str]
    takes_value: bool
    choices: list[str]
    help: str


@dataclass
class Command:
    """A command (``""`` for arraybench itself, ``store list`` for a nested one), its options and subcommands."""

    path: str
    options: list[Option] = field(default_factory=list)
    #: Each subcommand's name and its help, on one line.
    subcommands: dict[str, str] = field(default_factory=dict)
    #: The choices of its positional arguments (``completion SHELL``).
    choices: list[str] = field(default_factory=list)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help=HELP,
                       description="Print a completion script for your shell, made from this "
                                   "program's own options: `arraybench completion bash > "
                                   "~/.local/share/bash-completion/completions/arraybench` "
                                   "(docs/cli.md says how for zsh and fish).")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    # The parser this command is registered in, reached through argparse's containers: importing
    # the module that builds it would import this one back.
    p.set_defaults(handler=partial(main, commands=sub))


def main(args: argparse.Namespace, commands: argparse._SubParsersAction) -> int:
    root = getattr(commands, "container", None)
    actions = root._actions if root is not None else [commands]
    print(script_of(args.shell, actions, commands._prog_prefix.split()[0]), end="")
    return 0


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``) of ``parser``'s commands."""
    return script_of(shell, parser._actions, parser.prog)


def script_of(shell: str, actions: list[argparse.Action], prog: str) -> str:
    """The completion script for ``shell`` of the program ``prog`` whose parser has ``actions``."""
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](walk(actions, prog), prog)


def walk(actions: list[argparse.Action], prog: str, path: str = "") -> list[Command]:
    """A parser's command (its ``actions``) and every command under it, parents first."""
    command = Command(path)
    nested: list[Command] = []
    for action in actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                if name in command.subcommands:
                    continue  # an alias
                command.subcommands[name] = " ".join(helps.get(name, "").split())
                nested += walk(sub._actions, prog, f"{path} {name}".strip())
        elif action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            command.options.append(Option(list(action.option_strings), action.nargs != 0,
                                          [str(c) for c in action.choices or ()], _help(prog, action)))
        elif action.choices:
            command.choices += [str(c) for c in action.choices]
    return [command, *nested]


def _help(prog: str, action: argparse.Action) -> str:
    """The option's help as ``--help`` shows it, on one line, cut to ``DESCRIPTION_WIDTH``."""
    try:
        text = argparse.HelpFormatter(prog)._expand_help(action)
    except (KeyError, TypeError, ValueError):
        text = (action.help or "").replace("%%", "%")
    text = " ".join(text.split())
    if len(text) > DESCRIPTION_WIDTH:
        text = text[:DESCRIPTION_WIDTH - 3].rsplit(" ", 1)[0].rstrip(",;:(") + "..."
    return text


def _transitions(commands: list[Command]) -> list[tuple[str, str, str]]:
    """(parent's path, word, the command it names): how the typed words move down the tree."""
    return [(c.path.rpartition(" ")[0], c.path.rpartition(" ")[2], c.path) for c in commands if c.path]


def _cases(commands: list[Command], choices: Callable[[list[str]], str], plain: str) -> list[str]:
    """bash's and zsh's middle: the command the typed words name, then the value an option takes."""
    q = shlex.quote  # zsh reads POSIX single quotes as sh does
    out = ['        case "$cmd:$word" in']
    out += [f"            {q(f'{parent}:{word}')}) cmd={q(path)} ;;" for parent, word, path in _transitions(commands)]
    out += ["        esac", "    done", '    case "$cmd:$prev" in']
    for c in commands:
        without = []
        for o in (o for o in c.options if o.takes_value):
            cases = "|".join(q(f"{c.path}:{name}") for name in o.names)
            if o.choices:
                out.append(f"        {cases}) {choices(o.choices)}; return ;;")
            else:
                without.append(cases)
        if without:
            out.append(f"        {'|'.join(without)}) {plain}return ;;")
    return out + ["    esac"]


# -- bash ------------------------------------------------------------------------------------------
def bash(commands: list[Command], prog: str) -> str:
    q = shlex.quote
    fn = "_" + re.sub(r"\W", "_", prog)
    out = [f"# {prog} completion for bash, generated by `{prog} completion bash` from {prog}'s own options.",
           f"# Install: {prog} completion bash > ~/.local/share/bash-completion/completions/{prog}",
           f"{fn}() {{",
           '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" word i',
           "    COMPREPLY=()",
           "    for ((i = 1; i < COMP_CWORD; i++)); do",
           '        word="${COMP_WORDS[i]}"',
           *_cases(commands, lambda ch: f'COMPREPLY=($(compgen -W {q(" ".join(ch))} -- "$cur"))',
                   ""),  # a value without choices: bash's own completion (files), by `complete -o default`
           '    if [[ $cur == -* ]]; then', '        local opts=""', '        case "$cmd" in']
    for c in commands:
        names = " ".join(n for o in c.options for n in o.names)
        out.append(f"            {q(c.path)}) opts={q(names)} ;;")
    out += ["        esac", '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))', "        return",
            "    fi", '    case "$cmd" in']
    for c in commands:
        words = list(c.subcommands) or c.choices
        if words:
            out.append(f'        {q(c.path)}) COMPREPLY=($(compgen -W {q(" ".join(words))} -- "$cur")) ;;')
    out += ["    esac", "}", f"complete -o default -F {fn} {prog}", ""]
    return "\n".join(out)


# -- zsh -------------------------------------------------------------------------------------------
def zsh(commands: list[Command], prog: str) -> str:
    q = shlex.quote  # zsh reads POSIX single quotes as sh does
    fn = "_" + re.sub(r"\W", "_", prog)
    out = [f"#compdef {prog}",
           f"# {prog} completion for zsh, generated by `{prog} completion zsh` from {prog}'s own options.",
           f"# Install: {prog} completion zsh > ~/.zfunc/_{prog}, with fpath=(~/.zfunc $fpath) before compinit.",
           f"{fn}() {{",
           '    local cmd="" word i prev="${words[CURRENT-1]}"',
           "    for ((i = 2; i < CURRENT; i++)); do",
           '        word="${words[i]}"',
           *_cases(commands, lambda ch: f"compadd -- {' '.join(q(x) for x in ch)}", "_files; "),
           "    local -a described", '    if [[ ${words[CURRENT]} == -* ]]; then',
            '        case "$cmd" in']
    for c in commands:
        specs = " ".join(q(f"{name}:{o.help}") for o in c.options for name in o.names)
        out.append(f"            {q(c.path)}) described=({specs}) ;;")
    out += ["        esac", "        _describe -t options option described", "        return", "    fi",
            '    case "$cmd" in']
    for c in commands:
        if c.subcommands:
            specs = " ".join(q(f"{name}:{help}") for name, help in c.subcommands.items())
            out.append(f"        {q(c.path)}) described=({specs}); _describe -t commands command described ;;")
        elif c.choices:
            out.append(f"        {q(c.path)}) compadd -- {' '.join(q(x) for x in c.choices)} ;;")
    out += ["        *) _files ;;", "    esac", "}",
            # Autoloaded from fpath, the file is the function's body; sourced, it registers itself.
            f'if [[ "${{funcstack[1]}}" == {fn} ]]; then {fn} "$@"; else compdef {fn} {prog}; fi', ""]
    return "\n".join(out)


# -- fish ------------------------------------------------------------------------------------------
def _fq(text: str) -> str:
    """``text`` in fish's single quotes (where only ``\\`` and ``'`` are escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(commands: list[Command], prog: str) -> str:
    fn = "__" + re.sub(r"\W", "_", prog)
    out = [f"# {prog} completion for fish, generated by `{prog} completion fish` from {prog}'s own options.",
           f"# Install: {prog} completion fish > ~/.config/fish/completions/{prog}.fish",
           f"function {fn}_command --description 'the {prog} command being typed'",
           '    set -l cmd ""',
           "    set -l typed (commandline -opc)",
           "    set -e typed[1]  # the program's own name",
           "    for word in $typed",
           '        switch "$cmd:$word"']
    for parent, word, path in _transitions(commands):
        out += [f"            case {_fq(f'{parent}:{word}')}", f"                set cmd {_fq(path)}"]
    out += ["        end", "    end", '    echo "$cmd"', "end",
            f"function {fn}_in --description 'whether the command being typed is the one given'",
            f"    set -l cmd ({fn}_command)", '    test "$cmd" = "$argv[1]"', "end"]
    for c in commands:
        when = f"-n {_fq(f'{fn}_in {_fq(c.path)}')}"
        for name, help in c.subcommands.items():
            out.append(f"complete -c {prog} {when} -f -a {_fq(name)} -d {_fq(help)}")
        if c.choices:
            out.append(f"complete -c {prog} {when} -f -a {_fq(' '.join(c.choices))}")
        for o in c.options:
            names = " ".join(f"-l {_fq(n[2:])}" if n.startswith("--") else f"-s {_fq(n[1:])}" for n in o.names)
            value = (f" -x -a {_fq(' '.join(o.choices))}" if o.choices else " -r") if o.takes_value else ""
            out.append(f"complete -c {prog} {when} {names}{value} -d {_fq(o.help)}")
    out.append("")
    return "\n".join(out)
