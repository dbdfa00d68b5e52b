"""Issue 14, items 3 and 7: one rule for what is loss, and never "no result" without a way forward.

Every search is run on the simulated device with a generator slower than the wire rate
(`generator_pps`), in the three cases the rule tells apart: a short generator *and*
capture loss in one trial (lossy), a short generator with nothing lost (a lower bound),
and a generator that held its load while the capture lost (lossy).
"""

import dataclasses

import pytest
from capbench.campaign import runner
from capbench.methods import back2back, dispatch, mlr, rfc2544, sweep
from capbench.methods.simulated import SimulatedDevice
from mlr_strict import strict_search
from capbench.methods.verdict import (LOSSLESS, LOSSY, LOWER_BOUND, loss_ratio, measured, verdict,
                                      way_forward)
from capbench.rates import parse_rate, wire_pps
from capbench.report import answer_tables, answers, summary
from capbench.report.console import print_results, trial_line
from capbench.report.load import Trial
from rich.console import Console

WIRE_64 = wire_pps(1e9, 64)
GEN_PPS = 1_200_000.0  # the generator's top speed in these tests: short of the wire rate at 64 B


def device(capacity_pps, generator_pps=GEN_PPS, **kw):
    return SimulatedDevice(capacity_pps, generator_pps=generator_pps, **kw)


# --- the rule ---------------------------------------------------------------------------


def test_the_three_verdicts():
    dev = device(1_000_000)
    both = dev.measure(1, WIRE_64)  # the generator sent 1.2 Mpps, the capture took 1 Mpps
    assert both.invalid_offered_load and both.lost == 200_000 and verdict(both) == LOSSY
    assert loss_ratio(both) == pytest.approx(200_000 / 1_200_000)  # of what was sent, shortfall not folded in
    short = device(5e6).measure(1, WIRE_64)
    assert short.invalid_offered_load and short.lost == 0 and verdict(short) == LOWER_BOUND
    assert not measured(short) and loss_ratio(short) == 0.0
    held = device(1_000_000).measure(1, 1_100_000)
    assert not held.invalid_offered_load and held.lost == 100_000 and verdict(held) == LOSSY
    clean = device(5e6).measure(1, 1_000_000)
    assert verdict(clean) == LOSSLESS and measured(clean)
    # a tolerance, in frames or as a goal's loss ratio: within it, a short generator is a lower bound
    assert verdict(both, 200_000) == LOWER_BOUND and verdict(held, 100_000) == LOSSLESS
    assert verdict(both, max_loss_ratio=0.2) == LOWER_BOUND and verdict(both, max_loss_ratio=0.1) == LOSSY
    nothing = dataclasses.replace(clean, sent=0, received=0, lost=0)
    assert verdict(nothing) == LOWER_BOUND and loss_ratio(nothing) == 0.0


# --- RFC 2544 -----------------------------------------------------------------------------


def test_rfc2544_short_generator_and_capture_loss_is_capture_loss():
    """Before: the wire-rate trial (generator short, 17 % lost) was never lossy."""
    r = rfc2544.search(device(1_000_000), frame_len=64, pause=lambda s: None, trial_s=5)
    assert verdict(r.trials[0].result) == LOSSY and r.trials[0].result.invalid_offered_load
    assert r.bounded_by == "capture loss" and r.throughput_pps <= 1_000_000 < r.upper_bound_pps
    assert r.lowest_lossy_pps == r.upper_bound_pps and r.verified
    assert not any("generator" in n for n in r.notes)


def test_rfc2544_short_generator_without_loss_is_a_lower_bound():
    r = rfc2544.search(device(5e6), frame_len=64, pause=lambda s: None, trial_s=5)
    assert r.bounded_by == "generator" and r.lowest_lossy_pps is None
    assert r.throughput_pps <= GEN_PPS < r.upper_bound_pps
    # the numbers agree: the rate asked and the rate sent differ
    assert (f"the generator could not hold {r.upper_bound_pps:,.0f} pps (it sent 1,200,000 pps): the throughput is a "
            f"lower bound of the capture's, set by the generator") in r.notes


def test_rfc2544_held_generator_with_loss():
    r = rfc2544.search(device(1_000_000, generator_pps=None), frame_len=64, pause=lambda s: None, trial_s=5)
    assert r.bounded_by == "capture loss" and r.throughput_pps <= 1_000_000 < r.upper_bound_pps
    assert not any(t.result.invalid_offered_load for t in r.trials)


def test_rfc2544_notes_the_capture_loss_of_a_short_generator_at_the_upper_end():
    dev = device(1_000_000)
    tried = [(WIRE_64, dev.measure(5, WIRE_64))]
    [note] = rfc2544.bound_notes("capture loss", WIRE_64, 900_000.0, tried, 0)
    assert note == ("at 1,488,095 pps the capture lost 1,000,000 of 6,000,000 frames (16.67 %) sent at 1,200,000 pps "
                    "(the generator could not hold 1,488,095 pps): capture loss at the rate the generator sent")


# --- MLR ----------------------------------------------------------------------------------


def test_mlr_short_generator_and_capture_loss_is_capture_loss():
    r = strict_search(device(1_000_000), frame_len=64, pause=lambda s: None)
    assert any(t.result.invalid_offered_load and t.result.lost > 0 for t in r.trials)
    for g in r.goals:
        assert g.bounded_by == "capture loss" and g.lower_bound_pps <= 1_000_000 <= g.upper_bound_pps and g.regular
        assert "generator" not in g.note


def test_mlr_an_upper_bound_the_generator_could_not_hold_but_the_capture_lost_at():
    """Capture limit 1.19 Mpps, generator 1.2 Mpps: the upper bound is a load the generator could not
    hold, where the capture lost 0.83 % of what was sent. NDR and PDR are bounded by capture loss and
    say at what rate it was sent; before, both read "generator-bound"."""
    r = strict_search(device(1_190_000), frame_len=64, pause=lambda s: None)
    for g in r.goals:
        assert (g.lower_bound_pps, round(g.upper_bound_pps), g.bounded_by) == (1_190_000, 1_204_881, "capture loss")
        assert g.note == ("at 1,204,881 pps the capture lost 600,000 of 72,000,000 frames (0.83 %) sent at "
                          "1,200,000 pps (the generator could not hold 1,204,881 pps): capture loss at the rate the "
                          "generator sent")
    # within PDR's 0.5 %, the same shortfall with 0.42 % lost is a lower bound for PDR, lossy for NDR
    r = strict_search(device(1_195_000), frame_len=64, pause=lambda s: None)
    assert (r.goal("NDR").bounded_by, r.goal("PDR").bounded_by) == ("capture loss", "generator")


def test_mlr_short_generator_without_loss_is_a_lower_bound():
    r = strict_search(device(5e6), frame_len=64, pause=lambda s: None)
    for g in r.goals:
        assert g.bounded_by == "generator" and g.lower_bound_pps <= GEN_PPS < g.upper_bound_pps
        assert g.note.startswith(f"the generator could not hold {g.upper_bound_pps:,.0f} pps (it sent 1,200,000 pps)")


def test_mlr_held_generator_with_loss():
    r = strict_search(device(1_000_000, generator_pps=None), frame_len=64, pause=lambda s: None)
    assert {g.bounded_by for g in r.goals} == {"capture loss"}


def test_mlr_answers_agree_from_run_to_run():
    """The issue: NDR 14,881 pps in one run, 156,241 pps in the next, both "generator-bound", though
    the capture's limit was about 145 kpps. With noise in the capture and a generator just above
    the capture's limit, every run now finds the capture's limit, bounded by capture loss."""
    ndrs = []
    for seed in range(3):
        r = strict_search(device(145_000, generator_pps=150_000, noise_pct=2, seed=seed), frame_len=64,
                       pause=lambda s: None, final_trial_s=5)
        ndr = r.goal("NDR")
        assert ndr.bounded_by == "capture loss"
        ndrs.append(ndr.lower_bound_pps)
    assert max(ndrs) <= 150_000 and min(ndrs) >= 0.85 * 145_000


# --- sweep --------------------------------------------------------------------------------


def test_sweep_short_generator_and_capture_loss_is_the_first_loss():
    r = sweep.run(device(1_000_000, generator_pps=1_100_000), frame_len=64, steps=6, pause=lambda s: None,
                  trial_s=1)
    both = [p for p in r.points if p.short]
    assert both and all(p.lost > 0 and p.verdict == LOSSY for p in both)
    assert r.first_lossy_pps is not None and r.first_lossy_pps <= both[0].load_pps
    assert r.bounded_by == "capture loss" and r.short_steps_pps == ()


def test_sweep_short_generator_without_loss_is_a_lower_bound():
    r = sweep.run(device(5e6), frame_len=64, steps=6, pause=lambda s: None, trial_s=1)
    assert r.first_lossy_pps is None and r.bounded_by == "generator"
    assert r.short_steps_pps == tuple(p.load_pps for p in r.points if p.load_pps > GEN_PPS)
    assert all(p.verdict == LOWER_BOUND for p in r.points if p.short)


def test_sweep_held_generator_with_loss():
    r = sweep.run(device(1_000_000, generator_pps=None), frame_len=64, steps=6, pause=lambda s: None, trial_s=1)
    assert r.bounded_by == "capture loss" and r.first_lossy_pps > 1_000_000 >= r.lossless_up_to_pps


# --- back-to-back -------------------------------------------------------------------------


def test_back2back_short_generator_and_capture_loss():
    dev = device(WIRE_64 / 4, generator_pps=WIRE_64 / 2)
    r = back2back.search(dev.measure_burst, frame_len=64, max_frames=100_000, pause=dev.pause)
    assert r.bounded_by == "capture loss" and r.longest_frames == (0,)
    assert "lost" in r.notes[0] and "the generator could not hold" in r.notes[0]


def test_back2back_short_generator_without_loss_is_a_lower_bound():
    dev = device(5e6, generator_pps=WIRE_64 / 2)
    r = back2back.search(dev.measure_burst, frame_len=64, max_frames=100_000, pause=dev.pause)
    assert r.bounded_by == "generator" and r.longest_frames == (0,) and not r.unlimited
    assert "the generator could not send the shortest burst tried" in r.notes[0]


def test_back2back_held_generator_with_loss():
    dev = device(WIRE_64 / 2, generator_pps=None, buffer_frames=10_000)
    r = back2back.search(dev.measure_burst, frame_len=64, max_frames=100_000, precision_frames=100, pause=dev.pause)
    assert r.bounded_by == "capture loss" and 19_900 <= r.longest_frames[0] <= 20_000


# --- iperf-like rows: the summary, the terminal and the exit status --------------------------


def iperf_trial(dev, load_pps, backend="afp-v3", frame_len=64):
    r = dataclasses.replace(dev.measure(1, load_pps), backend=backend, method="iperf", purpose="constant load",
                            gen_cpu=0)
    return r


def records(results):
    return [Trial(r, r.to_record(), r.method) for r in results]


def test_iperf_summary_counts_the_loss_of_a_short_generator():
    both = iperf_trial(device(1_000_000), WIRE_64, "afp-v3")  # short and lossy
    short = iperf_trial(device(5e6), WIRE_64, "xdp")  # short, nothing lost
    best, losses = summary.summary(records([both, short]))
    assert best == ["64 B: afp-v3 — 1,000,000 pps (0.672 Gbps), loss 16.67 %, app / kernel load 0.0 / 0.0 %, the "
                    "generator sent 1,200,000 of the 1,488,095 pps offered (generator short of the offered load for "
                    "xdp, nothing lost: a lower bound, not a result)."]
    assert losses[0].startswith("afp-v3: loses packets at 64 B (loss 16.67 %")
    assert losses[1].startswith("xdp: no valid result — at every frame length the generator fell short")
    assert losses[-1].startswith("To measure the lower bounds: a lower --rate")


def test_no_valid_result_says_what_to_do():
    rs = [iperf_trial(device(5e6), WIRE_64, b) for b in ("pcap", "afp-v3")]
    best, losses = summary.summary(records(rs))
    [line] = best
    assert line == ("64 B: no valid result — for every backend the generator fell short of the offered load and "
                    "nothing was lost (lower bounds, not results).")
    advice = losses[-1]  # once, after the lines that name the lower bounds
    assert advice.startswith("To measure the lower bounds: a lower --rate: at 64 B the generator sent 80.6 % of its "
                             "target (it sent 1,200,000 pps, asked for 1,488,095 pps); --rate 80% stays below that; "
                             "--method rfc2544")
    assert "--rx-mode" in advice and "a quieter machine: nothing else running on the generator's CPU (the " \
                                     "generator ran on CPU 0)" in advice
    assert sum("To measure" in x for x in best + losses) == 1
    assert "no result" not in line.replace("no valid result", "")


def test_way_forward_names_the_other_rx_mode_and_other_test_beds_only_when_recorded():
    short = iperf_trial(device(5e6), WIRE_64)
    steps = way_forward([short])
    assert not any("other capbench test beds" in s for s in steps)
    busy = dataclasses.replace(short, other_testbeds=("capbench-1a2b3c",))
    assert any(s.endswith("other capbench test beds were in use during these trials: capbench-1a2b3c")
               for s in way_forward([busy]))
    assert way_forward([iperf_trial(device(5e6), 1_000_000)]) == []  # nothing to do: a valid result
    # the test bed mode the record names
    rps = dataclasses.replace(short, rx_mode="rps")
    assert any(s.startswith("--rx-mode napi:") and "(this run used rps)" in s for s in way_forward([rps]))


def test_the_exit_status_says_when_nothing_valid_was_measured():
    short = iperf_trial(device(5e6), WIRE_64)
    both = iperf_trial(device(1_000_000), WIRE_64)
    clean = iperf_trial(device(5e6), 1_000_000)
    assert runner.NOTHING_MEASURED_STATUS == 3
    assert runner.run_status([short, short]) == 3
    assert runner.run_status([short, both]) == 0  # a lossy trial is a valid result, though its generator was short
    assert runner.run_status([short, clean]) == 0
    assert runner.run_status([]) == 3


def terminal(trials, outcomes=()):
    console = Console(width=400, record=True)
    print_results(trials, list(outcomes), console)
    return console.export_text()


def test_the_terminal_says_what_to_do_under_the_tables():
    short = iperf_trial(device(5e6), WIRE_64)
    text = terminal([short, iperf_trial(device(5e6), 1_000_000, frame_len=64)])
    assert text.count("To measure the lower bounds: a lower --rate:") == 1 and "; --method rfc2544:" in text
    assert trial_line(1, short).endswith("(generator short, nothing lost: a lower bound)")
    assert terminal([iperf_trial(device(5e6), 1_000_000)]).count("To measure") == 0


def test_a_search_run_that_measured_nothing():
    """dispatch.run of an RFC 2544 search whose generator sends nothing the capture loses, at a rate
    below the lowest the search tries: every trial a lower bound, exit status 3."""
    trials, outcomes = [], []
    dev = device(5e6, generator_pps=100.0, backend="pcap")
    dispatch.run(dispatch.MethodSettings(method="rfc2544", trial_s=1.0), lambda b, s: dev, ["pcap"], (64,),
                 link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0, record=trials.append,
                 record_outcome=outcomes.append, pause=dev.pause)
    assert all(verdict(r) == LOWER_BOUND for r in trials)
    assert runner.run_status(trials) == 3 and outcomes[0]["bounded_by"] == "generator"
    found = answers.answers_of(records(trials), outcomes)
    _, losses = summary.summary(records(trials), found)
    assert losses[0].endswith("no rate measured the capture.")
    assert losses[-1].startswith("To measure the lower bounds: ") and "a quieter machine" in losses[-1]


# --- records written under the old rule ------------------------------------------------------


def test_old_lines_are_judged_again_by_todays_rule():
    """A searches.jsonl line written when a short generator's loss was not capture loss: it said
    "generator"; its trials say capture loss, and the report follows the trials."""
    trials, outcomes = [], []
    dev = device(1_000_000, backend="pcap")
    dispatch.run(dispatch.MethodSettings(method="rfc2544", trial_s=5.0), lambda b, s: dev, ["pcap"], (64,),
                 link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0, record=trials.append,
                 record_outcome=outcomes.append, pause=dev.pause)
    [o] = outcomes
    assert o["bounded_by"] == "capture loss"
    stale = o | {"bounded_by": "generator", "upper_bound_pps": WIRE_64, "lowest_lossy_pps": None,
                 "notes": o["notes"] + ["the generator could not hold 1,488,095 pps (it sent 1,200,000 pps): the "
                                        "throughput is a lower bound of the capture's, set by the generator"]}
    [a] = answers.answers_of(records(trials), [stale])
    assert a.info["bounded_by"] == "capture loss" and a.info["lowest_lossy_pps"] == o["lowest_lossy_pps"] < WIRE_64
    assert not any("set by the generator" in n for n in a.notes)
    assert any(n.endswith("capture loss at the rate the generator sent") for n in a.notes)


def test_a_back_to_back_answer_the_generator_bounded_is_marked():
    trials, outcomes = [], []
    dev = device(5e6, generator_pps=WIRE_64 * 0.9, backend="pcap")
    dispatch.run(dispatch.MethodSettings(method="back2back"), lambda b, s: dev, ["pcap"], (64,), link_bps=1e9,
                 rate=parse_rate("100%"), duration_s=1.0, record=trials.append, record_outcome=outcomes.append,
                 pause=dev.pause)
    assert outcomes[0]["bounded_by"] == "generator"
    [table] = answer_tables.tables(answers.answers_of(records(trials), outcomes), ("back2back",))
    assert table.rows[0][1].endswith("generator-bound (a lower bound)")
    assert table.notes[0].startswith("64 B auto: generator-bound (a lower bound): the generator could not send")


def test_the_words_for_what_the_generator_sent_never_repeat_the_target():
    """The issue: "the generator could not hold 383,650 pps (it sent 383,650 pps)"."""
    from capbench.methods.verdict import generator_short_text

    r = dataclasses.replace(device(5e6, generator_pps=None).measure(2, 383_650), invalid_offered_load=True)
    rate_short = dataclasses.replace(r, achieved_pps=383_412.0)
    assert generator_short_text(383_650, [rate_short]) == "the generator could not hold 383,650 pps (it sent 383,412 pps)"
    count_short = dataclasses.replace(r, sent=766_000)  # the rate over its sending time held, the count did not
    assert generator_short_text(383_650, [count_short]) == ("the generator could not hold 383,650 pps (it sent 766,000 "
                                                            "of the 767,300 frames asked)")
    slipped = dataclasses.replace(r, schedule_slipped=True)  # a record from before issue 14
    assert generator_short_text(383_650, [slipped]) == ("the generator could not hold 383,650 pps (it sent 767,300 "
                                                        "frames but fell behind its schedule)")
