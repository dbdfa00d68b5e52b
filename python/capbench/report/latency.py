"""Latency percentiles in a trial record, as the latency method is to write them.

The record holds `"latency": {"p50_ns": ..., "p99_ns": ..., "p99.9_ns": ..., "max_ns": ...}`:
delays from the generator's transmit stamp to capture, in nanoseconds. Other keys are ignored.
"""

from __future__ import annotations

import math
import re
from typing import Any

_KEY = re.compile(r"^(p\d+(?:\.\d+)?|min|max)_ns$")


def percentiles(record: dict[str, Any]) -> dict[str, float]:
    """{"p50": ns, "p99": ns, "max": ns, ...}; {} when the record has none."""
    lat = record.get("latency")
    if not isinstance(lat, dict):
        return {}
    out = {}
    for key, value in lat.items():
        m = _KEY.match(str(key))
        if m and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[m.group(1)] = float(value)
    return out


def order(name: str) -> float:
    """min < p50 < p99 < p99.9 < max."""
    if name == "min":
        return -1.0
    if name == "max":
        return 1000.0
    return float(name[1:])
