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

from jinja2 import Environment, PackageLoader, StrictUndefined

from . import SUMMARY

SHELLS = ("bash", "zsh", "fish")
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

    @property
    def named(self) -> list[tuple[str, Option]]:
        """Each name of each option, with its option."""
        return [(name, o) for o in self.options for name in o.names]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help=SUMMARY["completion"],
                       description="Print a completion script for your shell, made from this "
                                   "program's own options: `arraybench completion bash > "
                                   "~/.local/share/bash-completion/completions/arraybench` "
                                   "(docs/cli.md says how for zsh and fish).")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    # The parser this command is registered in, reached through argparse's containers: importing
    # the module that builds it would import this one back.
    p.set_defaults(handler=partial(main, commands=sub))


def main(args: argparse.Namespace, commands: argparse._SubParsersAction) -> int:
    # argparse keeps the group an action was added to (``container``), which shares its parser's actions.
    print(script_of(args.shell, commands.container._actions, commands._prog_prefix.split()[0]), end="")
    return 0


def script_of(shell: str, actions: list[argparse.Action], prog: str) -> str:
    """The completion script for ``shell`` of the program ``prog`` whose parser has ``actions``."""
    fn = ("__" if shell == "fish" else "_") + re.sub(r"\W", "_", prog)
    return _templates().get_template(f"completion.{shell}").render(commands=walk(actions, prog), prog=prog, fn=fn)


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


def _fq(text: str) -> str:
    """``text`` in fish's single quotes (where only ``\\`` and ``'`` are escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _keys(names: list[str], path: str) -> str:
    """bash's and zsh's ``case`` pattern for an option of the command ``path``: ``run:--dtype|run:-d``."""
    return "|".join(shlex.quote(f"{path}:{name}") for name in names)


def _templates() -> Environment:
    # Shell code, not HTML: nothing is escaped but by the filters (zsh reads POSIX quotes as sh does).
    env = Environment(loader=PackageLoader("arraybench.commands", "templates"), trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True, undefined=StrictUndefined)
    env.filters.update(q=shlex.quote, fq=_fq, keys=_keys)
    return env
