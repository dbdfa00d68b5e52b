"""What `capbench tune` shows as its evidence (issue 30, items 2, 4 and 5): compare matches a tune
with a plain run of the same configuration, search answers are ranked as iperf trials are, several
settings at one length are drawn side by side in the search figures too, the reasons say where the
CPU time went where the tune profiled, and the budget pays for the set-up and the report."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest
from capbench.campaign import execute as campaign_run
from capbench.campaign import matrix as cmod
from capbench.campaign import plan, resume
from capbench.cli import tune as tune_cli
from capbench.cli.parser import build_parser
from capbench.methods.simulated import SimulatedDevice
from capbench.report import answers as answers_mod
from capbench.report import compare, plots, profiles
from capbench.report.keys import matched, run_length, without_run_length
from capbench.report.load import load_run
from capbench.report.tables import WITHIN_SPREAD_MARK, answer_ranking_tables
from capbench.tune import knobs, output, search, tuning
from fixtures.make_tune_runs import Ring
from sim_tune import Lab, drive, small_tune

FIXTURES = Path(__file__).parent / "fixtures"
TUNE, CONFIRM = FIXTURES / "run-tune", FIXTURES / "run-tune-confirm"


# --- compare: a tune against a plain run of its configurations ------------------------------------


def test_compare_matches_a_tune_with_the_run_that_confirms_it():
    tune, confirm = load_run(TUNE), load_run(CONFIRM)
    cmp = compare.compare(tune, confirm)
    keys = cmp.answer_keys
    # The confirming run's two configurations (the best and the defaults), each matched with the
    # tune's last rung (1 s trials in this 6-minute tune: what it decided on), under the tune's key.
    assert len(keys) == 2 and {run_length(k) for k in keys} == {1.0}, [k.text() for k in keys]
    assert len({dict(k.series.extra).get("rx ring") for k in keys}) == 2
    assert cmp.changes and all(c.answer for c in cmp.changes)
    # The tune's shorter rungs, and the configurations that did not reach the last, are only in it.
    assert cmp.only_a and not cmp.only_b
    # The other way round, the same two, under the plain run's keys.
    back = compare.compare(confirm, tune)
    assert len(back.answer_keys) == 2 and all(run_length(k) is None for k in back.answer_keys)


def test_matching_takes_the_same_key_first_then_the_longest_run_length():
    a, b = list(compare._answers(load_run(TUNE))), list(compare._answers(load_run(CONFIRM)))
    pairs = matched(a, b)
    assert len(pairs) == 2
    for ka, kb in pairs.items():
        assert run_length(kb) is None and without_run_length(ka) == kb
        assert run_length(ka) == max(run_length(k) for k in a if without_run_length(k) == kb)
    assert matched(a, a) == {k: k for k in a}  # a tune with itself: every key as it is
    assert matched(a[:1], []) == {}


# --- search answers ranked --------------------------------------------------------------------------


def vary_run(repeat: int):
    """`capbench run --method mlr --vary rx-ring=256,16384 --repeat N` on the simulated path whose
    capacity grows with the receive ring: its trials and answers."""
    c = cmod.build({"name": "vary", "methods": ["mlr"], "backends": ["afp-v3"], "sizes": "64", "pause": "0",
                    "repeat": repeat, "vary": {"rx-ring": ["256", "16384"]}}, [], backends_known=("afp-v3",))
    trials, outcomes, devices = [], [], []

    def pause(s: float) -> None:
        for d in devices:
            d.pause(s)

    campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), campaign_run.StepRun(
        lambda step: Ring(step, devices), trials.append, outcomes.append, pause))
    return answers_mod.results_answers(trials, outcomes)


def test_a_vary_of_a_search_ranks_its_settings_by_each_answer_with_their_spreads():
    tables = answer_ranking_tables(vary_run(repeat=3))
    assert [t.title.split(":")[0] for t in tables] == ["Settings ranked by MLR NDR", "Settings ranked by MLR PDR"]
    for t in tables:
        assert [row[1] for row in t.rows] == ["rx-ring=16384", "rx-ring=256"]  # the deeper ring: more
        assert t.rows[0][3] == "3" and "–" in t.rows[0][2]  # three searches each, their range
        assert not t.rows[1][0].endswith(WITHIN_SPREAD_MARK)  # 200 kpps apart
        assert "afp-v3 64 B" in t.title and t.headers[2].endswith("[pps]")
    (once,) = {n for t in answer_ranking_tables(vary_run(repeat=1)) for n in t.notes}
    assert "--repeat 3" in once


def test_a_tunes_report_ranks_its_configurations_by_their_answers_on_each_rung():
    run = load_run(TUNE)
    tables = answer_ranking_tables(answers_mod.run_answers(run))
    last = [t for t in tables if "run 1 s" in t.title and "PDR" in t.title.split(":")[0]]
    assert len(last) == 1
    labels = [row[1] for row in last[0].rows]
    assert "defaults" in labels and labels[0] == "rx-ring=16384"  # the defaults race too
    assert answer_ranking_tables(answers_mod.run_answers(load_run(CONFIRM))) == []  # no knobs: nothing


# --- side by side ---------------------------------------------------------------------------------


def xs(ax) -> list[float]:
    return [x for c in ax.containers for x in c.lines[0].get_xdata()]


def test_search_figures_draw_several_settings_at_one_length_side_by_side():
    run = load_run(TUNE)
    drawn = plots.mlr(run.trials, answers_mod.run_answers(run))
    assert isinstance(drawn, plots.Drawn) and len(drawn.figure.axes) == 2  # NDR and PDR
    for ax in drawn.figure.axes:
        at = xs(ax)
        assert len(at) > 2 and len(set(at)) == len(at), at  # every setting apart
        assert all(32 <= x <= 96 for x in at)  # around 64 B
    assert "side by side" in drawn.caption
    searches = load_run(FIXTURES / "run-searches-a")  # RFC 2544 at three lengths, four settings each
    drawn = plots.rfc2544(searches.trials, answers_mod.run_answers(searches))
    at = xs(drawn.figure.axes[0])
    assert len(set(at)) == len(at) == 12 and not {64, 512, 1518} & set(at)


# --- reasons from --profile -----------------------------------------------------------------------


def test_cpu_shares_are_read_from_the_trials_profiles():
    trials = [t.result for t in load_run(FIXTURES / "run-profile").trials]
    shares = tuning.cpu_shares(trials)
    assert set(shares) == {profiles.COUNTER, profiles.RECEIVE}
    counter = shares[profiles.COUNTER]
    pcap = tuning.cpu_shares(trials[:1])[profiles.COUNTER]
    assert pcap["app"] == pytest.approx(86.667) and pcap["wakeup"] == pytest.approx(13.333)
    assert counter["app"] == pytest.approx((86.667 + 81.818 + 32.237 + 100.0) / 4)
    assert tuning.cpu_shares([dataclasses.replace(trials[0], profile={})]) == {}


def test_reasons_say_where_the_cpu_time_went_only_where_both_were_profiled():
    tune = drive(small_tune(), Lab())
    space = tune.spaces[0]
    rows = output.rows_of(tune, space)
    by = {r.config: r for r in rows}
    base, best = by[search.BASELINE], rows[0]
    before = {profiles.COUNTER: {"socket": 41.0, "app": 50.0}, profiles.RECEIVE: {"driver": 30.0, "stack": 20.0}}
    after = {profiles.COUNTER: {"socket": 22.0, "app": 70.0}, profiles.RECEIVE: {"driver": 31.0, "stack": 19.0}}
    lines = output.reasons(tune, space, [dataclasses.replace(best, cpu_pct=after),
                                         dataclasses.replace(base, cpu_pct=before)])
    # The counter's largest move (20 points, its application code), named with both figures; the
    # receive CPU moved by sampling noise only: nothing said of it.
    assert lines == ["the counter spent 50 % of its CPU time in the application at the defaults, 70 % with "
                     "rx-ring=16384 (at each one's value)"]
    unprofiled = [dataclasses.replace(best, cpu_pct=after), dataclasses.replace(base, cpu_pct={})]
    assert output.reasons(tune, space, unprofiled) == []


def test_tune_takes_profile_as_run_does():
    args = build_parser().parse_args(["tune", "--backends", "afp-v3", "--knobs", "rx-ring", "--profile",
                                      "--profile-hz", "499"])
    t = tune_cli.tune_of(args)
    assert t.campaign.profile and t.campaign.profile_hz == 499
    assert not tune_cli.tune_of(build_parser().parse_args(["tune", "--backends", "afp-v3"])).campaign.profile
    assert "profile" in tune_cli.TUNE_FLAGS  # --resume keeps the tune's own


# --- the budget pays for the set-up and the report --------------------------------------------------


def test_the_search_keeps_its_overhead_inside_the_budget():
    def measure(config, rung, rep):  # configurations the race cannot tell apart: it runs until the budget ends it
        return search.Measurement(100.0 + 50.0 * (rep % 2), 10.0 * (rung + 1))

    rungs = (search.Rung(1.0, 10.0), search.Rung(2.0, 20.0))
    free = search.search(6, measure, search.Settings(600.0, rungs))
    paid = search.search(6, measure, search.Settings(600.0, rungs, overhead_s=lambda: 200.0))
    assert free.spent_s <= 600.0 and paid.spent_s + 200.0 <= 600.0 < free.spent_s + 200.0


def epoch(t) -> float:
    return datetime.datetime.fromisoformat(t.started_at).timestamp()


def test_the_set_up_is_measured_from_each_start_to_its_first_trial_and_the_live_line_counts_it():
    lab = Lab()
    first = SimulatedDevice(1e6).measure(1.0, 1e3)  # the simulated clock's first trial
    t = small_tune()
    t.starts, t.report = (epoch(first) - 90.0,), True
    left = []
    run = lab.run()
    run = dataclasses.replace(run, on_trial=lambda n, total, left_s: left.append(left_s))
    t.drive(plan.plan_of(t.campaign, resume.progress_of([], []), [0, 1]), run)
    assert t.setup_s() == pytest.approx(90.0, abs=tuning.PAUSE_S + 1)
    spent = t.results["afp-v3"].spent_s
    assert t.charged_s(spent) + t.end_s(spent) <= 1.05 * t.budget_s  # the measurements' costs are estimated
    assert left[0] <= t.budget_s - 89.0  # the live line's time left: the set-up is spent
    # The same tune charged nothing for its set-up spends more on measurements.
    free = drive(small_tune(), Lab())
    assert free.results["afp-v3"].spent_s >= spent
    # A second invocation's set-up counts from its start to its own first trial.
    t.starts = (*t.starts, max(t.trial_starts) + 30.0)
    t.trial_starts.add(max(t.trial_starts) + 50.0)
    assert t.setup_s() == pytest.approx(90.0 + 20.0, abs=tuning.PAUSE_S + 1)


def test_a_resumed_tune_reads_when_each_invocation_began():
    meta = {"started_at": "2026-11-28T08:00:00Z", "resumed_at": ["2026-11-28T08:10:00Z", "bad"]}
    a, b = tune_cli._started(meta)
    assert b - a == 600.0


def test_the_confirming_campaign_sets_a_backends_knob_as_the_tune_did():
    space = tuning.space_of("afp-v3", knobs.space("afp-v3", ["afp-v3:block-size", "rx-ring"]))
    config = next(i for i, c in enumerate(space.configs) if c == {"afp-v3:block-size": "4M", "rx-ring": "1024"})
    text = "\n".join(['[campaign]', 'backends = ["afp-v3"]', 'sizes = "64"', *output.matrix_toml(space, config)])
    (step,) = cmod.loads(text, Path("best.toml"), backends_known=("afp-v3",)).steps()
    # Recorded as a tune's trial is (its knobs), not as --backend-args: compare matches the two.
    assert step.knobs == (("afp-v3:block-size", "4M"),) and step.rx_ring == 1024 and step.backend_args == ""
