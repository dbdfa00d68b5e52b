"""What the benchmark scripts in bench/ share: the run harness, peers that must be installed, the load note.

The per-measurement helpers (the xdpcount "delivered" counter, trafgen, tcpdump's
exit report) live in bench_generator_capture.py and are imported from there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # this tree's capbench

from rich.console import Console  # noqa: E402

from capbench.testbed import veth_pair as testbed  # noqa: E402
from capbench.binaries import Binaries, find_binaries  # noqa: E402
from capbench.errors import CapbenchError, Terminated, UsageError  # noqa: E402
from capbench.testbed.procs import Child  # noqa: E402
from capbench.testbed.veth_pair import Testbed  # noqa: E402
from capbench.rates import parse_duration  # noqa: E402
from capbench.trial.accounting import format_pct  # noqa: E402
from capbench.trial.record import TrialResult  # noqa: E402

T = TypeVar("T")

RX_CPU = 1  # the capture veth's RPS target


def note(text: str) -> None:
    """Progress on stderr; stdout carries the tables."""
    print(text, file=sys.stderr, flush=True)


def verdict(ok: bool) -> str:
    return "[green]PASS[/green]" if ok else "[red]MISS[/red]"


def trial_text(head: str, r: TrialResult | None, error: str) -> str:
    """A trial's progress line after `head`: what the generator sent, what the capture received,
    the loss, and the program's failure; `error` when the trial did not run (r is None)."""
    if r is None:
        return f"{head} FAILED: {error}"
    return (f"{head} sent {r.sent:,} ({r.achieved_pps:,.0f} pps), received {r.received:,} ({r.rx_pps:,.0f} pps), "
            f"loss {format_pct(r.loss_pct, exact_zero=not r.lost)} %" + (f" FAILED: {r.failure}" if r.failure else ""))


def seconds(text: str) -> float:
    """An argparse `type` for a duration option (`3`, `2.5s`, `500ms`)."""
    try:
        return parse_duration(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def child_text(child: Child) -> list[str]:
    """Every line a peer program printed that is not JSON: its stdout text, then its stderr."""
    return [m.get("text", "") for m in child.messages if m.get("type") == "text"] + list(child.stderr_lines)


def find_peers(packages: dict[str, str], skip: bool) -> dict[str, bool]:
    """Which peer programs are installed; UsageError for a missing one unless `skip`."""
    peers = {}
    for prog, package in packages.items():
        peers[prog] = shutil.which(prog) is not None
        if not peers[prog]:
            if not skip:
                raise UsageError(f"{prog} not installed: apt-get install {package} (or pass --skip-peers)")
            note(f"{prog} not installed: apt-get install {package}; skipping it")
    return peers


def load_note() -> str | None:
    """Other capbench test beds in use and the 1-minute load average before the run starts."""
    busy = [i.id for i in testbed.list_testbeds() if i.in_use]
    load1 = os.getloadavg()[0]
    parts = []
    if busy:
        parts.append(f"other capbench test beds in use: {', '.join(busy)}")
    if load1 >= 0.5:
        parts.append(f"load average {load1:.2f} before the run")
    return "; ".join(parts) or None


def preflight(prog: str, needs: str, check: Callable[[], T]) -> T | None:
    """A bench's start: root (for `needs`), then `check()` (binaries, peers, kernel features), and
    the load before the run said on stderr. None, the problem said in one line, when one fails
    (the bench then exits 2)."""
    if os.geteuid() != 0:
        print(f"{prog} needs root ({needs}): run it with sudo", file=sys.stderr)
        return None
    try:
        found = check()
    except CapbenchError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None
    busy = load_note()
    if busy:
        note(f"note: {busy}: the figures may be disturbed")
    return found


def until_stopped(body: Callable[[], T]) -> tuple[int, T | None]:
    """(0, body()), or the exit status of a bench stopped by Ctrl-C (130) or SIGTERM (143), said on
    stderr: the test beds' context managers have removed them by then."""
    try:
        return 0, body()
    except KeyboardInterrupt:
        note("interrupted: the test beds are removed")
        return 130, None
    except Terminated:
        note("terminated: the test beds are removed")
        return 143, None


def run_bench(prog: str, packages: dict[str, str], skip_peers: bool,
              body: Callable[[Binaries, Testbed, dict[str, bool]], object],
              rx_mode: str | None = None) -> tuple[int, object, str]:
    """Root check, binaries, peers, one test bed (receive work on RX_CPU; `rx_mode`: the test bed's
    receive model, None for capbench's default), `body(binaries, tb, peers)`.

    Returns (exit status, body's result or None, test bed id)."""
    found = preflight(prog, "network namespaces, XDP, BPF", lambda: (find_binaries(), find_peers(packages, skip_peers)))
    if found is None:
        return 2, None, ""
    binaries, peers = found
    def on_bed() -> tuple[object, str]:
        with testbed.testbed(rx_cpu=RX_CPU, purpose="bench",
                             **({} if rx_mode is None else {"rx_mode": rx_mode})) as tb:
            note(f"test bed {tb.id}: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}, receive work on CPU {RX_CPU} ({tb.rx_mode})")
            return body(binaries, tb, peers), tb.id

    try:
        status, done = until_stopped(on_bed)
        return (status, *(done or (None, "")))
    except CapbenchError as e:  # the test bed itself could not be built or removed
        print(f"{prog}: {e}", file=sys.stderr)
        return 1, None, ""


def console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=180)

