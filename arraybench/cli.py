"""The command line: commands and their options, nothing else.

Every error a user can cause ends in one line on stderr and exit status 2; Ctrl-C ends in status
130 with what was measured saved.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .commands import COMMANDS
from .errors import UsageError

PROG = "arraybench"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Which array library is fastest on your machine, for your workload, and why.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arraybench`` and ``python -m arraybench``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
            argv = ["run", *argv]  # `arraybench --output-dir X` runs the default suite
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
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
