#!/usr/bin/env python3
"""Capture backends benchmark: each backend's highest lossless rate at 64 B beside the xdp ceiling
and every built-in capture program (tcpdump, dumpcap, tshark, netsniff-ng).

One run builds one veth test bed (capbench.testbed.veth_pair, its default receive model: the
capture veth's receive work on CPU 1). For every capture backend `capbench backends` says works
here (pcap, raw, afp-v2, afp-v3, fanout with 2 workers in `lb` mode, afxdp), for the `xdp`
ceiling, and for every built-in program adapter (capbench.trial.apps.builtin(): the program
writing every frame to a pcap/pcapng file, docs/apps.md) run as the capture program in the
capture namespace, it runs the same short RFC 2544 binary search
(capbench.methods.rfc2544.search: 1 s trials, 0.5 s pauses, precision 0.4 % of the 10 GbE wire
rate = 59.5 kpps) at 64 B on an emulated 10 GbE link, so that the search range goes beyond the
1 GbE wire rate. Generator (capbench-gen, xdp engine) on CPU 0; capture program and the kernel's
receive work on CPU 1. A program is measured exactly as `capbench run --backends tcpdump` measures
it (capbench.trial.measure.Measurer with the adapter: its capture file decoded by capbench, its
own counts read from its output), after the same dry start (program_probe).

The generator here tops out near 1 Mpps: a trial whose generator did not send
its load is marked `invalid_offered_load` and fails in the search without being
a capture loss. When the lowest failing rate of a search is such a trial, the
table says "generator" — the capture was lossless as far as the generator could
go, and the figure is a lower bound of the capture, not its limit. A trial the
program failed (it ended early, did not stop in its grace time, or its counts
could not be read: TrialResult.failure) is never lossless; the table counts them
and lists each one under it.

CPU cost per packet: the capture program's user+system CPU over the load window
(% of one CPU x window; for a program, its whole process tree) / frames it
received, in the verification trial at the found rate. Targets: the best backend
>= 60 % of the xdp ceiling and >= 3x tcpdump's lossless rate.

    .venv/bin/python bench/bench_backends.py [--trial 1] [--precision 0.4] [--only LIST] [--rx-mode napi|rps]
                                             [--skip-peers] [--json FILE]

Tables on stdout, progress on stderr; about 6-8 minutes. The test bed is removed
at the end, on errors and on Ctrl-C. Exit status 0 when the measurements ran
(failed trials of a program included: they are results, shown), 1 if a search
could not run (or a program failed its dry start), 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from rich import box
from rich.table import Table
from rich.text import Text

from capbench.testbed import preflight
from capbench.binaries import Binaries
from capbench.errors import CapbenchError, UsageError
from capbench.methods import rfc2544
from capbench.methods.verdict import LOWER_BOUND, verdict
from capbench.rates import wire_pps
from capbench.campaign.results import machine_info
from capbench.testbed import rxmode
from capbench.testbed.veth_pair import Testbed
from capbench.trial import apps, program_probe
from capbench.trial.measure import OFFERED_MIN_SHARE, Measurer, TrialSetup

FRAME_LEN = 64
LINK = 10e9
GEN_CPU, CAP_CPU = 0, 1
SETTLE_S = 0.3
BACKENDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pcap", "pcap", ()),
    ("raw", "raw", ()),
    ("afp-v2", "afp-v2", ()),
    ("afp-v3", "afp-v3", ()),
    ("fanout (2 workers, lb)", "fanout", ("--workers", "2", "--fanout-mode", "lb")),
    ("afxdp", "afxdp", ()),
)
CEILING = ("xdp (ceiling)", "xdp", ())
TCPDUMP = "tcpdump"
CEILING_SHARE_MIN = 0.60
TCPDUMP_RATIO_MIN = 3.0


def programs() -> dict[str, apps.Adapter]:
    """The built-in program adapters, by name (apps.toml)."""
    return apps.builtin()


def program_packages(adapters: dict[str, apps.Adapter]) -> dict[str, str]:
    """{program: Debian package} of the adapters, for bench_common.find_peers."""
    return {a.program: a.package for a in adapters.values()}


@dataclass
class Search:
    label: str
    result: rfc2544.Rfc2544Result
    elapsed_s: float
    command: str = ""  # a program's command template; "" for capbench's own backends

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
        short = [t for t in self._failing() if verdict(t.result) == LOWER_BOUND]
        return short[0] if short else None

    @property
    def program_failures(self) -> list:
        """The trials the capture program failed (TrialResult.failure), by rate."""
        return [t for t in self._failing() if getattr(t.result, "failure", "")]

    @property
    def generator_limited(self) -> bool:
        """The search's upper bound came from a generator shortfall (a trial that lost nothing and did
        not fail, but whose generator fell short), not from a capture loss or a program's failure."""
        t = self.lowest_fail
        return t is not None and verdict(t.result) == LOWER_BOUND

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


def search(label: str, measurer, trial_s: float, precision_pct: float, command: str = "") -> Search | Failed:
    bc.note(f"  {label} ...")
    t0 = time.monotonic()

    def on_trial(t) -> None:
        r = t.result
        why = "gen short" if getattr(r, "invalid_offered_load", False) else ""
        failure = f" FAILED: {r.failure}" if getattr(r, "failure", "") else ""
        bc.note(f"    {t.purpose} {t.load_pps:,.0f} pps: sent {r.sent:,} (achieved {r.achieved_pps:,.0f}), "
                f"received {r.received:,}, lost {r.lost:,} {why}{failure}")

    try:
        res = rfc2544.search(measurer, frame_len=FRAME_LEN, link_bps=LINK, precision_pct=precision_pct,
                             trial_s=trial_s, pause_s=0.5, verify_pause_s=1.0, on_trial=on_trial)
    except CapbenchError as e:
        bc.note(f"  {label} FAILED: {e}")
        return Failed(label, str(e))
    s = Search(label, res, time.monotonic() - t0, command)
    bc.note(f"  {label}: {res.throughput_pps:,.0f} pps lossless{' (generator limit)' if s.generator_limited else ''}"
            f", {len(res.trials)} trials, {s.elapsed_s:.0f} s")
    return s


def backend_works(backend: str) -> tuple[bool, str]:
    """What `capbench backends` says about one backend (capbench.testbed.preflight.backend_status)."""
    return preflight.backend_status(backend)


def program_search(binaries: Binaries, tb: Testbed, app: apps.Adapter, trial_s: float,
                   precision_pct: float) -> Search | Failed:
    """One program's search, after the dry start `capbench run` gives it (a failed one is the row's error)."""
    try:
        program_probe.probe(app, tb.cap_ns, tb.cap_if, CAP_CPU)
    except CapbenchError as e:
        bc.note(f"  {app.name} FAILED its dry start: {e}")
        return Failed(app.name, str(e))
    setup = TrialSetup(backend=app.name, frame_len=FRAME_LEN, link_bps=LINK, gen_cpu=GEN_CPU, cap_cpu=CAP_CPU,
                       settle_s=SETTLE_S, app=app)
    return search(app.name, Measurer(binaries, tb, setup), trial_s, precision_pct, app.command)


def run_all(binaries: Binaries, tb: Testbed, peers: dict[str, bool], trial_s: float,
            precision_pct: float, only: set[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"backends": [], "ceiling": None, "peers": [], "skipped": [], "rx_mode": tb.rx_mode}
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
    for name, app in programs().items():
        if only is not None and name not in only:
            continue
        if not peers.get(app.program):
            out["skipped"].append(f"{name}: not measured, {app.program} is not installed "
                                  f"(apt-get install {app.package})")
            continue
        out["peers"].append(program_search(binaries, tb, app, trial_s, precision_pct))
    return out


def _cpu_text(s: Search) -> tuple[str, str]:
    """(app CPU, CPU per packet) of a search's found trial; a program's CPU as user + system."""
    f, ns = s.found, s.ns_per_packet
    if f is None or s.label.startswith("xdp"):  # xdp counts in the kernel: no application CPU
        return "—", "—"
    r = f.result
    app = f"{r.app_cpu_pct:.1f}"
    if r.app_user_cpu_pct is not None:
        app += f" ({r.app_user_cpu_pct:.1f}+{r.app_system_cpu_pct:.1f})"
    return app, "—" if ns is None else f"{ns:,.0f}"


def table(rows: list, trial_s: float, precision_pps: float, rx_mode: str) -> Table:
    t = Table(title=f"Highest lossless rate at {FRAME_LEN} B (RFC 2544 binary search on 10 GbE, {trial_s:g} s trials, "
                    f"precision {precision_pps:,.0f} pps): gen CPU {GEN_CPU}, capture + kernel rx CPU {CAP_CPU} "
                    f"(rx mode {rx_mode})",
              box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("capture", no_wrap=True)
    for h in ("lossless [pps]", "bounded by", "capture loss from", "generator short from", "app CPU [%]",
              "CPU/pkt [ns]", "failed trials", "trials", "time [s]"):
        t.add_column(Text(h), justify="right", no_wrap=True)
    for s in rows:
        if s is None:
            continue
        if isinstance(s, Failed):
            t.add_row(s.label, "[red]failed[/red]", *[""] * 8)
            continue
        r, loss, short, fail = s.result, s.lowest_loss, s.lowest_gen_short, s.lowest_fail
        if fail is None:
            bound = "nothing: the wire rate passed"
        elif s.generator_limited:
            bound = "[yellow]generator[/yellow]"
        elif getattr(fail.result, "failure", "") and fail.result.lost == 0:
            bound = "[red]program failed[/red]"
        else:
            bound = "capture loss"
        loss_txt = "—" if loss is None else f"{loss.load_pps:,.0f} (lost {loss.result.lost:,})"
        short_txt = "—" if short is None else (f"{short.load_pps:,.0f} (sent "
                                               f"{short.result.achieved_pps / short.load_pps:.1%})")
        app, ns = _cpu_text(s)
        failures = s.program_failures
        fail_txt = "—" if not s.command else (
            "0" if not failures else f"[red]{len(failures)}[/red] (from {failures[0].load_pps:,.0f})")
        t.add_row(s.label, f"{r.throughput_pps:,.0f}" + ("" if r.verified or r.throughput_pps == 0 else " (unverified)"),
                  bound, loss_txt, short_txt, app, ns, fail_txt, f"{len(r.trials)}", f"{s.elapsed_s:.0f}")
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
        if c < bp:  # the ceiling lost frames where a backend did not: the test bed's loss, no ceiling
            res.append((f"best backend {best.label}: {bp:,.0f} pps, above the xdp ceiling's {c:,.0f} pps: the "
                        f"ceiling lost frames (its layers say where) at a rate a backend held, so it measured the "
                        f"test bed, not a ceiling (target ≥ {CEILING_SHARE_MIN:.0%} not judged)", False))
        else:
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
    con.print(table([*out["backends"], out["ceiling"], *out["peers"]], trial_s, precision_pps, out["rx_mode"]))
    for s in out["skipped"]:
        con.print(s)
    for s in out["peers"]:
        if isinstance(s, Failed):
            con.print(f"{s.label}: [red]FAILED[/red]: {s.error}")
            continue
        con.print(f"{s.label}: `{s.command}`")
        for t in s.program_failures:
            con.print(f"  [red]failed trial[/red] ({t.purpose} at {t.load_pps:,.0f} pps, lost {t.result.lost:,} of "
                      f"{t.result.sent:,}): {t.result.failure}")
    for s in out["backends"] + [out["ceiling"]]:
        if isinstance(s, Failed):
            con.print(f"{s.label}: [red]FAILED[/red]: {s.error}")
    con.print("lossless: the highest rate whose trial lost no frame (received = sent) and whose generator sent the "
              "rate, confirmed by a verification trial. bounded by: what failed the lowest failing trial — "
              "\"capture loss\" (frames lost), \"program failed\" (the program under test failed the trial, "
              "listed above), or \"generator\": no frame lost but the generator sent less than "
              f"{OFFERED_MIN_SHARE:.1%} of the rate (invalid_offered_load), so the figure is a lower bound of the "
              "capture, not its limit. capture loss from / generator short from: the lowest rate tried where each "
              "happened (a search trial or a verification). app CPU: % of one CPU over the load window; for a "
              "program its whole process tree (user+system). CPU / packet: app CPU % × load window / frames "
              "received, in the trial at the found rate. A program's received frames are those in its capture "
              "file, decoded by capbench. xdp counts in the kernel: no application CPU.\n")
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
    return {"label": s.label, "command": s.command, "throughput_pps": s.result.throughput_pps,
            "verified": s.result.verified, "lowest_lossy_pps": s.result.lowest_lossy_pps,
            "generator_limited": s.generator_limited, "failed_trials": len(s.program_failures),
            "ns_per_packet": s.ns_per_packet, "elapsed_s": s.elapsed_s, "notes": list(s.result.notes),
            "trials": trials}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="Needs root. See the module docstring for what is measured.")
    p.add_argument("--trial", type=float, default=1.0, metavar="S", help="seconds per trial (default: %(default)s)")
    p.add_argument("--precision", type=float, default=0.4, metavar="PCT",
                   help="search precision in %% of the 10 GbE wire rate (default %(default)s: 59.5 kpps; 0.2 "
                        "gives 29.8 kpps at one more trial per search)")
    p.add_argument("--skip-peers", action="store_true",
                   help="skip a built-in capture program that is not installed (default: fail)")
    p.add_argument("--rx-mode", choices=tuple(rxmode.RX_MODES), default=None,
                   help=f"the test bed's receive model (default: capbench's, {rxmode.DEFAULT_RX_MODE}; "
                        "bench/README.md, Receive models)")
    p.add_argument("--json", metavar="FILE", help="also write every trial as JSON")
    adapters = programs()
    p.add_argument("--only", metavar="LIST", help="measure only these, comma-separated: backends (pcap, raw, "
                   f"afp-v2, afp-v3, fanout, afxdp, xdp) and programs ({', '.join(adapters)}); default: all")
    args = p.parse_args(argv)
    try:
        rfc2544.check_trial_s(args.trial, minimum_s=rfc2544.MIN_TRIAL_S)
        rfc2544.check_precision_pct(args.precision)
    except UsageError as e:
        p.error(str(e))
    only = None if args.only is None else set(args.only.split(","))
    known = {b for _, b, _ in (*BACKENDS, CEILING)} | set(adapters)
    if only is not None and only - known:
        p.error(f"--only: unknown {', '.join(sorted(only - known))}; known: {', '.join(sorted(known))}")
    wanted = {n: a for n, a in adapters.items() if only is None or n in only}
    t0 = time.monotonic()
    rc, out, tb_id = bc.run_bench("bench_backends.py", program_packages(wanted), args.skip_peers,
                                  lambda b, tb, peers: run_all(b, tb, peers, args.trial, args.precision, only),
                                  rx_mode=args.rx_mode)
    if out is None:
        return rc
    print_report(out, args.trial, args.precision)
    bc.note(f"total time {time.monotonic() - t0:.1f} s")
    if args.json:
        data = {"meta": machine_info() | {"trial_s": args.trial, "precision_pct": args.precision, "testbed": tb_id,
                                          "link_bps": LINK, "frame_len": FRAME_LEN, "rx_mode": out["rx_mode"]},
                "backends": [rec(s) for s in out["backends"]],
                "ceiling": rec(out["ceiling"]) if out["ceiling"] else None,
                "peers": [rec(s) for s in out["peers"]], "skipped": out["skipped"],
                "targets": [{"text": t, "pass": ok} for t, ok in targets(out)]}
        Path(args.json).write_text(json.dumps(data, indent=1, default=str) + "\n")
    failed = [s for s in (*out["backends"], out["ceiling"], *out["peers"]) if isinstance(s, Failed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
