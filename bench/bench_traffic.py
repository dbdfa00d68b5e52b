#!/usr/bin/env python3
"""Traffic benchmark: capbench-gen's size profiles, threads and pacing next to trafgen and tcpreplay.

One run builds one veth test bed (capbench.testbed.veth_pair, the capture veth's receive
work steered to CPU 1 by RPS) and measures, side by side, every figure read from
a counter in this run; "delivered" is always capbench-xdpcount's count of
capbench frames on the capture veth:

1. Unpaced (`--rate max`): the xdp engine at 64 B, IMIX (`imix:seed`) and random
   sizes (`random:64-1518`), each with one thread (CPU 0) and two threads
   (`--threads 2 --cpus 0,1`); the afpacket engine at 64 B; trafgen
   (netsniff-ng) and tcpreplay `--topspeed` replaying a pcap of 64 B capbench
   frames, both on CPU 0. Targets: IMIX and random within 10 % of fixed 64 B in
   pps (one thread); two threads faster than one (64 B).
2. Pacing of the xdp engine: |achieved - target| / target at a few packet rates
   (64 B) and at 1 Gbit/s of IMIX (wire bits). Target: error <= 0.1 %.

Run it as root from the repository (or `make bench`):

    .venv/bin/python bench/bench_traffic.py [--duration 2] [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; about 16 x (duration + 1.5) seconds. The
test bed is removed at the end, on errors and on Ctrl-C. Exit status 0 when the
measurements ran (PASS/MISS are figures, not a test), 1 if one failed, 2 for bad
input or no root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from bench_generator_capture import (start_xdpcount, stop_and_read, trafgen_frame, write_trafgen_conf,
                                     measure_trafgen)
from rich import box
from rich.table import Table
from rich.text import Text

from capbench.binaries import Binaries
from capbench.errors import CapbenchError, UsageError
from capbench.testbed.procs import ChildSet
from capbench.rates import parse_duration, parse_rate
from capbench.campaign.results import machine_info
from capbench.testbed.veth_pair import Testbed
from capbench.trial.measure import Measurer, TrialSetup

GEN_CPU = 0
LINK_10G = 10e9  # --link only bounds what --rate may ask for
SIZES = (("64 B", "64"), ("IMIX (imix:seed)", "imix:seed"), ("random 64-1518", "random:64-1518"))
PACED = (("64", "10kpps"), ("64", "100kpps"), ("64", "500kpps"), ("imix:seed", "1g"))
PROFILE_MAX_GAP_PCT = 10.0
PACING_MAX_ERROR_PCT = 0.1
TCPREPLAY = "tcpreplay"
TRAFGEN = "trafgen"
PEER_PACKAGES = {TRAFGEN: "netsniff-ng", TCPREPLAY: "tcpreplay"}
PCAP_FRAMES = 10_000  # frames in the pcap tcpreplay loops over


@dataclass
class GenRun:
    label: str
    size: str
    threads: int
    rate: str
    sent: int | None
    delivered: int
    duration_s: float
    pps: float
    wire_gbps: float | None
    mean_len: float | None
    target_pps: float | None = None
    target_bps: float | None = None
    wire_bps: float | None = None
    late: int = 0
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.sent is not None and self.sent == self.delivered

    @property
    def error_pct(self) -> float | None:
        """Pacing error: by wire bits for a bit rate, by frames for a packet rate."""
        if self.target_bps:
            return 100.0 * abs(self.wire_bps - self.target_bps) / self.target_bps
        if self.target_pps:
            return 100.0 * abs(self.pps - self.target_pps) / self.target_pps
        return None


@dataclass
class Failed:
    label: str
    error: str


def measure_gen(binaries: Binaries, tb: Testbed, label: str, *, size: str, rate: str, threads: int = 1,
                engine: str = "xdp", duration_s: float) -> GenRun:
    """capbench-gen alone into the capture veth, with the argv capbench's trials use."""
    gen_args = ("--threads", str(threads), "--cpus", ",".join(str(c) for c in range(threads))) if threads > 1 else ()
    setup = TrialSetup(backend="(none)", frame_len=64, size_profile=None if size.isdigit() else size,
                       link_bps=LINK_10G, engine=engine, gen_cpu=GEN_CPU if threads == 1 else None,
                       cap_cpu=None, gen_args=gen_args)
    if size.isdigit():
        setup = dataclasses.replace(setup, frame_len=int(size))
    argv = Measurer(binaries, tb, setup).gen_argv(duration_s, parse_rate(rate))
    with ChildSet() as kids:
        xdp = start_xdpcount(kids, binaries, tb)
        gen = kids.start("capbench-gen", argv, netns_name=tb.gen_ns)
        gen.wait(duration_s + 10.0)
        g = gen.summary()
        (x,) = stop_and_read(kids, xdp)
    r_ = parse_rate(rate)
    paced_bits = r_.kind == "bps"
    return GenRun(
        label=label, size=size, threads=threads, rate=rate, sent=int(g["sent"]), delivered=int(x["capbench"]),
        duration_s=float(g["duration_s"]), pps=float(g["achieved_pps"]),
        wire_gbps=float(g["achieved_wire_bps"]) / 1e9 if "achieved_wire_bps" in g else None,
        mean_len=float(g.get("mean_frame_len", 0)) or None,
        target_pps=None if rate == "max" or paced_bits else float(g["target_pps"]),
        target_bps=r_.value if paced_bits else None,
        wire_bps=float(g["achieved_wire_bps"]) if "achieved_wire_bps" in g else None,
        late=int(g.get("late", 0)), raw={"gen": g, "xdpcount": x})


def trafgen_run(binaries: Binaries, tb: Testbed, duration_s: float) -> GenRun:
    with tempfile.TemporaryDirectory(prefix="capbench-bench-") as tmp:
        conf = Path(tmp) / "capbench-64.trafgen"
        write_trafgen_conf(conf, trafgen_frame(tb.dst_mac, tb.gen_mac))
        r = measure_trafgen(binaries, tb, conf, duration_s, "skb")  # the sink of the other rows
    return GenRun(label="trafgen", size="64", threads=1, rate="max", sent=r.sent, delivered=r.delivered,
                  duration_s=r.duration_s, pps=r.pps, wire_gbps=r.pps * 84 * 8 / 1e9, mean_len=64.0, raw=r.raw)


def write_pcap(path: Path, frame: bytes, count: int) -> None:
    """A classic pcap (microsecond, Ethernet) of `count` copies of `frame`, 10 µs apart."""
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(count):
            t_us = i * 10
            f.write(struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(frame), len(frame)))
            f.write(frame)


def tcpreplay_run(binaries: Binaries, tb: Testbed, duration_s: float) -> GenRun:
    """tcpreplay --topspeed on CPU 0, looping over a preloaded pcap of 64 B capbench frames for
    `duration_s`. Its own `Actual: N packets ... in S seconds` line gives the sent count and time."""
    with tempfile.TemporaryDirectory(prefix="capbench-bench-") as tmp:
        pcap = Path(tmp) / "capbench-64.pcap"
        write_pcap(pcap, trafgen_frame(tb.dst_mac, tb.gen_mac), PCAP_FRAMES)
        argv = ["taskset", "-c", str(GEN_CPU), shutil.which(TCPREPLAY) or TCPREPLAY, "--intf1", tb.gen_if,
                "--topspeed", "--preload-pcap", "--loop", "0", "--duration", f"{max(1, round(duration_s))}",
                str(pcap)]
        with ChildSet() as kids:
            xdp = start_xdpcount(kids, binaries, tb)
            t0 = time.monotonic()
            tr = kids.start("tcpreplay", argv, netns_name=tb.gen_ns)
            rc = tr.wait(duration_s + 30.0)
            wall_s = time.monotonic() - t0
            if rc != 0:
                raise tr.failure(f"exited with {rc}")
            (x,) = stop_and_read(kids, xdp)
    out = bc.child_text(tr)
    text = "\n".join(out)
    m = re.search(r"Actual: (\d+) packets \(\d+ bytes\) sent in ([\d.]+) seconds", text)
    sent, run_s = (int(m.group(1)), float(m.group(2))) if m else (None, wall_s)
    delivered = int(x["capbench"])
    pps = delivered / run_s if run_s > 0 else 0.0
    return GenRun(label="tcpreplay --topspeed", size="64", threads=1, rate="max", sent=sent, delivered=delivered,
                  duration_s=run_s, pps=pps, wire_gbps=pps * 84 * 8 / 1e9, mean_len=64.0,
                  raw={"tcpreplay_out": out, "wall_s": wall_s, "xdpcount": x})


def attempt(label: str, fn, *args, **kw) -> GenRun | Failed:
    bc.note(f"  {label} ...")
    try:
        r = fn(*args, **kw)
    except CapbenchError as e:
        bc.note(f"  {label} FAILED: {e}")
        return Failed(label, str(e))
    bc.note(f"  {label}: {r.pps:,.0f} pps, sent {'?' if r.sent is None else f'{r.sent:,}'}, "
            f"delivered {r.delivered:,}")
    return r


def run_all(binaries: Binaries, tb: Testbed, peers: dict[str, bool], d: float) -> dict[str, list]:
    res: dict[str, list] = {"unpaced": [], "pacing": []}
    bc.note("unpaced:")
    for threads in (1, 2):
        for label, size in SIZES:
            lab = f"xdp {label}, {threads} thread{'s' if threads > 1 else ''}"
            res["unpaced"].append(attempt(lab, measure_gen, binaries, tb, lab, size=size, rate="max",
                                          threads=threads, duration_s=d))
    res["unpaced"].append(attempt("afpacket 64 B, 1 thread", measure_gen, binaries, tb, "afpacket 64 B, 1 thread",
                                  size="64", rate="max", engine="afpacket", duration_s=d))
    if peers[TRAFGEN]:
        res["unpaced"].append(attempt("trafgen", trafgen_run, binaries, tb, d))
    if peers[TCPREPLAY]:
        res["unpaced"].append(attempt("tcpreplay --topspeed", tcpreplay_run, binaries, tb, d))
    bc.note("pacing, xdp engine, 1 thread:")
    for size, rate in PACED:
        lab = f"{size} @ {rate}"
        res["pacing"].append(attempt(lab, measure_gen, binaries, tb, lab, size=size, rate=rate, duration_s=d))
    return res


def by_label(runs: list) -> dict[str, GenRun]:
    return {r.label: r for r in runs if isinstance(r, GenRun)}


def unpaced_table(runs: list) -> Table:
    t = Table(title="Generators, unpaced, into the capture veth (delivered = capbench-xdpcount there)",
              box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("generator")
    for h in ("rate [pps]", "mean frame [B]", "wire [Gbps]", "sent", "delivered", "sent = delivered",
              "time [s]"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    for r in runs:
        if isinstance(r, Failed):
            t.add_row(r.label, "[red]failed[/red]", *[""] * 6)
            continue
        t.add_row(r.label, f"{r.pps:,.0f}", "—" if r.mean_len is None else f"{r.mean_len:.1f}",
                  "—" if r.wire_gbps is None else f"{r.wire_gbps:.3f}",
                  "—" if r.sent is None else f"{r.sent:,}", f"{r.delivered:,}",
                  "yes" if r.exact else "[red]NO[/red]", f"{r.duration_s:.3f}")
    return t


def pacing_table(runs: list) -> Table:
    t = Table(title=f"Pacing, xdp engine, 1 thread (target: error ≤ {PACING_MAX_ERROR_PCT} %, every frame "
                    "delivered)",
              box=box.SIMPLE_HEAD, title_justify="left")
    for h in ("size", "rate", "target", "achieved", "error [%]", "late", "sent = delivered", "verdict"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    for r in runs:
        if isinstance(r, Failed):
            t.add_row(r.label, "[red]failed[/red]", *[""] * 6)
            continue
        if r.target_bps:
            target, achieved = f"{r.target_bps / 1e9:.3f} Gbps", f"{r.wire_bps / 1e9:.6f} Gbps"
        else:
            target, achieved = f"{r.target_pps:,.0f} pps", f"{r.pps:,.1f} pps"
        err = r.error_pct
        t.add_row(r.size, r.rate, target, achieved, f"{err:.5f}", f"{r.late:,}",
                  "yes" if r.exact else f"[red]NO ({r.sent - r.delivered:,})[/red]",
                  bc.verdict(err <= PACING_MAX_ERROR_PCT and r.exact))
    return t


def targets(res: dict[str, list]) -> list[tuple[str, bool | None]]:
    u = by_label(res["unpaced"])
    out: list[tuple[str, bool | None]] = []
    base = u.get("xdp 64 B, 1 thread")
    for label, _ in SIZES[1:]:
        r = u.get(f"xdp {label}, 1 thread")
        if base and r:
            gap = 100.0 * (base.pps - r.pps) / base.pps
            out.append((f"{label}: {r.pps:,.0f} pps vs 64 B {base.pps:,.0f} pps, {abs(gap):.1f} % {'below' if gap >= 0 else 'above'} "
                        f"(target within {PROFILE_MAX_GAP_PCT:g} %)", abs(gap) <= PROFILE_MAX_GAP_PCT))
    paced = [r for r in res["pacing"] if isinstance(r, GenRun)]
    if paced:
        worst = max(paced, key=lambda r: r.error_pct)
        out.append((f"pacing: worst error {worst.error_pct:.5f} % ({worst.label}) (target ≤ {PACING_MAX_ERROR_PCT} %)",
                    worst.error_pct <= PACING_MAX_ERROR_PCT and len(paced) == len(res["pacing"])
                    and all(r.exact for r in paced)))
    two = u.get("xdp 64 B, 2 threads")
    if base and two:
        out.append((f"two threads: {two.pps:,.0f} pps vs one {base.pps:,.0f} pps = {two.pps / base.pps:.2f}× "
                    f"(target > 1×)", two.pps > base.pps))
    return out


def print_report(res: dict[str, list], peers: dict[str, bool]) -> None:
    con = bc.console()
    con.print(unpaced_table(res["unpaced"]))
    for prog, ok in peers.items():
        if not ok:
            con.print(f"{prog}: not installed: apt-get install {PEER_PACKAGES[prog]}")
    con.print("rate: capbench-gen's achieved_pps (departures over their span); trafgen and tcpreplay: frames "
              "delivered / the sending time they report. One thread on CPU 0; two threads on CPUs 0 and 1, "
              "which also does the capture veth's RPS work.\n")
    con.print(pacing_table(res["pacing"]))
    con.print("error: packet rates by frames per second; the IMIX bit rate by its wire bits (frame + 20 B) per "
              "second, every frame with its own wire time. late: frames that left more than one gap after their "
              "scheduled time (bursts; the mean rate is kept from the schedule's origin).\n")
    for text, ok in targets(res):
        con.print(f"{text}: {bc.verdict(bool(ok))}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--duration", default="2", metavar="S", help="seconds per measurement (default: %(default)s)")
    p.add_argument("--skip-peers", action="store_true", help="skip trafgen or tcpreplay when missing")
    p.add_argument("--json", metavar="FILE", help="also write every figure and the programs' summaries as JSON")
    args = p.parse_args(argv)
    try:
        d = parse_duration(args.duration, what="--duration")
    except UsageError as e:
        p.error(str(e))
    t0 = time.monotonic()
    rc, res, tb_id = bc.run_bench("bench_traffic.py", PEER_PACKAGES, args.skip_peers,
                                  lambda b, tb, peers: (run_all(b, tb, peers, d), peers))
    if res is None:
        return rc
    res, peers = res
    print_report(res, peers)
    bc.note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        def rec(r):
            d_ = dataclasses.asdict(r) | {"kind": type(r).__name__}
            return d_ | ({"exact": r.exact, "error_pct": r.error_pct} if isinstance(r, GenRun) else {})
        out = {"meta": machine_info() | {"duration_s": d, "testbed": tb_id},
               "unpaced": [rec(r) for r in res["unpaced"]], "pacing": [rec(r) for r in res["pacing"]],
               "targets": [{"text": t, "pass": ok} for t, ok in targets(res)]}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    failed = [r for rs in res.values() for r in rs if isinstance(r, Failed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
