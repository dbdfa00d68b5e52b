#!/usr/bin/env python3
"""Where the receive CPU's time goes per packet, and what profiling it costs: `capbench run --profile`
for pcap, afp-v3, afxdp and the xdp ceiling at 1 GbE / 64 B.

One run builds one veth test bed (capbench.testbed.veth_pair, its default receive model: the
capture veth's receive work on CPU 1). For each capture backend that `capbench backends` says works
here it runs the seed's iperf-like trial: a constant load of 100 % of the 1 GbE wire rate at 64 B
(1,488,095 pps offered) for `--duration` seconds (default 3), generator (capbench-gen, xdp engine)
on CPU 0, the counter (capbench-cap) and the kernel's receive work on CPU 1, through the same
capbench.trial.measure.Measurer that `capbench run` uses. Every repetition measures each backend
twice, once profiled and once not, the order alternating from one repetition to the next (odd:
without first; even: with first) and the repetitions going round all backends, so that a drift of
the machine spreads over both arms:

- with profiling: the Measurer's TrialSetup.profile is capbench.profile.perf_record.Profiling
  (`--hz` samples per second on each CPU, no files kept), as `capbench run --profile` sets it:
  perf record samples every CPU with the cpu-clock event over the load window only, and the
  record's `profile` holds, for the receive CPU (role "receive") its busy time per captured
  packet split by the groups of capbench/profile/groups.toml, its NET_RX share, perf's own share
  (profiler_pct) and the samples that arrived against one per period; for the counter's process
  (role "counter") its own CPU time per packet;
- without: TrialSetup.profile is None, as in a run without --profile, which starts no perf at all.

A watcher polls /proc during every trial (both arms alike): a perf process of this bench's in an
unprofiled trial fails the trial; a trial is marked disturbed when another capbench test bed was
in use, somebody else's perf ran, or other user processes took more than 5 % of a CPU (the
figures of a shared machine: the receive CPU's "app" group and the rates show it).

Two tables side by side per backend: the receive CPU's ns per packet by group (profiled trials:
mean ± sd over the repetitions) beside its NET_RX share of its time (beside the kernel's own count
of it), its time without samples (beside /proc/stat's idle) and the counter's ns per packet; and the profiling overhead: sent and
received rate and loss, without and with, the mean of the paired differences (with − without, each
repetition's pair) ± their sd, perf's share of each CPU, the samples that arrived of those
expected, and what else ran. The receive CPU is CPU 1 as a whole: the counter runs
there too, so its user time and system calls are in the receive CPU's groups ("app", "socket",
"wakeup") as well as in its own row.

    .venv/bin/python bench/bench_profile.py [--repeat 5] [--duration 3] [--only pcap,afp-v3,afxdp,xdp]
                                            [--hz 997] [--rx-mode napi|rps] [--json FILE]

Tables on stdout, progress on stderr; about 2 x backends x repeat x (duration + 1.5) s: under 4 min
with the defaults (a trial's set-up, its settle time and, profiled, perf script's reading). The test bed is removed at the end, on errors and on Ctrl-C. Exit status 0
when every trial ran, 1 if one could not (or an unprofiled trial had a perf process of its own),
2 for bad input, no root, or a perf that is missing or refused by the kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
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
from capbench.profile import groups, perf_record
from capbench.profile.perf_record import Profiling
from capbench.rates import parse_rate, wire_pps
from capbench.testbed import cpu, preflight, rxmode
from capbench.testbed.veth_pair import Testbed
from capbench.trial.measure import Measurer, TrialSetup
from capbench.trial.record import TrialResult

FRAME_LEN = 64
LINK = 1e9
RATE = "100%"
GEN_CPU, CAP_CPU = 0, 1
SETTLE_S = 0.3
BACKENDS: tuple[tuple[str, str], ...] = (
    ("pcap", "pcap"),
    ("afp-v3", "afp-v3"),
    ("afxdp", "afxdp"),
    ("xdp (ceiling)", "xdp"),
)
WATCH_S = 0.25  # how often the watcher looks at /proc (perf runs for the whole trial)
# Other user processes taking more than this (% of one CPU) while a trial ran disturbed it.
DISTURBED_CPU_PCT = 5.0
PERF_COMM = "perf"


class Watch:
    """What runs beside a trial, polled from /proc every WATCH_S while it runs: the perf processes
    of this process's own (the trial's perf record and perf script) and of anybody else, and the
    CPU time of the user processes that are not this bench's (the lead's tests, a build: anything
    that takes the trial's CPUs; kernel threads are left out, the NAPI thread and ksoftirqd carry
    the trial's own receive work)."""

    def __init__(self) -> None:
        self.ours: set[int] = set()
        self.others: dict[int, str] = {}  # perf processes not ours: pid: its command line
        self.first: dict[int, int] = {}  # others' user+system ticks when first seen (0: started since)
        self.last: dict[int, int] = {}  # and when last seen
        self._scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trial-watch", daemon=True)

    def __enter__(self) -> Watch:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.elapsed_s = time.monotonic() - self._t0

    @property
    def others_cpu_pct(self) -> float:
        """The others' user processes' CPU time while the trial ran, % of one CPU."""
        ticks = sum(self.last[p] - self.first[p] for p in self.last)
        return 100.0 * ticks / os.sysconf("SC_CLK_TCK") / self.elapsed_s if self.elapsed_s else 0.0

    def _run(self) -> None:
        while True:
            self.look()
            if self._stop.wait(WATCH_S):
                self.look()  # once more at the end: a trial shorter than one period
                return

    def look(self) -> None:
        stats: dict[int, str] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as f:
                        stats[int(name)] = f.read()
                except OSError:
                    continue  # gone between the listing and the read
        parents = {pid: cpu.parse_pid_stat_ppid(text) for pid, text in stats.items()}
        me = os.getpid()

        def root(pid: int) -> int:
            """This process when `pid` descends from it, 2 for a kernel thread, else 1 (or 0)."""
            seen = set()
            while pid > 2 and pid != me and pid not in seen:
                seen.add(pid)
                pid = parents.get(pid, 0)
            return pid

        for pid, text in stats.items():
            top = root(pid)
            if top == 2 or pid == 2:
                continue
            if text[text.find("(") + 1:text.rfind(")")] == PERF_COMM:
                if top == me:
                    self.ours.add(pid)
                elif pid not in self.others:
                    self.others[pid] = command_line(pid)
            if top != me:
                ticks = cpu.parse_pid_stat_ticks(text)
                self.first.setdefault(pid, ticks if self._scans == 0 else 0)
                self.last[pid] = ticks
        self._scans += 1


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        text = ""
    return text or f"{PERF_COMM} (pid {pid}, ended before its command line was read)"


@dataclass
class Trial:
    """One trial, or the error that kept it from running."""

    label: str
    backend: str
    repeat: int
    profiled: bool
    order: int  # 1: first of its repetition's pair, 2: second
    result: TrialResult | None = None
    error: str = ""
    own_perf: int = 0  # perf processes of this process's seen during the trial
    others_cpu_pct: float = 0.0  # other user processes' CPU time during the trial, % of one CPU
    other_perf: list[str] = field(default_factory=list)  # anybody else's, by command line

    @property
    def disturbed(self) -> str:
        """What else ran during the trial: other capbench test beds in use, others' perf processes."""
        parts = []
        if self.result is not None and self.result.other_testbeds:
            parts.append(f"test beds {', '.join(self.result.other_testbeds)} in use")
        if self.other_perf:
            parts.append(f"{len(self.other_perf)} perf process(es) not ours")
        if self.others_cpu_pct > DISTURBED_CPU_PCT:
            parts.append(f"other processes took {self.others_cpu_pct:.0f} % of a CPU")
        return "; ".join(parts)

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.error

    def role(self, name: str) -> dict[str, Any]:
        """A profiled trial's block of role `name` ({} when absent)."""
        if self.result is None:
            return {}
        return ((self.result.profile or {}).get("roles") or {}).get(name) or {}


@dataclass
class Run:
    trials: list[Trial] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    rx_mode: str = ""
    load: list[tuple[float, float, float]] = field(default_factory=list)


def measure(binaries: Binaries, tb: Testbed, t: Trial, profiling: Profiling, duration_s: float) -> None:
    setup = TrialSetup(backend=t.backend, frame_len=FRAME_LEN, link_bps=LINK, engine="xdp", gen_cpu=GEN_CPU,
                       cap_cpu=CAP_CPU, settle_s=SETTLE_S, profile=profiling if t.profiled else None)
    with Watch() as watch:
        try:
            t.result = Measurer(binaries, tb, setup).measure(duration_s, parse_rate(RATE))
        except CapbenchError as e:
            t.error = str(e)
    t.own_perf, t.other_perf = len(watch.ours), list(watch.others.values())
    t.others_cpu_pct = watch.others_cpu_pct
    if not t.profiled and t.own_perf:
        t.error = t.error or f"{t.own_perf} perf process(es) of this bench ran in an unprofiled trial"
    elif t.profiled and t.result is not None and not t.result.profile:
        t.error = t.error or "a profiled trial's record has no profile"


def run_all(binaries: Binaries, tb: Testbed, backends: list[tuple[str, str]], profiling: Profiling,
            repeat: int, duration_s: float) -> Run:
    run = Run(rx_mode=tb.rx_mode, load=[os.getloadavg()])
    measured = []
    for label, backend in backends:
        works, why = preflight.backend_status(backend)
        if works:
            measured.append((label, backend))
        else:
            run.skipped.append(f"{label}: not measured, `capbench backends` says: {why}")
            bc.note(run.skipped[-1])
    for rep in range(1, repeat + 1):
        for label, backend in measured:
            for order, profiled in enumerate((False, True) if rep % 2 else (True, False), 1):
                t = Trial(label, backend, rep, profiled, order)
                measure(binaries, tb, t, profiling, duration_s)
                run.trials.append(t)
                bc.note(progress(t))
        run.load.append(os.getloadavg())
    return run


def progress(t: Trial) -> str:
    text = bc.trial_text(f"  #{t.repeat} {t.label} {'with' if t.profiled else 'without'} profiling:", t.result,
                         t.error)
    if t.result is None:
        return text
    text += f", perf processes of ours {t.own_perf}" + (f" (DISTURBED: {t.disturbed})" if t.disturbed else "")
    rx, counter = t.role("receive"), t.role("counter")
    if rx:
        text += (f"; receive CPU {rx.get('ns_per_packet')} ns/pkt, NET_RX {rx['shares_pct']['net_rx']:.1f} %, "
                 f"samples {rx['samples']}/{rx['expected_samples']}, perf {rx['profiler_pct']:.2f} %; "
                 f"counter {counter.get('ns_per_packet')} ns/pkt")
    return text + (f" FAILED: {t.error}" if t.error else "")


# --- the figures over the repetitions ---------------------------------------------------------

def stats(values: list[float | None]) -> dict[str, Any] | None:
    """mean, sd (sample; 0 for one value), min, max and n of the values that exist; None if none."""
    v = [float(x) for x in values if x is not None]
    if not v:
        return None
    return {"mean": statistics.fmean(v), "sd": statistics.stdev(v) if len(v) > 1 else 0.0,
            "min": min(v), "max": max(v), "n": len(v)}


def cell(s: dict[str, Any] | None, fmt: str = ",.0f", signed: bool = False, scale: float = 1.0) -> str:
    """mean ± sd (the mean alone for one value) of stats() / `scale`."""
    if s is None:
        return "—"
    mean = format(s["mean"] / scale, ("+" if signed else "") + fmt)
    return mean if s["n"] < 2 else f"{mean} ± {format(s['sd'] / scale, fmt)}"


def pairs(trials: list[Trial]) -> list[tuple[Trial, Trial]]:
    """(without, with) of each repetition where both ran."""
    by_rep: dict[int, dict[bool, Trial]] = {}
    for t in trials:
        if t.ok:
            by_rep.setdefault(t.repeat, {})[t.profiled] = t
    return [(p[False], p[True]) for _, p in sorted(by_rep.items()) if False in p and True in p]


def all_cpus_samples(t: Trial) -> tuple[int, int] | None:
    """(samples, expected) over every CPU perf sampled: one per period on each online CPU."""
    prof = t.result.profile if t.result else {}
    if not prof:
        return None
    return prof["samples"], round(prof["window_s"] * prof["hz"]) * len(cpu.online_cpus())


def summary(trials: list[Trial]) -> dict[str, Any]:
    """One backend's figures over its repetitions."""
    on = [t for t in trials if t.ok and t.profiled]
    off = [t for t in trials if t.ok and not t.profiled]
    names = [g for g in groups.table().names()
             if g not in (groups.table().by_kind(groups.IDLE).name, groups.table().by_kind(groups.UNSAMPLED).name)]

    def rx(t: Trial, key: str) -> Any:
        return t.role("receive").get(key)

    def arm(ts: list[Trial]) -> dict[str, Any]:
        return {"achieved_pps": stats([t.result.achieved_pps for t in ts]),
                "rx_pps": stats([t.result.rx_pps for t in ts]),
                "loss_pct": stats([t.result.loss_pct for t in ts]),
                "kernel_cpu_pct": stats([t.result.kernel_cpu_pct for t in ts]),
                "invalid_offered_load": sum(1 for t in ts if t.result.invalid_offered_load),
                "others_cpu_pct": stats([t.others_cpu_pct for t in ts]),
                "disturbed": sum(1 for t in ts if t.disturbed),
                "trials": len(ts)}

    paired = pairs(trials)
    samples = [(rx(t, "samples"), rx(t, "expected_samples")) for t in on if t.role("receive")]
    everywhere = [s for s in (all_cpus_samples(t) for t in on) if s is not None]
    return {
        "groups_ns_per_packet": {g: stats([(rx(t, "groups_ns_per_packet") or {}).get(g) for t in on])
                                 for g in names},
        "receive_ns_per_packet": stats([rx(t, "ns_per_packet") for t in on]),
        "counter_ns_per_packet": stats([t.role("counter").get("ns_per_packet") for t in on]),
        # The receive CPU's NET_RX time as the samples count it (shares_pct: % of the load window)
        # and as the kernel's CPU counters do (the record's kernel_cpu_pct: softirq time, or the
        # NAPI thread's); its time without samples beside /proc/stat's idle.
        "net_rx_window_pct": {"profile": stats([(rx(t, "shares_pct") or {}).get("net_rx") for t in on]),
                              "kernel": stats([t.result.kernel_cpu_pct for t in on])},
        "unsampled_pct": stats([(rx(t, "shares_pct") or {}).get("unsampled") for t in on]),
        "stat_idle_pct": stats([rx(t, "stat_idle_pct") for t in on]),
        "counter_cpus": sorted({c for t in on for c in t.role("counter").get("cpus", [])}),
        "without": arm(off),
        "with": arm(on),
        "difference": {key: stats([getattr(b.result, key) - getattr(a.result, key) for a, b in paired])
                       for key in ("achieved_pps", "rx_pps", "loss_pct")},
        "pairs": len(paired),
        "profiler_pct": {role: stats([t.role(role).get("profiler_pct") for t in on])
                         for role in ("receive", "generator")},
        "receive_samples": [sum(s for s, _ in samples), sum(e or 0 for _, e in samples)],
        "all_samples": [sum(s for s, _ in everywhere), sum(e for _, e in everywhere)],
        "warnings": [w for t in on for w in (t.result.profile.get("warnings") or [])],
        "unresolved_leaf_samples": sum(t.result.profile.get("unresolved_leaf_samples", 0) for t in on),
        # trials in which a perf process of this bench's was seen: none of those without, all with
        "own_perf_seen": {"without": sum(1 for t in trials if not t.profiled and t.own_perf),
                          "with": sum(1 for t in trials if t.profiled and t.own_perf)},
    }


# --- the tables -------------------------------------------------------------------------------

def groups_table(s: dict[str, Any]) -> Table:
    n = s["with"]["trials"]
    t = Table(title=f"receive CPU {CAP_CPU} per captured packet ({n} profiled trial(s))", box=box.SIMPLE_HEAD,
              title_justify="left")
    t.add_column("group", no_wrap=True)
    t.add_column(Text("ns / packet\nmean ± sd"), justify="right", no_wrap=True)
    t.add_column(Text("% of busy"), justify="right")
    total = s["receive_ns_per_packet"]
    for g, st in s["groups_ns_per_packet"].items():
        share = f"{100 * st['mean'] / total['mean']:.1f}" if st and total and total["mean"] else "—"
        t.add_row(groups.table().label(g), cell(st, ",.1f"), share)
    t.add_row("[b]receive CPU busy[/b]", f"[b]{cell(total, ',.1f')}[/b]", "100" if total else "—",
              end_section=True)
    nr = s["net_rx_window_pct"]
    t.add_row("NET_RX [% of its time]: samples", cell(nr["profile"], ".1f"), "")
    t.add_row("  the kernel's CPU counters", cell(nr["kernel"], ".1f"), "")
    t.add_row("no sample [% of its time]", cell(s["unsampled_pct"], ".1f"), "")
    t.add_row("  idle, /proc/stat", cell(s["stat_idle_pct"], ".1f"), "")
    cpus = ",".join(map(str, s["counter_cpus"])) or "?"
    t.add_row(f"counter's own process, CPU {cpus}", cell(s["counter_ns_per_packet"], ",.1f"), "")
    return t


def overhead_table(s: dict[str, Any]) -> Table:
    t = Table(title=f"profiling overhead ({s['pairs']} pair(s) without / with)", box=box.SIMPLE_HEAD,
              title_justify="left")
    t.add_column("", no_wrap=True)
    for h in ("without\nmean ± sd", "with\nmean ± sd", "with − without\npaired, mean ± sd"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    off, on, diff = s["without"], s["with"], s["difference"]

    def rel(key: str) -> str:
        d, base = diff[key], off[key]
        return "" if d is None or base is None or not base["mean"] else f" ({100 * d['mean'] / base['mean']:+.2f} %)"

    for what, key in (("sent", "achieved_pps"), ("received", "rx_pps")):
        t.add_row(f"{what} \\[kpps]", cell(off[key], ",.1f", scale=1e3), cell(on[key], ",.1f", scale=1e3),
                  cell(diff[key], ",.1f", signed=True, scale=1e3) + rel(key))
    t.add_row("loss [%]", cell(off["loss_pct"], ".3f"), cell(on["loss_pct"], ".3f"),
              cell(diff["loss_pct"], ".3f", signed=True))
    t.add_row("generator short (trials)", f"{off['invalid_offered_load']}", f"{on['invalid_offered_load']}", "",
              end_section=True)
    t.add_row(f"perf's share, receive CPU {CAP_CPU} [%]", "—", cell(s["profiler_pct"]["receive"], ".2f"), "")
    t.add_row(f"perf's share, generator CPU {GEN_CPU} [%]", "—", cell(s["profiler_pct"]["generator"], ".2f"), "")
    for what, (got, want) in ((f"CPU {CAP_CPU}", s["receive_samples"]), ("all CPUs", s["all_samples"])):
        t.add_row(f"samples got / expected, {what}", "—",
                  f"{got:,} / {want:,}" + (f" ({100 * got / want:.1f} %)" if want else ""), "")
    seen = s["own_perf_seen"]
    t.add_row("trials with our perf running", f"{seen['without']} of {off['trials']}",
              f"{seen['with']} of {on['trials']}", "")
    t.add_row("others' processes [% of a CPU]", cell(off["others_cpu_pct"], ".1f"),
              cell(on["others_cpu_pct"], ".1f"), "")
    t.add_row("trials disturbed", f"{off['disturbed']} of {off['trials']}", f"{on['disturbed']} of {on['trials']}",
              "")
    return t


def print_report(run: Run, sums: dict[str, dict[str, Any]], duration_s: float, profiling: Profiling) -> None:
    con = bc.console()
    offered = wire_pps(LINK, FRAME_LEN)
    for label, s in sums.items():
        con.print(f"[b]{label}[/b] at 100 % of 1 GbE / {FRAME_LEN} B ({offered:,.0f} pps offered), {duration_s:g} s "
                  f"trials, generator CPU {GEN_CPU}, counter + receive work CPU {CAP_CPU} (rx mode {run.rx_mode}), "
                  f"perf cpu-clock at {profiling.hz} Hz")
        grid = Table.grid(padding=(0, 2))
        grid.add_row(groups_table(s), overhead_table(s))
        con.print(grid)
        for w in dict.fromkeys(s["warnings"]):
            con.print(f"  perf script warned: {w}")
    others = sorted({c for t in run.trials for c in t.other_perf})
    if others:
        con.print("[yellow]perf processes not started by this bench ran during its trials[/yellow] (their sampling "
                  "disturbs both arms):")
        for c in others:
            con.print(f"  {c}")
    for text in run.skipped:
        con.print(text)
    failed = [t for t in run.trials if t.error]
    for t in failed:
        con.print(f"[red]failed[/red]: #{t.repeat} {t.label} {'with' if t.profiled else 'without'} profiling: "
                  f"{t.error}")
    con.print("ns / packet: the receive CPU's busy samples (every sample but the idle task's) × the sampling period / "
              "frames the counter captured, split by the groups of capbench/profile/groups.toml (a sample goes to "
              "the group of the first frame from its leaf that the table names); the counter shares CPU "
              f"{CAP_CPU} with the receive work, so its time is in these groups too (app: its user space; its "
              "system calls under socket and wakeup). NET_RX share: the receive CPU's samples under net_rx_action "
              "or a NAPI thread × the period, % of the load window, beside the kernel's own count of that time "
              "(softirq or NAPI-thread time, /proc); no sample: the window's time on the receive CPU that took no "
              "sample (this VM's halted idle vCPU takes none), beside /proc/stat's idle time. counter's own process: its samples wherever they ran / "
              "frames captured. received: frames captured / the generator's sending time. with − without: the "
              "mean of each repetition's pair's difference (relative to the mean without). perf's share: the "
              "CPU's samples of perf itself (its process only: the sampling interrupts' own time is charged to "
              "the code they interrupt, so the rates' difference is the overhead, this share a part of it). "
              "samples expected: one per period per CPU over the load window; fewer arrived where a CPU was "
              "idle (on this VM) or samples were lost. others' processes' CPU: the user processes not "
              "this bench's (kernel threads left out), while the trial ran. disturbed: another capbench test bed "
              f"in use, a perf process not ours, or others' processes above {DISTURBED_CPU_PCT:g} % of a CPU.")
    info = machine_info()
    con.print(f"machine: {info['cpu_model']}, {info['cores']} CPUs, kernel {info['kernel']['release']}; "
              f"{profiling.tool}; load average (1, 5, 15 min) at the start and after each repetition: "
              + "; ".join(" ".join(f"{x:.2f}" for x in la) for la in run.load))


def trial_record(t: Trial) -> dict[str, Any]:
    r = t.result
    out: dict[str, Any] = {"backend": t.backend, "repeat": t.repeat, "profiled": t.profiled, "order": t.order,
                           "error": t.error, "own_perf_processes": t.own_perf, "other_perf_processes": t.other_perf,
                           "others_cpu_pct": round(t.others_cpu_pct, 2), "disturbed": t.disturbed}
    if r is None:
        return out
    out |= {"started_at": r.started_at, "sent": r.sent, "received": r.received, "lost": r.lost,
            "loss_pct": r.loss_pct, "achieved_pps": r.achieved_pps, "rx_pps": r.rx_pps,
            "invalid_offered_load": r.invalid_offered_load, "kernel_cpu_pct": r.kernel_cpu_pct,
            "app_cpu_pct": r.app_cpu_pct, "other_testbeds": list(r.other_testbeds),
            "loss_layers": [list(x) for x in r.loss_layers]}
    if r.profile:
        keep = ("cpus", "samples", "expected_samples", "busy_ms", "ns_per_packet", "groups_ns_per_packet",
                "shares_pct", "stat_idle_pct", "stat_steal_pct", "profiler_pct", "top_self", "top_processes")
        out["profile"] = {k: r.profile.get(k) for k in ("window_s", "hz", "period_ns", "samples", "packets",
                                                         "unresolved_leaf_samples", "warnings")}
        out["profile"]["roles"] = {name: {k: role.get(k) for k in keep}
                                   for name, role in r.profile.get("roles", {}).items()}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root and perf. See the module docstring for what is measured.")
    p.add_argument("--repeat", type=int, default=5, metavar="N",
                   help="repetitions, each a trial without and one with profiling per backend (default: %(default)s)")
    p.add_argument("--duration", type=bc.seconds, default=3.0, metavar="S",
                   help="seconds per trial (default: %(default)g)")
    names = [b for _, b in BACKENDS]
    p.add_argument("--only", metavar="LIST", help=f"measure only these backends, comma-separated "
                   f"({', '.join(names)}; default: all)")
    p.add_argument("--hz", type=int, default=perf_record.DEFAULT_HZ, metavar="N",
                   help="perf samples per second on each CPU (default: %(default)s, capbench run --profile's)")
    p.add_argument("--rx-mode", choices=tuple(rxmode.RX_MODES), default=None,
                   help=f"the test bed's receive model (default: capbench's, {rxmode.DEFAULT_RX_MODE}; "
                        "bench/README.md, Receive models)")
    p.add_argument("--json", metavar="FILE", help="also write the figures and each trial's key numbers as JSON")
    args = p.parse_args(argv)
    duration_s = args.duration
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    lo, hi = perf_record.HZ_RANGE
    if not lo <= args.hz <= hi:
        p.error(f"--hz must be from {lo} to {hi}")
    only = None if args.only is None else set(args.only.split(","))
    if only is not None and only - set(names):
        p.error(f"--only: unknown {', '.join(sorted(only - set(names)))}; known: {', '.join(names)}")
    backends = [(label, b) for label, b in BACKENDS if only is None or b in only]
    tool = "perf"
    if os.geteuid() == 0:  # without root run_bench says so (perf's check would only say it is refused)
        try:
            tool = perf_record.check()
        except UsageError as e:
            print(f"bench_profile.py: {e}", file=sys.stderr)
            return 2
    profiling = Profiling(hz=args.hz, folder=None, tool=tool)
    t0 = time.monotonic()
    rc, run, tb_id = bc.run_bench("bench_profile.py", {}, False,
                                  lambda b, tb, _peers: run_all(b, tb, backends, profiling, args.repeat, duration_s),
                                  rx_mode=args.rx_mode)
    if run is None:
        return rc
    by_label: dict[str, list[Trial]] = {}
    for t in run.trials:
        by_label.setdefault(t.label, []).append(t)
    sums = {label: summary(ts) for label, ts in by_label.items()}
    print_report(run, sums, duration_s, profiling)
    bc.note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        data = {"meta": machine_info() | {"duration_s": duration_s, "repeat": args.repeat, "testbed": tb_id,
                                          "link_bps": LINK, "frame_len": FRAME_LEN, "rate": RATE,
                                          "offered_pps": wire_pps(LINK, FRAME_LEN), "rx_mode": run.rx_mode,
                                          "gen_cpu": GEN_CPU, "cap_cpu": CAP_CPU, "perf": profiling.tool,
                                          "hz": profiling.hz, "period_ns": profiling.period_ns,
                                          "loadavg": run.load},
                "backends": {label: {"backend": ts[0].backend, **sums[label]} for label, ts in by_label.items()},
                "skipped": run.skipped,
                "trials": [trial_record(t) for t in run.trials]}
        Path(args.json).write_text(json.dumps(data, indent=1, default=str) + "\n")
        bc.note(f"figures written to {args.json}")
    return 1 if any(t.error for t in run.trials) else 0


if __name__ == "__main__":
    sys.exit(main())
