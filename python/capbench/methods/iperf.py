"""The seed's "iperf-like" method: constant load at the offered rate, throughput =
received packets / sending time; one trial per backend and frame length (or size profile).
It has no answer: its trial is its result. A trial the host disturbed is run again first
(methods/measurer.py: measure_decided), every run recorded."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from capbench.methods.measurer import measure_decided
from capbench.methods.method import TRIAL_OVERHEAD_S, Context, Estimate, Method, MethodSettings
from capbench.rates import Rate
from capbench.trial.measure import Measurer, TrialResult


def run(
    make_measurer: Callable[[str, int | str], Measurer],
    backends: Iterable[str],
    sizes: Iterable[int | str],
    *,
    rate: Rate,
    duration_s: float,
) -> Iterator[TrialResult]:
    """Yield one trial per backend x frame length (backend-major order), each at `rate`.

    `make_measurer(backend, size)` builds the Measurer of one combination; a size is a
    frame length or a profile (imix:seed, ...).
    A generator, so the caller records each trial as soon as it ends.
    """
    sizes = tuple(sizes)
    for backend in backends:
        for size in sizes:
            yield make_measurer(backend, size).measure(duration_s, rate)


class Iperf(Method):
    name = "iperf"
    help = "constant load at --rate for --duration (seed 000's method); sizes may be profiles"
    takes_profiles = True
    sets_own_load = False
    swept = True  # at several --rate values

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, *, rate: Any,
            duration_s: float) -> None:
        def record(result: TrialResult) -> None:
            context.record(dataclasses.replace(result, method=self.name, purpose="constant load"))

        wait = context.pause or time.sleep
        record(measure_decided(lambda: measurer.measure(duration_s, rate),
                               pause=lambda: wait(context.settings.pause_s), on_rerun=record))
        return None

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        return Estimate(1, duration_s + overhead_s)
