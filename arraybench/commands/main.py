"""The command line: commands and their options, nothing else. A user's error is one line on stderr
(status 2); Ctrl-C is status 130, what was measured saved. A reader that leaves (``| head``) stops
the output, not the command; an unwritable stdout is one line. Only the standard library is imported
at first, and the commands inside ``main``, so that a Ctrl-C while NumPy loads is as quiet as later."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any, Sequence

from ..model import version
from . import SUMMARY
from ..errors import SaveError, StoreWarning, UsageError, command_line, one_line, unknown_name
from ..files import discard as _discard

if TYPE_CHECKING:
    from ..config import ProjectDefaults

PROG = "arraybench"

#: Commands whose options [tool.arraybench] may set.
CONFIGURED = ("run", "sweep")


#: Spellings that older versions took, per command, and the one spelling every command, the API
#: and [tool.arraybench] now share: still accepted, with one line saying the new name.
RENAMED = {
    "history": {"--workload": "--workloads", "--backend": "--backends",
                "--fail-on-regression": "--fail-above", "--fdr": "--alpha"},
    "sweep": {"--workload": "--workloads"},
    "numerics": {"--dtypes": "--dtype"},
}


#: The command lines answered from ``SUMMARY`` alone.
LIGHT = ((), ("-h",), ("--help",), ("-V",), ("--version",))


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{_suggesting(message)} (see {self.prog} --help)")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """argparse's, with a did-you-mean for a mistyped option (argparse has none before 3.14)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(_unrecognized(self, parsed, extras))
        return parsed


def _unrecognized(parser: argparse.ArgumentParser, parsed: argparse.Namespace,
                  extras: list[str]) -> str:
    """``unrecognized arguments: --proceses 2; did you mean --processes?``"""
    text = f"unrecognized arguments: {' '.join(extras)}"
    command = getattr(parsed, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    target = sub.choices.get(command, parser) if sub is not None and command else parser
    known = [o for a in target._actions for o in a.option_strings if o.startswith("--")]
    for extra in extras:
        if extra.startswith("--"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=2, cutoff=0.7)
            if close:
                return f"{text}; did you mean {' or '.join(close)}?"
    return text


def renamed(argv: list[str]) -> list[str]:
    """``argv`` with the old spelling of an option replaced by the new one, a line on stderr each."""
    command = next((a for a in argv if not a.startswith("-")), None)
    table = RENAMED.get(command or "", {})
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if name in table:
            print(f"{PROG}: warning: {command} {name} is now {table[name]} (the old spelling will "
                  "go)", file=sys.stderr)
            arg = table[name] + eq + value
        out.append(arg)
    return out


def _suggesting(message: str) -> str:
    """argparse's ``invalid choice`` as ``unknown command 'runn'; did you mean 'run'?`` (none before 3.14)."""
    m = re.fullmatch(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)", message)
    if not m:
        return message
    what, given, listed = m.groups()
    choices = re.findall(r"'([^']*)'", listed)
    kind = "command" if what == "COMMAND" else f"{what} value"
    return unknown_name(kind, given, choices)


def commands() -> tuple[Any, ...]:
    """The command modules, in ``--help``'s order; imported here, so loading the command line stays light."""
    from . import compare, completion, info, report, run

    return (run, report, compare, info, completion)


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser of ``arraybench`` itself, with no command yet, and its commands' action."""
    parser = _Parser(
        prog=PROG,
        description="Which array library is fastest on your machine, for your workload, and why.",
        epilog="`arraybench run` measures the default suite; `arraybench COMMAND --help` says more.",
    )
    parser.add_argument("--version", "-V", action="version", version=f"{PROG} {version()}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)


def light_parser() -> argparse.ArgumentParser:
    """``build_parser``'s ``--help`` and ``--version`` from ``SUMMARY``, importing no command."""
    parser, sub = _top_parser()
    for name, text in SUMMARY.items():
        sub.add_parser(name, help=text)
    return parser


def build_parser(defaults: ProjectDefaults | None = None) -> argparse.ArgumentParser:
    """The parser of every command, with a project's defaults applied to ``run`` and ``sweep``."""
    parser, sub = _top_parser()
    for command in commands():
        command.register(sub)
    if defaults is not None and defaults.values:
        for name in CONFIGURED:
            subparser = sub.choices[name]
            dests = {a.dest for a in subparser._actions}
            subparser.set_defaults(**{k: v for k, v in defaults.values.items() if k in dests})
    return parser


class _Unset(list):
    """Every option's default while finding which were typed: a list (``append`` appends to it) of its own type."""


def typed_options(argv: Sequence[str]) -> set[str]:
    """The destinations of the options given on the command line (even when equal to a default)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for subparser in sub.choices.values():
        subparser.set_defaults(**{a.dest: _Unset() for a in subparser._actions
                                  if a.dest not in ("help", argparse.SUPPRESS)})
    args = parser.parse_args(list(argv))
    return {k for k, v in vars(args).items() if not (type(v) is _Unset and not v)}


def parse(argv: Sequence[str], defaults: ProjectDefaults | None = None) -> argparse.Namespace:
    """Parse a command line: the options, plus ``typed`` (what the user gave) and ``project``."""
    from ..config import ProjectDefaults

    args = build_parser(defaults).parse_args(list(argv))
    args.typed = typed_options(argv)
    args.project = defaults or ProjectDefaults()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arraybench`` and ``python -m arraybench``."""
    entry = argv is None  # the process's own command, which may end the process
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with warnings.catch_warnings():  # the warnings shown as one line (``_show_warning``) end here
            status = _main(argv)
    except KeyboardInterrupt:
        # A Ctrl-C after ``_main`` handled its own: the command was over, so it ends as interrupted.
        status = 130
    if entry:
        _end_despite_threads(status)
    return status


def _end_despite_threads(status: int) -> None:
    """End now where a workload file left a thread running (Python would wait for it at exit), saying so."""
    userfile = sys.modules.get("arraybench.workloads.userfile")
    left = userfile.threads_left() if userfile is not None else []
    if not left:
        return
    import atexit

    for source, name in left:
        print(f"{PROG}: warning: {source} started thread {name!r} when imported and it is still "
              "running; arraybench ends without waiting for it (start it with daemon=True, or "
              "inside the workload)", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()  # what Python would run at exit, after joining threads
    os._exit(status)


def _main(argv: list[str]) -> int:
    try:
        _tolerant_terminal()
        with command_line():  # messages name options as typed: --processes, not processes=
            return _command(argv)
    except (UsageError, SaveError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `arraybench list | head`: the reader left; nothing to report.
        _discard(sys.stdout)
        return 0
    except OSError as exc:
        # arraybench's files are named in their errors: one without a name is stdout's (> /dev/full).
        if exc.filename is None or _stdout_broken():
            _discard(sys.stdout)
            print(f"{PROG}: error: cannot write to standard output ({exc.strerror or exc})",
                  file=sys.stderr)
        else:
            print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
        return 1


def _command(argv: list[str]) -> int:
    """Parse ``argv`` and run its command (``_main`` turns what goes wrong into one line)."""
    if tuple(argv) in LIGHT:
        # As git, pip and pytest-benchmark's users expect, no command is help, not a long run.
        parser = light_parser()
        if argv:
            parser.parse_args(argv)  # prints the help or the version and exits
        parser.print_help()
        return _flushed(0)
    # rich exits with status 1 when its reader leaves (``Console.on_broken_pipe``, documented as the place
    # to change that); a command whose output nobody reads has still saved everything, so it goes on
    # silently and ends with its own status.
    from rich.console import Console

    Console.on_broken_pipe = _reader_left  # type: ignore[method-assign]
    from ..config import find as find_project, load as project_defaults

    run_parser = _run_parser()
    if argv[0].startswith("-") and argv[0] not in ("-h", "--help", "-V", "--version"):
        option = argv[0].split("=", 1)[0]
        if option in run_parser._option_string_actions:
            raise UsageError(f"{option} is an option of a command: arraybench run {' '.join(argv)}")
    argv = renamed(argv)
    defaults = project_defaults(run_parser, find_project())
    args = parse(argv, defaults)
    if args.command is None:
        build_parser(defaults).print_help()
        return _flushed(0)
    return _flushed(args.handler(args))


def _run_parser() -> argparse.ArgumentParser:
    return next(a for a in build_parser()._actions
                if isinstance(a, argparse._SubParsersAction)).choices["run"]


def _flushed(status: int) -> int:
    """``status``, once what was printed has really been written (a full disk says so here)."""
    sys.stdout.flush()
    return status


def _stdout_broken() -> bool:
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return False


def _tolerant_terminal() -> None:
    """Set up this process's output for whatever terminal, pipe or file it goes to."""
    for stream in (sys.stdout, sys.stderr):
        # PYTHONIOENCODING=ascii: "µs" becomes "?s" instead of a UnicodeEncodeError
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")
    global _python_showwarning
    if warnings.showwarning is not _show_warning:
        _python_showwarning = warnings.showwarning
    warnings.showwarning = _show_warning


def _reader_left(console: Any) -> None:
    console.quiet = True
    _discard(console.file)


#: The package's root: a warning raised in any of its modules is arraybench's own.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_python_showwarning = warnings.showwarning


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    """arraybench's own warnings (a run not stored, say) as one line each; a library's as Python's."""
    if not issubclass(category, StoreWarning) and not os.path.abspath(filename).startswith(_PACKAGE + os.sep):
        _python_showwarning(message, category, filename, lineno, file, line)
        return
    with contextlib.suppress(OSError):
        print(f"{PROG}: warning: {one_line(message)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
