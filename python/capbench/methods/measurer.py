"""What the searches need from a trial, and the bookkeeping they share.

"Search never sees traffic" (FD.io CSIT MLRsearch): the RFC 2544 and MLR
searches, the sweep and the back-to-back search are pure functions of trial
results. They call something with `measure(duration_s, load_pps)` and read
integer counts from what it returns; they never start a program or touch the
test bed. `capbench.trial.measure.Measurer` (real traffic) and
`capbench.methods.simulated.SimulatedDevice` (a model, for tests and dry runs)
both fit the protocols below.

Loss as the searches judge it
-----------------------------
One rule, in capbench.methods.verdict: a trial is LOSSLESS at its target, LOSSY
(anything sent was lost beyond the tolerance, whether or not the generator held
the target) or a LOWER_BOUND (nothing lost, but the generator fell short). Only
a LOSSLESS trial passes a load; a search goes lower after a LOSSY or a
LOWER_BOUND one, and says what bounded its answer (`bounded_by`). A trial's loss
ratio is `lost / sent`; its forwarding rate is the rate the generator sent times
(1 - that ratio).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from capbench.errors import UsageError
from capbench.methods import verdict


class TrialOutcome(Protocol):
    """The part of a trial result the searches read (capbench.trial.measure.TrialResult has it all)."""

    @property
    def sent(self) -> int: ...  # frames the generator sent

    @property
    def received(self) -> int: ...  # frames the capture application counted

    @property
    def lost(self) -> int: ...  # sent - received

    @property
    def offered_pps(self) -> float | None: ...  # the load asked of the generator

    @property
    def duration_s(self) -> float: ...  # the generator's sending time


class LoadMeasurer(Protocol):
    """Runs one trial at a constant load; capbench.trial.measure.Measurer is one."""

    def measure(self, duration_s: float, load: float) -> TrialOutcome: ...


class BurstMeasurer(Protocol):
    """Sends one burst of `frames` back to back at wire rate (RFC 2544 26.4)."""

    def __call__(self, frames: int) -> TrialOutcome: ...


Pause = Callable[[float], object]
OnTrial = Callable[["SearchTrial"], object]


def same_load(a: float, b: float) -> bool:
    """Two loads a search computed as the same rate (equal but for float rounding)."""
    return math.isclose(a, b, rel_tol=1e-9)


@dataclass(frozen=True)
class SearchTrial:
    """One trial a method ran: what it asked for, why, and what came back."""

    index: int  # 0-based, in the order the trials ran
    purpose: str  # e.g. "search", "verify", "phase 1/3", "step 4/26", "burst"
    load_pps: float  # the load asked for (for a burst: the wire rate)
    requested_duration_s: float
    result: TrialOutcome

    @property
    def loss_ratio(self) -> float:
        return verdict.loss_ratio(self.result)

    @property
    def forwarding_pps(self) -> float:
        """The trial's forwarding rate: the rate sent x (1 - loss ratio), as the MLRsearch draft defines
        it with the load; the rate the generator achieved where it fell short of the load."""
        return verdict.sent_pps(self.result, self.load_pps) * (1.0 - self.loss_ratio)


class TrialRunner:
    """Runs a method's trials in order: a pause, then the trial; keeps every trial and the time spent.

    `pause` is called with the pause length before each trial (`time.sleep` by
    default; tests pass a function that does not sleep, or the simulated
    device's own `pause`, which lets its saturation wear off). `on_trial` is
    called with each trial as soon as it ends, so a caller can record it before
    the next one starts (a campaign interrupted mid-search loses one trial).
    """

    def __init__(self, measure: Callable[[float, float], TrialOutcome] | None, *, pause_s: float = 0.0,
                 pause: Pause | None = None, on_trial: OnTrial | None = None,
                 max_trials: int = 1000):
        check_pause(pause_s)
        self._measure = measure
        self._pause = time.sleep if pause is None else pause
        self._on_trial = on_trial
        self.pause_s = pause_s
        self.max_trials = max_trials
        self.trials: list[SearchTrial] = []
        self.total_pause_s = 0.0

    def run(self, load_pps: float, duration_s: float, purpose: str, *, pause_s: float | None = None,
            call: Callable[[], TrialOutcome] | None = None) -> SearchTrial:
        """Pause, then `measure(duration_s, load_pps)` (or `call()`, for a trial of another shape)."""
        if len(self.trials) >= self.max_trials:
            raise RuntimeError(f"method ran {self.max_trials} trials without finishing: a bug in the search")
        wait = self.pause_s if pause_s is None else pause_s
        if wait > 0:
            self._pause(wait)
            self.total_pause_s += wait
        if call is None:
            assert self._measure is not None
            result = self._measure(duration_s, load_pps)
        else:
            result = call()
        trial = SearchTrial(index=len(self.trials), purpose=purpose, load_pps=load_pps,
                            requested_duration_s=duration_s, result=result)
        self.trials.append(trial)
        if self._on_trial is not None:
            self._on_trial(trial)
        return trial

    @property
    def total_trial_s(self) -> float:
        """Traffic time of every trial so far, from the trials' own sending times."""
        return sum(t.result.duration_s for t in self.trials)


def check_precision_pct(precision_pct: float) -> None:
    if not 0 < precision_pct < 100:
        raise UsageError(f"--precision {precision_pct:g} % must be above 0 % and below 100 % of the wire rate "
                         f"(e.g. 1 for 1 %)")


def check_loss_tolerance(frames: int) -> None:
    if frames < 0:
        raise UsageError(f"--loss-tolerance {frames} frames must be 0 or more")


def check_trial_s(trial_s: float, *, minimum_s: float = 0.0, flag: str = "--trial") -> None:
    """A trial length must be above 0 s and, where a method needs it, at least `minimum_s`."""
    if not trial_s > 0:  # also catches NaN
        raise UsageError(f"{flag} {trial_s:g} s must be above 0 s")
    if trial_s < minimum_s:
        raise UsageError(f"{flag} {trial_s:g} s is too short: use {minimum_s:g} s or more")


def check_pause(pause_s: float) -> None:
    if not pause_s >= 0:
        raise UsageError(f"pause {pause_s:g} s between trials must be 0 or more")
