import dataclasses

import pytest
from capbench.methods.measurer import TrialRunner
from capbench.methods.verdict import loss_ratio
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import parse_rate, wire_pps
from records import make_result


def counts_add_up(r):
    assert r.sent == r.received + r.lost
    (socket,) = r.layers
    assert socket.layer == "socket" and r.lost == r.link_drops + r.backlog_drops + socket.packets + r.unexplained
    assert r.unexplained == 0 and r.link_drops == 0 and r.delivered == r.sent
    assert all(isinstance(v, int) for v in (r.sent, r.received, r.lost, r.backlog_drops, socket.packets))


def test_below_capacity_loses_nothing_above_it_loses_the_excess():
    dev = SimulatedDevice(capacity_pps=500_000, backlog_drop_share=0.25)
    ok = dev.measure(10, 400_000)
    assert (ok.sent, ok.received, ok.lost) == (4_000_000, 4_000_000, 0)
    over = dev.measure(10, 1_000_000)
    assert (over.sent, over.received, over.lost) == (10_000_000, 5_000_000, 5_000_000)
    assert over.backlog_drops == 1_250_000 and over.layers[0].packets == 3_750_000
    assert over.rx_pps == 500_000 and over.offered_pps == 1_000_000
    for r in (ok, over):
        counts_add_up(r)
    assert dev.total_trial_s == 20 and dev.trials == 2


def test_a_queue_hides_an_overload_in_short_trials_only():
    dev = SimulatedDevice(capacity_pps=500_000, buffer_frames=100_000)
    assert dev.measure(1, 550_000).lost == 0  # 50,000 frames too many fit in the queue
    assert dev.measure(60, 550_000).lost == 60 * 50_000 - 100_000


def test_noise_is_seeded():
    a = SimulatedDevice(capacity_pps=1e6, noise_pct=5, seed=7)
    b = SimulatedDevice(capacity_pps=1e6, noise_pct=5, seed=7)
    ra = [a.measure(1, 1e6).received for _ in range(5)]
    assert ra == [b.measure(1, 1e6).received for _ in range(5)]
    assert len(set(ra)) > 1


def test_background_loss_loses_at_every_rate():
    dev = SimulatedDevice(capacity_pps=1e6, background_loss_ratio=1e-6)
    for load in (1_000, 100_000):
        r = dev.measure(1, load)
        assert r.lost >= 1
        counts_add_up(r)


def test_saturation_distorts_the_next_trial_until_a_pause_lets_it_recover():
    dev = SimulatedDevice(capacity_pps=1e6, saturation_factor=0.5, saturation_recovery_s=5)
    assert dev.measure(1, 900_000).lost == 0
    assert dev.measure(1, 1_400_000).lost > 0  # overloads the receiver
    hurt = dev.measure(1, 900_000)
    assert hurt.lost == 900_000 - 500_000 and hurt.raw["simulated"]["saturated"]
    dev.pause(5)  # the distortion outlives the trial above: it started within 5 s of the overload
    assert dev.measure(1, 900_000).lost == 0
    assert dev.total_pause_s == 5 and dev.total_trial_s == 4 and dev.clock_s == 9


def test_loads_above_the_wire_rate_are_refused():
    dev = SimulatedDevice(capacity_pps=1e6, frame_len=1518)
    assert dev.measure(1, parse_rate("100%")).sent == round(wire_pps(1e9, 1518))
    with pytest.raises(ValueError, match="wire rate"):
        dev.measure(1, wire_pps(1e9, 1518) * 1.01)


def test_bursts():
    dev = SimulatedDevice(capacity_pps=wire_pps(1e9, 64) / 2, buffer_frames=10_000)
    assert dev.measure_burst(20_000).lost == 0
    r = dev.measure_burst(40_000)
    assert r.lost == 40_000 - (20_000 + 10_000) and r.offered_pps == pytest.approx(wire_pps(1e9, 64))


def test_loss_ratio_is_lost_over_sent_with_nothing_folded_in():
    assert loss_ratio(make_result(sent=1000, received=990)) == pytest.approx(0.01)
    # A generator that sent half its target lost nothing: the shortfall is not loss (issue 14).
    short = make_result(sent=1000, received=1000, offered_pps=2000.0, achieved_pps=1000.0,
                        invalid_offered_load=True)
    assert loss_ratio(short) == 0.0
    assert loss_ratio(dataclasses.replace(short, received=730, lost=270)) == pytest.approx(0.27)
    assert loss_ratio(dataclasses.replace(make_result(), sent=0, received=0, lost=0)) == 0.0


def test_a_generator_slower_than_the_load_sends_what_it_can_and_is_marked_short():
    dev = SimulatedDevice(capacity_pps=5e6, generator_pps=1_000_000)
    held = dev.measure(1, 900_000)
    assert held.sent == 900_000 and not held.invalid_offered_load and held.lost == 0
    short = dev.measure(2, 1_200_000)
    assert short.sent == 2_000_000 and short.invalid_offered_load and short.achieved_pps == 1_000_000
    assert short.offered_pps == 1_200_000 and short.lost == 0
    # the receiver meets what was sent: short and lossy in one trial
    slow = SimulatedDevice(capacity_pps=800_000, generator_pps=1_000_000)
    both = slow.measure(1, 1_200_000)
    assert both.invalid_offered_load and both.sent == 1_000_000 and both.lost == 200_000
    burst = SimulatedDevice(capacity_pps=5e6, generator_pps=wire_pps(1e9, 64) / 2).measure_burst(20_000)
    assert burst.sent == 10_000 and burst.invalid_offered_load


def test_runner_pauses_before_each_trial_and_sums_the_time():
    dev = SimulatedDevice(capacity_pps=1e6)
    waits = []
    ended = []
    runner = TrialRunner(dev.measure, pause_s=2, pause=waits.append, on_trial=lambda t: ended.append(t.purpose))
    runner.run(1e5, 3, "a")
    runner.run(2e5, 4, "b", pause_s=7)
    assert waits == [2, 7] and runner.total_pause_s == 9 and runner.total_trial_s == 7 and ended == ["a", "b"]
    assert [(t.index, t.purpose, t.load_pps) for t in runner.trials] == [(0, "a", 1e5), (1, "b", 2e5)]
