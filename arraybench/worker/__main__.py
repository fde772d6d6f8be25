"""``python -m arraybench.worker``: a worker process (job on stdin, messages on stdout)."""

import atexit
import os
import sys
import threading

from ..host.against import SOURCE_MAP, mapped
from .main import main

if os.environ.get(SOURCE_MAP):
    # A worker of REF's code (--against REF): the work tree's folders on its path, the working
    # folder first among them, are REF's, so that `import mypkg` finds REF's version. (Its
    # working folder stays: the job's paths are relative to it.)
    sys.path[:] = [mapped(p or os.getcwd(), os.environ[SOURCE_MAP]) for p in sys.path]
status = main()
# A thread that a workload file started (at import, or in a call) and that is not a daemon would
# keep this process alive once its work is done and sent: Python waits for such threads at exit,
# and the parent would wait for the worker, then kill it. The work is done: end now.
if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    os._exit(status if isinstance(status, int) else 1)
sys.exit(status)
