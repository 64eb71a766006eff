"""Runnable: Wiki-N mean and linear classifier accuracy (same as ``qt-hard eval wiki``).

    python eval/wiki.py --model runs/bow_wiki/final --data WIKI_DIR --classes 100
"""

import sys

from qt_hard.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", "wiki", *sys.argv[1:]]))
