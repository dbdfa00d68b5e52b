"""The live view's counts of one instant: Watch pairs the generator's and each counter's interval
lines of the same wall-clock tick ("at"), not each program's latest line."""

from types import SimpleNamespace

from capbench.rates import parse_rate
from capbench.trial.trial_run import Watch


def lines(*ticks: tuple[float, dict]) -> SimpleNamespace:
    """A child whose messages are a ready line and interval lines at the given ticks."""
    return SimpleNamespace(messages=[{"type": "ready"}, *({"type": "interval", "at": at, **m} for at, m in ticks)])


def watch(gen, *caps) -> Watch:
    side = SimpleNamespace(m=SimpleNamespace(kernel_rx_cpu=None), caps=list(caps))
    return Watch(side.m, [side], gen, parse_rate("1Mpps"), 5.0)


def test_counts_of_the_latest_tick_all_printed():
    # The generator is a tick ahead of the counters: its latest line is not the one to compare.
    gen = lines((100.0, {"sent": 1_000_000, "pps": 1e6}), (101.0, {"sent": 2_000_000, "pps": 1e6}),
                (102.0, {"sent": 3_000_000, "pps": 1.1e6}))
    a = lines((100.0, {"received": 999_000}), (101.0, {"received": 1_998_000}))
    b = lines((101.0, {"received": 1_990_000}), (100.0, {"received": 990_000}))
    p = watch(gen, a, b).progress()
    assert (p.sent, p.sent_pps, p.captured) == (2_000_000, 1e6, 1_990_000)


def test_a_counter_ahead_of_the_generator():
    gen = lines((100.0, {"sent": 1_000_000, "pps": 1e6}))
    cap = lines((100.0, {"received": 900_000}), (101.0, {"received": 1_900_000}))
    p = watch(gen, cap).progress()
    assert (p.sent, p.captured) == (1_000_000, 900_000)


def test_nothing_before_a_common_tick():
    # Started at different times, the first lines of each are of different ticks.
    gen = lines((100.5, {"sent": 500_000, "pps": 1e6}))
    cap = lines((101.0, {"received": 900_000}))
    p = watch(gen, cap).progress()
    assert (p.sent, p.sent_pps, p.captured) == (None, None, None)
    assert watch(lines(), lines()).progress().sent is None


def test_without_counters_the_generators_latest():
    gen = lines((100.0, {"sent": 1, "pps": 1.0}), (101.0, {"sent": 2, "pps": 1.0}))
    side = SimpleNamespace(m=SimpleNamespace(kernel_rx_cpu=None))  # a side without capbench-cap
    p = Watch(side.m, [side], gen, parse_rate("1Mpps"), 5.0).progress()
    assert (p.sent, p.captured) == (2, None)
