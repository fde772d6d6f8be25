"""``python -m arraybench.worker``: a worker process (job on stdin, messages on stdout)."""

import atexit
import contextlib
import os
import sys

from . import pin, settle

pin()  # before the imports below load NumPy, whose BLAS starts its threads as it loads
from .main import SOURCE_MAP, serve  # noqa: E402

settle()

if os.environ.get(SOURCE_MAP):
    from ..host.git import mapped

    # A worker of REF's code (--against REF): its path's work-tree folders are REF's, so that
    # `import mypkg` finds REF's version (its working folder stays: the job's paths are relative).
    sys.path[:] = [mapped(p or os.getcwd(), os.environ[SOURCE_MAP]) for p in sys.path]
status = serve()
# The work is sent. End without the interpreter's finalization (0.4-0.5 s of CPU for a PyTorch
# worker) and without waiting for threads a workload left running; atexit handlers still run.
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr):
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
os._exit(status if isinstance(status, int) else 1)
