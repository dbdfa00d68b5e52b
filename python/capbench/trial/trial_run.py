"""One trial around one generator: each capture side (CaptureSide: the delivered counter, the
capture processes, every counter of that side) is started, read before and after the load, and
turned into its own record. Measurer.measure runs it for its one side; several sides (sensors
behind a tap) share one generator and see the same frames."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import declared
from capbench.profile.analysis import Owners, Role
from capbench.profile.trial_profile import TrialProfile
from capbench.testbed import cgroups, cpu, hygiene
from capbench.testbed import nic
from capbench.testbed import rxmode
from capbench.rates import Rate
from capbench.remote.ssh import Host
from capbench.testbed.procs import Child, ChildSet
from capbench.testbed.veth_pair import others_in_use
from capbench.trial.measure import (STOP_TIMEOUT_S, Measurer, SoftnetDrops, _delta, _utc_now, increase,
                                    read_ring_drops, scratch_dir, sleep_sampling, wait_sampling)
from capbench.trial.program_run import ProgramRun
from capbench.trial.record import TrialResult
from capbench.trial.remote_side import RemoteSide
from capbench.trial import witness


def run_trial(sender: Measurer, sides: list[Measurer], duration_s: float, load: Rate | float,
              tap_cpu: int | None = None) -> list[TrialResult]:
    """One trial: the generator of `sender`'s test bed sends `load` for `duration_s`, and each of
    `sides` captures on its own interface at the same time (one side: the test bed's capture veth;
    several: the sensors behind the test bed's tap, each seeing every frame, the tap's receive work
    on `tap_cpu`). Each side gets its own record."""
    if not isinstance(load, Rate):
        load = Rate.from_pps(load)
    for m in {id(m): m for m in (sender, *sides)}.values():
        m.check(load)
    started_at = _utc_now()
    profiling = sender.setup.profile
    # A counter drains its ring after SIGTERM: on a vCPU that stalls for a while that
    # can take seconds, and waiting costs nothing when it stops at once.
    with (ChildSet(stop_timeout_s=STOP_TIMEOUT_S) as kids,
          scratch_dir(any(m.setup.app is not None for m in sides) or profiling is not None) as workdir):
        # --profile: perf first, so that its start (it reads every process's maps) is over
        # before the load; it follows the processes started after it while its events are off.
        prof = None
        if profiling is not None:
            assert workdir is not None
            prof = TrialProfile(profiling, workdir)
            prof.start(kids)
        parts = [RemoteSide(m, kids, duration_s) if m.cap_host is not None and not m.cap_host.local
                 else CaptureSide(m, kids, workdir and workdir / str(i), duration_s) for i, m in enumerate(sides)]
        ahead(parts, None)  # every remote side's agent starts at once
        for part in parts:
            part.start()
        # After the sensors' XDP programs: a veth takes the tap's frames only while its peer has one.
        tap = Tap(sender, kids, tap_cpu) if sender.testbed.sensors else None
        if tap is not None:
            tap.start()
        ahead(parts, signal.SIGUSR1)
        for part in parts:
            part.before_load()
        if tap is not None:
            tap.before_load()

        def sample() -> None:
            for part in parts:
                part.sample()

        if prof is not None:
            prof.enable()
        window = witness.Window(witness.active())
        window.begin(trial_kernel_pids(parts, tap) | generator_softirq_pids(sender))
        t0 = time.monotonic()
        gen = start_on(sender.gen_host, kids, "capbench-gen", sender.gen_argv(duration_s, load), sender.testbed.gen_ns)
        watch = Watch(sender, parts, gen, load, duration_s) if sender.on_second is not None else None

        def sample_and_tell() -> None:
            sample()
            if watch is not None:
                sender.on_second(watch.progress())

        wait_sampling(gen, duration_s + 10.0 + sender.setup.ready_timeout_s, sample_and_tell)
        t1 = time.monotonic()
        reading = window.end()
        if prof is not None:
            prof.disable()
            owners = trial_owners(kids, parts, tap)  # while its processes still run
        ahead(parts, signal.SIGUSR2)
        for part in parts:
            part.after_load(t1 - t0)
        gen_summary = gen.summary()

        sleep_sampling(max(m.settle_s() for m in sides), sample)
        ahead(parts, signal.SIGTERM)
        for part in parts:
            part.after_settle()
        if tap is not None:
            tap.after_settle()
        if prof is not None:
            prof.stop()  # it writes its file's end: after the counters' last readings
        # The programs first, each with its own signal and grace time (all signalled at once).
        for prog, at in [(prog, prog.signal_stop()) for part in parts for prog in part.progs]:
            prog.wait_stopped(at)
        kids.stop_all()
        results = [part.result(started_at, duration_s, load, gen_summary) for part in parts]
        if tap is not None:
            results = tap.mark(results)
        if prof is not None:
            results = prof.records(results, [roles(sender, part, r, tap_cpu if tap else None)
                                             for part, r in zip(parts, results)], owners)
    from capbench.trial import loss_layers  # it reads TrialResults: imported here, not at the top

    # The host's interference is read on this machine: a side on another host has none here.
    results = [witness.mark(r, None if isinstance(part, RemoteSide) else reading, witness.ring_frames(r.rx_ring))
               for part, r in zip(parts, results)]
    return [dataclasses.replace(r, loss_layers=tuple(tuple(x) for x in loss_layers.layers(r)),
                                loss_remarks=tuple(loss_layers.remarks(r))) for r in results]


def trial_kernel_pids(parts: list[Any], tap: Tap | None) -> set[int]:
    """The trial's kernel threads (the NAPI threads its sides and tap placed): their CPU time is the
    trial's, not the host's interference."""
    return {pid for holder in (*parts, tap) for napi in [getattr(holder, "napi", None)] if napi
            for pid in napi.pids}


def generator_softirq_pids(sender: Measurer) -> set[int]:
    """The generator CPU's ksoftirqd when the engine sends from softirq (declared.Engine.sends_from:
    the xdploop engine's loop runs there once the kernel defers it): the generator's own work, not
    the host's interference. Empty for an engine that sends from its own thread, an unpinned or a
    remote generator."""
    remote = sender.gen_host is not None and not sender.gen_host.local
    if remote or sender.setup.gen_cpu is None or declared.gen().engine(sender.setup.engine).sends_from != "softirq":
        return set()
    pid = cpu.ksoftirqd_pid(sender.setup.gen_cpu)
    return set() if pid is None else {pid}


def trial_owners(kids: ChildSet, parts: list[Any], tap: Tap | None) -> Owners:
    """The trial's own processes and receive threads (--profile tells their work from others' by
    them): capbench itself, every process of its run cgroup (each program and all it started; without
    a cgroup, the children it started), and the kernel threads it placed here (trial_kernel_pids)."""
    group = cgroups.run_group()
    pids = {os.getpid(), *(c.pid for c in kids.children), *(group.pids() if group is not None else ())}
    return Owners(pids=frozenset(pids), rx_threads=frozenset(trial_kernel_pids(parts, tap)))


def roles(sender: Measurer, part: CaptureSide, r: TrialResult, tap_cpu: int | None) -> dict[str, Role]:
    """Each role of one capture side's trial (--profile), as the trial placed it or saw it run: the
    generator's CPU, the receive work's (its NAPI thread or RPS CPU; where the NAPI thread ran when
    not placed), the tap's, and the counters' or the capture program's processes (their pids, on
    the CPUs they were pinned to or ran on). A role with no known CPU is left out."""
    side = part.m
    counter_cpus = tuple(r.cap_cpus_seen) or tuple(c for c in side.proc_cpus if c is not None)
    pids = frozenset({cap.pid for cap in part.caps} | {p for prog in part.progs for p in prog.pids})
    found = {
        "generator": Role(cpus=() if sender.setup.gen_cpu is None else (sender.setup.gen_cpu,)),
        "receive": Role(cpus=(side.kernel_rx_cpu,) if side.kernel_rx_cpu is not None else tuple(r.napi_cpus_seen)),
        "tap": Role(cpus=() if tap_cpu is None else (tap_cpu,)),
        "counter": Role(cpus=counter_cpus, pids=pids),
    }
    return {name: role for name, role in found.items() if role.cpus}


@dataclass(frozen=True)
class Progress:
    """How a trial is going, once a second while it sends (Measurer.on_second: the live view): the
    programs' own running counts (their `interval` lines), and the receive CPU's busy share over
    the last second (/proc/stat)."""

    load: str  # the offered load as given to the generator
    elapsed_s: float
    duration_s: float
    # sent and captured: the counts of one instant, the generator's and the counters' interval lines
    # of the latest tick they have all printed (same_tick); None before there is one.
    sent: int | None  # capbench-gen's frames so far
    sent_pps: float | None
    captured: int | None  # the counter's capbench frames so far (of the side that has fewest)
    rx_cpu: int | None
    rx_cpu_busy_pct: float | None


def _intervals(child: Any) -> dict[float, dict]:
    """A program's interval lines by their tick's wall-clock time ("at": the C programs tick at whole
    multiples of --interval since the epoch, so lines of two programs with the same "at" count up to
    the same instant)."""
    return {float(m["at"]): m for m in child.messages if m.get("type") == "interval" and "at" in m}


def same_tick(gen: dict[float, dict], counters: list[dict[float, dict]]) -> tuple[dict | None, list[dict]]:
    """The generator's interval line and each counter's of the latest tick they have all printed;
    (None, []) before there is one. Without counters, the generator's latest line."""
    common = set(gen)
    for c in counters:
        common &= set(c)
    if not common:
        return None, []
    at = max(common)
    return gen[at], [c[at] for c in counters]


class Watch:
    """Reads a running trial's progress from what its programs print and from /proc/stat."""

    def __init__(self, sender: Measurer, parts: list[Any], gen: Child, load: Rate, duration_s: float):
        self.parts, self.gen, self.load, self.duration_s = parts, gen, load, duration_s
        self.t0 = time.monotonic()
        side = parts[0].m if parts else sender
        self.rx_cpu = side.kernel_rx_cpu
        self.stat = cpu.read_proc_stat() if self.rx_cpu is not None else None

    def progress(self) -> Progress:
        # The generator's and the counters' lines of one tick: the sent and captured counts of one
        # instant, whose difference is what is not captured (yet); their latest lines may be up to an
        # interval apart.
        g, caps = same_tick(_intervals(self.gen), [_intervals(c) for part in self.parts
                                                   for c in getattr(part, "caps", ())])
        counts = [int(m["received"]) for m in caps if "received" in m]
        busy = None
        if self.stat is not None and self.rx_cpu is not None:
            now = cpu.read_proc_stat()
            idle = cpu.time_pct(self.stat, now, [self.rx_cpu], "idle", "iowait")
            busy = None if idle is None else round(100.0 - idle, 1)
            self.stat = now
        return Progress(load=self.load.text, elapsed_s=time.monotonic() - self.t0, duration_s=self.duration_s,
                        sent=int(g["sent"]) if g else None, sent_pps=float(g["pps"]) if g else None,
                        captured=min(counts) if counts else None, rx_cpu=self.rx_cpu, rx_cpu_busy_pct=busy)


def ahead(parts: list[Any], signum: int | None) -> None:
    """Every remote side asked first (its agent started, or its next phase signalled), so that their
    round trips overlap; each side's phase method then waits for its answer."""
    for part in parts:
        if isinstance(part, RemoteSide):
            part.launch() if signum is None else part.signal(signum)


def start_on(host: Host | None, kids: ChildSet, name: str, argv: list[str], netns_name: str | None) -> Child:
    """`argv` started where it runs: here (in `netns_name`), or on another host over its SSH
    connection (a RemoteChild: its output, waits and stop as a local child's), kept in `kids`."""
    if host is None or host.local:
        return kids.start(name, argv, netns_name=netns_name)
    child = host.start(name, argv)
    kids.children.append(child)
    return child


class CaptureSide:
    """The capture side of one trial: the delivered counter (capbench-xdpcount, unless the backend
    attaches its own XDP program), the capture processes (capbench-cap, or a capture program) and
    every counter of that side, read before and after the load (steps 1-3 and 5-8 of the module
    doc). run_trial drives one or several of them around one generator."""

    def __init__(self, measurer: Measurer, kids: ChildSet, workdir: Path | None, duration_s: float):
        self.m, self.kids, self.workdir, self.duration_s = measurer, kids, workdir, duration_s
        self.xdp = None
        self.xdp_ready: dict[str, Any] = {}  # capbench-xdpcount's ready line (the cpumap ring's map id)
        self.caps: list[Any] = []
        self.progs: list[ProgramRun] = []

    def start(self) -> None:
        """The counters, started and ready."""
        m, s, tb, kids = self.m, self.m.setup, self.m.testbed, self.kids
        if not m.backend.own_xdp:
            self.xdp = kids.start("capbench-xdpcount", m.xdpcount_argv(), netns_name=tb.cap_ns)
            self.xdp_ready = self.xdp.wait_for("ready", s.ready_timeout_s)
        if s.app is None:
            self.caps = [kids.start("capbench-cap" if s.procs == 1 else f"capbench-cap #{i + 1}", m.cap_argv(c),
                                    netns_name=tb.cap_ns) for i, c in enumerate(m.proc_cpus)]
            for cap in self.caps:
                cap.wait_for("ready", s.ready_timeout_s)
        else:
            assert self.workdir is not None  # run_trial makes one for every trial with a program
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.progs = [ProgramRun(s.app, tb.cap_ns, tb.cap_if, c, self.duration_s, self.workdir, i)
                          for i, c in enumerate(m.proc_cpus)]
            for prog in self.progs:
                prog.start(kids)
            for prog in self.progs:
                prog.wait_ready()

    def before_load(self) -> None:
        """Place the NAPI thread, then every counter's first reading."""
        m, tb = self.m, self.m.testbed
        # The NAPI thread exists once the XDP programs above are attached, the cpumap ring's once
        # capbench-xdpcount is ready (rxmode).
        self.napi = rxmode.place_testbed(tb, m.rx_model, self.xdp_ready.get("ring_map_id"))
        self.links0 = m.interface_drop_counters()
        self.ring0 = read_ring_drops(tb.gen_ns, tb.gen_if) if tb.gen_if else None
        # On ports, the NIC's own counters (rtnl_link_stats64, ethtool -S and its standard groups).
        self.nic0 = nic.counters(tb.cap_ns, tb.cap_if) if tb.ports else {}
        self.irqs0 = nic.interrupt_counts() if tb.ports else {}  # where its receive interrupts run
        self.others = set(others_in_use(tb.id))
        self.softnet = SoftnetDrops(None if m.kernel_rx_cpu is None else {m.kernel_rx_cpu})
        self.stat0 = cpu.read_proc_stat()
        self.ticks0 = [cpu.read_pid_ticks(cap.pid) for cap in self.caps]
        for prog in self.progs:
            prog.sample_start()
        self.napi0 = self.napi.ticks() if self.napi else {}

    def after_load(self, window_s: float) -> None:
        """The CPU times at the end of the load window, and where everything ran."""
        self.window_s = window_s
        self.stat1 = cpu.read_proc_stat()
        self.napi1 = self.napi.ticks() if self.napi else {}
        self.ticks1 = []
        for cap in self.caps:
            try:
                self.ticks1.append(cpu.read_pid_ticks(cap.pid))
            except FileNotFoundError:
                raise cap.failure("ended during the trial") from None
        for prog in self.progs:
            prog.sample_end()
        # Where the read loops ran at the end of the load: what an unpinned counter
        # (--pin auto) was given by the scheduler; every thread of a program's processes.
        self.cap_cpus_seen = tuple(sorted({c for cap in self.caps for c in cpu.read_thread_cpus(cap.pid)}
                                          | {c for prog in self.progs for c in prog.cpus_seen}))
        self.napi_cpus_seen = self.napi.cpus_seen(self.napi0, self.napi1) if self.napi else ()

    def after_settle(self) -> None:
        """The counters' last readings, once the rings and queues have drained; the counters must
        still be running (a program that is not has failed the trial)."""
        m, tb = self.m, self.m.testbed
        self.softnet.sample()
        self.others |= set(others_in_use(tb.id))
        self.links1 = m.interface_drop_counters()
        self.ring1 = read_ring_drops(tb.gen_ns, tb.gen_if) if tb.gen_if else None
        self.nic1 = nic.counters(tb.cap_ns, tb.cap_if) if tb.ports else {}
        self.irqs1 = nic.interrupt_counts() if tb.ports else {}
        for child in (*self.caps, self.xdp):
            if child is not None and not child.running:
                raise child.failure("ended during the trial")
        for prog in self.progs:
            prog.check_running()

    def sample(self) -> None:
        """A softnet_stat reading during the trial (its 32-bit counters: SOFTNET_SAMPLE_S)."""
        self.softnet.sample()

    def readings(self) -> dict[str, Any]:
        """Everything this side measured on its host, once every program has stopped: the keyword
        arguments of Measurer._result but the trial's own (start, duration, load, the generator's
        summary), as plain JSON data, so that a side on another host (`capbench side`, RemoteSide)
        sends the same readings that `assemble` turns into a record here."""
        m, window_s = self.m, self.window_s
        tb = m.testbed
        # None where nobody knows the receive CPU (a port or remote sensor without rx_cpu): not 0.
        kernel_cpu_pct = (cpu.kernel_rx_pct(self.stat0, self.stat1, m.kernel_rx_cpu)
                          if m.kernel_rx_cpu is not None else None)
        if self.napi:  # the NAPI thread's receive work is its own system time, not softirq time
            kernel_cpu_pct = (kernel_cpu_pct or 0.0) + cpu.process_cpu_pct(sum(self.napi0.values()),
                                                                           sum(self.napi1.values()), window_s)
        return dict(
            caps=[cap.summary() for cap in self.caps] + [m.program_summary(prog) for prog in self.progs],
            xdp=self.xdp.summary() if self.xdp is not None else None,
            # softnet_stat counts every packet of the host: only the receive CPU's backlog
            # holds this trial's packets (RPS queues them there); a cross-check only.
            host_softnet_drops=self.softnet.total,
            app_cpu_pcts=[cpu.process_cpu_pct(a, b, window_s) for a, b in zip(self.ticks0, self.ticks1)]
            + [sum(prog.cpu_pct(window_s) or (0.0, 0.0)) for prog in self.progs],
            programs=[prog.witness(window_s) for prog in self.progs],
            cap_cpus_seen=list(self.cap_cpus_seen),
            napi_cpus_seen=list(self.napi_cpus_seen),
            other_testbeds=sorted(self.others),
            kernel_cpu_pct=kernel_cpu_pct,
            window_s=window_s,
            iface_rx_dropped=_delta(self.links0[0], self.links1[0], 0),
            gen_tx_dropped=_delta(self.links0[1], self.links1[1], 1),
            ring_drops=increase(self.ring0, self.ring1),
            nic_desc=self.port_desc(),
            nic_counters={k: v for k, v in nic.counter_deltas(self.nic0, self.nic1).items() if v},
        )

    def port_desc(self) -> dict[str, Any]:
        """On ports: the capture port as nic.describe says, with where its receive interrupts ran
        over the trial ("rx_interrupts": per CPU, or why there are none); {} on the veth test bed."""
        tb = self.m.testbed
        if not tb.ports:
            return {}
        desc = nic.describe(tb.cap_ns, tb.cap_if)
        return desc | {"rx_interrupts": nic.rx_interrupts(desc, self.irqs0, self.irqs1),
                       "rps_cpus": hygiene.rps_masks(tb.cap_ns, tb.cap_if)}

    def result(self, started_at: str, duration_s: float, load: Rate, gen_summary: dict) -> TrialResult:
        """This side's record, once every program has stopped."""
        from capbench.trial.remote_side import realtime_minus_monotonic_ns

        clock = realtime_minus_monotonic_ns() if self.m.gen_clock_ns is not None else None
        return assemble(self.m, self.readings(), gen_summary, started_at, duration_s, load, cap_clock_ns=clock)


def assemble(m: Measurer, readings: dict[str, Any], gen_summary: dict, started_at: str, duration_s: float,
             load: Rate, *, cap_clock_ns: int | None = None) -> TrialResult:
    """The record of one capture side from its host's readings (CaptureSide.readings, here or in
    a `capbench side` agent on another host) and the trial's own facts. Pure: it reads nothing.

    Latency across hosts (m.gen_clock_ns set: the generator's host's CLOCK_REALTIME − CLOCK_MONOTONIC;
    `cap_clock_ns` the capture host's): the stamps are each host's CLOCK_MONOTONIC, which PTP does
    not synchronise, so the latencies are moved onto the synchronised realtime clocks, by
    cap_clock_ns − gen_clock_ns (one constant: every percentile moves by it). Latencies that
    would then be below zero are left out, as without synchronised clocks."""
    r = dict(readings)
    for key in ("cap_cpus_seen", "napi_cpus_seen", "other_testbeds"):
        r[key] = tuple(r.get(key) or ())
    result = m._result(started_at=started_at, duration_s=duration_s, load=load, gen=gen_summary, **r)
    if m.cap_host is not None:
        result = dataclasses.replace(result, host=m.cap_host.name)
    if not m.latency_valid:
        result = dataclasses.replace(result, latency={}, latency_valid=False)
    elif m.gen_clock_ns is not None and result.latency:
        if cap_clock_ns is None:
            result = dataclasses.replace(result, latency={}, latency_valid=False)
        else:
            shift = cap_clock_ns - m.gen_clock_ns
            latency = {k: v + shift for k, v in result.latency.items()}
            # A frame received before it was sent: the clocks disagree by more than the latency,
            # whatever the topology says of them, and no percentile means anything.
            valid = min(latency.values()) >= 0
            result = dataclasses.replace(result, latency=latency if valid else {}, latency_valid=valid)
    return result


class Tap:
    """The tap of several sensors (seed 004's regeneration tap): capbench-xdpcount --clone-to on the
    test bed's capture veth counts every frame that reaches it ("seen by the tap") and sends a copy
    to each sensor's veth (cb_tap in xdp_count.bpf.c). Its receive work runs in the veth's NAPI
    thread on the tap's CPU; frames its 256-frame ring had no room for are the generator veth's
    xdp_xmit_errors, lost for every sensor alike."""

    def __init__(self, sender: Measurer, kids: ChildSet, cpu_: int | None):
        self.m, self.kids, self.cpu = sender, kids, cpu_
        self.napi: rxmode.NapiThreads | None = None

    def start(self) -> None:
        tb, host = self.m.testbed, self.m.gen_host
        program = "capbench-xdpcount" if host is not None and not host.local else str(self.m.binaries.xdpcount)
        self.child = start_on(host, self.kids, "the tap (capbench-xdpcount --clone-to)",
                              [program, "--iface", tb.cap_if, "--clone-to", ",".join(tb.tap_targets)], tb.cap_ns)
        self.child.wait_for("ready", self.m.setup.ready_timeout_s)

    def before_load(self) -> None:
        tb = self.m.testbed
        # The tap clones in its veth's own poll: a NAPI thread on its CPU in the napi and cpumap models.
        if tb.rx_mode != "rps" and self.cpu is not None:
            self.napi = rxmode.place(tb.cap_ns, tb.cap_if, self.cpu, rxmode.NapiSched.parse(tb.napi_sched))
        self.ring0 = read_ring_drops(tb.gen_ns, tb.gen_if, self.m.gen_host)

    def after_settle(self) -> None:
        tb = self.m.testbed
        self.ring1 = read_ring_drops(tb.gen_ns, tb.gen_if, self.m.gen_host)
        if not self.child.running:
            raise self.child.failure("ended during the trial")

    def mark(self, results: list[TrialResult]) -> list[TrialResult]:
        """The sensors' records (in sensor order) with what the tap counted: the frames it saw and
        those its ring lost."""
        summary = self.child.summary()
        ring = increase(self.ring0, self.ring1)
        return [dataclasses.replace(r, sensor=i + 1, sensors=self.m.testbed.sensors, tap_seen=int(summary["capbench"]),
                                    tap_ring_drops=ring, tap_cpu=self.cpu, raw={**r.raw, "tap": summary})
                for i, r in enumerate(results)]
