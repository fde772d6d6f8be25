"""The command line: commands and their options, nothing else.

Every error a user can cause ends in one line on stderr and exit status 2; Ctrl-C ends in status
130 with what was measured saved. ``[tool.arraybench]`` in the project's pyproject.toml sets
defaults for the options of ``run`` and ``sweep`` (``config``); what is typed wins.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, Sequence

from . import config
from .commands import COMMANDS
from .errors import UsageError

PROG = "arraybench"

#: Commands whose options [tool.arraybench] may set.
CONFIGURED = ("run", "sweep")


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser(defaults: config.ProjectDefaults | None = None) -> argparse.ArgumentParser:
    """The parser of every command, with a project's defaults applied to ``run`` and ``sweep``."""
    parser = _Parser(
        prog=PROG,
        description="Which array library is fastest on your machine, for your workload, and why.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub)
    if defaults is not None and defaults.values:
        for name in CONFIGURED:
            subparser = sub.choices[name]
            dests = {a.dest for a in subparser._actions}
            subparser.set_defaults(**{k: v for k, v in defaults.values.items() if k in dests})
    return parser


class _Unset(list):
    """The default of every option while finding which were typed: a list, so that ``append``
    options can append to it, and a type of its own, so that no typed value is mistaken for it."""


def typed_options(argv: Sequence[str]) -> set[str]:
    """The destinations of the options given on the command line (even when equal to a default)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for subparser in sub.choices.values():
        subparser.set_defaults(**{a.dest: _Unset() for a in subparser._actions
                                  if a.dest not in ("help", argparse.SUPPRESS)})
    args = parser.parse_args(list(argv))
    return {k for k, v in vars(args).items() if not (type(v) is _Unset and not v)}


def parse(argv: Sequence[str], defaults: config.ProjectDefaults | None = None) -> argparse.Namespace:
    """Parse a command line: the options, plus ``typed`` (what the user gave) and ``project``."""
    args = build_parser(defaults).parse_args(list(argv))
    args.typed = typed_options(argv)
    args.project = defaults or config.ProjectDefaults()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arraybench`` and ``python -m arraybench``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    with warnings.catch_warnings():
        default = warnings.showwarning

        def show(message: Any, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            """arraybench's own warnings (a run that could not be stored) as one line."""
            from .store.errors import StoreWarning

            if issubclass(category, StoreWarning):
                print(f"{PROG}: warning: {message}", file=sys.stderr)
            else:
                default(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        return _main(argv)


def _main(argv: list[str]) -> int:
    try:
        if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
            argv = ["run", *argv]  # `arraybench --output-dir X` runs the default suite
        run_parser = next(a for a in build_parser()._actions
                          if isinstance(a, argparse._SubParsersAction)).choices["run"]
        defaults = config.load(run_parser, config.find())
        args = parse(argv, defaults)
        if args.command is None:
            build_parser(defaults).print_help()
            return 0
        return args.handler(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `arraybench list | head`: the reader left; nothing to report.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
