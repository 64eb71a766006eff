"""Runnable: two result files side by side (same as ``qt-hard eval compare A.json B.json``)."""

import sys

from qt_hard.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", "compare", *sys.argv[1:]]))
