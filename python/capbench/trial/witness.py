"""The host's interference on a trial's CPUs, and whether a lossy trial could be the host's doing.

A trial on a virtual machine, a CI runner or a busy sensor measures the host as much as the capture
stack: a vCPU the hypervisor does not run, or another process on the receive CPU, holds the ring's
consumer off, and the ring overflows. So every trial records, per CPU it used and over its load
window (TrialResult.host_interference, keyed by the CPU's number as text):

  roles             what the trial ran there: generator, receive, counter, tap, workers
  steal_ms          /proc/stat's steal time (the hypervisor ran another guest; PARAVIRT_TIME_ACCOUNTING
                    kernels only, else 0; 10 ms resolution: USER_HZ ticks)
  others_ms         CPU time of tasks that are not the trial's, idle excluded; the trial's are every
                    process of capbench's run cgroup (testbed/cgroups.py), capbench itself and the
                    trial's kernel threads (its NAPI threads) by pid
  others_top        [[name, ms], ...]: the largest of them by thread name (OTHERS_TOP)
  others_longest_ms the longest time one other task ran at a stretch, `others_longest_name` its name:
                    what holds the trial's consumer off when it shares the CPU
  trial_ms          CPU time of the trial's own tasks there
  stops             how many times the CPU itself stopped (its canary timer fired late by at least
                    the canary's period, `stop_min_us`: the hypervisor did not run the vCPU)
  stop_ms           their total, `longest_stop_us` the longest, `stops_us` the longest STOPS_LISTED
  not_measured      what could not be read here and why (a figure not measured is null, never 0)

The figures other than steal come from capbench-witness (src/tools/witness.c, src/bpf/witness.bpf.c),
one per run: `running()` starts it, each trial takes a Window around its load. Without it (no BPF
tracing, no perf events, a run without one) the record holds steal and says what is missing.

`judge()` marks a lossy trial `disturbed` when that interference can explain its loss: a stop of d
seconds at r frames per second brings d·r frames while the ring's consumer is held off, and a ring
of N frames overflows by d·r − N; the same for another task's longest stretch on a CPU of the
receive path, or the others' whole time there once it is OTHERS_SHARE of the window; or the
generator's catch-up burst beyond the ring. A generator that fell short sent less, and what it
sent and the capture lost stays capture loss (a lossless such trial is a lower bound, verdict.py).
A lossless trial is never disturbed.

`probe()` is the instrument's own resolution, before the first trial: PROBE_S of the witness on
the run's CPUs with no load, what stops there and how long, and at which rate the ring overflows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench.errors import RunError
from capbench.testbed import cgroups
from capbench.testbed import cpu
from capbench.testbed import rxmode
from capbench.testbed.procs import Child, ChildError
from capbench.trial.record import TrialResult

# The canary's period: a stop shorter than this is not seen. Measured here (docs/programs.md): a
# firing costs ~1 µs of BPF and a timer interrupt; 250 µs took ~3.5 % of a busy loop's CPU, 500 µs
# ~1.5 %, 1 ms too little to tell from the host's own noise.
CANARY_PERIOD_US = 500
OTHERS_TOP = 3  # names listed per CPU
STOPS_LISTED = 32  # the longest stops listed per CPU and window (capbench-witness's STOPS_LISTED)
PROBE_S = 2.0  # the probe before the first trial
READY_TIMEOUT_S = 5.0
SNAPSHOT_TIMEOUT_S = 5.0
# The CPU roles whose hold-off overflows the receive ring or a socket buffer.
CONSUMER_ROLES = ("receive", "tap", "counter", "workers")
# A lossy trial is disturbed when the host's interference accounts for at least this share of its
# loss: the canary sees a stop up to one period short, and only the longest STOPS_LISTED are listed.
EXPLAINED_SHARE = 0.5
# Others' time on a CPU of the receive path counts as a whole once it takes this share of the trial's
# window: the consumer then lacks that much CPU time, in whatever pieces (the longest stretch alone
# judges less). Below it, a quiet host's kernel workers (well under 1 % here) never count.
OTHERS_SHARE = 0.1
NOT_MEASURED = "—"  # how a figure not measured is printed


def ring_frames(rx_ring: int | None) -> int:
    """The receive ring's depth in frames, as a trial records it (`rx_ring`: the cpumap queue's, or
    the veth's fixed ring; None on ports, where the NIC's ring is not known here: the veth's is
    taken, the shallowest a stop is judged against)."""
    return int(rx_ring or rxmode.VETH_RING_FRAMES)


class WitnessChild(Child):
    """capbench-witness: asked for a snapshot on its stdin."""

    STDIN = subprocess.PIPE

    def snapshot(self, pids: Iterable[int] = ()) -> dict:
        """What each CPU saw since the last snapshot; `pids` are the trial's from now on."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(" ".join(["snapshot", *map(str, sorted(set(pids)))]) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self.failure("ended") from None
        return self.wait_for("snapshot", SNAPSHOT_TIMEOUT_S)


class Witness:
    """The run's capbench-witness on `cpus`, or why there is none (`why_not`)."""

    def __init__(self, program: Path | None, cpus: Sequence[int], why_not: str = ""):
        self.cpus = tuple(sorted(set(cpus)))
        self.child: WitnessChild | None = None
        self.why_not = why_not
        self.canary_why_not = ""
        if program is None:
            self.why_not = why_not or "capbench-witness is not built (`make`)"
            return
        group = cgroups.run_group()
        argv = [str(program), "--cpus", ",".join(map(str, self.cpus)), "--period-us", str(CANARY_PERIOD_US),
                *(["--cgroup", str(group.path)] if group is not None else [])]
        try:
            self.child = WitnessChild("capbench-witness", argv)
            ready = self.child.wait_for("ready", READY_TIMEOUT_S)
            self.canary_why_not = str(ready.get("canary", ""))
        except ChildError as e:
            self.stop()
            self.why_not = f"capbench-witness could not start: {e}"

    def snapshot(self, pids: Iterable[int] = ()) -> dict | None:
        """A snapshot, or None (and why_not set) once the witness has failed."""
        if self.child is None:
            return None
        try:
            return self.child.snapshot(pids)
        except ChildError as e:
            self.why_not = f"capbench-witness failed: {e}"
            self.stop()
            return None

    def stop(self) -> None:
        if self.child is not None:
            if self.child.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.child.proc.stdin.close()  # its end of input: it exits
            self.child.stop()
            self.child = None


_active: Witness | None = None


@contextlib.contextmanager
def running(program: Path | None, cpus: Sequence[int], why_not: str = "") -> Iterator[Witness]:
    """The run's witness on `cpus` while the block runs: every trial's Window reads it. No
    `program`: none, for the reason `why_not`."""
    global _active
    w, before = Witness(program, cpus, why_not), _active
    _active = w
    try:
        yield w
    finally:
        _active = before  # a witness started inside another's block gives it back
        w.stop()


def active() -> Witness | None:
    """The witness of the run in progress, if one was started."""
    return _active


def program_path(binaries: Any) -> Path | None:
    """capbench-witness beside the other programs, None where it was not built."""
    path = Path(binaries.witness)
    return path if os.access(path, os.X_OK) else None


@dataclass
class Reading:
    """What one window read: the seconds it lasted, /proc/stat at both ends and the witness's
    snapshot (None: not measured, `why_not`)."""

    window_s: float
    stat0: dict[int, cpu.CpuJiffies]
    stat1: dict[int, cpu.CpuJiffies]
    snapshot: dict | None
    why_not: str = ""
    canary_why_not: str = ""


class Window:
    """One trial's (or the probe's) window: begin() at the start of the load, end() after it."""

    def __init__(self, witness: Witness | None):
        self.witness = witness

    def begin(self, pids: Iterable[int] = ()) -> None:
        """The window opens; `pids` are the trial's kernel threads (capbench itself is added)."""
        if self.witness is not None:
            self.witness.snapshot({os.getpid(), *pids})
        self.stat0 = cpu.read_proc_stat()
        self.t0 = time.monotonic()

    def end(self) -> Reading:
        t1 = time.monotonic()
        stat1 = cpu.read_proc_stat()
        w = self.witness
        snap = w.snapshot() if w is not None else None
        why = "no witness was started for this trial" if w is None else w.why_not if snap is None else ""
        return Reading(t1 - self.t0, self.stat0, stat1, snap, why, w.canary_why_not if w is not None else "")


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def cpu_figures(reading: Reading, c: int) -> dict[str, Any]:
    """The host_interference object of CPU `c` (roles left to the caller)."""
    out: dict[str, Any] = {}
    if c in reading.stat0 and c in reading.stat1:
        out["steal_ms"] = round((reading.stat1[c].steal - reading.stat0[c].steal) * 1000 / cpu.CLK_TCK, 1)
    else:
        out["steal_ms"] = None
    view = next((v for v in (reading.snapshot or {}).get("cpus", ()) if v.get("cpu") == c), None)
    missing = []
    if view is None:
        out.update(others_ms=None, others_top=[], others_longest_ms=None, others_longest_name="", trial_ms=None)
        missing.append("others' time: " + (reading.why_not or f"the witness does not watch CPU {c}"))
    else:
        out.update(others_ms=_ms(view["others_ns"]),
                   others_top=[[t["name"], _ms(t["ns"])] for t in view.get("others_top", ())[:OTHERS_TOP]],
                   others_longest_ms=_ms(view.get("others_longest_ns", 0)),
                   others_longest_name=str(view.get("others_longest_name", "")),
                   trial_ms=_ms(view["trial_ns"]))
    if view is None or reading.canary_why_not:
        out.update(stops=None, stop_ms=None, longest_stop_us=None, stops_us=[], stop_min_us=None)
        missing.append("stops: " + (reading.canary_why_not or reading.why_not or "not watched"))
    else:
        out.update(stops=int(view["stops"]), stop_ms=_ms(view["stop_ns"]),
                   longest_stop_us=round(view["longest_stop_ns"] / 1e3),
                   stops_us=[round(ns / 1e3) for ns in view.get("stops_ns", ())], stop_min_us=CANARY_PERIOD_US)
    if missing:
        out["not_measured"] = "; ".join(missing)
    return out


def trial_roles(r: TrialResult) -> dict[int, list[str]]:
    """The CPUs a trial used and what it ran on each, from its record."""
    receive = (r.kernel_rx_cpu,) if r.kernel_rx_cpu is not None else tuple(r.napi_cpus_seen)
    counter = tuple(r.cap_cpus_seen) or tuple(c for c in r.proc_cpus if c is not None) or (
        (r.cap_cpu,) if r.cap_cpu is not None else ())
    found: dict[int, list[str]] = {}
    for role, cpus in (("generator", () if r.gen_cpu is None or r.host else (r.gen_cpu,)), ("receive", receive),
                       ("tap", () if r.tap_cpu is None else (r.tap_cpu,)), ("counter", counter),
                       ("workers", tuple(r.worker_cpus))):
        for c in cpus:
            roles = found.setdefault(c, [])
            # A backend's read thread shows as a worker on the counter's CPU: one role there.
            if role not in roles and not (role == "workers" and "counter" in roles):
                roles.append(role)
    return dict(sorted(found.items()))


def interference(reading: Reading, roles: dict[int, list[str]]) -> dict[str, Any]:
    """host_interference: each CPU of `roles` with its roles and figures."""
    return {str(c): {"roles": list(rs), **cpu_figures(reading, c)} for c, rs in roles.items()}


def _rate_text(pps: float) -> str:
    """250 kpps, 1.49 Mpps: a rate in a reason."""
    for scale, unit in ((1e6, "Mpps"), (1e3, "kpps")):
        if pps >= scale:
            return f"{pps / scale:.3g} {unit}"
    return f"{pps:.0f} pps"


def _overflow(seconds: float, pps: float, ring: int) -> int:
    """Frames a ring of `ring` frames loses while its consumer is held off `seconds` at `pps`."""
    return max(0, int(seconds * pps) - ring)


def judge(r: TrialResult, ring: int) -> tuple[bool, str]:
    """Whether lossy trial `r`'s loss could be the host's (its host_interference and generator),
    and the reason naming the counter and the figure. Never for a lossless trial."""
    if r.lost <= 0:
        return False, ""
    # A generator that fell short sent less: what was lost of what it sent is the capture's at the
    # rate it sent (never the host's for that alone); only its catch-up burst beyond the ring, a
    # candidate below, can explain loss.
    host = _host_reasons(r, ring)
    return bool(host), "; ".join(host)


def _host_reasons(r: TrialResult, ring: int) -> list[str]:
    """The host's interference that explains at least EXPLAINED_SHARE of lossy trial `r`'s loss: the
    two largest reasons, or none."""
    pps = r.achieved_pps or (r.offered_pps or 0.0)
    if pps <= 0:
        return []
    ring_ms = ring / pps * 1e3
    tail = f"at {_rate_text(pps)}; ring {ring:,} frames ({ring_ms:.2g} ms)"
    candidates: list[tuple[int, str]] = []  # (frames it explains, the reason)
    if r.catchup_burst_frames > ring:
        candidates.append((r.catchup_burst_frames - ring,
                           f"generator: {r.gen_max_lag_ns / 1e6:.3g} ms behind its schedule, caught up with "
                           f"{r.catchup_burst_frames:,} frames at once; ring {ring:,} frames"))
    for key, v in r.host_interference.items():
        if not set(v.get("roles", ())) & set(CONSUMER_ROLES):
            continue
        stops = v.get("stops_us") or []
        if stops:
            explained = sum(_overflow(us / 1e6, pps, ring) for us in stops)
            if explained:
                d = stops[0] / 1e6
                candidates.append((explained, f"CPU {key}: stopped {d * 1e3:.3g} ms (longest of {v.get('stops', len(stops))}"
                                              f"), {int(d * pps):,} frames {tail}"))
        elif v.get("stops") is None and v.get("steal_ms"):  # no canary: steal says the CPU stopped
            d = v["steal_ms"] / 1e3
            if _overflow(d, pps, ring):
                candidates.append((_overflow(d, pps, ring), f"CPU {key}: {d * 1e3:.3g} ms stolen by the hypervisor "
                                                            f"(steal, 10 ms resolution), {int(d * pps):,} frames {tail}"))
        others, window_ms = v.get("others_ms") or 0.0, r.window_s * 1e3
        if window_ms > 0 and others >= OTHERS_SHARE * window_ms and _overflow(others / 1e3, pps, ring):
            top = v.get("others_top") or []
            most = f", most {top[0][0]} {top[0][1]:.4g} ms" if top else ""
            candidates.append((_overflow(others / 1e3, pps, ring),
                               f"CPU {key}: others ran {others:.4g} ms, {others / window_ms:.0%} of the trial{most}; "
                               f"{int(others / 1e3 * pps):,} frames {tail}"))
        stretch = (v.get("others_longest_ms") or 0) / 1e3
        if _overflow(stretch, pps, ring):
            name = v.get("others_longest_name") or "another task"
            candidates.append((_overflow(stretch, pps, ring),
                               f"CPU {key}: {name} ran {stretch * 1e3:.3g} ms at a stretch "
                               f"(others {v.get('others_ms', 0):.3g} ms in all), {int(stretch * pps):,} frames {tail}"))
    # The figures overlap (a hog's stretch is in the others' time): the largest one must explain it.
    if not candidates or max(n for n, _ in candidates) < EXPLAINED_SHARE * r.lost:
        return []
    candidates.sort(key=lambda c: -c[0])
    return [text for _, text in candidates[:2]]


def mark(r: TrialResult, reading: Reading | None, ring: int) -> TrialResult:
    """`r` with its host_interference (when read) and the verdict on it."""
    if reading is not None:
        r = dataclasses.replace(r, host_interference=interference(reading, trial_roles(r)))
    disturbed, reason = judge(r, ring)
    return dataclasses.replace(r, disturbed=disturbed, disturbed_reason=reason)


# --- the probe before the first trial --------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """The host on the run's CPUs with no load (item 4 of issue 28): per CPU its figures over
    `seconds`, and what they mean for the run's top rate with the ring's depth."""

    seconds: float
    cpus: dict[str, dict[str, Any]]
    ring_frames: int
    top_pps: float | None  # the run's highest offered rate (None: not known before the run)

    def longest_stop_s(self) -> float | None:
        """The longest stop any CPU showed; None where stops were not measured."""
        seen = [v["longest_stop_us"] for v in self.cpus.values() if v.get("longest_stop_us") is not None]
        return max(seen) / 1e6 if seen else None

    def overflow_pps(self) -> float | None:
        """The rate above which the probe's longest stop overflows the ring (None: no stop seen)."""
        d = self.longest_stop_s()
        return self.ring_frames / d if d else None

    def noisy_because(self) -> list[str]:
        """Why the host is too noisy for the run: stops like the probe's would overflow the ring at
        the run's top rate in most trials, or other work takes OTHERS_SHARE of a CPU of the run."""
        why = []
        limit = self.overflow_pps()
        if limit is not None and self.top_pps is not None and self.top_pps > limit:
            why.append(f"its stops overflow the ring at the run's top rate ({_rate_text(self.top_pps)})")
        busy = [f"CPU {c} {v['others_ms'] / self.seconds / 10:.0f} %" for c, v in self.cpus.items()
                if v.get("others_ms") is not None and v["others_ms"] >= OTHERS_SHARE * self.seconds * 1e3]
        if busy:
            why.append(f"other work takes {', '.join(busy)}")
        return why

    def noisy(self) -> bool:
        return bool(self.noisy_because())

    def line(self) -> str:
        """The terminal's one line."""
        parts = []
        for c, v in self.cpus.items():
            stops = (NOT_MEASURED if v.get("stops") is None else
                     f"{v['stops'] / self.seconds:.3g}/s, longest {v['longest_stop_us'] / 1e3:.3g} ms")
            others = NOT_MEASURED if v.get("others_ms") is None else f"{v['others_ms'] / self.seconds / 10:.1f} %"
            parts.append(f"CPU {c} stops {stops}, others {others}, steal {v['steal_ms']:.0f} ms")
        text = f"host probe ({self.seconds:g} s idle): " + "; ".join(parts)
        limit = self.overflow_pps()
        if limit is not None:
            text += f"; the longest stop overflows the {self.ring_frames:,}-frame ring above {_rate_text(limit)}"
        if why := self.noisy_because():
            text += (f". Too noisy for this run: {'; '.join(why)}, so expect loss that is the host's; measure fewer "
                     f"or lower rates, a deeper ring, --repeat, or on a quieter host or another machine")
        return text

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "cpus": self.cpus, "ring_frames": self.ring_frames,
                "top_pps": self.top_pps, "overflow_pps": self.overflow_pps(), "noisy": self.noisy(),
                "stop_min_us": CANARY_PERIOD_US, "line": self.line()}


def probe(witness: Witness | None, ring: int, top_pps: float | None, seconds: float = PROBE_S) -> Probe:
    """`seconds` of the witness on its CPUs, nothing of the run loaded."""
    if witness is None or not witness.cpus:
        raise RunError("the probe needs a witness on the run's CPUs")
    window = Window(witness)
    window.begin()
    time.sleep(seconds)
    reading = window.end()
    figures = {str(c): cpu_figures(reading, c) for c in witness.cpus}
    return Probe(round(reading.window_s, 3), figures, ring, top_pps)
