#!/usr/bin/env python3
"""The receive ring side by side: today's default (--rx-mode napi, the veth's 256-frame ring)
against the cpumap ring (--rx-mode cpumap --rx-ring N) at three depths, its kernel thread at the
normal scheduler and at real-time priority, to choose the default depth and priority from figures.

For each model, on its own veth test bed (generator on CPU 0, receive work and counter on CPU 1,
seed 000's "#1"):

1. `make run`'s table (pcap and afp-v3 at every --sizes length, 100 % of 1 GbE), --runs times:
   which rows lose, how much, in which layer, and how often the generator fell short;
2. afp-v3 at 64 B offered 100 % of the wire rate: the rate the generator sent and the rate the
   stack captured (what an MLR answer should come near when it measures the stack, not the host);
3. an MLR search (NDR and PDR) of afp-v3 at 64 B, --repeat-mlr times: its spread;
4. for the models named by --hog-models (the default's), pcap and afp-v3 at 1518 B --big-runs more
   times (the issue's "the 1518 B row loses nothing in 10 of 10 runs"), and the MLR searches again
   with two CPU hogs (a busy loop at the normal scheduler on each CPU the trial uses): within
   +-15 % of the quiet answer, or marked disturbed with the interference measured.

    .venv/bin/python bench/bench_rx_ring.py [--runs 3] [--sizes 64,...,1518] [--trial 5]
                                            [--mlr-trial 1] [--repeat-mlr 3] [--json FILE]

Tables on stdout, progress on stderr; about 70 minutes with the defaults (`make run`'s table is
3 minutes), a few minutes with --runs 1 --sizes 64,512,1518 --trial 1 --repeat-mlr 1. Test beds are
removed at the end, on errors and on Ctrl-C. Exit status 0 when the measurements ran, 1 if one
failed, 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from bench_rx_mode import (FRAME_LEN as MLR_LEN, GEN_CPU, LINK, RX_CPU, add_mlr_args, mlr_search, print_errors,
                           repeat_mlr)
from rich import box
from rich.table import Table

from capbench.campaign.matrix import Matrix
from capbench.campaign.results import machine_info
from capbench.errors import CapbenchError
from capbench.rates import parse_rate, parse_sizes
from capbench.testbed import rxmode
from capbench.testbed import veth_pair as testbed
from capbench.trial.accounting import format_pct
from capbench.trial.measure import Measurer, TrialSetup

BACKENDS = Matrix().backends  # make run's: pcap, afp-v3
SIZES = ",".join(str(s) for s in Matrix().sizes)
# (label, --rx-mode, --napi-sched, --rx-ring): today's default, then the ring at three depths
# (256: the veth's own, so the model alone changes; 1024: mlx5's default; 4096), its thread at the
# normal scheduler and at real-time priority.
MODELS = (("napi 256 other (today)", "napi", "other", 0),
          *((f"cpumap {n} {s}", "cpumap", s, n) for n in (256, 1024, 4096) for s in ("other", "fifo:50")))


@dataclass
class ModelResult:
    label: str
    tables: list[list[dict[str, Any]]] = field(default_factory=list)  # per run: one row per backend x size
    wire: dict[str, Any] = field(default_factory=dict)  # afp-v3 at 64 B offered 100 %
    mlr: list[dict[str, Any]] = field(default_factory=list)
    big: list[dict[str, Any]] = field(default_factory=list)  # pcap and afp-v3 at 1518 B, --big-runs times
    mlr_hogs: list[dict[str, Any]] = field(default_factory=list)  # the MLR searches beside two CPU hogs
    errors: list[str] = field(default_factory=list)


def trial(binaries, tb, backend: str, frame_len: int, rx_ring: int, trial_s: float, rate: str = "100%") -> dict:
    setup = TrialSetup(backend=backend, frame_len=frame_len, link_bps=LINK, gen_cpu=GEN_CPU, cap_cpu=RX_CPU,
                       rx_ring=rx_ring)
    r = Measurer(binaries, tb, setup).measure(trial_s, parse_rate(rate))
    return {"backend": backend, "frame_len": frame_len, "sent": r.sent, "achieved_pps": r.achieved_pps,
            "rx_pps": r.rx_pps, "short": r.invalid_offered_load, "lost": r.lost, "loss_pct": r.loss_pct,
            "layers": {name: n for name, n, _ in r.loss_layers}, "unexplained": r.unexplained,
            "max_lag_ms": r.gen_max_lag_ns / 1e6, "rx_ring": r.rx_ring, "rx_mode": r.rx_mode}


def run_model(binaries, label: str, mode: str, sched: str, rx_ring: int, args) -> ModelResult:
    res = ModelResult(label)
    with testbed.testbed(rx_cpu=RX_CPU, rx_mode=mode, napi_sched=sched, purpose="bench rx-ring") as tb:
        bc.note(f"{label}: test bed {tb.id}")
        for run in range(args.runs):
            rows = []
            for backend in BACKENDS:
                for size in args.sizes:
                    try:
                        rows.append(trial(binaries, tb, backend, size, rx_ring, args.trial))
                    except CapbenchError as e:
                        res.errors.append(f"run {run + 1} {backend} {size} B: {e}")
            res.tables.append(rows)
            lossy = [f"{x['backend']} {x['frame_len']}" for x in rows if x["lost"]]
            bc.note(f"  run {run + 1}: {len(lossy)} of {len(rows)} rows lose ({', '.join(lossy) or 'none'})")
        try:
            res.wire = trial(binaries, tb, "afp-v3", MLR_LEN, rx_ring, args.trial)
            bc.note(f"  afp-v3 64 B at 100 %: sent {res.wire['achieved_pps']:,.0f} pps, "
                    f"captured {res.wire['rx_pps']:,.0f} pps")
        except CapbenchError as e:
            res.errors.append(f"afp-v3 at the wire rate: {e}")
        repeat_mlr(lambda: mlr_search(binaries, tb, RX_CPU, args.mlr_trial, rx_ring), args.repeat_mlr, res)
        if any(w in label for w in args.hog_models.split(",")):
            for i in range(args.big_runs):
                for backend in BACKENDS:
                    try:
                        res.big.append(trial(binaries, tb, backend, 1518, rx_ring, args.trial))
                    except CapbenchError as e:
                        res.errors.append(f"1518 B run {i + 1} {backend}: {e}")
            bc.note(f"  1518 B: {sum(1 for x in res.big if not x['lost'])} of {len(res.big)} trials lossless")
            quiet = res.mlr
            with cpu_hogs((GEN_CPU, RX_CPU)):
                res.mlr = []
                repeat_mlr(lambda: mlr_search(binaries, tb, RX_CPU, args.mlr_trial, rx_ring), args.repeat_mlr, res)
                res.mlr_hogs, res.mlr = res.mlr, quiet
    return res


@contextlib.contextmanager
def cpu_hogs(cpus):
    """A busy loop at the normal scheduler on each of `cpus` (other work on a shared host), ended on exit."""
    hogs = []
    try:
        for c in cpus:
            hogs.append(subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", "while True: pass"]))
        bc.note(f"  two CPU hogs on CPUs {', '.join(map(str, cpus))}")
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def spread(values: list[float]) -> str:
    """(max − min) / median, the bench_rx_mode.py measure of an answer's spread."""
    if not values or not statistics.median(values):
        return "-"
    return f"{100 * (max(values) - min(values)) / statistics.median(values):.0f} %"


def print_report(results: list[ModelResult], sizes: list[int]) -> None:
    console = bc.console()
    t = Table(title="make run's table (pcap, afp-v3 at 100 % of 1 GbE): rows that lost, per run; "
                    "* the generator fell short in that many trials", box=box.SIMPLE)
    for h in ("model", "lossy rows per run", "rows >= 512 B lossless", "loss in", "short"):
        t.add_column(h, justify="left" if h in ("model", "loss in") else "right")
    for r in results:
        lossy = [sum(1 for x in rows if x["lost"]) for rows in r.tables]
        big = [all(not x["lost"] for x in rows if x["frame_len"] >= 512) for rows in r.tables]
        layers: dict[str, int] = {}
        for rows in r.tables:
            for x in rows:
                for k, v in x["layers"].items():
                    layers[k] = layers.get(k, 0) + v
        short = sum(x["short"] for rows in r.tables for x in rows)
        t.add_row(r.label, " / ".join(map(str, lossy)), f"{sum(big)} of {len(big)}",
                  ", ".join(f"{k} {v:,}" for k, v in layers.items()) or "-", str(short))
    console.print(t)
    t = Table(title="afp-v3 at 64 B: offered 100 % (sent, captured) and MLR NDR / PDR per search, pps",
              box=box.SIMPLE)
    for h in ("model", "sent", "captured", "NDR", "NDR spread", "PDR", "PDR spread", "PDR / captured"):
        t.add_column(h, justify="left" if h == "model" else "right")
    for r in results:
        cells = [r.label, f"{r.wire.get('achieved_pps', 0):,.0f}", f"{r.wire.get('rx_pps', 0):,.0f}"]
        for goal in ("NDR", "PDR"):
            v = [m[goal]["pps"] for m in r.mlr if goal in m]
            cells += [" / ".join(f"{x:,.0f}" for x in v) or "-", spread(v)]
        pdr = [m["PDR"]["pps"] for m in r.mlr if "PDR" in m]
        cells.append(f"{100 * statistics.median(pdr) / r.wire['rx_pps']:.0f} %" if pdr and r.wire.get("rx_pps")
                     else "-")
        t.add_row(*cells)
    console.print(t)
    hogged = [r for r in results if r.big or r.mlr_hogs]
    if hogged:
        t = Table(title="The --hog-models: 1518 B lossless in N of N trials; afp-v3 64 B MLR beside two CPU hogs "
                        "(PDR per search in pps, its change from the quiet median, trials still disturbed / reruns)",
                  box=box.SIMPLE)
        for h in ("model", "1518 B lossless (pcap, afp-v3)", "PDR with hogs", "vs quiet", "disturbed / reruns",
                  "within 15 % or disturbed"):
            t.add_column(h, justify="left" if h == "model" else "right")
        for r in hogged:
            big = {b: [x for x in r.big if x["backend"] == b] for b in BACKENDS}
            quiet = [m["PDR"]["pps"] for m in r.mlr if "PDR" in m]
            q = statistics.median(quiet) if quiet else 0
            pdr = [m["PDR"] for m in r.mlr_hogs if "PDR" in m]
            ok = [bool(q) and abs(p["pps"] - q) <= 0.15 * q or p["disturbed_trials"] > 0 for p in pdr]
            t.add_row(r.label, ", ".join(f"{sum(1 for x in v if not x['lost'])} of {len(v)}" for v in big.values()),
                      " / ".join(f"{p['pps']:,.0f}" for p in pdr) or "-",
                      " / ".join(f"{100 * (p['pps'] - q) / q:+.0f} %" for p in pdr) if q else "-",
                      " / ".join(f"{p['disturbed_trials']} / {p['reruns']}" for p in pdr) or "-",
                      f"{sum(ok)} of {len(ok)}")
        console.print(t)
    t = Table(title="Loss % per length, every run (pcap | afp-v3)", box=box.SIMPLE)
    t.add_column("model")
    for size in sizes:
        t.add_column(f"{size} B", justify="right")
    for r in results:
        row = [r.label]
        for size in sizes:
            cells = []
            for rows in r.tables:
                by = {x["backend"]: x for x in rows if x["frame_len"] == size}
                cells.append("|".join(format_pct(by[b]["loss_pct"], exact_zero=not by[b]["lost"])
                                      + ("*" if by[b]["short"] else "") if b in by else "-" for b in BACKENDS))
            row.append(" ".join(cells))
        t.add_row(*row)
    console.print(t)
    print_errors(console, results)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="make run's table per model (default: 3)")
    p.add_argument("--sizes", default=SIZES, help=f"frame lengths of the table (default: make run's, {SIZES})")
    p.add_argument("--trial", type=float, default=5.0, help="seconds of each trial (default: 5, make run's)")
    add_mlr_args(p)
    p.add_argument("--big-runs", type=int, default=10, help="trials of pcap and afp-v3 at 1518 B for the "
                   "--hog-models (default: 10)")
    p.add_argument("--hog-models", default="4096 other", help="models, comma-separated words of their labels, that "
                   "also run --big-runs at 1518 B and the MLR searches beside two CPU hogs (default: the default "
                   "model, '4096 other')")
    p.add_argument("--models", help="only the models whose label holds one of these words, comma-separated")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in parse_sizes(args.sizes)]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    binaries = bc.preflight("bench_rx_ring.py", "network namespaces, XDP, BPF",
                            lambda: (rxmode.check_available("cpumap"), bc.find_binaries())[1])
    if binaries is None:
        return 2
    wanted = [w.strip() for w in args.models.split(",")] if args.models else None
    t0 = time.monotonic()
    status, results = bc.until_stopped(lambda: [run_model(binaries, label, mode, sched, rx_ring, args)
                                                for label, mode, sched, rx_ring in MODELS
                                                if wanted is None or any(w in label for w in wanted)])
    if status:
        return status
    print_report(results, args.sizes)
    bc.note(f"total time {time.monotonic() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine_info(), "args": vars(args),
                                               "models": [asdict(r) for r in results]}, indent=1) + "\n")
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
