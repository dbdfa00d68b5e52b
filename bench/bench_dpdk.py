#!/usr/bin/env python3
"""DPDK beside capbench on the veth test bed, in one run: DPDK's own testpmd as the peer of
capbench's generator and of its counters (issue 29).

1. Generators at 64 B, unpaced, one core (CPU 0), into the capture veth, where capbench-cap's
   `xdp` backend counts every frame and drops it (CPU 1): capbench-gen's xdp engine against
   `dpdk-testpmd --forward-mode=txonly` (--txpkts=60: 64 B frames with the FCS) on net_af_xdp
   and on net_af_packet. A rate is the frames that reached the capture veth per second of
   sending; testpmd's own Tx-pps (its port statistics, each second) is beside it.
2. Captures at 64 B: an MLR search (NDR and PDR) of capbench-cap's `dpdk` backend (net_af_xdp,
   and net_af_packet), `dpdk-testpmd --forward-mode=rxonly` (capbench's built-in adapter
   `testpmd`, net_af_packet), `afxdp` and `afp-v3`, each --repeat-mlr times, through the same
   capbench.trial.measure.Measurer as `capbench run`; then one trial at the PDR for the CPU per
   packet (the counter's, and the kernel's receive work's, ns of CPU per frame captured: a
   poller's CPU is 100 % whatever the rate). Every trial of the dpdk backend must close its
   account: 0 frames that no counter explains.

Placement: generator on CPU 0, the capture veth's receive work on CPU 1, a counter that sleeps
on CPU 1 (A:A). A counter that polls (dpdk, testpmd) gets a CPU of its own: the third where
there is one (campaign/plan.placement); on two CPUs the receive work moves to the generator's
CPU at real-time priority (its thread never waits behind the generator) and the poller takes
CPU 1, which is what lost nothing on this machine (beside the receive work it starved it).

    .venv/bin/python bench/bench_dpdk.py [--gen-s 3] [--trial 3] [--mlr-trial 1] [--repeat-mlr 3]
                                         [--link 10g] [--precision 0.2] [--captures dpdk,testpmd,...]
                                         [--json FILE]

Tables on stdout, progress on stderr; about 25 minutes with the defaults. Test beds are removed
at the end, on errors and on Ctrl-C. Exit status 0 when the measurements ran and every dpdk
trial's account closed, 1 otherwise, 2 for bad input, no root or no dpdk-testpmd.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from bench_generator_capture import GEN_CPU, FRAME_LEN, GenRun, measure_capbench_gen, start_sink, stop_and_read
from rich import box
from rich.table import Table

from capbench import declared
from capbench.binaries import Binaries
from capbench.campaign.plan import own_cpu_for_poller, placement
from capbench.campaign.results import machine_info
from capbench.errors import CapbenchError, UsageError
from capbench.methods import mlr
from capbench.methods.measurer import disturbed
from capbench.rates import link_name, parse_link, parse_rate, wire_pps
from capbench.testbed import cpu
from capbench.testbed import veth_pair as testbed
from capbench.testbed.procs import ChildSet
from capbench.trial import apps
from capbench.trial.measure import Measurer, TrialSetup
from capbench.trial.record import TrialResult

TESTPMD = "dpdk-testpmd"
TESTPMD_PACKAGE = "dpdk-dev"
RX_CPU = 1
SINK = "xdp-drop"  # capbench-cap's xdp backend: counts every frame and drops it
POLLER_NAPI_SCHED = "fifo:50"  # on two CPUs the receive work shares the generator's CPU, ahead of it
# (label, capture: a capbench-cap backend or a built-in adapter, the backend's own options)
CAPTURES = (
    ("dpdk", "dpdk", ()),
    ("dpdk af_packet", "dpdk", ("--dpdk-driver", "af_packet")),
    ("testpmd rxonly", "testpmd", ()),
    ("afxdp", "afxdp", ()),
    ("afp-v3", "afp-v3", ()),
)
TXONLY_DRIVERS = ("net_af_xdp", "net_af_packet")
TX_PPS = re.compile(r"Tx-pps:\s+(\d+)")
TX_PACKETS = re.compile(r"TX-packets:\s+(\d+)")


@dataclass
class CaptureResult:
    label: str
    placement: str
    mlr: list[dict[str, Any]] = field(default_factory=list)
    at_pdr: dict[str, Any] = field(default_factory=dict)
    trials: int = 0  # every trial of its searches and its PDR trial
    unexplained_trials: int = 0  # those where a lost frame was in no counter
    errors: list[str] = field(default_factory=list)


# --- generators ---------------------------------------------------------------------


def testpmd_eal(cpu_: int, prefix: str, vdev: str) -> list[str]:
    """EAL as capbench's dpdk backend and testpmd adapter start it: no hugepages, no shared
    configuration; the main lcore (it sleeps between statistics) and the forwarding one on `cpu_`."""
    return [TESTPMD, "--lcores", f"0@{cpu_},1@{cpu_}", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
            "--no-telemetry", "--file-prefix", prefix, "--vdev", vdev]


def measure_testpmd_txonly(binaries: Binaries, tb, driver: str, duration_s: float) -> GenRun:
    """testpmd txonly on the generator veth, one forwarding core on GEN_CPU, unpaced (it cannot
    pace a virtual device), for `duration_s` after its first statistics, stopped with SIGINT.
    Its rate is its own (Tx-pps, the port's each second, median) times the share of what it sent
    that reached the sink; without a Tx-pps, what reached the sink per second it was let run."""
    prefix = f"capbench-bench-{tb.id}"
    argv = ["taskset", "-c", str(GEN_CPU), *testpmd_eal(GEN_CPU, prefix, f"{driver}0,iface={tb.gen_if}"), "--",
            "--forward-mode=txonly", "--nb-cores=1", "--port-topology=loop", "--total-num-mbufs=16384",
            "--txpkts=60", f"--eth-peer=0,{tb.dst_mac}", "--stats-period", "1"]
    rates: list[int] = []  # its Tx-pps, each second
    sent: list[int] = []  # its TX-packets, each second and at its exit

    def on_line(stream: str, line: str) -> None:  # taken as they come: a child keeps only its output's tail
        for pattern, into in ((TX_PPS, rates), (TX_PACKETS, sent)):
            m = pattern.search(line)
            if m:
                into.append(int(m.group(1)))

    try:
        with ChildSet() as kids:
            sink = start_sink(kids, binaries, tb, SINK)
            tp = kids.start("dpdk-testpmd txonly", argv, netns_name=tb.gen_ns, on_line=on_line)
            deadline = time.monotonic() + 20.0
            while not rates:  # its first statistics: it sends
                if not tp.running or time.monotonic() > deadline:
                    raise tp.failure("printed no statistics")
                time.sleep(0.05)
            time.sleep(duration_s)
            tp.signal(signal.SIGINT)
            tp.wait(15.0)
            (x,) = stop_and_read(kids, sink)
            lines = bc.child_text(tp)
    finally:
        with contextlib.suppress(OSError):  # EAL leaves its runtime directory, empty
            (Path("/var/run/dpdk") / prefix).rmdir()
    rates = [r for r in rates if r]  # the first, before it sent
    delivered = int(x["xdp"]["packets"])
    share = min(1.0, delivered / sent[-1]) if sent and sent[-1] else 0.0
    # Where its statistics showed no rate (net_af_packet's, measured: Tx-pps 0 while it sent), what
    # reached the sink over the time it was let run (its start and stop in it: a lower bound).
    pps = statistics.median(rates) * share if rates else delivered / duration_s
    return GenRun(label=f"testpmd txonly {driver}", sink=SINK, target_pps=None, sent=sent[-1] if sent else None,
                  delivered=delivered, duration_s=duration_s, pps=pps,
                  raw={"testpmd_tx_pps": rates, "sink": x, "testpmd_last_lines": lines[-12:]})


def gen_rate(g: GenRun) -> float:
    """Frames that reached the sink per second of sending (testpmd's: measure_testpmd_txonly)."""
    return g.delivered / g.duration_s if g.label.startswith("capbench-gen") and g.duration_s else g.pps


# --- captures -----------------------------------------------------------------------


def capture_setup(capture: str, args: tuple[str, ...], cap_cpu: int, link_bps: float) -> TrialSetup:
    program = apps.builtin().get(capture) if capture not in declared.backend_names() else None
    return TrialSetup(backend=capture, frame_len=FRAME_LEN, link_bps=link_bps, gen_cpu=GEN_CPU, cap_cpu=cap_cpu,
                      cap_args=args, app=program)


def polls(capture: str) -> bool:
    program = apps.builtin().get(capture) if capture not in declared.backend_names() else None
    return program.polls if program is not None else declared.backend(capture).polls


def search(m: Measurer, a: argparse.Namespace, max_pps: float | None) -> tuple[dict[str, Any], list[TrialResult]]:
    r = mlr.search(m, frame_len=FRAME_LEN, link_bps=a.link, precision_pct=a.precision, final_trial_s=a.mlr_trial,
                   initial_trial_s=min(0.5, a.mlr_trial), pause_s=0.5, max_load_pps=max_pps)
    results = [t.result for t in (*r.trials, *r.reruns, *r.warmups)]
    spoiled = sum(1 for t in r.trials if disturbed(t.result))
    return ({g.name: {"pps": g.throughput_pps, "bounded_by": g.bounded_by, "disturbed_trials": spoiled}
             for g in r.goals}, results)


def cpu_per_packet(r: TrialResult) -> dict[str, Any]:
    """ns of CPU per frame captured: the counter's and the kernel receive work's."""
    per = (lambda pct: None if pct is None or not r.rx_pps else pct / 100 * 1e9 / r.rx_pps)
    return {"offered_pps": r.achieved_pps, "rx_pps": r.rx_pps, "loss_pct": r.loss_pct,
            "app_cpu_pct": r.app_cpu_pct, "kernel_cpu_pct": r.kernel_cpu_pct,
            "app_ns_per_packet": per(r.app_cpu_pct), "kernel_ns_per_packet": per(r.kernel_cpu_pct),
            "unexplained": r.unexplained, "layers": {name: n for name, n, _ in r.loss_layers}}


def measure_capture(binaries: Binaries, tb, label: str, capture: str, cap_args: tuple[str, ...], cap_cpu: int,
                    a: argparse.Namespace, max_pps: float | None) -> CaptureResult:
    res = CaptureResult(label, f"gen {GEN_CPU}, rx {tb.rx_cpu}, counter {cap_cpu}")
    m = Measurer(binaries, tb, capture_setup(capture, cap_args, cap_cpu, a.link))
    trials: list[TrialResult] = []
    for i in range(a.repeat_mlr):
        try:
            answer, ran = search(m, a, max_pps)
            res.mlr.append(answer)
            trials += ran
            bc.note(f"  {label} MLR {i + 1}: " + ", ".join(f"{k} {v['pps']:,.0f}" for k, v in answer.items()))
        except CapbenchError as e:
            res.errors.append(f"MLR {i + 1}: {e}")
    pdrs = [x["PDR"]["pps"] for x in res.mlr if x.get("PDR", {}).get("pps")]
    if pdrs:
        try:
            r = m.measure(a.trial, parse_rate(f"{statistics.median(pdrs):.0f}pps"))
            trials.append(r)
            res.at_pdr = cpu_per_packet(r)
        except CapbenchError as e:
            res.errors.append(f"trial at the PDR: {e}")
    res.trials = len(trials)
    res.unexplained_trials = sum(1 for r in trials if r.unexplained)
    return res


def run(binaries: Binaries, a: argparse.Namespace) -> tuple[list[GenRun | str], list[CaptureResult]]:
    cpus = cpu.usable_cpus()
    gens: list[GenRun | str] = []
    caps: list[CaptureResult] = []
    # The sink's own XDP program runs in the capture veth's poll: a napi test bed (its thread on RX_CPU).
    with testbed.testbed(rx_cpu=RX_CPU, rx_mode="napi", purpose="bench dpdk") as tb:
        bc.note(f"test bed {tb.id} for the generators: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}")
        try:
            gens.append(measure_capbench_gen(binaries, tb, "capbench-gen xdp", "xdp", parse_rate("max"), 10e9,
                                             a.gen_s, SINK))
        except CapbenchError as e:
            gens.append(f"capbench-gen xdp: {e}")
        for driver in TXONLY_DRIVERS:
            try:
                gens.append(measure_testpmd_txonly(binaries, tb, driver, a.gen_s))
            except CapbenchError as e:
                gens.append(f"testpmd txonly {driver}: {e}")
        for g in gens:
            bc.note(f"  {g}" if isinstance(g, str) else f"  {g.label}: {gen_rate(g):,.0f} pps")
        top = next((gen_rate(g) for g in gens if isinstance(g, GenRun) and g.label.startswith("capbench-gen")), None)
    with testbed.testbed(rx_cpu=RX_CPU, purpose="bench dpdk") as tb:
        bc.note(f"test bed {tb.id}: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}, receive work on CPU {RX_CPU} "
                f"({tb.rx_mode})")
        for label, capture, cap_args in (c for c in CAPTURES if c[0] in a.captures):
            if polls(capture) and not own_cpu_for_poller(cpus):
                continue  # on the poller's test bed below
            cap_cpu = placement("A:A", cpus, polls(capture)).cap_cpu
            caps.append(measure_capture(binaries, tb, label, capture, cap_args, cap_cpu, a, top))
    pollers = [c for c in CAPTURES if c[0] in a.captures and polls(c[1]) and not own_cpu_for_poller(cpus)]
    if pollers:
        with testbed.testbed(rx_cpu=GEN_CPU, napi_sched=POLLER_NAPI_SCHED, purpose="bench dpdk") as tb:
            bc.note(f"test bed {tb.id} for the pollers: receive work on CPU {GEN_CPU} ({POLLER_NAPI_SCHED}), "
                    f"the poller on CPU {RX_CPU}")
            for label, capture, cap_args in pollers:
                caps.append(measure_capture(binaries, tb, label, capture, cap_args, RX_CPU, a, top))
    return gens, caps


# --- report -------------------------------------------------------------------------


def mpps(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.3f} M"


def print_report(gens: list[GenRun | str], caps: list[CaptureResult], a: argparse.Namespace) -> None:
    console = bc.console()
    t = Table(title=f"Generators at {FRAME_LEN} B, unpaced, one core (CPU {GEN_CPU}), into the capture veth "
                    f"(frames the sink counted per second)", box=box.SIMPLE)
    for h in ("generator", "reached the sink [pps]", "its own Tx-pps (median)", "capbench-gen / it"):
        t.add_column(h, justify="left" if h == "generator" else "right")
    top = next((gen_rate(g) for g in gens if isinstance(g, GenRun) and g.label.startswith("capbench-gen")), None)
    for g in gens:
        if isinstance(g, str):
            t.add_row(g.split(":")[0], "failed", "", "")
            continue
        own = g.raw.get("testpmd_tx_pps") or []
        t.add_row(g.label, mpps(gen_rate(g)), mpps(statistics.median(own)) if own else "-",
                  f"{top / g.pps:.1f}x" if top and g.pps and not g.label.startswith("capbench-gen") else "")
    console.print(t)
    t = Table(title=f"Captures at {FRAME_LEN} B on a {link_name(a.link)} link: MLR, {a.repeat_mlr} searches "
                    f"(NDR / PDR [pps]); CPU per frame at the PDR (counter / kernel receive work [ns]); "
                    f"trials whose account did not close", box=box.SIMPLE)
    for h in ("capture", "placement", "NDR", "PDR", "PDR median", "counter CPU", "ns/frame", "kernel ns/frame",
              "unexplained"):
        t.add_column(h, justify="left" if h in ("capture", "placement") else "right")
    for c in caps:
        ndr = [x["NDR"]["pps"] for x in c.mlr if "NDR" in x]
        pdr = [x["PDR"]["pps"] for x in c.mlr if "PDR" in x]
        p = c.at_pdr
        ns = (lambda v: "-" if v is None else f"{v:,.0f}")
        t.add_row(c.label, c.placement, " / ".join(f"{v:,.0f}" for v in ndr) or "-",
                  " / ".join(f"{v:,.0f}" for v in pdr) or "-", f"{statistics.median(pdr):,.0f}" if pdr else "-",
                  f"{p['app_cpu_pct']:.0f} %" if p else "-", ns(p.get("app_ns_per_packet")),
                  ns(p.get("kernel_ns_per_packet")), f"{c.unexplained_trials} of {c.trials}")
    console.print(t)
    dpdk = [c for c in caps if c.label.startswith("dpdk")]
    if dpdk:
        closed = all(c.unexplained_trials == 0 for c in dpdk)
        console.print(f"the dpdk backend's account closes in every trial (0 unexplained): {bc.verdict(closed)}")
    for c in caps:
        for e in c.errors:
            console.print(f"[red]{c.label}: {e}[/red]")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gen-s", type=bc.seconds, default=3.0, help="seconds of each generator's run (default: 3)")
    p.add_argument("--trial", type=bc.seconds, default=3.0, help="seconds of the trial at the PDR (default: 3)")
    p.add_argument("--mlr-trial", type=bc.seconds, default=1.0, help="MLR final trial seconds (default: 1)")
    p.add_argument("--repeat-mlr", type=int, default=3, help="MLR searches per capture (default: 3)")
    p.add_argument("--link", default="10g", help="the link the searches' loads are a share of (default: 10g)")
    p.add_argument("--precision", type=float, default=0.2, help="MLR precision, %% of the wire rate (default: 0.2)")
    p.add_argument("--captures", default=",".join(c[0] for c in CAPTURES),
                   help=f"captures to search, comma-separated (default: all: {', '.join(c[0] for c in CAPTURES)})")
    p.add_argument("--json", help="write the figures to this file")
    a = p.parse_args(argv)
    try:
        a.link = parse_link(a.link)
    except UsageError as e:
        p.error(str(e))
    a.captures = [x.strip() for x in a.captures.split(",")]
    unknown = set(a.captures) - {c[0] for c in CAPTURES}
    if unknown or a.repeat_mlr < 1:
        p.error(f"unknown capture {', '.join(sorted(unknown))}" if unknown else "--repeat-mlr: at least 1")
    return a


def needs_dpdk():
    """capbench's programs, testpmd, and a capbench-cap built with its dpdk backend."""
    binaries = bc.find_binaries()
    bc.find_peers({TESTPMD: TESTPMD_PACKAGE}, skip=False)
    absent = declared.backend("dpdk").absent
    if absent:
        raise UsageError(absent)
    return binaries


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    binaries = bc.preflight("bench_dpdk.py", "network namespaces, XDP, BPF, DPDK", needs_dpdk)
    if binaries is None:
        return 2
    t0 = time.monotonic()
    try:
        status, found = bc.until_stopped(lambda: run(binaries, a))
    except CapbenchError as e:
        print(f"bench_dpdk.py: {e}", file=sys.stderr)
        return 1
    if status:
        return status
    gens, caps = found
    print_report(gens, caps, a)
    bc.note(f"total time {time.monotonic() - t0:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": machine_info(), "wire_pps": wire_pps(a.link, FRAME_LEN),
                                            "generators": [g if isinstance(g, str) else asdict(g) for g in gens],
                                            "captures": [asdict(c) for c in caps]}, indent=1) + "\n")
    failed = any(isinstance(g, str) for g in gens) or any(c.errors for c in caps)
    unclosed = any(c.unexplained_trials for c in caps if c.label.startswith("dpdk"))
    return 1 if failed or unclosed else 0


if __name__ == "__main__":
    sys.exit(main())
