"""Records written by earlier capbench versions still load: trials.jsonl lines and run.json as
each version wrote them (tests/py/fixtures), read by the loaders and by `capbench report` and
`capbench compare` in this process.

run-iperf: the first records of schema 1 (written 2026-11-23, before most of today's fields);
run-records-v1: a run of schema 1 with every field of 2026-11-25 (afp-v3 and fanout, 1 and 2
processes, a ring size, 64 B and imix:seed), recorded by a real `capbench run` before records
were typed end to end.
"""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from capbench import records
from capbench.campaign.results import RUN_FILE, RunRecord, RunWriter, load_run_meta, read_run, read_trials, scan_trials
from capbench.errors import UsageError
from capbench.records import RecordError
from capbench.trial.record import NAMED_DROP_FIELDS, TRIAL_SCHEMA, TrialResult, load_trial

from inproc import capbench_inproc
from records import make_result

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OLD_RUNS = ["run-iperf", "run-records-v1"]


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_trials_load_whole(name):
    path = FIXTURES / name
    scan = scan_trials(path)
    lines = (path / "trials.jsonl").read_text().splitlines()
    assert not scan.skipped
    assert len(scan.trials) == len(lines)
    for trial, line in zip(scan.trials, lines):
        record = json.loads(line)
        for key, value in record.items():  # every field written is read back as written
            if key in NAMED_DROP_FIELDS or key == "schema":  # version 2 holds them as rows (layers)
                continue
            got = getattr(trial, key)
            assert got == value or (isinstance(got, tuple) and json.loads(json.dumps(got)) == value), key


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_run_json_loads_whole(name):
    meta = read_run(FIXTURES / name)
    assert meta == json.loads((FIXTURES / name / "run.json").read_text())


@pytest.mark.parametrize("name", OLD_RUNS)
def test_old_runs_report(name, tmp_path):
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    p = capbench_inproc("report", str(run), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert "skipped" not in p.stderr and "left out" not in p.stderr
    assert (tmp_path / "out" / "report.html").exists()


def test_old_runs_compare(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "run-records-v1", a)
    shutil.copytree(FIXTURES / "run-records-v1", b)
    p = capbench_inproc("compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert p.returncode == 0, p.stderr
    assert "capbench:" not in p.stderr
    assert (tmp_path / "cmp" / "compare.html").exists()
    assert len(read_trials(a)) == 8


# --- the records and their loaders ---------------------------------------------------


def _full_trial() -> TrialResult:
    """A trial with every field set away from its default (tuples, nested tuples, dicts)."""
    return make_result(
        sent=1000, received=990, delivered=1000, socket_drops=10, procs=2, proc_cpus=(1, None),
        proc_received=(990, 995), proc_socket_drops=(10, 5), proc_app_cpu_pct=(1.5, 2.5),
        latency={"p50_ns": 1200, "max_ns": 9000}, iat={"p50_ns": 700}, rx_clock="kernel", ring_bytes=1 << 20,
        backend_args="--workers 2", napi_cpus_seen=(1,), cap_cpus_seen=(0, 1), worker_cpus=(1,),
        other_testbeds=("abc123",), loss_layers=(("socket", 10, "PACKET_STATISTICS"),),
        loss_remarks=("a remark",), iface_rx_dropped=3, ring_drops=0, rx_mode="napi", napi_sched="fifo:50",
        method="rfc2544", purpose="search", step="rfc2544|pcap|64|pin=A:A|load=touch|procs=2|rep=1", repeat=2)


def test_trial_record_round_trips_through_json():
    r = _full_trial()
    line = json.dumps(r.to_record())
    back = load_trial(json.loads(line))
    assert back == r and back.raw == r.raw
    assert next(iter(json.loads(line).items())) == ("schema", TRIAL_SCHEMA)  # the version comes first


def test_a_trial_record_without_later_fields_reads_their_defaults_or_the_runs():
    record = {k: v for k, v in make_result().to_record().items() if k not in ("method", "procs", "rx_mode")}
    r = load_trial(record)
    assert (r.method, r.procs, r.rx_mode) == ("iperf", 1, "rps")
    assert load_trial(record, {"method": "mlr"}).method == "mlr"  # run.json's method for such records
    assert load_trial(record | {"method": "sweep"}, {"method": "mlr"}).method == "sweep"


@pytest.mark.parametrize("schema, why", [(TRIAL_SCHEMA + 1, "trial schema 3 (a newer capbench's), this capbench reads 1 to 2"),
                                         (0, "trial schema 0, this capbench reads 1 to 2"),
                                         ("1", 'trial schema "1", this capbench reads 1 to 2'),
                                         (None, "trial schema null, this capbench reads 1 to 2")])
def test_a_trial_record_of_a_version_not_read_is_one_line(schema, why):
    with pytest.raises(RecordError) as e:
        load_trial(make_result().to_record() | {"schema": schema})
    assert (e.value.kind, str(e.value)) == ("schema", why)


def test_a_trial_field_of_the_wrong_type_is_one_line_naming_it():
    with pytest.raises(RecordError) as e:
        load_trial(make_result().to_record() | {"procs": "2"})
    assert (e.value.kind, str(e.value)) == ("invalid", 'procs is "2", not int')
    with pytest.raises(RecordError) as e:
        load_trial(make_result().to_record() | {"lost": 7})
    assert e.value.kind == "invalid" and str(e.value) == "lost is 7, but the counts give 0"


def test_the_account_checks_follow_accounting():
    """record_problem checks each input of accounting.account and each figure it derives."""
    from capbench.trial import accounting
    from capbench.trial import record as trial_record

    derived = {f.name for f in dataclasses.fields(accounting.LossAccount)} - set(trial_record._ACCOUNT_INPUTS)
    assert set(trial_record._ACCOUNT_DERIVED) == derived == {"lost", "link_drops", "unexplained", "loss_pct"}


def test_an_older_version_goes_through_its_upgrade_step():
    """The loader's path for a version 2 (none exists yet): an upgrade step per older version."""

    @dataclasses.dataclass(frozen=True)
    class Rec:
        pps: float
        frames: tuple[int, ...] = ()
        schema: int = 2

    steps = {1: lambda r: {k: v for k, v in r.items() if k != "kpps"} | {"pps": r["kpps"] * 1000}}
    old = records.upgrade({"schema": 1, "kpps": 1.5}, current=2, steps=steps, what="toy")
    assert records.from_json(Rec, old | {"frames": [1, 2]}, "toy") == Rec(1500.0, (1, 2))
    assert records.to_json(Rec(1.0)) == {"schema": 2, "pps": 1.0, "frames": []}  # as JSON holds it
    with pytest.raises(RecordError, match=r"^toy schema 3 \(a newer capbench's\), this capbench reads 1 to 2$"):
        records.upgrade({"schema": 3}, current=2, steps=steps, what="toy")
    with pytest.raises(RecordError, match="not a capbench toy: .*pps"):
        records.from_json(Rec, {"schema": 2}, "toy")


def test_run_record_round_trips(tmp_path):
    w = RunWriter.create(tmp_path, {"campaign": {"name": "x"}}, command=["capbench", "run"])
    w.meta["placements"] = {"A:A": {"gen": 0}}
    w.finish("failed", "it broke")
    meta = read_run(w.path)
    assert meta == json.loads((w.path / RUN_FILE).read_text())
    assert next(iter(meta)) == "schema"
    later = {f.name for f in dataclasses.fields(RunRecord) if f.metadata.get("later")}
    assert set(meta) & later == {"placements", "error"}  # the others are not written until known
    assert RunRecord(**{k: v for k, v in meta.items()}).to_json() == meta


def test_run_json_fields_are_declared_once():
    """Every key a real run wrote (fixture) is a RunRecord field: check_run checks them all."""
    names = {f.name for f in dataclasses.fields(RunRecord)}
    assert set(json.loads((FIXTURES / "run-records-v1" / RUN_FILE).read_text())) <= names


def test_run_json_of_a_newer_version_is_one_line(tmp_path):
    with pytest.raises(UsageError, match=r"schema 2 \(capbench 9\.0\); this capbench .* reads schema 1"):
        load_run_meta({"schema": 2, "capbench_version": "9.0"}, tmp_path)
    meta, wrong = load_run_meta({"status": "complete", "cores": "two"}, tmp_path)  # no schema: version 1
    assert meta == {"status": "complete"} and wrong == [f"{tmp_path / RUN_FILE}: cores is \"two\", not int | None"]


def test_a_run_json_key_with_a_control_character_is_shown_escaped(tmp_path):
    """Found by test_fuzz_run_json: a key holding \\f with a value of the wrong type."""
    meta, wrong = load_run_meta({"\f": float("inf"), "status": "complete"}, tmp_path)
    assert meta == {"status": "complete"} and wrong == [f'{tmp_path / RUN_FILE}: "\\f" holds "\\f", a text with a '
                                                        f'control character']
