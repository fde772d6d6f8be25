"""``python -m arraybench.worker``: a worker process (job on stdin, messages on stdout)."""

import atexit
import os
import sys

from ..host.against import SOURCE_MAP, mapped
from .main import main

if os.environ.get(SOURCE_MAP):
    # A worker of REF's code (--against REF): the work tree's folders on its path, the working
    # folder first among them, are REF's, so that `import mypkg` finds REF's version. (Its
    # working folder stays: the job's paths are relative to it.)
    sys.path[:] = [mapped(p or os.getcwd(), os.environ[SOURCE_MAP]) for p in sys.path]
status = main()
# The work is done and sent. End without the interpreter's finalization (tearing down every
# module: 0.4-0.5 s of CPU after a PyTorch worker's last message, 0.2 s after JAX's, in each of a
# run's workers), and without waiting for threads a workload file started and left running (not
# daemons, they would keep the process alive until the parent killed it). What a library or a
# workload registered with atexit still runs, and the streams are flushed.
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
os._exit(status if isinstance(status, int) else 1)
