"""Issue 16, item 2: a method is one object. The registry is complete (every method runs,
estimates, and — for a search — types, writes, reads and words its answer), the CLI's and the
campaign's method lists come from it, and the answers read the lines written before they were
typed (tests/py/fixtures/run-searches-v1, made by that code)."""

import dataclasses
import json
from pathlib import Path

import pytest
from capbench.campaign import plan
from capbench.campaign import matrix as cmod
from capbench.campaign import execute as campaign_run
from capbench.errors import UsageError
from capbench.records import RecordError
from capbench.methods import dispatch, registry
from capbench.methods.method import Figures, Method, MethodAnswer, MethodSettings
from capbench.methods.simulated import SimulatedDevice
from capbench.cli.parser import build_parser
from capbench.rates import parse_rate
from capbench.report.console import outcome_table
from rich.console import Console

FIXTURES = Path(__file__).parent / "fixtures"
V1 = [json.loads(line) for line in (FIXTURES / "run-searches-v1" / "searches.jsonl").read_text().splitlines()]
OLD = [json.loads(line) for name in ("run-searches-a", "run-searches-b")
       for line in (FIXTURES / name / "searches.jsonl").read_text().splitlines()]


# The methods from before the registry. A method added since is its file and a registry line
# (docs/architecture.md): the checks below hold it to the same rules without naming it here.
OLD_METHODS = frozenset({"iperf", "rfc2544", "mlr", "sweep", "back2back", "latency"})


def test_every_method_is_complete():
    assert OLD_METHODS <= set(registry.METHODS)
    for name, m in registry.REGISTRY.items():
        assert isinstance(m, Method) and m.name == name and m.help and "\n" not in m.help
        for own in ("run", "estimate"):
            assert getattr(type(m), own) is not getattr(Method, own), f"{name} has no {own}"
        est = m.estimate(MethodSettings(), 5.0)
        assert est.trials >= 1 and est.seconds > 0
        if m.answer_type is None:
            assert m.takes_profiles and not m.sets_own_load  # iperf: its trial is its result
            continue
        a = m.answer_type
        assert issubclass(a, MethodAnswer) and a.METHOD == name and dataclasses.is_dataclass(a)
        assert a.__dataclass_params__.frozen
        for own in ("text", "figures"):
            assert getattr(a, own) is not getattr(MethodAnswer, own), f"{name}'s answer has no {own}"
        assert m.trial_s is None or m.trial_s > 0


def test_cli_and_campaign_lists_come_from_the_registry():
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith(" run"))
    helps = {a.dest: a.help.replace("%%", "%") for a in run._actions}
    for name, m in registry.REGISTRY.items():
        assert f"{name}: {m.help}" in helps["method"]
    assert dispatch.METHODS == cmod.METHODS == registry.METHODS
    assert "rfc2544 (default 60 s, RFC 2544's minimum)" in helps["trial"] and "sweep (default 10 s)" in helps["trial"]
    with pytest.raises(UsageError, match="unknown method 'fastest': use iperf, rfc2544, mlr, sweep, back2back, "
                                         "latency"):
        cmod.build({"methods": ["fastest"]}, [], backends_known=("pcap",))


def test_the_campaign_checks_read_the_methods_defaults():
    with pytest.raises(UsageError, match="latency trials last at least 1 s"):
        cmod.build({"methods": ["latency"], "trial": "0.5s"}, [], backends_known=("pcap",))
    cmod.build({"methods": ["sweep"], "trial": "0.5s"}, [], backends_known=("pcap",))  # no least for a sweep
    with pytest.raises(UsageError, match="profiles"):
        cmod.build({"methods": ["mlr"], "sizes": "imix:seed"}, [], backends_known=("pcap",))


def test_estimates_follow_the_default_trial_the_method_runs():
    """The latency step runs 60 s trials by default (RFC 2544's): its estimate says so."""
    c = cmod.build({"methods": ["rfc2544", "latency"], "sizes": [64], "backends": ["pcap"]}, [],
                   backends_known=("pcap",))
    rfc, lat = c.steps()
    assert plan.estimate_step(c, lat).seconds == pytest.approx(plan.estimate_step(c, rfc).seconds + 60.8)
    assert plan.estimate_step(c, lat).trials == plan.estimate_step(c, rfc).trials + 1


@pytest.mark.parametrize("line", V1 + OLD, ids=lambda o: f"{o['method']}-{o['backend']}")
def test_old_lines_read_and_round_trip(line):
    """Every line of today's format (no schema: version 1) is read; written again it has the same
    fields and values (plus its schema), and reads back to the same answer."""
    a = registry.answer_from_json(line)
    assert a.method == line["method"] and a.backend == line["backend"] and a.frame_len == line["frame_len"]
    out = a.to_json()
    assert out["schema"] == MethodAnswer.SCHEMA and out["method"] == line["method"]
    for k, v in line.items():
        assert k in out and _within(v, out[k]), k
    assert type(a).from_json(out) == a
    assert type(a).from_json(json.loads(json.dumps(out))) == a
    assert a.text() and isinstance(a.figures((), a.wire_pps), Figures)


def _within(old, new) -> bool:
    """`new` holds every value of `old` (an object may have gained fields a later version writes)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _within(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(_within, old, new))
    return old == new


def test_a_line_from_before_bounded_by_keeps_its_bracket():
    """An RFC 2544 line from before bounded_by names the bracket's upper end lowest_lossy_pps."""
    line = next(o for o in OLD if o["method"] == "rfc2544" and "bounded_by" not in o)
    a = registry.answer_from_json(line)
    assert a.bounded_by is None and a.upper_bound_pps == line["lowest_lossy_pps"]
    f = a.figures((), a.wire_pps)
    assert f.info["bounded_by"] is None and f.info["lowest_lossy_pps"] == line["lowest_lossy_pps"]


def test_a_minimal_version_1_line_reads_with_what_its_readers_assumed():
    a = registry.answer_from_json({"method": "mlr", "backend": "pcap", "frame_len": 64,
                                   "goals": [{"name": "NDR", "lower_bound_pps": 1000.0}]})
    assert a.goals[0].throughput_pps == 1000.0 and a.goals[0].bounded_by is None and a.trials == 0
    assert a.figures((), 1e6).values == {"mlr_NDR_pps": 1000.0}


def test_unknown_methods_and_versions_are_one_clear_line():
    with pytest.raises(UsageError, match="an answer of method 'fastest', which this capbench does not know"):
        registry.answer_from_json({"method": "fastest", "backend": "pcap", "frame_len": 64})
    with pytest.raises(UsageError, match="an answer of method 'iperf'"):
        registry.answer_from_json({"method": "iperf", "backend": "pcap", "frame_len": 64})
    with pytest.raises(RecordError, match=r"^rfc2544 answer schema 99 \(a newer capbench's\), this capbench reads 1 to 3$"):
        registry.answer_from_json(V1[0] | {"schema": 99})
    text = _table([V1[0], {"method": "fastest", "backend": "pcap", "frame_len": 64, "trials": 3}])
    assert "throughput 279,018 pps" in text and "fastest" in text and "not read: an answer of method" in text


def _v2(method: str) -> dict:
    """A line of today's version, of `method`, from the version-1 fixture read and written again."""
    return registry.answer_from_json(next(o for o in V1 if o["method"] == method)).to_json()


@pytest.mark.parametrize("method, change, why", [
    ("rfc2544", {"verified": "yes"}, 'verified is "yes", not bool'),
    ("rfc2544", {"throughput_pps": None}, "throughput_pps is null, not float"),
    ("rfc2544", {"verification_failures_pps": [1.0, "x"]}, 'verification_failures_pps is [1.0, "x"], not'),
    ("back2back", {"longest_frames": [3.5]}, "longest_frames is [3.5], not"),
    ("latency", {"latency": {"p50_ns": "1"}}, 'latency is {"p50_ns": "1"}, not'),
    ("mlr", {"goals": [{"name": "NDR", "loss_ratio": "0"}]}, 'goals[0].loss_ratio is "0", not float'),
    ("mlr", {"goals": [7]}, "goals[0] is 7, not an object"),
    ("sweep", {"points": [{"step": 1, "load_pps": 1.0, "sent": 2.5}]}, "points[0].sent is 2.5, not int"),
    ("sweep", {"step": 5}, "step is 5, not str | None"),
])
def test_a_line_of_this_version_is_read_strictly(method, change, why):
    """Today's version is read as strictly as the trial record: a field of another type, in a goal
    or step too, is one line naming it (an older version's leniency is its upgrade step's)."""
    line = _v2(method) | change
    with pytest.raises(RecordError) as e:
        registry.answer_from_json(line)
    assert str(e.value).startswith(f"{method} answer: {why}") and "\n" not in str(e.value)
    assert e.value.kind == "invalid"
    del line["schema"]  # the same values in a version-1 line: null is what its readers took as 0
    if change.get("throughput_pps", 1) is None:
        assert registry.answer_from_json(line).throughput_pps == 0.0


def test_a_field_every_version_has_is_missing_in_one_line():
    line = _v2("rfc2544")
    del line["throughput_pps"]
    with pytest.raises(RecordError, match=r"^not a capbench rfc2544 answer: .*'throughput_pps'$"):
        registry.answer_from_json(line)
    del line["schema"]  # version 1: its readers took a missing figure as 0
    assert registry.answer_from_json(line).throughput_pps == 0.0


def test_the_version_1_step_fills_what_older_code_left_out():
    """The upgrade step from version 1 (MethodAnswer.from_v1): a field the line lacks or holds as
    null takes its default, else 0, false or empty (None where the field may be None), in the
    goals and steps too; and the result is a line of today's shape, read strictly."""
    line = {"method": "sweep", "backend": "pcap", "frame_len": 64, "trial_s": None, "steps": None,
            "points": [{"step": 1, "load_pps": 10.0, "sent": None, "received": 5}]}
    up = registry.get("sweep").answer_type.from_v1(line)
    assert up["link_bps"] == 0.0 and up["trials"] == 0 and up["short_steps_pps"] == [] and up["bounded_by"] is None
    assert up["steps"] is None and up["trial_s"] is None and up["step"] is None
    assert up["points"][0] | {} == {"step": 1, "load_pps": 10.0, "sent": 0, "received": 5, "lost": 0, "rx_pps": 0.0,
                                    "app_cpu_pct": None, "kernel_cpu_pct": None, "invalid_offered_load": False,
                                    "verdict": ""}
    a = registry.answer_from_json(line)
    assert a.points[0].sent == 0 and a.points[0].received == 5 and a.total_pause_s == 0.0
    assert type(a).from_json(a.to_json()) == a


def test_a_line_of_this_version_with_a_wrong_type_is_one_line_in_the_report(tmp_path):
    import shutil

    from capbench.report.load import load_run

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-searches-v1", run)
    bad = _v2("sweep")
    bad["points"] = [dict(bad["points"][0], sent="many")] + bad["points"][1:]
    with (run / "searches.jsonl").open("a") as f:
        f.write(json.dumps(bad) + "\n")
    data = load_run(run)
    [note] = [n for n in data.notes if "line 11" in n]
    assert 'sweep answer: points[0].sent is "many", not int' in note and "\n" not in note
    assert len(data.outcomes) == len(V1)


def _table(outcomes):
    console = Console(width=400, record=True)
    console.print(outcome_table(outcomes))
    return console.export_text()


@pytest.mark.parametrize("method", [m for m, x in registry.REGISTRY.items() if x.answer_type])
def test_each_answer_round_trips_from_a_run(method):
    trials, outcomes = [], []
    dev = SimulatedDevice(400_000, backend="pcap")
    dispatch.run(MethodSettings(method=method, trial_s=2.0, steps=4), lambda b, s: dev, ["pcap"], (64,),
                 link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0, record=trials.append,
                 record_outcome=outcomes.append, pause=dev.pause)
    [line] = outcomes
    a = registry.answer_from_json(json.loads(json.dumps(line)))
    assert a.to_json() == line and a.trials == len(trials)
    assert registry.answer_from_json(line) == a


# --- the report reads the answers through the registry ------------------------------------


def test_the_report_reads_every_method_of_the_version_1_fixture(tmp_path):
    from capbench.report import answer_tables, answers
    from capbench.report.load import load_run

    run = load_run(FIXTURES / "run-searches-v1")
    assert not run.notes or not any("skipped" in n for n in run.notes)
    found = answers.run_answers(run)
    tabulated = {m.name for m in registry.REGISTRY.values() if m.answer_type and m.report_answer}
    assert {a.method for a in found} == tabulated & OLD_METHODS and tabulated == set(answers.SEARCH_METHODS)
    assert all(a.source == "searches.jsonl" and a.trials for a in found)
    by = {(a.method, a.series.backend): a for a in found}
    assert by["rfc2544", "afp-v3"].generator_bound("rfc2544_pps")  # the generator topped out at 1.2 Mpps
    assert by["rfc2544", "pcap"].bounded_by("rfc2544_pps") == "capture loss"
    assert by["mlr", "pcap"].values["mlr_NDR_pps"] == pytest.approx(300_000, rel=0.01)
    titles = [t.title for t in answer_tables.tables(found)]
    assert [t.split(":")[0] for t in titles] == ["RFC 2544 throughput"] * 2 + ["MLR search (lower bounds)"] * 2 + [
        "Back-to-back (longest lossless burst at wire rate)"] * 2
    for m in registry.REGISTRY.values():  # every layout a method names exists
        assert m.table is None or m.table in answer_tables.LAYOUTS


def test_a_line_of_an_unknown_method_is_one_clear_line_in_the_report(tmp_path):
    import shutil

    from capbench.report.load import load_run

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-searches-v1", run)
    with (run / "searches.jsonl").open("a") as f:
        f.write(json.dumps({"method": "fastest", "backend": "pcap", "frame_len": 64}) + "\n")
    data = load_run(run)
    [note] = [n for n in data.notes if "fastest" in n]
    assert "line 11: an answer of method 'fastest', which this capbench does not know" in note
    assert "\n" not in note and len(data.outcomes) == len(V1)


def test_the_runner_campaign_report_and_compare_name_no_method():
    """They ask the registry: no method's name stands in their code as a string (a docstring aside)."""
    import ast

    root = Path(__file__).parents[2] / "python" / "capbench"
    files = ["campaign/runner.py", "campaign/execute.py", "campaign/plan.py", "report/answers.py",
             "report/answer_tables.py", "report/console.py", "report/summary.py", "report/tables.py",
             "report/tables_md.py", "report/compare.py", "report/compare_out.py", "report/stats.py",
             "report/writer.py"]
    for name in files:
        tree = ast.parse((root / name).read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        named = [(name, n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant)
                 and n.value in registry.METHODS and id(n) not in docs]
        assert not named, named
