"""Resuming a run: what its results folder already holds, and replaying it to the methods.

`progress_of` reads the recorded trials and answers per step key; `Progress.done` says
whether a step is complete (its trial, or its method's answer); `ReplayMeasurer` hands a
cut-short step's recorded trials back to its method before it measures anew.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.campaign.matrix import Step
from capbench.errors import UsageError
from capbench.methods import registry


@dataclass
class Progress:
    """What a results directory already holds, per step key."""

    trials: dict[str, list[Any]]  # step key -> its recorded TrialResults, in order
    outcomes: set[str]  # step keys whose method answer is recorded (searches.jsonl)

    def done(self, step: Step) -> bool:
        if registry.get(step.method).answer_type is None:  # its trial is its result
            return bool(self.trials.get(step.key))
        return step.key in self.outcomes


def progress_of(trials: Iterable[Any], outcomes: Iterable[dict[str, Any]]) -> Progress:
    by_step: dict[str, list[Any]] = {}
    for t in trials:
        if getattr(t, "step", ""):
            by_step.setdefault(t.step, []).append(t)
    return Progress(by_step, {o["step"] for o in outcomes if "step" in o})


class ReplayMeasurer:
    """Hands a method the trials a step already recorded, then measures for real.

    The methods decide only from trial results, so replaying the recorded ones
    in order brings a search back to where it stopped. A replayed trial must be
    the one the method asks for (same load and duration, or burst length); anything else means
    the recorded trials came from other settings, and resuming stops.
    """

    def __init__(self, measurer: Any, recorded: Sequence[Any]):
        self.measurer = measurer
        self.recorded = list(recorded)
        self.replayed = 0
        self.last_was_replay = False  # the trial measure() or measure_burst() returned last is a recorded one
        self._burst: Any = None  # the real measurer's measure_burst, made on first use

    def __getattr__(self, name: str) -> Any:  # setup, binaries, testbed ... of the real measurer
        return getattr(self.measurer, name)

    def measure(self, duration_s: float, load: Any) -> Any:
        if self.replaying:
            r = self.recorded[self.replayed]
            want = load if isinstance(load, (int, float)) else None
            if want is not None and r.offered_pps is not None and abs(r.offered_pps - want) > 1e-6 * want + 1e-6:
                raise self._mismatch(f"ran at {r.offered_pps:,.0f} pps, the method now asks for {want:,.0f} pps")
            if abs(r.requested_duration_s - duration_s) > 1e-6 * duration_s + 1e-6:
                raise self._mismatch(f"lasted {r.requested_duration_s:g} s, the method now asks for {duration_s:g} s")
            return self._replay()
        self.last_was_replay = False
        return self.measurer.measure(duration_s, load)

    def measure_burst(self, frames: int) -> Any:
        """A back-to-back burst (dispatch._back2back): the recorded one, then the real measurer's."""
        from capbench.methods import dispatch  # here: reading a campaign file needs no methods

        if self.replaying:
            r = self.recorded[self.replayed]
            # A burst of `frames` sends no more than that, at the wire rate, for frames / wire rate
            # plus at most dispatch.BURST_MARGIN_S.
            least_s = frames / r.offered_pps if r.offered_pps else 0.0
            if r.sent > frames or not (least_s * (1 - 1e-6) - 1e-6 <= r.requested_duration_s
                                       <= least_s * (1 + 1e-6) + dispatch.BURST_MARGIN_S + 1e-6):
                raise self._mismatch(f"was a burst that sent {r.sent:,} frames in {r.requested_duration_s:g} s, "
                                     f"the method now asks for a burst of {frames:,} frames")
            return self._replay()
        self.last_was_replay = False
        if self._burst is None:
            own = getattr(self.measurer, "measure_burst", None)
            self._burst = own if own is not None else dispatch.burst_measurer(self.measurer)
        return self._burst(frames)

    def _replay(self) -> Any:
        r = self.recorded[self.replayed]
        self.replayed += 1
        self.last_was_replay = True
        return r

    def _mismatch(self, what: str) -> UsageError:
        return UsageError(f"cannot resume: the recorded trial {self.replayed + 1} of this step {what} "
                          f"(were the settings changed?)")

    @property
    def replaying(self) -> bool:
        return self.replayed < len(self.recorded)
