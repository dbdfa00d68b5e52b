"""The `capbench` command line.

Every error the user can fix ends the command with one line on stderr,
`capbench: <problem>: <fix>`, and exit status 2 (1 for failures at run time;
`capbench run` ends with 3 when it measured nothing valid, see RUN_HELP);
only `main` chooses exit statuses.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capbench import __version__, declared, owners
from capbench.campaign import matrix as campaign
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.testbed import preflight
from capbench.campaign import runner
from capbench.testbed import rxmode
from capbench.report import tables
from capbench.testbed import veth_pair as testbed
from capbench.binaries import find_binaries, find_program
from capbench.errors import CapbenchError, RunError, Terminated, UsageError
from capbench.methods import registry as methods
from capbench.options import option_value
from capbench.report.keys import IDENTITY_TEXT
from capbench.rates import (
    parse_duration,
)
from capbench.campaign.results import read_run
from capbench.campaign.runner import note
from capbench.trial.measure import TrialSetup


MAIN_HELP = """\
capbench measures how many packets per second a capture method takes in
without loss on this machine, at what CPU cost, and where lost packets were
dropped. It brings its own traffic generator and runs over a veth pair in two
private network namespaces, so it needs no second host and no NIC.

examples:
  sudo capbench run                        the seed's table: pcap and afp-v3, 13 frame lengths at 1 GbE
  sudo capbench run --sizes 64,1518 --duration 2
  capbench backends                        which capture backends work here
  sudo capbench testbed up                 build a test bed and keep it, to experiment by hand
  capbench report results/2025-11-23T07-30-05Z
                                           print a run's tables again, write its report
  capbench compare results/A results/B     what changed between two runs

Run `capbench COMMAND --help` for the options of each command.
"""

RUN_HELP = """\
By default, for each backend and frame length, one "iperf-like" trial (the
seed's method): the generator sends at a constant rate for --duration seconds,
the counter captures, and throughput = captured packets / sending time. Prints
one table per backend (Frame | Offered | Captured | Loss | App / kernel load |
where the loss happened) and writes results/<UTC time>/trials.jsonl, run.json,
and the report drawn from them into results/<UTC time>/report/.

--method rfc2544 searches the highest rate without loss (RFC 2544 26.1: binary
search from the wire rate, --precision, --trial long trials, a verification
trial); mlr finds NDR and PDR in one search with short trials first; sweep
steps the rate up to the wire rate (--steps); back2back finds the longest burst
at wire rate without loss. Their answers go to searches.jsonl.

Any option that takes a LIST runs every combination: methods x placements x
app loads x processes x backends x sizes x --repeat. A campaign file describes
the same in TOML (campaigns/seed2008.toml). Every trial is written as it ends;
--resume DIR continues an interrupted run without repeating finished trials
(one run at a time writes DIR: a resume while its run is alive is refused).

Placement: --pin A:A puts the kernel's receive work (the capture veth's RPS
mask) and the counter on one CPU, A:B on two, auto leaves it to the scheduler;
on a 2-core machine the generator runs on CPU 0 and A:A (the default, the
seed's "#1") uses CPU 1. --gen-cpu/--rx-cpu/--cap-cpu set the CPUs one by one
instead. The test bed is removed at the end, on errors and on Ctrl-C (which
prints what finished, exit status 130).

A trial is lossless (the generator held the offered load, nothing lost), lossy
(frames sent were not captured, whether or not the generator held the load),
or a lower bound (the generator fell short, nothing lost): not a capture result.
Exit status: 0 when the run measured something (a lossless or lossy trial);
{nothing} when it ended but every trial was a lower bound (the tables then say
what to try: a lower --rate, --method rfc2544, --rx-mode, a quieter machine);
1 for an error during the run; 2 for bad input; 130 after Ctrl-C.

examples:
  sudo capbench run
  sudo capbench run --sizes 64,1518 --duration 2          a quick look
  sudo capbench run --backends afp-v3 --sizes rfc2544     RFC 2544's 7 frame lengths
  sudo capbench run --sizes 64,imix:seed,1518             two lengths and the seed's IMIX
  sudo capbench run --backends raw,afp-v2,afp-v3,fanout   the other AF_PACKET methods
  sudo capbench run --rate 50%                            half the wire rate
  sudo capbench run --rate 800kpps --sizes 64             a fixed packet rate
  sudo capbench run --pin A:A,A:B --repeat 3             the seed's "#1" and "#2", 3 times each
  sudo capbench run --app-load touch,spin:500             a counter slowed by 500 ns per packet
  sudo capbench run --procs 1,2,4 --backends afp-v3       several capture processes (seed 001)
  sudo capbench run --method rfc2544 --sizes 64,1518 --trial 10s
  sudo capbench run --method mlr --sizes 64
  sudo capbench run --campaign campaigns/seed2008-quick.toml
  sudo capbench run --resume results/2026-11-23T07-30-05Z
""".replace("{nothing}", str(runner.NOTHING_MEASURED_STATUS))

TESTBED_HELP = """\
up      build two namespaces joined by a veth pair and keep them; prints their names
down    remove test bed ID (refused while a running capbench uses it, unless --force);
        without ID, remove every test bed no running capbench owns (those of
        `testbed up` and the leftovers of crashed runs)
status  list the test beds and who owns them

examples:
  sudo capbench testbed up --rx-cpu 1
  sudo ip netns exec capbench-1a2b3c-cap tcpdump -ni cb1a2b3cc
  sudo capbench testbed down 1a2b3c
"""

REPORT_HELP = """\
Reads only DIR/trials.jsonl and DIR/run.json, prints the tables, and writes into
DIR/report/: tables.txt, tables.md, trials.csv, a PNG and an SVG of every figure
the records hold the data for, and report.html (one self-contained page).
A last line cut short by a crash is skipped and counted.

examples:
  capbench report results/2025-11-23T07-30-05Z
"""

COMPARE_HELP = textwrap.fill(
    f"Matches the measurements of two runs by their settings ({IDENTITY_TEXT}) and shows, for each match, the "
    f"change of the captured rate, the loss and each layer's share of it, and the application and kernel load; "
    f"searches are compared by their answers.", 84) + """

Only changes beyond the noise are judged, as pyperf's compare_to does: where both runs
repeated a measurement (--repeat N), Student's two-sample t-test on the repetitions at
95 % decides, and a change it does not find is "not significant". Without repetitions
there is no noise estimate and nothing is judged, unless --threshold PCT is given. A
CPU load must also change by more than a few points, a captured rate by more than the
generator's own tolerance. Lower bounds (the generator fell short of the offered load
and nothing was lost) are shown but never judged. Exit status 0, or 1 with --fail-on-regression PCT when a
judged change is worse by more than PCT %.

examples:
  capbench run --repeat 5 ...   twice (before and after), then:
  capbench compare results/2025-11-23T07-30-05Z results/2025-11-24T09-12-00Z
  capbench compare base/ patched/ --fail-on-regression 10      in CI
"""

BACKLOG_HELP = ("raise net.core.netdev_max_backlog (each CPU's queue between RPS and the receive work; "
                "host-wide) to N packets, put back when the last run holding it ends")

def add_rx_mode_args(parser: argparse.ArgumentParser) -> None:
    """--rx-mode and --napi-sched: the test bed's receive model (capbench.testbed.rxmode)."""
    modes = "; ".join(f"{name}: {text}" for name, text in rxmode.RX_MODES.items())
    parser.add_argument("--rx-mode", default=rxmode.DEFAULT_RX_MODE, metavar="MODE",
                        help=f"where the capture side's receive work runs ({modes}; default: %(default)s)")
    parser.add_argument("--napi-sched", default=rxmode.DEFAULT_NAPI_SCHED, metavar="POLICY",
                        help="--rx-mode napi: the NAPI thread's scheduling, `other` (the normal scheduler, "
                             "taking turns with a counter on its CPU) or `fifo:N` (real-time priority N, as a "
                             "NIC's interrupt work preempts user space; default: %(default)s)")


PASSTHROUGH = {
    "gen": ("capbench-gen", "run the traffic generator capbench-gen on any interface"),
    "capture": ("capbench-cap", "run the counter capbench-cap on any interface"),
}

PASSTHROUGH_HELP = """\
usage: capbench {cmd} [--netns NS] OPTIONS...

Runs {prog} with OPTIONS unchanged (inside network namespace NS with --netns),
passing its JSON Lines through on stdout. {extra}

examples:
{examples}

The options of {prog}:
"""

PASSTHROUGH_EXAMPLES = {
    "gen": (
        "Ctrl-C stops it with its summary line.",
        "  sudo capbench gen --iface eth1 --size 64 --rate 100% --link 1g --duration 10\n"
        "  sudo capbench gen --netns capbench-1a2b3c-gen --iface cb1a2b3cg --rate 800kpps --count 100000",
    ),
    "capture": (
        "Ctrl-C ends the capture with its summary line.\n\n"
        "capbench's own options (the rest go to the counter):\n"
        "  --procs N          run N counters on the interface, each seeing every frame\n"
        "                     (packet-socket backends; 1 to 64; default 1)\n"
        "  --proc-cpus LIST   pin counter i to the i-th CPU of LIST (one per process)\n"
        "\n"
        "On a capbench test bed, frames of the generator's xdp engine reach the capture\n"
        "veth only while an XDP program is attached there: capture with --backend\n"
        "{own_xdp}, run capbench-xdpcount there, or send with --engine afpacket.",
        "  sudo capbench capture --iface eth1 --backend afp-v3 --cpu 1\n"
        "  sudo capbench capture --netns capbench-1a2b3c-cap --iface cb1a2b3cc --backend pcap --duration 10\n"
        "  sudo capbench capture --iface eth1 --backend afp-v3 --procs 3 --proc-cpus 1,2,3\n"
        "      three counters on one interface, each seeing every frame (their lines carry \"proc\")",
    ),
}


class Parser(argparse.ArgumentParser):
    """argparse that reports bad input as a UsageError (one line, exit 2) instead of usage + exit."""

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _percent(text: str) -> float:
    """A percentage option: a finite number of 0 or more (`inf` or `nan` would judge nothing, silently)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"cannot read {text[:40]!r}: give a percentage, e.g. 10") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a finite percentage of 0 or more, e.g. 10")
    return value


def _from_declarations(text_of: Callable[[], Any], fallback: Any = "(`make` builds the programs that list them)"):
    """A help text or list built from the C programs' declarations (--describe); `fallback` where
    they cannot be read (not built yet), so that --help and `capbench report` work without them.
    A text's `%` is escaped: argparse formats help texts with `%`."""
    try:
        value = text_of()
    except UsageError:
        return fallback
    return value.replace("%", "%%") if isinstance(value, str) else value


def _own_xdp_names() -> tuple[str, ...]:
    """The backends that attach their own XDP program (an interface holds one: one process)."""
    return declared.names_where(lambda b: b.own_xdp)


def _engines_help() -> str:
    return "; ".join(f"{e.name}: {e.summary}" for e in declared.gen().engines)


def _app_loads_help() -> str:
    return ", ".join(f"{a.form} ({a.help})" for a in declared.cap().app_loads)


def _rings_help() -> str:
    """"pcap, raw: --buffer-size B; afp-v3, fanout: --block-count B / 1 MiB; ...", from the ring specs."""
    by_spec: dict[declared.RingSpec | None, list[str]] = {}
    for b in declared.backends():
        by_spec.setdefault(b.ring, []).append(b.name)
    parts = [f"{', '.join(names)}: {spec.text()}" for spec, names in by_spec.items() if spec is not None]
    unringed = by_spec.get(None)
    return "; ".join(parts) + (f"; not {', '.join(unringed)}" if unringed else "")


def _default(key: str) -> str:
    """`(default: X)` of a `capbench run` flag: its campaign key's default (campaign.matrix declares
    every one), as argparse's help text writes it."""
    return f"(default: {campaign.default_text(key)})".replace("%", "%%")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30)


def build_parser() -> Parser:
    p = Parser(prog="capbench", description=MAIN_HELP, formatter_class=_formatter, allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"capbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    run = sub.add_parser("run", help="measure capture throughput (the seed's iperf-like table)",
                         description=RUN_HELP, formatter_class=_formatter, allow_abbrev=False)
    run.add_argument("--method", metavar="LIST",
                     help="methods, comma-separated (default: iperf), of: "
                          + "; ".join(f"{m.name}: {m.help}" for m in methods.REGISTRY.values()).replace("%", "%%"))
    run.add_argument("--backends", metavar="LIST",
                     help=f"capture backends, comma-separated, of: "
                          f"{_from_declarations(lambda: ', '.join(declared.backend_names()))} "
                          f"{_default('backends')}")
    run.add_argument("--sizes", metavar="LIST",
                     help="one trial per item, comma-separated: a frame length in bytes incl. FCS, `seed` "
                          "(the seed's 13: 64,73,...,1518), `rfc2544` (64,128,256,512,1024,1280,1518), or a "
                          "mix of lengths in one trial: imix:seed (57/7/16/20 %% of 64/570/594/1518 B), "
                          "imix:simple, random:MIN-MAX, dist:FILE.csv (length,weight rows), trace:FILE.pcap "
                          f"{_default('sizes')}. An item given twice runs once: use --repeat N for repetitions")
    run.add_argument("--link", help=f"emulated link speed: 1g, 10g, 25g, 40g, 100g {_default('link')}")
    run.add_argument("--rate",
                     help="offered load of the iperf method: 100%% (of --link), 1.2Mpps, 800kpps, 5000pps, 950m "
                          f"or 1g (bits/s on the wire, 20 B preamble+gap included), max (unpaced) {_default('rate')}")
    run.add_argument("--duration", metavar="S",
                     help=f"sending time of each iperf trial in seconds {_default('duration')}")
    run.add_argument("--trial", metavar="S",
                     help=f"trial length of the searches and sweeps: {methods.trial_help()}")
    run.add_argument("--precision", type=float, metavar="PCT",
                     help=f"rfc2544 and mlr: stop when the answer is known to PCT %% of the wire rate "
                          f"{_default('precision')}")
    run.add_argument("--loss-tolerance", type=int, metavar="N",
                     help=f"rfc2544 and back2back: frames a trial may lose and still pass {_default('loss_tolerance')}")
    run.add_argument("--steps", type=int, metavar="N",
                     help=f"sweep: offered rates up to the wire rate {_default('steps')}")
    run.add_argument("--pause", metavar="S",
                     help=f"searches, sweeps, bursts: idle time before each trial, against saturation "
                          f"{_default('pause')}")
    run.add_argument("--engine", choices=_from_declarations(declared.engine_names, None),
                     help=f"generator engine: {_from_declarations(_engines_help)} {_default('engine')}")
    run.add_argument("--pin", metavar="LIST",
                     help=f"placements, comma-separated: A:A (kernel receive work and counter on one CPU), A:B "
                          f"(on two), auto (the scheduler decides) {_default('pin')}")
    run.add_argument("--gen-cpu", type=int, metavar="N", help="CPU of the generator (instead of --pin)")
    run.add_argument("--rx-cpu", type=int, metavar="N",
                     help="CPU that does the kernel's receive work (RPS mask of the capture veth) (instead of --pin)")
    run.add_argument("--cap-cpu", type=int, metavar="N", help="CPU of the counter (instead of --pin)")
    run.add_argument("--app-load", metavar="LIST",
                     help=f"work the counter does per packet, comma-separated: {_from_declarations(_app_loads_help)} "
                          f"{_default('app_load')}")
    run.add_argument("--procs", metavar="LIST",
                     help=f"capture processes on the interface, each seeing every frame, comma-separated "
                          f"{_default('procs')}")
    run.add_argument("--backend-args", metavar="BACKEND=OPTIONS", action="append",
                     help="a backend's own capbench-cap options for every trial of it, e.g. "
                          "--backend-args 'fanout=--workers 2 --fanout-mode lb' or "
                          "'pcap=--pcap-api dispatch' (repeat for several backends; "
                          "`capbench capture --help` lists them)")
    run.add_argument("--proc-cpus", metavar="LIST",
                     help="with --procs N: pin capture process i to the i-th CPU of LIST, cycled "
                          "(default: all on the counter's CPU)")
    run.add_argument("--groups", type=int, metavar="N",
                     help="seed 004's groups: each iperf trial sends N groups of --group-size frames and the "
                          "counter reports the frames received of every group (the trial lasts as long as the "
                          "groups take, at least --duration)")
    run.add_argument("--group-size", type=int, metavar="PKTS", help="frames per group (with --groups)")
    run.add_argument("--group-gap", metavar="S", help=f"pause between groups (with --groups) {_default('group_gap')}")
    run.add_argument("--ring", metavar="LIST",
                     help=f"kernel buffer sizes, comma-separated (256k, 4M, 64M), B bytes given to each backend "
                          f"as {_from_declarations(_rings_help)} (default: each backend's own)")
    run.add_argument("--repeat", type=int, metavar="N", help=f"run every step N times {_default('repeat')}")
    run.add_argument("--campaign", metavar="FILE", help="run the campaign of a TOML file (see campaigns/)")
    run.add_argument("--resume", metavar="DIR", help="continue the interrupted run in DIR")
    add_rx_mode_args(run)
    run.add_argument("--backlog", type=int, metavar="N",
                     help=BACKLOG_HELP + " (default: leave it as it is)")
    run.add_argument("--tune", action="store_true",
                     help="set what helps a capture benchmark for the run and put it back afterwards: the "
                          "performance CPU governor (where exposed), a backlog of 10,000 packets, "
                          "net.core.rmem_max 64 MiB, and GRO off on the capture interface (run.json records "
                          "the system either way; --pin sets the RPS masks in every run)")
    run.add_argument("--results", default="results", metavar="DIR",
                     help="write results to DIR/<UTC time>/ (default: %(default)s)")
    run.add_argument("--settle", default=f"{TrialSetup.settle_s:g}", metavar="S",
                     help="wait after sending for queues to drain before reading the counters (default: %(default)s)")
    run.add_argument("--no-report", action="store_true",
                     help="do not write the report (tables, figures, report.html) into the results directory "
                          "at the end; `capbench report DIR` writes it later")

    tb = sub.add_parser("testbed", help="build, list or remove veth test beds",
                        description=TESTBED_HELP, formatter_class=_formatter, allow_abbrev=False)
    tbsub = tb.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    tbsub.required = True
    up = tbsub.add_parser("up", help="build a test bed and keep it until `down`")
    up.add_argument("--rx-cpu", type=int, default=None, metavar="N",
                    help="CPU for the capture veth's receive work (RPS); default: no steering")
    up.add_argument("--backlog", type=int, metavar="N", help=BACKLOG_HELP + " until `down`")
    add_rx_mode_args(up)
    down = tbsub.add_parser("down", help="remove test bed ID, or all that no running capbench owns")
    down.add_argument("id", nargs="?", metavar="ID", help="the 6 hex digits of a test bed (see status)")
    down.add_argument("--force", action="store_true",
                      help="remove test bed ID even while a running capbench uses it (its trials then fail)")
    tbsub.add_parser("status", help="list test beds")

    for name, (_prog, text) in PASSTHROUGH.items():
        # Dispatched before argparse (see main); listed here for `capbench --help`.
        sub.add_parser(name, help=text + " (see `capbench " + name + " --help`)", add_help=False)

    sub.add_parser("backends", help="list the capture backends and whether they work here")

    rep = sub.add_parser("report", help="print the tables of a finished run and write its report "
                                        "(tables, figures, report.html) into DIR/report/",
                         description=REPORT_HELP, formatter_class=_formatter, allow_abbrev=False)
    rep.add_argument("dir", metavar="DIR", help="a results directory written by `capbench run`")
    rep.add_argument("--out", metavar="OUT", help="write the report into OUT instead of DIR/report/")

    cmp = sub.add_parser("compare", help="what changed between two runs, beyond the run-to-run noise",
                         description=COMPARE_HELP, formatter_class=_formatter, allow_abbrev=False)
    cmp.add_argument("a", metavar="A", help="the results directory to compare against (the baseline)")
    cmp.add_argument("b", metavar="B", help="the results directory of the run to judge")
    cmp.add_argument("--threshold", type=_percent, metavar="PCT",
                     help="where a measurement was not repeated in both runs, judge a change larger than PCT %% of "
                          "A's value (default: such changes are not judged: there is no noise estimate)")
    cmp.add_argument("--fail-on-regression", type=_percent, metavar="PCT",
                     help="exit status 1 when a judged change (beyond the noise) of the captured rate, loss, app or "
                          "kernel load, or a search's answer, is worse by more than PCT %%")
    cmp.add_argument("--out", metavar="DIR",
                     help="write compare.{txt,md,png,svg,html} to DIR (default: B/report/compare-<name of A>/)")
    return p


# --- run ---------------------------------------------------------------------


MATRIX_FLAGS = ("method", "backends", "sizes", "link", "rate", "duration", "trial", "precision", "loss_tolerance",
                "steps", "pause", "engine", "pin", "gen_cpu", "rx_cpu", "cap_cpu", "app_load", "procs", "ring",
                "repeat", "backend_args", "proc_cpus", "groups", "group_size", "group_gap")
# The placement of the CPU flags when none is given: the seed's "#1" on two cores.
DEFAULT_CPUS = (0, 1, 1)


def _list(text: str, flag: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"cannot read {flag} {text!r}: give values separated by commas")
    if len(set(items)) != len(items):
        raise UsageError(f"a value is listed twice in {flag} {text}")
    return items


def campaign_from_args(args: argparse.Namespace) -> campaign.Campaign:
    """The campaign the flags describe, checked by the same code as a campaign file's."""
    top: dict = {"name": "capbench run"}
    for flag, key in (("method", "methods"), ("backends", "backends"), ("app_load", "app_load"),
                      ("procs", "procs"), ("ring", "ring"), ("pin", "pin")):
        value = getattr(args, flag)
        if value is not None:
            top[key] = _list(value, "--" + flag.replace("_", "-"))
    if "procs" in top:
        try:
            top["procs"] = [int(p) for p in top["procs"]]
        except ValueError:
            raise UsageError(f"cannot read --procs {args.procs!r}: give whole numbers, e.g. 1,2,4") from None
    if args.backend_args:
        top["backend_args"] = {}
        for item in args.backend_args:
            backend, eq, opts = item.partition("=")
            if not eq or not backend.strip():
                raise UsageError(f"cannot read --backend-args {item!r}: give BACKEND=OPTIONS, e.g. "
                                 f"'fanout=--workers 2'")
            if backend.strip() in top["backend_args"]:
                raise UsageError(f"--backend-args gives {backend.strip()} twice: put all its options in one")
            top["backend_args"][backend.strip()] = opts
    if args.proc_cpus is not None:
        try:
            top["proc_cpus"] = [int(x) for x in _list(args.proc_cpus, "--proc-cpus")]
        except ValueError:
            raise UsageError(f"cannot read --proc-cpus {args.proc_cpus!r}: give CPU numbers, e.g. 1,0") from None
    for flag in ("sizes", "link", "rate", "duration", "trial", "pause", "engine", "precision", "loss_tolerance",
                 "steps", "repeat", "groups", "group_size", "group_gap"):
        if getattr(args, flag) is not None:
            top[flag] = getattr(args, flag)
    cpus = (args.gen_cpu, args.rx_cpu, args.cap_cpu)
    for flag, value in zip(("--gen-cpu", "--rx-cpu", "--cap-cpu"), cpus):
        if value is not None and value < 0:
            raise UsageError(f"{flag} must be a CPU number (0, 1, ...)")
    custom = None
    if any(v is not None for v in cpus):
        if args.pin:
            raise UsageError("give either --pin or --gen-cpu/--rx-cpu/--cap-cpu, not both")
        custom = tuple(d if v is None else v for v, d in zip(cpus, DEFAULT_CPUS))
        top["pin"] = [campaign.CUSTOM_PIN]
    return campaign.build(top, [], backends_known=declared.backend_names(), custom_cpus=custom,
                          name_of=lambda key: {"methods": "--method"}.get(
                              key, "--" + key.replace("_", "-")))


def resumable_run(d: Path) -> dict:
    """run.json of a run `--resume` can continue; one UsageError saying why not otherwise."""
    from capbench.campaign import results  # noqa: PLC0415

    try:
        meta = read_run(d)
    except CapbenchError as e:
        raise UsageError(f"cannot resume {d}: {e}") from None
    if not isinstance(meta, dict) or not ("command" in meta or "campaign_toml" in meta):
        raise UsageError(f"cannot resume {d}: its run.json says neither the command nor the campaign that made "
                         f"it, so it is not a run of `capbench run`")
    if meta.get("schema") != results.RUN_SCHEMA:
        raise UsageError(f"cannot resume {d}: its results have schema {meta.get('schema')!r} and this capbench "
                         f"writes {results.RUN_SCHEMA}: start a new run (`capbench report` still reads it)")
    unkeyed = sum(1 for t in results.scan_trials(d).trials if not getattr(t, "step", ""))
    if unkeyed:
        raise UsageError(f"cannot resume {d}: {unkeyed} of its trials name no campaign step (written by an "
                         f"earlier capbench), so what is done cannot be told: start a new run")
    return meta


def _campaign_of(args: argparse.Namespace) -> tuple[campaign.Campaign, str | None, Path | None]:
    """(the campaign, its TOML text if from a file, the directory to resume)."""
    given = [f for f in MATRIX_FLAGS if getattr(args, f) is not None]
    for flag, what in (("campaign", "a campaign file (see campaigns/)"),
                       ("resume", "the results directory of the run to continue")):
        if getattr(args, flag) is not None and not getattr(args, flag).strip():
            raise UsageError(f"--{flag} is empty: give {what}")
    if args.resume is not None:
        if given or args.campaign:
            raise UsageError("--resume continues a run with the settings it started with: give no other "
                             "settings")
        d = Path(args.resume)
        meta = resumable_run(d)
        if meta.get("status") == "complete":
            raise UsageError(f"{d} is complete: nothing to resume (run.json says so)")
        if "campaign_toml" in meta:
            return (campaign.loads(meta["campaign_toml"], d / "campaign.toml",
                                   backends_known=declared.backend_names()), None, d)
        try:
            old = build_parser().parse_args([a for a in meta.get("command", [])[1:]])
        except (UsageError, SystemExit):  # SystemExit: argparse's --help or --version in it
            old = None
        if old is None or old.command != "run" or old.resume:
            raise UsageError(f"{d}/run.json does not hold the `capbench run` command that made it")
        return campaign_from_args(old), None, d
    if args.campaign is not None:
        if given:
            raise UsageError(f"--campaign {args.campaign} says what to run: give it no {', '.join('--' + f.replace('_', '-') for f in given)}")
        text = campaign.read_text(args.campaign)
        return campaign.loads(text, Path(args.campaign), backends_known=declared.backend_names()), text, None
    return campaign_from_args(args), None, None


def rx_mode_of(args: argparse.Namespace, resume: Path | None) -> tuple[str, str]:
    """The receive model of a run (checked), a resumed run's own from its run.json."""
    if resume is not None:
        bed = (read_run(resume) or {}).get("testbed") or {}
        mode, sched = bed.get("rx_mode", "rps"), bed.get("napi_sched") or rxmode.DEFAULT_NAPI_SCHED
    else:
        mode, sched = args.rx_mode, args.napi_sched
    rxmode.check_mode(mode)
    sched = rxmode.NapiSched.parse(sched).text
    rxmode.check_available(mode)
    return mode, sched


def cmd_run(args: argparse.Namespace) -> int:
    binaries = find_binaries()  # first: a campaign is read with the backends and engines they declare
    c, toml_text, resume = _campaign_of(args)
    backlog = None if args.backlog is None else host_sysctl.check_backlog(args.backlog)
    settle_s = parse_duration(args.settle, what="--settle", allow_zero=True)
    preflight.require_root("capbench run")
    preflight.require_ip()
    preflight.check_engine(c.engine)
    preflight.check_profiles(c, str(binaries.gen))
    preflight.check_backend_args(c, str(binaries.cap))
    if c.custom_cpus is not None:
        gen, rx, cap = c.custom_cpus
        preflight.check_cpus(gen_cpu=gen, rx_cpu=rx, cap_cpu=cap)
    for proc_cpu in c.proc_cpus or ():
        preflight.check_cpus(proc_cpus=proc_cpu)
    rx_mode, napi_sched = rx_mode_of(args, resume)
    opts = runner.RunOptions(results=args.results, settle_s=settle_s, backlog=backlog, report=not args.no_report,
                             command=["capbench", *sys.argv[1:]], campaign_source=toml_text, tune=args.tune,
                             rx_mode=rx_mode, napi_sched=napi_sched)
    return runner.execute(c, opts, binaries, resume=resume)


# --- testbed -----------------------------------------------------------------


def cmd_testbed(args: argparse.Namespace) -> int:
    if getattr(args, "backlog", None) is not None:
        host_sysctl.check_backlog(args.backlog)
    preflight.require_root(f"capbench testbed {args.action}")
    preflight.require_ip()
    if args.action == "up":
        if args.rx_cpu is not None:
            preflight.check_cpus(rx_cpu=args.rx_cpu)
        rx_mode, napi_sched = rx_mode_of(args, None)
        with testbed.sigterm_raises():
            # The owner is this short-lived process: the test bed stays until `testbed down`.
            tb = testbed.create(args.rx_cpu, purpose="testbed up", backlog=args.backlog, rx_mode=rx_mode,
                                napi_sched=napi_sched)
        print(f"test bed {tb.id}")
        print(f"  generator side: namespace {tb.gen_ns}  interface {tb.gen_if}  MAC {tb.gen_mac}")
        print(f"  capture side:   namespace {tb.cap_ns}  interface {tb.cap_if}  MAC {tb.cap_mac}")
        print(f"  capbench-gen sends to {tb.dst_mac} (no interface has it: the capture side sees other-host frames)")
        if tb.rx_mode == "napi":
            where = "the CPU the scheduler picks (no --rx-cpu)" if tb.rx_cpu is None else f"CPU {tb.rx_cpu}"
            print(f"  kernel receive work on the capture side: a NAPI thread, to go on {where} with {tb.napi_sched}")
            print(f"  note: the kernel starts the thread napi/{tb.cap_if}-N when an XDP program is attached; "
                  f"`capbench run` places it per trial; by hand: `echo 1 > /sys/class/net/{tb.cap_if}/threaded` "
                  f"in {tb.cap_ns}, then `taskset -pc CPU PID` and `chrt -f -p PRIO PID`")
        else:
            rps = "not steered (the sending CPU)" if tb.rx_cpu is None else f"CPU {tb.rx_cpu} (RPS)"
            print(f"  kernel receive work on the capture side: {rps}")
        if args.backlog is not None:
            print(f"  net.core.netdev_max_backlog: at least {args.backlog} until `down`")
        print(f"  note: frames of the xdp engine reach {tb.cap_if} only while an XDP program is attached")
        print(f"  there (veth needs it for NAPI): run `capbench-xdpcount --iface {tb.cap_if}` in {tb.cap_ns},")
        own_xdp = _from_declarations(lambda: " or ".join(_own_xdp_names()), "NAME of one with its own XDP program")
        print(f"  capture with --backend {own_xdp} (they attach their own), or send with --engine afpacket")
        print(f"remove it with: capbench testbed down {tb.id}")
        return 0
    if args.action == "down":
        if args.force and args.id is None:
            raise UsageError("--force needs the ID of the test bed to remove: see `capbench testbed status`")
        if args.id is not None:
            if not re.fullmatch(r"[0-9a-f]{6}", args.id):
                raise UsageError(f"{args.id!r} is not a test bed id (6 hex digits): see `capbench testbed status`")
            if not args.force:
                st = testbed.read_state(args.id)
                if st is not None and testbed.owner_alive(st):
                    raise UsageError(f"test bed {args.id} is in use by pid {st.get('owner_pid')} "
                                     f"({st.get('purpose', 'run')}): let that run end (it removes its test bed), "
                                     f"or add --force to remove it under the run")
            if not testbed.destroy(args.id):
                raise UsageError(f"no test bed {args.id}: see `capbench testbed status`")
            print(f"removed test bed {args.id}")
            return 0
        removed, kept = testbed.destroy_stale()
        for tb_id in removed:
            print(f"removed test bed {tb_id}")
        for info in kept:
            print(f"kept test bed {info.id}: in use by pid {info.state['owner_pid']}")
        if not removed and not kept:
            print("no test beds")
        return 0
    infos = testbed.list_testbeds()
    if not infos:
        print("no test beds")
        return 0
    for info in infos:
        st = info.state or {}
        if info.in_use:
            owner = f"in use by pid {st.get('owner_pid')} ({st.get('purpose', 'run')})"
        elif info.state is None:
            owner = "leftover without state file (`down` removes it)"
        else:
            owner = f"{st.get('purpose', 'run')}, no running owner (`down` removes it)"
        if "gen_if" in st:
            rx = "not steered" if st.get("rx_cpu") is None else st["rx_cpu"]
            where = f"{st['gen_ns']}/{st['gen_if']} -> {st['cap_ns']}/{st['cap_if']}, rx CPU {rx}"
        else:
            where = " ".join(info.namespaces) or "(namespaces gone)"
        print(f"{info.id}  {where}  created {st.get('created_at', '?')}  {owner}")
    for path, entry in owners.HostSettings().held().items():
        beds = ", ".join(sorted(entry["holders"]))
        print(f"{entry.get('key') or path} = {entry['set']}, held by test bed(s) {beds}: "
              f"back to {entry['original']} when the last of them is removed")
    return 0


# --- gen / capture pass-through ------------------------------------------------


def _split_passthrough(argv: list[str]) -> tuple[str | None, bool, list[str]]:
    """(netns, wants help, the rest unchanged) from the arguments after `gen`/`capture`."""
    ns, want_help, rest = None, False, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i + 1:])
            break
        if a == "--netns":
            if i + 1 >= len(argv):
                raise UsageError("--netns needs a namespace name (see `ip netns list`)")
            ns = argv[i + 1]
            i += 2
            continue
        if a.startswith("--netns="):
            ns = a.split("=", 1)[1]
        elif a in ("-h", "--help"):
            want_help = True
        else:
            rest.append(a)
        i += 1
    return ns, want_help, rest


def cmd_passthrough(cmd: str, argv: list[str]) -> int:
    prog_name = PASSTHROUGH[cmd][0]
    ns, want_help, rest = _split_passthrough(argv)
    if want_help:
        extra, examples = PASSTHROUGH_EXAMPLES[cmd]
        extra = extra.format(own_xdp=_from_declarations(lambda: " or ".join(_own_xdp_names()),
                                                     "NAME (a backend with its own XDP program)"))
        sys.stdout.write(PASSTHROUGH_HELP.format(cmd=cmd, prog=prog_name, extra=extra, examples=examples))
        sys.stdout.flush()
        try:
            prog = find_program(prog_name)
        except UsageError as e:
            print(f"  (not available: {e})")
            return 0
        try:
            subprocess.run([str(prog), "--help"], stdin=subprocess.DEVNULL, timeout=10)
        except subprocess.TimeoutExpired:
            print(f"  ({prog} --help did not answer)")
        return 0
    procs, rest = _split_procs(cmd, rest)
    prog = find_program(prog_name)
    if ns is not None:
        preflight.require_root(f"capbench {cmd} --netns")
        if ns not in netns.list_netns():
            raise UsageError(f"no network namespace {ns!r}: see `ip netns list` or `capbench testbed status`")
    argvs = [netns.exec_argv(ns, [str(prog), *rest, *extra]) for extra in procs]
    if len(argvs) > 1:
        _check_each(argvs)
    return run_forwarding_signals(*argvs, on_summary=capture_loss_line if cmd == "capture" else None)


def capture_loss_line(summary: dict) -> str | None:
    """The loss of a capbench-cap summary in words, tail included or not: capbench-cap counts the
    frames lost at a stream's end only when the stream's trailer frames (capbench-gen --trailer)
    arrived. None for a summary without sequence numbers (xdp, --app-load none)."""
    if "tail_loss_counted" not in summary:
        return None
    lost, streams = int(summary.get("lost", 0)), int(summary.get("streams", 0))
    trailer = summary.get("trailer") or {}
    with_trailer = int(trailer.get("streams", 0))
    if summary["tail_loss_counted"]:
        return (f"lost {lost:,} of the {int(trailer.get('sent', 0)):,} frames sent, tail included "
                f"(the generator's trailer frames carry its sent count)")
    if not with_trailer:
        return f"lost {lost:,}; no trailer arrived: tail loss is not counted"
    return (f"lost {lost:,}; no trailer arrived for {streams - with_trailer} of {streams} streams: "
            f"their tail loss is not counted")


def _split_procs(cmd: str, argv: list[str]) -> tuple[list[list[str]], list[str]]:
    """`capture --procs N [--proc-cpus LIST]`: the extra options of each of N counters (one: [[]])."""
    procs, cpus, rest = 1, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if cmd == "capture" and a in ("--procs", "--proc-cpus") and i + 1 >= len(argv):
            raise UsageError(f"{a} needs a value: --procs N (1 to 64), --proc-cpus LIST (e.g. 1,0,1)")
        if cmd == "capture" and a in ("--procs", "--proc-cpus"):
            if a == "--procs":
                try:
                    procs = int(argv[i + 1])
                except ValueError:
                    procs = 0
                if not 1 <= procs <= 64:
                    raise UsageError(f"--procs {argv[i + 1]}: give 1 to 64 capture processes")
            else:
                try:
                    cpus = [int(c) for c in argv[i + 1].split(",")]
                except ValueError:
                    raise UsageError(f"--proc-cpus {argv[i + 1]}: give CPU numbers, e.g. 1,0,1") from None
            i += 2
            continue
        rest.append(a)
        i += 1
    if cpus is not None and len(cpus) != procs:
        raise UsageError(f"--proc-cpus names {len(cpus)} CPUs for --procs {procs}: give one per process")
    for c in cpus or ():
        preflight.check_cpus(proc_cpus=c)
    backend = option_value(rest, "--backend", "-b")
    if procs > 1 and backend in _own_xdp_names():
        raise UsageError(f"--procs {procs} with --backend {backend}: an interface holds one XDP program, so one "
                         f"{backend} process at a time: use --procs 1, or a packet-socket backend "
                         f"({', '.join(declared.names_where(lambda b: not b.own_xdp))})")
    if procs > 1 and option_value(rest, "--write", "-w") is not None:
        raise UsageError(f"--write with --procs {procs} would have every process write the same file: "
                         f"capture with one process to write it")
    return [["--cpu", str(c)] for c in cpus] if cpus else [[] for _ in range(procs)], rest


def _check_each(argvs: list[list[str]]) -> None:
    """Several counters: let each judge its options (`--check`, which opens nothing) before any
    starts, so a bad option is one line, not one per process, and no process is left
    capturing while another has failed."""
    for argv in dict.fromkeys(tuple(a) for a in argvs):
        why = preflight.program_refusal([*argv, "--check"])
        if why is not None:
            raise UsageError(why)


def run_forwarding_signals(*argvs: list[str], on_summary=None) -> int:
    """Run programs with our stdin/stderr, each in its own process group, forwarding SIGINT
    and SIGTERM to them once each, so a Ctrl-C reaches each exactly once and it can print its
    summary; returns the highest exit status (128 + signal if a signal killed one).

    One program writes to our stdout; several write through a pipe each, and every JSON line
    they print gets a "proc" field (1, 2, ...) saying whose it is. With `on_summary`, each
    program's lines pass through a pipe too, and the line on_summary(summary) makes of its
    summary line goes to stderr ("capbench: ...", with "proc N: " when several)."""
    import json
    import threading

    several = len(argvs) > 1
    piped = several or on_summary is not None
    procs = []
    try:
        for argv in argvs:
            procs.append(subprocess.Popen(argv, process_group=0, text=True,
                                          stdout=subprocess.PIPE if piped else None))
    except OSError as e:
        for p in procs:
            p.kill()
        raise RunError(f"cannot start {argvs[0][0]}: {e.strerror}") from None
    lock = threading.Lock()

    def tag(n: int, p: subprocess.Popen) -> None:
        for line in p.stdout:
            said = None
            try:
                obj = json.loads(line)
                if several:
                    line = json.dumps({"proc": n, **obj}, separators=(",", ":")) + "\n"
                if on_summary is not None and isinstance(obj, dict) and obj.get("type") == "summary":
                    said = on_summary(obj)
            except ValueError:
                pass
            with lock:
                sys.stdout.write(line)
                sys.stdout.flush()
                if said:
                    note(f"capbench: {f'proc {n}: ' if several else ''}{said}")

    readers = [threading.Thread(target=tag, args=(n, p), daemon=True) for n, p in enumerate(procs, 1)
               if piped]
    for t in readers:
        t.start()

    def forward(signum, frame):  # noqa: ARG001
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signum)
                except ProcessLookupError:
                    pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rcs = [p.wait() for p in procs]
        for t in readers:
            t.join(timeout=5)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return max(128 - rc if rc < 0 else rc for rc in rcs)


# --- backends, report ----------------------------------------------------------


def cmd_backends(args: argparse.Namespace) -> int:
    """Every backend capbench-cap declares, and whether it works here (a capbench-cap that is
    missing or cannot describe itself is one line: the backends are what it says they are)."""
    for name in declared.backend_names():
        ok, why = preflight.backend_status(name)
        print(f"{name:<8} {'works here' if ok else 'does not work here'}: {why}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from capbench.report import writer  # matplotlib loads only for the commands that draw

    report = writer.write_report(args.dir, args.out)
    meta = report.run.meta
    if meta:
        note(
            f"run of {meta.get('started_at', '?')} on {meta.get('cpu_model', '?')}, kernel "
            f"{meta.get('kernel', {}).get('release', '?')}, capbench {meta.get('capbench_version', '?')} "
            f"({str(meta.get('git_commit', '?'))[:12]}), status {meta.get('status', '?')}")
    for text in report.notes:
        note(f"capbench: {text}")
    tables.print_tables([t.result for t in report.run.trials], outcomes=report.run.outcomes,
                        loss_tolerance_frames=report.run.loss_tolerance_frames)
    note(writer.outcome_line(report))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from capbench.report import compare, compare_out, load  # matplotlib loads only for the commands that draw

    a, b = load.load_run(args.a), load.load_run(args.b)
    for name, run in (("A", a), ("B", b)):
        for text in run.notes:
            note(f"capbench: {name}: {text}")
    result = compare.compare(a, b, threshold_pct=args.threshold)
    out = Path(args.out) if args.out else b.path / "report" / f"compare-{a.name}"
    try:
        files = compare_out.write(result, out)
    except OSError as e:
        raise UsageError(f"cannot write the comparison to {out}: {e.strerror}: choose another with --out DIR") from None
    console = Console() if sys.stdout.isatty() else Console(width=140)
    compare_out.terminal(result, console)
    note(f"comparison: {files.html}")
    if args.fail_on_regression is not None:
        worse = result.regressions(args.fail_on_regression)
        if worse:
            first = worse[0]
            note(f"capbench: {len(worse)} figures worse by more than {args.fail_on_regression:g} %, e.g. "
                 f"{first.metric.label} of {first.key.text()}: {compare_out.fmt_change(first)}")
            return 1
        if not result.judged:
            note("capbench: --fail-on-regression: nothing was judged (see above why), so no regression can be found")
    return 0


# --- main ------------------------------------------------------------------------


def _main(argv: list[str]) -> int:
    if argv and argv[0] in PASSTHROUGH:
        return cmd_passthrough(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    handler = {"run": cmd_run, "testbed": cmd_testbed, "backends": cmd_backends, "report": cmd_report,
               "compare": cmd_compare}
    return handler[args.command](args)


WORD_MAX = 200  # characters of one word (a path, a value) an error line shows


def error_line(e: BaseException) -> str:
    """The one line an error is shown as: its words on one line, each longer than WORD_MAX cut in
    the middle (a 5,000-character path or value stays a readable line), a control character
    echoed from the input (an argument or file holding ESC) written as its escape (\\x1b)."""
    line = " ".join(w if len(w) <= WORD_MAX else f"{w[:120]}...{w[-60:]} ({len(w):,} characters)"
                    for w in str(e).split())
    return "".join(c.encode("unicode_escape").decode("ascii") if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f else c
                   for c in line)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # SIGTERM raises Terminated from here on, before anything is made, so whatever a
        # command makes is undone by its `finally` blocks at any moment.
        with testbed.sigterm_raises():
            return _main(argv)
    except CapbenchError as e:
        print(f"capbench: {error_line(e)}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("capbench: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("capbench: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # `capbench ... | head`: the reader went away; nothing left to say.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
