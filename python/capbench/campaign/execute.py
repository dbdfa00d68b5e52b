"""Running a campaign's steps: placement, recording, resuming, and the time left.

`execute()` walks the steps in order. A step that the results directory already
completed is skipped; a cut-short one gets its recorded trials replayed
(campaign.resume.ReplayMeasurer) and only the rest measured. Every new trial is tagged
with its step and repetition and recorded as it ends; every method answer too.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.campaign.matrix import Step
from capbench.campaign.plan import Plan, method_settings
from capbench.campaign.resume import ReplayMeasurer
from capbench.methods import dispatch
from capbench.methods.method import Context, MethodAnswer, MethodSettings
from capbench.rates import Rate
from capbench.trial.measure import TrialResult
from capbench.trial.sensors import worst


@dataclass(frozen=True)
class StepRun:
    """What execute() needs from the caller."""

    make_measurer: Callable[[Step], Any]  # a Measurer set up for the step (placement, load, procs)
    record: Callable[[TrialResult], None]  # trials.jsonl
    record_outcome: Callable[[dict[str, Any]], None]  # searches.jsonl
    pause: Callable[[float], None] | None = None  # None: time.sleep
    on_step: Callable[[int, int, Step, float], None] | None = None  # (done, total, step, seconds left)
    # After each new trial: (trials run so far, their estimated total, seconds left), for a progress bar.
    on_trial: Callable[[int, int, float], None] | None = None


def judged(recorded: Sequence[TrialResult]) -> list[TrialResult]:
    """The recorded trials a resumed step's method saw: with several sensors, one per trial (the
    sensors of one trial share its start), the one it judged (sensors.worst)."""
    trials: dict[Any, list[TrialResult]] = {}  # in the order they ran
    for t in recorded:
        trials.setdefault(t.started_at if t.sensors else id(t), []).append(t)
    return [worst(ts) for ts in trials.values()]


def run_step(step: Step, run: StepRun, settings: MethodSettings, link_bps: float, recorded: Sequence[TrialResult],
             *, rate: Rate, duration_s: float, on_new: Callable[[], None] = lambda: None) -> MethodAnswer | None:
    """One step: its method on the step's Measurer, the `recorded` trials of a cut-short step
    replayed first (ReplayMeasurer); every new trial tagged with the step and recorded (then
    `on_new()`), the answer (None for a method without one) recorded as its searches.jsonl line."""
    measurer = ReplayMeasurer(run.make_measurer(step), judged(recorded))

    def record(trial: TrialResult) -> None:
        if measurer.last_was_replay:  # a replayed trial is in trials.jsonl already
            return
        # Several sensors on one stream: the method judged one record, every sensor has one.
        siblings = getattr(measurer.measurer, "siblings", None)
        for t in siblings(trial) if siblings is not None else (trial,):
            run.record(dataclasses.replace(t, step=step.key, repeat=step.repeat, requested_frames=step.count))
        on_new()

    context = Context(dataclasses.replace(settings, method=step.method), link_bps, record, run.pause)
    answer = dispatch.run_step(step.method, measurer, step.backend, step.size, context, rate=rate,
                               duration_s=duration_s)
    if answer is not None:  # tagged with its step, then recorded as its searches.jsonl line
        run.record_outcome(answer.tagged(step=step.key, repeat=step.repeat, pin=step.pin, app_load=step.app_load,
                                         procs=step.procs, size=str(step.size)).to_json())
    return answer


def execute(plan: Plan, run: StepRun) -> int:
    """Run every step of the plan not yet done; return how many ran."""
    c, steps, todo, progress = plan.campaign, plan.steps, plan.todo, plan.progress
    settings = method_settings(c)
    est_left_s = plan.estimated_s(todo)
    est_done_s = took_s = 0.0
    done = len(steps) - len(todo)
    # Trials: those run so far, and the estimate of all (corrected as each step ends).
    count = {"run": 0, "total": plan.estimated_trials(todo)}
    began = time.monotonic()

    def on_new() -> None:
        count["run"] += 1
        if run.on_trial is not None:
            n, total = count["run"], max(count["total"], count["run"])
            # The time the trials so far took each, for each still to come.
            run.on_trial(n, total, (time.monotonic() - began) / n * (total - n))

    for step in todo:
        started = time.monotonic()
        run_step(step, run, settings, c.link_bps, progress.trials.get(step.key, ()), rate=c.load,
                 duration_s=c.trial_duration_s(step), on_new=on_new)
        done += 1
        took_s += time.monotonic() - started
        later = todo[todo.index(step) + 1:]
        count["total"] = count["run"] + plan.estimated_trials(later)
        est_done_s += plan.estimate(step).seconds
        est_left_s -= plan.estimate(step).seconds
        if run.on_step is not None:
            # The estimate, scaled by how the steps so far compared with theirs.
            run.on_step(done, len(steps), step, max(0.0, est_left_s) * (took_s / est_done_s if est_done_s else 1))
    return len(todo)
