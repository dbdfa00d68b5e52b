"""`capbench gen` and `capbench capture`: capbench-gen and capbench-cap run with their options
unchanged (in a network namespace with --netns), their JSON Lines passed through, Ctrl-C and
SIGTERM forwarded to each once so that it prints its summary; `capture --procs N` runs N counters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

from capbench import declared
from capbench.binaries import find_program
from capbench.campaign.runner import note
from capbench.cli.described import from_declarations, own_xdp_names
from capbench.errors import RunError, UsageError
from capbench.options import option_value
from capbench.testbed import netns, preflight


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
        extra = extra.format(own_xdp=from_declarations(lambda: " or ".join(own_xdp_names()),
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
    if procs > 1 and backend in own_xdp_names():
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
