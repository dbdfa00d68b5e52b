"""Offered-rate sweep, as seed 003 plots capture rate and CPU load against the data rate.

Seed 003 scaled its load with 26 inter-packet gaps from 50 Mbit/s to
920 Mbit/s and plotted, per step, the share of packets captured and the CPU
usage. Here the offered rate takes `steps` (26 by default) evenly spaced
values from a low rate (by default one step's worth: wire rate / steps) up to
the wire rate, one trial per step, lowest first.

Each point carries the trial's counts and what follows from them (capture
ratio, capture rate) and the CPU figures the trial measured, when it has any.
The sweep also names the highest step below which nothing was lost, and the
first step that lost frames: both are offered rates of trials that ran.

Every step is judged by the one rule of capbench.methods.verdict: a step that
lost frames is LOSSY whether or not its generator held the rate (its loss is
capture loss at the rate the generator sent); one that lost nothing is LOSSLESS
when the generator held the rate, else a LOWER_BOUND, which did not test that
rate. The first loss is the first LOSSY step and the lossless run counts only
LOSSLESS steps below it. The lower bounds are listed apart (`short_steps_pps`),
and `bounded_by` says what ended the lossless run: "capture loss" (the next
step lost frames), "generator" (the next step was a lower bound: the lossless
rate is a lower bound of the capture's, set by the generator) or "none" (no
step above it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.errors import UsageError
from capbench.methods.measurer import (
    LoadMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialRunner,
    check_max_load,
    check_trial_s,
)
from capbench.methods.method import (DEFAULT_LINK_BPS, DEFAULT_PAUSE_S, DEFAULT_STEPS, TRIAL_OVERHEAD_S, Bound, Context, Estimate, Figures, Method,
                                     MethodAnswer, MethodSettings, Metric, held_text, load_of, tagger)
from capbench.methods.verdict import (
    CAPTURE_LOSS,
    GENERATOR,
    GENERATOR_BOUND,
    LOSSLESS,
    LOSSY,
    LOWER_BOUND,
    NOT_BOUNDED,
    bound_at,
    generator_short,
    verdict,
)
from capbench.rates import wire_pps
from capbench.trial.measure import TrialResult

DEFAULT_TRIAL_S = 10.0


@dataclass(frozen=True)
class SweepPoint:
    step: int  # 1-based
    load_pps: float  # offered
    sent: int
    received: int
    lost: int
    capture_ratio: float  # received / sent (0 when nothing was sent)
    rx_pps: float  # received / the trial's sending time
    app_cpu_pct: float | None  # from the trial, when it measured CPU
    kernel_cpu_pct: float | None
    trial: SearchTrial
    short: bool = False  # the generator fell short of load_pps (what it lost is still capture loss)
    verdict: str = LOSSLESS  # LOSSLESS, LOSSY or LOWER_BOUND (capbench.methods.verdict)


@dataclass(frozen=True)
class SweepResult:
    frame_len: int
    link_bps: float
    wire_pps: float
    low_pps: float
    steps: int
    trial_s: float
    points: tuple[SweepPoint, ...]
    # Highest LOSSLESS step (the generator held the rate, nothing lost) below the first loss; None if none.
    lossless_up_to_pps: float | None
    first_lossy_pps: float | None  # lowest step that lost frames (LOSSY); None if none did
    total_trial_s: float
    total_pause_s: float
    short_steps_pps: tuple[float, ...] = ()  # the lower bounds (generator short, nothing lost), lowest first
    bounded_by: str = NOT_BOUNDED  # what ended the lossless run: "capture loss", "generator" or "none"

    @property
    def first_short_pps(self) -> float | None:
        """The lowest step that was a lower bound (generator short, nothing lost); None if none was."""
        return self.short_steps_pps[0] if self.short_steps_pps else None

    @property
    def trials(self) -> tuple[SearchTrial, ...]:
        return tuple(p.trial for p in self.points)


@dataclass(frozen=True)
class LossEdges:
    """Where a sweep starts to lose, from its steps (module doc)."""

    lossless_up_to_pps: float | None
    first_lossy_pps: float | None
    short_steps_pps: tuple[float, ...]
    bounded_by: str


def loss_edges(steps: Iterable[tuple[float, str]]) -> LossEdges:
    """The edges of a sweep from its steps as (offered rate, verdict), in any order (module doc)."""
    ordered = sorted(steps, key=lambda s: s[0])
    first = next((load for load, v in ordered if v == LOSSY), None)
    clean = [load for load, v in ordered if v == LOSSLESS and (first is None or load < first)]
    top = clean[-1] if clean else None
    if top is None:  # no LOSSLESS step: the lowest step ended the run
        bounded_by = bound_at(ordered[0][0], [v for _load, v in ordered]) if ordered else NOT_BOUNDED
    else:
        above = next(((load, v) for load, v in ordered if load > top), None)
        bounded_by = bound_at(None, ()) if above is None else bound_at(above[0], [above[1]])
    return LossEdges(top, first, tuple(load for load, v in ordered if v == LOWER_BOUND),
                     bounded_by or CAPTURE_LOSS)


def check_steps(steps: int) -> None:
    if steps < 2:
        raise UsageError(f"--steps {steps}: a sweep needs at least 2 steps")


def sweep_loads(low_pps: float, high_pps: float, steps: int) -> tuple[float, ...]:
    """`steps` evenly spaced rates from `low_pps` to exactly `high_pps`."""
    check_steps(steps)
    if not 0 < low_pps < high_pps:
        raise UsageError(f"sweep from {low_pps:,.0f} pps must start above 0 and below the wire rate "
                         f"of {high_pps:,.0f} pps")
    gap = (high_pps - low_pps) / (steps - 1)
    return tuple(low_pps + gap * i for i in range(steps - 1)) + (high_pps,)


def run(
    measurer: LoadMeasurer,
    *,
    frame_len: int,
    link_bps: float = DEFAULT_LINK_BPS,
    steps: int = DEFAULT_STEPS,
    low_pps: float | None = None,
    high_pps: float | None = None,
    trial_s: float = DEFAULT_TRIAL_S,
    pause_s: float = DEFAULT_PAUSE_S,
    pause: Pause | None = None,
    on_trial: OnTrial | None = None,
) -> SweepResult:
    """One trial of `trial_s` per step from `low_pps` (high / steps) to `high_pps` (the wire rate,
    or a lower maximum load: --max-rate) (module doc)."""
    check_trial_s(trial_s)
    check_steps(steps)
    high = check_max_load(high_pps, wire_pps(link_bps, frame_len))
    low = high / steps if low_pps is None else low_pps
    loads = sweep_loads(low, high, steps)
    runner = TrialRunner(measurer.measure, pause_s=pause_s, pause=pause, on_trial=on_trial)
    points = []
    for step, load in enumerate(loads, start=1):
        trial = runner.run(load, trial_s, f"step {step}/{steps}")
        r = trial.result
        points.append(SweepPoint(
            step=step,
            load_pps=load,
            sent=r.sent,
            received=r.received,
            lost=r.lost,
            capture_ratio=r.received / r.sent if r.sent > 0 else 0.0,
            rx_pps=r.received / r.duration_s if r.duration_s > 0 else 0.0,
            app_cpu_pct=getattr(r, "app_cpu_pct", None),
            kernel_cpu_pct=getattr(r, "kernel_cpu_pct", None),
            trial=trial,
            short=generator_short(r),
            verdict=verdict(r),
        ))
    edges = loss_edges((p.load_pps, p.verdict) for p in points)
    return SweepResult(
        frame_len=frame_len,
        link_bps=link_bps,
        wire_pps=high,
        low_pps=low,
        steps=steps,
        trial_s=trial_s,
        points=tuple(points),
        lossless_up_to_pps=edges.lossless_up_to_pps,
        first_lossy_pps=edges.first_lossy_pps,
        total_trial_s=runner.total_trial_s,
        total_pause_s=runner.total_pause_s,
        short_steps_pps=edges.short_steps_pps,
        bounded_by=edges.bounded_by,
    )


# --- the method object (capbench.methods.method) ------------------------------------------

_STEP = re.compile(r"^step (\d+)/(\d+)$")  # a sweep trial's purpose


@dataclass(frozen=True)
class SweepStepAnswer:
    """One step of a sweep as searches.jsonl holds it (SweepPoint without its trial)."""

    step: int
    load_pps: float
    sent: int = 0
    received: int = 0
    lost: int = 0
    rx_pps: float = 0.0
    app_cpu_pct: float | None = None
    kernel_cpu_pct: float | None = None
    invalid_offered_load: bool = False
    verdict: str = ""

    @classmethod
    def of(cls, p: SweepPoint) -> SweepStepAnswer:
        return cls(step=p.step, load_pps=p.load_pps, sent=p.sent, received=p.received, lost=p.lost, rx_pps=p.rx_pps,
                   app_cpu_pct=p.app_cpu_pct, kernel_cpu_pct=p.kernel_cpu_pct, invalid_offered_load=p.short,
                   verdict=p.verdict)


@dataclass(frozen=True)
class SweepAnswer(MethodAnswer):
    METHOD = "sweep"

    steps: int | None
    trial_s: float | None
    lossless_up_to_pps: float | None
    first_lossy_pps: float | None
    short_steps_pps: tuple[float, ...]
    bounded_by: str | None
    points: tuple[SweepStepAnswer, ...]

    @classmethod
    def of(cls, r: SweepResult, backend: str) -> SweepAnswer:
        return cls(**cls.common(r, backend), steps=r.steps,
                   trial_s=r.trial_s, lossless_up_to_pps=r.lossless_up_to_pps, first_lossy_pps=r.first_lossy_pps,
                   short_steps_pps=r.short_steps_pps, bounded_by=r.bounded_by,
                   points=tuple(SweepStepAnswer.of(p) for p in r.points))

    def extra_json(self) -> dict[str, Any]:
        return {"first_short_pps": self.short_steps_pps[0] if self.short_steps_pps else None}

    def text(self) -> str:
        first = self.first_lossy_pps
        if first is not None:
            out = f"first loss at {first:,.0f} pps"
            below = [x for x in self.short_steps_pps if x < first]
            return out + (f" ({held_text(below[0])}, not measured)" if below else "")
        if self.bounded_by == GENERATOR:
            top = self.lossless_up_to_pps or 0.0
            short = next((x for x in self.short_steps_pps if x > top), None)
            return (f"{GENERATOR_BOUND}: no loss up to {top:,.0f} pps, {held_text(short)}" if top else
                    f"{GENERATOR_BOUND}: {held_text(short)}, no step measured the capture")
        return "no loss at any step"

    def figures(self, tried: Sequence[TrialResult], wire: float) -> Figures:
        value = self.lossless_up_to_pps or 0.0
        info: dict[str, Any] = {"first_lossy_pps": self.first_lossy_pps, "steps": self.steps, "trial_s": self.trial_s,
                                "short_steps_pps": list(self.short_steps_pps), "bounded_by": self.bounded_by}
        if tried:  # judged again from the trials, by today's rule: its edges are the steps' verdicts
            edges = edges_of(tried)
            value = edges.lossless_up_to_pps or 0.0
            info |= {"first_lossy_pps": edges.first_lossy_pps, "short_steps_pps": list(edges.short_steps_pps),
                     "bounded_by": edges.bounded_by}
        return Figures({METRIC.name: value}, {METRIC.name: _bound(value, info)}, 0.0, (), info)


METRIC = Metric("sweep_lossless_pps", "sweep: no loss up to", "pps")


def edges_of(tried: Sequence[TrialResult]) -> LossEdges:
    """Where a sweep's steps start to lose, by each step's verdict (as the sweep judges its steps)."""
    return loss_edges((load_of(r), verdict(r)) for r in tried)


def _bound(value: float | None, info: dict[str, Any]) -> Bound:
    """What ended the lossless run; the rate the generator could not hold is the first short step above it."""
    short = next((float(x) for x in info["short_steps_pps"] if float(x) > (value or 0.0)), None)
    return Bound(info["bounded_by"], short, None)


class Sweep(Method):
    name = "sweep"
    takes_max_load = True
    help = "offered-rate sweep (seed 003): capture rate and CPU at evenly spaced rates up to the wire rate"
    answer_type = SweepAnswer
    trial_s = DEFAULT_TRIAL_S
    title = "sweep: highest rate without loss"
    best_rank = 3
    swept = True
    metrics = (METRIC,)

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, **_: Any) -> SweepAnswer:
        assert isinstance(size, int)
        s = context.settings
        r = run(measurer, frame_len=size, link_bps=context.link_bps, steps=s.steps, trial_s=s.trial_length(self),
                high_pps=s.max_load_pps(size, context.link_bps),
                pause_s=s.pause_s, pause=context.pause, on_trial=tagger(context.record, self.name))
        return SweepAnswer.of(r, backend)

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        return Estimate(settings.steps, settings.steps * (settings.trial_length(self) + settings.pause_s + overhead_s))

    def derive(self, tried: Sequence[TrialResult], loss_tolerance_frames: int, precision_pct: float | None
               ) -> Figures:
        """The offered rate of the first step that lost packets and the highest step below it; a sweep
        cut short before its last step without a loss has no answer yet."""
        steps = [(int(m.group(1)), int(m.group(2))) for r in tried if (m := _STEP.match(r.purpose))]
        complete = not steps or any(i == n for i, n in steps)
        edges = edges_of(tried)
        notes: tuple[str, ...] = ()
        value: float | None = edges.lossless_up_to_pps or 0.0
        if edges.first_lossy_pps is None and not complete:
            value = None
            notes = ("the sweep was cut short before its last step, without a loss so far",)
        info = {"first_lossy_pps": edges.first_lossy_pps, "steps": max((n for _i, n in steps), default=len(tried)),
                "short_steps_pps": list(edges.short_steps_pps), "bounded_by": edges.bounded_by}
        return Figures({METRIC.name: value}, {METRIC.name: _bound(value, info)}, 0.0, notes, info)
