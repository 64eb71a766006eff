"""Runnable: SentEval-protocol table for one model (same as ``qt-hard eval senteval``).

    python eval/senteval.py --model minilm --output /tmp/minilm.json
    python eval/senteval.py --model random:bow --tasks MR,CR
"""

import sys

from qt_hard.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", "senteval", *sys.argv[1:]]))
