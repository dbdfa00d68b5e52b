"""A capture side on another host: a `capbench side` agent there runs one CaptureSide for one trial,
and RemoteSide drives it from here with CaptureSide's own interface (start, before_load,
after_load, after_settle, result), so run_trial takes local and remote sides alike.

A side reads many things of its own host (/proc/stat, /proc/PID/stat, `ip -s link`, `ethtool -S`,
its programs' output and files): the agent reads them there with the same code as a local trial
(CaptureSide) and sends them back as one JSON line; `trial_run.assemble` makes the record here.

The agent's protocol (JSON Lines on its stdout; its stdin carries the SSH wrapper's heartbeat, so
the phases are signals, sent to its process group: its programs run in groups of their own):

    start:            the counters and the capture program start          -> {"type": "ready"}
    SIGUSR1:          the before-load readings                            -> {"type": "loading"}
    SIGUSR2:          the after-load readings (its own load window)       -> {"type": "loaded"}
    SIGTERM:          the after-settle readings, the programs stopped     -> {"type": "readings", ...}

A SIGTERM (or SIGINT, SIGHUP) before `loaded` stops everything and ends the agent (exit 143):
that is how an interrupted capbench, or the wrapper's watchdog of a dropped connection, removes
what the agent started.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capbench.binaries import PROGRAMS, Binaries, find_binaries
from capbench.errors import RunError, Terminated, UsageError
from capbench.rates import Rate
from capbench.remote.ssh import Host
from capbench.testbed import preflight
from capbench.testbed.ports import NIC_RX_MODE
from capbench.testbed.procs import ChildSet
from capbench.testbed.veth_pair import Testbed
from capbench.trial import apps
from capbench.trial.measure import DECODE_TIMEOUT_S, STOP_TIMEOUT_S, Measurer, TrialSetup, scratch_dir
from capbench.trial.record import TrialResult

SPEC_VERSION = 1
STARTUP_S = 20.0  # ssh, Python and capbench's imports on the host, before the counters start
PHASE_TIMEOUT_S = 15.0  # one reading phase (a signal over the master, the readings, the answer)
STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def setup_to_json(s: TrialSetup) -> dict[str, Any]:
    d = dataclasses.asdict(s)
    d["app"] = None if s.app is None else dataclasses.asdict(s.app)
    d["profile"] = None  # the sampling is this machine's: a side on another host is never profiled
    return d


def setup_from_json(d: dict[str, Any]) -> TrialSetup:
    d = dict(d)
    app = d.pop("app", None)
    if app is not None:
        account = app.get("declared_account")
        app = apps.Adapter(**{**app, "counts": tuple(apps.Count(**c) for c in app["counts"]),
                              "declared_account": None if account is None else tuple(apps.AccountRow(**a)
                                                                                      for a in account),
                              "knobs": tuple(apps.AdapterKnob(**{**k, "candidates": tuple(k["candidates"]),
                                                                 "governs": tuple(k["governs"])})
                                             for k in app.get("knobs", ())),
                              "knob_values": tuple(tuple(v) for v in app.get("knob_values", ()))})
    # JSON has lists where TrialSetup has tuples: every tuple field (its declared type) back to one.
    for f in dataclasses.fields(TrialSetup):
        if str(f.type).startswith("tuple") and d.get(f.name) is not None:
            d[f.name] = tuple(d[f.name])
    return TrialSetup(**d, app=app)


def agent_spec(m: Measurer, duration_s: float, build_dir: str | None) -> dict[str, Any]:
    """What the agent needs to run `m`'s capture side on its host."""
    tb = m.testbed
    return {"spec": SPEC_VERSION, "iface": tb.cap_if, "netns": tb.cap_ns, "rx_cpu": tb.rx_cpu,
            "duration_s": duration_s, "build_dir": build_dir, "setup": setup_to_json(m.setup)}


def agent_measurer(spec: dict[str, Any]) -> Measurer:
    """The Measurer of an agent's side: its interface as a port of this host (nothing to build or
    steer; no sender interface here: its counters are the generator host's)."""
    if spec.get("spec") != SPEC_VERSION:
        raise UsageError(f"capbench side: spec version {spec.get('spec')!r}, this capbench reads {SPEC_VERSION}: "
                         f"run the same capbench on both hosts")
    build_dir = spec.get("build_dir")
    binaries = Binaries(*(Path(build_dir) / p for p in PROGRAMS)) if build_dir else find_binaries()
    tb = Testbed(id="side", gen_ns=None, cap_ns=spec.get("netns"), gen_if="", cap_if=spec["iface"], gen_mac="",
                 cap_mac="", rx_cpu=spec.get("rx_cpu"), rx_mode=NIC_RX_MODE, ports=True)
    return Measurer(binaries, tb, setup_from_json(spec["setup"]))


# Readings of the two clocks, of which the one taken in the shortest time is used.
CLOCK_SAMPLES = 16


def realtime_minus_monotonic_ns(samples: int = CLOCK_SAMPLES) -> int:
    """CLOCK_REALTIME − CLOCK_MONOTONIC on this host, now: what turns a capbench stamp (monotonic)
    into the time PTP synchronises across hosts.

    Each sample reads monotonic, realtime, monotonic and takes realtime against the midpoint: it
    is off by at most half the time between the two monotonic readings. That is well under a
    microsecond, unless the process was preempted or its vCPU stopped in between (a hypervisor
    stop here lasts 0.2-50 ms): one such sample moved a topology's latencies 90 us below zero. So
    the sample read in the shortest time is used."""
    best: tuple[int, int] | None = None  # (time the sample took, its difference)
    for _ in range(samples):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + (b - a) // 2))
    assert best is not None
    return best[1]


def engine_refusal(host: Host, engine: str) -> str | None:
    """Whether `host`'s kernel runs the generator's `engine` (preflight.engine_refusal there: its
    capbench-gen asked, sending nothing); None when it does, else its one line."""
    if host.local:
        return preflight.engine_refusal(str(find_binaries().gen), engine)
    p = host.run([*host.capbench, "gen", *preflight.PROBE_ARGS, "--engine", engine], timeout_s=30)
    why = preflight.refusal_of(p)
    return None if why is None else f"on {host.where}: {why}"


def host_clock_ns(host: Host) -> int:
    """realtime_minus_monotonic_ns() of `host` (its capbench: `capbench side --clock`)."""
    if host.local:
        return realtime_minus_monotonic_ns()
    argv = [*host.capbench, "side", "--clock"]
    p = host.run(argv, timeout_s=30)
    try:
        return int(json.loads(p.stdout)["realtime_minus_monotonic_ns"])
    except (ValueError, KeyError, TypeError):
        raise RunError(f"host {host.where}: `{' '.join(argv)}` did not say its clocks "
                       f"({(p.stderr.strip().splitlines() or ['exit status ' + str(p.returncode)])[-1][:200]})") from None


class PhaseSignals:
    """The agent's phase signals (SIGUSR1, SIGUSR2, then a stop), taken one at a time in its main
    thread. Each gets a Python handler that queues it: Python runs handlers in the main thread,
    whichever thread the kernel delivered the signal to. (Blocking them for sigtimedwait() would
    block them in the main thread only: the threads that read the programs' output were started
    before and do not block them, so a signal that came while the main thread was busy between
    waits, sampling, went to one of those and ended the agent.) The wakeup fd ends a wait at once;
    the handlers the agent had before come back at the end, so that a stop after the last phase
    ends it as before."""

    def __init__(self) -> None:
        self.queued: list[int] = []
        self.saved: dict[int, Any] = {}
        self.read_fd = self.write_fd = -1
        self.saved_fd = -1

    def __enter__(self) -> PhaseSignals:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.saved_fd = signal.set_wakeup_fd(self.write_fd)
        for s in (signal.SIGUSR1, signal.SIGUSR2, *STOPS):
            self.saved[s] = signal.signal(s, lambda signum, _frame: self.queued.append(signum))
        return self

    def __exit__(self, *_: Any) -> None:
        for s, handler in self.saved.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self.saved_fd)
        os.close(self.read_fd)
        os.close(self.write_fd)

    def wait(self, want: int, sample: Callable[[], None] | None = None) -> None:
        """Until `want` comes (`sample()` once a second meanwhile); Terminated on a stop first."""
        while True:
            while self.queued:
                got = self.queued.pop(0)
                if got == want:
                    return
                if got in STOPS:
                    raise Terminated()
            if not select.select([self.read_fd], [], [], 1.0)[0]:
                if sample is not None:
                    sample()
                continue
            try:
                os.read(self.read_fd, 64)  # the handlers have run (or run now): their signals are queued
            except BlockingIOError:
                pass


def run_agent(spec: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    """`capbench side`: one CaptureSide of one trial on this host, driven by signals (module doc)."""
    from capbench.trial.trial_run import CaptureSide  # it imports this module's callers

    m = agent_measurer(spec)
    duration_s = float(spec["duration_s"])
    with ChildSet(stop_timeout_s=STOP_TIMEOUT_S) as kids, scratch_dir(m.setup.app is not None) as workdir:
        side = CaptureSide(m, kids, workdir, duration_s)
        side.start()
        with PhaseSignals() as phases:
            emit({"type": "ready"})
            phases.wait(signal.SIGUSR1)
            side.before_load()
            t0 = time.monotonic()
            emit({"type": "loading"})
            phases.wait(signal.SIGUSR2, side.sample)
            side.after_load(time.monotonic() - t0)
            emit({"type": "loaded"})
            phases.wait(signal.SIGTERM, side.sample)
        side.after_settle()
        for prog, at in [(prog, prog.signal_stop()) for prog in side.progs]:
            prog.wait_stopped(at)
        kids.stop_all()
        emit({"type": "readings", "readings": side.readings(), "realtime_minus_monotonic_ns":
              realtime_minus_monotonic_ns()})
    return 0


class RemoteSide:
    """CaptureSide's interface for a side on `m.cap_host`: a `capbench side` agent there."""

    def __init__(self, measurer: Measurer, kids: ChildSet, duration_s: float):
        self.m, self.kids, self.duration_s = measurer, kids, duration_s
        self.host: Host = measurer.cap_host
        self.progs: list[Any] = []  # the agent stops its own programs
        self.child = None
        self.sent: set[int] = set()  # the phases asked for
        self.got: dict[str, Any] | None = None
        self.clock_ns: int | None = None  # its host's realtime_minus_monotonic_ns, with its readings

    def launch(self) -> None:
        """Start the agent without waiting for it (run_trial starts every side's agent at once)."""
        if self.child is None:
            spec = agent_spec(self.m, self.duration_s, self.host.build_dir)
            argv = [*self.host.capbench, "side", "--spec", json.dumps(spec, separators=(",", ":"))]
            self.child = self.host.start(f"capbench side ({self.m.testbed.cap_if})", argv)
            self.kids.children.append(self.child)

    def start(self) -> None:
        self.launch()
        self.child.wait_for("ready", STARTUP_S + self.m.setup.ready_timeout_s)

    def signal(self, signum: int) -> None:
        """Ask for the phase of `signum` (its answer is waited for by the phase's method), so that
        run_trial can ask every side first and then wait for all."""
        if signum not in self.sent:
            self.sent.add(signum)
            self.child.signal(signum)

    def _phase(self, signum: int, answer: str, timeout_s: float = PHASE_TIMEOUT_S) -> dict[str, Any]:
        self.signal(signum)
        return self.child.wait_for(answer, timeout_s)

    def sample(self) -> None:
        """Once a second while the trial runs (the agent samples softnet_stat on its host): a lost
        host, or an agent that ended, is an error now (its message names the host), so the trial
        stops at once, its generator with it, rather than at the next phase."""
        if self.child is not None and not self.child.running:
            raise self.child.failure("ended before its readings")
        self.host.check_not_lost()

    def before_load(self) -> None:
        self._phase(signal.SIGUSR1, "loading")

    def after_load(self, window_s: float) -> None:
        self._phase(signal.SIGUSR2, "loaded")

    def after_settle(self) -> None:
        msg = self._phase(signal.SIGTERM, "readings", STOP_TIMEOUT_S + DECODE_TIMEOUT_S + PHASE_TIMEOUT_S)
        if not isinstance(msg.get("readings"), dict):
            raise RunError(f"{self.child.name} on {self.host.name} sent no readings")
        self.got = msg["readings"]
        self.clock_ns = msg.get("realtime_minus_monotonic_ns")

    def readings(self) -> dict[str, Any]:
        assert self.got is not None
        return self.got

    def result(self, started_at: str, duration_s: float, load: Rate, gen_summary: dict) -> TrialResult:
        from capbench.trial.trial_run import assemble

        return assemble(self.m, self.readings(), gen_summary, started_at, duration_s, load, cap_clock_ns=self.clock_ns)
