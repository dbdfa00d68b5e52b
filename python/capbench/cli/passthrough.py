"""`capbench gen`, `capbench capture` and `capbench xdpcount`: capbench-gen, capbench-cap and
capbench-xdpcount run with their options
unchanged (in a network namespace with --netns), their JSON Lines passed through, Ctrl-C and
SIGTERM forwarded to each once so that it prints its summary; `capture --procs N` runs N counters."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

from capbench import __version__, declared
from capbench.binaries import find_program
from capbench.campaign.runner import note
from capbench.cli.described import from_declarations, own_xdp_names
from capbench.errors import RunError, UsageError
from capbench.options import option_value, without
from capbench.profile import analysis, perf_record
from capbench.profile.analysis import Role
from capbench.testbed import netns, preflight, veth_pair
from capbench.testbed.procs import ChildSet


PASSTHROUGH = {
    "gen": ("capbench-gen", "run the traffic generator capbench-gen on any interface"),
    "capture": ("capbench-cap", "run the counter capbench-cap on any interface"),
    "xdpcount": ("capbench-xdpcount", "count the frames reaching an interface with capbench's XDP program "
                                      "(what a test bed's capture veth needs for the xdp engine's frames)"),
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
        "Ctrl-C stops it with its summary line.\n\n"
        "It needs --rate, stops after its default --duration (below) unless --duration (0:\n"
        "until stopped), --count or --groups say otherwise, and sends to a MAC it is given\n"
        "or learns: --dst-mac MAC; --dst-ip IP (capbench's option) takes IP's MAC from the\n"
        "neighbour table (`ip neigh`); on the generator side of a capbench test bed (--netns\n"
        "capbench-ID-gen), the test bed's; on a veth, its peer's (in the same namespace or in\n"
        "a named one: `ip netns`). --replay sends the capture's frames as they are.",
        "  sudo capbench gen --iface eth1 --size 64 --rate 100% --link 1g --dst-ip 192.0.2.7\n"
        "  sudo capbench gen --netns capbench-1a2b3c-gen --iface cb1a2b3cg --rate 800kpps --count 100000",
    ),
    "capture": (
        "Ctrl-C ends the capture with its summary line.\n\n"
        "tcpdump's -i IF, -w FILE, -c N (every frame counts), -s SNAPLEN and a filter\n"
        "expression after the options (or --filter EXPR) are the counter's own; its\n"
        "summary tells capbench's frames apart from the others.\n\n"
        "capbench's own options (the rest go to the counter):\n"
        "{own}\n"
        "\n"
        "On a capbench test bed, frames of the generator's xdp engine reach the capture\n"
        "veth only while an XDP program is attached there: capture with --backend\n"
        "{own_xdp}, run `capbench xdpcount` there, or send with --engine afpacket.",
        "  sudo capbench capture -i eth1 -w out.pcap -c 1000 -s 128\n"
        "      tcpdump's flags: the first 1,000 frames of any kind, 128 B of each, into out.pcap\n"
        "  sudo capbench capture -i eth1 -b afp-v3 -c 1000 udp port 9\n"
        "      a filter as tcpdump takes it, applied in the kernel (the summary's \"filter\")\n"
        "  sudo capbench capture --iface eth1 --backend afp-v3 --cpu 1\n"
        "  sudo capbench capture --netns capbench-1a2b3c-cap --iface cb1a2b3cc --backend pcap --duration 10\n"
        "  sudo capbench capture --iface eth1 --backend afp-v3 --cpu 1 --duration 10 --profile\n"
        "  sudo capbench capture --iface eth1 --backend afp-v3 --procs 3 --proc-cpus 1,2,3\n"
        "      three counters on one interface, each seeing every frame (their lines carry \"proc\")",
    ),
    "xdpcount": (
        "Ctrl-C detaches the program with its summary line.",
        "  sudo capbench xdpcount --netns capbench-1a2b3c-cap --iface cb1a2b3cc\n"
        "  sudo capbench xdpcount --iface eth1 --mode generic",
    ),
}


VERSION_FLAGS = ("-V", "--version")

# The options capbench takes itself (flag, its value's name or None, help), for the help text,
# the man page and the completion (capbench.cli.manuals); the rest go to the program.
OWN_OPTIONS = {
    "gen": (("--netns", "NS", "run the program inside network namespace NS"),
            ("--dst-ip", "IP", "send to the MAC the neighbour table has for IP (`ip neigh`)")),
    "xdpcount": (("--netns", "NS", "run the program inside network namespace NS"),),
    "capture": (
        ("--netns", "NS", "run the counters inside network namespace NS"),
        ("--procs", "N", "run N counters on the interface, each seeing every frame (packet-socket backends; "
                         "1 to 64; default 1)"),
        ("--proc-cpus", "LIST", "pin counter i to the i-th CPU of LIST (one per process)"),
        ("--profile", None, "sample every CPU with perf from the counters' ready line to their summary, then "
                            "print a \"profile\" line: each CPU's and the counters' NET_RX/kernel/user/idle "
                            "shares, groups of receive work, top functions and ns per received packet"),
        ("--profile-hz", "N", "samples per second on each CPU (default {hz})"),
        ("--profile-out", "FILE", "with --profile: write the folded stacks (a flame graph's input)"),
    ),
}


def own_options(cmd: str) -> list[tuple[str, str | None, str]]:
    return [(flag, metavar, text.format(hz=perf_record.DEFAULT_HZ)) for flag, metavar, text in OWN_OPTIONS[cmd]]


def _own_help(cmd: str) -> str:
    """capbench's own options of `cmd` but --netns (in the usage line), as --help lists them."""
    lines = []
    for flag, metavar, text in own_options(cmd):
        if flag != "--netns":
            head = f"  {flag}{' ' + metavar if metavar else ''}"
            lines.append(textwrap.fill(text, width=80, initial_indent=f"{head:<20} ",
                                       subsequent_indent=" " * 21))
    return "\n".join(lines)


def _split_passthrough(argv: list[str]) -> tuple[str | None, bool, bool, list[str]]:
    """(netns, wants help, wants the version, the rest unchanged) from the arguments after
    `gen`/`capture`."""
    ns, want_help, want_version, rest = None, False, False, []
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
        elif a in VERSION_FLAGS:
            want_version = True
        else:
            rest.append(a)
        i += 1
    return ns, want_help, want_version, rest


def cmd_passthrough(cmd: str, argv: list[str]) -> int:
    prog_name = PASSTHROUGH[cmd][0]
    ns, want_help, want_version, rest = _split_passthrough(argv)
    if want_version and not want_help:
        # capbench's release, then the program's own line (the same number, from meson.build)
        print(f"capbench {__version__}", flush=True)
        try:
            prog = find_program(prog_name)
        except UsageError as e:
            print(f"{prog_name}: not available: {e}")
            return 0
        subprocess.run([str(prog), "--version"], stdin=subprocess.DEVNULL, timeout=10)
        return 0
    if want_help:
        extra, examples = PASSTHROUGH_EXAMPLES[cmd]
        extra = extra.format(own_xdp=from_declarations(lambda: " or ".join(own_xdp_names()),
                                                    "NAME (a backend with its own XDP program)"),
                             own=_own_help(cmd) if cmd == "capture" else "")
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
    profiling, out, rest = _split_profile(rest) if cmd == "capture" else (None, None, rest)
    prog = find_program(prog_name)
    if ns is not None:
        preflight.require_caps(f"capbench {cmd} --netns", preflight.NETNS_CAPS)
        if ns not in netns.list_netns():
            raise UsageError(f"no network namespace {ns!r}: see `ip netns list` or `capbench testbed status`")
    if cmd == "gen":
        rest = gen_engine(str(prog), ns, gen_safe(ns, rest))
    argvs = [netns.exec_argv(ns, [str(prog), *rest, *extra]) for extra in procs]
    if len(argvs) > 1 or profiling is not None:
        _check_each(argvs)  # a bad option is refused before perf starts
    if profiling is None:
        return run_forwarding_signals(*argvs, on_summary=capture_summary_notes if cmd == "capture" else None)
    return capture_profiled(argvs, profiling, out)


def gen_safe(ns: str | None, argv: list[str]) -> list[str]:
    """The part of capbench-gen's safety rules that needs Python: learning the destination MAC.
    capbench-gen itself refuses to send without --rate or --dst-mac and stops after its default
    --duration, which it says on stderr (docs/programs.md); here --dst-ip IP (capbench's option)
    takes IP's MAC from the neighbour table, the generator side of a capbench test bed sends to the
    test bed's MAC, and a veth to its peer (in the same namespace or a named other). A --replay sends
    the capture's own frames, MACs and all."""
    if argv[-1:] == ["--dst-ip"]:
        raise UsageError("--dst-ip needs an address: the neighbour table's MAC for it is the destination")
    dst_ip = option_value(argv, "--dst-ip")
    argv = without(argv, "--dst-ip")
    # Without --rate capbench-gen refuses first, with its own line: nothing to learn a MAC for.
    rated = option_value(argv, "--rate", "-r") is not None
    if rated and "--replay" not in argv and not any(a.startswith("--replay=") for a in argv):
        argv = _with_dst_mac(ns, argv, dst_ip)
    return argv


def gen_engine(gen: str, ns: str | None, argv: list[str]) -> list[str]:
    """A stream sent without --engine (nor --replay, which picks its own) goes out with the engine
    this kernel runs: the default, or the one it gives way to (preflight.engine_here), said in a
    note. Without the privileges to ask, capbench-gen says what it lacks."""
    asks_nothing = {"--check", "--describe", "--help", "-h", "--version", "-V"} & set(argv)
    chosen = option_value(argv, "--engine", "-e") is not None or option_value(argv, "--replay") is not None
    if {"--check", "--probe"} <= set(argv) and not chosen and not preflight.missing_caps(preflight.GEN_CAPS):
        return [*argv, "--engine", probe_every_engine(gen)]
    if chosen or asks_nothing or preflight.missing_caps(preflight.GEN_CAPS):
        return argv
    engine, why = preflight.engine_here(lambda e: preflight.engine_refusal(gen, e), declared.gen().default_engine,
                                        asked=False)
    if why is None:
        return argv
    argv = [*argv, "--engine", engine]
    # Bad input is its one line, not the note: checked where it will send (--iface is in ns).
    refused = preflight.program_refusal(netns.exec_argv(ns, [gen, *argv, "--check"]))
    if refused is not None:
        raise UsageError(refused)
    note(f"capbench gen: {why}")
    return argv


def probe_every_engine(gen: str) -> str:
    """`capbench gen --check --probe` without --engine: one "probe" line per engine, in the order a
    run asks for them, with this kernel's verdict (capbench-gen --check --probe --engine NAME), and
    the first that runs, whose check follows. None runs: the first one's refusal, in one line."""
    verdicts = [(e, preflight.engine_refusal(gen, e)) for e in declared.gen().engine_names]
    for engine, why in verdicts:
        line = {"type": "probe", "engine": engine, "runs": why is None, **({"why": why} if why else {})}
        print(json.dumps(line, separators=(",", ":")), flush=True)  # as the programs write JSON Lines
    runs = [engine for engine, why in verdicts if why is None]
    if not runs:
        raise UsageError(str(verdicts[0][1]))
    return runs[0]


def _with_dst_mac(ns: str | None, argv: list[str], dst_ip: str | None) -> list[str]:
    if option_value(argv, "--dst-mac") is not None:
        if dst_ip is not None:
            raise UsageError("give --dst-mac or --dst-ip, not both")
        return argv
    iface = option_value(argv, "--iface", "-i")
    m = veth_pair.NS_RE.match(ns or "")
    state = veth_pair.read_state(m.group(1)) if m is not None and m.group(2) == "gen" else None
    if state is not None:
        if dst_ip is not None:
            raise UsageError("--dst-ip is for a link outside a capbench test bed: there the frames go to "
                             "the capture side's test-bed MAC")
        return [*argv, "--dst-mac", state["dst_mac"]]  # the test bed's own: its peer is capbench's
    if iface is None:
        return argv  # capbench-gen asks for the interface (or, with --check --mtu, the MAC)
    where = iface + (f" in {ns}" if ns else "")
    if dst_ip is not None:
        try:
            ipaddress.ip_address(dst_ip)
        except ValueError:
            raise UsageError(f"--dst-ip {dst_ip!r}: give an IPv4 or IPv6 address") from None
        mac = netns.neighbour_mac(dst_ip, iface, ns)
        if mac is None:
            raise UsageError(f"--dst-ip {dst_ip}: the neighbour table has no MAC for it on {where}: reach it once "
                             f"(ping -c 1 -I {iface} {dst_ip}) or give --dst-mac")
        note(f"capbench gen: sending to {mac} ({dst_ip} in the neighbour table of {iface})")
        return [*argv, "--dst-mac", mac]
    peer = netns.veth_peer_mac(iface, ns)
    if peer is None:
        raise UsageError(f"capbench gen on {where} (not a capbench test bed) sends only to a MAC it is given or "
                         f"learns: give --dst-mac MAC, or --dst-ip IP to take it from the neighbour table")
    mac, peer_ns = peer
    note(f"capbench gen: sending to {mac} ({iface}'s veth peer{f' in {peer_ns}' if peer_ns else ''})")
    return [*argv, "--dst-mac", mac]


def _split_profile(argv: list[str]) -> tuple[perf_record.Profiling | None, Path | None, list[str]]:
    """`capture --profile [--profile-hz N] [--profile-out FILE]`: the sampling, where the folded
    stacks go, the counter's own options."""
    profile, hz, out, rest = False, None, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--profile":
            profile = True
        elif a in ("--profile-hz", "--profile-out"):
            if i + 1 >= len(argv):
                raise UsageError(f"{a} needs a value: --profile-hz N ({perf_record.HZ_RANGE[0]} to "
                                 f"{perf_record.HZ_RANGE[1]}), --profile-out FILE")
            if a == "--profile-hz":
                hz = argv[i + 1]
            else:
                out = Path(argv[i + 1])
            i += 1
        else:
            rest.append(a)
        i += 1
    if not profile:
        if hz is not None or out is not None:
            raise UsageError("--profile-hz and --profile-out go with --profile: add --profile")
        return None, None, rest
    low, high = perf_record.HZ_RANGE
    if hz is not None and (not hz.isdigit() or not low <= int(hz) <= high):
        raise UsageError(f"--profile-hz {hz}: give a whole number of samples per second from {low} to {high}")
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        raise UsageError(f"--profile-out {out}: give a file name in an existing folder")
    tool = perf_record.check()
    return perf_record.Profiling(hz=int(hz) if hz else perf_record.DEFAULT_HZ, tool=tool), out, rest


def capture_profiled(argvs: list[list[str]], profiling: perf_record.Profiling, out: Path | None) -> int:
    """The counters run as without --profile, perf sampling every CPU from the first one's ready
    line until they have all ended; then one "profile" line on stdout: a role per CPU sampled and
    the counters' processes (capbench.profile.analysis), per packet of what they received."""
    summaries: list[dict] = []
    pids: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="capbench-profile-") as tmp, ChildSet() as kids:
        sampler = perf_record.Sampler(profiling, Path(tmp))
        sampler.start(kids)
        lock = threading.Lock()  # each counter's lines are read by a thread of their own

        def on_message(proc: subprocess.Popen, msg: dict) -> None:
            with lock:
                pids.add(proc.pid)
                if msg.get("type") == "ready" and not sampler.enabled:
                    sampler.enable()
                elif msg.get("type") == "summary":
                    summaries.append(msg)

        status = run_forwarding_signals(*argvs, on_summary=capture_summary_notes, on_message=on_message)
        if not sampler.enabled:
            return status  # no counter got ready: it said why
        sampler.disable()
        sampler.stop()
        parsed, warnings = sampler.samples()
    received = sum(int(s.get("received", 0)) for s in summaries)
    cpus = sorted({s.cpu for s in parsed.samples})
    roles = {f"cpu{c}": Role(cpus=(c,)) for c in cpus}
    roles["counter"] = Role(pids=frozenset(pids))  # wherever they ran
    facts: dict = {"tool": profiling.tool, "event": "cpu-clock", "warnings": warnings,
                   "skipped_lines": parsed.skipped_lines}
    if out is not None:
        analysis.write_folded(out, analysis.folded(parsed.samples, {}))
        facts["folded"] = str(out)
    record = analysis.profile_record(parsed.samples, roles, packets=received, period_ns=profiling.period_ns,
                                     hz=profiling.hz, window_s=sampler.window_s, profiler_pid=sampler.pid, facts=facts,
                                     proc_stat=sampler.proc_stat)
    print(json.dumps({"type": "profile", **record}, separators=(",", ":")), flush=True)
    rx = max((r for name, r in record["roles"].items() if name != "counter"),
             key=lambda r: r["shares_pct"]["net_rx"], default=None)
    if rx is not None:
        ns = f"{rx['ns_per_packet']:,.0f} ns per received packet" if rx["ns_per_packet"] else "no packet received"
        note(f"capbench: profile: CPU {rx['cpus'][0]} did most NET_RX work ({rx['shares_pct']['net_rx']:.1f} % of "
             f"its time; {ns}); the counters spent {record['roles']['counter']['busy_ms']:,.0f} ms of CPU")
    return status


def capture_summary_notes(summary: dict) -> list[str]:
    """What capbench says on stderr after a capbench-cap summary: every frame captured, capbench's
    own told apart from the others (as tcpdump's -c counts them all), then the loss in words."""
    notes = []
    if "foreign" in summary:
        trailers = int((summary.get("trailer") or {}).get("seen", 0))
        notes.append(f"captured {int(summary.get('packets', 0)):,} frames: {int(summary.get('received', 0)):,} "
                     f"capbench frames (each sequence number once), {trailers:,} capbench trailers, "
                     f"{int(summary['foreign']):,} others")
    loss = capture_loss_line(summary)
    return notes + ([loss] if loss else [])


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
    if procs > 1 and backend in own_xdp_names() and declared.backend(backend).ran_with(rest).own_xdp:
        raise UsageError(f"--procs {procs} with --backend {backend}: an interface holds one XDP program, so one "
                         f"{backend} process at a time: use --procs 1, or a backend that shares an interface "
                         f"({declared.shared_interface_backends()})")
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


def run_forwarding_signals(*argvs: list[str], on_summary=None, on_message=None) -> int:
    """Run programs with our stdin/stderr, each in its own process group, forwarding SIGINT
    and SIGTERM to them once each, so a Ctrl-C reaches each exactly once and it can print its
    summary; returns the highest exit status (128 + signal if a signal killed one).

    One program writes to our stdout; several write through a pipe each, and every JSON line
    they print gets a "proc" field (1, 2, ...) saying whose it is. With `on_summary`, each
    program's lines pass through a pipe too, and the lines on_summary(summary) makes of its
    summary line (a list) go to stderr ("capbench: ...", with "proc N: " when several). With `on_message`,
    on_message(program, message) is called for every JSON object a program prints."""
    several = len(argvs) > 1
    piped = several or on_summary is not None or on_message is not None
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
                if on_message is not None and isinstance(obj, dict):
                    on_message(p, obj)
                if several:
                    line = json.dumps({"proc": n, **obj}, separators=(",", ":")) + "\n"
                if on_summary is not None and isinstance(obj, dict) and obj.get("type") == "summary":
                    said = on_summary(obj)
            except ValueError:
                pass
            with lock:
                sys.stdout.write(line)
                sys.stdout.flush()
                for words in said or ():
                    note(f"capbench: {f'proc {n}: ' if several else ''}{words}")

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
