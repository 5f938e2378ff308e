"""`python -m bot` runs the trainbot command line."""

import sys

from bot.cli import main

sys.exit(main())
