#!/usr/bin/env python3
"""Receive models side by side: --rx-mode rps against --rx-mode napi (NAPI thread at the normal
scheduler and at real-time priority), to choose the test bed's default from figures.

For each receive model, on its own veth test bed (generator on CPU 0, receive work on CPU 1):

1. the generator's highest rate at 64 B into the capture veth (unpaced capbench-gen, frames
   passed up the stack by capbench-xdpcount), beside trafgen (netsniff-ng, one worker on CPU 0)
   into the same veth in the same run;
2. every capture backend's loss at 1 GbE / 64 B (100 % of the wire rate, one trial each) with its
   layers: did the generator hold 1,488,095 pps (within 0.1 %, no catch-up burst beyond the
   ring), and where was each lost frame dropped;
3. an MLR search (NDR and PDR) of afp-v3 at 64 B on 1 GbE, three times.

Before the models: how long this VM's vCPU 1 stops when nothing in the guest asks it to (a
busy loop on the idle CPU timing its own gaps), so that ring drops can be split between the
scheduler (priority, the counter sharing the CPU: the models and the A:A / A:B rows) and the
hypervisor (gaps no guest task caused, and steal time).

    .venv/bin/python bench/bench_rx_mode.py [--trial 3] [--mlr-trial 1] [--repeat-mlr 3] [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; about 8 minutes. Test beds are removed at the end, on errors
and on Ctrl-C. Exit status 0 when the measurements ran, 1 if one failed, 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from bench_generator_capture import (GEN_CPU, PEER_PACKAGES, TRAFGEN, measure_capbench_gen, measure_trafgen,
                                     trafgen_frame, write_trafgen_conf)
from rich import box
from rich.table import Table

from capbench.testbed import cpu
from capbench.testbed import veth_pair as testbed
from capbench.trial.accounting import format_pct
from capbench.errors import CapbenchError
from capbench.methods import mlr
from capbench.methods.measurer import disturbed
from capbench.rates import parse_rate
from capbench.campaign.results import machine_info
from capbench.declared import backend_names
from capbench.trial.measure import Measurer, TrialSetup

RX_CPU = 1
FRAME_LEN = 64
LINK = 1e9
WIRE_PPS = 1_488_095
# (label, --rx-mode, --napi-sched, counter CPU): the first wave's model, the NAPI thread at the
# normal scheduler and at real-time priority with the counter beside it (A:A, seed 000's "#1"),
# and at real-time priority with the counter on the generator's CPU (A:B, "#2").
MODELS = (
    ("rps", "rps", "other", 1),
    ("napi other A:A", "napi", "other", 1),
    ("napi fifo:50 A:A", "napi", "fifo:50", 1),
    ("napi fifo:50 A:B", "napi", "fifo:50", 0),
)
STALL_PROBE_S = 3.0
STALL_MIN_NS = 200_000  # a gap this long in a busy loop is a stop: 256 frames last 172 us at 1.488 Mpps


@dataclass
class ModelResult:
    label: str
    gen_max_pps: float | None = None
    trafgen_pps: float | None = None
    trials: list[dict[str, Any]] = field(default_factory=list)
    mlr: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def stall_probe(cpu_: int, seconds: float) -> dict[str, Any]:
    """Spin on `cpu_` (idle, normal scheduler) for `seconds`, timing the gaps between iterations:
    what stops an otherwise idle vCPU (the hypervisor, interrupts, kernel housekeeping)."""
    pid = os.fork()
    if pid == 0:  # the child spins; the parent reads its result from a pipe-less temp file
        os.sched_setaffinity(0, {cpu_})
        gaps, last, end = [], time.perf_counter_ns(), time.perf_counter_ns() + int(seconds * 1e9)
        while last < end:
            now = time.perf_counter_ns()
            if now - last >= STALL_MIN_NS:
                gaps.append(now - last)
            last = now
        Path(f"/tmp/capbench-stall-{os.getpid()}.json").write_text(json.dumps(gaps))
        os._exit(0)
    stat0 = cpu.read_proc_stat()
    os.waitpid(pid, 0)
    stat1 = cpu.read_proc_stat()
    f = Path(f"/tmp/capbench-stall-{pid}.json")
    gaps = json.loads(f.read_text())
    f.unlink()
    a, b = stat0[cpu_], stat1[cpu_]
    total = b.total - a.total
    return {"cpu": cpu_, "seconds": seconds, "stops": len(gaps), "stopped_ms": sum(gaps) / 1e6,
            "largest_ms": max(gaps, default=0) / 1e6, "steal_pct": 100.0 * (b.steal - a.steal) / total if total else 0}


def backend_trial(binaries, tb, backend: str, cap_cpu: int, trial_s: float) -> dict[str, Any]:
    setup = TrialSetup(backend=backend, frame_len=FRAME_LEN, link_bps=LINK, gen_cpu=GEN_CPU, cap_cpu=cap_cpu)
    stat0 = cpu.read_proc_stat()
    r = Measurer(binaries, tb, setup).measure(trial_s, parse_rate("100%"))
    stat1 = cpu.read_proc_stat()
    a, b = stat0[RX_CPU], stat1[RX_CPU]
    steal = 100.0 * (b.steal - a.steal) / max(1, b.total - a.total)
    held = not r.invalid_offered_load and r.achieved_pps >= (1 - 0.001) * WIRE_PPS
    return {"backend": backend, "sent": r.sent, "achieved_pps": r.achieved_pps, "held": held,
            "max_lag_ms": r.gen_max_lag_ns / 1e6, "burst_frames": r.catchup_burst_frames, "lost": r.lost, "loss_pct": r.loss_pct,
            "layers": {name: n for name, n, _ in r.loss_layers}, "unexplained": r.unexplained,
            "kernel_cpu_pct": r.kernel_cpu_pct, "app_cpu_pct": r.app_cpu_pct, "rx_steal_pct": steal,
            "napi_cpus_seen": list(r.napi_cpus_seen)}


def mlr_search(binaries, tb, cap_cpu: int, trial_s: float, rx_ring: int = 0) -> dict[str, Any]:
    """An MLR search (NDR, PDR) of afp-v3 at 64 B on 1 GbE; `rx_ring`: the cpumap model's ring."""
    setup = TrialSetup(backend="afp-v3", frame_len=FRAME_LEN, link_bps=LINK, gen_cpu=GEN_CPU, cap_cpu=cap_cpu,
                       rx_ring=rx_ring)
    m = Measurer(binaries, tb, setup)
    r = mlr.search(m, frame_len=FRAME_LEN, link_bps=LINK, precision_pct=1.0, final_trial_s=trial_s,
                   initial_trial_s=min(0.5, trial_s), pause_s=0.5)
    # The trials the answer rests on that stayed disturbed after their reruns, and the reruns.
    spoiled = sum(1 for t in r.trials if disturbed(t.result))
    return {g.name: {"pps": g.throughput_pps, "bounded_by": g.bounded_by, "disturbed_trials": spoiled,
                     "reruns": len(r.reruns)} for g in r.goals}


def run_model(binaries, peers, label, mode, sched, cap_cpu, args) -> ModelResult:
    res = ModelResult(label)
    with testbed.testbed(rx_cpu=RX_CPU, rx_mode=mode, napi_sched=sched, purpose="bench rx-mode") as tb:
        bc.note(f"{label}: test bed {tb.id}")
        try:
            g = measure_capbench_gen(binaries, tb, "capbench-gen max", "xdp", parse_rate("max"), 10e9, 2.0, "skb")
            res.gen_max_pps = g.delivered / g.duration_s if g.duration_s else None
        except CapbenchError as e:
            res.errors.append(f"generator: {e}")
        if peers.get(TRAFGEN):
            try:
                conf = Path(f"/tmp/capbench-trafgen-{tb.id}.cfg")
                write_trafgen_conf(conf, trafgen_frame(tb.dst_mac, tb.gen_mac))
                t = measure_trafgen(binaries, tb, conf, 2.0, "skb")
                conf.unlink(missing_ok=True)
                res.trafgen_pps = t.pps
            except CapbenchError as e:
                res.errors.append(f"trafgen: {e}")
        for backend in backend_names():
            try:
                res.trials.append(backend_trial(binaries, tb, backend, cap_cpu, args.trial))
                t = res.trials[-1]
                bc.note(f"  {backend}: loss {format_pct(t['loss_pct'], exact_zero=not t['lost'])} %, "
                        f"generator {'held' if t['held'] else 'short'}")
            except CapbenchError as e:
                res.errors.append(f"{backend}: {e}")
        repeat_mlr(lambda: mlr_search(binaries, tb, cap_cpu, args.mlr_trial), args.repeat_mlr, res)
    return res


def repeat_mlr(search, repeats: int, res) -> None:
    """`search()` `repeats` times into res.mlr, each answer on stderr, a failure in res.errors."""
    for i in range(repeats):
        try:
            res.mlr.append(search())
            bc.note(f"  MLR {i + 1}: " + ", ".join(f"{k} {v['pps']:,.0f}" for k, v in res.mlr[-1].items()))
        except CapbenchError as e:
            res.errors.append(f"MLR {i + 1}: {e}")


def pps(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.3f} M"


def print_report(probe: dict[str, Any], results: list[ModelResult]) -> None:
    console = bc.console()
    console.print(f"vCPU {probe['cpu']} idle, busy loop for {probe['seconds']:g} s: {probe['stops']} stops of "
                  f">= {STALL_MIN_NS / 1e3:.0f} us, {probe['stopped_ms']:.2f} ms in all, largest "
                  f"{probe['largest_ms']:.2f} ms; steal {probe['steal_pct']:.2f} % (the hypervisor's share)")
    t = Table(title="Generator at 64 B into the capture veth (frames up the stack)", box=box.SIMPLE)
    for h in ("model", "capbench-gen max [pps]", "trafgen -P 1 [pps]", "gen / trafgen"):
        t.add_column(h, justify="left" if h == "model" else "right")
    for r in results:
        ratio = f"{r.gen_max_pps / r.trafgen_pps:.1f}x" if r.gen_max_pps and r.trafgen_pps else "-"
        t.add_row(r.label, pps(r.gen_max_pps), pps(r.trafgen_pps), ratio)
    console.print(t)
    t = Table(title=f"Loss at 1 GbE / 64 B ({WIRE_PPS:,} pps): loss % [layers], the generator's largest lag; "
                    f"* it did not hold the load within 0.1 %", box=box.SIMPLE)
    t.add_column("backend")
    for r in results:
        t.add_column(r.label, justify="right")
    for backend in backend_names():
        row = [backend]
        for r in results:
            x = next((x for x in r.trials if x["backend"] == backend), None)
            if x is None:
                row.append("failed")
                continue
            layers = " ".join(f"{k} {v:,}" for k, v in x["layers"].items())
            row.append(f"{format_pct(x['loss_pct'], exact_zero=not x['lost'])}{'' if x['held'] else '*'}"
                       + (f" [{layers}]" if layers else "") + f" lag {x['max_lag_ms']:.1f} ms")
        t.add_row(*row)
    console.print(t)
    t = Table(title="MLR of afp-v3 at 64 B on 1 GbE, repeated (NDR / PDR [pps])", box=box.SIMPLE)
    for h in ("model", "NDR runs", "NDR spread", "PDR runs", "PDR spread"):
        t.add_column(h, justify="left" if h == "model" else "right")
    for r in results:
        cells = [r.label]
        for goal in ("NDR", "PDR"):
            v = [m[goal]["pps"] for m in r.mlr if goal in m]
            cells.append(" / ".join(f"{x:,.0f}" for x in v) or "-")
            cells.append(f"{100 * (max(v) - min(v)) / statistics.median(v):.1f} %" if v and statistics.median(v)
                         else "-")
        t.add_row(*cells)
    console.print(t)
    print_errors(console, results)


def print_errors(console, results) -> None:
    """Every model's failed measurements, in red, after the tables."""
    for r in results:
        for e in r.errors:
            console.print(f"[red]{r.label}: {e}[/red]")


def add_mlr_args(p: argparse.ArgumentParser) -> None:
    """The MLR searches' options of the receive benches."""
    p.add_argument("--mlr-trial", type=float, default=1.0, help="MLR final trial seconds (default: 1)")
    p.add_argument("--repeat-mlr", type=int, default=3, help="MLR searches per model (default: 3)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trial", type=float, default=3.0, help="seconds of each backend's trial (default: 3)")
    add_mlr_args(p)
    p.add_argument("--skip-peers", action="store_true", help="run without trafgen when it is not installed")
    p.add_argument("--json", help="write the figures to this file")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    found = bc.preflight("bench_rx_mode.py", "network namespaces, XDP, BPF",
                         lambda: (bc.find_binaries(), bc.find_peers({TRAFGEN: PEER_PACKAGES[TRAFGEN]}, args.skip_peers)))
    if found is None:
        return 2
    binaries, peers = found
    t0 = time.monotonic()
    probe = stall_probe(RX_CPU, STALL_PROBE_S)
    status, results = bc.until_stopped(lambda: [run_model(binaries, peers, label, mode, sched, cap_cpu, args)
                                                for label, mode, sched, cap_cpu in MODELS])
    if status:
        return status
    print_report(probe, results)
    bc.note(f"total time {time.monotonic() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine_info(), "stall_probe": probe,
                                               "models": [asdict(r) for r in results]}, indent=1) + "\n")
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
