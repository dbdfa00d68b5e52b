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
"""

from __future__ import annotations

from dataclasses import dataclass

from capbench.errors import UsageError
from capbench.methods.measurer import (
    LoadMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialRunner,
    check_trial_s,
)
from capbench.rates import wire_pps

DEFAULT_STEPS = 26  # seed 003's 26 inter-packet gaps


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


@dataclass(frozen=True)
class SweepResult:
    frame_len: int
    link_bps: float
    wire_pps: float
    low_pps: float
    steps: int
    trial_s: float
    points: tuple[SweepPoint, ...]
    lossless_up_to_pps: float | None  # highest step with no loss at it or any step below; None if step 1 lost
    first_lossy_pps: float | None  # lowest step that lost frames; None if none did
    total_trial_s: float
    total_pause_s: float

    @property
    def trials(self) -> tuple[SearchTrial, ...]:
        return tuple(p.trial for p in self.points)


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
    link_bps: float = 1e9,
    steps: int = DEFAULT_STEPS,
    low_pps: float | None = None,
    trial_s: float = 10.0,
    pause_s: float = 2.0,
    pause: Pause | None = None,
    on_trial: OnTrial | None = None,
) -> SweepResult:
    """One trial of `trial_s` per step from `low_pps` (wire rate / steps) to the wire rate (module doc)."""
    check_trial_s(trial_s)
    check_steps(steps)
    high = wire_pps(link_bps, frame_len)
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
        ))
    lossy = [p for p in points if p.trial.loss_ratio > 0]
    first_lossy = lossy[0].load_pps if lossy else None
    clean = [p.load_pps for p in points if first_lossy is None or p.load_pps < first_lossy]
    return SweepResult(
        frame_len=frame_len,
        link_bps=link_bps,
        wire_pps=high,
        low_pps=low,
        steps=steps,
        trial_s=trial_s,
        points=tuple(points),
        lossless_up_to_pps=max(clean) if clean else None,
        first_lossy_pps=first_lossy,
        total_trial_s=runner.total_trial_s,
        total_pause_s=runner.total_pause_s,
    )
