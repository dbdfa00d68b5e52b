#!/usr/bin/env python3
"""Generator and capture benchmark: capbench's programs next to trafgen and tcpdump.

One run builds one veth test bed (capbench.testbed.veth_pair, kernel receive work of the
capture veth steered to CPU 1 by RPS) and measures, side by side, with every
figure read from a counter during this run:

1. Generator, 64 B frames, unpaced (`--rate max`) on CPU 0: capbench-gen with
   the xdp engine (BPF_PROG_RUN live frames) and with the afpacket engine, and
   trafgen (netsniff-ng), each into two sinks on the capture veth, because on
   a veth the receiver's NAPI poll runs on the *sending* CPU and every
   generator pays for it:
   - `xdp-drop`: capbench-cap's `xdp` backend counts each frame in XDP and
     drops it: the least receive work there is, so the generator's own speed;
   - `skb`: capbench-xdpcount counts each frame in XDP and passes it on, so
     the kernel builds an skb for it (what a capture in the stack costs).
   "Delivered" is the sink's XDP count; "sent exact" means the generator's own
   count equals it. Targets (xdp-drop sink): capbench-gen xdp >= 5 Mpps and
   >= 8x trafgen.
2. Pacing of capbench-gen (xdp) at 10 kpps, 100 kpps, 1 Mpps and 3 Mpps into
   the xdp-drop sink: |achieved - target| / target from the generator's
   summary, whether every frame was delivered, and the summary's `late` and
   `max_lag_ns`. Target: error <= 0.1 % with every frame delivered.
3. Capture at 1 GbE / 64 B (`--rate 100% --link 1g`), generator on CPU 0,
   kernel receive work and the capture program on CPU 1: capbench-cap's
   backends (pcap with pcap_next, pcap with pcap_dispatch, afp-v3) through
   capbench.trial.measure.Measurer, and tcpdump (`tcpdump -w /dev/null`) run the same
   way, with the lost packets split into link / backlog / socket drops.

Run it as root from the repository (or `make bench`):

    .venv/bin/python bench/bench_generator_capture.py [--duration 3] [--skip-peers] [--json FILE]

It prints the tables on stdout and progress on stderr, takes about 14 x
(duration + 1) seconds, and removes the test bed (namespaces, veth, XDP
programs, processes) at the end, on errors and on Ctrl-C. Targets are shown as
PASS/MISS; the exit status is 0 whenever the measurements ran (this is a
benchmark, not a test), 1 if one of them failed, 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))  # this tree's capbench

from rich import box  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from capbench.trial import accounting
from capbench.testbed import cpu
from capbench.testbed import rxmode
from capbench.testbed import veth_pair as testbed  # noqa: E402
from capbench.trial.accounting import LayerCount, format_pct  # noqa: E402
from capbench.binaries import Binaries, find_binaries  # noqa: E402
from capbench.errors import CapbenchError, Terminated, UsageError  # noqa: E402
from capbench.testbed.procs import Child, ChildError, ChildSet  # noqa: E402
from capbench.rates import Rate, parse_duration, parse_rate, wire_bps  # noqa: E402
from capbench.campaign.results import machine_info  # noqa: E402
from capbench.testbed.veth_pair import Testbed  # noqa: E402
from capbench.trial.measure import Measurer, TrialSetup  # noqa: E402

FRAME_LEN = 64  # incl. FCS: 60 B in the buffer
GEN_CPU = 0
RX_CPU = 1  # the capture veth's RPS target: the kernel's receive work after XDP
CAP_CPU = 1
LINK_1G = 1e9
# --link only bounds what --rate may ask for; 3 Mpps of 64 B frames is above
# the 1 GbE wire rate (1,488,095 pps), so the pacing runs emulate 10 GbE.
PACING_LINK = 10e9
PACING_TARGETS_PPS = (10_000, 100_000, 1_000_000, 3_000_000)
PACING_MAX_ERROR_PCT = 0.1
TRAFGEN_RATIO_MIN = 8.0
GEN_PPS_MIN = 5e6
# Where generated frames end on the capture veth (see the module docstring).
SINKS = ("xdp-drop", "skb")
TARGET_SINK = "xdp-drop"
SETTLE_S = 0.3  # after the generator stops, before reading the receive-side counters
# tcpdump opens its capture with a 1000 ms packet buffer timeout, which libpcap
# passes to TPACKET_V3 as the block retire timeout: the kernel hands a partly
# filled block to user space only after it. tcpdump does not drain its ring at
# SIGINT, so it must get longer than that to read the last block.
TCPDUMP_DRAIN_S = 1.2
READY_TIMEOUT_S = 5.0
TRAFGEN = "trafgen"
TCPDUMP = "tcpdump"
PEER_PACKAGES = {TRAFGEN: "netsniff-ng", TCPDUMP: "tcpdump"}


def note(text: str) -> None:
    """Progress on stderr; stdout carries the tables."""
    print(text, file=sys.stderr, flush=True)


# --- results ------------------------------------------------------------------


@dataclass
class GenRun:
    """One generator measurement; `delivered` is the sink's XDP count on the capture veth."""

    label: str
    sink: str
    target_pps: float | None  # None: unpaced
    sent: int | None  # the generator's own count (None if it reports none)
    delivered: int
    duration_s: float  # the generator's sending time
    pps: float
    late: int | None = None
    max_lag_ns: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.sent is not None and self.sent == self.delivered

    @property
    def error_pct(self) -> float | None:
        if self.target_pps is None:
            return None
        return 100.0 * abs(self.pps - self.target_pps) / self.target_pps


@dataclass
class CaptureRun:
    """One capture measurement at 1 GbE / 64 B, accounted as capbench.trial.accounting does."""

    label: str
    offered_pps: float  # the generator's achieved rate
    gen_late: int
    sent: int
    delivered: int
    received: int
    duration_s: float
    rx_pps: float
    rx_gbps: float
    lost: int
    loss_pct: float
    link_drops: int
    backlog_drops: int
    socket_drops: int
    unexplained: int
    app_cpu_pct: float
    kernel_cpu_pct: float
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class Failed:
    """A measurement that could not run; the message says why."""

    label: str
    error: str


# --- generator measurements ----------------------------------------------------


def gen_argv(binaries: Binaries, tb: Testbed, engine: str, rate: Rate, link_bps: float,
             duration_s: float) -> list[str]:
    """The capbench-gen command line capbench's own trials use (Measurer.gen_argv)."""
    setup = TrialSetup(backend="(none)", frame_len=FRAME_LEN, link_bps=link_bps, engine=engine,
                       gen_cpu=GEN_CPU, cap_cpu=None)
    return Measurer(binaries, tb, setup).gen_argv(duration_s, rate)


def start_sink(kids: ChildSet, binaries: Binaries, tb: Testbed, sink: str) -> Child:
    """The program that receives generated frames on the capture veth and counts them
    ("delivered"); its summary's count is read by sink_count()."""
    if sink == "skb":
        return start_xdpcount(kids, binaries, tb)
    cap = kids.start("capbench-cap xdp", [str(binaries.cap), "--iface", tb.cap_if, "--backend", "xdp",
                                          "--cpu", str(CAP_CPU)], netns_name=tb.cap_ns)
    cap.wait_for("ready", READY_TIMEOUT_S)
    rxmode.place_testbed(tb)  # napi mode: the NAPI thread exists now that an XDP program is attached
    return cap


def sink_count(sink: str, summary: dict) -> int:
    """Frames with the capbench stamp that the sink's XDP program saw."""
    return int(summary["capbench"] if sink == "skb" else summary["xdp"]["capbench"])


def start_xdpcount(kids: ChildSet, binaries: Binaries, tb: Testbed) -> Child:
    """The "delivered" counter on the capture veth. On a veth it is also what lets
    frames in at all: veth_xdp_xmit refuses XDP-redirected frames unless the peer
    has an XDP program (its NAPI instance). In rps mode the receive NAPI then runs on
    the CPU that scheduled it, the sending CPU, and RPS moves only the stack work after
    XDP; in napi mode its thread is placed on the receive CPU here (capbench.testbed.rxmode)."""
    xdp = kids.start("capbench-xdpcount", [str(binaries.xdpcount), "--iface", tb.cap_if], netns_name=tb.cap_ns)
    xdp.wait_for("ready", READY_TIMEOUT_S)
    rxmode.place_testbed(tb)
    return xdp


def stop_and_read(kids: ChildSet, *children: Child) -> list[dict]:
    """Wait for the queues to drain, SIGTERM every child (they print a summary), return the summaries."""
    time.sleep(SETTLE_S)
    for child in children:
        if not child.running:
            raise child.failure("ended during the measurement")
    kids.stop_all()
    return [child.summary() for child in children]


def measure_capbench_gen(binaries: Binaries, tb: Testbed, label: str, engine: str, rate: Rate,
                         link_bps: float, duration_s: float, sink: str) -> GenRun:
    """capbench-gen alone (no capture program) into `sink` on the capture veth."""
    with ChildSet() as kids:
        xdp = start_sink(kids, binaries, tb, sink)
        gen = kids.start("capbench-gen", gen_argv(binaries, tb, engine, rate, link_bps, duration_s),
                         netns_name=tb.gen_ns)
        gen.wait(duration_s + 10.0)
        g = gen.summary()
        (x,) = stop_and_read(kids, xdp)
    return GenRun(
        label=label,
        sink=sink,
        target_pps=rate.pps(FRAME_LEN, link_bps),
        sent=int(g["sent"]),
        delivered=sink_count(sink, x),
        duration_s=float(g["duration_s"]),
        pps=float(g["achieved_pps"]),
        late=int(g.get("late", 0)),
        max_lag_ns=int(g.get("max_lag_ns", 0)),
        raw={"gen": g, "sink": x},
    )


def trafgen_frame(dst_mac: str, src_mac: str) -> bytes:
    """The 60 B capbench test frame (src/common/packet.c), stamp magic included, so
    the sinks count trafgen's frames in their `capbench` fields as they count
    capbench-gen's. Every frame carries sequence number 0: nothing here needs more."""
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00"
    ip = bytearray.fromhex("4500002e" "00004000" "40110000" "c6120001" "c6120002")  # 198.18.0.1 -> .2, DF, TTL 64
    s = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    udp = bytes.fromhex("cc00" "cbde" "001a" "0000")  # 52224 -> 52190, length 26, no checksum
    stamp = (0xCB5E).to_bytes(2, "little") + bytes(16)  # magic, seq 0, tx_ns 0
    frame = eth + bytes(ip) + udp + stamp
    assert len(frame) == FRAME_LEN - 4
    return frame


def write_trafgen_conf(path: Path, frame: bytes) -> None:
    """trafgen's packet config: one packet, `{ 0x.., ... }` bytes (man trafgen)."""
    path.write_text("{ " + ", ".join(f"0x{b:02x}" for b in frame) + " }\n")


def parse_trafgen_stats(lines: list[str]) -> tuple[int | None, float | None]:
    """(packets sent, seconds its TX loop ran) from trafgen's exit report:
    `N packets outgoing` and `S sec, U usec on CPUn (N packets)` per worker."""
    text = "\n".join(lines)
    m = re.search(r"(\d+) packets outgoing", text)
    times = [int(s) + int(us) / 1e6 for s, us in re.findall(r"(\d+) sec, (\d+) usec on CPU\d+", text)]
    return (int(m.group(1)) if m else None), (max(times) if times else None)


def measure_trafgen(binaries: Binaries, tb: Testbed, conf: Path, duration_s: float, sink: str) -> GenRun:
    """trafgen unpaced on CPU 0 for `duration_s` into `sink`, stopped with SIGINT.

    --cpus 1 makes trafgen fork one worker and pin it to CPU 0 (taskset pins the
    parent too). --no-sock-mem and --notouch-irq keep it from changing the host's
    net.core.*mem sysctls and IRQ affinities (it would restore them on a clean exit
    only). It sends from a PACKET_TX_RING with PACKET_QDISC_BYPASS (its default
    since Linux 3.14). On SIGINT it stops and prints its counts and TX-loop time.
    """
    argv = ["taskset", "-c", str(GEN_CPU), shutil.which(TRAFGEN) or TRAFGEN,
            "--dev", tb.gen_if, "--conf", str(conf), "--cpus", "1", "--no-sock-mem", "--notouch-irq"]
    with ChildSet() as kids:
        xdp = start_sink(kids, binaries, tb, sink)
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
        (x,) = stop_and_read(kids, xdp)
    out = [m.get("text", "") for m in tg.messages]
    sent, tx_s = parse_trafgen_stats(out)
    delivered = sink_count(sink, x)
    run_s = tx_s if tx_s else wall_s  # its own TX-loop time; the wall time if it printed none
    return GenRun(label="trafgen", sink=sink, target_pps=None, sent=sent, delivered=delivered, duration_s=run_s,
                  pps=delivered / run_s, raw={"trafgen_stdout": out, "wall_s": wall_s, "sink": x})


# --- capture measurements --------------------------------------------------------


def capture_from_trial(label: str, r) -> CaptureRun:
    return CaptureRun(
        label=label, offered_pps=r.achieved_pps, gen_late=int(r.raw["gen"].get("late", 0)), sent=r.sent,
        delivered=r.delivered, received=r.received, duration_s=r.duration_s, rx_pps=r.rx_pps, rx_gbps=r.rx_gbps,
        lost=r.lost, loss_pct=r.loss_pct, link_drops=r.link_drops, backlog_drops=r.backlog_drops,
        socket_drops=accounting.layer_drops(r.layers), unexplained=r.unexplained, app_cpu_pct=r.app_cpu_pct,
        kernel_cpu_pct=r.kernel_cpu_pct, raw=r.raw,
    )


def measure_capbench_cap(binaries: Binaries, tb: Testbed, label: str, backend: str, cap_args: tuple[str, ...],
                         duration_s: float) -> CaptureRun:
    """One capbench trial (capbench.trial.measure.Measurer) at 100 % of 1 GbE."""
    setup = TrialSetup(backend=backend, frame_len=FRAME_LEN, link_bps=LINK_1G, engine="xdp",
                       gen_cpu=GEN_CPU, cap_cpu=CAP_CPU, settle_s=SETTLE_S, cap_args=cap_args)
    return capture_from_trial(label, Measurer(binaries, tb, setup).measure(duration_s, parse_rate("100%")))


def wait_for_stderr(child: Child, needle: str, timeout_s: float) -> None:
    """Wait until `needle` appears in a child's stderr (tcpdump's "listening on" line)."""
    deadline = time.monotonic() + timeout_s
    while not any(needle in line for line in child.stderr_lines):
        if not child.running:
            raise child.failure(f"ended before printing {needle!r}")
        if time.monotonic() > deadline:
            raise child.failure(f"printed no {needle!r} within {timeout_s:g} s")
        time.sleep(0.02)


def parse_tcpdump_stats(lines: list[str]) -> tuple[int, int]:
    """(captured, dropped by kernel) from tcpdump's exit report on stderr.

    "dropped by kernel" is libpcap's ps_drop: the socket's PACKET_STATISTICS
    tp_drops (32-bit in libpcap); drops in the backlog queue before the socket
    are not in it, softnet_stat has them.
    """
    text = "\n".join(lines)
    cap = re.search(r"(\d+) packets? captured", text)
    drop = re.search(r"(\d+) packets? dropped by kernel", text)
    if not cap or not drop:
        raise ChildError("tcpdump printed no 'packets captured' / 'dropped by kernel' lines: "
                         + (lines[-1] if lines else "no output"))
    return int(cap.group(1)), int(drop.group(1))


def measure_tcpdump(binaries: Binaries, tb: Testbed, duration_s: float) -> CaptureRun:
    """tcpdump on CPU 1 at 100 % of 1 GbE, run the way Measurer runs capbench-cap."""
    rate = parse_rate("100%")
    argv = ["taskset", "-c", str(CAP_CPU), shutil.which(TCPDUMP) or TCPDUMP, "-i", tb.cap_if, "-w", "/dev/null", "-n"]
    with ChildSet() as kids:
        xdp = start_xdpcount(kids, binaries, tb)
        td = kids.start("tcpdump", argv, netns_name=tb.cap_ns)
        wait_for_stderr(td, "listening on", READY_TIMEOUT_S)

        softnet0, stat0, ticks0 = cpu.read_softnet_drops(), cpu.read_proc_stat(), cpu.read_pid_ticks(td.pid)
        t0 = time.monotonic()
        gen = kids.start("capbench-gen", gen_argv(binaries, tb, "xdp", rate, LINK_1G, duration_s),
                         netns_name=tb.gen_ns)
        gen.wait(duration_s + 10.0)
        window_s = time.monotonic() - t0
        stat1, ticks1 = cpu.read_proc_stat(), cpu.read_pid_ticks(td.pid)
        g = gen.summary()

        time.sleep(SETTLE_S)
        softnet1 = cpu.read_softnet_drops()
        time.sleep(TCPDUMP_DRAIN_S - SETTLE_S)  # what is still in its ring at SIGINT is neither captured nor dropped
        if not td.running:
            raise td.failure("ended during the measurement")
        td.signal(signal.SIGINT)  # tcpdump prints its statistics on SIGINT
        td.wait(5.0)
        (x,) = stop_and_read(kids, xdp)
    captured, kernel_drops = parse_tcpdump_stats(td.stderr_lines)
    acc = accounting.account(sent=int(g["sent"]), delivered=int(x["capbench"]),
                             backlog_drops=cpu.counter_delta(softnet0, softnet1),
                             layers=(LayerCount("socket", "tcpdump's 'dropped by kernel'", kernel_drops),),
                             received=captured)
    send_s = float(g["duration_s"])
    rx_pps = captured / send_s if send_s > 0 else 0.0
    return CaptureRun(
        label="tcpdump", offered_pps=float(g["achieved_pps"]), gen_late=int(g.get("late", 0)), sent=acc.sent,
        delivered=acc.delivered, received=captured, duration_s=send_s, rx_pps=rx_pps,
        rx_gbps=wire_bps(rx_pps, FRAME_LEN) / 1e9, lost=acc.lost, loss_pct=acc.loss_pct,
        link_drops=acc.link_drops, backlog_drops=acc.backlog_drops, socket_drops=kernel_drops,
        unexplained=acc.unexplained, app_cpu_pct=cpu.process_cpu_pct(ticks0, ticks1, window_s),
        kernel_cpu_pct=cpu.kernel_rx_pct(stat0, stat1, RX_CPU),
        raw={"gen": g, "xdpcount": x, "tcpdump_stderr": td.stderr_lines},
    )


# --- running them all --------------------------------------------------------------


def attempt(label: str, fn, *args) -> GenRun | CaptureRun | Failed:
    """Run one measurement; a failure is recorded (and reported) instead of ending the run."""
    note(f"  {label} ...")
    try:
        result = fn(*args)
    except CapbenchError as e:
        note(f"  {label} FAILED: {e}")
        return Failed(label, str(e))
    if isinstance(result, GenRun):
        sent = "?" if result.sent is None else f"{result.sent:,}"
        note(f"  {label}: {result.pps:,.0f} pps, sent {sent}, delivered {result.delivered:,}")
    else:
        note(f"  {label}: captured {result.rx_pps:,.0f} pps, lost {result.lost:,}")
    return result


def run_all(binaries: Binaries, tb: Testbed, duration_s: float, peers: dict[str, bool]) -> dict[str, list]:
    d = duration_s
    res: dict[str, list] = {"generator": [], "pacing": [], "capture": []}
    for sink in SINKS:
        note(f"generator, 64 B, unpaced, CPU 0, into the {sink} sink:")
        res["generator"].append(attempt(f"capbench-gen xdp [{sink}]", measure_capbench_gen, binaries, tb,
                                        "capbench-gen xdp", "xdp", parse_rate("max"), LINK_1G, d, sink))
        res["generator"].append(attempt(f"capbench-gen afpacket [{sink}]", measure_capbench_gen, binaries, tb,
                                        "capbench-gen afpacket", "afpacket", parse_rate("max"), LINK_1G, d, sink))
        if peers[TRAFGEN]:
            with tempfile.TemporaryDirectory(prefix="capbench-bench-") as tmp:
                conf = Path(tmp) / "capbench-64.trafgen"
                write_trafgen_conf(conf, trafgen_frame(tb.dst_mac, tb.gen_mac))
                res["generator"].append(attempt(f"trafgen [{sink}]", measure_trafgen, binaries, tb, conf, d, sink))

    note(f"pacing, capbench-gen xdp, into the {TARGET_SINK} sink:")
    for target in PACING_TARGETS_PPS:
        rate = Rate.from_pps(target)
        res["pacing"].append(attempt(f"{target:,} pps", measure_capbench_gen, binaries, tb, f"{target:,} pps",
                                     "xdp", rate, PACING_LINK, d, TARGET_SINK))

    note("capture at 1 GbE / 64 B (gen CPU 0, kernel rx + capture CPU 1):")
    for label, backend, cap_args in (("capbench-cap pcap (next)", "pcap", ("--pcap-api", "next")),
                                     ("capbench-cap pcap (dispatch)", "pcap", ("--pcap-api", "dispatch")),
                                     ("capbench-cap afp-v3", "afp-v3", ())):
        res["capture"].append(attempt(label, measure_capbench_cap, binaries, tb, label, backend, cap_args, d))
    if peers[TCPDUMP]:
        res["capture"].append(attempt("tcpdump", measure_tcpdump, binaries, tb, d))
    return res


# --- tables --------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "[green]PASS[/green]" if ok else "[red]MISS[/red]"


def generator_table(runs: list) -> Table:
    t = Table(title=f"Generator at {FRAME_LEN} B, unpaced, one core (CPU {GEN_CPU})", box=box.SIMPLE_HEAD,
              title_justify="left")
    for h in ("generator", "sink", "rate [pps]", "on the wire [Gbps]", "sent (its own count)",
              "delivered (sink's XDP count)", "sent exact", "sending time [s]"):
        t.add_column(Text(h), justify="left" if h in ("generator", "sink") else "right")
    for r in runs:
        if isinstance(r, Failed):
            label, _, sink = r.label.partition(" [")
            t.add_row(label, sink.rstrip("]"), "[red]failed[/red]", "", "", "", "", "")
            continue
        t.add_row(r.label, r.sink, f"{r.pps:,.0f}", f"{wire_bps(r.pps, FRAME_LEN) / 1e9:.3f}",
                  "—" if r.sent is None else f"{r.sent:,}", f"{r.delivered:,}",
                  "yes" if r.exact else "[red]NO[/red]", f"{r.duration_s:.3f}")
    return t


def pacing_table(runs: list) -> Table:
    t = Table(title=f"Pacing of capbench-gen xdp at {FRAME_LEN} B (target: error ≤ {PACING_MAX_ERROR_PCT} % "
                    f"and every frame delivered)", box=box.SIMPLE_HEAD, title_justify="left")
    for h in ("target [pps]", "achieved [pps]", "error [%]", "sent==delivered", "sent", "late", "max lag",
              "verdict"):
        t.add_column(Text(h), justify="right")
    for r in runs:
        if isinstance(r, Failed):
            t.add_row(r.label, "[red]failed[/red]", "", "", "", "", "", "")
            continue
        err = r.error_pct
        t.add_row(f"{r.target_pps:,.0f}", f"{r.pps:,.1f}", format_pct(err, exact_zero=(r.pps == r.target_pps)),
                  "yes" if r.exact else f"[red]NO ({r.sent - r.delivered:,} lost)[/red]", f"{r.sent:,}",
                  f"{r.late:,}", fmt_ns(r.max_lag_ns), verdict(err <= PACING_MAX_ERROR_PCT and r.exact))
    return t


def fmt_ns(ns: int) -> str:
    if ns >= 1_000_000:
        return f"{ns / 1e6:,.1f} ms"
    if ns >= 1_000:
        return f"{ns / 1e3:,.1f} µs"
    return f"{ns} ns"


def capture_table(runs: list) -> Table:
    t = Table(title=f"Capture at 1 GbE / {FRAME_LEN} B (rate 100 %): gen CPU {GEN_CPU}, kernel rx (RPS) CPU "
                    f"{RX_CPU}, capture CPU {CAP_CPU}", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("backend")
    for h in ("offered [pps]", "gen late", "captured [pps]", "Gbps", "loss [%]", "lost"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    t.add_column("lost at link / backlog /\nsocket / unexplained", justify="right")
    t.add_column(Text("app / kernel\nCPU [%]"), justify="right", no_wrap=True)
    for r in runs:
        if isinstance(r, Failed):
            t.add_row(r.label, "[red]failed[/red]", "", "", "", "", "", "", "")
            continue
        where = "—" if r.lost == 0 and r.link_drops == 0 and r.unexplained == 0 else (
            f"{r.link_drops:,} / {r.backlog_drops:,} / {r.socket_drops:,} / {r.unexplained:,}")
        t.add_row(r.label, f"{r.offered_pps:,.0f}", f"{r.gen_late:,}", f"{r.rx_pps:,.0f}", f"{r.rx_gbps:.3f}",
                  format_pct(r.loss_pct, exact_zero=(r.lost == 0)), f"{r.lost:,}", where,
                  f"{r.app_cpu_pct:.1f} / {r.kernel_cpu_pct:.1f}")
    return t


def gen_pps(gen_runs: list, label: str, sink: str) -> float | None:
    by = {(r.label, r.sink): r for r in gen_runs if isinstance(r, GenRun)}
    return by[(label, sink)].pps if (label, sink) in by else None


def trafgen_ratio(gen_runs: list, sink: str = TARGET_SINK) -> float | None:
    ours, theirs = gen_pps(gen_runs, "capbench-gen xdp", sink), gen_pps(gen_runs, "trafgen", sink)
    return ours / theirs if ours is not None and theirs else None


def print_report(res: dict[str, list], peers: dict[str, bool], console: Console) -> None:
    console.print(generator_table(res["generator"]))
    ours = gen_pps(res["generator"], "capbench-gen xdp", TARGET_SINK)
    if ours is not None:
        console.print(f"capbench-gen xdp into the {TARGET_SINK} sink: {ours / 1e6:.2f} Mpps (target ≥ "
                      f"{GEN_PPS_MIN / 1e6:g} Mpps): {verdict(ours >= GEN_PPS_MIN)}")
    for sink in SINKS:
        ratio = trafgen_ratio(res["generator"], sink)
        if ratio is not None:
            target = (f" (target ≥ {TRAFGEN_RATIO_MIN:g}×): {verdict(ratio >= TRAFGEN_RATIO_MIN)}"
                      if sink == TARGET_SINK else "")
            console.print(f"capbench-gen xdp ÷ trafgen into the {sink} sink = {ratio:.2f}×{target}")
    if not peers[TRAFGEN]:
        console.print(f"trafgen: not installed: apt-get install {PEER_PACKAGES[TRAFGEN]}")
    console.print("rate: capbench-gen's achieved_pps (departures over their span); trafgen: frames delivered / "
                  "the time its TX loop ran (its own report).\n"
                  "On a veth the capture side's receive NAPI runs on the sending "
                  f"CPU {GEN_CPU}, so these rates include the sink's work, for every generator alike: the "
                  "xdp-drop sink counts and drops each frame in XDP, the skb sink passes it on and the kernel "
                  "builds an skb (then RPS hands it to CPU 1).\n")
    console.print(pacing_table(res["pacing"]))
    console.print("late = frames that left more than one gap (1/target) after their scheduled time; max lag = "
                  "the largest such delay. The mean rate is kept from the schedule's origin, so late frames "
                  "are bursts, not a lower rate.\n")
    console.print(capture_table(res["capture"]))
    if not peers[TCPDUMP]:
        console.print(f"tcpdump: not installed: apt-get install {PEER_PACKAGES[TCPDUMP]}")
    console.print("gen late: as in the pacing table (at 100 % the generator is near its limit here, see above). "
                  "lost = sent − captured; link = sent − delivered (XDP count on the capture veth), backlog = "
                  "softnet_stat drops, socket = PACKET_STATISTICS drops (tcpdump: \"dropped by kernel\").")


def to_json(res: dict[str, list], args: argparse.Namespace, tb_id: str) -> dict[str, Any]:
    def rec(r):
        d = dataclasses.asdict(r) | {"kind": type(r).__name__}
        if isinstance(r, GenRun):
            d |= {"exact": r.exact, "error_pct": r.error_pct}
        return d

    return {
        "meta": machine_info() | {"duration_s": args.duration, "testbed": tb_id, "frame_len": FRAME_LEN,
                                  "gen_cpu": GEN_CPU, "rx_cpu": RX_CPU, "cap_cpu": CAP_CPU},
        "targets": {"pacing_max_error_pct": PACING_MAX_ERROR_PCT, "trafgen_ratio_min": TRAFGEN_RATIO_MIN,
                    "gen_pps_min": GEN_PPS_MIN, "target_sink": TARGET_SINK},
        "generator": [rec(r) for r in res["generator"]],
        "trafgen_ratio": {sink: trafgen_ratio(res["generator"], sink) for sink in SINKS},
        "pacing": [rec(r) for r in res["pacing"]],
        "capture": [rec(r) for r in res["capture"]],
    }


# --- main ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--duration", default="3", metavar="S", help="seconds per measurement (default: %(default)s)")
    p.add_argument("--skip-peers", action="store_true",
                   help="do not fail when trafgen or tcpdump is missing: skip that comparison and say what to "
                        "install")
    p.add_argument("--json", metavar="FILE", help="also write every figure (and the programs' summaries) as JSON")
    args = p.parse_args(argv)
    try:
        args.duration = parse_duration(args.duration, what="--duration")
    except UsageError as e:
        p.error(str(e))
    return args


def find_peers(skip: bool) -> dict[str, bool]:
    """Which of trafgen and tcpdump are installed; UsageError for a missing one unless `skip`."""
    from bench_common import find_peers as find_installed  # bench_common imports nothing from here at load

    return find_installed(PEER_PACKAGES, skip)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("bench_generator_capture.py needs root (network namespaces, XDP, BPF): run it with sudo",
              file=sys.stderr)
        return 2
    try:
        binaries = find_binaries()
        peers = find_peers(args.skip_peers)
    except UsageError as e:
        print(f"bench_generator_capture.py: {e}", file=sys.stderr)
        return 2
    busy = [i.id for i in testbed.list_testbeds() if i.in_use]
    if busy:
        note(f"note: other capbench test beds are in use ({', '.join(busy)}): the figures may be disturbed")

    console = Console() if sys.stdout.isatty() else Console(width=150)
    t0 = time.monotonic()
    try:
        with testbed.testbed(rx_cpu=RX_CPU, purpose="bench") as tb:
            note(f"test bed {tb.id}: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}, RPS to CPU {RX_CPU}; "
                 f"{args.duration:g} s per measurement")
            res = run_all(binaries, tb, args.duration, peers)
    except KeyboardInterrupt:
        note("interrupted: the test bed is removed")
        return 130
    except Terminated:
        note("terminated: the test bed is removed")
        return 143
    except CapbenchError as e:  # the test bed itself could not be built or removed
        print(f"bench_generator_capture.py: {e}", file=sys.stderr)
        return 1
    print_report(res, peers, console)
    note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(res, args, tb.id), indent=1) + "\n")
        note(f"figures written to {args.json}")
    failed = [r for rs in res.values() for r in rs if isinstance(r, Failed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
