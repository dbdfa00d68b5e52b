"""Several sensors on one stream (seed 004): one generator, the test bed's tap, and N sensors that
capture the same frames at the same time, each with its own backend or capture program, namespace,
receive CPU and loss account.

`SensorsMeasurer.measure(duration_s, load)` runs one trial of all of them (trial_run.run_trial)
and gives the methods the record of the sensor that received least: a method's verdict is the
stream's (an RFC 2544 rate is one every sensor captured without loss), and the host disturbed the
trial when it disturbed any sensor (`one_verdict`). `siblings(trial)` gives
every sensor's record of that trial, which the campaign writes, one line each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from capbench.rates import Rate
from capbench.trial.measure import Measurer
from capbench.trial.record import TrialResult
from capbench.trial.trial_run import run_trial

SEPARATOR = " + "  # between the sensors' backends in a step's backend ("pcap + afp-v3"): no name holds spaces


def step_backend(backends: Sequence[str]) -> str:
    """The backend of a campaign step that measures these sensors."""
    return SEPARATOR.join(backends)


def sensor_backends(step_backend_: str) -> list[str]:
    """The sensors' backends of a step's backend; one element for a step without sensors."""
    return step_backend_.split(SEPARATOR)


def worst(results: Sequence[TrialResult]) -> TrialResult:
    """The record the methods judge: a failed one first, then the one that received least."""
    return min(results, key=lambda r: (not r.failure, r.received, r.sensor))


def one_verdict(results: Sequence[TrialResult]) -> list[TrialResult]:
    """The sensors' records of one trial, disturbed together: a trial is run again as a whole when the
    host disturbed any sensor of it (methods.measurer), so every record of it says so (readers leave
    all of a superseded trial out, not one sensor's), naming the sensor whose counters showed it."""
    hit = next((r for r in results if r.disturbed), None)
    if hit is None:
        return list(results)
    return [r if r.disturbed else
            dataclasses.replace(r, disturbed=True, disturbed_reason=f"sensor {hit.sensor}: {hit.disturbed_reason}")
            for r in results]


class SensorsMeasurer:
    """N sensor Measurers behind the tap of `sender`'s test bed (its `sensors` veth pairs)."""

    def __init__(self, sender: Measurer, sides: Sequence[Measurer], tap_cpu: int | None):
        self.sender, self.sides, self.tap_cpu = sender, list(sides), tap_cpu
        self.last: list[TrialResult] = []

    # What a method or the campaign may ask of a measurer (setup, binaries, testbed): the sender's.
    @property
    def setup(self):
        return self.sender.setup

    @property
    def binaries(self):
        return self.sender.binaries

    @property
    def testbed(self):
        return self.sender.testbed

    def measure(self, duration_s: float, load: Rate | float) -> TrialResult:
        self.last = one_verdict(run_trial(self.sender, self.sides, duration_s, load, tap_cpu=self.tap_cpu))
        return worst(self.last)

    def siblings(self, trial: TrialResult) -> list[TrialResult]:
        """Every sensor's record of the trial `trial` (a method's copy of the worst one, with its
        method and purpose) came from, with those tags; [trial] for any other."""
        if not self.last or not trial.sensors or trial.started_at != self.last[0].started_at:
            return [trial]
        return [dataclasses.replace(r, method=trial.method, purpose=trial.purpose, attempt=trial.attempt)
                for r in self.last]
