#!/usr/bin/env python3
"""tcpdump next to capbench's pcap backend at 1 GbE: the seed's iperf-like table, per frame length.

The question of capbench's seed: how much does the real program lose where capbench's own
libpcap counter does not? One run builds one veth test bed (capbench.testbed.veth_pair, its
default receive model: the capture veth's receive work on CPU 1) and, for each of the seed's
frame lengths (capbench.rates.SEED_SIZES: 64 to 1518 B), runs one trial of `--duration` seconds
(default 3) at 100 % of the 1 GbE wire rate with capbench-cap's `pcap` backend, then one with
tcpdump (capbench's built-in adapter, capbench.trial.apps: `tcpdump -i IF -n -p -w FILE`, every
frame written to a pcap file that capbench decodes). Both run through the same
capbench.trial.measure.Measurer (generator on CPU 0, the capture program on CPU 1), so every
figure comes from the same counters:

- offered: the rate asked for (and, where the generator did not hold it, what it sent: `*`);
- captured: frames the capture received per second (tcpdump: the frames in its file);
- loss and where: lost = sent − received, split into layers by the kernel's counters
  (TrialResult.loss_layers: rx ring, backlog, socket, application, unexplained);
- app / kernel CPU: the capture process's (tcpdump: its whole process tree's) user + system time,
  and the receive CPU's kernel time, % of one CPU over the load window;
- libpcap's own drop count (ps_drop: capbench-cap's socket drops for pcap, tcpdump's "dropped by
  kernel") beside the frames lost that it does not count; for tcpdump its captured / received by
  filter / dropped counts and capbench's remarks where they disagree with the kernel's side
  (TrialResult.app_counts, loss_remarks).

`--repeat N` runs the whole series N times on the same test bed (one row per trial, and the
spread of each loss over the repetitions).

    .venv/bin/python bench/bench_apps.py [--duration 3] [--repeat 1] [--sizes seed] [--rx-mode napi|rps]
                                         [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; about 13 x (2 x duration + 6) s per repetition (tcpdump's
trial adds libpcap's 1.5 s buffer timeout and the decode of its file). The test bed is removed at
the end, on errors and on Ctrl-C. Exit status 0 when the measurements ran (a trial tcpdump failed
is a result: it is shown), 1 if one could not run (or tcpdump failed its dry start), 2 for bad
input or no root.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from rich import box
from rich.table import Table
from rich.text import Text

from capbench.binaries import Binaries
from capbench.campaign.results import machine_info
from capbench.errors import CapbenchError, UsageError
from capbench.rates import parse_duration, parse_rate, parse_sizes, wire_pps
from capbench.testbed import rxmode
from capbench.testbed.veth_pair import Testbed
from capbench.trial import apps, program_probe
from capbench.trial.accounting import format_pct, layer_drops
from capbench.trial.measure import Measurer, TrialSetup
from capbench.trial.record import TrialResult

LINK = 1e9
RATE = "100%"
GEN_CPU, CAP_CPU = 0, 1
SETTLE_S = 0.3
PCAP, TCPDUMP = "pcap", "tcpdump"
CAPTURES = (PCAP, TCPDUMP)


@dataclass
class Row:
    """One trial, or the error that kept it from running."""

    size: int
    capture: str
    repeat: int
    result: TrialResult | None = None
    error: str = ""

    @property
    def own_drops(self) -> int | None:
        """libpcap's ps_drop as each reports it: capbench-cap's socket drops for pcap, tcpdump's own
        "dropped by kernel" count (its socket layer is that same figure)."""
        r = self.result
        if r is None:
            return None
        return r.app_counts.get("dropped") if self.capture == TCPDUMP else layer_drops(r.layers)


@dataclass
class Run:
    rows: list[Row] = field(default_factory=list)
    tcpdump_error: str = ""
    rx_mode: str = ""
    tcpdump_missing: bool = False  # not installed, skipped with --skip-peers (not a failure)
    load: list[tuple[float, float, float]] = field(default_factory=list)


def measurer(binaries: Binaries, tb: Testbed, capture: str, size: int, app: apps.Adapter | None) -> Measurer:
    setup = TrialSetup(backend=capture, frame_len=size, link_bps=LINK, gen_cpu=GEN_CPU, cap_cpu=CAP_CPU,
                       settle_s=SETTLE_S, app=app)
    return Measurer(binaries, tb, setup)


def run_all(binaries: Binaries, tb: Testbed, peers: dict[str, bool], sizes: tuple[int, ...], duration_s: float,
            repeat: int) -> Run:
    run = Run(load=[os.getloadavg()], rx_mode=tb.rx_mode)
    tcpdump = apps.builtin()[TCPDUMP]
    if not peers.get(tcpdump.program):
        run.tcpdump_error = f"{tcpdump.program} is not installed (apt-get install {tcpdump.package})"
        run.tcpdump_missing = True
    else:
        try:
            program_probe.probe(tcpdump, tb.cap_ns, tb.cap_if, CAP_CPU)
        except CapbenchError as e:
            run.tcpdump_error = str(e)
    if run.tcpdump_error:
        bc.note(f"tcpdump not measured: {run.tcpdump_error}")
    for rep in range(1, repeat + 1):
        for size in sizes:
            for capture in CAPTURES:
                if capture == TCPDUMP and run.tcpdump_error:
                    continue
                row = Row(size, capture, rep)
                try:
                    m = measurer(binaries, tb, capture, size, tcpdump if capture == TCPDUMP else None)
                    row.result = m.measure(duration_s, parse_rate(RATE))
                except CapbenchError as e:
                    row.error = str(e)
                run.rows.append(row)
                bc.note(progress(row))
        run.load.append(os.getloadavg())
    return run


def progress(row: Row) -> str:
    return bc.trial_text(f"  #{row.repeat} {row.size} B {row.capture}:", row.result, row.error)


def where_lost(r: TrialResult) -> str:
    """The loss by layer: "backlog 3,776, socket 648", and what no counter explains."""
    parts = [f"{name} {n:,}" for name, n, _ in r.loss_layers]
    if r.unexplained:
        parts.append(f"unexplained {r.unexplained:,}")
    return ", ".join(parts) or "—"


def offered_text(r: TrialResult) -> str:
    text = f"{r.offered_pps:,.0f}" if r.offered_pps is not None else r.rate
    return text + (f" *{r.achieved_pps:,.0f}" if r.invalid_offered_load else "")


def own_count_text(row: Row) -> tuple[str, str]:
    """(libpcap's drop count, lost frames it does not count)."""
    r, drops = row.result, row.own_drops
    if r is None or drops is None:
        return "—", "—"
    return f"{drops:,}", f"{r.lost - drops:,}"


def tcpdump_counts(r: TrialResult) -> str:
    c = r.app_counts
    names = (("captured", "captured"), ("seen", "received by filter"), ("dropped", "dropped by kernel"))
    return " / ".join(f"{c[k]:,}" if k in c else "?" for k, _ in names)


def trials_table(run: Run, duration_s: float) -> Table:
    t = Table(title=f"pcap and tcpdump at 100 % of 1 GbE, {duration_s:g} s per trial: generator CPU {GEN_CPU}, "
                    f"capture program + kernel receive CPU {CAP_CPU} (rx mode {run.rx_mode})",
              box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("frame [B]", justify="right")
    t.add_column("capture")
    for h in ("offered [pps]", "captured [pps]", "loss [%]"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    t.add_column("where lost (layers)")
    t.add_column(Text("app (user+sys) /\nkernel CPU [%]"), justify="right")
    t.add_column(Text("libpcap\nps_drop"), justify="right")
    t.add_column(Text("lost beyond\nps_drop"), justify="right")
    t.add_column(Text("tcpdump's own:\ncaptured / seen / dropped"), justify="right")
    multi = max((row.repeat for row in run.rows), default=1) > 1
    for row in run.rows:
        size = f"{row.size}" + (f" #{row.repeat}" if multi else "")
        r = row.result
        if r is None:
            t.add_row(size, row.capture, "[red]failed[/red]", "", "", row.error[:60], "", "", "", "")
            continue
        loss = format_pct(r.loss_pct, exact_zero=not r.lost)
        if r.failure:
            loss = f"[red]{loss} FAILED[/red]"
        app = f"{r.app_cpu_pct:.1f}"
        if r.app_user_cpu_pct is not None:
            app += f" ({r.app_user_cpu_pct:.1f}+{r.app_system_cpu_pct:.1f})"
        drops, beyond = own_count_text(row)
        t.add_row(size, row.capture, offered_text(r), f"{r.rx_pps:,.0f}", loss, where_lost(r),
                  f"{app} / {r.kernel_cpu_pct:.1f}", drops, beyond,
                  tcpdump_counts(r) if row.capture == TCPDUMP else "—")
    return t


def spread_table(run: Run) -> Table | None:
    """Each loss over the repetitions: min / median / max (None with one repetition)."""
    reps = max((row.repeat for row in run.rows), default=1)
    if reps < 2:
        return None
    t = Table(title=f"Loss [%] over {reps} repetitions: min / median / max", box=box.SIMPLE_HEAD,
              title_justify="left")
    t.add_column("frame [B]", justify="right")
    for c in CAPTURES:
        t.add_column(c, justify="right")
    for size in dict.fromkeys(row.size for row in run.rows):
        cells = []
        for c in CAPTURES:
            losses = [row.result.loss_pct for row in run.rows
                      if row.size == size and row.capture == c and row.result is not None]
            cells.append("—" if not losses else
                         f"{min(losses):.3g} / {statistics.median(losses):.3g} / {max(losses):.3g}")
        t.add_row(str(size), *cells)
    return t


def comparison(run: Run) -> list[str]:
    """What the trials say side by side, in counts: where tcpdump lost more than pcap, and how much
    of each one's loss libpcap's own drop count leaves out."""
    pairs = {}
    for row in run.rows:
        if row.result is not None:
            pairs.setdefault((row.repeat, row.size), {})[row.capture] = row
    both = [p for p in pairs.values() if PCAP in p and TCPDUMP in p]
    out = []
    if both:
        more = [p for p in both if p[TCPDUMP].result.lost > p[PCAP].result.lost]
        clean = [p for p in more if p[PCAP].result.lost == 0]
        out.append(f"tcpdump lost more than pcap in {len(more)} of {len(both)} frame-length pairs; in {len(clean)} "
                   f"of them pcap lost nothing "
                   f"({', '.join(f'{p[TCPDUMP].size} B #{p[TCPDUMP].repeat}' for p in clean) or 'none'}).")
    for c in CAPTURES:
        rows = [row for row in run.rows if row.capture == c and row.result is not None]
        lost = sum(row.result.lost for row in rows)
        if not rows or not lost:
            continue
        drops = sum(row.own_drops or 0 for row in rows)
        sent = sum(row.result.sent for row in rows)
        out.append(f"{c}: lost {lost:,} of {sent:,} frames over {len(rows)} trials; libpcap's ps_drop counted "
                   f"{drops:,} of them ({drops / lost:.0%}), the other {lost - drops:,} it does not count.")
    failed = [row for row in run.rows if row.result is not None and row.result.failure]
    if failed:
        out.append(f"[red]{len(failed)} trial(s) failed[/red]: "
                   + "; ".join(f"{row.size} B {row.capture}: {row.result.failure}" for row in failed))
    return out


def remarks(run: Run) -> list[str]:
    """capbench's remarks on each tcpdump trial's own counts (loss_layers.program_remarks and the rest)."""
    out = []
    for row in run.rows:
        if row.capture == TCPDUMP and row.result is not None and row.result.loss_remarks:
            out.append(f"{row.size} B #{row.repeat}: " + "; ".join(row.result.loss_remarks))
    return out


def print_report(run: Run, duration_s: float) -> None:
    con = bc.console()
    con.print(trials_table(run, duration_s))
    spread = spread_table(run)
    if spread is not None:
        con.print(spread)
    if run.tcpdump_error:
        con.print(f"tcpdump: [red]not measured[/red]: {run.tcpdump_error}")
    else:
        con.print(f"tcpdump: `{apps.builtin()[TCPDUMP].command}`")
    con.print("offered: 100 % of the 1 GbE wire rate at the frame length (* the generator did not hold it: what it "
              "sent, in pps). captured: frames received / the generator's sending time (tcpdump: the frames in its "
              "file, decoded by capbench). where lost: the loss by layer, from the kernel's counters. libpcap "
              "ps_drop: the socket's drops as libpcap counts them (pcap_stats; tcpdump's \"dropped by kernel\"); "
              "lost beyond ps_drop: lost frames that count does not include (rx ring, backlog, and what no counter "
              "explains). tcpdump's own counts: \"packets captured\", \"received by filter\" (seen), \"dropped by "
              "kernel\".")
    for line in comparison(run):
        con.print(line)
    rem = remarks(run)
    if rem:
        con.print("capbench's remarks on tcpdump's trials:")
        for line in rem:
            con.print(f"  {line}")
    con.print("load average (1, 5, 15 min) at the start and after each repetition: "
              + "; ".join(" ".join(f"{x:.2f}" for x in la) for la in run.load))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--duration", default="3", metavar="S", help="seconds per trial (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=1, metavar="N", help="run the series N times (default: %(default)s)")
    p.add_argument("--sizes", default="seed", metavar="LIST",
                   help="frame lengths, comma-separated (default: seed, the seed's 13 lengths)")
    p.add_argument("--skip-peers", action="store_true", help="measure pcap alone when tcpdump is not installed")
    p.add_argument("--rx-mode", choices=tuple(rxmode.RX_MODES), default=None,
                   help=f"the test bed's receive model (default: capbench's, {rxmode.DEFAULT_RX_MODE}; "
                        "bench/README.md, Receive models)")
    p.add_argument("--json", metavar="FILE", help="also write every trial record as JSON")
    args = p.parse_args(argv)
    try:
        duration_s = parse_duration(args.duration, what="--duration")
        sizes = parse_sizes(args.sizes)
    except UsageError as e:
        p.error(str(e))
    if any(not isinstance(s, int) for s in sizes):
        p.error("--sizes: frame lengths only (no profiles)")
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    tcpdump = apps.builtin()[TCPDUMP]
    t0 = time.monotonic()
    rc, run, tb_id = bc.run_bench("bench_apps.py", {tcpdump.program: tcpdump.package}, args.skip_peers,
                                  lambda b, tb, peers: run_all(b, tb, peers, sizes, duration_s, args.repeat),
                                  rx_mode=args.rx_mode)
    if run is None:
        return rc
    print_report(run, duration_s)
    bc.note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        data = {"meta": machine_info() | {"duration_s": duration_s, "repeat": args.repeat, "testbed": tb_id,
                                          "link_bps": LINK, "rate": RATE, "rx_mode": run.rx_mode,
                                          "sizes": list(sizes),
                                          "wire_pps": {s: wire_pps(LINK, s) for s in sizes},
                                          "tcpdump_command": tcpdump.command, "tcpdump_error": run.tcpdump_error,
                                          "loadavg": run.load},
                "trials": [{"size": row.size, "capture": row.capture, "repeat": row.repeat, "error": row.error,
                            "libpcap_drops": row.own_drops,
                            "result": row.result.to_record() if row.result is not None else None}
                           for row in run.rows],
                "comparison": comparison(run)}
        Path(args.json).write_text(json.dumps(data, indent=1, default=str) + "\n")
        bc.note(f"records written to {args.json}")
    failed = (run.tcpdump_error and not run.tcpdump_missing) or any(row.error for row in run.rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
