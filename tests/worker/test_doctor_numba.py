"""``arraybench doctor``'s Numba check where Numba is missing: one skipped line saying how to install
it (where it is installed, the check runs for real in tests/worker/test_doctor.py)."""

from __future__ import annotations

import sys

import arraybench.backends
from arraybench.backends.numpy import NumpyBackend
from arraybench.worker import selfcheck


def test_without_numba_the_check_is_skipped_with_the_install_line(monkeypatch):
    # As on a machine without Numba: `import numba` fails inside NumPy's compiler module, which
    # is imported afresh (an earlier import, and the package's attribute for it, are hidden).
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "arraybench.backends.numba_jit", raising=False)
    monkeypatch.delattr(arraybench.backends, "numba_jit", raising=False)
    [outcome] = selfcheck.run_checks(NumpyBackend("cpu"), ("numba",))
    assert outcome.status == "skipped"
    assert outcome.detail == ("Numba is not installed, so NumPy's compiled cells are skipped "
                              "(pip install 'arraybench[numba]')")

