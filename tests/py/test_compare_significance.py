"""`capbench compare`: a change only beyond the noise, judged on runs of the simulated capture
path (campaign runner and methods as `capbench run` uses them, 2 % noise per trial)."""

import json
import sys
from pathlib import Path

import pytest
from capbench.campaign import plan, resume
from capbench.campaign import matrix as cmod
from capbench.campaign import execute as campaign_run
from capbench.methods.simulated import SimulatedDevice
from capbench.report import compare, compare_out, stats
from capbench.report.load import load_run
from test_cli import capbench

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from make_simulated_runs import CAPACITY, Placed  # noqa: E402

CAMPAIGN = """
[campaign]
link = "1g"
rate = "100%"
duration = "2"
pause = "0"
methods = ["iperf"]
backends = ["pcap", "afp-v3"]
sizes = [64, 512]
pin = ["A:A", "A:B"]
repeat = {repeat}
"""


def simulated_run(out: Path, seed: int, pcap_factor: float = 1.0, repeat: int = 5) -> Path:
    """A results directory of the campaign above, run against the simulated path."""
    c = cmod.loads(CAMPAIGN.format(repeat=repeat), Path("sim.toml"), backends_known=("pcap", "afp-v3"))
    trials = []
    made = [0]

    def make(step):
        made[0] += 1
        capacity = CAPACITY[step.backend, step.pin][step.size] * (pcap_factor if step.backend == "pcap" else 1.0)
        return Placed(SimulatedDevice(capacity, frame_len=step.size, backend=step.backend, noise_pct=2.0,
                                      seed=seed * 1000 + made[0]), step.pin)

    campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]),
                         campaign_run.StepRun(make, trials.append, lambda o: None, lambda s: None))
    out.mkdir()
    (out / "trials.jsonl").write_text("".join(json.dumps(t.to_record()) + "\n" for t in trials))
    (out / "run.json").write_text(json.dumps({"schema": 1, "status": "complete", "trials": len(trials)}))
    return out


def test_the_t_test_against_the_t_table():
    """p = 0.05 at the two-tailed 95 % critical values of Student's t (any t table)."""
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (8, 2.306), (20, 2.086), (30, 2.042), (120, 1.980)):
        assert stats.t_p_value(t, df) == pytest.approx(0.05, abs=2e-4), df
    assert stats.t_p_value(0.0, 5) == pytest.approx(1.0)
    # perf.py's test data (pooled sample variance 31.782, means 87.95 and 85.19): not significant
    a = stats.stat_of([89.2, 78.2, 89.3, 88.3, 87.3, 90.1, 95.2, 94.3, 78.3, 89.3])
    b = stats.stat_of([79.3, 78.3, 85.3, 79.3, 88.9, 91.2, 87.2, 89.2, 93.3, 79.9])
    assert stats.t_score(b, a) == pytest.approx((87.95 - 85.19) / (31.782 * 2 / 10) ** 0.5, rel=1e-3)
    assert stats.p_value(a, b) > 0.05
    assert stats.p_value(stats.stat_of([1.0]), b) is None  # one value: no noise estimate


def test_two_runs_of_one_configuration_show_no_change(tmp_path):
    a, b = simulated_run(tmp_path / "a", seed=1), simulated_run(tmp_path / "b", seed=2)
    cmp = compare.compare(load_run(a), load_run(b))
    assert all(c.by_repetitions for c in cmp.changes) and len(cmp.measurements) == 8
    assert not any(c.significant for c in cmp.changes)
    assert "No change beyond the noise." in compare_out.headline(cmp)
    assert any(compare_out.verdict(c).startswith("not significant (p ") for c in cmp.changes)  # within noise
    p = capbench("compare", str(a), str(b), "--fail-on-regression", "0", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    assert "No change beyond the noise." in p.stdout and "t-test at 95 %" in p.stdout


def test_a_shift_beyond_the_noise_is_judged(tmp_path):
    a, b = simulated_run(tmp_path / "a", seed=1), simulated_run(tmp_path / "b", seed=2, pcap_factor=0.9)
    cmp = compare.compare(load_run(a), load_run(b))
    rx = [c for c in cmp.changes if c.metric.name == "rx_pps"]
    assert {c.key.series.backend for c in rx if c.significant} == {"pcap"}
    assert all(c.worse and c.rel_pct == pytest.approx(-10, abs=3) for c in rx if c.significant)
    assert len([c for c in rx if c.significant]) >= 3  # of pcap's 4 measurements
    assert {c.key.series.backend for c in cmp.regressions(5)} == {"pcap"}
    p = capbench("compare", str(a), str(b), "--fail-on-regression", "5", "--out", str(tmp_path / "o"))
    assert p.returncode == 1 and "worse by more than 5 %" in p.stderr


def test_a_shift_within_the_noise_is_not_significant(tmp_path):
    a, b = simulated_run(tmp_path / "a", seed=1, repeat=3), simulated_run(tmp_path / "b", seed=2, pcap_factor=0.99,
                                                                        repeat=3)
    cmp = compare.compare(load_run(a), load_run(b))
    pcap = [c for c in cmp.changes if c.metric.name == "rx_pps" and c.key.series.backend == "pcap"]
    assert pcap and not any(c.significant for c in cmp.changes)
    verdicts = {compare_out.verdict(c).split(" (p ")[0] for c in pcap}
    assert verdicts <= {"not significant", "no change (under 0.1 %)"} and "not significant" in verdicts


def test_without_repetitions_nothing_is_judged_unless_a_threshold_is_given(tmp_path):
    a, b = simulated_run(tmp_path / "a", seed=1, repeat=1), simulated_run(tmp_path / "b", seed=2, pcap_factor=0.9,
                                                                        repeat=1)
    cmp = compare.compare(load_run(a), load_run(b))
    assert not cmp.judged and not any(c.significant for c in cmp.changes)
    assert "there is no noise estimate" in cmp.noise_rule()
    p = capbench("compare", str(a), str(b), "--fail-on-regression", "5", "--out", str(tmp_path / "o"))
    assert p.returncode == 0 and "nothing was judged" in p.stderr
    judged = compare.compare(load_run(a), load_run(b), threshold_pct=5)
    worse = [c for c in judged.changes if c.significant and c.worse and c.metric.name == "rx_pps"]
    assert {c.key.series.backend for c in worse} == {"pcap"} and len(worse) == 4
    assert "below threshold" in {compare_out.verdict(c) for c in judged.changes}


def test_a_cpu_load_must_move_a_few_points(tmp_path):
    from records import make_result
    from report_files import write_run

    def run(name, app):
        return load_run(write_run(tmp_path / name, [make_result(app_cpu_pct=x, repeat=i + 1) for i, x in
                                                    enumerate(app)]))

    a = run("a", [40.0, 40.1, 40.2, 40.1])
    small = compare.compare(a, run("b", [42.0, 42.1, 42.2, 42.1]))  # consistent, but 2 points
    app = next(c for c in small.changes if c.metric.name == "app_cpu_pct")
    assert app.p is None and not app.significant and compare_out.verdict(app) == "no change (under 3 pts)"
    big = compare.compare(a, run("c", [45.0, 45.1, 45.2, 45.1]))
    assert next(c for c in big.changes if c.metric.name == "app_cpu_pct").significant


def test_holm_weighs_each_p_value_against_the_number_of_figures():
    import dataclasses

    from capbench.report import keys
    from report_files import trial

    c = compare.judge(keys.settings_key(trial()), stats.METRICS["rx_pps"], stats.stat_of([1.0, 2.0]),
                      stats.stat_of([3.0, 4.0]), None)
    untested = dataclasses.replace(c, p=None)
    out = compare.holm([dataclasses.replace(c, p=p) for p in (0.01, 0.04, 0.03, 0.005)] + [untested])
    assert [x.p for x in out[:4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])  # ×3, max(×1, before), ×2, ×4
    assert [x.significant for x in out] == [True, False, False, True, False]
