"""`capbench run --method`: one method per run, over every backend and frame length.

Each method gets a Measurer per (backend, frame length) and decides from trial
results only (see docs/methods.md). Every trial is handed to `record` as soon as
it ends, tagged with the method and why it ran (`purpose`), so trials.jsonl grows
trial by trial; each method's answer for one (backend, frame length) is handed to
`record_outcome` as a plain dict (searches.jsonl), with every figure taken from
the method's result. Each answer says what bounded it (`bounded_by`; per goal for
MLR), by the one rule of capbench.methods.verdict: "capture loss" (lossy trials),
"generator" (only lower bounds: the generator could not hold the next rate and
lost nothing, so the answer is a lower bound of the capture's) or "none"; readers
of older lines without it (capbench.report.answers) judge it from the trials.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from capbench.errors import UsageError
from capbench.methods import back2back, mlr, rfc2544, sweep
from capbench.methods.measurer import SearchTrial, TrialRunner
from capbench.rates import Rate, wire_pps
from capbench.trial.measure import Measurer, TrialResult

METHODS = ("iperf", "rfc2544", "mlr", "sweep", "back2back", "latency")
# Frames a back-to-back burst may need beyond its own sending time: process start-up,
# the counter's last ring blocks.
BURST_MARGIN_S = 1.0


@dataclass(frozen=True)
class MethodSettings:
    method: str = "iperf"
    precision_pct: float = 1.0  # of the wire rate (rfc2544, mlr)
    loss_tolerance_frames: int = 0  # rfc2544, back2back
    trial_s: float | None = None  # search / sweep trial length; None: the method's default
    steps: int = sweep.DEFAULT_STEPS
    pause_s: float = 2.0  # before each trial of a search, sweep or burst

    def check(self, sizes: Iterable[int | str]) -> None:
        if self.method not in METHODS:
            raise UsageError(f"unknown method {self.method!r}: use one of {', '.join(METHODS)}")
        if self.method != "iperf" and any(isinstance(s, str) for s in sizes):
            raise UsageError(f"--method {self.method} searches at fixed frame lengths: give lengths in "
                             f"--sizes, not profiles (profiles work with --method iperf)")


Record = Callable[[TrialResult], None]
RecordOutcome = Callable[[dict[str, Any]], None]
MakeMeasurer = Callable[[str, int | str], Any]  # a Measurer, or anything with its measure()


@dataclass(frozen=True)
class Context:
    """What every search of one run shares."""

    settings: MethodSettings
    link_bps: float
    record: Record
    pause: Callable[[float], None] | None  # None: time.sleep


def _tagger(record: Record, method: str) -> Callable[[SearchTrial], None]:
    def on_trial(trial: SearchTrial) -> None:
        record(dataclasses.replace(trial.result, method=method, purpose=trial.purpose))
    return on_trial


def _common(method: str, backend: str, frame_len: int, result: Any) -> dict[str, Any]:
    return {"method": method, "backend": backend, "frame_len": frame_len, "link_bps": result.link_bps,
            "wire_pps": result.wire_pps, "trials": len(result.trials),
            "total_trial_s": result.total_trial_s, "total_pause_s": result.total_pause_s}


def _rfc2544(m: Any, backend: str, frame_len: int, c: Context) -> dict[str, Any]:
    s = c.settings
    r = rfc2544.search(m, frame_len=frame_len, link_bps=c.link_bps, precision_pct=s.precision_pct,
                       loss_tolerance_frames=s.loss_tolerance_frames,
                       trial_s=s.trial_s or rfc2544.RFC2544_TRIAL_S, pause_s=s.pause_s,
                       verify_pause_s=max(s.pause_s, 10.0), pause=c.pause, on_trial=_tagger(c.record, "rfc2544"))
    return _common("rfc2544", backend, frame_len, r) | {
        "throughput_pps": r.throughput_pps, "throughput_gbps": r.throughput_gbps,
        "lowest_lossy_pps": r.lowest_lossy_pps, "upper_bound_pps": r.upper_bound_pps, "bounded_by": r.bounded_by,
        "precision_pct": r.precision_pct,
        "loss_tolerance_frames": r.loss_tolerance_frames, "trial_s": r.trial_s, "short_trials": r.short_trials,
        "verified": r.verified, "verification_failures_pps": list(r.verification_failures_pps),
        "notes": list(r.notes)}


def _mlr(m: Any, backend: str, frame_len: int, c: Context) -> dict[str, Any]:
    s = c.settings
    final_s = s.trial_s or 60.0
    r = mlr.search(m, frame_len=frame_len, link_bps=c.link_bps, precision_pct=s.precision_pct,
                   final_trial_s=final_s, initial_trial_s=min(1.0, final_s), pause_s=s.pause_s, pause=c.pause,
                   on_trial=_tagger(c.record, "mlr"))
    return _common("mlr", backend, frame_len, r) | {
        "precision_pct": r.precision_pct, "final_trial_s": r.final_trial_s,
        "goals": [dataclasses.asdict(g) | {"throughput_pps": g.throughput_pps} for g in r.goals]}


def _sweep(m: Any, backend: str, frame_len: int, c: Context) -> dict[str, Any]:
    s = c.settings
    r = sweep.run(m, frame_len=frame_len, link_bps=c.link_bps, steps=s.steps, trial_s=s.trial_s or 10.0,
                  pause_s=s.pause_s, pause=c.pause, on_trial=_tagger(c.record, "sweep"))
    return _common("sweep", backend, frame_len, r) | {
        "steps": r.steps, "trial_s": r.trial_s, "lossless_up_to_pps": r.lossless_up_to_pps,
        "first_lossy_pps": r.first_lossy_pps, "short_steps_pps": list(r.short_steps_pps),
        "first_short_pps": r.first_short_pps, "bounded_by": r.bounded_by,
        "points": [{"step": p.step, "load_pps": p.load_pps, "sent": p.sent, "received": p.received, "lost": p.lost,
                    "rx_pps": p.rx_pps, "app_cpu_pct": p.app_cpu_pct, "kernel_cpu_pct": p.kernel_cpu_pct,
                    "invalid_offered_load": p.short, "verdict": p.verdict}
                   for p in r.points]}


def burst_measurer(m: Measurer) -> Callable[[int], TrialResult]:
    """measure_burst(frames): `frames` frames at the link's wire rate, then the counts."""
    wire = wire_pps(m.setup.link_bps, m.setup.frame_len)

    def measure_burst(frames: int) -> TrialResult:
        setup = dataclasses.replace(m.setup, gen_args=(*m.setup.gen_args, "--count", str(frames)))
        burst = Measurer(m.binaries, m.testbed, setup)
        return burst.measure(frames / wire + BURST_MARGIN_S, Rate("pct", 100.0, "100%"))

    return measure_burst


def _back2back(m: Any, backend: str, frame_len: int, c: Context) -> dict[str, Any]:
    s = c.settings
    # A resumed step's campaign.ReplayMeasurer has its own measure_burst: it replays the bursts
    # recorded before it makes new ones (burst_measurer(m) alone would start every burst afresh).
    measure_burst = getattr(m, "measure_burst", None) or burst_measurer(m)
    r = back2back.search(measure_burst, frame_len=frame_len, link_bps=c.link_bps,
                         loss_tolerance_frames=s.loss_tolerance_frames, pause_s=s.pause_s, pause=c.pause,
                         on_trial=_tagger(c.record, "back2back"))
    return _common("back2back", backend, frame_len, r) | {
        "max_frames": r.max_frames, "precision_frames": r.precision_frames,
        "longest_frames": list(r.longest_frames), "mean_frames": r.mean_frames, "min_frames": r.min_frames,
        "mean_burst_s": r.mean_burst_s, "unlimited": r.unlimited, "bounded_by": r.bounded_by,
        "notes": list(r.notes)}


def _latency(m: Any, backend: str, frame_len: int, c: Context) -> dict[str, Any]:
    """RFC 2544 section 26.2: the throughput first (a 26.1 search), then a trial at that rate whose
    one-way latency (receive time - TX stamp, from the counter) is the answer."""
    s = c.settings
    found = _rfc2544(m, backend, frame_len, dataclasses.replace(c, record=_retag(c.record, "latency")))
    tp = found["throughput_pps"]
    out = {k: found[k] for k in ("backend", "frame_len", "link_bps", "wire_pps", "trials", "total_trial_s",
                                 "total_pause_s", "bounded_by")} | {"method": "latency", "throughput_pps": tp}
    if tp <= 0:
        return out | {"latency": {}, "note": "no rate passed the throughput search: no latency to measure"}
    runner = TrialRunner(m.measure, pause_s=s.pause_s, pause=c.pause, on_trial=_tagger(c.record, "latency"))
    r = runner.run(tp, s.trial_s or rfc2544.RFC2544_TRIAL_S, "latency at throughput").result
    return out | {"trials": found["trials"] + 1, "total_trial_s": found["total_trial_s"] + r.duration_s,
                  "total_pause_s": found["total_pause_s"] + runner.total_pause_s,
                  "latency": getattr(r, "latency", {}), "iat": getattr(r, "iat", {}),
                  "rx_clock": getattr(r, "rx_clock", ""), "lost": r.lost}


def _retag(record: Record, method: str) -> Record:
    """A record function that files trials under `method` (a search run inside another method)."""
    def retagged(r: TrialResult) -> None:
        record(dataclasses.replace(r, method=method))
    return retagged


SEARCHES = {"rfc2544": _rfc2544, "mlr": _mlr, "sweep": _sweep, "back2back": _back2back, "latency": _latency}


def run_step(method: str, measurer: Any, backend: str, size: int | str, context: Context, *, rate: Rate,
             duration_s: float, record_outcome: RecordOutcome) -> None:
    """One method at one backend and size: an iperf trial, or a search whose answer goes to
    `record_outcome`. Trials go to `context.record` as they end."""
    if method == "iperf":
        context.record(dataclasses.replace(measurer.measure(duration_s, rate), method="iperf",
                                           purpose="constant load"))
        return
    if not isinstance(size, int):
        raise UsageError(f"--method {method} searches at fixed frame lengths, not profiles ({size})")
    record_outcome(SEARCHES[method](measurer, backend, size, _no_pause_before_replays(context, measurer)))


def _no_pause_before_replays(context: Context, measurer: Any) -> Context:
    """A resumed step (campaign.ReplayMeasurer) replays its recorded trials: nothing runs, so the
    pauses before them are skipped (the methods still count them, so the answer is the same)."""
    if getattr(measurer, "replaying", None) is not True:
        return context
    wait = context.pause or time.sleep

    def pause(seconds: float) -> None:
        if not measurer.replaying:
            wait(seconds)

    return dataclasses.replace(context, pause=pause)


def run(settings: MethodSettings, make_measurer: MakeMeasurer, backends: Iterable[str],
        sizes: Iterable[int | str], *, link_bps: float, rate: Rate, duration_s: float, record: Record,
        record_outcome: RecordOutcome, pause: Callable[[float], None] | None = None) -> None:
    """Run `settings.method` for every backend x size (backend-major), recording as it goes.

    `rate` and `duration_s` are the iperf method's; the searches choose their own loads.
    """
    sizes = tuple(sizes)
    settings.check(sizes)
    context = Context(settings, link_bps, record, pause)
    for backend in backends:
        for size in sizes:
            run_step(settings.method, make_measurer(backend, size), backend, size, context, rate=rate,
                     duration_s=duration_s, record_outcome=record_outcome)
