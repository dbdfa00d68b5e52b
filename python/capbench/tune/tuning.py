"""`capbench tune` on the test bed: the configurations of the knobs, each measurement a campaign
step run by its method, the search (tune.search) choosing the next from the answers so far.

A measurement of configuration C on rung R, repetition N, is one campaign Step: the tune's matrix
with C's knobs set (knobs.apply), its run length the rung's (`dur=` in its key: an MLR search's
final trial, an iperf trial's duration) and `rep=N`. It runs through campaign.execute.run_step as
any step of `capbench run`: its trials go to trials.jsonl, an MLR search's answer to
searches.jsonl, a disturbed trial is run again by the method (methods/measurer.py). A resumed
tune (`--resume DIR`) asks for the same measurements in the same order (the search is a function
of their values and recorded costs): those the folder holds are read back, a step cut short
replays its trials into its method, and no trial runs twice.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capbench.campaign.execute import StepRun, run_step
from capbench.campaign.matrix import Campaign, Matrix, Step
from capbench.campaign.plan import Plan, method_settings
from capbench.methods import registry
from capbench.methods.measurer import superseded
from capbench.methods.method import TRIAL_OVERHEAD_S, MethodSettings
from capbench.methods.mlr import WARMUP
from capbench.methods.verdict import GENERATOR
from capbench.profile import groups as cpu_groups
from capbench.report import profiles
from capbench.trial import loss_layers
from capbench.trial.record import TrialResult
from capbench.tune import knobs as knobs_mod
from capbench.tune import search
from capbench.tune.knobs import Config, Knob

# A search's pause before each trial (the campaign's is 2 s, against a device's saturation after an
# overload): the veth test bed's rings drain in milliseconds, and a tune runs hundreds of trials.
PAUSE_S = 0.5
STOPPED_GAPS = 10  # a gap between two trials of a measurement longer than this many trials' start-up: a stop
# The end of a tune, which its budget keeps (Tune.end_s): the test bed's removal and the tune's own
# files and figure (END_S), and the run's report (REPORT_S, and per trial). Measured on the 2-CPU VM
# (busy: load 4-7) for a tune of 69 trials with --profile: 3.5 s from its last trial to run.json's
# end and the figure, 62 s for `capbench report` (a flame graph per profiled trial is most of it:
# REPORT_S_PER_PROFILED_TRIAL); the report of trials without profiles is an estimate, not measured.
END_S = 4.0
REPORT_S = 5.0
REPORT_S_PER_TRIAL = 0.1
REPORT_S_PER_PROFILED_TRIAL = 0.9


@dataclass(frozen=True)
class Goal:
    """What a tune maximises (or minimises): a method's answer, on rungs of growing trial length."""

    name: str  # as --goal names it
    method: str  # the method that measures it
    title: str  # as the tables say it
    unit: str  # report.units quantity: "pps" or "pct"
    higher_is_better: bool
    lengths_s: tuple[float, ...]  # the rungs' trial lengths, shortest first
    mlr_goal: str = ""  # the MLR goal whose throughput it is

    def value(self, answer: Mapping[str, Any] | None, decided: Sequence[TrialResult]) -> float:
        """The goal of one measurement: the MLR goal's throughput (0 when no load met it), or the
        loss (%) of the trial the iperf method decided on."""
        if self.mlr_goal:
            goal = next((g for g in (answer or {}).get("goals", ()) if g.get("name") == self.mlr_goal), {})
            return float(goal.get("throughput_pps") or 0.0)
        return float(decided[-1].loss_pct) if decided else math.nan


# MLR's phases shorten its early trials already; its rungs end at a search of 2 s final trials
# (mlr.FINAL_TRIAL_S), each shorter rung half as long and twice as coarse (Rung.precision_pct).
MLR_LENGTHS_S = (0.5, 1.0, 2.0)
# The first rung's MLR duration sum, in trials: one trial decides a load. With the method's three
# (mlr.DURATION_SUM_TRIALS) a screening search at 64 B took about 40 trials here (a load split
# between lossless and lossy trials needs all three, and each disturbed one runs again), 3-4x its
# estimate, so a 15 min tune of 27 configurations screened 4 of them.
SCREENING_SUM_TRIALS = 1
IPERF_LENGTHS_S = (1.0, 2.0, 4.0)
GOALS = {
    "pdr": Goal("pdr", "mlr", "PDR", "pps", True, MLR_LENGTHS_S, "PDR"),
    "ndr": Goal("ndr", "mlr", "NDR", "pps", True, MLR_LENGTHS_S, "NDR"),
    "loss": Goal("loss", "iperf", "loss", "pct", False, IPERF_LENGTHS_S),
}
DEFAULT_GOAL = "pdr"
DEFAULT_SIZE = 64  # the shortest frames, where a capture loses first
DEFAULT_BUDGET = "20m"


@dataclass(frozen=True)
class Space:
    """One backend's knobs and the configurations a tune measures: the defaults first (nothing
    set), then every combination of the knobs' candidates that differs from them."""

    backend: str
    knobs: tuple[Knob, ...]
    configs: tuple[Config, ...]


def space_of(backend: str, knobs: Sequence[Knob]) -> Space:
    defaults = {k.name: k.default for k in knobs}
    combos = [dict(zip((k.name for k in knobs), values)) for values in itertools.product(*(k.candidates for k in knobs))]
    return Space(backend, tuple(knobs), ({}, *(c for c in combos if c != defaults)))


@dataclass(frozen=True)
class Measured:
    """One measurement as the output reads it."""

    config: int
    rung: int
    rep: int
    step: str  # its step key
    value: float
    cost_s: float
    cpu_ns: float | None  # CPU time (counter + kernel receive work) per captured packet
    app_cpu_pct: float | None  # the application's CPU, % of one CPU (the record's app_cpu_pct), at the goal's load
    layers: dict[str, float]  # where the loss that bounds it happened: layer -> % of sent
    trials: int
    disturbed: bool  # its answer rests on a trial the host disturbed
    # With --profile, where the CPU time went at its value (cpu_shares): role -> group -> % of its time.
    cpu_pct: dict[str, dict[str, float]] = field(default_factory=dict)
    # The generator bounded it (the search's bounded_by; at --rate, it fell short of the rate): its value
    # is a lower bound of the capture's, what the generator could send, not what the capture can take.
    generator_bound: bool = False


def started(t: TrialResult) -> float:
    return datetime.datetime.fromisoformat(t.started_at).timestamp()


def cost_of(trials: Sequence[TrialResult], pause_s: float) -> float:
    """What a measurement took, from its records (so a resumed tune charges it the same): the
    time from each trial's start to the next one's, the last one's length with the start-up and
    stop of a trial (TRIAL_OVERHEAD_S), and the pause before the first. A gap longer than
    STOPPED_GAPS trials' start-up, or backwards, is a tune stopped and resumed in the middle of
    the measurement: it counts as the estimate of its trial instead."""
    if not trials:
        return 0.0
    starts = [started(t) for t in trials]
    total = pause_s + trials[-1].requested_duration_s + TRIAL_OVERHEAD_S
    for t, start, after in zip(trials, starts, starts[1:]):
        own = t.requested_duration_s + TRIAL_OVERHEAD_S + pause_s  # the trial and the pause after it
        gap = after - start
        total += gap if 0 <= gap <= own + STOPPED_GAPS * TRIAL_OVERHEAD_S else own
    return total


def cpu_ns(trials: Sequence[TrialResult]) -> float | None:
    """CPU time per captured packet (ns): the counter's and the kernel's receive work, over the
    trials' captured packets; None where neither was measured or nothing was captured."""
    busy = [(t.app_cpu_pct + (t.kernel_cpu_pct or 0.0)) / 100.0 * t.duration_s for t in trials
            if t.kernel_cpu_pct is not None or t.app_cpu_pct]
    received = sum(t.received for t in trials)
    return math.fsum(busy) / received * 1e9 if busy and received else None


def app_cpu(trials: Sequence[TrialResult]) -> float | None:
    """The application's CPU over the trials (the mean of their records' app_cpu_pct: the counter's
    or the program's user and system time, % of one CPU); None without a trial."""
    return math.fsum(t.app_cpu_pct for t in trials) / len(trials) if trials else None


def layer_shares(trials: Sequence[TrialResult]) -> dict[str, float]:
    """Where the trials lost their frames: each layer's packets, % of the frames sent, from the
    account (loss_layers.layers: only what a counter shows)."""
    sent = sum(t.sent for t in trials)
    packets: dict[str, int] = {}
    for t in trials:
        for layer, n, _counter in loss_layers.layers(t):
            packets[loss_layers.family(layer)] = packets.get(loss_layers.family(layer), 0) + n
    return {layer: 100.0 * n / sent for layer, n in packets.items() if n} if sent else {}


PROFILED_ROLES = (profiles.COUNTER, profiles.RECEIVE)  # the roles the reasons name (profile.analysis)


def cpu_shares(trials: Sequence[TrialResult]) -> dict[str, dict[str, float]]:
    """Where the CPU time went in the trials that were profiled (--profile): for the counter (its
    processes' own time) and the receive CPU (its time over the load window), each group of
    groups.toml's share, % of that time, the mean over the trials; {} where none was profiled."""
    out = {}
    for role in PROFILED_ROLES:
        times = [rt for t in trials if (p := profiles.profile_of(t)) is not None and (rt := p.roles.get(role))]
        if times:
            out[role] = {g: statistics.fmean(rt.groups_pct.get(g, 0.0) for rt in times)
                         for g in cpu_groups.table().names()}
    return out


def near(load: float | None, other: float | None) -> bool:
    return load is not None and other is not None and abs(load - other) <= 1e-6 * max(load, other) + 1e-6


@dataclass
class Tune:
    """A tune of one or several backends at one size: drive() is the runner's way of walking the
    steps (RunOptions.drive); `outcomes` the answers a resumed run's folder holds."""

    campaign: Campaign
    spaces: tuple[Space, ...]
    goal: Goal
    budget_s: float  # the whole tune's; each backend gets its share
    base: Mapping[str, Matrix]  # backend -> its matrix before any knob is set
    outcomes: Sequence[Mapping[str, Any]] = ()
    # The flags every `capbench run` line of it repeats besides a configuration's: a tune on ports, its ports'.
    run_args: tuple[str, ...] = ()
    max_app_cpu_pct: float | None = None  # --max-app-cpu: above it a configuration is not eligible (search)
    say: Callable[[str], None] = lambda line: None
    results: dict[str, search.Outcome] = field(default_factory=dict)  # backend -> what its search found
    measured: dict[str, dict[tuple[int, int, int], Measured]] = field(default_factory=dict)
    # When each invocation of the tune began (POSIX seconds: run.json's started_at and resumed_at,
    # this one's last): its set-up lasted until its first trial (overhead_s). () charges none.
    starts: tuple[float, ...] = ()
    report: bool = False  # a report is written at the end: the budget keeps its time (end_s)
    trial_starts: set[float] = field(default_factory=set)  # of every trial the search has seen

    def setup_s(self) -> float:
        """The test bed's set-up, as measured: from each invocation's start to its first trial
        (building the bed, the host probe, a program's dry start), for those that ran a trial. From
        the records alone, so a resumed tune charges the same at the same point of its search."""
        total = 0.0
        for start, until in zip(self.starts, (*self.starts[1:], math.inf)):
            first = min((t for t in self.trial_starts if start <= t < until), default=None)
            total += 0.0 if first is None else first - start
        return total

    def end_s(self, spent_s: float) -> float:
        """The estimate of the end, kept in the budget: the test bed removed (END_S) and, unless
        --no-report, the report of every trial the tune will have run: at the pace so far
        (`spent_s` of measurements), as many more as the budget left holds."""
        if not self.report:
            return END_S
        seen = len(self.trial_starts)
        trials = seen * max(1.0, self.budget_s / spent_s) if spent_s > 0 else seen
        per_trial = REPORT_S_PER_PROFILED_TRIAL if self.campaign.profile else REPORT_S_PER_TRIAL
        return END_S + REPORT_S + per_trial * trials

    def charged_s(self, spent_s: float) -> float:
        """The budget spent: the measurements' `spent_s` and the set-up so far."""
        return spent_s + self.setup_s()

    @property
    def share_s(self) -> float:
        return self.budget_s / len(self.spaces)

    def rungs(self) -> tuple[search.Rung, ...]:
        """The goal's rungs with their methods' estimates (registry: Method.estimate)."""
        return tuple(search.Rung(length, registry.get(self.goal.method).estimate(
            self.settings(i), length).seconds) for i, length in enumerate(self.goal.lengths_s))

    def settings(self, rung: int) -> MethodSettings:
        """The methods' settings on a rung: its trial length, a precision as much coarser than the
        campaign's as the trials are shorter than the last rung's, an MLR search of the tune's goal
        only, and on the first rung (the screening of every configuration) one trial deciding a
        load (SCREENING_SUM_TRIALS) instead of the method's duration sum: the rungs above and the
        race repeat what the screening keeps."""
        lengths = self.goal.lengths_s
        return dataclasses.replace(method_settings(self.campaign), method=self.goal.method, trial_s=lengths[rung],
                                   pause_s=self.campaign.pause_s,
                                   precision_pct=min(50.0, self.campaign.precision_pct * lengths[-1] / lengths[rung]),
                                   goals=(self.goal.mlr_goal,) if self.goal.mlr_goal else (),
                                   duration_sum_trials=SCREENING_SUM_TRIALS if rung == 0 else None)

    def search_settings(self, overhead_s: Callable[[], float] = lambda: 0.0) -> search.Settings:
        return search.Settings(self.share_s, self.rungs(), higher_is_better=self.goal.higher_is_better,
                               overhead_s=overhead_s, max_app_cpu_pct=self.max_app_cpu_pct)

    def smallest_budget_s(self) -> float:
        """The smallest budget that covers the shortest search of every backend."""
        s = self.search_settings()
        return max(search.smallest_budget(len(sp.configs), s) for sp in self.spaces) * len(self.spaces)

    def step(self, space: Space, config: int, rung: int, rep: int) -> Step:
        m = knobs_mod.apply(self.base[space.backend], space.configs[config], space.knobs, self.campaign.programs)
        (step,) = m.steps()
        length = self.goal.lengths_s[rung]
        own_load = registry.get(self.goal.method).sets_own_load
        return dataclasses.replace(step, repeat=rep, dur=f"{length:g}s", duration_s=0.0 if own_load else length)

    def drive(self, plan: Plan, run: StepRun) -> None:
        """Search every backend's space (RunOptions.drive)."""
        answers = {o["step"]: o for o in self.outcomes if isinstance(o.get("step"), str)}
        spent = {"trials": 0, "s": 0.0, "since": time.monotonic()}
        began = time.monotonic()

        def on_new() -> None:
            """After each new trial: the trials so far, those the budget left holds at their pace,
            and the budget left (the live line's time left: the set-up is spent, the end is in it)."""
            n = spent["trials"] = spent["trials"] + 1
            if run.on_trial is not None:
                going_s = time.monotonic() - spent["since"]  # the measurement in progress
                left_s = max(0.0, self.budget_s - self.charged_s(spent["s"]) - going_s)
                run.on_trial(n, n + round(left_s / ((time.monotonic() - began) / n or 1.0)), left_s)

        def overhead_s() -> float:
            """Each backend's share of the set-up so far and of the estimated end."""
            return (self.setup_s() + self.end_s(spent["s"])) / len(self.spaces)

        for space in self.spaces:
            got = self.measured.setdefault(space.backend, {})

            def measure(config: int, rung: int, rep: int, space: Space = space,
                        got: dict = got) -> search.Measurement:
                spent["since"] = time.monotonic()
                m = self.measure_one(space, config, rung, rep, plan.progress.trials, answers, run, on_new)
                got[(config, rung, rep)] = m
                spent["s"] += m.cost_s
                self.say(self.progress_line(space, m, self.charged_s(spent["s"])))
                return search.Measurement(m.value, m.cost_s, m.cpu_ns, m.app_cpu_pct)

            self.results[space.backend] = search.search(len(space.configs), measure, self.search_settings(overhead_s))

    def measure_one(self, space: Space, config: int, rung: int, rep: int, recorded: Mapping[str, list],
                    answers: Mapping[str, Mapping[str, Any]], run: StepRun, on_new: Callable[[], None]) -> Measured:
        """One measurement: read back from the results folder where it is whole there, else run (its
        recorded trials replayed first)."""
        step = self.step(space, config, rung, rep)
        before = list(recorded.get(step.key, ()))
        answer = answers.get(step.key)
        has_answer = registry.get(step.method).answer_type is not None
        whole = answer is not None if has_answer else bool(before) and not superseded(before[-1])
        trials = before
        if not whole:
            new: list[TrialResult] = []
            keep = run.record

            def record(t: TrialResult) -> None:
                new.append(t)
                self.trial_starts.add(started(t))  # before the live line's time left: its set-up ended
                keep(t)

            got = run_step(step, dataclasses.replace(run, record=record), self.settings(rung), self.campaign.link_bps,
                           before, rate=self.campaign.load, duration_s=self.campaign.trial_duration_s(step),
                           on_new=on_new)
            answer = None if got is None else got.to_json()
            trials = before + new
        return self.measured_of(config, rung, rep, step.key, answer, trials)

    def measured_of(self, config: int, rung: int, rep: int, key: str, answer: Mapping[str, Any] | None,
                    trials: Sequence[TrialResult]) -> Measured:
        self.trial_starts.update(started(t) for t in trials)
        decided = [t for t in trials if not superseded(t) and t.purpose != WARMUP]
        value = self.goal.value(answer, decided)
        if self.goal.mlr_goal:
            goal = next((g for g in (answer or {}).get("goals", ()) if g.get("name") == self.goal.mlr_goal), {})
            at_value = [t for t in decided if near(t.offered_pps, goal.get("lower_bound_pps"))]
            bounding = [t for t in decided if near(t.offered_pps, goal.get("upper_bound_pps"))]
            generator_bound = goal.get("bounded_by") == GENERATOR
        else:
            at_value = bounding = decided[-1:]
            generator_bound = any(t.invalid_offered_load for t in at_value)
        return Measured(config, rung, rep, key, value, cost_of(trials, self.campaign.pause_s), cpu_ns(at_value),
                        app_cpu(at_value), layer_shares(bounding), len(trials), any(t.disturbed for t in decided),
                        cpu_shares(at_value), generator_bound)

    def progress_line(self, space: Space, m: Measured, spent_s: float) -> str:
        """The line after each measurement: the budget spent, the rung, the configuration and its goal."""
        width, done = 20, min(1.0, spent_s / self.budget_s)
        bar = "[" + "#" * round(width * done) + "-" * (width - round(width * done)) + "]"
        return (f"{bar} {spent_s / 60:.1f}/{self.budget_s / 60:.1f} min  {space.backend} rung "
                f"{m.rung + 1}/{len(self.goal.lengths_s)} ({self.goal.lengths_s[m.rung]:g} s trials), "
                f"{knobs_mod.label(space.configs[m.config])} #{m.rep}: {self.goal.title} "
                f"{value_text(self.goal, m.value)}")


def value_text(goal: Goal, value: float) -> str:
    if math.isnan(value):
        return "not measured"
    return f"{value:,.0f} pps" if goal.unit == "pps" else f"{value:.3g} %"
