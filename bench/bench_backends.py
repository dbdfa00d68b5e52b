#!/usr/bin/env python3
"""Capture backends benchmark: each backend's highest lossless rate at 64 B beside the xdp ceiling,
tcpdump and netsniff-ng.

One run builds one veth test bed (capbench.testbed.veth_pair, the capture veth's receive
work steered to CPU 1 by RPS). For every capture backend `capbench backends`
says works here (pcap, raw, afp-v2, afp-v3, fanout with 2 workers in `lb` mode,
afxdp), for the `xdp` ceiling, and for tcpdump (`-w /dev/null`) and netsniff-ng
(`--out /dev/null --silent`) run as the capture program in the capture namespace,
it runs a short RFC 2544 binary search (capbench.methods.rfc2544.search: 1 s
trials, 0.5 s pauses, precision 0.4 % of the 10 GbE wire rate = 59.5 kpps) at 64 B on an emulated 10 GbE link, so that the search
range goes beyond the 1 GbE wire rate. Generator (capbench-gen, xdp engine) on
CPU 0; capture program and the kernel's receive work (RPS) on CPU 1.

The generator here tops out near 1 Mpps: a trial whose generator did not send
its load is marked `invalid_offered_load` and fails in the search without being
a capture loss. When the lowest failing rate of a search is such a trial, the
table says "generator" — the capture was lossless as far as the generator could
go, and the figure is a lower bound of the capture, not its limit.

CPU cost per packet: the capture program's user+system CPU over the load window
(% of one CPU x window) / frames it received, in the verification trial at the
found rate. Targets: the best backend >= 60 % of the xdp ceiling and >= 3x
tcpdump's lossless rate.

    .venv/bin/python bench/bench_backends.py [--trial 1] [--precision 0.4] [--only LIST] [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; about 4-5 minutes. The test bed is removed
at the end, on errors and on Ctrl-C. Exit status 0 when the measurements ran, 1
if one failed, 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from bench_generator_capture import TCPDUMP_DRAIN_S, parse_tcpdump_stats, start_xdpcount, stop_and_read
from rich import box
from rich.table import Table
from rich.text import Text

from capbench.trial import accounting
from capbench.testbed import cpu
from capbench.testbed import preflight
from capbench.binaries import Binaries
from capbench.errors import CapbenchError, UsageError
from capbench.methods import rfc2544
from capbench.testbed.procs import ChildError, ChildSet
from capbench.rates import Rate, wire_pps
from capbench.campaign.results import machine_info
from capbench.testbed.veth_pair import Testbed
from capbench.trial.measure import OFFERED_MIN_SHARE, Measurer, TrialSetup, offered_share

FRAME_LEN = 64
LINK = 10e9
GEN_CPU, CAP_CPU = 0, 1
SETTLE_S = 0.3
READY_TIMEOUT_S = 5.0
# netsniff-ng's first start in a session took 5.1 s here (later ones 0.5 s): a peer
# gets longer to set up its ring; waiting costs nothing when it is quick.
PEER_READY_TIMEOUT_S = 20.0
BACKENDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pcap", "pcap", ()),
    ("raw", "raw", ()),
    ("afp-v2", "afp-v2", ()),
    ("afp-v3", "afp-v3", ()),
    ("fanout (2 workers, lb)", "fanout", ("--workers", "2", "--fanout-mode", "lb")),
    ("afxdp", "afxdp", ()),
)
CEILING = ("xdp (ceiling)", "xdp", ())
TCPDUMP, NETSNIFF = "tcpdump", "netsniff-ng"
PEER_PACKAGES = {TCPDUMP: "tcpdump", NETSNIFF: "netsniff-ng"}
CEILING_SHARE_MIN = 0.60
TCPDUMP_RATIO_MIN = 3.0


@dataclass(frozen=True)
class PeerTrial:
    """A trial of a peer capture program, with the fields the search reads (TrialOutcome)."""

    sent: int
    delivered: int
    received: int
    lost: int
    offered_pps: float
    achieved_pps: float
    duration_s: float
    invalid_offered_load: bool
    backlog_drops: int
    socket_drops: int
    app_cpu_pct: float
    window_s: float
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


class PeerMeasurer:
    """tcpdump or netsniff-ng on CPU 1 in the capture namespace, run the way Measurer runs capbench-cap."""

    def __init__(self, binaries: Binaries, tb: Testbed, prog: str):
        self.binaries, self.tb, self.prog = binaries, tb, prog
        self._gen = Measurer(binaries, tb, TrialSetup(backend="(none)", frame_len=FRAME_LEN, link_bps=LINK,
                                                      gen_cpu=GEN_CPU, cap_cpu=None))

    def argv(self) -> tuple[list[str], str]:
        """The command line and the line it prints once it captures."""
        exe = shutil.which(self.prog) or self.prog
        if self.prog == TCPDUMP:
            return ["taskset", "-c", str(CAP_CPU), exe, "-i", self.tb.cap_if, "-w", "/dev/null", "-n"], "listening on"
        # --notouch-irq: leave the host's IRQ affinities alone; it binds itself to CAP_CPU.
        return [exe, "--in", self.tb.cap_if, "--out", "/dev/null", "--silent", "--bind-cpu", str(CAP_CPU),
                "--notouch-irq"], "Running!"

    def counts(self, lines: list[str]) -> tuple[int, int]:
        """(captured, socket drops) from the program's exit report."""
        if self.prog == TCPDUMP:
            return parse_tcpdump_stats(lines)
        # netsniff-ng: "N packets incoming (U unread on exit)", "N packets passed filter",
        # "N packets failed filter (out of space)" (PACKET_STATISTICS tp_drops).
        passed = bc.first_int(r"(\d+)\s+packets passed filter", lines)
        dropped = bc.first_int(r"(\d+)\s+packets failed filter", lines)
        if passed is None or dropped is None:
            raise ChildError("netsniff-ng printed no 'packets passed filter' line: "
                             + (lines[-1] if lines else "no output"))
        return passed, dropped

    def measure(self, duration_s: float, load_pps: float) -> PeerTrial:
        rate = Rate.from_pps(load_pps)
        argv, ready = self.argv()
        with ChildSet() as kids:
            xdp = start_xdpcount(kids, self.binaries, self.tb)
            peer = kids.start(self.prog, argv, netns_name=self.tb.cap_ns)
            bc.wait_for_text(peer, ready, PEER_READY_TIMEOUT_S)
            softnet0, ticks0 = cpu.read_softnet_drops(), cpu.read_pid_ticks(peer.pid)
            t0 = time.monotonic()
            gen = kids.start("capbench-gen", self._gen.gen_argv(duration_s, rate), netns_name=self.tb.gen_ns)
            gen.wait(duration_s + 10.0)
            window_s = time.monotonic() - t0
            ticks1 = cpu.read_pid_ticks(peer.pid)
            g = gen.summary()
            time.sleep(SETTLE_S)
            softnet1 = cpu.read_softnet_drops()
            time.sleep(TCPDUMP_DRAIN_S - SETTLE_S)  # both read a TPACKET_V3 ring; let it hand over its last block
            if not peer.running:
                raise peer.failure("ended during the trial")
            peer.signal(signal.SIGINT)  # both print their statistics on SIGINT
            peer.wait(5.0)
            (x,) = stop_and_read(kids, xdp)
        lines = bc.child_text(peer)
        captured, kernel_drops = self.counts(lines)
        acc = accounting.account(sent=int(g["sent"]), delivered=int(x["capbench"]),
                                 backlog_drops=cpu.counter_delta(softnet0, softnet1, {bc.RX_CPU}),
                                 socket_drops=kernel_drops, received=captured)
        achieved = float(g["achieved_pps"])
        return PeerTrial(sent=acc.sent, delivered=acc.delivered, received=captured, lost=acc.lost,
                         offered_pps=load_pps, achieved_pps=achieved, duration_s=float(g["duration_s"]),
                         invalid_offered_load=offered_share(g, achieved, load_pps) < OFFERED_MIN_SHARE,
                         backlog_drops=acc.backlog_drops, socket_drops=acc.socket_drops,
                         app_cpu_pct=cpu.process_cpu_pct(ticks0, ticks1, window_s), window_s=window_s,
                         raw={"gen": g, "xdpcount": x, "peer_output": lines})


@dataclass
class Search:
    label: str
    result: rfc2544.Rfc2544Result
    elapsed_s: float

    def _failing(self) -> list:
        return sorted((t for t in self.result.trials if not rfc2544.trial_passed(t, 0)), key=lambda t: t.load_pps)

    @property
    def lowest_fail(self):
        """The trial at the lowest failing rate: it bounds the search (None when none failed)."""
        failing = self._failing()
        return failing[0] if failing else None

    @property
    def lowest_loss(self):
        """The lowest-rate trial that lost frames: capture loss (None when no trial lost any)."""
        lossy = [t for t in self._failing() if t.result.lost > 0]
        return lossy[0] if lossy else None

    @property
    def lowest_gen_short(self):
        """The lowest-rate trial that lost nothing but whose generator fell short of the rate."""
        short = [t for t in self._failing() if t.result.lost == 0 and getattr(t.result, "invalid_offered_load", False)]
        return short[0] if short else None

    @property
    def generator_limited(self) -> bool:
        """The search's upper bound came from a generator shortfall, not from a capture loss."""
        t = self.lowest_fail
        return t is not None and t.result.lost == 0

    @property
    def found(self):
        """The passing trial at the throughput (the verification trial when it ran)."""
        ok = [t for t in self.result.trials if rfc2544.trial_passed(t, 0)
              and t.load_pps == self.result.throughput_pps]
        return ok[-1] if ok else None

    @property
    def ns_per_packet(self) -> float | None:
        t = self.found
        if t is None or t.result.received <= 0:
            return None
        return t.result.app_cpu_pct / 100.0 * t.result.window_s / t.result.received * 1e9

    @property
    def max_achieved_pps(self) -> float:
        return max((float(getattr(t.result, "achieved_pps", 0.0)) for t in self.result.trials), default=0.0)


@dataclass
class Failed:
    label: str
    error: str


def search(label: str, measurer, trial_s: float, precision_pct: float) -> Search | Failed:
    bc.note(f"  {label} ...")
    t0 = time.monotonic()

    def on_trial(t) -> None:
        r = t.result
        why = "gen short" if getattr(r, "invalid_offered_load", False) else ""
        bc.note(f"    {t.purpose} {t.load_pps:,.0f} pps: sent {r.sent:,} (achieved {r.achieved_pps:,.0f}), "
                f"received {r.received:,}, lost {r.lost:,} {why}")

    try:
        res = rfc2544.search(measurer, frame_len=FRAME_LEN, link_bps=LINK, precision_pct=precision_pct,
                             trial_s=trial_s, pause_s=0.5, verify_pause_s=1.0, on_trial=on_trial)
    except CapbenchError as e:
        bc.note(f"  {label} FAILED: {e}")
        return Failed(label, str(e))
    s = Search(label, res, time.monotonic() - t0)
    bc.note(f"  {label}: {res.throughput_pps:,.0f} pps lossless{' (generator limit)' if s.generator_limited else ''}"
            f", {len(res.trials)} trials, {s.elapsed_s:.0f} s")
    return s


def backend_works(backend: str) -> tuple[bool, str]:
    """What `capbench backends` says about one backend (capbench.testbed.preflight.backend_status)."""
    return preflight.backend_status(backend)


def run_all(binaries: Binaries, tb: Testbed, peers: dict[str, bool], trial_s: float,
            precision_pct: float, only: set[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"backends": [], "ceiling": None, "peers": [], "skipped": []}
    for label, backend, cap_args in (*BACKENDS, CEILING):
        if only is not None and backend not in only:
            continue
        works, why = backend_works(backend)
        if not works:
            out["skipped"].append(f"{label}: not measured, `capbench backends` says: {why}")
            continue
        setup = TrialSetup(backend=backend, frame_len=FRAME_LEN, link_bps=LINK, engine="xdp", gen_cpu=GEN_CPU,
                           cap_cpu=CAP_CPU, settle_s=SETTLE_S, cap_args=cap_args)
        s = search(label, Measurer(binaries, tb, setup), trial_s, precision_pct)
        if backend == "xdp":
            out["ceiling"] = s
        else:
            out["backends"].append(s)
    for prog in (TCPDUMP, NETSNIFF):
        if peers[prog] and (only is None or prog in only):
            out["peers"].append(search(prog, PeerMeasurer(binaries, tb, prog), trial_s, precision_pct))
    return out


def table(rows: list, trial_s: float, precision_pps: float) -> Table:
    t = Table(title=f"Highest lossless rate at {FRAME_LEN} B (RFC 2544 binary search on 10 GbE, {trial_s:g} s trials, "
                    f"precision {precision_pps:,.0f} pps): gen CPU {GEN_CPU}, capture + kernel rx CPU {CAP_CPU}",
              box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("capture", no_wrap=True)
    for h in ("lossless [pps]", "bounded by", "capture loss from", "generator short from", "app CPU [%]",
              "CPU/pkt [ns]", "trials", "time [s]"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    for s in rows:
        if s is None:
            continue
        if isinstance(s, Failed):
            t.add_row(s.label, "[red]failed[/red]", *[""] * 7)
            continue
        r, loss, short = s.result, s.lowest_loss, s.lowest_gen_short
        if s.lowest_fail is None:
            bound = "nothing: the wire rate passed"
        elif s.generator_limited:
            bound = "[yellow]generator[/yellow]"
        else:
            bound = "capture loss"
        loss_txt = "—" if loss is None else f"{loss.load_pps:,.0f} (lost {loss.result.lost:,})"
        short_txt = "—" if short is None else (f"{short.load_pps:,.0f} (sent "
                                               f"{short.result.achieved_pps / short.load_pps:.1%})")
        f = s.found
        kernel = s.label.startswith("xdp")
        app = "—" if f is None or kernel else f"{f.result.app_cpu_pct:.1f}"
        ns = s.ns_per_packet
        t.add_row(s.label, f"{r.throughput_pps:,.0f}" + ("" if r.verified or r.throughput_pps == 0 else " (unverified)"),
                  bound, loss_txt, short_txt, app, "—" if ns is None or kernel else f"{ns:,.0f}",
                  f"{len(r.trials)}", f"{s.elapsed_s:.0f}")
    return t


def targets(out: dict[str, Any]) -> list[tuple[str, bool]]:
    ok = [s for s in out["backends"] if isinstance(s, Search)]
    ceiling, peers = out["ceiling"], {s.label: s for s in out["peers"] if isinstance(s, Search)}
    res: list[tuple[str, bool]] = []
    if not ok:
        return res
    best = max(ok, key=lambda s: s.result.throughput_pps)
    bp = best.result.throughput_pps
    bound = " (a lower bound: the generator's limit)" if best.generator_limited else ""
    if isinstance(ceiling, Search) and ceiling.result.throughput_pps > 0:
        c = ceiling.result.throughput_pps
        cb = " — the ceiling too was limited by the generator, so this compares two lower bounds" \
            if ceiling.generator_limited else ""
        res.append((f"best backend {best.label}: {bp:,.0f} pps = {bp / c:.0%} of the xdp ceiling {c:,.0f} pps"
                    f"{bound} (target ≥ {CEILING_SHARE_MIN:.0%}){cb}", bp / c >= CEILING_SHARE_MIN))
    td = peers.get(TCPDUMP)
    if td is not None and td.result.throughput_pps > 0:
        tp = td.result.throughput_pps
        tb_ = " — tcpdump's figure too is the generator's limit, so the ratio says nothing about capture" \
            if td.generator_limited else ""
        res.append((f"best backend {best.label}: {bp:,.0f} pps = {bp / tp:.2f}× tcpdump's {tp:,.0f} pps "
                    f"(target ≥ {TCPDUMP_RATIO_MIN:g}×){tb_}", bp / tp >= TCPDUMP_RATIO_MIN))
    elif td is not None:
        res.append(("tcpdump passed no rate: the ratio is unbounded", True))
    return res


def print_report(out: dict[str, Any], trial_s: float, precision_pct: float) -> None:
    con = bc.console()
    precision_pps = wire_pps(LINK, FRAME_LEN) * precision_pct / 100.0
    con.print(table([*out["backends"], out["ceiling"], *out["peers"]], trial_s, precision_pps))
    for s in out["skipped"]:
        con.print(s)
    con.print("lossless: the highest rate whose trial lost no frame (received = sent) and whose generator sent the "
              "rate, confirmed by a verification trial. bounded by: what failed the lowest failing trial — "
              "\"capture loss\" (frames lost), or \"generator\": no frame lost but the generator sent less than "
              f"{OFFERED_MIN_SHARE:.1%} of the rate (invalid_offered_load), so the figure is a lower bound of the "
              "capture, not its limit. capture loss from / generator short from: the lowest rate tried where each "
              "happened (a search trial or a verification). CPU / packet: app CPU % × load window / frames received, in the trial at the found "
              "rate. xdp counts in the kernel, in the veth's NAPI on the generator's CPU: no application CPU.\n")
    for text, ok in targets(out):
        con.print(f"{text}: {bc.verdict(ok)}")


def rec(s) -> dict[str, Any]:
    if isinstance(s, Failed):
        return dataclasses.asdict(s)
    trials = []
    for t in s.result.trials:
        r = t.result
        d = r.to_record() if hasattr(r, "to_record") else dataclasses.asdict(r)
        trials.append({"purpose": t.purpose, "load_pps": t.load_pps, "result": d})
    return {"label": s.label, "throughput_pps": s.result.throughput_pps, "verified": s.result.verified,
            "lowest_lossy_pps": s.result.lowest_lossy_pps, "generator_limited": s.generator_limited,
            "ns_per_packet": s.ns_per_packet, "elapsed_s": s.elapsed_s, "notes": list(s.result.notes),
            "trials": trials}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--trial", type=float, default=1.0, metavar="S", help="seconds per trial (default: %(default)s)")
    p.add_argument("--precision", type=float, default=0.4, metavar="PCT",
                   help="search precision in %% of the 10 GbE wire rate (default %(default)s: 59.5 kpps; 0.2 "
                        "gives 29.8 kpps at one more trial per search)")
    p.add_argument("--skip-peers", action="store_true", help="skip tcpdump or netsniff-ng when missing")
    p.add_argument("--json", metavar="FILE", help="also write every trial as JSON")
    p.add_argument("--only", metavar="LIST", help="measure only these, comma-separated: backends (pcap, raw, "
                   "afp-v2, afp-v3, fanout, afxdp, xdp) and peers (tcpdump, netsniff-ng); default: all")
    args = p.parse_args(argv)
    try:
        rfc2544.check_trial_s(args.trial, minimum_s=rfc2544.MIN_TRIAL_S)
        rfc2544.check_precision_pct(args.precision)
    except UsageError as e:
        p.error(str(e))
    only = None if args.only is None else set(args.only.split(","))
    known = {b for _, b, _ in (*BACKENDS, CEILING)} | set(PEER_PACKAGES)
    if only is not None and only - known:
        p.error(f"--only: unknown {', '.join(sorted(only - known))}; known: {', '.join(sorted(known))}")
    t0 = time.monotonic()
    rc, out, tb_id = bc.run_bench("bench_backends.py", PEER_PACKAGES, args.skip_peers,
                                  lambda b, tb, peers: run_all(b, tb, peers, args.trial, args.precision, only))
    if out is None:
        return rc
    print_report(out, args.trial, args.precision)
    bc.note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        data = {"meta": machine_info() | {"trial_s": args.trial, "precision_pct": args.precision, "testbed": tb_id,
                                          "link_bps": LINK, "frame_len": FRAME_LEN},
                "backends": [rec(s) for s in out["backends"]],
                "ceiling": rec(out["ceiling"]) if out["ceiling"] else None,
                "peers": [rec(s) for s in out["peers"]], "skipped": out["skipped"],
                "targets": [{"text": t, "pass": ok} for t, ok in targets(out)]}
        Path(args.json).write_text(json.dumps(data, indent=1, default=str) + "\n")
    failed = [s for s in (*out["backends"], out["ceiling"], *out["peers"]) if isinstance(s, Failed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
