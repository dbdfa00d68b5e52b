"""`capbench side --spec JSON`: internal. One capture side of one trial on this host, driven by
signals by a capbench on another host (trial.remote_side: the protocol)."""

from __future__ import annotations

import argparse
import json

from capbench.errors import UsageError
from capbench.trial.remote_side import realtime_minus_monotonic_ns, run_agent


def cmd_side(args: argparse.Namespace) -> int:
    if args.clock:
        print(json.dumps({"realtime_minus_monotonic_ns": realtime_minus_monotonic_ns()}), flush=True)
        return 0
    if args.spec is None:
        raise UsageError("capbench side is internal: a capbench on another host starts it (docs/topology.md)")
    try:
        spec = json.loads(args.spec)
        if not isinstance(spec, dict):
            raise ValueError
    except ValueError:
        raise UsageError("capbench side is internal: a capbench on another host starts it (docs/topology.md)") from None

    def emit(msg: dict) -> None:
        print(json.dumps(msg, separators=(",", ":")), flush=True)

    return run_agent(spec, emit)

