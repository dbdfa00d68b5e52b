import pytest
from capbench.errors import UsageError
from capbench.methods import back2back, sweep
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import wire_pps

WIRE_64 = wire_pps(1e9, 64)


def test_sweep_26_steps_from_one_step_to_the_wire_rate():
    dev = SimulatedDevice(capacity_pps=WIRE_64 * 0.6)
    r = sweep.run(dev, frame_len=64, pause=dev.pause)
    loads = [p.load_pps for p in r.points]
    assert len(loads) == 26 and loads[0] == pytest.approx(WIRE_64 / 26) and loads[-1] == WIRE_64
    assert all(b > a for a, b in zip(loads, loads[1:]))
    assert [p.step for p in r.points] == list(range(1, 27))
    # 15/26 of the wire rate is below 60 %, 16/26 above
    assert r.lossless_up_to_pps == pytest.approx(WIRE_64 * 15 / 26)
    assert r.first_lossy_pps == pytest.approx(WIRE_64 * 16 / 26)
    last = r.points[-1]
    assert last.capture_ratio == pytest.approx(0.6, abs=1e-6) and last.rx_pps == pytest.approx(WIRE_64 * 0.6, rel=1e-6)
    assert last.sent == last.received + last.lost and last.app_cpu_pct == 0.0
    assert r.total_trial_s == 26 * 10 == dev.total_trial_s and r.total_pause_s == 26 * 2
    assert [t.result for t in r.trials] == [p.trial.result for p in r.points]


def test_sweep_low_rate_and_steps():
    dev = SimulatedDevice(capacity_pps=5e6, frame_len=1518)
    r = sweep.run(dev, frame_len=1518, steps=3, low_pps=1000, trial_s=1, pause_s=0)
    assert [p.load_pps for p in r.points] == pytest.approx([1000, (1000 + wire_pps(1e9, 1518)) / 2,
                                                            wire_pps(1e9, 1518)])
    assert r.first_lossy_pps is None and r.lossless_up_to_pps == wire_pps(1e9, 1518)


def test_sweep_of_a_path_that_loses_everywhere():
    r = sweep.run(SimulatedDevice(capacity_pps=1e6, background_loss_ratio=1e-6), frame_len=64, steps=4,
                  pause=lambda s: None)
    assert r.lossless_up_to_pps is None and r.first_lossy_pps == r.points[0].load_pps


def test_sweep_records_each_trial_as_it_ends():
    seen = []
    dev = SimulatedDevice(capacity_pps=1e6)
    sweep.run(dev, frame_len=64, steps=5, pause=dev.pause, on_trial=lambda t: seen.append((t.index, dev.trials)))
    assert seen == [(i, i + 1) for i in range(5)]


@pytest.mark.parametrize("kw, match", [
    (dict(steps=1), "--steps 1: a sweep needs at least 2 steps"),
    (dict(steps=0), "--steps 0: a sweep needs at least 2 steps"),
    (dict(low_pps=2e6), "must start above 0 and below the wire rate"),
    (dict(low_pps=0), "must start above 0"),
    (dict(trial_s=0), "--trial 0 s must be above 0 s"),
])
def test_sweep_bad_parameters(kw, match):
    dev = SimulatedDevice(capacity_pps=1e6)
    with pytest.raises(UsageError, match=match):
        sweep.run(dev, frame_len=64, pause=dev.pause, **kw)
    assert dev.trials == 0


def test_back_to_back_finds_the_longest_burst_within_the_precision():
    # drains half the wire rate behind a 10,000-frame queue: bursts of up to 20,000 frames pass
    dev = SimulatedDevice(capacity_pps=WIRE_64 / 2, buffer_frames=10_000)
    r = back2back.search(dev.measure_burst, frame_len=64, pause=dev.pause)
    assert r.max_frames == round(2 * WIRE_64) and r.precision_frames == r.max_frames // 100
    (longest,) = r.longest_frames
    assert 20_000 - r.precision_frames <= longest <= 20_001
    assert r.mean_frames == longest == r.min_frames and r.mean_burst_s == pytest.approx(longest / WIRE_64)
    assert not r.unlimited
    assert r.trials[0].result.sent == r.max_frames
    assert all(t.load_pps == WIRE_64 for t in r.trials)
    assert r.total_trial_s == pytest.approx(sum(t.result.sent for t in r.trials) / WIRE_64)


def test_back_to_back_to_one_frame_and_repeated():
    dev = SimulatedDevice(capacity_pps=WIRE_64 / 2, buffer_frames=10_000, noise_pct=2, seed=1)
    r = back2back.search(dev.measure_burst, frame_len=64, max_frames=100_000, precision_frames=1, repeats=3,
                         pause=dev.pause)
    assert len(r.longest_frames) == 3 and len({t.purpose for t in r.trials}) == 3
    assert all(18_000 < n < 22_500 for n in r.longest_frames)
    assert r.mean_frames == pytest.approx(sum(r.longest_frames) / 3) and r.min_frames == min(r.longest_frames)


def test_back_to_back_edges():
    fast = SimulatedDevice(capacity_pps=5e6)
    r = back2back.search(fast.measure_burst, frame_len=64, pause=fast.pause)
    assert r.unlimited and r.longest_frames == (r.max_frames,) and len(r.trials) == 1
    lossy = SimulatedDevice(capacity_pps=1e6, background_loss_ratio=1e-7)
    r = back2back.search(lossy.measure_burst, frame_len=64, max_frames=1000, precision_frames=1, pause=lossy.pause)
    assert r.longest_frames == (0,) and r.mean_frames == 0 and "shortest burst tried (1 frames)" in r.notes[0]


@pytest.mark.parametrize("kw, match", [
    (dict(max_frames=0), "longest burst 0 frames"),
    (dict(precision_frames=0), "burst precision 0 frames"),
    (dict(loss_tolerance_frames=-3), "--loss-tolerance -3 frames must be 0 or more"),
    (dict(repeats=0), "--repeat 0 must be 1 or more"),
])
def test_back_to_back_bad_parameters(kw, match):
    dev = SimulatedDevice(capacity_pps=1e6)
    with pytest.raises(UsageError, match=match):
        back2back.search(dev.measure_burst, frame_len=64, pause=dev.pause, **kw)
    assert dev.trials == 0
