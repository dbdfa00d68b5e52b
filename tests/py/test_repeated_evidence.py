"""Issue 28, decisions from repeated evidence, on the simulated device with injected disturbances:
a trial the host disturbed is run again (at most MAX_ATTEMPTS runs, every run recorded, the method
decides on the last) before any method acts on it; an answer that rests on trials still disturbed
says so; MLR's defaults (exceed ratio 0.5, a duration sum, a warm-up trial) decide a load by the
majority of its trial time."""

import dataclasses

import pytest
from capbench.methods import dispatch, mlr, registry, rfc2544
from capbench.methods.measurer import MAX_ATTEMPTS, TrialRunner, superseded
from capbench.methods.mlr import LOWER, UPPER, classify
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import parse_rate, wire_pps

WIRE_64 = wire_pps(1e9, 64)


def stopped(*trials: int) -> frozenset[int]:
    return frozenset(trials)


def test_a_disturbed_trial_is_run_again_and_the_method_decides_on_the_clean_run():
    # Faster than the wire: only the host's stop in the first run loses frames.
    dev = SimulatedDevice(capacity_pps=5e6, disturbed_trials=stopped(0))
    seen = []
    r = rfc2544.search(dev, frame_len=64, trial_s=2, pause=dev.pause, on_trial=seen.append)
    assert [(t.result.attempt, t.result.disturbed, t.result.lost > 0) for t in seen] == [
        (1, True, True), (2, False, False), (1, False, False)]  # the run, its rerun, the verification
    assert r.throughput_pps == WIRE_64 and [t.result.attempt for t in r.trials] == [2, 1]
    assert superseded(seen[0].result) and not superseded(seen[1].result)
    a = rfc2544.Rfc2544Answer.of(r, "simulated")
    assert (a.disturbed, a.disturbed_trials, a.reruns, a.trials) == (False, 0, 1, 2) and a.disturbed_note() == ""


def test_at_most_max_attempts_runs_and_the_last_decides_when_every_run_was_disturbed():
    dev = SimulatedDevice(capacity_pps=5e6, disturbed_trials=frozenset(range(1000)))
    runner = TrialRunner(dev.measure, pause_s=1.0, pause=dev.pause)
    trial = runner.run(WIRE_64, 2.0, "search")
    assert MAX_ATTEMPTS == 3 and dev.trials == MAX_ATTEMPTS
    assert trial.result.attempt == MAX_ATTEMPTS and trial.result.disturbed and trial.result.lost > 0
    assert [t.result.attempt for t in runner.reruns] == [1, 2] and runner.trials == [trial]
    assert not superseded(trial.result)  # the run decided on is never left out
    assert runner.total_pause_s == 3.0  # the same pause before each run
    assert runner.total_trial_s == pytest.approx(6.0)  # every run's traffic time


def test_a_search_on_a_host_that_never_stops_interfering_ends_with_a_disturbed_answer_not_a_silent_0():
    """The issue's "throughput 0 pps (no rate passed)" with exit status 0 on a busy host: the answer
    now says that the trials it rests on were disturbed, with the interference measured."""
    dev = SimulatedDevice(capacity_pps=5e6, buffer_frames=0, disturbed_trials=frozenset(range(1000)), stop_ms=50)
    r = rfc2544.search(dev, frame_len=64, trial_s=1, pause=dev.pause, precision_pct=10)
    assert r.throughput_pps == 0
    a = rfc2544.Rfc2544Answer.of(r, "simulated")
    assert a.disturbed and a.disturbed_trials == a.trials and a.reruns == (MAX_ATTEMPTS - 1) * a.trials
    assert a.interference["longest_stop_us"] == 50_000 and "receive CPU stopped for 50 ms" in a.interference["reason"]
    said = a.said()
    assert said.startswith("throughput 0 pps") and "disturbed: the host interfered in" in said
    assert "longest stop 50.0 ms" in said
    # the line keeps it: searches.jsonl read back
    back = registry.answer_from_json(a.to_json())
    assert back.disturbed and back.interference == a.interference
    assert a.to_json()["schema"] == 3


def test_an_answer_line_of_version_2_reads_as_not_disturbed():
    dev = SimulatedDevice(capacity_pps=300_000)
    line = rfc2544.Rfc2544Answer.of(rfc2544.search(dev, frame_len=64, trial_s=1, pause=dev.pause), "x").to_json()
    old = {k: v for k, v in line.items() if k not in ("disturbed", "disturbed_trials", "reruns", "interference")}
    back = registry.answer_from_json(old | {"schema": 2})
    assert (back.disturbed, back.reruns, back.interference) == (False, 0, {})


def test_every_method_repeats_a_disturbed_trial_and_records_every_run():
    """iperf, the searches and the sweep all get the rule from the layer between them and the trial."""
    for method in ("iperf", "rfc2544", "mlr", "sweep"):
        trials, outcomes = [], []

        def make(backend, size):
            return SimulatedDevice(5e6, frame_len=size, backend=backend, disturbed_trials=stopped(0))

        settings = dispatch.MethodSettings(method=method, trial_s=1.0, steps=3, pause_s=0)
        dispatch.run(settings, make, ["b"], [1518], link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0,
                     record=trials.append, record_outcome=outcomes.append, pause=lambda s: None)
        assert [(t.attempt, t.disturbed) for t in trials[:2]] == [(1, True), (2, False)], method
        assert all(t.method == method and t.attempt == 1 for t in trials[2:]), method
        for o in outcomes:
            assert o["reruns"] == 1 and o["disturbed"] is False, method


# --- MLR's defaults (RFC 9971 / CSIT) ---------------------------------------------------


def test_mlr_defaults_follow_rfc9971_as_csit_runs_them():
    ndr, pdr = mlr.default_goals(2.0)
    assert (ndr.name, ndr.loss_ratio, pdr.name, pdr.loss_ratio) == ("NDR", 0.0, "PDR", 0.005)
    assert ndr.exceed_ratio == pdr.exceed_ratio == 0.5
    assert ndr.duration_sum_s == pdr.duration_sum_s == mlr.DURATION_SUM_TRIALS * 2.0
    assert registry.get("mlr").trial_s == mlr.FINAL_TRIAL_S


def test_exceed_ratio_half_a_load_is_decided_by_the_majority_of_its_time():
    c = mlr.Criterion(0.0, 0.5, 2.0, 6.0)
    assert classify([(2, 0.01)], c) != UPPER  # one lossy trial (a host's stop) decides nothing
    assert classify([(2, 0.01), (2, 0.0), (2, 0.0)], c) == LOWER
    assert classify([(2, 0.01), (2, 0.01)], c) == UPPER  # loss that repeats
    assert classify([(2, 0.0), (2, 0.0)], c) == LOWER


def test_mlr_warm_up_trial_at_the_maximum_load_is_read_by_no_goal():
    dev = SimulatedDevice(capacity_pps=400_000)
    seen = []
    r = mlr.search(dev, frame_len=64, pause=dev.pause, on_trial=seen.append)
    assert seen[0].purpose == mlr.WARMUP and seen[0].load_pps == WIRE_64
    assert r.warmups == (seen[0],) and seen[0] not in r.trials
    assert r.total_trial_s == pytest.approx(dev.total_trial_s)


def test_mlr_a_stop_the_witness_missed_does_not_decide_a_load():
    """A host stop that lost frames in one trial at the load that turns out to be NDR's lower
    bound: with the exceed ratio, the other trials there outvote it and NDR stays where it was."""
    clean = mlr.search(SimulatedDevice(capacity_pps=400_000), frame_len=64, pause=lambda s: None)
    ndr = clean.goal("NDR").lower_bound_pps
    first_there = next(t.index for t in clean.trials if t.load_pps == ndr)  # its index among the device's trials
    index = first_there + len(clean.warmups)

    class Missed(SimulatedDevice):
        """Loses frames to a stop in trial `index` but no witness saw it (not marked disturbed)."""
        def measure(self, duration_s, load):
            r = super().measure(duration_s, load)
            return dataclasses.replace(r, disturbed=False, disturbed_reason="")

    dev = Missed(capacity_pps=400_000, disturbed_trials=stopped(index))
    r = mlr.search(dev, frame_len=64, pause=dev.pause)
    lossy_there = [t for t in r.trials if t.load_pps == ndr and t.result.lost > 0]
    assert lossy_there, "the injected stop did not land at the NDR load"
    assert r.goal("NDR").lower_bound_pps == pytest.approx(ndr, rel=0.02)


def test_mlr_answer_keeps_its_duration_sum_and_judges_again_with_it():
    dev = SimulatedDevice(capacity_pps=400_000)
    r = mlr.search(dev, frame_len=64, pause=dev.pause)
    a = mlr.MlrAnswer.of(r, "sim")
    assert all(g.duration_sum_s == mlr.DURATION_SUM_TRIALS * mlr.FINAL_TRIAL_S for g in a.goals)
    tried = [t.result for t in (*r.warmups, *r.trials)]
    f = a.figures(tried, WIRE_64)
    assert f.values["mlr_NDR_pps"] == r.goal("NDR").throughput_pps
    assert f.info["mlr_NDR_bounded_by"] == "capture loss"


def test_the_sensors_of_one_trial_are_disturbed_and_run_again_together():
    """Several sensors on one stream (a tap, a topology): the host disturbing one sensor disturbs the
    trial, so every sensor's record of it is superseded together and the rerun's records all carry its
    attempt (the docs topology test counted 9 records of 4 trials of 2 sensors when only the judged one was)."""
    from capbench.trial.sensors import SensorsMeasurer, one_verdict, worst

    from records import make_result

    quiet = make_result(backend="pcap", sensor=1, sensors=2, received=7_000_000)  # received least: judged
    hit = make_result(backend="afp-v3", sensor=2, sensors=2, disturbed=True, disturbed_reason="CPU 1 stopped 9 ms")
    both = one_verdict([quiet, hit])
    assert [r.disturbed for r in both] == [True, True]
    assert both[0].disturbed_reason == "sensor 2: CPU 1 stopped 9 ms" and both[1] is hit
    assert worst(both).sensor == 1 and superseded(worst(both))
    assert one_verdict([quiet, quiet]) == [quiet, quiet]

    m = SensorsMeasurer.__new__(SensorsMeasurer)
    m.last = both
    rerun_of = dataclasses.replace(worst(both), method="rfc2544", purpose="search", attempt=2)
    assert [(r.sensor, r.attempt, r.method, r.purpose) for r in m.siblings(rerun_of)] == [
        (1, 2, "rfc2544", "search"), (2, 2, "rfc2544", "search")]
