"""The seed's "iperf-like" method: constant load at the offered rate, throughput =
received packets / sending time; one trial per backend and frame length."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

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
