import pytest
from capbench.errors import UsageError
from capbench.methods import rfc2544
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import wire_bps, wire_pps

WIRE_64 = wire_pps(1e9, 64)


def run(dev, **kw):
    kw.setdefault("pause", dev.pause)
    return rfc2544.search(dev, frame_len=dev.frame_len, link_bps=dev.link_bps, **kw)


@pytest.mark.parametrize("frame_len, capacity_pps", [(64, 632_150), (64, 377_837), (512, 200_000), (1518, 45_717)])
def test_finds_the_capacity_within_the_precision(frame_len, capacity_pps):
    dev = SimulatedDevice(capacity_pps=capacity_pps, frame_len=frame_len)
    r = run(dev)
    assert r.throughput_pps <= capacity_pps < r.lowest_lossy_pps
    assert r.lowest_lossy_pps - r.throughput_pps <= r.precision_pps == pytest.approx(wire_pps(1e9, frame_len) / 100)
    assert r.verified and r.verification_failures_pps == ()
    assert r.throughput_gbps == pytest.approx(wire_bps(r.throughput_pps, frame_len) / 1e9)


def test_starts_at_wire_speed_and_halves_the_step():
    dev = SimulatedDevice(capacity_pps=0.3 * WIRE_64)
    r = run(dev)
    loads = [t.load_pps / WIRE_64 for t in r.trials]
    assert loads[:4] == pytest.approx([1, 0.5, 0.25, 0.375])
    steps = [abs(b - a) for a, b in zip(loads, loads[1:-1])]
    assert all(s2 == pytest.approx(s1 / 2) for s1, s2 in zip(steps, steps[1:]))
    # the bracket halves from the wire rate until it is within 1 %: 8 trials, then one verification
    assert [t.purpose for t in r.trials] == ["search"] * 8 + ["verify"]
    assert r.trials[-1].load_pps == r.throughput_pps
    assert r.total_trial_s == 9 * 60 == dev.total_trial_s
    assert [t.index for t in r.trials] == list(range(9))


def test_pauses_before_every_trial_longer_before_the_verification():
    waits = []
    r = rfc2544.search(SimulatedDevice(capacity_pps=500_000), frame_len=64, pause=waits.append,
                       pause_s=2, verify_pause_s=10)
    assert waits == [2] * 8 + [10] and r.total_pause_s == 26


def test_device_faster_than_the_wire_gives_the_wire_rate():
    r = run(SimulatedDevice(capacity_pps=5e6))
    assert r.throughput_pps == WIRE_64 and r.throughput_gbps == pytest.approx(1.0)
    assert r.lowest_lossy_pps is None and r.verified
    assert len(r.trials) == 2 and "wire rate passed" in r.notes[0]


def test_device_that_loses_at_every_rate_reports_zero():
    r = run(SimulatedDevice(capacity_pps=1e6, background_loss_ratio=1e-7))
    assert r.throughput_pps == 0.0 and r.throughput_gbps == 0.0 and not r.verified
    assert 0 < r.lowest_lossy_pps <= r.precision_pps
    assert all(t.purpose == "search" and t.result.lost > 0 for t in r.trials)
    assert "no rate passed" in r.notes[-1]


def test_loss_tolerance_in_frames():
    dev = SimulatedDevice(capacity_pps=1e6, background_loss_ratio=1e-9)  # 1 frame lost per trial
    r = run(dev, loss_tolerance_frames=1)
    assert r.throughput_pps > 1e6 - r.precision_pps and r.verified


def test_short_trials_are_allowed_and_reported():
    r = run(SimulatedDevice(capacity_pps=500_000), trial_s=5)
    assert r.short_trials and r.trial_s == 5 and "shorter than RFC 2544" in r.notes[0]
    assert {t.requested_duration_s for t in r.trials} == {5}
    assert not run(SimulatedDevice(capacity_pps=500_000)).short_trials


def test_queue_is_judged_at_the_trial_length():
    # a 1,000,000-frame queue lets 60 s trials pass 16,667 pps above the drain rate
    r = run(SimulatedDevice(capacity_pps=500_000, buffer_frames=1_000_000))
    assert r.throughput_pps <= 500_000 + 1_000_000 / 60 < r.lowest_lossy_pps


def test_noisy_device_stays_within_the_noise():
    for seed in range(5):
        dev = SimulatedDevice(capacity_pps=700_000, noise_pct=0.5, seed=seed)
        r = run(dev)
        assert 700_000 * 0.98 - r.precision_pps <= r.throughput_pps <= 700_000 * 1.02


def test_verification_catches_a_saturation_distorted_pass():
    # After an overload the next trial looks 10 % better for 5 s: every trial after a failure is
    # distorted (2 s pauses), the verification after a 10 s pause is not.
    dev = SimulatedDevice(capacity_pps=600_000, saturation_factor=1.10, saturation_recovery_s=5)
    r = run(dev)
    assert r.verification_failures_pps and all(f > 600_000 for f in r.verification_failures_pps)
    assert any("distorted" in n for n in r.notes)
    assert r.verified and r.throughput_pps <= 600_000 < r.lowest_lossy_pps
    assert r.lowest_lossy_pps - r.throughput_pps <= r.precision_pps
    print(f"\nsaturation: {len(r.verification_failures_pps)} verification(s) failed at "
          f"{', '.join(f'{f:,.0f}' for f in r.verification_failures_pps)} pps; "
          f"verified throughput {r.throughput_pps:,.0f} pps (capacity 600,000)")


def test_without_verification_pause_the_distortion_would_stand():
    dev = SimulatedDevice(capacity_pps=600_000, saturation_factor=1.10, saturation_recovery_s=5)
    r = run(dev, verify_pause_s=2)  # verification as distorted as the search: the guard is blind
    assert r.throughput_pps > 600_000


def test_pause_longer_than_the_recovery_avoids_a_too_low_result():
    slow = dict(capacity_pps=600_000, saturation_factor=0.8, saturation_recovery_s=5)
    distorted = run(SimulatedDevice(**slow), pause_s=2)
    clean = run(SimulatedDevice(**slow), pause_s=5)
    assert distorted.throughput_pps < 600_000 - distorted.precision_pps
    assert clean.throughput_pps <= 600_000 < clean.lowest_lossy_pps


def test_a_trial_short_of_its_offered_load_fails():
    class SlowGenerator(SimulatedDevice):
        def measure(self, duration_s, load):
            r = super().measure(duration_s, min(load, 1e6))
            if load > 1e6:  # the generator could send only 1 Mpps: nothing lost, but the load was not offered
                import dataclasses
                r = dataclasses.replace(r, offered_pps=load, invalid_offered_load=True)
            return r

    r = run(SlowGenerator(capacity_pps=5e6))
    assert r.throughput_pps <= 1e6 < r.upper_bound_pps and r.verified
    # nothing was lost anywhere: the generator, not the capture, bounded the search
    assert r.lowest_lossy_pps is None and r.bounded_by == "generator"
    assert (f"the generator could not hold {r.upper_bound_pps:,.0f} pps (it sent 1,000,000 pps): the throughput "
            f"is a lower bound of the capture's, set by the generator") in r.notes


@pytest.mark.parametrize("kw, match", [
    (dict(precision_pct=0), "--precision 0 % must be above 0 %"),
    (dict(precision_pct=-1), "--precision"),
    (dict(precision_pct=100), "below 100 %"),
    (dict(loss_tolerance_frames=-1), "--loss-tolerance -1 frames must be 0 or more"),
    (dict(trial_s=0.5), "--trial 0.5 s is too short: use 1 s or more"),
    (dict(trial_s=0), "--trial 0 s must be above 0 s"),
    (dict(pause_s=-1), "pause"),
])
def test_bad_parameters(kw, match):
    dev = SimulatedDevice(capacity_pps=1e6)
    with pytest.raises(UsageError, match=match):
        run(dev, **kw)
    assert dev.trials == 0


def test_a_verification_the_generator_could_not_send_is_named_as_such():
    import dataclasses


    device = SimulatedDevice(500_000.0)

    class ShortVerification:
        """The device, except that the generator falls short in every trial after the 7th."""

        calls = 0

        def measure(self, duration_s, load):
            self.calls += 1
            r = device.measure(duration_s, load)
            return dataclasses.replace(r, invalid_offered_load=True) if self.calls > 7 else r

    r = rfc2544.search(ShortVerification(), frame_len=64, trial_s=1.0, pause=device.pause)
    assert any("the generator could not hold" in n and "lost nothing (a lower bound, not a pass)" in n for n in r.notes)
    assert not any("saturation" in n for n in r.notes)
