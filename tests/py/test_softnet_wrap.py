"""softnet_stat's 32-bit counters followed through wraps over a long trial (trial.SoftnetDrops), on
files in the kernel's own format (one line per CPU, `%08x` columns, the CPU number 13th)."""

from __future__ import annotations

import random

import pytest
from capbench.testbed import cpu
from capbench.trial.measure import SOFTNET_SAMPLE_S, SoftnetDrops, sleep_sampling

WRAP = 1 << 32


def softnet_text(drops: dict[int, int]) -> str:
    """/proc/net/softnet_stat as the kernel prints it: its unsigned int fields with %08x, so each
    counter shows modulo 2**32."""
    lines = []
    for c, d in sorted(drops.items()):
        cols = [0x1749D4B, d % WRAP, 9] + [0] * 9 + [c, 0, 0]
        lines.append(" ".join(f"{v:08x}" for v in cols))
    return "\n".join(lines) + "\n"


def test_a_trial_that_wraps_the_counter_several_times_counts_every_drop(tmp_path):
    """An hour at a drop rate near 1.5 M/s (1 GbE, 64 B frames, all dropped): 5.4 billion drops,
    the counter wraps; read every second it is followed exactly."""
    path = tmp_path / "softnet_stat"
    rng = random.Random(15)
    true = {0: 7, 1: WRAP - 123_456}  # CPU 1 starts just below a wrap
    path.write_text(softnet_text(true))
    drops = SoftnetDrops({1}, str(path))
    first = cpu.read_softnet_drops(str(path))
    start = true[1]
    for _ in range(3600):
        true[0] += rng.randrange(0, 10)
        true[1] += rng.randrange(1_400_000, 1_600_000)
        path.write_text(softnet_text(true))
        drops.sample()
    assert true[1] - start > 1 * WRAP  # the counter went round
    assert drops.total == true[1] - start
    # Read at the start and the end only, the wraps in between would be lost.
    assert cpu.counter_delta(first, cpu.read_softnet_drops(str(path)), {1}) != true[1] - start


def test_every_cpu_and_a_jump_just_short_of_a_wrap(tmp_path):
    path = tmp_path / "softnet_stat"
    true = {0: WRAP - 1, 1: 0}
    path.write_text(softnet_text(true))
    drops = SoftnetDrops(None, str(path))
    for step in (1, WRAP - 1, 5, WRAP - 2):  # each below 2**32: what one second can hold at any rate
        true[0] += step
        true[1] += step // 2
        path.write_text(softnet_text(true))
        drops.sample()
    assert drops.total == (true[0] - (WRAP - 1)) + true[1]


def test_the_sampling_interval_is_well_inside_the_fastest_wrap():
    # 14.88 Mpps (10 GbE at 64 B, above anything this VM sends) wraps a counter in 289 s.
    assert SOFTNET_SAMPLE_S * 14_880_952 < WRAP / 100


def test_sleep_sampling_samples_every_interval():
    calls = []
    sleep_sampling(0.35, lambda: calls.append(1), every_s=0.1)
    assert len(calls) == pytest.approx(3, abs=1)
