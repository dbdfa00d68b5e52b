"""What the searches need from a trial, and the bookkeeping they share.

"Search never sees traffic" (FD.io CSIT MLRsearch): the RFC 2544 and MLR
searches, the sweep and the back-to-back search are pure functions of trial
results. They call something with `measure(duration_s, load_pps)` and read
integer counts from what it returns; they never start a program or touch the
test bed. `capbench.trial.Measurer` (real traffic) and
`capbench.methods.simulated.SimulatedDevice` (a model, for tests and dry runs)
both fit the protocols below.

Loss as the searches judge it
-----------------------------
A trial's loss ratio is `lost / sent`. A trial whose generator fell short of
the offered load (`invalid_offered_load`, see capbench.trial; `offered_short`)
did not test that load: it cannot count as loss-free there, so the searches
never let it pass (RFC 2544) or prove a goal met (MLR), and its forwarding rate
is at most what the generator sent (`loss_ratio` folds the shortfall in, as the
MLRsearch draft recommends for a severe offered-load deviation). But it is
never capture loss either: "a rate the generator cannot hold is marked
invalid, not lossy". So every search says what bounded its answer
(`bounded_by`): CAPTURE_LOSS when a trial whose generator held the rate lost
too much there, GENERATOR when only the generator's shortfall did (the answer
is then a lower bound of the capture's, set by the generator), NOT_BOUNDED
when nothing did (the wire rate passed). A trial that sent nothing has a loss
ratio of 1: nothing was shown to get through.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from capbench.errors import UsageError


class TrialOutcome(Protocol):
    """The part of a trial result the searches read (capbench.trial.TrialResult has it all)."""

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
    """Runs one trial at a constant load; capbench.trial.Measurer is one."""

    def measure(self, duration_s: float, load: float) -> TrialOutcome: ...


class BurstMeasurer(Protocol):
    """Sends one burst of `frames` back to back at wire rate (RFC 2544 26.4)."""

    def __call__(self, frames: int) -> TrialOutcome: ...


Pause = Callable[[float], object]
OnTrial = Callable[["SearchTrial"], object]


# What bounded a search's answer from above (module doc).
CAPTURE_LOSS = "capture loss"
GENERATOR = "generator"
NOT_BOUNDED = "none"


def loss_ratio(trial: TrialOutcome) -> float:
    """`lost / sent` in [0, 1], raised by any shortfall of the offered load (module doc).

    For the forwarding rate and a search's judgement of a load only: the shortfall
    part is the generator's, never capture loss (see `capture_lost`)."""
    if trial.sent <= 0:
        return 1.0
    ratio = min(1.0, max(0, trial.lost) / trial.sent)
    if getattr(trial, "invalid_offered_load", False):
        achieved = getattr(trial, "achieved_pps", None)
        offered = trial.offered_pps
        if achieved is not None and offered:
            ratio = max(ratio, min(1.0, 1.0 - achieved / offered))
    return ratio


def offered_short(trial: TrialOutcome) -> bool:
    """True when the generator did not offer the load the trial names."""
    return bool(getattr(trial, "invalid_offered_load", False)) or trial.sent <= 0


def capture_lost(trial: TrialOutcome, tolerance_frames: int = 0) -> bool:
    """The capture lost more than `tolerance_frames` frames at a load the generator held:
    capture loss, as a search may report it (a short trial is never capture loss)."""
    return not offered_short(trial) and trial.lost > tolerance_frames


def same_load(a: float, b: float) -> bool:
    """Two loads a search computed as the same rate (equal but for float rounding)."""
    return math.isclose(a, b, rel_tol=1e-9)


def bound_at(upper_pps: float | None, at_upper: Iterable[TrialOutcome], lossy: bool) -> str | None:
    """What bounded an answer whose upper end is `upper_pps` (module doc): NOT_BOUNDED without
    one; CAPTURE_LOSS when the trials there that the generator held were too lossy (`lossy`,
    by the search's own rule); else GENERATOR when one of `at_upper` fell short of its load;
    None when no trial there says (a record without them)."""
    if upper_pps is None:
        return NOT_BOUNDED
    if lossy:
        return CAPTURE_LOSS
    if any(offered_short(r) for r in at_upper):
        return GENERATOR
    return None


def generator_short_text(load_pps: float, trials: Iterable[TrialOutcome] = ()) -> str:
    """The words "the generator could not hold N pps (it sent M pps)", M from the short ones of `trials`."""
    sent = [a for t in trials if offered_short(t) and (a := getattr(t, "achieved_pps", None)) is not None]
    held = f" (it sent {min(sent):,.0f} pps)" if sent else ""
    return f"the generator could not hold {load_pps:,.0f} pps{held}"


def generator_note(load_pps: float, trials: Iterable[TrialOutcome] = (), what: str = "the throughput") -> str:
    """The note of an answer the generator bounded: it could not hold `load_pps` (`trials`: those
    at that load, for what it sent), so `what` is a lower bound of the capture's."""
    return f"{generator_short_text(load_pps, trials)}: {what} is a lower bound of the capture's, set by the generator"


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
        return loss_ratio(self.result)

    @property
    def forwarding_pps(self) -> float:
        """The trial's forwarding rate: load x (1 - loss ratio), as the MLRsearch draft defines it."""
        return self.load_pps * (1.0 - self.loss_ratio)


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
