"""``python -m spindle.cli ...``: the ``spindle`` command line."""

import sys

from spindle.cli import main

sys.exit(main())
