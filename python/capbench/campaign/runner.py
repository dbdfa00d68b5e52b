"""`capbench run`: a campaign (from flags or a TOML file) on a fresh test bed, recorded as it goes.

For each step the runner places the parts (generator, kernel receive work by
the RPS mask, counter), builds the step's Measurer and hands it to the step's
method (campaign_run.execute). Trials are appended to trials.jsonl as they end,
method answers to searches.jsonl; `--resume DIR` continues such a directory.
What the user sees of it (a line per trial, the tables, the report) the command
layer draws, called through RunCallbacks: this layer imports no presentation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench.campaign import matrix as cmod
from capbench import errors, owners
from capbench.campaign import execute as campaign_run
from capbench.testbed import cpu
from capbench.testbed import hygiene
from capbench.campaign import results
from capbench.testbed import ports
from capbench.testbed import rxmode
from capbench.testbed import veth_pair as testbed
from capbench.binaries import Binaries
from capbench.errors import CapbenchError, Terminated
from capbench.campaign import resume as resume_mod
from capbench.campaign.plan import Plan, plan_of
from capbench.remote import topology
from capbench.remote.ssh import Host
from capbench.campaign.results import PROFILES_DIR, RunWriter
from capbench.methods.measurer import disturbed, superseded
from capbench.methods.verdict import measured
from capbench import declared
from capbench.trial.apps import Adapter
from capbench.trial import program_probe
from capbench.trial import witness
from capbench.methods import registry
from capbench.rates import wire_pps
from capbench.profile.perf_record import Profiling
from capbench.trial.sensors import SensorsMeasurer, sensor_backends
from capbench.trial.measure import Measurer, TrialResult, TrialSetup


# The exit status of a run that ended normally but measured nothing valid: every trial was a lower
# bound (the generator fell short of its target and nothing was lost, capbench.methods.verdict), so
# no row is a capture result; the others are declared with it (errors.EXIT_STATUSES).
NOTHING_MEASURED_STATUS = errors.NOTHING_MEASURED.code


def _quiet(*_: Any) -> None:
    return None


@dataclass(frozen=True)
class RunCallbacks:
    """What a run tells the user, and when: the command layer draws the lines and tables
    (capbench.report.console) and writes the report; the campaign layer only calls these.
    Each does nothing by default."""

    # After each new trial: (trials run so far, their estimated total, seconds left, the number of
    # its first record in the run (a resumed run's earlier ones counted), its records: one, or one
    # per sensor with --sensors or a topology's sensors).
    on_trial: Callable[[int, int, float, int, Sequence[TrialResult]], None] = _quiet
    on_step: Callable[[int, int, cmod.Step, float], None] = _quiet  # (done, total, step, seconds left)
    # The run's trials and method answers, at its end (or after an error, when trials finished).
    show_results: Callable[[Sequence[TrialResult], Sequence[dict[str, Any]]], None] = _quiet
    write_report: Callable[[Path], None] = _quiet  # the results folder of a run that ended normally
    # Once a second while a trial sends: its step and how it is going (trial_run.Progress); None:
    # nobody watches (no live view), and the trials read nothing for it.
    on_second: Callable[[cmod.Step, Any], None] | None = None
    on_answer: Callable[[dict[str, Any]], None] = _quiet  # each method answer, as searches.jsonl gets it
    on_end: Callable[[Path, int], None] = _quiet  # (the results folder, the exit status) at the run's end
    # (what, value of each repetition) of the measurements repeated (report.tables.repeated_rates):
    # run.json warns where they scatter (hygiene.noisy).
    repeated: Callable[[Sequence[TrialResult], Sequence[dict[str, Any]]], list[tuple[str, list[float]]]] = (
        lambda trials, outcomes: [])


@dataclass(frozen=True)
class RunOptions:
    """What a run needs beyond its campaign."""

    results: str
    settle_s: float
    backlog: int | None
    report: bool
    command: Sequence[str]
    tune: bool = False
    campaign_source: str | None = None  # the TOML text of --campaign, kept in run.json for --resume
    rx_mode: str = rxmode.DEFAULT_RX_MODE  # the test bed's receive model (rxmode)
    napi_sched: str | None = None  # None: the model's default (rxmode.default_sched)
    callbacks: RunCallbacks = field(default_factory=RunCallbacks)
    ports: ports.Ports | None = None  # real interfaces instead of a veth test bed (testbed.ports)
    topology: TopologyRun | None = None  # several hosts (docs/topology.md), their connections open
    perf: str | None = None  # --profile: the version of perf, checked to sample here (perf_record.check)
    probe_s: float = witness.PROBE_S  # --probe: the host probe's length before the first trial; 0: none
    # How the plan's steps are walked on the test bed: campaign.execute.execute, each step in turn;
    # `capbench tune` walks its own (capbench.tune), choosing each next step from the answers so far.
    drive: Callable[[Plan, campaign_run.StepRun], Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # run.json's settings besides the campaign's
    # What the checks chose for the user (the generator's engine on a kernel that refuses the default),
    # said once the run has started: a refused run says only why it was refused.
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TopologyRun:
    """A run on the hosts of a topology file: the file, one open Host per host (checked), what
    run.json records of each (remote.hosts.describe), and the frames' destination MAC."""

    topology: topology.Topology
    hosts: dict[str, Host]
    meta: dict[str, dict]
    dst_mac: str = testbed.DST_MAC
    gen_clock_ns: int | None = None  # clocks synchronised: the generator host's realtime − monotonic
    insecure_ssh: bool = False  # --insecure-ssh: ssh may run commands or skip host-key checks (ssh_rules)

    def testbed(self) -> testbed.Testbed:
        """The generator's side as a test bed: its interface, the tap's input and targets (ports:
        nothing to build or steer)."""
        t = self.topology
        return testbed.Testbed(id="h" + secrets.token_hex(3)[1:], gen_ns=None, cap_ns=None, gen_if=t.generator.iface,
                               cap_if=t.tap.iface if t.tap else "", gen_mac="", cap_mac="", rx_cpu=None,
                               dst_mac=self.dst_mac, rx_mode=ports.NIC_RX_MODE, ports=True,
                               sensors=len(t.sensors) if t.tap else 0, tap_to=t.tap.clone_to if t.tap else ())


def note(text: str) -> None:
    """A progress or status line on stderr (stdout carries the tables)."""
    print(text, file=sys.stderr, flush=True)


def run_status(trials: Sequence[TrialResult]) -> int:
    """The exit status of a run that ended normally: NOTHING_MEASURED when no trial gave a verdict
    (lossless or lossy); DISTURBED when one did, but a trial a method decided on (not a run that a
    later one replaced) stayed disturbed; MEASURED otherwise (errors.EXIT_STATUSES)."""
    if not any(measured(r) for r in trials):
        return NOTHING_MEASURED_STATUS
    if any(disturbed(r) and not superseded(r) for r in trials):
        return errors.DISTURBED.code
    return errors.MEASURED.code


def sensor_queue_args(backend: str, c: cmod.Campaign) -> tuple[str, ...]:
    """A sensor's frames come from the tap, which sends them on the receive queue of the CPU its
    work runs on: the generator's (the default, Measurer.xsk_queue_args), or --tap-cpu's."""
    if c.tap_cpu is None or c.program(backend) is not None or not declared.backend(backend).queues:
        return ()
    return ("--queue", str(c.tap_cpu % testbed.veth_queues()))


class Unshown:
    """The records of a run's list not yet told of (on_trial): each trial's, every sensor's one and
    not only the last; those in the list at the start (a resumed run's) were told of before."""

    def __init__(self, trials: list[TrialResult]):
        self.trials, self.shown = trials, len(trials)

    def take(self) -> list[TrialResult]:
        new, self.shown = self.trials[self.shown:], len(self.trials)
        return new


def run_campaign(plan: Plan, opts: RunOptions, binaries: Binaries, writer: RunWriter,
                 trials: list[TrialResult]) -> int:
    """Run every step of the plan not yet done on a new test bed, appending its trials; the exit status."""
    c, steps = plan.campaign, plan.steps
    writer.meta["placements"] = {pin: dataclasses.asdict(p) for pin, p in plan.placements.items()}
    if plan.shared_notes():
        writer.meta["notes"] = plan.shared_notes()
    for line in plan.polling_notes():  # before the trials: their rx ring will lose frames
        note(line)
    first_rx = plan.placement(steps[0]).rx_cpu if steps else None
    status = 0
    topo = opts.topology
    for line in hygiene.end_stale_programs():  # a killed capbench's programs may still capture
        note(line)
    bed = (contextlib.nullcontext(topo.testbed()) if topo is not None else
           ports.ports_testbed(opts.ports) if opts.ports is not None else
           testbed.testbed(first_rx, backlog=opts.backlog, tune=opts.tune, rx_mode=opts.rx_mode,
                           napi_sched=opts.napi_sched, sensors=len(c.sensors)))
    # The run's interference witness (trial/witness.py): one for the whole run, on its CPUs; none
    # for a topology's hosts (their CPUs are not this machine's).
    watched = (witness.running(None, (), "the hosts of a topology are not watched") if topo is not None else
               witness.running(witness.program_path(binaries), run_cpus(plan)))
    with bed as tb, watched as watch, contextlib.ExitStack() as held:
        # On ports, each step's NIC knobs and receive CPU (its IRQs steered there), put back at the end.
        port = (held.enter_context(ports.step_settings(tb, rps=opts.ports.rps))
                if tb.ports and topo is None and opts.ports is not None else None)
        writer.meta["testbed"] = dataclasses.asdict(tb)
        if tb.rx_mode == "cpumap":  # the depths of its receive ring the run uses (each trial records its own)
            writer.meta["testbed"]["rx_ring"] = sorted({r or rxmode.DEFAULT_RX_RING for m in c.matrices
                                                        for r in m.rx_rings})
        if topo is not None:
            writer.meta["topology"] = topo.topology.path
            writer.meta["hosts"] = topo.meta
            writer.meta["insecure_ssh"] = topo.insecure_ssh
            writer.meta["clocks"] = {"synchronized": topo.topology.clock_sync or False,
                                     "latency_across_hosts": "reported" if topo.topology.latency_valid else
                                     "left out: the clocks are not known to agree ([clocks] synchronized)"}
        elif tb.ports:
            writer.meta["ports"] = ports.describe(tb)
            if port is not None and port.no_irqs_line():
                writer.meta["ports"]["irq_steering"] = port.no_irqs_line()
                note(port.no_irqs_line())
        state = testbed.read_state(tb.id) or {}
        tuned_if = hygiene.tune_interface(tb.cap_ns, tb.cap_if) if opts.tune else {}
        writer.meta["system"] = hygiene.snapshot(*((None, None) if topo else (tb.cap_ns, tb.cap_if))) | {
            # What the test bed holds (--backlog, --tune): the value it found, set, and that goes back.
            "host_settings": state.get("host_settings", []),
            "tuned": state.get("host_settings", []) if opts.tune else "no (--tune sets and restores)"}
        if opts.tune:
            writer.meta["system"]["tuned_interface"] = {tb.cap_if: tuned_if}
        if topo is not None:
            t = topo.topology
            note(f"topology {t.path}: {t.generator.host}/{t.generator.iface} -> "
                 f"{', '.join(f'{s.host}/{s.iface}' for s in t.sensors)}, results in {writer.path}")
        else:
            note(f"test bed {tb.id}: {tb.gen_ns}/{tb.gen_if} -> {tb.cap_ns}/{tb.cap_if}, results in {writer.path}")
        for step_backend in dict.fromkeys(step.backend for step in plan.todo if topo is None):
            for i, backend in enumerate(sensor_backends(step_backend)):
                program = c.program(backend)
                if program is not None:  # before the first trial: it starts, stops and its counts read
                    bed = tb.sensor(i + 1, first_rx) if c.sensors else tb
                    program_probe.probe(program, bed.cap_ns, bed.cap_if, plan.placement(steps[0]).cap_cpu)
        steered = {"cpu": first_rx, "backlog": 0}

        def topology_measurer(step: cmod.Step) -> SensorsMeasurer:
            """The topology's generator (and tap) on its host, each sensor on its own: a sensor on
            another host than the generator's has its latency left out unless the clocks are
            synchronised; its setup names no generator CPU (that CPU is another machine's)."""
            t, g = topo.topology, topo.topology.generator
            sides = []
            for s, backend in zip(t.sensors, sensor_backends(step.backend)):
                bed = testbed.Testbed(id=tb.id, gen_ns=None, cap_ns=None, gen_if="", cap_if=s.iface, gen_mac="",
                                      cap_mac="", rx_cpu=s.rx_cpu, rx_mode=ports.NIC_RX_MODE, ports=True)
                same = s.host == g.host
                sides.append(Measurer(binaries, bed, make_setup(step, backend, g.cpu if same else None, s.cpu),
                                      cap_host=topo.hosts[s.host], latency_valid=same or t.latency_valid,
                                      gen_clock_ns=None if same else topo.gen_clock_ns))
            sender = Measurer(binaries, tb, make_setup(step, sides[0].setup.backend, g.cpu, None),
                              gen_host=topo.hosts[g.host], on_second=watcher(step))
            return SensorsMeasurer(sender, sides, None)

        def make_measurer(step: cmod.Step) -> Measurer | SensorsMeasurer:
            if topo is not None:
                return topology_measurer(step)
            p = plan.placement(step)
            if port is not None:  # the step's NIC knobs, and its receive IRQs on its receive CPU
                port.apply(step.knobs, p.rx_cpu)
            if p.rx_cpu != steered["cpu"] and not tb.ports:  # steer the receive work of this step's placement
                for bed in (tb, *(tb.sensor(i + 1, None) for i in range(tb.sensors))):
                    testbed.steer(bed, p.rx_cpu)
                steered["cpu"] = p.rx_cpu
            if step.backlog != steered["backlog"]:  # the backlog knob: the host's setting for this step
                testbed.hold_backlog(tb, step.backlog or None)
                steered["backlog"] = step.backlog
            if c.sensors:
                # Each sensor captures with its own backend behind the tap; the sender is the step's
                # generator into the tap (its first sensor's setup: the generator's options are shared).
                sides = [make_side(step, p, backend, tb.sensor(i + 1, p.rx_cpu))
                         for i, backend in enumerate(sensor_backends(step.backend))]
                return SensorsMeasurer(Measurer(binaries, tb, sides[0].setup, on_second=watcher(step)), sides,
                                       c.tap_cpu)
            # On ports the receive work runs where its IRQs were steered (none: their affinity, recorded).
            rx_cpu = port.irq_cpu if port is not None else p.rx_cpu
            return make_side(step, p, step.backend, dataclasses.replace(tb, rx_cpu=rx_cpu), on_second=watcher(step))

        def make_side(step: cmod.Step, p: Any, backend: str, bed: Any,
                      on_second: Callable[[Any], None] | None = None) -> Measurer:
            """The Measurer of one capture of a step: its backend (or program) on test bed `bed`
            (`on_second`: the live view's, where this Measurer also runs the generator)."""
            return Measurer(binaries, bed, make_setup(step, backend, p.gen_cpu, p.cap_cpu), on_second=on_second)

        def watcher(step: cmod.Step) -> Callable[[Any], None] | None:
            on_second = opts.callbacks.on_second
            return None if on_second is None else (lambda progress: on_second(step, progress))

        profiling = (Profiling(hz=c.profile_hz, folder=writer.path / PROFILES_DIR, tool=opts.perf or "perf")
                     if c.profile else None)
        if profiling is not None:
            writer.meta["profile"] = {"tool": profiling.tool, "event": "cpu-clock", "hz": profiling.hz,
                                      "period_ns": profiling.period_ns, "folder": PROFILES_DIR}

        def make_setup(step: cmod.Step, backend: str, gen_cpu: int | None, cap_cpu: int | None) -> TrialSetup:
            size = step.size
            return TrialSetup(backend=backend, frame_len=size if isinstance(size, int) else 0,
                               size_profile=size if isinstance(size, str) else None, link_bps=c.link_bps,
                               engine=c.engine, gen_cpu=gen_cpu, cap_cpu=cap_cpu, app_load=step.app_load,
                               settle_s=opts.settle_s, procs=step.procs, ring_bytes=step.ring, rx_ring=step.rx_ring,
                               backlog=step.backlog,
                               cap_args=tuple(shlex.split(step.backend_args)) + sensor_queue_args(backend, c),
                               knobs=step.knobs, knob_args=step.knob_args,
                               group_args=c.group_args()[1],
                               gen_args=c.group_args()[0] + (("--count", str(step.count)) if step.count else ()),
                               proc_cpus=(None if c.proc_cpus is None or step.procs == 1 else
                                          tuple(c.proc_cpus[i % len(c.proc_cpus)] for i in range(step.procs))),
                               app=program_of(backend, step), profile=profiling)

        def program_of(backend: str, step: cmod.Step) -> Adapter | None:
            """The capture program's adapter of a step, running with the step's knobs of it."""
            app = c.program(backend)
            return None if app is None else app.with_knob_values(cmod.program_knob_values(step.knobs, backend))

        def record(r: TrialResult) -> None:
            writer.append(r)
            trials.append(r)

        unshown = Unshown(trials)

        def on_trial(n: int, total: int, left_s: float) -> None:
            # n counts the trials of this invocation (a resumed run's earlier ones are done).
            new = unshown.take()
            opts.callbacks.on_trial(n, total, left_s, writer.count - len(new) + 1, new)

        def record_outcome(o: dict[str, Any]) -> None:
            writer.append_outcome(o)
            opts.callbacks.on_answer(o)

        if topo is None and plan.todo:
            host_probe(watch, plan, tb, writer, opts.probe_s)
        try:
            (opts.drive or campaign_run.execute)(plan, campaign_run.StepRun(
                make_measurer, record, record_outcome, on_step=opts.callbacks.on_step, on_trial=on_trial))
        except KeyboardInterrupt:
            note(f"interrupted: the test bed is removed; {after_stop(writer)}")
            status = 130
        except Terminated:
            note(f"terminated: the test bed is removed; {after_stop(writer)}")
            status = 143
        warnings = hygiene.noisy(opts.callbacks.repeated(trials, results.read_outcomes(writer.path)))
        if warnings:
            writer.meta["warnings"] = warnings
            for w in warnings:
                note(f"warning: {w}")
    return status


def run_cpus(plan: Plan) -> list[int]:
    """The CPUs the run's trials use (its placements, the tap's, the processes'); every usable CPU
    where one is left to the scheduler."""
    c = plan.campaign
    cpus = {x for p in plan.placements.values() for x in (p.gen_cpu, p.rx_cpu, p.cap_cpu)}
    cpus |= {c.tap_cpu, *(c.proc_cpus or ())} if c.tap_cpu is not None or c.proc_cpus else set()
    return sorted(cpus) if cpus and None not in cpus else list(plan.cpus)


def top_rate(plan: Plan) -> float | None:
    """The run's highest offered rate in frames per second: a method that chooses its loads may go
    up to the wire rate, the others run at the campaign's load (None: only size profiles)."""
    c, rates = plan.campaign, []
    for step in plan.todo:
        if isinstance(step.size, int):
            own = registry.get(step.method).sets_own_load
            rates.append(wire_pps(c.link_bps, step.size) if own else c.load.pps(step.size, c.link_bps) or
                         wire_pps(c.link_bps, step.size))
    return max(rates) if rates else None


def host_probe(watch: witness.Witness, plan: Plan, tb: testbed.Testbed, writer: RunWriter, seconds: float) -> None:
    """Before the first trial: the host's stops and others' time on the run's CPUs with nothing
    loaded (witness.probe) for `seconds`, into run.json and one line on the terminal."""
    if watch.child is None:
        writer.meta["host_probe"] = {"not_measured": watch.why_not}
        note(f"host probe: not measured ({watch.why_not}); each trial records steal time only")
        return
    if seconds == 0:  # the trials' own witness still runs
        writer.meta["host_probe"] = {"not_measured": "--probe 0"}
        note("host probe: not run (--probe 0); each trial still records the host's interference")
        return
    # The shallowest ring of the run is the one a stop overflows first.
    rings = [None] if tb.ports else [rxmode.ring_frames(tb.rx_mode, step.rx_ring) for step in plan.todo]
    found = witness.probe(watch, min(witness.ring_frames(r) for r in rings or [None]), top_rate(plan), seconds)
    writer.meta["host_probe"] = found.to_json()
    note(found.line())


def open_results(c: cmod.Campaign, opts: RunOptions, resume: Path | None) -> tuple[RunWriter, owners.ResultsLock]:
    """The run's writer and its lock on the results folder: the folder of `resume`, once no other
    run writes it (UsageError naming that run's pid), or a new one (removed again if it cannot be
    locked)."""
    if resume is not None:
        owners.reach_folder(resume, "--resume")  # never through another user's link
        lock = owners.lock_results(resume)  # before anything in it changes
        try:
            return RunWriter.resume(resume), lock
        except BaseException:
            lock.release()
            raise
    writer = RunWriter.create(opts.results, {"campaign": campaign_settings(c), **opts.settings},
                              command=list(opts.command))
    try:
        return writer, owners.lock_results(writer.path)
    except BaseException:
        remove_empty_run(writer)
        raise


def has_results(writer: RunWriter) -> bool:
    """Whether the run's folder holds a result: a trial or a method's answer."""
    return writer.count > 0 or (writer.path / results.SEARCHES_FILE).exists()


def resume_command(writer: RunWriter) -> str:
    """The command that continues the run of `writer`: `capbench run --resume DIR`, or the
    resume of the command that made it (`capbench tune`)."""
    command = writer.meta.get("command")
    name = command[1] if isinstance(command, list) and len(command) > 1 and command[1] == "tune" else "run"
    return f"capbench {name} --resume {writer.path}"


def after_stop(writer: RunWriter) -> str:
    """What becomes of a stopped run's results."""
    if has_results(writer):
        return f"`{resume_command(writer)}` continues where this stopped"
    return "no trial had finished, so no results folder is kept"


def remove_empty_run(writer: RunWriter, made: Sequence[Path] = ()) -> None:
    """Remove a results folder this run made that holds no result (no trial, no answer), and the
    folders above it that it made too (`made`, innermost first): a run stopped, or refused for bad
    input, before its first trial leaves nothing. A run that failed at run time keeps its folder:
    its run.json is the record of that failure (status failed, the error). Only capbench's own
    files are removed; a folder holding anything else stays."""
    if has_results(writer) or writer.meta.get("status") == "failed":
        return
    for name in (results.TRIALS_FILE, results.RUN_FILE, f".{results.RUN_FILE}.tmp", owners.RESULTS_LOCK):
        (writer.path / name).unlink(missing_ok=True)
    for d in (writer.path, *made):
        try:
            d.rmdir()
        except OSError:
            return


def missing_dirs(path: Path) -> list[Path]:
    """The folders of `path` that do not exist yet, innermost first. lexists, not Path.exists: it
    answers False, not OSError, for a path too long for the kernel (RunWriter.create names that)."""
    missing = []
    path = path.absolute()
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def execute(c: cmod.Campaign, opts: RunOptions, binaries: Binaries, *, resume: Path | None = None) -> int:
    """Run (or resume) a campaign, print its tables, write its report; the exit status.

    The run is the only writer of its results folder while it lasts (owners.lock_results); a
    new folder that ends with no result, whatever ends the run, is removed."""
    made = [] if resume is not None else missing_dirs(Path(opts.results))

    def close(opened: tuple[RunWriter, owners.ResultsLock]) -> None:
        if resume is None:
            remove_empty_run(opened[0], made)
        opened[1].release()

    with owners.owned(lambda: open_results(c, opts, resume), close) as (writer, _):
        return _execute(c, opts, binaries, writer, resume)


def _execute(c: cmod.Campaign, opts: RunOptions, binaries: Binaries, writer: RunWriter,
             resume: Path | None) -> int:
    if resume is not None:
        progress = resume_mod.progress_of(results.scan_trials(resume).trials, results.read_outcomes(resume))
    else:
        if opts.campaign_source is not None:
            writer.meta["campaign_toml"] = opts.campaign_source
        progress = resume_mod.progress_of([], [])
    for line in opts.notes:
        note(line)
    plan = plan_of(c, progress, cpu.usable_cpus())
    steps, todo = plan.steps, plan.todo
    est = plan.estimated_s(todo)
    if opts.drive is None:  # a driver of its own says what it will run (`capbench tune`: its budget)
        note(f"capbench campaign {c.name}: {len(steps)} steps, {len(todo)} to run (about {est / 60:.1f} min), "
             f"{len(c.matrices)} matrix(es)")
    trials: list[TrialResult] = [t for ts in progress.trials.values() for t in ts]
    try:
        with writer:
            status = run_campaign(plan, opts, binaries, writer, trials)
            if status:
                writer.finish("interrupted")
    except CapbenchError:
        if trials:
            opts.callbacks.show_results(trials, results.read_outcomes(writer.path))
            note(f"results of what finished: {writer.path}; `{resume_command(writer)}` continues")
        raise
    opts.callbacks.show_results(trials, results.read_outcomes(writer.path))
    if has_results(writer):
        note(f"results: {writer.path}")
    if status == 0 and trials and opts.report:
        opts.callbacks.write_report(writer.path)
    if status == 0:
        status = run_status(trials)
        if status == NOTHING_MEASURED_STATUS:
            note(f"nothing valid was measured (every trial a lower bound): exit status {status}")
        elif status == errors.DISTURBED.code:
            note(f"measured, but the host interfered: trials it decided on stayed disturbed (see the "
                 f"answers and rows marked disturbed): exit status {status}")
    opts.callbacks.on_end(writer.path, status)
    return status


def campaign_settings(c: cmod.Campaign) -> dict[str, Any]:
    """The campaign as plain data for run.json."""
    return dataclasses.asdict(c)
