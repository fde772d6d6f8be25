"""``python -m arraybench.worker``: a worker process (job on stdin, messages on stdout)."""

import sys

from .main import main

sys.exit(main())
