"""Make `import capbench` work from a source checkout without installing it."""

import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
