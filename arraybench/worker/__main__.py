"""``python -m arraybench.worker``: a worker process (job on stdin, messages on stdout)."""

import atexit
import os
import sys
import threading

from .main import main

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
