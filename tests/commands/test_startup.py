"""``arraybench --version`` and ``--help`` answer without importing the commands, so they load none
of the heavy libraries; what they print is what the full parser would print."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arraybench.commands.main import build_parser, light_parser

HEAVY = ("numpy", "matplotlib", "scipy", "rich", "jinja2", "arraybench.api")
# Runs the command line as the console script does, then says which heavy modules it loaded.
RUNNER = """
import json, sys
from arraybench.commands.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.__stderr__.write(json.dumps([m for m in {heavy!r} if m in sys.modules]) + "\\n")
"""


@pytest.mark.parametrize("argv", [["--version"], ["-V"], ["--help"], []])
def test_version_and_help_import_nothing_heavy(argv):
    out = subprocess.run([sys.executable, "-c", RUNNER.format(heavy=HEAVY), *argv],
                         capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []
    assert out.stdout.startswith("arraybench " if argv and argv[0] in ("-V", "--version") else "usage: ")


def test_the_light_help_is_the_full_parsers_help():
    assert light_parser().format_help() == build_parser().format_help()
