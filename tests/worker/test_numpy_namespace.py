"""NumPy's Array API namespace, as a worker opens it: without importing NumPy's submodules that load
on first use (f2py, testing, ma...), yet with every one of them reachable through it."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter: which modules an import loads is what is tested, and this process has
# loaded them all already.
OPENED = """
import json, sys
import numpy as np
listed = list(np.__all__)
from arraybench.backends.numpy import NumpyBackend
xp = NumpyBackend("cpu").namespace("array_api")
loaded = sorted(m for m in ("numpy.f2py", "numpy.testing", "numpy.ma", "numpy.polynomial") if m in sys.modules)
reached = xp.testing is __import__("numpy.testing").testing and xp.ma is np.ma
try:
    xp.no_such_function
    missing = "no error"
except AttributeError as exc:
    missing = str(exc)
print(json.dumps({"loaded_before_use": loaded, "restored": np.__all__ == listed, "reached": reached,
                  "missing": missing, "fft": xp.fft.__name__, "sum": xp.sum(xp.asarray([1.0, 2.0])).item()}))
"""


def test_numpys_namespace_leaves_its_lazy_submodules_unloaded_until_asked():
    out = subprocess.run([sys.executable, "-c", OPENED], capture_output=True, text=True, check=True)
    facts = json.loads(out.stdout)
    assert facts["loaded_before_use"] == []  # array_api_compat's clone would have imported all four
    assert facts["restored"]  # NumPy's own __all__ is as it was
    assert facts["reached"]  # and asked for, a submodule is NumPy's own
    assert "no_such_function" in facts["missing"]
    assert facts["fft"] == "array_api_compat.numpy.fft"  # the Array API's fft, not NumPy's
    assert facts["sum"] == 3.0
