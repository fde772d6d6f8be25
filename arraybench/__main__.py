"""``python -m arraybench``."""

import sys

try:
    from .commands.main import main
except KeyboardInterrupt:  # Ctrl-C while the command line itself loads: as quiet as later on
    sys.stderr.write("arraybench: interrupted\n")
    sys.exit(130)

sys.exit(main())
