"""`capbench run --method`: one method per run, over every backend and frame length.

Each method (capbench.methods.registry) gets a Measurer per (backend, frame length) and
decides from trial results only (see docs/methods.md). Every trial is handed to `record`
as soon as it ends, tagged with the method and why it ran (`purpose`), so trials.jsonl grows
trial by trial; each search's answer for one (backend, frame length) is a typed
MethodAnswer (capbench.methods.method), handed to `record_outcome` as its searches.jsonl
line (`to_json()`), with every figure taken from the method's result. Each answer says what
bounded it (`bounded_by`; per goal for MLR), by the one rule of capbench.methods.verdict:
"capture loss" (lossy trials), "generator" (only lower bounds: the generator could not hold
the next rate and lost nothing, so the answer is a lower bound of the capture's) or "none";
readers of older lines without it (the answers' from_json) judge it from the trials.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any

from capbench.methods import registry
from capbench.methods.back2back import BURST_MARGIN_S, burst_measurer  # noqa: F401 (campaign.ReplayMeasurer)
from capbench.methods.method import Context, MethodAnswer, MethodSettings, Record
from capbench.rates import Rate

METHODS = registry.METHODS

RecordOutcome = Callable[[dict[str, Any]], None]
MakeMeasurer = Callable[[str, int | str], Any]  # a Measurer, or anything with its measure()


def check(settings: MethodSettings, sizes: Iterable[int | str]) -> None:
    registry.get(settings.method).check_sizes(sizes)


def run_step(method: str, measurer: Any, backend: str, size: int | str, context: Context, *, rate: Rate,
             duration_s: float) -> MethodAnswer | None:
    """One method at one backend and size: its trials go to `context.record` as they end; its
    answer (None for a method without one, iperf) is returned."""
    m = registry.get(method)
    m.check_sizes((size,))
    return m.run(measurer, backend, size, _no_pause_before_replays(context, measurer), rate=rate,
                 duration_s=duration_s)


def _no_pause_before_replays(context: Context, measurer: Any) -> Context:
    """A resumed step (campaign.ReplayMeasurer) replays its recorded trials: nothing runs, so the
    pauses before them are skipped (the methods still count them, so the answer is the same)."""
    if getattr(measurer, "replaying", None) is not True:
        return context
    wait = context.pause or time.sleep

    def pause(seconds: float) -> None:
        if not measurer.replaying:
            wait(seconds)

    return dataclasses.replace(context, pause=pause)


def run(settings: MethodSettings, make_measurer: MakeMeasurer, backends: Iterable[str],
        sizes: Iterable[int | str], *, link_bps: float, rate: Rate, duration_s: float, record: Record,
        record_outcome: RecordOutcome, pause: Callable[[float], None] | None = None) -> None:
    """Run `settings.method` for every backend x size (backend-major), recording as it goes: each
    answer as its searches.jsonl line.

    `rate` and `duration_s` are the iperf method's; the searches choose their own loads.
    """
    sizes = tuple(sizes)
    check(settings, sizes)
    context = Context(settings, link_bps, record, pause)
    for backend in backends:
        for size in sizes:
            answer = run_step(settings.method, make_measurer(backend, size), backend, size, context, rate=rate,
                              duration_s=duration_s)
            if answer is not None:
                record_outcome(answer.to_json())
