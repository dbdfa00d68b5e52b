"""Issue 4, "Proof of the offered load": a rate the generator cannot hold is marked invalid, not lossy.

The searches (RFC 2544, MLR, the sweep) must not count the generator's shortfall as capture
loss: their answers say what bounded them (`bounded_by`), searches.jsonl carries it, and the
report, the summary and the terminal table call an answer the generator bounded
"generator-bound (a lower bound)", never a capture limit. Lines of searches.jsonl from before
these fields are judged from their trials.
"""

import dataclasses

import pytest
from capbench.methods import dispatch, mlr, rfc2544, sweep
from capbench.methods.simulated import SimulatedDevice
from mlr_strict import strict_search
from capbench.rates import Rate, parse_rate, wire_pps
from capbench.report import answer_tables, answers, summary
from capbench.report.load import Trial
from capbench.report.console import outcome_table
from rich.console import Console

WIRE_64 = wire_pps(1e9, 64)
# The real MLR run of the issue: pcap at 64 B lost nothing; above about 1.3 Mpps the generator
# sent 1,209,369 pps of what it was asked for.
HELD_PPS, SENT_PPS = 1_300_000.0, 1_209_369.0
GENERATOR_BOUND = "generator-bound (a lower bound)"


class ShortGenerator:
    """A simulated capture path behind a generator that cannot send above `held_pps`: a trial above
    it sends `sent_pps` (or `short_share` of the load) and is marked invalid_offered_load."""

    def __init__(self, capacity_pps, held_pps=HELD_PPS, sent_pps=SENT_PPS, short_share=None, frame_len=64,
                 backend="simulated"):
        self.device = SimulatedDevice(capacity_pps, frame_len=frame_len, backend=backend)
        self.held_pps, self.sent_pps, self.short_share = held_pps, sent_pps, short_share
        self.frame_len, self.link_bps, self.pause = frame_len, self.device.link_bps, self.device.pause

    def measure(self, duration_s, load):
        if load <= self.held_pps:
            return self.device.measure(duration_s, load)
        sent = load * self.short_share if self.short_share else self.sent_pps
        return dataclasses.replace(self.device.measure(duration_s, sent), offered_pps=load,
                                   rate=Rate.from_pps(load).text, invalid_offered_load=True)


# --- the searches -------------------------------------------------------------------------


def test_rfc2544_a_search_the_generator_bounded_says_so():
    dev = ShortGenerator(capacity_pps=5e6)
    r = rfc2544.search(dev, frame_len=64, pause=dev.pause, trial_s=5)
    assert r.throughput_pps <= HELD_PPS < r.upper_bound_pps and r.verified
    assert r.upper_bound_pps - r.throughput_pps <= r.precision_pps
    # nothing was lost: no rate is lossy, and the bracket's upper end is the generator's
    assert r.lowest_lossy_pps is None and r.bounded_by == "generator"
    assert (f"the generator could not hold {r.upper_bound_pps:,.0f} pps (it sent 1,209,369 pps): the throughput "
            f"is a lower bound of the capture's, set by the generator") in r.notes


def test_rfc2544_capture_loss_below_the_generators_limit():
    dev = ShortGenerator(capacity_pps=1_000_000)
    r = rfc2544.search(dev, frame_len=64, pause=dev.pause, trial_s=5)
    assert r.throughput_pps <= 1_000_000 < r.upper_bound_pps == r.lowest_lossy_pps
    assert r.bounded_by == "capture loss" and not any("generator" in n for n in r.notes)
    fast = rfc2544.search(SimulatedDevice(5e6), frame_len=64, pause=lambda s: None, trial_s=5)
    assert fast.bounded_by == "none" and fast.upper_bound_pps is None and fast.lowest_lossy_pps is None


def test_rfc2544_no_rate_passed_because_of_the_generator():
    dev = ShortGenerator(capacity_pps=5e6, held_pps=1_000, sent_pps=900)
    r = rfc2544.search(dev, frame_len=64, pause=dev.pause, trial_s=5)
    assert r.throughput_pps == 0 and r.bounded_by == "generator" and r.lowest_lossy_pps is None
    assert r.notes[-1] == ("no rate passed: the generator could not hold 11,626 pps (it sent 900 pps), the lowest "
                           "rate tried, and lost nothing (nothing is known of the capture)")


def test_mlr_goals_the_generator_bounded():
    """The issue's run: every goal's upper bound came from the generator, not from loss."""
    dev = ShortGenerator(capacity_pps=5e6)
    r = strict_search(dev, frame_len=64, pause=dev.pause)
    assert any(t.result.invalid_offered_load for t in r.trials)
    assert all(t.result.lost == 0 for t in r.trials)
    for g in r.goals:
        assert g.lower_bound_pps <= HELD_PPS < g.upper_bound_pps
        assert g.bounded_by == "generator" and g.lowest_lossy_pps is None
        assert g.note.startswith(f"the generator could not hold {g.upper_bound_pps:,.0f} pps (it sent 1,209,369 "
                                 f"pps): the lower bound is a lower bound of the capture's, set by the generator")


def test_mlr_a_slightly_short_trial_cannot_meet_a_lossy_goal():
    """Short by 0.2 % (under the 99.9 % rule): before, its shortfall read as a loss ratio of 0.002,
    within PDR's 0.5 %, so the wire rate became PDR's lower bound."""
    dev = ShortGenerator(capacity_pps=5e6, short_share=0.998)
    r = strict_search(dev, frame_len=64, pause=dev.pause)
    pdr = r.goal("PDR")
    assert pdr.lower_bound_pps <= HELD_PPS < pdr.upper_bound_pps and pdr.bounded_by == "generator"
    assert "the generator could not hold" in pdr.note


def test_mlr_capture_loss_is_still_capture_loss():
    dev = ShortGenerator(capacity_pps=1_000_000)
    r = strict_search(dev, frame_len=64, pause=dev.pause)
    for g in r.goals:
        assert g.bounded_by == "capture loss" and g.lowest_lossy_pps == g.upper_bound_pps and g.regular
        assert "generator" not in g.note
    fast = strict_search(SimulatedDevice(5e6), frame_len=64, pause=lambda s: None)
    assert {g.bounded_by for g in fast.goals} == {"none"}


def test_sweep_short_steps_are_not_the_first_loss():
    dev = ShortGenerator(capacity_pps=5e6)
    r = sweep.run(dev, frame_len=64, pause=dev.pause, trial_s=1)
    held = [p.load_pps for p in r.points if p.load_pps <= HELD_PPS]
    short = [p.load_pps for p in r.points if p.load_pps > HELD_PPS]
    assert r.first_lossy_pps is None and r.lossless_up_to_pps == max(held)
    assert r.short_steps_pps == tuple(short) and r.first_short_pps == short[0]
    assert r.bounded_by == "generator" and [p.short for p in r.points] == [p.load_pps > HELD_PPS for p in r.points]


def test_sweep_a_short_step_that_lost_frames_is_capture_loss():
    # The steps the generator held lost nothing; above 1.3 Mpps it sent 95 % of the load, and from
    # 1,373,626 pps on that was more than the capture's 1.28 Mpps: lossy, though the generator was
    # short (issue 14: loss always counts). The step before it, short with nothing lost, ended the
    # lossless run: a lower bound.
    dev = ShortGenerator(capacity_pps=1_280_000, short_share=0.95)
    r = sweep.run(dev, frame_len=64, steps=26, pause=dev.pause, trial_s=1)
    lossy = [p for p in r.points if p.short and p.lost > 0]
    assert lossy and all(p.verdict == "lossy" for p in lossy)
    assert r.first_lossy_pps == lossy[0].load_pps == pytest.approx(1_373_626.37)
    assert r.short_steps_pps == tuple(p.load_pps for p in r.points if p.short and p.lost == 0)
    assert r.bounded_by == "generator" and r.lossless_up_to_pps < r.short_steps_pps[0] < r.first_lossy_pps
    slow = sweep.run(ShortGenerator(capacity_pps=1_000_000), frame_len=64, pause=lambda s: None, trial_s=1)
    assert slow.first_lossy_pps is not None and slow.first_lossy_pps <= HELD_PPS and slow.bounded_by == "capture loss"


def test_sweep_loss_edges():
    L, X, B = "lossless", "lossy", "lower bound"
    steps = [(1.0, L), (2.0, B), (3.0, L), (4.0, B), (5.0, X), (6.0, X)]
    e = sweep.loss_edges(steps)
    assert (e.lossless_up_to_pps, e.first_lossy_pps, e.short_steps_pps, e.bounded_by) == (3.0, 5.0, (2.0, 4.0),
                                                                                          "generator")
    e = sweep.loss_edges([(1.0, L), (2.0, X), (3.0, B)])
    assert (e.lossless_up_to_pps, e.first_lossy_pps, e.bounded_by) == (1.0, 2.0, "capture loss")
    e = sweep.loss_edges([(1.0, L), (2.0, L)])
    assert (e.lossless_up_to_pps, e.first_lossy_pps, e.bounded_by) == (2.0, None, "none")
    assert sweep.loss_edges([(1.0, B)]).bounded_by == "generator"
    assert sweep.loss_edges([(1.0, B), (2.0, X)]).bounded_by == "capture loss"
    assert sweep.loss_edges([]).bounded_by == "none"


# --- searches.jsonl and what reads it -----------------------------------------------------


def run_method(method, capacity=None, **kw):
    """dispatch.run over pcap (no capture loss, the generator short above 1.3 Mpps) and afp (capture
    loss at 1 Mpps) at 64 B: the trials as report records, and the searches.jsonl lines."""
    capacity = capacity or {"pcap": 5e6, "afp": 1_000_000.0}
    trials, outcomes, devices = [], [], []

    def make(backend, size):
        devices.append(ShortGenerator(capacity[backend], frame_len=size, backend=backend))
        return devices[-1]

    def pause(seconds):
        for d in devices:
            d.pause(seconds)

    settings = dispatch.MethodSettings(method=method, trial_s=kw.pop("trial_s", 5.0), **kw)
    dispatch.run(settings, make, list(capacity), (64,), link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0,
                 record=trials.append, record_outcome=outcomes.append, pause=pause)
    return [Trial(r, r.to_record(), r.method) for r in trials], outcomes


def old_line(o: dict) -> dict:
    """A searches.jsonl line as written before bounded_by: no new fields, an RFC 2544 line's
    lowest_lossy_pps the bracket's upper end, an MLR goal without its generator note; and no
    schema (version 1: lines were typed, version 2, after bounded_by came)."""
    o = dict(o)
    del o["schema"]
    if o["method"] == "rfc2544":
        o["lowest_lossy_pps"] = o.pop("upper_bound_pps")
        o["notes"] = [n for n in o["notes"] if "generator" not in n]
    for key in ("bounded_by", "short_steps_pps", "first_short_pps"):
        o.pop(key, None)
    if "goals" in o:
        o["goals"] = [{k: v for k, v in g.items() if k not in ("bounded_by", "lowest_lossy_pps")} | {"note": ""}
                      for g in o["goals"]]
    if "points" in o:
        o["points"] = [{k: v for k, v in p.items() if k != "invalid_offered_load"} for p in o["points"]]
    return o


def table_text(outcomes) -> str:
    console = Console(width=400, record=True)
    console.print(outcome_table(outcomes))
    return " ".join(console.export_text().split())


def test_searches_jsonl_carries_what_bounded_each_answer():
    _, (pcap, afp) = run_method("rfc2544")
    assert (pcap["bounded_by"], pcap["lowest_lossy_pps"]) == ("generator", None) and pcap["upper_bound_pps"] > HELD_PPS
    assert afp["bounded_by"] == "capture loss" and afp["lowest_lossy_pps"] == afp["upper_bound_pps"]
    _, (pcap, afp) = run_method("mlr")
    assert {g["bounded_by"] for g in pcap["goals"]} == {"generator"}
    assert all(g["lowest_lossy_pps"] is None and "the generator could not hold" in g["note"] for g in pcap["goals"])
    assert {g["bounded_by"] for g in afp["goals"]} == {"capture loss"}
    _, (pcap, afp) = run_method("sweep", steps=6)
    assert pcap["first_lossy_pps"] is None and pcap["bounded_by"] == "generator"
    assert pcap["short_steps_pps"] == [p["load_pps"] for p in pcap["points"] if p["invalid_offered_load"]]
    assert pcap["first_short_pps"] == pcap["short_steps_pps"][0] > HELD_PPS
    assert afp["bounded_by"] == "capture loss" and afp["first_lossy_pps"] <= HELD_PPS


@pytest.mark.parametrize("method", ["rfc2544", "mlr"])
@pytest.mark.parametrize("old", [False, True])
def test_the_summary_calls_a_generator_bound_answer_so(method, old):
    """The issue: the report said "pcap (MLR NDR): lossless up to 1,298,629 pps", though the upper
    bound was a rate the generator could not hold."""
    trials, outcomes = run_method(method)
    if old:
        outcomes = [old_line(o) for o in outcomes]
    found = answers.answers_of(trials, outcomes)
    best, losses = summary.summary(trials, found)
    pcap = next(line for line in losses if line.startswith("pcap"))
    assert f"{GENERATOR_BOUND} at 64 B" in pcap and "the generator could not hold" in pcap
    assert "lossless up to" not in pcap
    afp = next(line for line in losses if line.startswith("afp"))
    assert "lossless up to" in afp and "generator" not in afp
    # The best backend is pcap, but only as far as the generator went: said so.
    assert best[0].startswith("64 B: pcap — ") and f", {GENERATOR_BOUND}: the generator could not hold" in best[0]
    # The tables (Markdown, HTML, terminal) mark the cell and say why.
    [pcap_table] = [t for t in answers.tables(found) if t.title.split(": ")[1].startswith("pcap")]
    assert all(GENERATOR_BOUND in cell for cell in pcap_table.rows[0][1:])
    assert any(n.startswith("64 B auto") and "the generator could not hold" in n for n in pcap_table.notes)
    [afp_table] = [t for t in answers.tables(found) if t.title.split(": ")[1].startswith("afp")]
    assert not any(GENERATOR_BOUND in cell for cell in afp_table.rows[0])


@pytest.mark.parametrize("old", [False, True])
def test_a_sweep_the_generator_ended_is_not_a_first_loss(old):
    trials, outcomes = run_method("sweep", steps=6, capacity={"pcap": 5e6})
    if old:  # before: the first short step was recorded as the first loss
        (o,) = outcomes
        short = [p["load_pps"] for p in o["points"] if p["invalid_offered_load"]]
        outcomes = [old_line(o) | {"first_lossy_pps": short[0], "lossless_up_to_pps": o["lossless_up_to_pps"]}]
    found = answers.answers_of(trials, outcomes)
    [a] = found
    assert a.info["first_lossy_pps"] is None and a.info["bounded_by"] == "generator"
    _, losses = summary.summary(trials, found)
    assert losses == [f"pcap 64 B (sweep): {GENERATOR_BOUND}: no loss up to {a.values['sweep_lossless_pps']:,.0f} pps, "
                      f"the generator could not hold {a.info['short_steps_pps'][0]:,.0f} pps."]
    [g] = answers.group_answers(found).values()
    assert answer_tables.sweep_first_loss(g).startswith(f"{GENERATOR_BOUND}: no loss up to")


def test_answers_derived_from_trials_alone_do_not_count_the_shortfall_as_loss():
    trials, _ = run_method("sweep", steps=6, capacity={"pcap": 5e6})
    [a] = answers.answers_of(trials)
    assert a.source == "trials" and a.info["first_lossy_pps"] is None and a.info["bounded_by"] == "generator"
    assert a.values["sweep_lossless_pps"] == max(rate for rate in (answers.rate_of(t) for t in trials)
                                                  if rate <= HELD_PPS)
    trials, _ = run_method("rfc2544", capacity={"pcap": 5e6})
    [a] = answers.answers_of(trials)
    assert a.source == "trials" and a.info["bounded_by"] == "generator" and a.info["lowest_lossy_pps"] is None
    assert a.info["upper_bound_pps"] > HELD_PPS >= a.values["rfc2544_pps"] > 0


def test_old_lines_without_trials_still_load():
    _, outcomes = run_method("rfc2544")
    lines = [old_line(o) for o in outcomes]
    found = answers.answers_of([], lines)
    assert [a.values["rfc2544_pps"] for a in found] == [o["throughput_pps"] for o in outcomes]
    assert all(a.info["bounded_by"] is None for a in found)  # not known: read as before
    assert summary.summary([], found)[1][0].startswith("pcap (RFC 2544): lossless up to")
    assert "generator" not in table_text(lines)
    for method, kw in (("mlr", {}), ("sweep", {"steps": 6})):
        _, outcomes = run_method(method, **kw)
        lines = [old_line(o) for o in outcomes]
        assert len(answers.answers_of([], lines)) == 2 and table_text(lines)


@pytest.mark.parametrize("method", ["rfc2544", "mlr", "sweep"])
def test_the_terminal_table_says_generator_bound(method):
    _, outcomes = run_method(method, **({"steps": 6} if method == "sweep" else {}))
    text = table_text(outcomes)
    pcap, afp = text.split("│ afp")[0], text.split("│ afp")[1]
    assert GENERATOR_BOUND in pcap and "the generator could not hold" in pcap
    assert "generator" not in afp
    if method == "sweep":
        assert "no loss at any step" not in pcap and "first loss" not in pcap


def test_compare_never_judges_a_generator_bound_answer():
    """A lower bound set by the generator says nothing of the capture: compare shows it, unmarked."""
    from capbench.report import compare as cmp_mod
    from capbench.report.compare_out import verdict

    trials, outcomes = run_method("rfc2544")
    groups = answers.group_answers(answers.answers_of(trials, outcomes))
    pcap = next(g for k, g in groups.items() if g.settings_key.series.backend == "pcap")
    afp = next(g for k, g in groups.items() if g.settings_key.series.backend == "afp")
    [c], _ = cmp_mod.answer_changes(pcap, pcap, 5.0)
    assert c.short == "A and B" and not c.significant and not c.worse_by_more_than(0.0)
    assert verdict(c) == "not compared: the generator bounded the answer (a lower bound) in A and B"
    [c], _ = cmp_mod.answer_changes(afp, afp, 5.0)
    assert c.short == "" and verdict(c) == "no change"
