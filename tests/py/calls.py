"""Reading the call log the fake programs of conftest.py write (one JSON argv per line)."""

import json
from pathlib import Path


def read_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]
