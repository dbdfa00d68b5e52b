"""Running a campaign's steps: placement, recording, resuming, and the time left.

`execute()` walks the steps in order. A step that the results directory already
completed is skipped; a cut-short one gets its recorded trials replayed
(campaign.ReplayMeasurer) and only the rest measured. Every new trial is tagged
with its step and repetition and recorded as it ends; every method answer too.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.campaign.matrix import Campaign, Progress, ReplayMeasurer, Step
from capbench.methods import dispatch, registry
from capbench.methods.method import TRIAL_OVERHEAD_S, Context, Estimate, MethodSettings
from capbench.rates import parse_rate
from capbench.trial.measure import TrialResult


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


def _settings(c: Campaign) -> MethodSettings:
    return MethodSettings(precision_pct=c.precision_pct, loss_tolerance_frames=c.loss_tolerance_frames,
                          trial_s=c.trial_s, steps=c.steps_per_sweep, pause_s=c.pause_s)


def estimate_step(c: Campaign, step: Step, overhead_s: float = TRIAL_OVERHEAD_S) -> Estimate:
    """Rough trials and time of a step (its method's estimate), for the progress bar and the time left."""
    return registry.get(step.method).estimate(_settings(c), c.trial_duration_s(step.size), overhead_s)


def estimate_step_trials(c: Campaign, step: Step) -> int:
    return estimate_step(c, step).trials


def estimate_step_s(c: Campaign, step: Step, overhead_s: float = TRIAL_OVERHEAD_S) -> float:
    return estimate_step(c, step, overhead_s).seconds


def execute(c: Campaign, steps: Sequence[Step], progress: Progress, run: StepRun) -> int:
    """Run every step not yet done; return how many ran."""
    settings = _settings(c)
    rate = parse_rate(c.rate)
    todo = [s for s in steps if not progress.done(s)]
    est_left_s = sum(estimate_step_s(c, s) for s in todo)
    est_done_s = took_s = 0.0
    done = len(steps) - len(todo)
    # Trials: those run so far, and the estimate of all (corrected as each step ends).
    count = {"run": 0, "total": sum(estimate_step_trials(c, s) for s in todo)}
    began = time.monotonic()
    for step in todo:
        measurer = ReplayMeasurer(run.make_measurer(step), progress.trials.get(step.key, ()))

        def record(trial: TrialResult, step: Step = step, measurer: ReplayMeasurer = measurer) -> None:
            if not measurer.last_was_replay:  # a replayed trial is in trials.jsonl already
                run.record(dataclasses.replace(trial, step=step.key, repeat=step.repeat))
                count["run"] += 1
                if run.on_trial is not None:
                    n, total = count["run"], max(count["total"], count["run"])
                    # The time the trials so far took each, for each still to come.
                    run.on_trial(n, total, (time.monotonic() - began) / n * (total - n))

        context = Context(dataclasses.replace(settings, method=step.method), c.link_bps, record, run.pause)
        started = time.monotonic()
        answer = dispatch.run_step(step.method, measurer, step.backend, step.size, context, rate=rate,
                                   duration_s=c.trial_duration_s(step.size))
        if answer is not None:  # tagged with its step, then recorded as its searches.jsonl line
            run.record_outcome(answer.tagged(step=step.key, repeat=step.repeat, pin=step.pin, app_load=step.app_load,
                                             procs=step.procs, size=str(step.size)).to_json())
        done += 1
        took_s += time.monotonic() - started
        later = todo[todo.index(step) + 1:]
        count["total"] = count["run"] + sum(estimate_step_trials(c, s) for s in later)
        est_done_s += estimate_step_s(c, step)
        est_left_s -= estimate_step_s(c, step)
        if run.on_step is not None:
            # The estimate, scaled by how the steps so far compared with theirs.
            run.on_step(done, len(steps), step, max(0.0, est_left_s) * (took_s / est_done_s if est_done_s else 1))
    return len(todo)
