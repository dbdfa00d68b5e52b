"""Bad input to `capbench report`: what can be drawn is drawn, else one line and exit status 2."""

import json
import shutil

import pytest
from capbench.report.load import load_run
from capbench.campaign.results import scan_trials
from report_files import FIXTURE
from test_cli import assert_usage_error, capbench


def cut_last_line(run):
    """What a crash while writing leaves: the last record cut in the middle, no newline."""
    path = run / "trials.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 400])


@pytest.fixture
def run(tmp_path):
    dest = tmp_path / "run"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_truncated_trials_are_reported_and_counted(run):
    cut_last_line(run)
    scan = scan_trials(run)
    assert len(scan.trials) == 5 and [(s.line, s.kind) for s in scan.skipped] == [(6, "truncated")]
    assert load_run(run).notes[0] == "1 line of trials.jsonl skipped: line 6 cut short (a crash while writing)."
    p = capbench("report", str(run))
    assert p.returncode == 0, p.stderr
    assert "capbench: 1 line of trials.jsonl skipped: line 6 cut short" in p.stderr
    assert "Traceback" not in p.stderr
    assert (run / "report" / "report.html").exists()
    assert "line 6 cut short" in (run / "report" / "report.html").read_text()


def test_a_corrupt_line_in_the_middle_is_skipped(run):
    lines = (run / "trials.jsonl").read_text().splitlines(keepends=True)
    lines[2] = "}{ not json\n"
    (run / "trials.jsonl").write_text("".join(lines))
    assert load_run(run).notes[0] == "1 line of trials.jsonl skipped: line 3 unreadable."


def test_folder_without_results(tmp_path):
    assert_usage_error(capbench("report", str(tmp_path)), "holds no results", "capbench run")


def test_run_without_trials(run):
    (run / "trials.jsonl").write_text("")
    assert_usage_error(capbench("report", str(run)), "holds no trial", "status complete")
    (run / "trials.jsonl").unlink()
    assert_usage_error(capbench("report", str(run)), "no trials.jsonl")


def test_only_a_cut_line(run):
    (run / "trials.jsonl").write_text('{"schema": 1, "backend": "pc')
    assert_usage_error(capbench("report", str(run)), "no readable trial", "line 1 cut short")


def test_unknown_schema_version(run):
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps(meta | {"schema": 7, "capbench_version": "9.0"}))
    assert_usage_error(capbench("report", str(run)), "schema 7", "capbench 9.0", "reads schema 1")


def test_unknown_schema_of_every_trial(run):
    (run / "trials.jsonl").write_text('{"schema": 3, "backend": "pcap"}\n')
    assert_usage_error(capbench("report", str(run)), "trial schema 3", "reads 1 to 2")


def test_missing_run_json_still_draws(run):
    (run / "run.json").unlink()
    p = capbench("report", str(run))
    assert p.returncode == 0, p.stderr
    assert "run.json is missing" in p.stderr


def test_a_report_folder_that_cannot_be_written(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_usage_error(capbench("report", str(run), "--out", str(blocker / "report")), "cannot write the report",
                       "--out")
    p = capbench("report", str(run), "--out", str(tmp_path / "elsewhere"))
    assert p.returncode == 0 and (tmp_path / "elsewhere" / "report.html").exists()
    assert not (run / "report").exists()


def test_a_record_with_a_field_of_the_wrong_kind_is_skipped_not_a_traceback(run):
    lines = (run / "trials.jsonl").read_text().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["frame_len"] = None
    lines[1] = json.dumps(record) + "\n"
    (run / "trials.jsonl").write_text("".join(lines))
    scan = scan_trials(run)
    assert [(s.line, s.kind) for s in scan.skipped] == [(2, "invalid")]
    assert "frame_len is null, not int" in scan.skipped[0].message
    p = capbench("report", str(run))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def test_a_cut_line_of_the_search_answers_is_said(tmp_path):
    run = tmp_path / "searches"
    shutil.copytree(FIXTURE.parent / "run-searches-a", run)
    path = run / "searches.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 100])  # a crash while writing the last answer
    notes = load_run(run).notes
    assert any(n.startswith("1 line of searches.jsonl skipped: not JSON (line ") for n in notes), notes


def test_a_run_json_field_of_the_wrong_type_names_the_type_in_words(run):
    """run.json's wrong fields are left out with a note that names the type as a reader writes it
    ("not str"), not as Python prints a class ("not <class 'str'>")."""
    meta = json.loads((run / "run.json").read_text())
    meta["hostname"], meta["trials"] = 5, "six"
    (run / "run.json").write_text(json.dumps(meta))
    notes = load_run(run).notes
    assert any(n.endswith("hostname is 5, not str: left out of the report.") for n in notes), notes
    assert any(n.endswith('trials is "six", not int: left out of the report.') for n in notes), notes
    assert not any("<class" in n for n in notes), notes


def test_a_text_with_a_control_character_is_left_out_not_printed(run):
    """Found by 300 generated run.json files (issue 15's check): a git_commit of "\\x1b[2J" was
    printed raw in the report's first line (it clears the terminal). A text with a control
    character is no text a run writes: left out of run.json's fields, a skipped trial or answer line;
    tab and newline (campaign_toml, error texts) stay."""
    meta = json.loads((run / "run.json").read_text())
    meta["git_commit"], meta["campaign_toml"] = "\x1b[2J", "[campaign]\n\tduration = 1\n"
    (run / "run.json").write_text(json.dumps(meta))
    lines = (run / "trials.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["backend"] = "pcap\r\x1b[31m"
    lines[0] = json.dumps(first)
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")
    (run / "searches.jsonl").write_text(json.dumps({"method": "rfc2544\x08", "backend": "pcap"}) + "\n")
    data = load_run(run)
    assert "git_commit" not in data.meta and data.meta["campaign_toml"] == meta["campaign_toml"]
    assert [s.line for s in data.skipped] == [1] and "control character" in data.skipped[0].why
    assert data.outcomes == [] and any("control character" in n for n in data.notes)
    p = capbench("report", str(run))
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout + p.stderr and "\r" not in p.stdout + p.stderr
