"""`capbench compare` when the conditions of the two runs differed (issue 28): the rate the generator
sent, the host's interference, other test beds. A capture change is judged at the rate actually sent;
a measurement or answer that rests on trials the host disturbed is never a regression."""

import json

from capbench.methods import dispatch
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import parse_rate
from capbench.report import compare, compare_out
from capbench.report.load import load_run
from records import make_result
from report_files import write_run

SENT = 1_000_000


def test_a_generator_that_sent_half_is_not_a_capture_change_and_the_conditions_say_so(tmp_path):
    a = write_run(tmp_path / "a", [make_result(backend="afp-v3", sent=SENT)])
    # B: the generator sent half as much (other test beds were up); the capture lost 10 of what it was sent
    b = write_run(tmp_path / "b", [make_result(backend="afp-v3", sent=SENT // 2, received=SENT // 2 - 10,
                                               socket_drops=10, invalid_offered_load=True,
                                               other_testbeds=("capbench-1a2b3c",))])
    cmp = compare.compare(load_run(a), load_run(b), threshold_pct=10)
    rx = next(c for c in cmp.changes if c.metric.name == "rx_pps")
    assert rx.rel_pct < -49.0 and not rx.judged and rx.apart
    # the regression is the capture's loss at the rate sent, not the generator's shortfall
    assert [c.metric.name for c in cmp.regressions(10)] == ["loss_pct"]
    assert compare_out.verdict(rx) == "not judged: the generator sent other rates"
    (cond,) = cmp.conditions
    words = " ".join(cond.differed())
    assert "the generator sent 200,000 pps in A, 100,000 pps in B" in words
    loss = next(c for c in cmp.changes if c.metric.name == "loss_pct")
    assert loss.judged and loss.significant  # the capture is judged by its loss at the rate it was sent
    assert "other capbench test beds were up: capbench-1a2b3c in B" in words
    assert "The conditions differed:" in " ".join(compare_out.headline(cmp))
    doc = compare_out.to_json(cmp, 10)
    assert doc["conditions"][0]["sent_pps"] == {"a": 200_000.0, "b": 100_000.0}
    assert [r["figure"] for r in doc["regressions"]] == ["loss_pct"]


def test_a_loss_in_a_disturbed_trial_is_shown_and_judged_but_never_a_regression(tmp_path):
    a = write_run(tmp_path / "a", [make_result(backend="afp-v3", sent=SENT)])
    b = write_run(tmp_path / "b", [make_result(backend="afp-v3", sent=SENT, received=SENT - 5_000, socket_drops=5_000,
                                               disturbed=True, disturbed_reason="receive CPU stopped for 40 ms",
                                               attempt=3)])
    cmp = compare.compare(load_run(a), load_run(b), threshold_pct=10)
    loss = next(c for c in cmp.changes if c.metric.name == "loss_pct")
    assert loss.significant and loss.worse and loss.disturbed == "B"
    assert cmp.regressions(0) == []
    assert compare_out.verdict(loss) == "worse, host disturbed in B: not a regression"
    assert "the host disturbed 1 of 1 in B" in " ".join(cmp.conditions[0].differed())
    # the same loss without the host's interference is a regression
    c = write_run(tmp_path / "c", [make_result(backend="afp-v3", sent=SENT, received=SENT - 5_000, socket_drops=5_000)])
    assert compare.compare(load_run(a), load_run(c), threshold_pct=10).regressions(10)


def search_run(path, **device):
    """A results folder of one RFC 2544 search on the simulated device, as `capbench run` writes it."""
    trials, outcomes = [], []
    dispatch.run(dispatch.MethodSettings(method="rfc2544", trial_s=1.0, pause_s=0, precision_pct=5),
                 lambda backend, size: SimulatedDevice(backend=backend, frame_len=size, **device), ["afp-v3"], [64],
                 link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0, record=trials.append,
                 record_outcome=outcomes.append, pause=lambda s: None)
    write_run(path, trials)
    (path / "searches.jsonl").write_text("".join(json.dumps(o) + "\n" for o in outcomes))
    return path, outcomes


def test_a_disturbed_answer_is_not_a_regression(tmp_path):
    a, _ = search_run(tmp_path / "a", capacity_pps=600_000)
    # B: every run of every trial disturbed (a host that never stops interfering): the search goes low
    b, outcomes = search_run(tmp_path / "b", capacity_pps=600_000, disturbed_trials=frozenset(range(10_000)),
                             stop_ms=30)
    assert outcomes[0]["disturbed"] and outcomes[0]["interference"]["longest_stop_us"] == 30_000
    cmp = compare.compare(load_run(a), load_run(b), threshold_pct=5)
    answer = next(c for c in cmp.changes if c.answer)
    assert answer.worse and answer.significant and answer.disturbed == "B"
    assert cmp.regressions(1) == []
    text = compare_out.terminal_text(cmp)
    assert "host disturbed in B: not a regression" in text and "The conditions differed" in text
