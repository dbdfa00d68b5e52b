#!/usr/bin/env python3
"""Generator engines without live frames: capbench-gen's engines beside trafgen and testpmd, and paced accuracy.

One run builds one veth test bed of capbench's default receive model (cpumap: on the capture
veth capbench-xdpcount moves every frame into a cpumap ring of rxmode.DEFAULT_RX_RING frames
whose kernel thread runs on CPU 1, and counts it there, after the ring: "delivered"; its
`ring_drops` count the ring's overflow) and measures, on one generator core (CPU 0), with
--rounds rounds interleaved (each round runs every contender once, the order turned by one
each round) so that the machine's drift hits every contender alike:

1. Unpaced 64 B frames (`--rate max`, --duration seconds) into the capture veth: every engine
   of capbench-gen whose probe passes on this kernel (preflight.engine_refusal), `trafgen -P 1`
   (netsniff-ng; the capbench test frame, stamp included) and `dpdk-testpmd
   --forward-mode=txonly` on net_af_xdp (skipped with a note where dpdk-testpmd is missing).
   A sender's rate is the frames that reached the capture veth (its XDP program: delivered +
   the ring's overflow) per second of the sender's own sending time: capbench-gen's
   duration_s (first to last departure), trafgen's TX-loop time (its exit report), testpmd's
   sent count over its median Tx-pps (its port statistics, each second); the targets judge
   it. Delivered, after the ring, is shown beside it: the ring's thread on CPU 1 builds an
   skb of every frame, and where it falls behind, that is the sink's limit, not the sender's.
   Delivered is xdpcount's `capbench` count (stamped frames), for testpmd (no stamp) its
   `packets`. Every
   frame capbench-gen sent must be accounted for exactly: delivered + ring_drops + the gen
   veth's tx_queue_N_xdp_xmit_errors increase. Targets (issue): the xdploop engine >= 2.0 Mpps
   into the capture veth, >= 4x trafgen -P 1, >= 2.5x testpmd txonly net_af_xdp (medians over
   the rounds).
2. Paced accuracy of the engine capbench picks here (the first declared engine whose probe
   passes): `--rate 100% --link 1g --size 64` (1,488,095 pps) and `--rate 1g --size imix:seed`,
   each for --paced-duration seconds, --rounds times: target_frames, sent, delivered, ring
   drops, |duration_s - D| / D, achieved against target, late, max_lag_ns. Targets: the
   delivered count exact (sent == target_frames == delivered + ring_drops + xdp_xmit_errors)
   and the sending time within 0.1 % of D.

Run it as root from the repository:

    .venv/bin/python bench/bench_generator.py [--duration 3] [--paced-duration 10] [--rounds 3]
                                              [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; with the defaults about 2 minutes (121 s on the 2-vCPU
test machine). The test bed
(namespaces, veth, XDP programs, processes) is removed at the end, on errors and on Ctrl-C.
Targets are shown as PASS/MISS; the exit status is 0 when the measurements ran (a benchmark,
not a test), 1 if one of them failed, 2 for bad input, no root or a missing peer (without
--skip-peers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import bench_common as bc  # sets sys.path for capbench
from bench_generator_capture import parse_trafgen_stats, trafgen_frame, write_trafgen_conf
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from capbench import declared
from capbench.binaries import Binaries, find_binaries
from capbench.campaign.results import machine_info
from capbench.errors import CapbenchError, RunError, UsageError
from capbench.rates import wire_pps
from capbench.testbed import netns, nic, preflight, rxmode
from capbench.testbed import veth_pair as testbed
from capbench.testbed.procs import Child, ChildSet
from capbench.testbed.veth_pair import Testbed
from capbench.trial.measure import read_ring_drops

PROG = "bench_generator.py"
FRAME_LEN = 64  # incl. FCS: 60 B in the buffer
GEN_CPU = 0
RX_CPU = 1  # the cpumap ring's thread
LINK_1G = 1e9
SETTLE_S = 0.5  # after the sender stops, before reading the receive side: the rings drain
READY_TIMEOUT_S = 5.0
TESTPMD_FIRST_STATS_S = 20.0  # EAL and the AF_XDP socket, then its first statistics
TRAFGEN = "trafgen"
TESTPMD = "dpdk-testpmd"
PEERS = {TRAFGEN: "netsniff-ng"}
OPTIONAL_PEERS = {TESTPMD: "dpdk-dev"}  # skipped with a note where missing
TESTPMD_DRIVER = "net_af_xdp"
# Targets of the issue
XDPLOOP = "xdploop"
XDPLOOP_PPS_MIN = 2.0e6
TRAFGEN_RATIO_MIN = 4.0
TESTPMD_RATIO_MIN = 2.5
DURATION_MAX_ERROR_PCT = 0.1
# The paced cases: (label, capbench-gen options)
PACED = (
    ("64 B at 100 % of 1 GbE", ("--rate", "100%", "--link", "1g", "--size", "64")),
    ("imix:seed at 1 Gbit/s", ("--rate", "1g", "--link", "1g", "--size", "imix:seed")),
)

note = bc.note


# --- results ------------------------------------------------------------------------------


@dataclass
class Run:
    """One sender's run into the capture veth."""

    contender: str
    round: int
    sent: int | None  # the sender's own count (None: it reports none)
    delivered: int  # xdpcount's count after the cpumap ring (capbench frames; testpmd: packets)
    ring_drops: int  # the cpumap ring's overflow
    xmit_errors: int | None  # the gen veth's tx_queue_N_xdp_xmit_errors increase (None: unread)
    send_s: float  # the sender's own sending time
    own_pps: float | None  # the sender's own rate (capbench-gen achieved_pps, testpmd median Tx-pps)
    target_frames: int | None = None
    target_pps: float | None = None
    late: int | None = None
    max_lag_ns: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def pps(self) -> float:
        """Delivered per second of the sender's sending time."""
        return self.delivered / self.send_s if self.send_s > 0 else 0.0

    @property
    def reached_pps(self) -> float:
        """Frames that reached the capture veth's XDP program (delivered + the ring's overflow) per second."""
        return (self.delivered + self.ring_drops) / self.send_s if self.send_s > 0 else 0.0

    @property
    def unexplained(self) -> int | None:
        """sent − delivered − ring drops − xdp_xmit_errors: 0 when every frame is accounted for."""
        if self.sent is None or self.xmit_errors is None:
            return None
        return self.sent - self.delivered - self.ring_drops - self.xmit_errors

    @property
    def exact(self) -> bool:
        return self.unexplained == 0


@dataclass
class Failed:
    contender: str
    round: int
    error: str


# --- the capture side and the counters ---------------------------------------------------


def start_xdpcount(kids: ChildSet, binaries: Binaries, tb: Testbed) -> Child:
    """capbench-xdpcount on the capture veth as a trial of the test bed's receive model starts it
    (Measurer.xdpcount_argv, tests/e2e/e2e_env.py _stream_once), its ring's thread placed."""
    ring = rxmode.ring_args(tb.rx_mode, rxmode.DEFAULT_RX_RING, tb.rx_cpu)
    xdp = kids.start("capbench-xdpcount", [str(binaries.xdpcount), "--iface", tb.cap_if, *ring],
                     netns_name=tb.cap_ns)
    ready = xdp.wait_for("ready", READY_TIMEOUT_S)
    rxmode.place_testbed(tb, tb.rx_mode, ready.get("ring_map_id"))
    return xdp


def ethtool_stats(ns: str, iface: str) -> dict[str, int]:
    try:
        return nic.parse_stats(netns.run_in(ns, ["ethtool", "-S", iface]))
    except (RunError, UsageError):
        return {}


def stats_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


class Counters:
    """The veth counters read around one run: the gen veth's xdp_xmit_errors (and, for the JSON,
    every ethtool -S counter of both veths that moved)."""

    def __init__(self, tb: Testbed):
        self.tb = tb
        self.xmit0 = read_ring_drops(tb.gen_ns, tb.gen_if)
        self.gen0 = ethtool_stats(tb.gen_ns, tb.gen_if)
        self.cap0 = ethtool_stats(tb.cap_ns, tb.cap_if)

    def read(self) -> tuple[int | None, dict[str, Any]]:
        tb = self.tb
        xmit1 = read_ring_drops(tb.gen_ns, tb.gen_if)
        xmit = None if self.xmit0 is None or xmit1 is None else xmit1 - self.xmit0
        return xmit, {"gen_veth": stats_delta(self.gen0, ethtool_stats(tb.gen_ns, tb.gen_if)),
                      "cap_veth": stats_delta(self.cap0, ethtool_stats(tb.cap_ns, tb.cap_if))}


def settle_and_stop(kids: ChildSet, xdp: Child) -> dict:
    time.sleep(SETTLE_S)
    if not xdp.running:
        raise xdp.failure("ended during the measurement")
    kids.stop_all()
    return xdp.summary()


# --- the senders ----------------------------------------------------------------------------


def gen_argv(binaries: Binaries, tb: Testbed, engine: str, duration_s: float, opts: tuple[str, ...]) -> list[str]:
    """capbench-gen as capbench's trials start it (Measurer.gen_argv): no trailer, so its sent
    count is the stream the counters count."""
    return [str(binaries.gen), "--iface", tb.gen_if, "--engine", engine, *opts, "--duration", f"{duration_s:g}",
            "--cpu", str(GEN_CPU), "--dst-mac", tb.dst_mac, "--trailer", "0"]


def measure_gen(binaries: Binaries, tb: Testbed, contender: str, rnd: int, engine: str, duration_s: float,
                opts: tuple[str, ...]) -> Run:
    with ChildSet() as kids:
        xdp = start_xdpcount(kids, binaries, tb)
        counters = Counters(tb)
        gen = kids.start(f"capbench-gen {engine}", gen_argv(binaries, tb, engine, duration_s, opts),
                         netns_name=tb.gen_ns)
        gen.wait(duration_s + 20.0)
        g = gen.summary()
        time.sleep(SETTLE_S)
        xmit, veths = counters.read()
        x = settle_and_stop(kids, xdp)
    return Run(contender=contender, round=rnd, sent=int(g["sent"]), delivered=int(x["capbench"]),
               ring_drops=int(x.get("ring_drops", 0)), xmit_errors=xmit, send_s=float(g["duration_s"]),
               own_pps=float(g["achieved_pps"]), target_frames=int(g.get("target_frames", 0)),
               target_pps=float(g.get("target_pps", 0.0)), late=int(g.get("late", 0)),
               max_lag_ns=int(g.get("max_lag_ns", 0)), raw={"gen": g, "xdpcount": x, "veths": veths})


def measure_trafgen(binaries: Binaries, tb: Testbed, contender: str, rnd: int, duration_s: float, conf: Path) -> Run:
    """trafgen -P 1 (one worker, pinned to CPU 0; taskset pins the parent too) unpaced for
    `duration_s`, stopped with SIGINT. --no-sock-mem and --notouch-irq keep it from changing the
    host's sysctls and IRQ affinities. Its sent count and TX-loop time are its exit report's."""
    argv = ["taskset", "-c", str(GEN_CPU), shutil.which(TRAFGEN) or TRAFGEN, "--dev", tb.gen_if,
            "--conf", str(conf), "-P", "1", "--no-sock-mem", "--notouch-irq"]
    with ChildSet() as kids:
        xdp = start_xdpcount(kids, binaries, tb)
        counters = Counters(tb)
        t0 = time.monotonic()
        tg = kids.start("trafgen", argv, netns_name=tb.gen_ns)
        time.sleep(duration_s)
        if not tg.running:
            raise tg.failure("ended early")
        tg.signal(signal.SIGINT)  # to its process group: the parent and its worker
        rc = tg.wait(10.0)
        wall_s = time.monotonic() - t0
        if rc != 0:
            raise tg.failure("failed")
        time.sleep(SETTLE_S)
        xmit, veths = counters.read()
        x = settle_and_stop(kids, xdp)
    out = bc.child_text(tg)
    sent, tx_s = parse_trafgen_stats(out)
    return Run(contender=contender, round=rnd, sent=sent, delivered=int(x["capbench"]),
               ring_drops=int(x.get("ring_drops", 0)), xmit_errors=xmit, send_s=tx_s or wall_s, own_pps=None,
               raw={"xdpcount": x, "veths": veths, "wall_s": wall_s, "tx_loop_s": tx_s,
                    "trafgen_last_lines": out[-12:]})


def measure_testpmd(binaries: Binaries, tb: Testbed, contender: str, rnd: int, duration_s: float) -> Run:
    """testpmd txonly on the gen veth (net_af_xdp), one forwarding core on CPU 0, unpaced (it cannot
    pace a virtual device), `duration_s` after its first statistics, stopped with SIGINT. Its sending
    time: its sent count over its median Tx-pps (its port's, each second). Its frames carry no
    capbench stamp: delivered is xdpcount's `packets`."""
    from bench_dpdk import TX_PACKETS, TX_PPS, testpmd_eal  # noqa: PLC0415 - only with testpmd installed

    prefix = f"capbench-bench-{tb.id}-{rnd}"
    argv = ["taskset", "-c", str(GEN_CPU), *testpmd_eal(GEN_CPU, prefix, f"{TESTPMD_DRIVER}0,iface={tb.gen_if}"),
            "--", "--forward-mode=txonly", "--nb-cores=1", "--port-topology=loop", "--total-num-mbufs=16384",
            f"--txpkts={FRAME_LEN - 4}", f"--eth-peer=0,{tb.dst_mac}", "--stats-period", "1"]
    rates: list[int] = []  # its Tx-pps, each second
    sent: list[int] = []  # its TX-packets, each second and at its exit

    def on_line(stream: str, line: str) -> None:  # taken as they come: a child keeps only its output's tail
        for pattern, into in ((TX_PPS, rates), (TX_PACKETS, sent)):
            m = pattern.search(line)
            if m:
                into.append(int(m.group(1)))

    runtime = Path("/var/run/dpdk")
    runtime_there = runtime.exists()  # EAL makes it: removed again if this run made it (and it is empty)
    try:
        with ChildSet(stop_timeout_s=10.0) as kids:
            xdp = start_xdpcount(kids, binaries, tb)
            counters = Counters(tb)
            tp = kids.start("dpdk-testpmd txonly", argv, netns_name=tb.gen_ns, on_line=on_line)
            deadline = time.monotonic() + TESTPMD_FIRST_STATS_S
            while not rates:  # its first statistics: it sends
                if not tp.running or time.monotonic() > deadline:
                    raise tp.failure("printed no statistics")
                time.sleep(0.05)
            time.sleep(duration_s)
            deadline = time.monotonic() + TESTPMD_FIRST_STATS_S
            while not any(rates):  # a short run: until one of its statistics showed it sending
                if not tp.running or time.monotonic() > deadline:
                    raise tp.failure("showed no Tx-pps")
                time.sleep(0.05)
            tp.signal(signal.SIGINT)
            tp.wait(15.0)
            time.sleep(SETTLE_S)
            xmit, veths = counters.read()
            x = settle_and_stop(kids, xdp)
            lines = bc.child_text(tp)
    finally:
        with contextlib.suppress(OSError):  # EAL leaves its runtime directory, empty
            (runtime / prefix).rmdir()
            if not runtime_there:
                runtime.rmdir()
    busy = [r for r in rates if r]
    if not sent or not sent[-1] or not busy:
        raise RunError(f"{contender}: no TX-packets / Tx-pps in its statistics: "
                       + (lines[-1] if lines else "no output"))
    median_pps = statistics.median(busy)
    return Run(contender=contender, round=rnd, sent=sent[-1], delivered=int(x["packets"]),
               ring_drops=int(x.get("ring_drops", 0)), xmit_errors=xmit, send_s=sent[-1] / median_pps,
               own_pps=float(median_pps),
               raw={"xdpcount": x, "veths": veths, "testpmd_tx_pps": rates, "testpmd_last_lines": lines[-12:]})


# --- running them all -------------------------------------------------------------------------


def attempt(contender: str, rnd: int, fn: Callable[..., Run], *args) -> Run | Failed:
    """One measurement; a failure is recorded (and said) instead of ending the run."""
    try:
        r = fn(*args)
    except CapbenchError as e:
        note(f"  round {rnd} {contender} FAILED: {e}")
        return Failed(contender, rnd, str(e))
    sent = "?" if r.sent is None else f"{r.sent:,}"
    xmit = "?" if r.xmit_errors is None else f"{r.xmit_errors:,}"
    note(f"  round {rnd} {contender}: {r.pps:,.0f} pps delivered, sent {sent}, delivered {r.delivered:,}, "
         f"ring drops {r.ring_drops:,}, xdp_xmit_errors {xmit}, sending time {r.send_s:.3f} s")
    return r


@dataclass
class Plan:
    engines: dict[str, str | None]  # every declared engine: None where its probe passes, else why not
    peers: dict[str, bool]

    @property
    def running_engines(self) -> list[str]:
        return [e for e, why in self.engines.items() if why is None]

    @property
    def paced_engine(self) -> str:
        """The engine capbench picks here: the first declared one whose probe passes."""
        return self.running_engines[0]


def contenders(plan: Plan) -> list[str]:
    names = [f"capbench-gen {e}" for e in plan.running_engines]
    if plan.peers.get(TRAFGEN):
        names.append("trafgen -P 1")
    if plan.peers.get(TESTPMD):
        names.append(f"testpmd txonly {TESTPMD_DRIVER}")
    return names


def run_all(binaries: Binaries, tb: Testbed, plan: Plan, a: argparse.Namespace) -> dict[str, list]:
    res: dict[str, list] = {"unpaced": [], "paced": []}
    names = contenders(plan)
    with tempfile.TemporaryDirectory(prefix="capbench-bench-") as tmp:
        conf = Path(tmp) / "capbench-64.trafgen"
        write_trafgen_conf(conf, trafgen_frame(tb.dst_mac, tb.gen_mac))
        for rnd in range(1, a.rounds + 1):
            k = (rnd - 1) % len(names)
            order = names[k:] + names[:k]  # each round starts with the next contender
            note(f"unpaced 64 B, round {rnd} of {a.rounds}: {', '.join(order)}")
            for name in order:
                if name.startswith("capbench-gen "):
                    engine = name.split()[1]
                    r = attempt(name, rnd, measure_gen, binaries, tb, name, rnd, engine, a.duration,
                                ("--rate", "max", "--link", "1g", "--size", str(FRAME_LEN)))
                elif name.startswith("trafgen"):
                    r = attempt(name, rnd, measure_trafgen, binaries, tb, name, rnd, a.duration, conf)
                else:
                    r = attempt(name, rnd, measure_testpmd, binaries, tb, name, rnd, a.duration)
                res["unpaced"].append(r)
    engine = plan.paced_engine
    for rnd in range(1, a.rounds + 1):
        order = PACED if rnd % 2 else PACED[::-1]
        note(f"paced, capbench-gen {engine}, {a.paced_duration:g} s each, round {rnd} of {a.rounds}")
        for label, opts in order:
            res["paced"].append(attempt(label, rnd, measure_gen, binaries, tb, label, rnd, engine,
                                        a.paced_duration, opts))
    return res


# --- figures ----------------------------------------------------------------------------------


def runs_of(runs: list, contender: str) -> list[Run]:
    return [r for r in runs if isinstance(r, Run) and r.contender == contender]


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def median_pps(runs: list, contender: str) -> float | None:
    """The median of a sender's rate into the capture veth (reached_pps): what the targets judge."""
    return med([r.reached_pps for r in runs_of(runs, contender)])


def ratio(runs: list, ours: str, theirs: str) -> dict[str, Any] | None:
    """ours' median rate over theirs', and the range of the per-round ratios (the same round's)."""
    a, b = median_pps(runs, ours), median_pps(runs, theirs)
    if a is None or not b:
        return None
    mine = {r.round: r.reached_pps for r in runs_of(runs, ours)}
    per_round = [mine[r.round] / r.reached_pps for r in runs_of(runs, theirs) if r.round in mine and r.reached_pps]
    return {"of_medians": a / b, "per_round_min": min(per_round, default=None),
            "per_round_max": max(per_round, default=None)}


def fmt_int(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}"


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "—"
    if ns >= 1_000_000:
        return f"{ns / 1e6:,.2f} ms"
    if ns >= 1_000:
        return f"{ns / 1e3:,.1f} µs"
    return f"{ns:.0f} ns"


def stat_cells(values: list[float | None], fmt: Callable[[float | None], str]) -> list[str]:
    """One cell per value, then median, min, max of those that are known."""
    known = [v for v in values if v is not None]
    return ([fmt(v) for v in values]
            + ([fmt(statistics.median(known)), fmt(min(known)), fmt(max(known))] if known else ["—"] * 3))


def contender_table(runs: list, contender: str, rounds: int) -> Table:
    mine = {r.round: r for r in runs if r.contender == contender}
    t = Table(title=f"{contender}: 64 B unpaced, CPU {GEN_CPU}", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("")
    for i in range(1, rounds + 1):
        t.add_column(f"round {i}", justify="right")
    for h in ("median", "min", "max"):
        t.add_column(Text(h, style="bold"), justify="right")
    ok = [mine[i] if isinstance(mine.get(i), Run) else None for i in range(1, rounds + 1)]
    failed = [i for i in range(1, rounds + 1) if isinstance(mine.get(i), Failed)]

    def row(label: str, get: Callable[[Run], float | None], fmt: Callable[[float | None], str] = fmt_int) -> None:
        t.add_row(escape(label), *stat_cells([None if r is None else get(r) for r in ok], fmt))

    row("delivered per s of sending [pps]", lambda r: r.pps)
    row("reached the capture XDP [pps]", lambda r: r.reached_pps)
    if contender.startswith("capbench-gen"):
        row("its achieved_pps", lambda r: r.own_pps)
    elif contender.startswith("testpmd"):
        row("its Tx-pps (median)", lambda r: r.own_pps)
    row("sent (its own count)", lambda r: r.sent)
    row("delivered (xdpcount" + (" packets)" if contender.startswith("testpmd") else " capbench)"),
        lambda r: r.delivered)
    row("cpumap ring drops", lambda r: r.ring_drops)
    row("gen veth xdp_xmit_errors", lambda r: r.xmit_errors)
    row("unexplained (sent − all above)", lambda r: r.unexplained)
    row("sending time [s]", lambda r: r.send_s, lambda v: "—" if v is None else f"{v:.3f}")
    if failed:
        t.caption = f"[red]failed in round {', '.join(map(str, failed))}[/red]"
    return t


def summary_table(runs: list, names: list[str], ours: str) -> Table:
    t = Table(title=f"Unpaced 64 B, one core (CPU {GEN_CPU}), into the capture veth (cpumap ring, its thread on "
                    f"CPU {RX_CPU}): frames that reached it per second of the sender's own sending time",
              box=box.SIMPLE_HEAD, title_justify="left")
    for h in ("contender", "median [pps]", "min – max [pps]", "delivered, median [pps]", f"{ours} ÷ it (medians)",
              "per-round ratios", "account exact"):
        t.add_column(escape(h), justify="left" if h == "contender" else "right")
    for name in names:
        rs = runs_of(runs, name)
        pps = [r.reached_pps for r in rs]
        rt = ratio(runs, ours, name) if name != ours else None
        known = [r for r in rs if r.unexplained is not None]
        exact = f"{sum(r.exact for r in known)} of {len(known)}" if known else "—"
        t.add_row(name, fmt_int(med(pps)), f"{min(pps):,.0f} – {max(pps):,.0f}" if pps else "—",
                  fmt_int(med([r.pps for r in rs])),
                  f"{rt['of_medians']:.2f}×" if rt else "",
                  f"{rt['per_round_min']:.2f}× – {rt['per_round_max']:.2f}×" if rt and rt["per_round_min"] else "",
                  exact)
    return t


def paced_table(runs: list, label: str, engine: str, duration_s: float) -> Table:
    rs = [r for r in runs if r.contender == label]
    t = Table(title=f"Paced: capbench-gen {engine}, {label}, --duration {duration_s:g}", box=box.SIMPLE_HEAD,
              title_justify="left")
    for h in ("round", "target frames", "sent", "delivered", "ring drops", "xmit err", "account",
              "duration [s]", "duration err [%]", "achieved [pps]", "target [pps]", "rate err [%]", "late",
              "max lag"):
        t.add_column(escape(h), justify="right", no_wrap=h == "account")
    for r in sorted(rs, key=lambda r: r.round):
        if isinstance(r, Failed):
            t.add_row(str(r.round), "[red]failed[/red]", *[""] * 12)
            continue
        exact = r.exact and r.sent == r.target_frames
        acct = "exact" if exact else (f"[red]{r.unexplained:+,} unexpl.[/red]" if r.unexplained
                                      else "[red]sent ≠ target[/red]")
        t.add_row(str(r.round), f"{r.target_frames:,}", f"{r.sent:,}", f"{r.delivered:,}", f"{r.ring_drops:,}",
                  fmt_int(r.xmit_errors), acct, f"{r.send_s:.6f}", f"{duration_error_pct(r, duration_s):.4f}",
                  f"{r.own_pps:,.1f}", f"{r.target_pps:,.1f}", f"{rate_error_pct(r):.4f}", f"{r.late:,}",
                  fmt_ns(r.max_lag_ns))
    return t


def duration_error_pct(r: Run, duration_s: float) -> float:
    return 100.0 * abs(r.send_s - duration_s) / duration_s


def rate_error_pct(r: Run) -> float:
    return 100.0 * abs((r.own_pps or 0.0) - (r.target_pps or 0.0)) / r.target_pps if r.target_pps else float("nan")


def verdicts(res: dict[str, list], plan: Plan, a: argparse.Namespace) -> dict[str, Any]:
    """Every target: its figure and whether it was met (None: not measured)."""
    runs = res["unpaced"]
    ours = f"capbench-gen {XDPLOOP}"
    v: dict[str, Any] = {}
    m = median_pps(runs, ours)
    v["xdploop_pps"] = {"value": m, "min": XDPLOOP_PPS_MIN, "met": None if m is None else m >= XDPLOOP_PPS_MIN}
    for key, theirs, least in (("xdploop_vs_trafgen", "trafgen -P 1", TRAFGEN_RATIO_MIN),
                               ("xdploop_vs_testpmd", f"testpmd txonly {TESTPMD_DRIVER}", TESTPMD_RATIO_MIN),
                               ("xdploop_vs_afpacket", "capbench-gen afpacket", None)):
        rt = ratio(runs, ours, theirs)
        v[key] = {"ratio": rt, "min": least,
                  "met": None if rt is None or least is None else rt["of_medians"] >= least}
    v["gen_account_exact"] = {e: all(r.exact for r in runs_of(runs, f"capbench-gen {e}")) and
                              bool(runs_of(runs, f"capbench-gen {e}")) for e in plan.running_engines}
    for label, _ in PACED:
        rs = [r for r in res["paced"] if isinstance(r, Run) and r.contender == label]
        errs = [duration_error_pct(r, a.paced_duration) for r in rs]
        v[f"paced {label}"] = {
            "rounds": len(rs),
            "delivered_exact": bool(rs) and all(r.exact and r.sent == r.target_frames for r in rs),
            "lost": sum(r.sent - r.delivered for r in rs),
            "worst_duration_error_pct": max(errs, default=None),
            "duration_met": bool(errs) and max(errs) <= DURATION_MAX_ERROR_PCT,
        }
    return v


def print_report(res: dict[str, list], plan: Plan, a: argparse.Namespace, v: dict[str, Any]) -> None:
    console = bc.console()
    names = contenders(plan)
    ours = f"capbench-gen {XDPLOOP}"
    for name in names:
        console.print(contender_table(res["unpaced"], name, a.rounds))
    console.print(summary_table(res["unpaced"], names, ours))
    for e, why in plan.engines.items():
        if why is not None:
            console.print(f"capbench-gen {e}: not measured, its probe fails here: {escape(why)}")
    if not plan.peers.get(TRAFGEN):
        console.print(f"trafgen: not installed (apt-get install {PEERS[TRAFGEN]}): not measured")
    if not plan.peers.get(TESTPMD):
        console.print(f"dpdk-testpmd: not installed (apt-get install {OPTIONAL_PEERS[TESTPMD]}): not measured")

    def line(what: str, figure: str, met: bool | None) -> None:
        console.print(f"{what}: {figure}: " + ("not measured" if met is None else bc.verdict(met)))

    x = v["xdploop_pps"]
    line(f"{ours} ≥ {XDPLOOP_PPS_MIN / 1e6:g} Mpps into the capture veth (median)", "—" if x["value"] is None else
         f"{x['value'] / 1e6:.3f} Mpps", x["met"])
    for key, what in (("xdploop_vs_trafgen", f"≥ {TRAFGEN_RATIO_MIN:g}× trafgen -P 1"),
                      ("xdploop_vs_testpmd", f"≥ {TESTPMD_RATIO_MIN:g}× testpmd txonly {TESTPMD_DRIVER}"),
                      ("xdploop_vs_afpacket", "÷ capbench-gen afpacket (no target)")):
        rt = v[key]["ratio"]
        fig = "—" if rt is None else f"{rt['of_medians']:.2f}×"
        if v[key]["min"] is None:
            console.print(f"{ours} {what}: {fig}")
        else:
            line(f"{ours} {what}", fig, v[key]["met"])
    for e, ok in v["gen_account_exact"].items():
        console.print(f"capbench-gen {e}: sent == delivered + ring drops + xdp_xmit_errors in every round: "
                      + ("yes" if ok else "[red]NO[/red]"))
    console.print("delivered: capbench-xdpcount's count in the cpumap ring's thread (after the ring), the capbench "
                  "frames (testpmd's frames carry no stamp: all its packets); reached = delivered + the ring's "
                  "overflow. Sending time: capbench-gen's first-to-last departure, trafgen's TX-loop time, "
                  "testpmd's sent / its median Tx-pps. On a veth the capture veth's poll (XDP, the move into "
                  f"the ring) runs in the sender's softirq, on CPU {GEN_CPU}, for every contender alike.\n")
    for label, _ in PACED:
        console.print(paced_table(res["paced"], label, plan.paced_engine, a.paced_duration))
        p = v[f"paced {label}"]
        console.print(f"{label}: delivered count exact (sent == target frames == delivered + ring drops + "
                      f"xdp_xmit_errors) in every round: {bc.verdict(p['delivered_exact'])}"
                      + (f" ({p['lost']:,} frames not delivered in all, every one counted by a ring)"
                         if p["delivered_exact"] and p["lost"] else ""))
        worst = p["worst_duration_error_pct"]
        console.print(f"{label}: sending time within {DURATION_MAX_ERROR_PCT:g} % of {a.paced_duration:g} s in "
                      f"every round: worst {'—' if worst is None else f'{worst:.4f} %'}: "
                      f"{bc.verdict(p['duration_met'])}")
    console.print("duration: the generator's duration_s (first to last departure); late: frames that left more "
                  "than one gap after their scheduled time, max lag the largest such delay.")
    failed = [r for rs in res.values() for r in rs if isinstance(r, Failed)]
    for f in failed:
        console.print(f"[red]round {f.round} {f.contender}: {escape(f.error)}[/red]")


def to_json(res: dict[str, list], plan: Plan, a: argparse.Namespace, v: dict[str, Any], tb_id: str,
            elapsed_s: float) -> dict[str, Any]:
    def rec(r: Run | Failed) -> dict[str, Any]:
        d = asdict(r) | {"kind": type(r).__name__}
        if isinstance(r, Run):
            d |= {"pps": r.pps, "reached_pps": r.reached_pps, "unexplained": r.unexplained, "exact": r.exact}
        return d

    return {"meta": machine_info() | {"testbed": tb_id, "frame_len": FRAME_LEN, "gen_cpu": GEN_CPU,
                                      "rx_cpu": RX_CPU, "rx_ring": rxmode.DEFAULT_RX_RING,
                                      "duration_s": a.duration, "paced_duration_s": a.paced_duration,
                                      "rounds": a.rounds, "elapsed_s": elapsed_s,
                                      "wire_pps_1g_64": wire_pps(LINK_1G, FRAME_LEN)},
            "engines": plan.engines, "paced_engine": plan.paced_engine, "peers": plan.peers,
            "contenders": contenders(plan), "verdicts": v,
            "unpaced": [rec(r) for r in res["unpaced"]], "paced": [rec(r) for r in res["paced"]]}


# --- main ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--duration", type=bc.seconds, default=3.0, metavar="S",
                   help="seconds of each unpaced run (default: 3)")
    p.add_argument("--paced-duration", type=bc.seconds, default=10.0, metavar="S",
                   help="capbench-gen --duration of each paced run (default: 10)")
    p.add_argument("--rounds", type=int, default=3, metavar="N",
                   help="rounds, each of every measurement once (default: %(default)s)")
    p.add_argument("--skip-peers", action="store_true",
                   help="do not fail when trafgen is missing: skip it and say what to install (dpdk-testpmd "
                        "is always skipped with a note when missing)")
    p.add_argument("--json", metavar="FILE", help="also write every figure (and the programs' summaries) as JSON")
    a = p.parse_args(argv)
    if not 1 <= a.rounds <= 20:
        p.error("--rounds: 1 to 20")
    if not 0 < a.duration <= 60 or not 0 < a.paced_duration <= 60:
        p.error("--duration and --paced-duration: more than 0, at most 60 s")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)

    def needs() -> tuple[Binaries, Plan]:
        """capbench's programs, the peers, and which engines this kernel runs (their probes)."""
        binaries = find_binaries()
        peers = bc.find_peers(PEERS, a.skip_peers) | bc.find_peers(OPTIONAL_PEERS, skip=True)
        engines = {e: preflight.engine_refusal(str(binaries.gen), e) for e in declared.gen().engine_names}
        if not any(why is None for why in engines.values()):
            raise UsageError("no engine of capbench-gen runs here: " + "; ".join(f"{e}: {w}" for e, w in engines.items()))
        return binaries, Plan(engines, peers)

    found = bc.preflight(PROG, "network namespaces, XDP, BPF", needs)
    if found is None:
        return 2
    binaries, plan = found
    for e, why in plan.engines.items():
        note(f"capbench-gen {e}: " + ("runs here" if why is None else f"not here: {why}"))
    n = len(contenders(plan))
    note(f"{n} contenders x {a.rounds} rounds x {a.duration:g} s unpaced, {len(PACED)} x {a.rounds} x "
         f"{a.paced_duration:g} s paced (capbench-gen {plan.paced_engine}): about "
         f"{(n * (a.duration + 3) + len(PACED) * (a.paced_duration + 2)) * a.rounds / 60:.0f} min")
    t0 = time.monotonic()

    def on_bed() -> tuple[dict[str, list], str]:
        with testbed.testbed(rx_cpu=RX_CPU, purpose="bench generator") as tb:
            note(f"test bed {tb.id}: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}, receive model {tb.rx_mode} "
                 f"(ring {rxmode.DEFAULT_RX_RING}, its thread on CPU {RX_CPU})")
            return run_all(binaries, tb, plan, a), tb.id

    try:
        status, done = bc.until_stopped(on_bed)
    except CapbenchError as e:  # the test bed itself could not be built or removed
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if status:
        return status
    res, tb_id = done
    elapsed = time.monotonic() - t0
    v = verdicts(res, plan, a)
    print_report(res, plan, a, v)
    note(f"total time {elapsed:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(to_json(res, plan, a, v, tb_id, elapsed), indent=1) + "\n")
        note(f"figures written to {a.json}")
    failed = [r for rs in res.values() for r in rs if isinstance(r, Failed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
