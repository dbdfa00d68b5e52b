"""`python -m capbench` runs the command line."""

import sys

from capbench.cli import main

sys.exit(main())
