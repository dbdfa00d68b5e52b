"""`capbench run`: the campaign its flags (or --campaign FILE, or --resume DIR) describe, checked,
then run by capbench.campaign.runner, which tells what happens through the callbacks made here
(the lines and tables of capbench.report.console, the report of capbench.report.writer)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from capbench import declared, inputs
from capbench.binaries import find_binaries
from capbench.campaign import matrix as campaign
from capbench.campaign import plan, runner
from capbench.campaign.results import read_run
from capbench.campaign.runner import note
from capbench.cli.parser import build_parser
from capbench.cli.testbed import rx_mode_of
from capbench.errors import CapbenchError, UsageError
from capbench.trial.record import TrialResult
from capbench.trial.sensors import worst
from capbench.profile import perf_record
from capbench.rates import parse_duration
from capbench.report import console, tables
from capbench.remote import hosts as hosts_mod
from capbench.trial import remote_side
from capbench.remote import ssh_rules, topology
from capbench.testbed import cpu, host_sysctl, ports, preflight, rxmode
from capbench.tune import knobs


MATRIX_FLAGS = ("method", "backends", "sizes", "link", "rate", "duration", "count", "trial", "precision", "max_rate",
                "loss_tolerance",
                "steps", "pause", "engine", "pin", "gen_cpu", "rx_cpu", "cap_cpu", "app_load", "procs", "ring", "rx_ring",
                "repeat", "backend_args", "proc_cpus", "groups", "group_size", "group_gap", "app", "apps_file",
                "sensors", "tap_cpu", "profile", "profile_hz", "vary")
# The placement of the CPU flags when none is given: the seed's "#1" on two cores.
DEFAULT_CPUS = (0, 1, 1)


def _list(text: str, flag: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"cannot read {flag} {text!r}: give values separated by commas")
    if len(set(items)) != len(items):
        raise UsageError(f"a value is listed twice in {flag} {text}")
    return items


def vary_table(items: list[str]) -> dict[str, str]:
    """{knob: "V1,V2"} of the --vary KNOB=V1,V2 flags (hyperfine's -L), each knob once."""
    table: dict[str, str] = {}
    for item in items:
        name, eq, values = item.partition("=")
        if not eq or not name.strip() or not values.strip():
            raise UsageError(f"cannot read --vary {item!r}: give KNOB=V1,V2, e.g. 'afp-v3:block-size=1M,4M'")
        if name.strip() in table:
            raise UsageError(f"--vary gives {name.strip()} twice: list all its values in one")
        table[name.strip()] = values
    return table


def backend_args_of(items: Sequence[str]) -> dict[str, str]:
    """--backend-args BACKEND=OPTIONS, each given once: {backend: its options, as given}."""
    out: dict[str, str] = {}
    for item in items:
        backend, eq, opts = item.partition("=")
        if not eq or not backend.strip():
            raise UsageError(f"cannot read --backend-args {item!r}: give BACKEND=OPTIONS, e.g. "
                             f"'fanout=--workers 2'")
        if backend.strip() in out:
            raise UsageError(f"--backend-args gives {backend.strip()} twice: put all its options in one")
        out[backend.strip()] = opts
    return out


def campaign_from_args(args: argparse.Namespace, sensors: list[str] | None = None) -> campaign.Campaign:
    """The campaign the flags describe, checked by the same code as a campaign file's; `sensors`:
    a topology's sensors' backends (the same one may capture on several hosts)."""
    top: dict = {"name": "capbench run"}
    if sensors is not None:
        top["sensors" if len(sensors) > 1 else "backends"] = list(sensors)
    for flag, key in (("method", "methods"), ("backends", "backends"), ("sensors", "sensors"), ("app_load", "app_load"),
                      ("procs", "procs"), ("ring", "ring"), ("rx_ring", "rx_ring"), ("pin", "pin")):
        value = getattr(args, flag)
        if value is not None:
            top[key] = _list(value, "--" + flag.replace("_", "-"))
    if "procs" in top:
        try:
            top["procs"] = [int(p) for p in top["procs"]]
        except ValueError:
            raise UsageError(f"cannot read --procs {args.procs!r}: give whole numbers, e.g. 1,2,4") from None
    if args.backend_args:
        top["backend_args"] = backend_args_of(args.backend_args)
    if args.vary:
        top["vary"] = vary_table(args.vary)
    if args.app:
        top["apps"] = {}
        for item in args.app:
            name, eq, template = item.partition("=")
            if not eq or not name.strip() or not template.strip():
                raise UsageError(f"cannot read --app {item!r}: give NAME=COMMAND, e.g. "
                                 f"'mytcpdump=tcpdump -i {{iface}} -w {{out}}'")
            if name.strip() in top["apps"]:
                raise UsageError(f"--app gives {name.strip()} twice: give each program once")
            top["apps"][name.strip()] = template.strip()
    if args.apps_file:
        top["apps_files"] = list(args.apps_file)
    if args.proc_cpus is not None:
        try:
            top["proc_cpus"] = [int(x) for x in _list(args.proc_cpus, "--proc-cpus")]
        except ValueError:
            raise UsageError(f"cannot read --proc-cpus {args.proc_cpus!r}: give CPU numbers, e.g. 1,0") from None
    for flag in ("sizes", "link", "rate", "duration", "count", "trial", "pause", "engine", "precision", "max_rate",
                 "loss_tolerance",
                 "steps", "repeat", "groups", "group_size", "group_gap", "tap_cpu", "profile", "profile_hz"):
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
                          name_of=lambda key: {"methods": "--method", "apps": "--app", "apps_files": "--apps-file"}.get(
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


def recorded_apps_files(meta: dict) -> list[str] | None:
    """The adapter files a --campaign run read when it started: its run.json's settings hold them as
    absolute paths (an older run's as given, which were taken from its working directory, as they
    are again now); None when the settings hold no list of them."""
    settings = meta.get("settings")
    recorded = settings.get("campaign") if isinstance(settings, dict) else None
    files = recorded.get("apps_files") if isinstance(recorded, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) and f and "\0" not in f for f in files):
        return None
    return [os.path.abspath(f) for f in files]


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
            return (campaign.loads(meta["campaign_toml"], d / "campaign.toml", backends_known=declared.backend_names(),
                                   apps_files=recorded_apps_files(meta)), None, d)
        try:
            old = build_parser().parse_args([a for a in meta.get("command", [])[1:]])
        except (UsageError, SystemExit):  # SystemExit: argparse's --help or --version in it
            old = None
        if old is None or old.command != "run" or old.resume:
            raise UsageError(f"{d}/run.json does not hold the `capbench run` command that made it")
        if old.topology:
            raise UsageError(f"{d} is a run on several hosts (--topology): --resume does not continue those yet; "
                             f"start it again")
        return campaign_from_args(old), None, d
    if args.campaign is not None:
        if given:
            raise UsageError(f"--campaign {args.campaign} says what to run: give it no {', '.join('--' + f.replace('_', '-') for f in given)}")
        text = campaign.read_text(args.campaign)
        return campaign.loads(text, Path(args.campaign), backends_known=declared.backend_names()), text, None
    return campaign_from_args(args), None, None


# The receive model is the veth test bed's: a real interface's receive work is its driver's NAPI,
# placed by its IRQ affinity (recorded with the port), not capbench's.
RX_MODE_OPTIONS = (("rx_mode", "--rx-mode"), ("napi_sched", "--napi-sched"))
TOPOLOGY_EXCLUDES = (("backends", "--backends"), ("sensors", "--sensors"), ("tap_cpu", "--tap-cpu"),
                     ("gen_iface", "--gen-iface"), ("cap_iface", "--cap-iface"), ("gen_netns", "--gen-netns"),
                     ("cap_netns", "--cap-netns"), ("nic_set", "--nic-set"), ("campaign", "--campaign"),
                     ("resume", "--resume"), ("pin", "--pin"), ("gen_cpu", "--gen-cpu"), ("rx_cpu", "--rx-cpu"),
                     ("cap_cpu", "--cap-cpu"), ("procs", "--procs"), ("proc_cpus", "--proc-cpus"), *RX_MODE_OPTIONS)


def topology_of(args: argparse.Namespace) -> topology.Topology:
    """The topology of --topology, and what goes with it; one UsageError otherwise."""
    given = [flag for key, flag in TOPOLOGY_EXCLUDES if getattr(args, key, None)]
    if given:
        raise UsageError(f"--topology says where everything runs and each sensor's backend and CPUs: give it no "
                         f"{', '.join(given)}")
    t = topology.read(args.topology, insecure_ssh=args.insecure_ssh)
    for i, s in enumerate(t.sensors):
        if len(s.backends) > 1:
            raise UsageError(f"{inputs.shown(t.path)} [[sensor]] #{i + 1}: backends {', '.join(s.backends)}: a run "
                             f"on several hosts takes one backend per sensor (backend = \"{s.backends[0]}\"); "
                             f"run again for the others")
    if args.dst_mac is not None and not ports._mac_ok(args.dst_mac):
        raise UsageError(f"--dst-mac {args.dst_mac!r}: give a unicast MAC such as 02:00:00:00:00:01")
    return t


def cmd_run_topology(args: argparse.Namespace, binaries) -> int:
    """`capbench run --topology FILE`: the hosts opened and checked before anything starts, then
    the campaign on them (runner.TopologyRun)."""
    t = topology_of(args)
    c = campaign_from_args(args, sensors=[s.backends[0] for s in t.sensors])
    check_rx_ring(c, "rps", on_ports=True)  # a topology's sensors capture on their hosts' NICs
    nic_knobs = list(ports.knob_values(s.knobs for s in c.steps()))
    if nic_knobs:
        raise UsageError(f"knob {nic_knobs[0]} is set on a run's own capture port (--gen-iface/--cap-iface), not on "
                         f"a topology's sensors: set their NICs with ethtool on each host, or leave it out")
    check_backlog_knob(c, "rps", True, None)
    if c.profile:
        raise UsageError("--profile samples this machine's CPUs only: profile each host's capture with a run on "
                         "that host (--gen-iface/--cap-iface), or leave out --profile with --topology")
    settle_s = parse_duration(args.settle, what="--settle", allow_zero=True)
    if any(h.local for h in t.hosts.values()):
        preflight.require_caps("capbench run", preflight.run_caps(c))
    preflight.check_bpf()  # the engine is the generator host's to run: asked there once the hosts are open
    preflight.check_profiles(c, str(binaries.gen))
    preflight.check_backend_args(c, str(binaries.cap))
    methods = {x for m in c.matrices for x in m.methods}
    if "iperf" in methods and "rate" not in c.given:
        raise UsageError("a run on several hosts sends on real links: give an explicit --rate for iperf, e.g. --rate 10%")
    if methods - {"iperf"} and "link" not in c.given:
        raise UsageError(f"the searches send up to the link's wire rate: give --link, the speed of "
                         f"{t.generator.iface}'s link on {t.generator.host} (1g, 10g, ...)")
    programs = {s.name: [shlex.split(c.program(s.backends[0]).command)[0]] for s in t.sensors
                if c.program(s.backends[0]) is not None}
    with hosts_mod.opened(t, insecure_ssh=args.insecure_ssh) as hosts:
        hosts_mod.check(t, hosts, programs, force_iface=args.force_iface)
        meta = hosts_mod.describe(hosts)
        gen_host = hosts[t.generator.host]
        engine, why = preflight.engine_here(lambda e: remote_side.engine_refusal(gen_host, e), c.engine,
                                            asked="engine" in c.given)
        c = dataclasses.replace(c, engine=engine)
        # PTP synchronises CLOCK_REALTIME; the stamps are CLOCK_MONOTONIC: the generator host's
        # difference of the two carries its stamps over (trial_run.assemble).
        gen_clock = remote_side.host_clock_ns(gen_host) if t.latency_valid else None
        run = runner.TopologyRun(t, hosts, meta, gen_clock_ns=gen_clock, insecure_ssh=args.insecure_ssh,
                                 **({"dst_mac": args.dst_mac.lower()} if args.dst_mac else {}))
        opts = runner.RunOptions(results=args.results, settle_s=settle_s, backlog=None, report=not args.no_report,
                                 command=["capbench", *sys.argv[1:]], callbacks=callbacks(args), topology=run,
                                 notes=() if why is None else (f"capbench run: {why}",))
        return runner.execute(c, opts, binaries)


def cmd_run(args: argparse.Namespace) -> int:
    binaries = find_binaries()  # first: a campaign is read with the backends and engines they declare
    if args.topology is not None:
        return cmd_run_topology(args, binaries)
    if args.insecure_ssh:
        raise UsageError(f"{ssh_rules.INSECURE_FLAG} goes with --topology (the hosts capbench reaches with ssh)")
    check_rx_mode_on_ports(args)
    c, toml_text, resume = _campaign_of(args)
    backlog = None if args.backlog is None else host_sysctl.check_backlog(args.backlog)
    settle_s = parse_duration(args.settle, what="--settle", allow_zero=True)
    probe_s = parse_duration(args.probe, what="--probe", allow_zero=True)
    c, notes = check_here(c, binaries, "capbench run")
    if c.custom_cpus is not None:
        gen, rx, cap = c.custom_cpus
        preflight.check_cpus(gen_cpu=gen, rx_cpu=rx, cap_cpu=cap)
    for proc_cpu in c.proc_cpus or ():
        preflight.check_cpus(proc_cpus=proc_cpu)
    started = started_args(args, resume)  # a resumed run's own flags
    rx_mode, napi_sched = rx_mode_of(started or args, resume)
    check_rx_ring(c, rx_mode, args.gen_iface is not None or args.cap_iface is not None)
    check_backlog_knob(c, rx_mode, args.gen_iface is not None or args.cap_iface is not None, backlog)
    on_ports = ports_of(started)
    if on_ports is not None and c.sensors:
        raise UsageError("--sensors builds its tap on capbench's veth test bed: leave out --gen-iface/--cap-iface")
    if c.tap_cpu is not None:
        preflight.check_cpus(tap_cpu=c.tap_cpu)
    check_ports(c, on_ports)
    perf = perf_record.check() if c.profile else None  # perf here, and the kernel lets it sample
    opts = runner.RunOptions(results=args.results, settle_s=settle_s, backlog=backlog, report=not args.no_report,
                             command=["capbench", *sys.argv[1:]], campaign_source=toml_text, tune=args.tune,
                             rx_mode=rx_mode, napi_sched=napi_sched, callbacks=callbacks(args), ports=on_ports,
                             perf=perf, probe_s=probe_s, notes=notes)
    return runner.execute(c, opts, binaries, resume=resume)


def check_rx_mode_on_ports(args: argparse.Namespace) -> None:
    """On ports the receive model is the NIC's (its IRQs steered by --pin); `--rx-mode rps` asks for
    each receive queue's RPS to the receive CPU too (testbed.ports.StepSettings)."""
    given = [flag for key, flag in RX_MODE_OPTIONS if getattr(args, key, None) and (key, args.rx_mode) != ("rx_mode", "rps")]
    if given and (args.gen_iface or args.cap_iface):
        raise UsageError(f"{', '.join(given)}: the receive model is capbench's veth test bed's; on real interfaces "
                         f"the NIC's driver and its IRQs (steered by --pin) place the receive work, and "
                         f"--rx-mode rps adds RPS: leave out {', '.join(given)}")


def check_ports(c: campaign.Campaign, on_ports: ports.Ports | None) -> None:
    """The ports before anything is sent or changed, with the values of the NIC knobs the steps set
    (nic-ring ...) against the driver; on the veth test bed, a NIC knob is one line."""
    nic_knobs = ports.knob_values(s.knobs for s in c.steps())
    if on_ports is None:
        ports.check_veth_bed(nic_knobs)
        return
    methods = {x for m in c.matrices for x in m.methods}
    on_ports.check(iperf="iperf" in methods, searches=bool(methods - {"iperf"}), rate_given="rate" in c.given,
                   link_given="link" in c.given, knobs=nic_knobs)


def check_here(c: campaign.Campaign, binaries, command: str) -> tuple[campaign.Campaign, tuple[str, ...]]:
    """What the campaign needs of this machine, before anything starts: the capabilities, `ip`, the
    generator's engine, its size profiles and the backends' options as the programs judge them.
    Returns the campaign with the engine that runs here (preflight.engine_here: without --engine,
    the default gives way to one this kernel runs) and the notes to print once the run starts."""
    preflight.require_caps(command, preflight.run_caps(c))
    preflight.require_ip()
    engine, why = preflight.engine_here(lambda e: preflight.engine_refusal(str(binaries.gen), e), c.engine,
                                        asked="engine" in c.given,
                                        shared_cpu=plan.gen_cpu_shared(c, cpu.usable_cpus()))
    preflight.check_engine(engine)
    c = dataclasses.replace(c, engine=engine)
    preflight.check_profiles(c, str(binaries.gen))
    preflight.check_backend_args(c, str(binaries.cap))
    return c, () if why is None else (f"{command}: {why}",)


def check_rx_ring(c: campaign.Campaign, rx_mode: str, on_ports: bool) -> None:
    """--rx-ring (a step's rx_ring: a matrix's, or --vary rx-ring) only where it applies: the veth
    test bed's cpumap model, and backends whose receive work its thread can do (not those with
    their own XDP program)."""
    given = [s for s in c.steps() if s.rx_ring]
    if not given:
        return
    depth = ",".join(str(r) for r in dict.fromkeys(s.rx_ring for s in given))
    if on_ports:
        raise UsageError(f"--rx-ring {depth} sets the veth test bed's ring: on your own ports the NIC's receive ring "
                         f"is its own (ethtool -G, --nic-set); leave out --rx-ring")
    if rx_mode != "cpumap":
        raise UsageError(f"--rx-ring {depth} sets the cpumap model's ring: add --rx-mode cpumap (--rx-mode {rx_mode} "
                         f"has the veth's fixed {rxmode.VETH_RING_FRAMES}-frame ring)")
    own = sorted({s.backend for s in given if s.backend in declared.backend_names()
                  and declared.backend(s.backend).ran_with((*shlex.split(s.backend_args), *s.knob_args)).own_xdp})
    if own:
        raise UsageError(f"--rx-ring with {', '.join(own)}: their own XDP program runs in the capture veth's poll, "
                         f"before any ring it could feed; leave out --rx-ring for them (their trials use the "
                         f"veth's {rxmode.VETH_RING_FRAMES}-frame ring, --rx-mode napi)")


def check_backlog_knob(c: campaign.Campaign, rx_mode: str, on_ports: bool, backlog: int | None) -> None:
    """The backlog knob (--vary backlog=N) only where its queue is on the frames' way (knobs.BACKLOG:
    the veth test bed's rps model) and set once: not with --backlog, which holds the same sysctl at
    N or more for the whole run."""
    name = knobs.BACKLOG.name
    if not any(n == name for s in c.steps() for n, _ in s.knobs):
        return
    if backlog is not None:
        raise UsageError(f"--backlog {backlog} and --vary {name} both set net.core.netdev_max_backlog: give one "
                         f"(--backlog holds N or more for the whole run, the knob exactly N for its steps)")
    if on_ports:
        raise UsageError(f"--vary {name} is the veth test bed's (--rx-mode rps): on your own ports or hosts give "
                         f"--backlog N, which holds the host's backlog at N or more for the run")
    knobs.check_applies(knobs.BACKLOG, rx_mode)


def started_args(args: argparse.Namespace, resume: Path | None) -> argparse.Namespace | None:
    """The flags of a run: a resumed run's those of the command that started it (its run.json; None
    where that is not a command capbench reads)."""
    if resume is None:
        return args
    command = (read_run(resume) or {}).get("command") or []
    try:
        return build_parser().parse_args(command[1:])
    except (UsageError, SystemExit):
        return None


def ports_of(args: argparse.Namespace | None) -> ports.Ports | None:
    """The real interfaces a run's or tune's flags name (--gen-iface/--cap-iface ...); None: the veth
    test bed, or no flags capbench could read (started_args)."""
    if args is None:
        return None
    return ports.ports_from_args(args.gen_iface, args.cap_iface, gen_ns=args.gen_netns, cap_ns=args.cap_netns,
                                 dst_mac=args.dst_mac, force=args.force_iface, nic_set=args.nic_set,
                                 rps=args.rx_mode == "rps")


# The flags of the ports (parser.add_port_args) as a run or tune on the same ports repeats them:
# the best configuration's `capbench run` line, the advice's `capbench tune` line.
PORT_FLAGS = ("gen_iface", "cap_iface", "gen_netns", "cap_netns", "dst_mac", "nic_set")


def port_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The ports' flags as given (none on the test bed)."""
    words = [w for f in PORT_FLAGS if getattr(args, f, None) is not None for w in ("--" + f.replace("_", "-"), getattr(args, f))]
    return tuple(words + (["--force-iface"] if getattr(args, "force_iface", False) else []))


def live_line(args: argparse.Namespace) -> console.LiveLine:
    """The live line of a run: on a terminal, and not with --quiet."""
    return console.LiveLine(enabled=not args.quiet and sys.stdout.isatty() and sys.stderr.isatty())


def callbacks(args: argparse.Namespace, live: console.LiveLine | None = None) -> runner.RunCallbacks:
    """What the runner shows while and after it runs: a line per trial and per step, the tables,
    the report; the repetitions whose scatter run.json warns about. With --json, stdout gets JSON
    Lines (docs/json.md: a "trial" line per trial, an "answer" line per method answer, an "end"
    line) and every human line and table goes to stderr. The live line (once a second while a
    trial sends) only on a terminal, and not with --quiet (`live`: a caller's own, to clear it
    before lines of its own)."""
    as_json = args.json
    live = live or live_line(args)
    resume = getattr(args, "resume", None)
    started = started_args(args, Path(resume)) if resume else args  # a resumed run's ports: its own

    def say(line: str) -> None:
        live.clear()
        note(line)

    def on_step(done: int, total: int, step: campaign.Step, left_s: float) -> None:
        line = console.step_progress(done, total, step, left_s)
        if line is not None:
            say(line)

    left = {"s": None}  # the run's time left as of the last trial (its estimate)
    steps: dict[str, list[TrialResult]] = {}  # each step's trials so far: a search's bounds

    def on_trial(n: int, total: int, left_s: float, number: int, records: Sequence[TrialResult]) -> None:
        left["s"] = left_s
        steps.setdefault(records[0].step, []).append(worst(records))  # sensors: the record the method judged
        say(console.trial_progress(n, total, left_s, number, records))
        if as_json:
            for r in records:  # each sensor's record
                json_line({"type": "trial", **r.to_record()})

    def on_answer(outcome: dict) -> None:
        if as_json:
            json_line({"type": "answer", **outcome})

    def on_end(path: Path, status: int) -> None:
        live.clear()
        if as_json:
            report = path / "report" / "report.html"
            json_line({"type": "end", "results": str(path), "status": status,
                       "report": str(report) if report.exists() else None})

    def show_results(trials, outcomes) -> None:
        live.clear()
        console.print_results(trials, outcomes, console.human_console(stderr=as_json),
                              knobs.advice_lines(trials, port_args(started or args)))

    return runner.RunCallbacks(on_trial=on_trial, on_step=on_step, show_results=show_results,
                               write_report=write_run_report, repeated=tables.repeated_rates,
                               on_second=(lambda step, p: live.update(console.live_line(
                                   step, p, left["s"], steps.get(step.key, ())))) if live.enabled
                               else None, on_answer=on_answer, on_end=on_end)


def json_line(obj: dict) -> None:
    """One line of --json's output on stdout, written at once."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def write_run_report(path: Path) -> None:
    """The report at the end of a run. The results are already on disk, so a report that cannot
    be written is a note, not a failed run."""
    from capbench.report import writer  # matplotlib loads only for the commands that draw

    try:
        report = writer.write_report(path)
    except (CapbenchError, OSError) as e:
        note(f"report not written ({e}); `capbench report {path}` tries again")
        return
    note(writer.outcome_line(report))
