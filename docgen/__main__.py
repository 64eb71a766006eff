"""``python -m docgen --check`` / ``--write``: check or rewrite the generated blocks of the pages."""

import sys

from docgen import main

sys.exit(main())
