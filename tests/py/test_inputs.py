"""Issue 15: every file capbench reads from a user's path is a regular file of bounded size, read as
UTF-8, and every trial record is checked before it is shown: one line (exit status 2) or a note,
never a hang, a runaway read, a traceback or an impossible record shown as data."""

import json
import os
import shutil

import pytest
from capbench import inputs
from capbench.errors import UsageError
from capbench.rates import MAX_DURATION_S, parse_duration, parse_profile, parse_rate
from capbench.report import writer
from capbench.report.load import load_run
from capbench.campaign.results import (RUN_FILE, SEARCHES_FILE, TRIALS_FILE, RunWriter, read_outcomes, read_run,
                              scan_trials)
from capbench.trial.record import record_problem
from report_files import FIXTURE
from inproc import capbench_inproc as capbench
from test_cli import assert_usage_error

LONG = "/tmp/" + "a" * 5000


@pytest.fixture
def run(tmp_path):
    dest = tmp_path / "run"
    shutil.copytree(FIXTURE, dest)
    return dest


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# --- the reader -------------------------------------------------------------------------


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), ("/dev/urandom", "a character device"),
                                        ("/tmp", "a directory")])
def test_what_is_no_regular_file_is_named(path, kind):
    with pytest.raises(UsageError, match=f"cannot read campaign '{path}': it is {kind}, not a regular file"):
        inputs.read_bytes(path, what="campaign", limit=100)


def test_a_fifo_is_refused_without_blocking(fifo):
    # Opening a FIFO without a writer blocks: the reader must never get that far.
    with pytest.raises(UsageError, match="it is a FIFO"):
        inputs.read_text(fifo, what="campaign", limit=100)


def test_a_file_above_the_limit_is_refused_and_the_limit_said(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * (2 << 20))
    with pytest.raises(UsageError, match="larger than 1 MiB"):
        inputs.read_bytes(big, what="campaign", limit=1 << 20)
    assert inputs.read_bytes(big, what="campaign", limit=2 << 20) == b"x" * (2 << 20)


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"[campaign]\n\nname = '\xff'\n")
    with pytest.raises(UsageError, match=r"c.toml': line 3 is not UTF-8 text \(byte 0xff\)"):
        inputs.read_text(path, what="campaign", limit=100)


def test_a_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"\xef\xbb\xbfa = 1\n")
    assert inputs.read_text(path, what="campaign", limit=100) == "a = 1\n"


def test_an_overlong_path_is_one_short_line():
    with pytest.raises(UsageError) as e:
        inputs.read_bytes(LONG, what="campaign", limit=100)
    text = str(e.value)
    assert "too long" in text and "5,005 characters" in text and len(text) < 400


def test_a_nul_byte_in_a_path():
    with pytest.raises(UsageError, match="NUL"):
        inputs.check_file("/tmp/a\0b", what="dist: file")


def test_a_missing_file_may_be_allowed(tmp_path):
    assert inputs.read_bytes(tmp_path / "none", what="x", limit=1, missing_ok=True) is None
    with pytest.raises(UsageError, match="No such file"):
        inputs.read_bytes(tmp_path / "none", what="x", limit=1)


# --- every reader uses it ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/tmp", LONG])
def test_campaign_that_is_no_regular_file(path):
    assert_usage_error(capbench("run", "--campaign", path), "campaign")


def test_campaign_fifo(fifo):
    assert_usage_error(capbench("run", "--campaign", str(fifo)), "FIFO")


def test_campaign_of_a_huge_integer(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[campaign]\nrepeat = " + "9" * 5000 + "\n")
    assert_usage_error(capbench("run", "--campaign", str(path)), "not valid TOML")


@pytest.mark.parametrize("prefix", ["dist:", "trace:"])
def test_profile_files_must_be_regular(prefix, fifo):
    for path in (str(fifo), "/dev/zero", "/tmp"):
        with pytest.raises(UsageError, match=f"cannot read {prefix} file"):
            parse_profile(prefix + path)
    assert_usage_error(capbench("run", "--sizes", f"dist:{fifo}"), "FIFO")


@pytest.mark.parametrize("name", [TRIALS_FILE, RUN_FILE, SEARCHES_FILE])
def test_a_results_file_that_is_a_fifo(run, name):
    (run / name).unlink(missing_ok=True)
    os.mkfifo(run / name)
    p = capbench("report", str(run), "--out", str(run.parent / "out"))
    assert "Traceback" not in p.stderr
    if name == TRIALS_FILE:  # nothing to draw: one line
        assert_usage_error(p, "FIFO")
    else:  # the trials are drawn, the note says what was not read
        assert p.returncode == 0 and "FIFO" in p.stderr, p.stderr


def test_resume_of_an_overlong_path():
    assert_usage_error(capbench("run", "--resume", LONG), "cannot resume", "too long")


def test_report_and_compare_of_an_overlong_path(run):
    assert_usage_error(capbench("report", LONG), "too long")
    assert_usage_error(capbench("compare", str(run), LONG), "too long")
    assert_usage_error(capbench("report", str(run / RUN_FILE)), "it is a file, not a directory")


def test_resume_of_a_run_json_that_is_not_utf8(run):
    (run / RUN_FILE).write_bytes(b'{"command": ["capbench", "run", "\xff"]}\n')
    assert_usage_error(capbench("run", "--resume", str(run)), "cannot resume", "line 1 is not UTF-8")


def test_resume_of_a_run_whose_trials_are_a_fifo(run):
    meta = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps(meta | {"status": "interrupted"}))
    (run / TRIALS_FILE).unlink()
    os.mkfifo(run / TRIALS_FILE)
    assert_usage_error(capbench("run", "--resume", str(run)), "trials.jsonl", "FIFO")
    with pytest.raises(UsageError, match="FIFO"):
        RunWriter.resume(run)  # cutting a crashed line opened it for writing: that blocked


def test_resume_of_a_run_json_of_wrong_types(run):
    meta = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps(meta | {"status": "interrupted", "testbed": [1, 2]}))
    assert_usage_error(capbench("run", "--resume", str(run)), "cannot resume", "testbed is [1, 2]")
    with pytest.raises(UsageError, match="testbed"):
        read_run(run)


# --- loaders validate, never trust ------------------------------------------------------


def records(run):
    return [json.loads(line) for line in (run / TRIALS_FILE).read_text().splitlines()]


def write_records(run, recs):
    (run / TRIALS_FILE).write_text("".join(json.dumps(r) + "\n" for r in recs))


IMPOSSIBLE = [
    ({"lost": -1e30}, "lost is -1e+30"),
    ({"sent": 0, "delivered": 0, "received": 99_199}, "received 99,199 is above sent 0"),
    ({"sent": 0, "delivered": 0, "received": 99_199, "lost": -99_199, "link_drops": 0, "unexplained": -99_199,
      "loss_pct": 0.0}, "lost is -99199: below zero"),
    ({"rx_pps": float("nan")}, "rx_pps holds nan"),
    ({"app_cpu_pct": float("inf")}, "app_cpu_pct holds inf"),
    ({"socket_drops": -5}, "socket_drops is -5: below zero"),
    ({"sent": "many"}, 'sent is "many", not int'),
    ({"received": 2 ** 70}, "beyond any 64-bit counter"),
    ({"lost": 1}, "lost is 1, but the counts give"),
    ({"loss_pct": 50.0}, "loss_pct is 50.0, but the counts give"),
    ({"proc_received": [1, "x"]}, "proc_received is"),
    ({"latency": {"p50_ns": "fast"}}, "latency is"),
]


@pytest.mark.parametrize("change, why", IMPOSSIBLE)
def test_an_impossible_record_is_an_invalid_line(run, change, why):
    recs = records(run)
    recs[2] |= change
    assert record_problem(recs[2]) is not None and why in record_problem(recs[2])
    write_records(run, recs)
    scan = scan_trials(run)
    assert [(s.line, s.kind) for s in scan.skipped] == [(3, "invalid")]
    assert why in scan.skipped[0].message and f"{TRIALS_FILE}:3:" in scan.skipped[0].message
    assert len(scan.trials) == len(recs) - 1


def test_every_stored_record_is_possible():
    for run in FIXTURE.parent.glob("run-*"):
        assert scan_trials(run).skipped == [], run


def test_impossible_records_are_left_out_of_the_report_and_counted(run):
    recs = records(run)
    recs[0]["lost"] = -1e30
    recs[1] |= {"sent": 0, "delivered": 0, "received": 99_199, "lost": -99_199, "link_drops": 0,
                "unexplained": -99_199, "loss_pct": 0.0}
    recs[2]["rx_pps"] = float("nan")  # would reach matplotlib's axis limits
    write_records(run, recs)
    p = capbench("report", str(run))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    note = "3 lines of trials.jsonl skipped: lines 1, 2, 3 impossible, left out of every table and figure"
    assert note in p.stderr  # the terminal
    out = run / "report"
    assert note in (out / "tables.md").read_text()
    assert note in (out / "report.html").read_text()
    assert "99,199" not in (out / "tables.md").read_text().split(note)[1]  # not a row of any table
    csv = (out / "trials.csv").read_text().splitlines()
    assert len(csv) == 1 + len(recs) - 3
    assert load_run(run).notes[0].startswith(note)


def test_searches_jsonl_with_a_byte_that_is_not_utf8(tmp_path):
    run = tmp_path / "s"
    shutil.copytree(FIXTURE.parent / "run-searches-a", run)
    lines = (run / SEARCHES_FILE).read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"', b'"\xff', 1)
    (run / SEARCHES_FILE).write_bytes(b"".join(lines))
    skipped = []
    assert len(read_outcomes(run, skipped)) == len(lines) - 1 and skipped == [(1, "not UTF-8 text (byte 0xff)")]
    p = capbench("report", str(run))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "1 line of searches.jsonl skipped: not a method answer (line 1: not UTF-8 text (byte 0xff))" in p.stderr


@pytest.mark.parametrize("change", [{"throughput_pps": "fast"}, {"frame_len": "64"}, {"goals": [{"name": 3}]},
                                    {"notes": 5}, {"upper_bound_pps": -1.0}, {"method": None}])
def test_a_method_answer_of_wrong_types_is_left_out(tmp_path, change):
    run = tmp_path / "s"
    shutil.copytree(FIXTURE.parent / "run-searches-a", run)
    outcomes = [json.loads(x) for x in (run / SEARCHES_FILE).read_text().splitlines()]
    outcomes[0] |= change
    (run / SEARCHES_FILE).write_text("".join(json.dumps(o) + "\n" for o in outcomes))
    data = load_run(run)
    assert len(data.outcomes) == len(outcomes) - 1
    assert any("of searches.jsonl skipped: not a method answer (line 1: " in n for n in data.notes), data.notes
    writer.markdown_report(data)
    writer.terminal_tables(data)


@pytest.mark.parametrize("change", [{"command": "capbench run"}, {"kernel": [1]}, {"settings": [1]},
                                    {"testbed": "bed"}, {"sysctls": 5}, {"trials": "six"}, {"cores": 1.5}])
def test_run_json_of_wrong_types_is_a_note(run, change):
    meta = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps(meta | change))
    key = next(iter(change))
    data = load_run(run)
    assert any(f"{key} is" in n and "left out of the report" in n for n in data.notes), data.notes
    writer.report_html(data, [])
    assert writer.metadata(data)


# --- bounded options --------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e400"])
def test_fail_on_regression_must_be_a_finite_percentage(value):
    assert_usage_error(capbench("compare", str(FIXTURE), str(FIXTURE), "--fail-on-regression", value),
                       "--fail-on-regression", "finite percentage")
    assert_usage_error(capbench("compare", str(FIXTURE), str(FIXTURE), "--threshold", value), "--threshold")


@pytest.mark.parametrize("text", ["100000000000", "604801", "99999999999999999999", "10081m", "169h", "9" * 5000])
def test_durations_beyond_a_week_are_refused(text):
    with pytest.raises(UsageError, match="86,400 s"):
        parse_duration(text)


def test_a_week_is_accepted():
    assert parse_duration("86400") == MAX_DURATION_S == parse_duration("24h")


@pytest.mark.parametrize("flag", ["--duration", "--trial", "--pause", "--settle", "--group-gap"])
def test_duration_flags_are_bounded(flag):
    assert_usage_error(capbench("run", flag, "100000000000"), "86,400 s")  # --duration 1e11 overflowed in C
    assert_usage_error(capbench("run", flag, "1e11"), "cannot read")


@pytest.mark.parametrize("text", ["9" * 400 + "pps", "2gpps", "1001g", "9" * 400 + "m"])
def test_rates_are_bounded(text):
    with pytest.raises(UsageError, match="the most capbench offers"):
        parse_rate(text)


@pytest.mark.parametrize("args, words", [
    (["--loss-tolerance", str(10 ** 30)], ["--loss-tolerance", "the most capbench takes"]),
    (["--steps", "100000"], ["--steps", "the most"]),
    (["--groups", str(10 ** 20), "--group-size", "10"], ["--groups"]),
    (["--groups", "1000000", "--group-size", "100000000", "--rate", "1000pps", "--sizes", "64"], ["a day"]),
])
def test_counts_are_bounded(args, words):
    assert_usage_error(capbench("run", *args), *words)
