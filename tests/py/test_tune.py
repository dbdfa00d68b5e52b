"""`capbench tune` (issue 30): the search on the simulated device, its budget, resuming it, its
command line and what it writes."""

import dataclasses
import math
import tomllib
import types
from pathlib import Path

import pytest
from capbench.campaign import matrix as cmod
from capbench.cli.parser import build_parser
from capbench.cli import tune as tune_cli
from capbench.errors import UsageError
from capbench.methods import mlr, registry
from capbench.methods.method import TRIAL_OVERHEAD_S, MethodSettings
from capbench.methods.simulated import SimulatedDevice
from capbench.report import tune_summary
from capbench.tune import knobs, output, search, tuning
from sim_tune import Crash, Lab, drive, small_tune

# --- the search, a function of a measure callback -----------------------------------------------------

# Twelve configurations (0: the defaults) of known capacities: the best (5) is 10 % above the next (9).
CAPACITY_PPS = (300e3, 420e3, 380e3, 450e3, 350e3, 600e3, 330e3, 470e3, 400e3, 545e3, 360e3, 390e3)
BEST = 5
NOISE_PCT = 5.0  # each trial's capacity drawn around the configuration's with this standard deviation
PAUSE_S = tuning.PAUSE_S


def rungs():
    m = registry.get("mlr")
    return tuple(search.Rung(length, m.estimate(MethodSettings(method="mlr", trial_s=length, pause_s=PAUSE_S),
                                                  length).seconds) for length in tuning.MLR_LENGTHS_S)


def simulated_mlr(seed):
    """measure(config, rung, rep): an MLR search of the configuration's simulated device on the
    rung's trial length (and a coarser precision on the shorter rungs, as the tune does), its PDR
    and the simulated time it took."""
    lengths = tuning.MLR_LENGTHS_S

    def measure(config, rung, rep):
        d = SimulatedDevice(CAPACITY_PPS[config], noise_pct=NOISE_PCT, buffer_frames=2_000,
                            seed=seed * 1_000_000 + config * 10_000 + rung * 100 + rep)
        length = lengths[rung]
        r = mlr.search(d, frame_len=64, precision_pct=lengths[-1] / length, final_trial_s=length,
                       initial_trial_s=min(mlr.INITIAL_TRIAL_S, length), pause_s=PAUSE_S, pause=d.pause)
        cost = d.total_trial_s + d.total_pause_s + d.trials * TRIAL_OVERHEAD_S
        return search.Measurement(r.goal("PDR").throughput_pps, cost)

    return measure


def test_the_search_finds_the_best_of_the_simulated_device_in_9_of_10_seeds_within_its_budget():
    budget_s = 15 * 60
    found = []
    for seed in range(10):
        out = search.search(len(CAPACITY_PPS), simulated_mlr(seed), search.Settings(budget_s, rungs()))
        assert out.spent_s <= budget_s, f"seed {seed} spent {out.spent_s:.0f} s of {budget_s} s"
        assert out.final_rung > 0, "the budget should let the better ones climb"
        assert search.BASELINE in out.finalists  # the defaults race too: the output compares with them
        assert sorted(out.ranking) == list(range(len(CAPACITY_PPS)))
        found.append(out.best == BEST)
    assert sum(found) >= 9, f"the best found in {sum(found)} of 10 seeds"


def test_the_race_calls_two_close_finalists_within_noise_and_a_distant_one_worse():
    values = {0: [100.0, 140.0, 120.0], 1: [500.0, 510.0, 490.0], 2: [495.0, 520.0, 480.0], 3: [50.0, 52.0, 51.0]}

    def measure(config, rung, rep):
        return search.Measurement(values[config][(rep - 1) % 3], 10.0)

    out = search.search(4, measure, search.Settings(10_000, (search.Rung(1.0, 10.0),), finalists=3, max_reps=6))
    assert out.best in (1, 2)
    other = 3 - out.best
    assert not out.comparisons[other].significant  # 500 ± 10 against 498 ± 20
    assert out.comparisons[0].significant  # the defaults, far below
    assert 3 not in out.finalists and out.ranking[-1] == 3


def test_where_a_whole_round_no_longer_fits_the_leader_and_its_closest_finalist_run_once_more():
    """Three in the race (2 is screened out) at 10 s a measurement: after two rounds 25 s are left,
    too little for a round of three but enough for two: the leader (1) and the one the test
    separates from it least."""
    values = {0: [100.0, 140.0, 120.0], 1: [130.0, 150.0, 140.0], 2: [90.0], 3: [125.0, 135.0, 112.0]}

    def measure(config, rung, rep):
        return search.Measurement(values[config][(rep - 1) % len(values[config])], 10.0)

    out = search.search(4, measure, search.Settings(125, (search.Rung(1.0, 10.0),), finalists=3))
    reps = {c: len(out.measured[(c, 0)]) for c in range(4)}
    p = {c: search.welch(values[1], values[c]) for c in (0, 3)}
    closest = max(p, key=p.get)
    assert out.spent_s == 120 and reps == {0: 3, 3: 3, 2: 1} | {1: 4, closest: 4}


def test_a_finalist_measured_once_is_not_judged_within_noise():
    out = search.Outcome(ranking=(1, 0, 2, 3), comparisons={0: search.Comparison(None, False), 2: search.Comparison(0.4, False),
                                              3: search.Comparison(0.01, True)})
    assert output.verdict(out, 1) == "best"
    assert output.verdict(out, 0) == "not judged: fewer than two runs of it or of the best"
    assert output.verdict(out, 2) == "within noise of the best (p 0.4)"
    assert output.verdict(out, 3) == "worse beyond noise (p 0.01)"


def test_welch_p_values():
    assert search.welch([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert search.welch([5.0, 5.0], [5.0, 5.0]) == 1.0 and search.welch([5.0, 5.0], [6.0, 6.0]) == 0.0
    assert search.welch([1.0], [2.0, 3.0]) is None
    # t = 2.4249 with Welch's 4.4118 degrees of freedom: twice the tail of Student's t density
    # beyond it, integrated numerically, is 0.066458
    assert search.welch([1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 7.0, 9.0]) == pytest.approx(0.066458, abs=1e-5)


def test_a_budget_below_the_shortest_search_is_refused_with_the_smallest_that_works():
    s = search.Settings(60.0, rungs())
    least = search.smallest_budget(12, s)
    assert least == pytest.approx(rungs()[0].cost_s * (12 + (search.FINALISTS + 1) * (search.MIN_REPS - 1)))
    with pytest.raises(search.BudgetTooSmall) as e:
        search.search(12, lambda *_: pytest.fail("measured within a refused budget"), s)
    assert e.value.least_s == least
    # The smallest budget is enough: every configuration once, the race to MIN_REPS each.
    out = search.search(12, simulated_mlr(0), dataclasses.replace(s, budget_s=least))
    assert out.final_rung == 0 and len(out.values(out.best)) >= search.MIN_REPS


def test_a_host_slower_than_the_estimates_climbs_less_and_stays_in_the_budget():
    def host(factor):
        calls = []

        def measure(config, rung, rep):  # every measurement takes `factor` times its estimate
            calls.append((config, rung, rep))
            return search.Measurement(CAPACITY_PPS[config], factor * rungs()[rung].cost_s)

        return measure, calls

    budget = 20 * 60
    as_estimated, calls = host(1.0)
    out = search.search(len(CAPACITY_PPS), as_estimated, search.Settings(budget, rungs()))
    assert out.final_rung >= 1 and out.spent_s <= budget and out.best == BEST
    assert len(calls) == len(set(calls))  # no measurement asked for twice
    assert out.final_rung == 2
    slower, calls = host(3.0)
    out = search.search(len(CAPACITY_PPS), slower, search.Settings(budget, rungs()))
    assert out.final_rung == 0 and out.spent_s <= budget and out.best == BEST
    assert len(calls) == len(set(calls))


def test_a_first_rung_far_dearer_than_estimated_leaves_configurations_unmeasured_not_the_budget_overrun():
    # Measured on this VM (2026-11-28): an MLR search of afp-v3 at 64 B with 0.5 s trials took ~40
    # trials, half of them reruns of trials the host disturbed, against the estimate's 9: four times
    # its cost. A budget that covers the first rung as estimated then stops screening in time.
    n, factor = 27, 4.0
    capacity = [300e3 + 10e3 * ((c * 5) % n) for c in range(n)]
    calls = []

    def measure(config, rung, rep):
        calls.append((config, rung, rep))
        return search.Measurement(capacity[config], factor * rungs()[rung].cost_s)

    s = search.Settings(1.5 * search.smallest_budget(n, search.Settings(0, rungs())), rungs())
    out = search.search(n, measure, s)
    assert out.spent_s <= s.budget_s and out.screen_scale == factor
    assert out.unscreened and search.BASELINE not in out.unscreened and len(out.unscreened) < n - search.FINALISTS
    assert set(out.ranking) | set(out.unscreened) == set(range(n)) and not set(out.ranking) & set(out.unscreened)
    assert all((c, 0, 1) not in calls for c in out.unscreened)
    # the best of those measured, raced against the defaults
    measured = [c for c in range(n) if c not in out.unscreened]
    assert out.best == max(measured, key=lambda c: capacity[c]) and search.BASELINE in out.finalists
    # as estimated, every configuration is screened
    out = search.search(n, lambda c, r, rep: search.Measurement(capacity[c], rungs()[r].cost_s), s)
    assert out.unscreened == () and len(out.ranking) == n


def test_the_screening_order_spreads_over_the_space():
    for n in (1, 2, 4, 12, 27, 48):
        order = search.screening_order(n)
        assert order[0] == search.BASELINE and sorted(order) == list(range(n))
    # a 3 x 3 x 3 grid: its first third already holds each value of each knob
    first = search.screening_order(27)[:9]
    for axis in range(3):
        assert {(c // 3 ** axis) % 3 for c in first} == {0, 1, 2}


# --- the tune on simulated devices: resuming repeats no trial ----------------------------------------


def key(t):
    """What a trial is, without its timestamp (a resumed device's clock starts again)."""
    return (t.step, t.purpose, t.offered_pps, t.requested_duration_s, t.sent, t.received)


def test_a_tune_stopped_anywhere_and_resumed_repeats_no_trial_and_finds_the_same():
    full_lab = Lab()
    full = drive(small_tune(), full_lab)
    n = len(full_lab.trials)
    out = full.results["afp-v3"]
    assert n > 50 and out.best == 3  # rx-ring 16384: the deepest ring, the largest capacity
    assert full.measured["afp-v3"][(0, 0, 1)].step.endswith("|dur=0.5s|rep=1")
    for crash in (1, 7, n // 3, n // 2, n - 1):
        first = Lab(crash_at=crash)
        with pytest.raises(Crash):
            drive(small_tune(), first)
        assert len(first.trials) == crash - 1
        again = Lab()
        resumed = drive(small_tune(first.outcomes), again, first.trials)
        assert again.measured == n - (crash - 1), f"crash at {crash}: {again.measured} measured"
        assert [key(t) for t in first.trials + again.trials] == [key(t) for t in full_lab.trials]
        assert first.outcomes + again.outcomes == full_lab.outcomes
        assert resumed.results["afp-v3"].ranking == out.ranking


def test_the_first_rung_searches_the_goal_alone_with_one_trial_deciding_each_load():
    """The screening's MLR searches (tuning.SCREENING_SUM_TRIALS): the tune's goal only, each load
    of a measurement on the first rung measured once; the rungs above keep the method's sum."""
    lab = Lab()
    tune = drive(small_tune(), lab)
    assert lab.outcomes and all([g["name"] for g in o["goals"]] == ["PDR"] for o in lab.outcomes)
    loads: dict[str, list[float]] = {}
    for t in lab.trials:
        if t.purpose != mlr.WARMUP:
            loads.setdefault(t.step, []).append(t.offered_pps)
    first = [v for step, v in loads.items() if "|dur=0.5s|" in step]
    assert len(first) == len(tune.spaces[0].configs) and all(len(v) == len(set(v)) for v in first)
    assert tune.settings(0).duration_sum_trials == 1 and tune.settings(1).duration_sum_trials is None
    # the budget plans the screening with what such a search takes, not a search of three trials' sum
    assert tune.rungs()[0].cost_s == registry.get("mlr").estimate(tune.settings(0), 0.5).seconds
    assert tune.rungs()[0].cost_s < registry.get("mlr").estimate(
        dataclasses.replace(tune.settings(0), duration_sum_trials=None), 0.5).seconds


def test_the_output_ranks_writes_a_campaign_file_the_campaign_reader_takes_and_a_run_line_capbench_parses(tmp_path):
    lab = Lab()
    tune = drive(small_tune(), lab)
    space = tune.spaces[0]
    rows = output.rows_of(tune, space)
    assert [r.label for r in rows][0] == "rx-ring=16384" and rows[0].verdict == "best"
    assert {r.label for r in rows} == {"defaults", "rx-ring=256", "rx-ring=1024", "rx-ring=16384"}
    line = output.run_line(tune, space, rows[0].config)
    args = build_parser().parse_args(line[2:])
    assert args.command == "run" and args.rx_ring == "16384" and args.method == "mlr" and args.backends == "afp-v3"
    text = output.campaign_toml(tune, space, rows[0].config)
    c = cmod.loads(text, Path("best.toml"), backends_known=("afp-v3",))
    assert [m.rx_rings for m in c.matrices] == [(16384,), (0,)] and c.matrices[0].repeat == output.CONFIRM_REPEAT
    assert tomllib.loads(text)["campaign"]["trial"] == "2s"
    from rich.console import Console

    output.finish(tune, tmp_path, Console(file=open(tmp_path / "out.txt", "w"), width=160))
    printed = (tmp_path / "out.txt").read_text()
    assert "rx-ring=16384" in printed and "capbench run" in printed
    assert {p.name for p in (tmp_path / "tune").iterdir()} == {
        "ranking.txt", "tune.json", "best-afp-v3.toml", "goal-by-knob-afp-v3.png", "goal-by-knob-afp-v3.svg"}
    # a column per knob; the terminal's table the best (here 1) and the defaults, the file every row
    short = output.table(tune, space, rows, shown=1)
    assert [c.header.plain for c in short.columns][:2] == ["#", "rx-ring"]
    assert short.row_count == 2 and short.caption == "2 more configurations in tune/ranking.txt"
    assert output.knob_cells(space, 0) == ["4096"]  # the defaults: the knob's own default
    assert output.table(tune, space, rows).row_count == 4
    assert "defaults, " in (tmp_path / "tune" / "ranking.txt").read_text()
    # tune.json reads back as the records the tune wrote, and the report reads the same
    (summary,) = tune_summary.parse((tmp_path / "tune" / "tune.json").read_text())
    assert summary == output.summary_of(tune, space, rows)
    assert summary.best.label == rows[0].label and summary.best_line.startswith("best of afp-v3: ")
    assert [r.finalist for r in summary.ranking] == [r.config in tune.results["afp-v3"].finalists for r in rows]
    assert all(r.screening_values for r in summary.ranking)  # every ranked configuration was screened
    notes: list[str] = []
    assert tune_summary.read_summaries(tmp_path, notes) == [summary] and notes == []


def test_the_lines_carry_the_engine_the_tune_sent_with_where_it_is_not_the_default():
    tune = drive(small_tune(), Lab())
    space = tune.spaces[0]
    assert "--engine" not in output.run_line(tune, space, 1)
    # on a kernel that refuses the xdp engine the run sent with afpacket (preflight.engine_here): the
    # lines that confirm the answer send with it too
    tune.campaign = dataclasses.replace(tune.campaign, engine="afpacket")
    line = output.run_line(tune, space, 1)
    assert build_parser().parse_args(line[2:]).engine == "afpacket"
    assert cmod.loads(output.campaign_toml(tune, space, 1), Path("best.toml"), backends_known=("afp-v3",)).engine == "afpacket"


def test_the_output_names_the_configurations_the_first_rung_did_not_reach(tmp_path):
    import json

    from rich.console import Console

    tune = drive(small_tune(), Lab())
    space, out = tune.spaces[0], tune.results["afp-v3"]
    # as search leaves it when the first rung was cut (test_a_first_rung_far_dearer_than_estimated...)
    last = out.ranking[-1]
    assert last != search.BASELINE
    out.ranking, out.unscreened, out.screen_scale = out.ranking[:-1], (last,), 4.0
    assert len(output.rows_of(tune, space)) == 3
    output.finish(tune, tmp_path, Console(file=open(tmp_path / "out.txt", "w"), width=300))
    printed = (tmp_path / "out.txt").read_text()
    assert "not measured: 1 of 4 configurations" in printed and "4.0x the methods' estimates" in printed
    (summary,) = json.loads((tmp_path / "tune" / "tune.json").read_text())
    assert summary["unscreened"] == [{"index": last, "config": dict(space.configs[last]),
                                      "label": knobs.label(space.configs[last])}]
    assert all(r["index"] != last for r in summary["ranking"])


def test_reasons_come_from_the_account_only_where_a_counter_shows_the_layer():
    tune = drive(small_tune(), Lab())
    space = tune.spaces[0]
    rows = output.rows_of(tune, space)
    by = {r.config: r for r in rows}
    base, best = by[search.BASELINE], rows[0]
    fake = [dataclasses.replace(base, layers={"rx ring": 3.1}), dataclasses.replace(best, layers={})]
    assert output.reasons(tune, space, [fake[1], fake[0]]) == [
        "the rx ring lost 3.1 % at the defaults; rx-ring 16384 removed it (at each one's upper bound)"]
    # The simulated device counts its loss in the backlog and the socket, no layer rx-ring governs: no reason.
    quiet = [dataclasses.replace(best, layers={}), dataclasses.replace(base, layers={"socket": 2.0})]
    assert output.reasons(tune, space, quiet) == []


def test_a_best_the_generator_bounded_is_said_to_be_a_lower_bound():
    tune = drive(small_tune(), Lab())
    space = tune.spaces[0]
    rows = output.rows_of(tune, space)
    assert not any(r.generator_bound for r in rows)  # the simulated generator holds every load
    line, *_ = output.reasons(tune, space, [dataclasses.replace(rows[0], generator_bound=True), *rows[1:]])
    assert line.startswith(f"the generator bounded the best's {tune.goal.title} ") and "lower bounds" in line
    # from the search's own word: its goal's bounded_by
    goal = {"name": tune.goal.mlr_goal, "lower_bound_pps": 300_000.0, "upper_bound_pps": 310_000.0}
    for bounded_by, bound in (("generator", True), ("capture loss", False)):
        m = tune.measured_of(0, 0, 1, "k", {"goals": [goal | {"bounded_by": bounded_by}]}, [])
        assert m.generator_bound is bound


# --- the command line --------------------------------------------------------------------------------


def tune_args(*argv):
    return build_parser().parse_args(["tune", *argv])


def test_the_command_line_makes_the_tune():
    t = tune_cli.tune_of(tune_args("--backends", "afp-v3", "--knobs", "rx-ring", "--budget", "20m"))
    assert t.goal.name == "pdr" and t.budget_s == 1200 and [k.name for k in t.spaces[0].knobs] == ["rx-ring"]
    assert t.spaces[0].configs[0] == {} and len(t.spaces[0].configs) == len(knobs.RX_RING_CANDIDATES)  # 4096 is the default
    t = tune_cli.tune_of(tune_args("--backends", "afp-v3", "--rate", "300kpps", "--candidates", "rx-ring=16,4096",
                                   "--budget", "90s"))
    assert t.goal.name == "loss" and t.campaign.load.pps(64, t.campaign.link_bps) == 300_000
    assert [cfg for cfg in t.spaces[0].configs] == [{}, {"rx-ring": "16"}]


def test_backend_args_hold_for_every_configuration_and_leave_out_the_knobs_they_set():
    # dpdk on net_af_packet has no XDP program of its own: its frames pass the cpumap ring, whose
    # depth is then a knob, as it is not on net_af_xdp (own_xdp)
    assert "rx-ring" not in [k.name for k in tune_cli.tune_of(tune_args("--backends", "dpdk")).spaces[0].knobs]
    t = tune_cli.tune_of(tune_args("--backends", "dpdk", "--backend-args", "dpdk=--dpdk-driver af_packet"))
    assert "rx-ring" in [k.name for k in t.spaces[0].knobs]
    assert all(dict(m.backend_args) == {"dpdk": "--dpdk-driver af_packet"} for m in t.campaign.matrices)
    # afp-v3 with its block size given: neither its block-size nor the ring (which maps onto it) is searched
    t = tune_cli.tune_of(tune_args("--backends", "afp-v3", "--backend-args", "afp-v3=--block-size 4M"))
    names = [k.name for k in t.spaces[0].knobs]
    assert "afp-v3:block-size" not in names and "ring" not in names and "afp-v3:block-count" in names
    space = t.spaces[0]
    t.results["afp-v3"] = types.SimpleNamespace(final_rung=0)  # what the lines read of a search's outcome
    line = output.run_line(t, space, 1)
    assert line[line.index("--backend-args") + 1] == "afp-v3=--block-size 4M"
    c = cmod.loads(output.campaign_toml(t, space, 1), Path("best.toml"), backends_known=("afp-v3",))
    assert all(dict(m.backend_args) == {"afp-v3": "--block-size 4M"} for m in c.matrices)


def test_the_default_space_fits_the_default_budget():
    t = tune_cli.tune_of(tune_args("--backends", "afp-v3"))
    assert t.smallest_budget_s() <= t.budget_s
    # and the budget of issue 30's target, with room for the search beyond its least
    assert t.smallest_budget_s() <= 0.8 * 15 * 60, t.smallest_budget_s()


@pytest.mark.parametrize("argv, said", [
    (("--backends", "afp-v3", "--knobs", "nosuch"), "afp-v3 has no knob 'nosuch'"),
    (("--backends", "afp-v3", "--candidates", "rx-ring=0,4096"), "afp-v3 knob rx-ring 0"),
    (("--backends", "afp-v3", "--candidates", "ring=1k"), "afp-v3 knob ring 1k"),
    (("--backends", "afp-v3", "--budget", "30s"), "is too small for the"),
    (("--backends", "afp-v3", "--rate", "300kpps", "--goal", "pdr"), "leave out --rate"),
    (("--backends", "afp-v3", "--goal", "loss"), "give --rate"),
    (("--backends", "afp-v3", "--sizes", "64,1518"), "one frame length"),
    (("--backends", "afp-v3", "--goal", "fast"), "unknown --goal"),
    (("--backends", "afp-v3", "--knobs", "afp-v3:block-size", "--backend-args", "afp-v3=--block-size 4M"),
     "--backend-args for afp-v3 sets --block-size, which knob afp-v3:block-size would vary"),
    (("--backends", "afp-v3", "--backend-args", "afp-v3"), "give BACKEND=OPTIONS"),
    (("--backends", "afp-v3", "--backend-args", "pcap=--pcap-api dispatch"), "names pcap, which no matrix measures"),
])
def test_bad_input_is_one_line(argv, said):
    with pytest.raises(UsageError) as e:
        tune_cli.tune_of(tune_args(*argv))
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_budget_too_small_names_the_smallest_that_works():
    with pytest.raises(UsageError) as e:
        tune_cli.tune_of(tune_args("--backends", "afp-v3", "--budget", "30s"))
    least = tune_cli.tune_of(tune_args("--backends", "afp-v3")).smallest_budget_s()
    assert f"give --budget {math.ceil(least / 60)}m or more" in str(e.value)
    tune_cli.tune_of(tune_args("--backends", "afp-v3", "--budget", f"{math.ceil(least / 60)}m"))


def test_a_measurement_costs_the_time_between_its_trials_and_a_stop_in_the_middle_costs_its_estimate():
    d = SimulatedDevice(1e6)
    trials = [dataclasses.replace(d.measure(1.0, 100e3), started_at=at) for at in (
        "2026-11-28T08:00:00.000Z", "2026-11-28T08:00:02.500Z", "2026-11-28T09:00:00.000Z",
        "2026-11-28T08:59:00.000Z")]
    own = 1.0 + TRIAL_OVERHEAD_S + PAUSE_S  # a trial and the pause after it, by the estimate
    # pause before the first, 2.5 s to the second, an hour's stop and a clock gone backwards as
    # estimates, the last trial and its start-up
    assert tuning.cost_of(trials, PAUSE_S) == pytest.approx(PAUSE_S + 2.5 + own + own + 1.0 + TRIAL_OVERHEAD_S)
    assert tuning.cost_of([], PAUSE_S) == 0.0


def test_report_and_compare_read_a_tune_like_any_run(tmp_path, capsys):
    from capbench.campaign.results import RunWriter
    from capbench.campaign.runner import campaign_settings
    from capbench.cli.main import main

    lab = Lab()
    tune = drive(small_tune(), lab)
    w = RunWriter.create(tmp_path, {"campaign": campaign_settings(tune.campaign), "tune": {"goal": "pdr"}},
                         command=["capbench", "tune", "--backends", "afp-v3", "--knobs", "rx-ring"])
    with w:
        for t in lab.trials:
            w.append(t)
        for o in lab.outcomes:
            w.append_outcome(o)
    assert main(["report", str(w.path)]) == 0
    out = capsys.readouterr().out
    assert "MLR search" in out and "run 2 s" in out  # each rung's searches apart: their trial length
    assert (w.path / "report" / "report.html").exists()
    assert main(["compare", str(w.path), str(w.path)]) == 0
