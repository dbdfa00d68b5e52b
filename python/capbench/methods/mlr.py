"""Multiple loss ratio search, in the manner of FD.io CSIT's MLRsearch (IETF draft-ietf-bmwg-mlrsearch).

One search finds the throughput for several *goals* at once, each a loss ratio
that a load may not exceed: by default NDR (no loss, RFC 2544's throughput)
and PDR (at most 0.5 % lost). Every trial counts for every goal.

Load classification (the draft's specification, written anew here)
-------------------------------------------------------------------
For one goal, the trials run so far at one load are split four ways: *high
loss* (loss ratio above the goal's) or *low loss*, and *full length* (at least
the final trial duration) or *short*. With the goal's exceed ratio `e` (the
share of trial time allowed to exceed the loss ratio at a lower bound, 0 by
default) and duration sum `D` (the trial time that decides a load, one final
trial by default):

- short low-loss time offsets short high-loss time at the rate `e / (1 - e)`;
  what remains of the short high-loss time counts as full-length high loss;
- the *whole* time is that effective time, or `D` if less has been measured;
- the load is a **lower bound** if, even were all the missing time high loss,
  no more than `e` of the whole would be; an **upper bound** if, even were all
  the missing time low loss, more than `e` would be; otherwise undecided.

So a short trial can prove a load too high (with `e = 0`, one lossy second is
enough for NDR), but only full-length trials can prove a load low enough. A
load measured inconsistently (some trials lossy, some not) is classified by
how much of its time was lossy; the relevant upper bound of a goal is its
smallest upper bound, the relevant lower bound its largest lower bound below
that, so a lucky trial above an unlucky one never raises the result.

Phases (this implementation's controller)
-----------------------------------------
Trials start short and get longer: `phases` durations grow geometrically from
`initial_trial_s` to `final_trial_s` while the goal width halves each phase,
from `2^(phases-1)` times the precision to the precision. In a phase every goal
is narrowed until its relevant bounds are no further apart than the phase's
width, judging trials with the phase's duration as the final one, so the
earlier phases find the neighbourhood cheaply and the full-length trials
happen only near the answer. A phase picks loads this way, for the first goal
that is not done:

- no upper bound yet: measure the wire rate (the search's maximum load);
- an upper bound but no lower bound: go below it by the larger of the width
  (doubled for every upper bound this phase found above it) and the distance
  to the upper bound's forwarding rate (its load x (1 - loss ratio); at an
  overload that is about what the receiver keeps up with), or re-measure an
  undecided load near there (a lower bound of a shorter phase);
- both bounds, too far apart: re-measure an undecided load between them, the
  smallest first, else go up from the lower bound by the width (doubled for
  every lower bound this phase found below it), at most to the middle.

A goal whose lower bound is the wire rate, or whose upper bound is the
minimum load, is done: its result is irregular and says why. Figures come
from trials only: bounds are loads that were measured, and the conditional
throughput is a lower bound times (1 - a measured loss ratio).

The generator's shortfall
-------------------------
Every trial is judged by the one rule of capbench.methods.verdict, with the
goal's loss ratio as its tolerance: a trial that lost more than that is high
loss for the goal whether or not its generator held the load (its loss ratio is
`lost / sent`, capture loss at the rate the generator sent); a trial that lost
no more but whose generator fell short of the load (a LOWER_BOUND) did not test
that load, so it counts as high loss too: it cannot show the goal met there.
Each goal's result says what made its upper bound one (`bounded_by`): "capture
loss" when the trials there that lost too much prove it on their own,
"generator" when it took the lower bounds (the goal's lower bound is then a
lower bound of the capture's, set by the generator, and the note says so),
"none" without an upper bound. Its `lowest_lossy_pps` is the smallest load the
lossy and lossless trials alone prove too lossy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.errors import UsageError
from capbench.methods.measurer import (
    LoadMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialOutcome,
    TrialRunner,
    check_precision_pct,
    check_max_load,
    check_trial_s,
    max_load_note,
    same_load,
)
from capbench.methods.method import (DEFAULT_LINK_BPS, DEFAULT_PAUSE_S, DEFAULT_PRECISION_PCT, TRIAL_OVERHEAD_S, Bound, Context, Estimate, Figures, Method, MethodAnswer,
                                     MethodSettings, Metric, held_text, load_of, tagger,
                                     without_bound_notes)
from capbench.methods.verdict import (
    CAPTURE_LOSS,
    GENERATOR,
    GENERATOR_BOUND,
    LOSSY,
    LOWER_BOUND,
    NOT_BOUNDED,
    STOPPED_BY_GENERATOR,
    bound_at,
    generator_note,
    generator_short,
    generator_short_text,
    loss_ratio,
    short_lossy_text,
    verdict,
)
from capbench.rates import wire_bps, wire_pps
from capbench.trial.measure import TrialResult

LOWER, UPPER, UNDECIDED = "lower", "upper", "undecided"


def judged_ratio(trial: SearchTrial, goal_ratio: float) -> float:
    """A trial's loss ratio as a goal of loss ratio `goal_ratio` judges it: 1 for a lower bound
    (it cannot show the goal met, module doc), else its loss ratio."""
    return 1.0 if verdict(trial.result, max_loss_ratio=goal_ratio) == LOWER_BOUND else trial.loss_ratio


@dataclass(frozen=True)
class Goal:
    """A search goal: the loss ratio a load may not exceed, and how strictly."""

    name: str
    loss_ratio: float  # e.g. 0.005 for 0.5 %
    exceed_ratio: float = 0.0  # share of trial time at a lower bound allowed above loss_ratio
    duration_sum_s: float | None = None  # trial time that decides a load; None: one final trial

    def check(self) -> None:
        if not 0 <= self.loss_ratio < 1:
            raise UsageError(f"goal {self.name}: loss ratio {self.loss_ratio:g} must be at least 0 and below 1")
        if not 0 <= self.exceed_ratio < 1:
            raise UsageError(f"goal {self.name}: exceed ratio {self.exceed_ratio:g} must be at least 0 and below 1")
        if self.duration_sum_s is not None and not self.duration_sum_s > 0:
            raise UsageError(f"goal {self.name}: duration sum {self.duration_sum_s:g} s must be above 0 s")


# The defaults follow RFC 9971 (MLRsearch) as FD.io CSIT runs it: an NDR (no loss) and a PDR
# (0.5 %) goal, each with an exceed ratio of 0.5 and a duration sum across trials, so a load is
# decided by the majority of its trial time, never by one trial the host stopped (a lower bound
# needs at least half of the duration sum loss-free, an upper bound more than half lossy), and
# the first trial at the maximum load is a warm-up whose result no goal reads. CSIT sums 21
# one-second trials; here a load's sum is DURATION_SUM_TRIALS final trials (a load whose first
# two trials agree is decided by them, a third settles a split), so a search fits in minutes.
EXCEED_RATIO = 0.5
DURATION_SUM_TRIALS = 3
FINAL_TRIAL_S = 2.0  # the last phase's trials
INITIAL_TRIAL_S = 1.0  # the first phase's
ONE_PHASE_TRIALS = 9  # a search of one phase (final trials no longer than INITIAL_TRIAL_S): Mlr.estimate
ONE_PHASE_TRIALS_SUM_1 = 5  # the same where one final trial decides a load (a duration sum of one trial)
WARMUP = "warm-up"  # the purpose of the first trial, at the maximum load, that no goal reads


def default_goals(final_trial_s: float = FINAL_TRIAL_S, sum_trials: int | None = None,
                  names: Sequence[str] = ()) -> tuple[Goal, ...]:
    """NDR and PDR (those of `names` only, when given) with the exceed ratio and a duration sum of
    `sum_trials` final trials (DURATION_SUM_TRIALS by default). A search of one goal skips the
    trials that narrow the other; a sum of one trial lets one final trial decide a load (what a
    screening of many configurations can afford: `capbench tune`'s first rung)."""
    sum_s = (DURATION_SUM_TRIALS if sum_trials is None else sum_trials) * final_trial_s
    goals = (Goal("NDR", 0.0, EXCEED_RATIO, sum_s), Goal("PDR", 0.005, EXCEED_RATIO, sum_s))
    unknown = sorted(set(names) - {g.name for g in goals})
    if unknown:
        raise UsageError(f"unknown MLR goal {', '.join(unknown)}: the goals are {', '.join(g.name for g in goals)}")
    return tuple(g for g in goals if not names or g.name in names)


@dataclass(frozen=True)
class Criterion:
    """A goal as one phase judges it: trials of `final_trial_s` are full length there."""

    loss_ratio: float
    exceed_ratio: float
    final_trial_s: float
    duration_sum_s: float


def classify(trials: Iterable[tuple[float, float]], c: Criterion) -> str:
    """LOWER, UPPER or UNDECIDED for a load, from its trials as (duration_s, loss_ratio) pairs (module doc)."""
    full_low = full_high = short_low = short_high = 0.0
    for duration_s, ratio in trials:
        high = ratio > c.loss_ratio
        if duration_s >= c.final_trial_s:
            full_low, full_high = (full_low, full_high + duration_s) if high else (full_low + duration_s, full_high)
        else:
            short_low, short_high = (short_low, short_high + duration_s) if high else (short_low + duration_s, short_high)
    offset = short_low * c.exceed_ratio / (1.0 - c.exceed_ratio)
    high_s = full_high + max(0.0, short_high - offset)
    whole_s = max(full_low + high_s, c.duration_sum_s)
    allowed_s = whole_s * c.exceed_ratio + 1e-9 * whole_s  # a rounding error is not lossy time
    if whole_s - full_low <= allowed_s:
        return LOWER  # even if the missing time were all high loss
    if high_s > allowed_s:
        return UPPER  # even if the missing time were all low loss
    return UNDECIDED


def what_bounded(trials: Iterable[tuple[float, float, TrialOutcome]], c: Criterion, upper_pps: float | None
                 ) -> tuple[str | None, float | None]:
    """(bounded_by, lowest_lossy_pps) of a goal judged by `c` whose relevant upper bound is
    `upper_pps`, from its (load, requested duration, result) trials (module doc): CAPTURE_LOSS
    when the lossy and lossless trials at the upper bound prove it too lossy on their own,
    GENERATOR when it took a lower bound, NOT_BOUNDED without an upper bound, None when no
    trial at `upper_pps` says; the lowest load those trials alone prove too lossy."""
    verdicts: dict[float, list[str]] = {}
    measured: dict[float, list[tuple[float, float]]] = {}
    for load, duration_s, r in trials:
        v = verdict(r, max_loss_ratio=c.loss_ratio)
        verdicts.setdefault(load, []).append(v)
        if v != LOWER_BOUND:
            measured.setdefault(load, []).append((duration_s, loss_ratio(r)))
    lossy = sorted(load for load, ts in measured.items() if classify(ts, c) == UPPER)
    at = [load for load in verdicts if upper_pps is not None and same_load(load, upper_pps)]
    if any(load in lossy for load in at):
        found = [LOSSY]
    else:  # too few lossy trials to prove it on their own (an exceed ratio): the lower bounds did
        found = [v for load in at for v in verdicts[load] if v != LOSSY]
    return bound_at(upper_pps, found), lossy[0] if lossy else None


def bound_note(bounded_by: str | None, upper_pps: float | None, lower_pps: float | None,
               trials: Iterable[tuple[float, TrialOutcome]], goal_ratio: float) -> str:
    """A goal's note on what bounded it, from (load, result) trials: the generator's shortfall that
    made its upper bound one, or the capture loss there of a generator that fell short ("" for
    neither)."""
    if upper_pps is None:
        return ""
    at = [r for load, r in trials if same_load(load, upper_pps)]
    if bounded_by == GENERATOR:
        return (generator_note(upper_pps, at, "the lower bound") if lower_pps else
                f"{generator_short_text(upper_pps, at)}: {STOPPED_BY_GENERATOR}")
    short_lossy = [r for r in at if generator_short(r) and verdict(r, max_loss_ratio=goal_ratio) == LOSSY]
    if bounded_by == CAPTURE_LOSS and short_lossy:
        return short_lossy_text(upper_pps, short_lossy[0])
    return ""


@dataclass(frozen=True)
class Phase:
    """One phase of the search: its trial duration and the width its goals narrow down to."""

    trial_s: float
    width_pps: float


@dataclass(frozen=True)
class GoalResult:
    """What the search found for one goal, judged with full-length trials."""

    name: str
    loss_ratio: float
    exceed_ratio: float
    lower_bound_pps: float | None  # relevant lower bound; None if no load was low-loss enough
    upper_bound_pps: float | None  # relevant upper bound; None if no load was lossy enough
    lower_bound_gbps: float | None
    conditional_throughput_pps: float | None  # lower bound x (1 - its quantile loss ratio)
    regular: bool  # both bounds found and no further apart than the precision (whatever bounded them)
    note: str
    # What made upper_bound_pps an upper bound: "capture loss", "generator" (only trials whose
    # generator fell short of the load did: lower_bound_pps is a lower bound of the capture's,
    # set by the generator) or "none" (no upper bound).
    bounded_by: str = NOT_BOUNDED
    lowest_lossy_pps: float | None = None  # smallest load the trials whose generator held it prove too lossy
    duration_sum_s: float | None = None  # the trial time that decided a load; None: one final trial

    @property
    def throughput_pps(self) -> float:
        """The lower bound, or 0.0 when none was found (a figure never made up)."""
        return self.lower_bound_pps or 0.0


@dataclass(frozen=True)
class MlrResult:
    frame_len: int
    link_bps: float
    wire_pps: float
    min_load_pps: float
    precision_pct: float
    width_pps: float
    final_trial_s: float
    phases: tuple[Phase, ...]
    goals: tuple[GoalResult, ...]
    trials: tuple[SearchTrial, ...]  # every trial the goals read, in the order it ran
    total_trial_s: float  # traffic time of all trials (warm-up and runs the host spoiled too)
    total_pause_s: float
    max_load_pps: float = 0.0  # the highest load tried (MLRsearch's Max Load): the wire rate or --max-rate
    reruns: tuple[SearchTrial, ...] = ()  # runs the host disturbed, each run again (methods/measurer.py)
    warmups: tuple[SearchTrial, ...] = ()  # the first trial at the maximum load, read by no goal

    def goal(self, name: str) -> GoalResult:
        for g in self.goals:
            if g.name == name:
                return g
        raise KeyError(name)


def plan_phases(initial_trial_s: float, final_trial_s: float, phases: int, width_pps: float) -> tuple[Phase, ...]:
    """Durations growing geometrically to the final one while the width halves down to the precision."""
    if phases == 1 or initial_trial_s >= final_trial_s:
        return (Phase(final_trial_s, width_pps),)
    ratio = final_trial_s / initial_trial_s
    plan = [Phase(initial_trial_s * ratio ** (i / (phases - 1)), width_pps * 2 ** (phases - 1 - i))
            for i in range(phases - 1)]
    return (*plan, Phase(final_trial_s, width_pps))


class _Search:
    """The controller's state: every trial, grouped by load."""

    def __init__(self, runner: TrialRunner, goals: Sequence[Goal], max_pps: float, min_pps: float,
                 final_trial_s: float):
        self.runner = runner
        self.goals = goals
        self.max_pps = max_pps
        self.wire_pps = max_pps
        self.min_pps = min_pps
        self.final_trial_s = final_trial_s
        self.by_load: dict[float, list[SearchTrial]] = {}

    def criterion(self, goal: Goal, trial_s: float) -> Criterion:
        sum_per_trial = 1.0 if goal.duration_sum_s is None else goal.duration_sum_s / self.final_trial_s
        return Criterion(goal.loss_ratio, goal.exceed_ratio, trial_s, trial_s * sum_per_trial)

    def bounds(self, c: Criterion) -> tuple[float | None, float | None, dict[float, str]]:
        """(relevant upper bound, relevant lower bound, every load's class) under `c`; a lower
        bound counts as high loss (module doc)."""
        classes = {load: classify(((t.requested_duration_s, judged_ratio(t, c.loss_ratio)) for t in trials), c)
                   for load, trials in self.by_load.items()}
        uppers = [load for load, k in classes.items() if k == UPPER]
        upper = min(uppers) if uppers else None
        lowers = [load for load, k in classes.items() if k == LOWER and (upper is None or load < upper)]
        return upper, (max(lowers) if lowers else None), classes

    def next_load(self, c: Criterion, phase: Phase, phase_loads: set[float]) -> float | None:
        """The load to measure next for one goal in one phase, or None when the goal is done (module doc)."""
        upper, lower, classes = self.bounds(c)
        if upper is None:
            return None if lower is not None and lower >= self.max_pps else self.max_pps
        between = sorted(load for load, k in classes.items()
                         if k == UNDECIDED and load < upper and (lower is None or load > lower))
        if lower is None:
            if upper <= self.min_pps:
                return None
            found_above = sum(1 for load in phase_loads if load > upper and classes[load] == UPPER)
            forwarding = min(t.forwarding_pps for t in self.by_load[upper])
            target = max(self.min_pps, upper - max(phase.width_pps * 2 ** found_above, upper - forwarding))
            near = [load for load in between if load >= target - phase.width_pps / 2]
            return max(near) if near else target
        if upper - lower <= phase.width_pps * (1 + 1e-9):  # a rounding error does not widen the bracket
            return None
        if between:
            return between[0]
        found_below = sum(1 for load in phase_loads if load < lower and classes[load] == LOWER)
        return min((lower + upper) / 2, lower + phase.width_pps * 2 ** found_below)

    def run_phase(self, index: int, phase: Phase, count: int) -> None:
        phase_loads: set[float] = set()
        criteria = [self.criterion(goal, phase.trial_s) for goal in self.goals]
        while True:
            load = next((x for x in (self.next_load(c, phase, phase_loads) for c in criteria) if x is not None), None)
            if load is None:
                return
            trial = self.runner.run(load, phase.trial_s, f"phase {index + 1}/{count}")
            self.by_load.setdefault(load, []).append(trial)
            phase_loads.add(load)

    def result(self, goal: Goal, frame_len: int, width_pps: float) -> GoalResult:
        c = self.criterion(goal, self.final_trial_s)
        upper, lower, _ = self.bounds(c)
        tried = ((load, t.requested_duration_s, t.result) for load, trials in self.by_load.items() for t in trials)
        bounded, lowest_lossy = what_bounded(tried, c, upper)
        bounded_by = bounded or CAPTURE_LOSS  # a load is an upper bound by loss or shortfall: never None here
        if lower is None:
            note = (f"no load was low-loss enough down to the minimum load of {self.min_pps:,.0f} pps"
                    if upper is not None and upper <= self.min_pps else "no lower bound found")
        elif upper is None:
            note = (max_load_note(self.max_pps, self.wire_pps) if lower >= self.max_pps else "no upper bound found")
        elif upper - lower > width_pps * (1 + 1e-9):
            note = f"bounds {upper - lower:,.0f} pps apart, wider than the precision"
        else:
            note = ""
        regular = not note
        at_loads = [(t.load_pps, t.result) for ts in self.by_load.values() for t in ts]
        bound = bound_note(bounded_by, upper, lower, at_loads, goal.loss_ratio)
        note = "; ".join(x for x in (note, bound) if x)
        return GoalResult(
            name=goal.name,
            loss_ratio=goal.loss_ratio,
            exceed_ratio=goal.exceed_ratio,
            lower_bound_pps=lower,
            upper_bound_pps=upper,
            lower_bound_gbps=None if lower is None else wire_bps(lower, frame_len) / 1e9,
            conditional_throughput_pps=None if lower is None else self.conditional_throughput(lower, c),
            regular=regular,
            note=note,
            bounded_by=bounded_by,
            lowest_lossy_pps=lowest_lossy,
            duration_sum_s=c.duration_sum_s,
        )

    def conditional_throughput(self, load: float, c: Criterion) -> float:
        """The load times (1 - the loss ratio that 1 - exceed_ratio of its full-length time stayed within)."""
        full = sorted((t for t in self.by_load[load] if t.requested_duration_s >= c.final_trial_s),
                      key=lambda t: t.loss_ratio)
        remaining_s = max(c.duration_sum_s, sum(t.requested_duration_s for t in full)) * (1.0 - c.exceed_ratio)
        quantile = 1.0
        for t in full:
            quantile = t.loss_ratio
            remaining_s -= t.requested_duration_s
            if remaining_s <= 1e-9 * c.duration_sum_s:
                break
        else:
            quantile = 1.0  # not enough full-length time to vouch for any loss ratio
        return load * (1.0 - quantile)


def search(
    measurer: LoadMeasurer,
    *,
    frame_len: int,
    link_bps: float = DEFAULT_LINK_BPS,
    goals: Sequence[Goal] | None = None,
    precision_pct: float = DEFAULT_PRECISION_PCT,
    final_trial_s: float = FINAL_TRIAL_S,
    initial_trial_s: float = INITIAL_TRIAL_S,
    phases: int = 3,
    min_load_pct: float | None = None,
    max_load_pps: float | None = None,
    warmup: bool = True,
    pause_s: float = DEFAULT_PAUSE_S,
    pause: Pause | None = None,
    on_trial: OnTrial | None = None,
) -> MlrResult:
    """Search every goal's bounds of `measurer` at `frame_len` on a `link_bps` link (module doc).

    `goals` default to `default_goals(final_trial_s)`; `precision_pct` (of the
    wire rate) is the final distance between each goal's bounds; `min_load_pct`
    (of the wire rate, default the precision) is the lowest load tried;
    `max_load_pps` the highest (MLRsearch's Max Load; default the wire rate);
    `warmup`: a first trial at the maximum load that no goal reads;
    `pause(seconds)` runs before each trial and `on_trial(trial)` as each trial
    ends.
    """
    goals = default_goals(final_trial_s) if goals is None else goals
    check_precision_pct(precision_pct)
    check_trial_s(final_trial_s)
    check_trial_s(initial_trial_s, flag="initial trial")
    if initial_trial_s > final_trial_s:
        raise UsageError(f"initial trial {initial_trial_s:g} s is longer than the final trial {final_trial_s:g} s")
    if phases < 1:
        raise UsageError(f"phases {phases} must be 1 or more")
    if not goals:
        raise UsageError("an MLR search needs at least one goal")
    if len({g.name for g in goals}) != len(goals):
        raise UsageError(f"goal names repeat: {', '.join(g.name for g in goals)}")
    for goal in goals:
        goal.check()
    min_load_pct = precision_pct if min_load_pct is None else min_load_pct
    if not 0 < min_load_pct < 100:
        raise UsageError(f"minimum load {min_load_pct:g} % must be above 0 % and below 100 % of the wire rate")

    wire = wire_pps(link_bps, frame_len)
    max_pps = check_max_load(max_load_pps, wire)
    width_pps = wire * precision_pct / 100.0
    plan = plan_phases(initial_trial_s, final_trial_s, phases, width_pps)
    runner = TrialRunner(measurer.measure, pause_s=pause_s, pause=pause, on_trial=on_trial)
    state = _Search(runner, tuple(goals), max_pps, min(max_pps, wire * min_load_pct / 100.0), final_trial_s)
    state.wire_pps = wire
    warmups = [runner.run(max_pps, initial_trial_s, WARMUP)] if warmup else []
    for index, phase in enumerate(plan):
        state.run_phase(index, phase, len(plan))
    return MlrResult(
        frame_len=frame_len,
        link_bps=link_bps,
        wire_pps=wire,
        max_load_pps=max_pps,
        min_load_pps=state.min_pps,
        precision_pct=precision_pct,
        width_pps=width_pps,
        final_trial_s=final_trial_s,
        phases=plan,
        goals=tuple(state.result(goal, frame_len, width_pps) for goal in goals),
        trials=tuple(t for t in runner.trials if t not in warmups),
        total_trial_s=runner.total_trial_s,
        total_pause_s=runner.total_pause_s,
        reruns=tuple(runner.reruns),
        warmups=tuple(warmups),
    )


# --- the method object (capbench.methods.method) ------------------------------------------


@dataclass(frozen=True)
class MlrGoalAnswer:
    """One goal of an MLR answer as searches.jsonl holds it (GoalResult and its throughput)."""

    name: str
    loss_ratio: float = 0.0
    exceed_ratio: float = 0.0
    lower_bound_pps: float | None = None
    upper_bound_pps: float | None = None
    lower_bound_gbps: float | None = None
    conditional_throughput_pps: float | None = None
    regular: bool = False
    note: str = ""
    bounded_by: str | None = None  # None: a version-1 line from before bounded_by
    lowest_lossy_pps: float | None = None
    duration_sum_s: float | None = None  # None: a line from before issue 28, one final trial decided a load
    throughput_pps: float = 0.0

    @classmethod
    def of(cls, g: GoalResult) -> MlrGoalAnswer:
        return cls(**dataclasses.asdict(g), throughput_pps=g.throughput_pps)

    def bounds_text(self) -> str:
        """The goal's bounds: the highest load that met it and the lowest that did not."""
        def pps(v: float | None) -> str:
            return "none" if v is None else f"{v:,.0f}"
        return f"lower {pps(self.lower_bound_pps)}, upper {pps(self.upper_bound_pps)}"


@dataclass(frozen=True)
class MlrAnswer(MethodAnswer):
    METHOD = "mlr"

    precision_pct: float
    final_trial_s: float | None
    goals: tuple[MlrGoalAnswer, ...]

    @classmethod
    def from_v1(cls, d: dict[str, Any]) -> dict[str, Any]:
        # A goal without the throughput names the lower bound only: that is the throughput.
        goals = d.get("goals")
        if isinstance(goals, list):
            d = d | {"goals": [g | {"throughput_pps": g.get("throughput_pps") or g.get("lower_bound_pps")}
                               if isinstance(g, dict) else g for g in goals]}
        return super().from_v1(d)

    @classmethod
    def of(cls, r: MlrResult, backend: str) -> MlrAnswer:
        return cls(**cls.common(r, backend),
                   precision_pct=r.precision_pct, final_trial_s=r.final_trial_s,
                   goals=tuple(MlrGoalAnswer.of(g) for g in r.goals))

    def text(self) -> str:
        return "; ".join(f"{g.name} {g.throughput_pps:,.0f} pps ({g.bounds_text()})"
                         + (f", {GENERATOR_BOUND}: {held_text(g.upper_bound_pps)}" if g.bounded_by == GENERATOR
                            else "") for g in self.goals)

    def figures(self, tried: Sequence[TrialResult], wire: float) -> Figures:
        final_s = self.final_trial_s or FINAL_TRIAL_S
        values: dict[str, float | None] = {}
        bounds: dict[str, Bound] = {}
        info: dict[str, Any] = {}
        notes: list[str] = []
        tried = [r for r in tried if r.purpose != WARMUP]  # read by no goal
        pairs = [(load_of(r), r) for r in tried]
        for g in self.goals:
            name = f"mlr_{g.name}"
            metric = f"{name}_pps"
            values[metric] = g.throughput_pps
            upper, bounded, lowest, note = g.upper_bound_pps, g.bounded_by, g.lowest_lossy_pps, g.note
            if tried:  # judged again from the trials, by today's rule
                c = Criterion(g.loss_ratio, g.exceed_ratio, final_s, g.duration_sum_s or final_s)
                found, lowest = what_bounded(((load_of(r), r.requested_duration_s, r) for r in tried), c, upper)
                bounded = found or g.bounded_by
                kept = without_bound_notes(note.split("; ") if note else [])
                bound = bound_note(bounded, upper, g.throughput_pps, pairs, c.loss_ratio)
                note = "; ".join([*kept, bound] if bound else kept)
            info |= {f"{name}_upper_pps": upper, f"{name}_bounded_by": bounded, f"{name}_lowest_lossy_pps": lowest}
            bounds[metric] = Bound(bounded, upper, lowest)
            if note:
                notes.append(f"{g.name}: {note}")
        info["trial_s"] = self.final_trial_s
        info["short_trials"] = final_s < FINAL_TRIAL_S
        return Figures(values, bounds, wire * self.precision_pct / 100.0, tuple(notes), info)


class Mlr(Method):
    name = "mlr"
    takes_max_load = True
    help = "multiple loss ratio search (FD.io CSIT MLRsearch): NDR and PDR bounds in one search"
    answer_type = MlrAnswer
    trial_s = FINAL_TRIAL_S
    trial_help = "its last phase"
    title = "MLR"
    best_rank = 2
    loss_lines = True
    table = "goals"
    table_title = "MLR search"

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, **_: Any) -> MlrAnswer:
        assert isinstance(size, int)
        s = context.settings
        final_s = s.trial_length(self)
        r = search(measurer, frame_len=size, link_bps=context.link_bps, precision_pct=s.precision_pct,
                   goals=default_goals(final_s, s.duration_sum_trials, s.goals),
                   final_trial_s=final_s, initial_trial_s=min(INITIAL_TRIAL_S, final_s), pause_s=s.pause_s,
                   max_load_pps=s.max_load_pps(size, context.link_bps),
                   pause=context.pause, on_trial=tagger(context.record, self.name))
        return MlrAnswer.of(r, backend)

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        """Usually 5 full-length trials near the answer and 17 shorter ones (the warm-up among them)
        finding it, each load decided by two or three of them (the duration sum): the simulated
        device's searches took 17 to 25. Final trials no longer than the first phase's make one
        phase (plan_phases) of about 9 trials, all full length: 7 to 13 on the simulated device
        (capacities of 150 kpps to 1.3 Mpps at 64 B, 5 % noise, precisions of 1 to 4 %).
        Where one final trial decides a load (`duration_sum_trials` 1), about 5 trials in one
        phase (4 to 11 there, median 5), else 2 full-length and 6 shorter ones (7 to 16, median 8).
        One goal or two: the same on the model, whose two bounds meet; on a host that loses a
        little at every load, one goal skips the other's trials."""
        per = settings.pause_s + overhead_s
        final_s = settings.trial_length(self)
        sum_1 = settings.duration_sum_trials == 1
        if final_s <= INITIAL_TRIAL_S:
            trials = ONE_PHASE_TRIALS_SUM_1 if sum_1 else ONE_PHASE_TRIALS
            return Estimate(trials, trials * (final_s + per))
        full, short = (2, 6) if sum_1 else (5, 17)
        return Estimate(full + short, full * (final_s + per) + short * (INITIAL_TRIAL_S + per))

    def main_metric(self, names: Sequence[str] = ()) -> str | None:
        """The first goal's lower bound (NDR by default)."""
        return next((n for n in names if n.startswith("mlr_")), None)

    def metric(self, name: str) -> Metric | None:
        if not (name.startswith("mlr_") and name.endswith("_pps")):
            return None
        return Metric(name, f"MLR {name.removeprefix('mlr_').removesuffix('_pps')}", "pps")
