"""The seed article's entry point: ``python main.py --output-dir benchmark_plots`` runs the default suite.

Every option of ``arraybench run`` works here too.
"""

import sys

from arraybench.commands.main import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
