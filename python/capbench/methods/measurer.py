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

Repeated evidence before a decision (issue 28)
----------------------------------------------
A trial the host disturbed (the record's `disturbed`: its witness saw the host stop or load a
CPU the trial used, so its loss could be the host's, not the capture's) is run again, at the
same load and length after the same pause, up to MAX_ATTEMPTS runs in all, before any method
acts on it. Every run is recorded (`attempt` 1, 2, ...); the method decides on the last: the
first undisturbed run, or the last disturbed one, which then stays `disturbed` and makes the
answer say so. The last and not the best: a rule that picks the luckiest of three runs would
report the host's quiet moments, not the capture's rate. This happens here, in TrialRunner (and
`measure_decided` for a method without one), so every method gets it without code of its own.
"""

from __future__ import annotations

import dataclasses
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

# A trial the host disturbed is run again until it is not, at most this many runs in all (module doc).
MAX_ATTEMPTS = 3


def disturbed(result: object) -> bool:
    """The host interfered with the trial enough that its loss could be the host's (record field)."""
    return bool(getattr(result, "disturbed", False))


def superseded(result: object) -> bool:
    """A recorded run that a later attempt replaced: disturbed, and not the last attempt allowed.
    Readers of trials.jsonl leave these out of a point's repetitions (they are not evidence the
    method decided on) and count them as runs the host spoiled."""
    return disturbed(result) and getattr(result, "attempt", 1) < MAX_ATTEMPTS


def _attempt(result: TrialOutcome, n: int) -> TrialOutcome:
    """`result` numbered as the n-th run of its trial (a model's result without the field as it is)."""
    if n == 1 or not dataclasses.is_dataclass(result) or not hasattr(result, "attempt"):
        return result
    return dataclasses.replace(result, attempt=n)  # type: ignore[type-var]


def measure_decided(run_once: Callable[[], TrialOutcome], *, pause: Callable[[], object] = lambda: None,
                    on_rerun: Callable[[TrialOutcome], object] = lambda _r: None) -> TrialOutcome:
    """`run_once()` until a run is not disturbed, at most MAX_ATTEMPTS runs (module doc): each
    run the host spoiled goes to `on_rerun` (to be recorded), `pause()` runs before the next;
    the last run is returned, numbered (`attempt`)."""
    for n in range(1, MAX_ATTEMPTS + 1):
        result = _attempt(run_once(), n)
        if n == MAX_ATTEMPTS or not disturbed(result):
            return result
        on_rerun(result)
        pause()
    raise AssertionError("unreachable")


def same_load(a: float, b: float) -> bool:
    """Two loads a search computed as the same rate (equal but for float rounding)."""
    return math.isclose(a, b, rel_tol=1e-9)


@dataclass(frozen=True)
class SearchTrial:
    """One trial a method ran: what it asked for, why, and what came back."""

    index: int  # 0-based, in the order the trials ran (a run the host spoiled has its successor's)
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
    A disturbed trial is run again (module doc): `on_trial` gets every run, `trials`
    only the one the method decides on, `reruns` the runs the host spoiled.
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
        self.reruns: list[SearchTrial] = []
        self.total_pause_s = 0.0

    def run(self, load_pps: float, duration_s: float, purpose: str, *, pause_s: float | None = None,
            call: Callable[[], TrialOutcome] | None = None) -> SearchTrial:
        """Pause, then `measure(duration_s, load_pps)` (or `call()`, for a trial of another shape)."""
        if len(self.trials) >= self.max_trials:
            raise RuntimeError(f"method ran {self.max_trials} trials without finishing: a bug in the search")
        wait = self.pause_s if pause_s is None else pause_s

        def pause() -> None:
            if wait > 0:
                self._pause(wait)
                self.total_pause_s += wait

        def run_once() -> TrialOutcome:
            if call is not None:
                return call()
            assert self._measure is not None
            return self._measure(duration_s, load_pps)

        def made(result: TrialOutcome) -> SearchTrial:
            return SearchTrial(index=len(self.trials), purpose=purpose, load_pps=load_pps,
                               requested_duration_s=duration_s, result=result)

        def spoiled(result: TrialOutcome) -> None:
            self.reruns.append(made(result))
            self._tell(self.reruns[-1])

        pause()
        trial = made(measure_decided(run_once, pause=pause, on_rerun=spoiled))
        self.trials.append(trial)
        self._tell(trial)
        return trial

    def _tell(self, trial: SearchTrial) -> None:
        if self._on_trial is not None:
            self._on_trial(trial)

    @property
    def total_trial_s(self) -> float:
        """Traffic time of every trial so far (the runs the host spoiled too), from their own sending times."""
        return sum(t.result.duration_s for t in (*self.trials, *self.reruns))


def check_max_load(max_load_pps: float | None, wire_pps: float) -> float:
    """A search's maximum load (MLRsearch's Max Load, `--max-rate`): the wire rate when not given,
    else above 0 and at most the wire rate."""
    if max_load_pps is None:
        return wire_pps
    if not 0 < max_load_pps <= wire_pps * (1 + 1e-9):
        raise UsageError(f"--max-rate {max_load_pps:,.0f} pps must be above 0 and at most the wire rate "
                         f"({wire_pps:,.0f} pps at this frame length): give a lower rate or a percentage")
    return min(max_load_pps, wire_pps)


def max_load_note(max_load_pps: float, wire_pps: float) -> str:
    """The note of a search whose highest load passed."""
    if same_load(max_load_pps, wire_pps):
        return "the wire rate is a lower bound: the capture path keeps up with the link"
    return f"the maximum load ({max_load_pps:,.0f} pps, --max-rate) is a lower bound: no loss up to it"


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
