"""capbench run --method: every method over backends x sizes, against the simulated device."""

import pytest
from capbench.errors import UsageError
from capbench.methods import dispatch
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import parse_rate, wire_pps

CAPACITY = {"slow": 400_000.0, "fast": 1_200_000.0}


def run(method: str, sizes=(64, 512), buffer_frames=0, **kw):
    trials, outcomes, devices = [], [], {}

    def make(backend, size):
        devices[backend, size] = SimulatedDevice(CAPACITY[backend], frame_len=size, backend=backend,
                                                 buffer_frames=buffer_frames)
        return devices[backend, size]

    def pause(seconds):  # the simulated devices' own pause: nothing sleeps
        for d in devices.values():
            d.pause(seconds)

    settings = dispatch.MethodSettings(method=method, trial_s=kw.pop("trial_s", 5.0), **kw)
    dispatch.run(settings, make, ["slow", "fast"], sizes, link_bps=1e9, rate=parse_rate("100%"), duration_s=2.0,
                 record=trials.append, record_outcome=outcomes.append, pause=pause)
    return trials, outcomes


def test_iperf_tags_every_trial():
    trials, outcomes = run("iperf")
    assert [(t.backend, t.frame_len) for t in trials] == [("slow", 64), ("slow", 512), ("fast", 64), ("fast", 512)]
    assert {(t.method, t.purpose) for t in trials} == {("iperf", "constant load")}
    assert outcomes == []


def test_rfc2544_answers_per_backend_and_size_from_its_trials():
    trials, outcomes = run("rfc2544")
    assert [(o["backend"], o["frame_len"]) for o in outcomes] == [("slow", 64), ("slow", 512), ("fast", 64),
                                                                 ("fast", 512)]
    for o in outcomes:
        wire = wire_pps(1e9, o["frame_len"])
        best = min(CAPACITY[o["backend"]], wire)
        assert best - 0.01 * wire <= o["throughput_pps"] <= best + 1  # within 1 % of the wire rate
        assert o["verified"] and o["short_trials"]  # 5 s trials: said so
    assert sum(o["trials"] for o in outcomes) == len(trials)
    assert {t.method for t in trials} == {"rfc2544"} and {"search", "verify"} <= {t.purpose for t in trials}


def test_mlr_sweep_and_back2back_write_their_answers():
    _, (o, *_) = run("mlr", sizes=(64,))
    assert {g["name"] for g in o["goals"]} == {"NDR", "PDR"}
    ndr = next(g for g in o["goals"] if g["name"] == "NDR")
    assert ndr["throughput_pps"] == pytest.approx(CAPACITY["slow"], rel=0.02)
    trials, (o, *_) = run("sweep", sizes=(64,), steps=4)
    assert len(o["points"]) == 4 and o["first_lossy_pps"] > CAPACITY["slow"]
    # A 1,000,000-frame buffer: at wire rate (1,488,095 pps) the slow path falls behind by
    # 1,088,095 pps, so a burst of 1,367,600 frames fills it; the search's precision is 1 %
    # of its longest burst (2 s at wire rate: 29,762 frames).
    _, (o, *_) = run("back2back", sizes=(64,), buffer_frames=1_000_000)
    assert o["method"] == "back2back" and 1_367_600 - 29_762 <= o["mean_frames"] <= 1_367_600


def test_searches_refuse_profiles():
    with pytest.raises(UsageError, match="profiles work with --method iperf"):
        run("rfc2544", sizes=(64, "imix:seed"))
    with pytest.raises(UsageError, match="unknown method"):
        run("fastest")


def test_latency_searches_then_measures_at_the_throughput():
    trials, outcomes = run("latency", sizes=(64,))
    slow = outcomes[0]
    assert slow["method"] == "latency" and slow["trials"] == sum(1 for t in trials if t.backend == "slow")
    assert trials[-1].purpose == "latency at throughput"
    assert {t.method for t in trials} == {"latency"}
    # The simulated device has no clock: its trials carry no latency, and the answer says what it got.
    assert slow["latency"] == {} and slow["throughput_pps"] > 0
