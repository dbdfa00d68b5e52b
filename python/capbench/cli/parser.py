"""The argparse tree of `capbench` and its help texts (`gen` and `capture` are listed here and
forwarded before argparse sees them: capbench.cli.passthrough)."""

from __future__ import annotations

import argparse
import math
import textwrap

from capbench import __version__
from capbench.campaign import matrix as campaign
from capbench.cli.described import app_loads_help, engines_help, from_declarations, rings_help
from capbench.cli.passthrough import PASSTHROUGH
from capbench.declared import backend_names, engine_names
from capbench import errors
from capbench.errors import UsageError
from capbench.methods.measurer import MAX_ATTEMPTS
from capbench.methods import registry as methods
from capbench.remote import ssh_rules
from capbench.rates import LINKS_BPS, RFC2544_SIZES, SEED_SIZES
from capbench.report.keys import IDENTITY_TEXT
from capbench.testbed import rxmode
from capbench.trial import apps
from capbench.trial.measure import TrialSetup
from capbench.trial.witness import PROBE_S
from capbench.tune import search, tuning


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

Run `capbench COMMAND --help` for the options of each command. Without root,
grant the capabilities a command names (docs/capabilities.md).

Exit status: 0 success; 1 an error while running; 2 bad input (one line says
what to fix; nothing was started); `capbench run --help` explains a run's
others ({other_statuses}). `--json` (run, backends, compare) and the
programs' JSON Lines are for scripts: docs/json.md.
""".replace("{other_statuses}", ", ".join(s.text.replace(", ", " and ") for s in errors.EXIT_STATUSES
                                          if s not in (errors.MEASURED, errors.RUN_FAILED, errors.BAD_INPUT)))

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

Placement: --pin A:A puts the kernel's receive work (the cpumap ring's thread of
the default --rx-mode cpumap, the capture veth's NAPI thread with --rx-mode napi,
its RPS mask with --rx-mode rps) and the counter on one CPU, A:B on
two, auto leaves it to the scheduler; on a 2-core machine the generator runs on
CPU 0 and A:A (the default, the seed's "#1") uses CPU 1. --gen-cpu/--rx-cpu/--cap-cpu set the CPUs one by one
instead. The test bed is removed at the end, on errors and on Ctrl-C (which
prints what finished, exit status 130).

A trial is lossless (the generator held the offered load, nothing lost), lossy
(frames sent were not captured, whether or not the generator held the load),
or a lower bound (the generator fell short, nothing lost): not a capture result.
A trial the host disturbed (its loss could be the host's) is run again, up to
{attempts} runs in all, every run recorded; the method decides on the last.
Exit status:
{statuses}

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
  sudo capbench run --backends pcap,tcpdump,dumpcap       real capture programs beside the counter
  sudo capbench run --app 'td8M=tcpdump -i {iface} -B 8192 -w {out}' --backends tcpdump,td8M
  sudo capbench run --method rfc2544 --sizes 64,1518 --trial 10s
  sudo capbench run --method mlr --sizes 64
  sudo capbench run --campaign campaigns/seed2008-quick.toml
  sudo capbench run --resume results/2026-11-23T07-30-05Z
""".replace("{statuses}", "\n".join(errors.exit_status_lines())).replace("{attempts}", str(MAX_ATTEMPTS))

TUNE_HELP = """\
Searches the settings ("knobs") of a backend or capture program for the
configuration that captures best on this host: every combination of the knobs'
candidates, and the defaults. Successive halving: every configuration is
measured once with short trials, the better third again with longer ones, as
long as the budget allows; the best {finalists} and the defaults then race,
measured again round after round, a configuration that {test}
finds worse than the leader dropping out, until one is left or the budget is
spent. The goal: MLR's PDR (default) or NDR, or with --rate the loss at that
rate (ties go to the lower CPU time per packet).

It ends with a table ranked by the goal (median and spread over the
repetitions, CPU per packet, where the loss was by layer of the account), the
best configuration as a ready `capbench run` line, a campaign file of it and the
defaults (DIR/tune/best-BACKEND.toml) to confirm it, a figure of the goal
against each knob (DIR/tune/goal-by-knob-BACKEND.png), and, where a counter shows
it, what the best changed ("the rx ring lost 3.1 % at the defaults; rx-ring
16384 removed it") and, with --profile, where the CPU time went ("the counter
spent 41 % of its CPU in socket and ring copy at the defaults, 22 % with
afp-v3:block-size=4M"). Set-up, the final report and the measurements all come
out of --budget. Every trial is in DIR/trials.jsonl and every search's answer
in DIR/searches.jsonl, as a run's: `capbench report DIR` and `capbench compare`
read it; --resume DIR continues a tune that was stopped, repeating no trial.
For a capture program it also prints the program's command template with the
best values filled in. --max-app-cpu PCT rules out a configuration whose
application took more than PCT % of one CPU at the goal's load: it ranks after
the others, and its row says why.

examples:
  sudo capbench tune --backends afp-v3                           ring and rx-ring at 64 B, PDR, 20 min
  sudo capbench tune --backends afp-v3 --budget 15m --knobs ring
  sudo capbench tune --backends afp-v3 --rate 500kpps --budget 3m  the loss at 500 kpps
  sudo capbench tune --backends afp-v3 --rate 300kpps --candidates rx-ring=16,4096
  sudo capbench tune --backends afp-v3 --gen-iface eth1 --cap-iface eth2 --link 10g --knobs nic-ring,nic-rx-usecs
  sudo capbench tune --backends tcpdump --rate 300kpps --max-app-cpu 50     tcpdump's -B, its CPU under 50 %
  sudo capbench tune --apps-file mine.toml --backends mydump --rate 300kpps   the knobs mine.toml declares
  sudo capbench tune --backends pcap --rx-mode rps --knobs backlog            net.core.netdev_max_backlog
  sudo capbench tune --resume results/2026-11-28T08-00-00Z
""".replace("{finalists}", str(search.FINALISTS)).replace("{test}", search.SIGNIFICANCE)

TESTBED_HELP = """\
up      build two namespaces joined by a veth pair and keep them; prints their names
down    remove test bed ID (refused while a running capbench uses it, unless --force),
        with the programs and /tmp folders its run left if it was killed; without ID,
        remove every test bed no running capbench owns (those of `testbed up` and the
        leftovers of crashed runs), and end the programs and remove the folders of
        every capbench that was killed
status  list the test beds and who owns them

examples:
  sudo capbench testbed up --rx-cpu 1
  sudo ip netns exec capbench-1a2b3c-cap tcpdump -ni cb1a2b3cc
  sudo capbench testbed down 1a2b3c
"""

REPORT_HELP = """\
Reads only DIR/trials.jsonl, DIR/run.json, DIR/searches.jsonl (the methods'
answers) and, for a tune, DIR/tune/tune.json (its ranking, which the report then
leads with), prints the tables, and writes into DIR/report/: tables.txt,
tables.md, trials.csv, a PNG and an SVG of every figure the records hold the
data for, and report.html (one self-contained page).
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

Exit status: 0 when compared; 1 with --fail-on-regression when a figure got
worse by more than PCT %; 2 for bad input (a folder that holds no run).
"""

BACKLOG_HELP = ("raise net.core.netdev_max_backlog (each CPU's queue between RPS and the receive work; "
                "host-wide) to N packets, put back when the last run holding it ends")


def add_profile_args(parser: argparse.ArgumentParser, what_it_adds: str) -> None:
    """--profile and --profile-hz, as run and tune take them; `what_it_adds` ends the help."""
    parser.add_argument("--profile", action="store_true", default=None,
                        help="where the CPU time goes: sample every CPU with perf (cpu-clock, kernel and user "
                             "stacks) over each trial's load window (needs perf: linux-perf)" + what_it_adds)
    parser.add_argument("--profile-hz", type=int, metavar="N",
                        help=f"with --profile: samples per second on each CPU {_default('profile_hz')}")


def add_apps_file(parser: argparse.ArgumentParser, what_it_adds: str) -> None:
    """--apps-file (repeatable), as run, tune and backends take it; `what_it_adds` ends the help."""
    parser.add_argument("--apps-file", metavar="FILE.toml", action="append",
                        help="adapters for capture programs: how to start, stop and read each (docs/apps.md)"
                             + what_it_adds)


def add_port_args(parser: argparse.ArgumentParser) -> None:
    """The real interfaces of `capbench run` and `capbench tune` (testbed.ports)."""
    ports = parser.add_argument_group(
        "real interfaces", "instead of the veth test bed: two ports cabled together, or a port and a tap "
        "(docs/manual.md, \"On real hardware\"); a run on ports needs an explicit --rate (iperf) or --link (searches)")
    ports.add_argument("--gen-iface", metavar="IF", help="the port capbench-gen sends on")
    ports.add_argument("--cap-iface", metavar="IF", help="the port the capture listens on")
    ports.add_argument("--gen-netns", metavar="NS", help="the named network namespace of --gen-iface (`ip netns "
                       "list`; default: the one capbench runs in)")
    ports.add_argument("--cap-netns", metavar="NS", help="the named network namespace of --cap-iface (default: the "
                       "one capbench runs in)")
    ports.add_argument("--dst-mac", metavar="MAC", help="the destination of every frame (default: the MAC of "
                       "--cap-iface, never a broadcast)")
    ports.add_argument("--force-iface", action="store_true",
                       help="use a port (or a --topology interface) even when it carries a default route or an "
                            "SSH session")
    ports.add_argument("--nic-set", metavar="LIST",
                       help="change --cap-iface for the run and put it back after: ring sizes (rx=4096,tx=4096), "
                            "channels (combined=2, rx-channels=1) or coalescing (rx-usecs=50,adaptive-rx=off)")


def add_rx_mode_args(parser: argparse.ArgumentParser) -> None:
    """--rx-mode and --napi-sched: the test bed's receive model (capbench.testbed.rxmode)."""
    # No argparse default: a run on real interfaces or hosts refuses the options when given
    # (cli.run), and cli.testbed.rx_mode_of applies rxmode's defaults.
    modes = "; ".join(f"{name}: {text}" for name, text in rxmode.RX_MODES.items())
    parser.add_argument("--rx-mode", metavar="MODE",
                        help=f"where the capture side's receive work runs on capbench's veth test bed ({modes}; "
                             f"default: {rxmode.DEFAULT_RX_MODE}); on your own ports only rps, which steers each "
                             f"receive queue's RPS to the receive CPU besides its IRQ")
    parser.add_argument("--napi-sched", metavar="POLICY",
                        help="the receive thread's scheduling (--rx-mode napi: the NAPI thread; cpumap: the ring's "
                             "thread), `other` (the normal scheduler, taking turns with a counter on its CPU) or "
                             "`fifo:N` (real-time priority N, as a NIC's interrupt work preempts user space; default: "
                             f"{rxmode.DEFAULT_NAPI_SCHED} with napi, {rxmode.DEFAULT_RING_SCHED} with cpumap)")


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


def _default(key: str) -> str:
    """`(default: X)` of a `capbench run` flag: its campaign key's default (campaign.matrix declares
    every one), as argparse's help text writes it."""
    return f"(default: {campaign.default_text(key)})".replace("%", "%%")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30)


def _backend_args_flag(p: argparse.ArgumentParser) -> None:
    """--backend-args, as `capbench run` and `capbench tune` take it."""
    p.add_argument("--backend-args", metavar="BACKEND=OPTIONS", action="append",
                   help="a backend's own capbench-cap options for every trial of it, e.g. "
                        "--backend-args 'fanout=--workers 2 --fanout-mode lb' or "
                        "'dpdk=--dpdk-driver af_packet' (repeat for several backends; "
                        "`capbench capture --help` lists them)")


def build_parser() -> Parser:
    p = Parser(prog="capbench", description=MAIN_HELP, formatter_class=_formatter, allow_abbrev=False)

    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    run = sub.add_parser("run", help="measure capture throughput (the seed's iperf-like table)",
                         description=RUN_HELP, formatter_class=_formatter, allow_abbrev=False)
    run.add_argument("--method", metavar="LIST",
                     help=f"methods, comma-separated {_default('methods')}, of: "
                          + "; ".join(f"{m.name}: {m.help}" for m in methods.REGISTRY.values()).replace("%", "%%"))
    run.add_argument("--backends", metavar="LIST",
                     help=f"capture backends, comma-separated, of: "
                          f"{from_declarations(lambda: ', '.join(backend_names()))}; or capture programs "
                          f"under test: {', '.join(apps.builtin())} and those of --app and --apps-file "
                          f"{_default('backends')}")
    run.add_argument("--sensors", metavar="LIST",
                     help="several sensors on one stream (seed 004's tap), comma-separated: the backend or "
                          "capture program of each, e.g. pcap,afp-v3,afxdp; every trial sends one stream that "
                          "each sensor captures in its own namespace, and each gets its own loss account "
                          "(instead of --backends)")
    run.add_argument("--tap-cpu", type=int, metavar="CPU",
                     help="with --sensors: the CPU of the tap's receive work (default: the generator's, in its "
                          "softirq)")
    add_profile_args(run, "; each record gets, per role (generator, receive, counter), its NET_RX, kernel, user and "
                          "idle shares, its groups of receive work, top functions and CPU time per captured packet, "
                          "and the report a stacked bar per trial and a flame graph")
    run.add_argument("--app", metavar="NAME=COMMAND", action="append",
                     help="a capture program under test, measured as backend NAME (add NAME to --backends): "
                          "its command template with {iface} (required), {out} (a capture file capbench "
                          "decodes and removes), {outdir}, {cpu}, {duration}; NAME or the command's program "
                          "picks the adapter that says how to stop it and read its counts, e.g. "
                          "--app 'tcpdump-B=tcpdump -i {iface} -B 65536 -w {out}' (repeat for several; "
                          "docs/apps.md)")
    add_port_args(run)
    run.add_argument("--topology", metavar="FILE.toml",
                     help="several hosts: the generator and the sensors of FILE (docs/topology.md), reached with "
                          "ssh; each sensor's backend is the file's (instead of --backends/--sensors)")
    run.add_argument(ssh_rules.INSECURE_FLAG, action="store_true",
                     help="with --topology: let ssh use settings that run commands on this machine (ProxyCommand, "
                          "LocalCommand, KnownHostsCommand, Match exec ...) or log in without checking the host's "
                          "key (StrictHostKeyChecking=no or accept-new); run.json records it (docs/topology.md)")
    add_apps_file(run, ": their names become backends")
    run.add_argument("--sizes", metavar="LIST",
                     help="one trial per item, comma-separated: a frame length in bytes incl. FCS, `seed` "
                          f"(the seed's {len(SEED_SIZES)}: {SEED_SIZES[0]},{SEED_SIZES[1]},...,{SEED_SIZES[-1]}), "
                          f"`rfc2544` ({','.join(map(str, RFC2544_SIZES))}), a range MIN..MAX/STEP (64..1518/64; "
                          "64..1518/1 is every length; MAX is always one), or a "
                          "mix of lengths in one trial: imix:seed (57/7/16/20 %% of 64/570/594/1518 B), "
                          "imix:simple, random:MIN-MAX, dist:FILE.csv (length,weight rows), trace:FILE.pcap "
                          f"{_default('sizes')}. An item given twice runs once: use --repeat N for repetitions")
    run.add_argument("--link", help=f"emulated link speed: {', '.join(LINKS_BPS)} {_default('link')}")
    run.add_argument("--rate",
                     help="offered load of the iperf method: 100%% (of --link), 1.2Mpps, 800kpps, 5000pps, 950m "
                          f"or 1g (bits/s on the wire, 20 B preamble+gap included), max (unpaced) {_default('rate')}")
    run.add_argument("--duration", metavar="LIST",
                     help=f"sending time of each iperf trial in seconds (5, 250ms, 2m); several, comma-separated, "
                          f"are an axis: one trial at each {_default('duration')}")
    run.add_argument("--count", metavar="LIST",
                     help="instead of --duration: each iperf trial sends exactly N frames at --rate; several, "
                          "comma-separated, are an axis (default: by --duration)")
    run.add_argument("--trial", metavar="S",
                     help=f"trial length of the searches and sweeps: {methods.trial_help()}")
    run.add_argument("--precision", type=float, metavar="PCT",
                     help=f"rfc2544 and mlr: stop when the answer is known to PCT %% of the wire rate "
                          f"{_default('precision')}")
    run.add_argument("--max-rate", metavar="RATE",
                     help=f"{', '.join(m.name for m in methods.REGISTRY.values() if m.takes_max_load)}: the "
                          "highest load a search tries (MLRsearch's Max Load), as --rate takes it (50%%, 500kpps): "
                          f"to search below the wire rate {_default('max_rate')}")
    run.add_argument("--loss-tolerance", type=int, metavar="N",
                     help=f"rfc2544 and back2back: frames a trial may lose and still pass {_default('loss_tolerance')}")
    run.add_argument("--steps", type=int, metavar="N",
                     help=f"sweep: offered rates up to the wire rate {_default('steps')}")
    run.add_argument("--pause", metavar="S",
                     help=f"searches, sweeps, bursts: idle time before each trial, against saturation "
                          f"{_default('pause')}")
    run.add_argument("--engine", choices=from_declarations(engine_names, None),
                     help=f"generator engine: {from_declarations(engines_help)} {_default('engine')}")
    run.add_argument("--pin", metavar="LIST",
                     help=f"placements, comma-separated: A:A (kernel receive work and counter on one CPU), A:B "
                          f"(on two), auto (the scheduler decides) {_default('pin')}")
    run.add_argument("--gen-cpu", type=int, metavar="N", help="CPU of the generator (instead of --pin)")
    run.add_argument("--rx-cpu", type=int, metavar="N",
                     help="CPU that does the kernel's receive work (the cpumap ring's thread of the default "
                          "--rx-mode cpumap, the capture veth's NAPI thread with napi, its RPS mask with rps) "
                          "(instead of --pin)")
    run.add_argument("--cap-cpu", type=int, metavar="N", help="CPU of the counter (instead of --pin)")
    run.add_argument("--app-load", metavar="LIST",
                     help=f"work the counter does per packet, comma-separated: {from_declarations(app_loads_help)} "
                          f"{_default('app_load')}")
    run.add_argument("--procs", metavar="LIST",
                     help=f"capture processes on the interface, each seeing every frame, comma-separated "
                          f"{_default('procs')}")
    _backend_args_flag(run)
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
                          f"as {from_declarations(rings_help)} (default: each backend's own)")
    run.add_argument("--vary", action="append", metavar="KNOB=LIST",
                     help="vary a knob as an axis (repeat for several; the steps take every combination): "
                          "ring, rx-ring, pin or a backend's tunable option, e.g. --vary 'afp-v3:block-size=1M,4M' "
                          "(`capbench backends` lists each backend's knobs; a knob is set once: not with "
                          "--ring, or the option in --backend-args)")
    run.add_argument("--rx-ring", metavar="LIST",
                     help=f"--rx-mode cpumap: the receive ring's depth in frames, comma-separated, 1 to "
                          f"{rxmode.RX_RING_MAX} (a NIC's holds 512-4096; default: {rxmode.DEFAULT_RX_RING})")
    run.add_argument("--repeat", type=int, metavar="N", help=f"run every step N times {_default('repeat')}")
    run.add_argument("--campaign", metavar="FILE", help="run the campaign of a TOML file (docs/campaigns.md: every key, its type and "
                          "default; examples in campaigns/)")
    run.add_argument("--resume", metavar="DIR", help="continue the interrupted run in DIR")
    add_rx_mode_args(run)
    run.add_argument("--backlog", type=int, metavar="N",
                     help=BACKLOG_HELP + " (default: leave it as it is)")
    run.add_argument("--tune", action="store_true",
                     help="set what helps a capture benchmark for the run and put it back afterwards: the "
                          "performance CPU governor (where exposed), a backlog of 10,000 packets, "
                          "net.core.rmem_max 64 MiB, and GRO off on the capture interface (run.json records "
                          "the system either way; --pin places the receive work in every run)")
    run.add_argument("--results", default="results", metavar="DIR",
                     help="write results to DIR/<UTC time>/ (default: %(default)s)")
    run.add_argument("--settle", default=f"{TrialSetup.settle_s:g}", metavar="S",
                     help="wait after sending for queues to drain before reading the counters (default: %(default)s)")
    run.add_argument("--probe", default=f"{PROBE_S:g}", metavar="S",
                     help="before the first trial, watch the run's CPUs for S seconds with nothing loaded: how "
                          "often and how long the host stops them, and the rate above which such a stop overflows "
                          "the receive ring (run.json host_probe, one line; longer on a host that stops rarely, 0: "
                          "none; default: %(default)s)")
    run.add_argument("--json", action="store_true",
                     help="JSON Lines on stdout for scripts (docs/json.md): a \"trial\" line per trial (its record), an "
                          "\"answer\" line per method answer, an \"end\" line with the results folder and the exit "
                          "status; the tables and progress lines go to stderr")
    run.add_argument("--quiet", action="store_true",
                     help="no live line while a trial sends (it is shown only when stdout and stderr are a terminal)")
    run.add_argument("--no-report", action="store_true",
                     help="do not write the report (tables, figures, report.html) into the results directory "
                          "at the end; `capbench report DIR` writes it later")

    tune = sub.add_parser("tune", help="search a backend's settings for those that capture best here",
                          description=TUNE_HELP, formatter_class=_formatter, allow_abbrev=False)
    tune.add_argument("--backends", metavar="LIST",
                      help="the backends or capture programs to tune, comma-separated (several: each gets its share "
                           "of the budget, and the output compares their bests)")
    tune.add_argument("--sizes", metavar="SIZE",
                      help=f"the one frame length (or, with --rate, a profile such as imix:seed) to tune at "
                           f"(default: {tuning.DEFAULT_SIZE})")
    tune.add_argument("--replay", metavar="FILE.pcap", help="with --rate: send the frames of a capture file "
                                                             "(--sizes trace:FILE.pcap)")
    tune.add_argument("--budget", default=tuning.DEFAULT_BUDGET, metavar="TIME",
                      help="how long the search may take (90s, 20m, 1h; default: %(default)s); one too small for "
                           "every configuration once and the shortest race is refused, saying the smallest that works")
    tune.add_argument("--goal", metavar="GOAL",
                      help="what to maximise: pdr (MLR's partial drop rate, loss <= 0.5 %%) or ndr (no loss), or to "
                           "minimise: loss (at --rate) (default: pdr, or loss with --rate)")
    tune.add_argument("--rate", help="the offered load of --goal loss, as `capbench run --rate` takes it (500kpps, 50%%)")
    tune.add_argument("--max-app-cpu", type=_percent, metavar="PCT",
                      help="a configuration whose application (the counter or program) takes more than PCT %% of one "
                           "CPU at the goal's load (the records' app CPU) is not eligible to be best: the table "
                           "ranks it after the others and says why")
    tune.add_argument("--knobs", metavar="LIST",
                      help="the knobs to search, comma-separated, each with every candidate (default: the "
                           "backend's own knobs and rx-ring, the test bed's receive ring, or with --rx-mode rps "
                           "backlog, the receive CPU's backlog queue; three candidates each, both ends of "
                           "the range and the default; `ring` and `pin` only when named; an unknown knob's error lists the "
                           "backend's; on ports --cap-iface's NIC has nic-ring, nic-rx-usecs and nic-channels "
                           "instead of rx-ring, held and put back)")
    tune.add_argument("--candidates", metavar="KNOB=LIST", action="append",
                      help="the values to try of a knob instead of its declared ones, e.g. rx-ring=64,1024,16384 "
                           "(each checked against the knob's range; repeat for several knobs)")
    _backend_args_flag(tune)  # fixed for every configuration; the knobs those options set are left out
    add_profile_args(tune, "; the reasons under the ranking then also say where the counter's and the "
                           "receive CPU's time went with the best configuration and with the defaults")
    add_apps_file(tune, ": their programs can be tuned (--backends NAME), over the knobs each declares "
                        "([NAME.knobs.KNOB])")
    tune.add_argument("--link", help=f"emulated link speed: {', '.join(LINKS_BPS)} {_default('link')}")
    tune.add_argument("--pin", metavar="PIN", help=f"the placement: A:A, A:B or auto {_default('pin')}")
    tune.add_argument("--engine", choices=from_declarations(engine_names, None),
                      help=f"generator engine {_default('engine')}")
    add_rx_mode_args(tune)
    add_port_args(tune)
    tune.add_argument("--resume", metavar="DIR", help="continue the stopped tune in DIR, repeating no trial")
    tune.add_argument("--results", default="results", metavar="DIR",
                      help="write results to DIR/<UTC time>/ (default: %(default)s)")
    tune.add_argument("--settle", default=f"{TrialSetup.settle_s:g}", metavar="S",
                      help="wait after sending for queues to drain before reading the counters (default: %(default)s)")
    tune.add_argument("--probe", default=f"{PROBE_S:g}", metavar="S",
                      help="before the first trial, watch the run's CPUs for S seconds (as capbench run --probe; "
                           "default: %(default)s)")
    tune.add_argument("--quiet", action="store_true", help="no live line while a trial sends")
    tune.add_argument("--no-report", action="store_true",
                      help="do not write the run's report (report/) at the end; the tune's own files are written")

    tb = sub.add_parser("testbed", help="build, list or remove veth test beds",
                        description=TESTBED_HELP, formatter_class=_formatter, allow_abbrev=False)
    tbsub = tb.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    tbsub.required = True
    up = tbsub.add_parser("up", help="build a test bed and keep it until `down`")
    up.add_argument("--rx-cpu", type=int, default=None, metavar="N",
                    help="CPU for the capture veth's receive work (the cpumap ring's thread of the default "
                         "--rx-mode cpumap, its NAPI thread with napi, its RPS mask with rps); default: no steering")
    up.add_argument("--backlog", type=int, metavar="N", help=BACKLOG_HELP + " until `down`")
    add_rx_mode_args(up)
    down = tbsub.add_parser("down", help="remove test bed ID, or all that crashed runs left (not those of "
                                         "`testbed up`)")
    down.add_argument("id", nargs="?", metavar="ID", help="the 6 hex digits of a test bed (see status)")
    down.add_argument("--force", action="store_true",
                      help="remove test bed ID even while a running capbench uses it (its trials then fail)")
    tbsub.add_parser("status", help="list test beds")

    for name, (_prog, text) in PASSTHROUGH.items():
        # Dispatched before argparse (see main); listed here for `capbench --help`.
        sub.add_parser(name, help=text + " (see `capbench " + name + " --help`)", add_help=False)

    backends = sub.add_parser("backends", help="list the capture backends and programs, and whether they work here",
                              epilog="Exit status: 0 when listed (each line says whether it works here); 2 when a "
                                     "program of capbench's own is missing (the line says how to get it).")
    add_apps_file(backends, ": their programs are listed too")
    backends.add_argument("--json", action="store_true",
                          help="one JSON line per backend and program on stdout: type (backend or program), name, "
                               "works (true or false), why (docs/json.md)")

    side = sub.add_parser("side", help="internal: one capture side of a topology's run on this host, "
                                       "started over ssh by capbench run --topology (docs/topology.md)")
    side.add_argument("--spec", help="what to run (JSON, written by capbench)")
    side.add_argument("--clock", action="store_true", help="print this host's CLOCK_REALTIME - CLOCK_MONOTONIC")

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
    cmp.add_argument("--json", action="store_true",
                     help="print the comparison as one JSON document on stdout (docs/json.md), the tables on stderr")
    cmp.add_argument("--out", metavar="DIR",
                     help="write compare.{txt,md,png,svg,html} to DIR (default: B/report/compare-<name of A>/)")
    _add_version(p)
    return p


def _add_version(p: argparse.ArgumentParser) -> None:
    """-V/--version on `capbench` and every command under it (gen and capture, which argparse
    does not parse, answer it in capbench.cli.passthrough)."""
    if p.add_help:
        p.add_argument("-V", "--version", action="version", version=f"capbench {__version__}",
                       help="print capbench's version and exit")
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _add_version(child)
