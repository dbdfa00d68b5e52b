import json

import pytest
from capbench.errors import RunError, Terminated, UsageError
from capbench.campaign.results import RUN_FILE, TRIALS_FILE, RunWriter, machine_info, read_run, read_trials, scan_trials
from capbench.trial.record import TRIAL_SCHEMA
from records import make_result


def test_write_and_read_back(tmp_path):
    settings = {"backends": ["pcap"], "sizes": [64, 1518], "duration_s": 5.0}
    writer = RunWriter.create(tmp_path / "results", settings, command=["capbench", "run"])
    assert writer.path.parent == tmp_path / "results"
    assert read_run(writer.path)["status"] == "running"
    a, b = make_result(frame_len=64), make_result(frame_len=1518, sent=406_370, received=406_000)
    writer.append(a)
    # Flushed after each trial: a crash keeps what finished.
    assert len((writer.path / TRIALS_FILE).read_text().splitlines()) == 1
    writer.append(b)
    writer.finish()
    assert read_trials(writer.path) == [a, b]
    assert read_trials(writer.path / TRIALS_FILE) == [a, b]
    meta = read_run(writer.path)
    assert meta["status"] == "complete" and meta["trials"] == 2
    assert meta["settings"] == settings
    assert meta["command"] == ["capbench", "run"]
    for key in ("schema", "kernel", "cpu_model", "cores", "capbench_version", "git_commit", "python",
                "started_at", "ended_at"):
        assert meta[key] not in (None, ""), key


def test_each_line_is_one_json_object(tmp_path):
    with RunWriter.create(tmp_path, {}) as writer:
        writer.append(make_result())
    line = (writer.path / TRIALS_FILE).read_text()
    assert line.count("\n") == 1
    assert json.loads(line)["schema"] == TRIAL_SCHEMA


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt, "interrupted"), (Terminated, "interrupted"),
                                         (RunError, "failed")])
def test_status_records_how_the_run_ended(tmp_path, exc, status):
    with pytest.raises(exc):
        with RunWriter.create(tmp_path, {}) as writer:
            writer.append(make_result())
            raise exc("stop")
    meta = json.loads((writer.path / RUN_FILE).read_text())
    assert meta["status"] == status and meta["trials"] == 1 and meta["ended_at"]


def test_two_runs_in_one_second_get_two_directories(tmp_path):
    a = RunWriter.create(tmp_path, {})
    b = RunWriter.create(tmp_path, {})
    assert a.path != b.path
    a.finish()
    b.finish()


def test_bad_result_files(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        read_trials(tmp_path / "nothing")
    (tmp_path / TRIALS_FILE).write_text('{"schema": 1, "backend": "pcap"\n')
    with pytest.raises(RunError, match="not JSON"):
        read_trials(tmp_path)
    (tmp_path / TRIALS_FILE).write_text('{"schema": 99}\n')
    with pytest.raises(RunError, match="schema 99"):
        read_trials(tmp_path)
    (tmp_path / TRIALS_FILE).write_text('{"schema": 1, "backend": "pcap"}\n')
    with pytest.raises(RunError, match="not a capbench trial record"):
        read_trials(tmp_path)


def test_machine_info():
    info = machine_info()
    assert info["cores"] >= 1
    assert info["kernel"]["release"]
    assert isinstance(info["git_commit"], str)


def test_scan_skips_and_counts_what_it_cannot_read(tmp_path):
    a, b = make_result(frame_len=64), make_result(frame_len=1518, sent=406_370)
    lines = [json.dumps(r.to_record()) for r in (a, b)]
    (tmp_path / TRIALS_FILE).write_text(lines[0] + "\n" + '{"schema": 99}\n' + "garbage\n" + lines[1] + "\n"
                                        + lines[1][:50])  # the last line cut by a crash
    scan = scan_trials(tmp_path)
    assert scan.trials == [a, b]
    assert [r["frame_len"] for r in scan.records] == [64, 1518]
    assert [(s.line, s.kind) for s in scan.skipped] == [(2, "schema"), (3, "corrupt"), (5, "truncated")]
    assert scan.skipped[2].message.startswith(f"{tmp_path / TRIALS_FILE}:5: not JSON")
    with pytest.raises(RunError, match=":2: trial schema 99"):
        read_trials(tmp_path)  # strict: the first bad line fails


@pytest.mark.parametrize("error, status, kept", [
    (RunError("capbench-cap failed"), "failed", True),  # the run.json is the record of the failure
    (UsageError("unknown interface"), "refused", False),  # bad input leaves nothing behind
    (KeyboardInterrupt(), "interrupted", False),
])
def test_a_run_with_no_result_keeps_its_folder_only_for_a_failure(tmp_path, error, status, kept):
    from capbench.campaign import runner

    writer = RunWriter.create(tmp_path / "results", {})
    with pytest.raises(type(error)):
        with writer:
            raise error
    assert json.loads((writer.path / "run.json").read_text())["status"] == status
    runner.remove_empty_run(writer, [tmp_path / "results"])
    assert writer.path.exists() == kept
    assert (tmp_path / "results").exists() == kept
