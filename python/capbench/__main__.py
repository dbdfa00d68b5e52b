"""`python -m capbench` runs the command line."""

import sys

from capbench.cli.main import main

sys.exit(main())
