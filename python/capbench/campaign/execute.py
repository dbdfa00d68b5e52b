"""Running a campaign's steps: placement, recording, resuming, and the time left.

`execute()` walks the steps in order. A step that the results directory already
completed is skipped; a cut-short one gets its recorded trials replayed
(campaign.ReplayMeasurer) and only the rest measured. Every new trial is tagged
with its step and repetition and recorded as it ends; every method answer too.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.campaign.matrix import Campaign, Progress, ReplayMeasurer, Step
from capbench.methods import dispatch
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


TRIAL_OVERHEAD_S = 0.8  # process start-up, settle and stop per trial, measured here


def _searches(c: Campaign) -> int:
    """A binary search from the wire rate halves its step until it is below the precision:
    about log2(100 / precision) trials, plus the first at the wire rate."""
    return math.ceil(math.log2(100.0 / c.precision_pct)) + 1


def estimate_step_trials(c: Campaign, step: Step) -> int:
    """Rough number of trials of a step (the counts estimate_step_s times)."""
    searches = _searches(c)
    return {"iperf": 1, "rfc2544": searches + 1, "mlr": 12, "sweep": c.steps_per_sweep, "back2back": 12,
            "latency": searches + 2}[step.method]


def estimate_step_s(c: Campaign, step: Step, overhead_s: float = TRIAL_OVERHEAD_S) -> float:
    """Rough time of a step, for the time left: an iperf trial, or a search's usual trials."""
    trial = c.trial_s or (60.0 if step.method in ("rfc2544", "mlr") else 10.0)
    # The search trials, and the verification, which waits at least 10 s against
    # saturation (dispatch._rfc2544).
    searches = _searches(c)
    verify = trial + max(c.pause_s, 10.0) + overhead_s
    per = {"iperf": c.trial_duration_s(step.size) + overhead_s,
           "rfc2544": searches * (trial + c.pause_s + overhead_s) + verify,
           "mlr": 4 * (trial + c.pause_s + overhead_s) + 8 * (1.0 + c.pause_s + overhead_s),
           "sweep": c.steps_per_sweep * (trial + c.pause_s + overhead_s),
           "back2back": 12 * (2.0 + c.pause_s + overhead_s),
           "latency": searches * (trial + c.pause_s + overhead_s) + verify + trial + overhead_s}
    return per[step.method]


def execute(c: Campaign, steps: Sequence[Step], progress: Progress, run: StepRun) -> int:
    """Run every step not yet done; return how many ran."""
    settings = dispatch.MethodSettings(precision_pct=c.precision_pct, loss_tolerance_frames=c.loss_tolerance_frames,
                                       trial_s=c.trial_s, steps=c.steps_per_sweep, pause_s=c.pause_s)
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

        def record_outcome(outcome: dict[str, Any], step: Step = step) -> None:
            run.record_outcome(outcome | {"step": step.key, "repeat": step.repeat, "pin": step.pin,
                                          "app_load": step.app_load, "procs": step.procs, "size": str(step.size)})

        context = dispatch.Context(dataclasses.replace(settings, method=step.method), c.link_bps, record, run.pause)
        started = time.monotonic()
        dispatch.run_step(step.method, measurer, step.backend, step.size, context, rate=rate,
                          duration_s=c.trial_duration_s(step.size), record_outcome=record_outcome)
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
