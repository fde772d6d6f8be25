"""``python -m arraybench``."""

import sys

from .cli import main

sys.exit(main())
