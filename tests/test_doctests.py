"""The examples in the package's docstrings run, and say what they print."""

from __future__ import annotations

import doctest
import importlib

import pytest

#: Every module whose docstrings hold examples (``>>>``); the test below fails on one left out.
MODULES = ("arraybench.model.schema", "arraybench.worker.timer", "arraybench.worker.counters", "arraybench.api",
           "arraybench.numeric.medians", "arraybench.analysis.compare")


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_a_modules_docstrings_hold(name):
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failed == 0, f"{failed} of {attempted} examples failed"


def test_every_module_with_examples_is_listed():
    from pathlib import Path

    import arraybench

    root = Path(arraybench.__file__).parent
    found = {".".join(p.relative_to(root.parent).with_suffix("").parts)
             for p in root.rglob("*.py") if ">>> " in p.read_text(encoding="utf-8")}
    assert found == set(MODULES)
