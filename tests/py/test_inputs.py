"""Issue 15: every file capbench reads from a user's path is a regular file of bounded size, read as
UTF-8, and every trial record is checked before it is shown: one line (exit status 2) or a note,
never a hang, a runaway read, a traceback or an impossible record shown as data."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from capbench import inputs
from capbench.binaries import find_program
from capbench.campaign import matrix as campaign
from capbench.cli.run import recorded_apps_files
from capbench.declared import backend_names
from capbench.errors import UsageError
from capbench.rates import MAX_DURATION_S, parse_duration, parse_profile, parse_rate
from capbench.report import writer
from capbench.report.load import load_run
from capbench.campaign.results import (RUN_FILE, SEARCHES_FILE, TRIALS_FILE, RunWriter, read_outcomes, read_run,
                              scan_trials)
from capbench.trial.record import record_problem
from report_files import FIXTURE
from inproc import capbench_inproc as capbench
from test_cli import PYTHON_DIR, assert_usage_error

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
    ({"layers": [{"layer": "socket", "counter": "its drops", "packets": -5}]}, "below zero"),
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


# --- issue 27: files are read only when the user who runs capbench may read them -------------
#
# The setuid case, made real: a process whose real uid is another user's and whose effective uid is
# root's holds every capability, as a setuid-root or file-capability install of capbench would (and
# as an ambient grant of dac_override does for its own user: tests/e2e/test_e2e_input_privilege.py).
# open() would open anything; only the real uid's answer may count.

OTHER_UID = 65534
SECRET = "cbin-secret-line-4f1d"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a real uid other than the effective one needs root")


def as_other_real_user(argv: list[str]) -> subprocess.CompletedProcess:
    """`argv` with real uid OTHER_UID and effective uid 0: exec() keeps both, and every capability."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, PYTHONPATH=str(PYTHON_DIR)),
                          preexec_fn=lambda: os.setresuid(OTHER_UID, 0, 0))


def python_as_other_real_user(code: str) -> str:
    """What `code` prints, run by Python as as_other_real_user; any traceback fails."""
    p = as_other_real_user([sys.executable, "-c", code])
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p.stdout


@pytest.fixture
def open_dir():
    """A folder every user may search, outside pytest's own (which is root's alone), removed after."""
    path = Path(tempfile.mkdtemp(prefix="cbin-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def secret(open_dir):
    """A root-only file (0600) whose first line is SECRET, as a dist: file would be."""
    path = open_dir / "secret.csv"
    path.write_text(f"{SECRET}\n64,1\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def theirs(open_dir):
    """A file the other user may read: a dist: file with a bad first line."""
    path = open_dir / "theirs.csv"
    path.write_text("x\n64,1\n")
    path.chmod(0o644)
    return path


REFUSE = """
from capbench import inputs
from capbench.errors import UsageError
try:
    {call}
    print("read")
except UsageError as e:
    print(e)
"""


@needs_root
@pytest.mark.parametrize("call", ["inputs.read_bytes({path!r}, what='campaign', limit=100)",
                                  "inputs.read_text({path!r}, what='campaign', limit=100, missing_ok=True)",
                                  "inputs.check_readable({path!r}, what='dist: file')"])
def test_a_file_the_real_user_may_not_read_is_refused(secret, call):
    said = python_as_other_real_user(REFUSE.format(call=call.format(path=str(secret))))
    assert said.strip().startswith(f"cannot read ") and repr(str(secret)) in said, said
    assert f"permission denied to uid {OTHER_UID}, who runs capbench" in said and SECRET not in said


@needs_root
def test_a_file_the_real_user_may_read_is_read(theirs):
    said = python_as_other_real_user(REFUSE.format(call=f"inputs.read_text({str(theirs)!r}, what='x', limit=100)"))
    assert said.strip() == "read"


@needs_root
def test_a_missing_file_in_a_folder_closed_to_the_user_is_not_told_missing(open_dir):
    closed = open_dir / "closed"
    closed.mkdir(mode=0o700)
    (closed / "here").write_text("x")
    for name in ("here", "nowhere"):  # the same answer: nothing is learnt of what the folder holds
        said = python_as_other_real_user(REFUSE.format(
            call=f"inputs.read_bytes({str(closed / name)!r}, what='campaign', limit=9, missing_ok=True)"))
        assert "permission denied to uid" in said and "No such file" not in said, said


@needs_root
def test_what_was_opened_is_judged_not_the_name_checked(secret):
    # A name swapped after the path was checked (a link to /etc/shadow planted in between): here the
    # path check is made to say yes, so only the check of the opened descriptor stands.
    code = ("from capbench import inputs\ninputs._user_may_read_path = lambda *a, **k: True\n"
            + REFUSE.format(call=f"inputs.read_bytes({str(secret)!r}, what='campaign', limit=100)"))
    said = python_as_other_real_user(code)
    assert "permission denied to uid" in said and SECRET not in said, said


def test_a_nul_byte_in_a_path_to_read():
    with pytest.raises(UsageError, match="a path cannot hold a NUL byte"):
        inputs.read_bytes("/etc/hostname\0/x", what="campaign", limit=100)


@needs_root
@pytest.mark.parametrize("args", [["--size", "dist:{}"], ["--size", "trace:{}"], ["--replay", "{}"]])
def test_the_generator_refuses_a_file_the_real_user_may_not_read(secret, args):
    argv = [str(find_program("capbench-gen")), "--check", "--mtu", "1500", "--rate", "1kpps", "--dst-mac",
            "02:cb:00:00:00:02", *(a.format(secret) for a in args)]
    p = as_other_real_user(argv)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert str(secret) in p.stderr and f"permission denied to uid {OTHER_UID}" in p.stderr, p.stderr
    assert SECRET not in p.stdout + p.stderr


@needs_root
def test_the_counter_refuses_to_decode_a_file_the_real_user_may_not_read(secret):
    p = as_other_real_user([str(find_program("capbench-cap")), "--read", str(secret)])
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"permission denied to uid {OTHER_UID}" in p.stderr and SECRET not in p.stdout + p.stderr


@needs_root
def test_capbench_refuses_a_dist_file_before_the_generator_sees_it(secret):
    p = as_other_real_user([sys.executable, "-m", "capbench", "run", "--sizes", f"dist:{secret}"])
    assert_usage_error(p, "dist: file", str(secret), f"permission denied to uid {OTHER_UID}")
    assert SECRET not in p.stdout + p.stderr


# --- issue 27: a NUL byte or a word too long for a command is one line at the file's edge -------

NUL_WORD = "x\0y"
LONG_WORD = "A" * 200_000


@pytest.mark.parametrize("words, said", [
    (["tcpdump", NUL_WORD], "word 2 holds a NUL byte"),
    (["tcpdump", LONG_WORD], f"word 2 is 200,000 bytes long, more than the {inputs.WORD_MAX_BYTES:,}"),
    (["tcpdump", "é" * (inputs.WORD_MAX_BYTES // 2 + 1)], "word 2 is 4,098 bytes long"),  # bytes, not characters
    (["w" * 4000] * 9, f"its words take 36,009 bytes, more than the {inputs.COMMAND_MAX_BYTES:,}"),
])
def test_words_a_command_cannot_take(words, said):
    with pytest.raises(UsageError, match=re.escape(f"f.toml key: {said}")):
        inputs.check_words(words, "f.toml key")


def test_words_within_the_bounds():
    inputs.check_words(["a" * inputs.WORD_MAX_BYTES, "b"], "x")
    inputs.check_words(["w" * 4000] * 8, "x")


def toml_string(text: str) -> str:
    return json.dumps(text)  # a TOML basic string: \u0000 is TOML's escape for NUL too


ADAPTER = '[mydump]\ncommand = {command}\nfile_format = "pcap"\n{extra}'


@pytest.mark.parametrize("command, extra, said", [
    (f"tcpdump -i {{iface}} -w {{out}} {NUL_WORD}", "", "[mydump]: adapter 'mydump': command holds a NUL byte"),
    (f"tcpdump -i {{iface}} -w {{out}} {LONG_WORD}", "", "command is 200,028 bytes long, more than the 32,768"),
    (f"tcpdump -i {{iface}} -w {{out}} {'A' * 5000}", "", "command: word 6 is 5,000 bytes long, more than the 4,096"),
    ("tcpdump -i {iface} -w {out}", f"post = {toml_string('racount ' + NUL_WORD)}\n", "post holds a NUL byte"),
])
def test_an_adapters_file_with_a_word_no_command_takes(tmp_path, command, extra, said):
    path = tmp_path / "apps.toml"
    path.write_text(ADAPTER.format(command=toml_string(command), extra=extra))
    p = capbench("run", "--apps-file", str(path), "--backends", "mydump", "--sizes", "64")
    assert_usage_error(p, str(path), said)


@pytest.mark.parametrize("table, said", [
    ('apps = {{mydump = {}}}\nbackends = ["mydump"]', "line 3 [campaign]: apps mydump holds a NUL byte"),
    ('backend_args = {{fanout = {}}}\nbackends = ["fanout"]', "line 3 [campaign]: backend_args fanout holds a NUL byte"),
])
def test_a_campaign_with_a_word_no_command_takes(tmp_path, table, said):
    path = tmp_path / "c.toml"
    command = f"tcpdump -i {{iface}} -w {{out}} {NUL_WORD}" if "apps" in table else f"--workers 2 --x y {NUL_WORD}"
    path.write_text("[campaign]\nsizes = \"64\"\n" + table.format(toml_string(command)) + "\n")
    assert_usage_error(capbench("run", "--campaign", str(path)), str(path), said)


def test_backend_args_too_long_from_the_command_line():
    assert_usage_error(capbench("run", "--backends", "fanout", "--backend-args", "fanout=--workers " + "9" * 5000),
                       "--backend-args for fanout: word 2 is 5,000 bytes long")


def test_an_app_too_long_from_the_command_line():
    assert_usage_error(capbench("run", "--backends", "mydump", "--app", "mydump=tcpdump -i {iface} " + "A" * 40_000),
                       "--app mydump is 40,019 bytes long, more than the 32,768")


def test_a_campaign_app_too_long(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nsizes = "64"\nbackends = ["mydump"]\n'
                    f'apps = {{mydump = "tcpdump -i {{iface}} -w {{out}} {LONG_WORD}"}}\n')
    assert_usage_error(capbench("run", "--campaign", str(path)), "line 4 [campaign]: apps mydump is 200,028 bytes long")


TOPOLOGY = """[hosts.s1]
ssh = "root@s1"
{host}
[generator]
host = "local"
iface = "eth1"
[[sensor]]
host = "s1"
iface = "eth2"
backends = ["pcap"]
"""


@pytest.mark.parametrize("host, said", [
    (f"capbench = {toml_string('capbench ' + NUL_WORD)}", "line 3 [hosts.s1]: capbench: its command holds a NUL"),
    (f"capbench = {toml_string('capbench ' + LONG_WORD)}", "line 3 [hosts.s1]: capbench: its command is 200,009 bytes"),
    (f"ssh_config = {toml_string('/etc/' + NUL_WORD)}", "line 3 [hosts.s1]: ssh_config: '/etc/x\\x00y': give the absolute path"),
    (f"ssh_options = [{toml_string('Port=' + '2' * 5000)}]", "line 3 [hosts.s1]: ssh_options: its value: word 1 is 5,005"),
    (f"build_dir = {toml_string('/' + 'b' * 5000)}", "line 3 [hosts.s1]: build_dir: its value: word 1 is 5,001"),
])
def test_a_topology_with_a_word_no_command_takes(tmp_path, host, said):
    path = tmp_path / "t.toml"
    path.write_text(TOPOLOGY.format(host=host))
    assert_usage_error(capbench("run", "--topology", str(path)), said)


@needs_root
def test_a_topology_whose_ssh_config_the_user_may_not_read(open_dir, secret):
    path = open_dir / "t.toml"
    path.write_text(TOPOLOGY.format(host=f"ssh_config = {toml_string(str(secret))}"))
    path.chmod(0o644)
    p = as_other_real_user([sys.executable, "-m", "capbench", "run", "--topology", str(path)])
    assert_usage_error(p, "line 3 [hosts.s1]: ssh_config", "permission denied to uid", str(secret))
    assert SECRET not in p.stdout + p.stderr


def test_a_child_that_cannot_start_for_its_arguments_is_one_line():
    # What capbench does not read from a file (a value given to `capbench gen` directly) reaches the
    # kernel, whose execve() refuses an argument above MAX_ARG_STRLEN (128 KiB) with E2BIG.
    p = capbench("gen", "--check", "--rate", "1kpps", "--dst-mac", "02:cb:00:00:00:02", "--size", LONG_WORD)
    assert_usage_error(p, "Argument list too long", "E2BIG")


# --- issue 27: apps_files are taken from the campaign file's folder -------------------------


def test_apps_files_resolve_against_the_campaign_folder(tmp_path, monkeypatch):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "my-apps.toml").write_text(ADAPTER.format(command='"tcpdump -i {iface} -w {out}"', extra=""))
    (tmp_path / "lab" / "c.toml").write_text('[campaign]\nsizes = "64"\nbackends = ["mydump"]\n'
                                             'apps_files = ["my-apps.toml"]\n')
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    c = campaign.load(Path("../lab/c.toml"), backends_known=backend_names())
    assert c.apps_files == (str(tmp_path / "lab" / "my-apps.toml"),) and "mydump" in c.programs
    (tmp_path / "elsewhere" / "my-apps.toml").write_text("not = [toml")  # the working directory's: never read
    assert "mydump" in campaign.load(tmp_path / "lab" / "c.toml", backends_known=backend_names()).programs


def test_a_resumed_campaign_reads_the_adapter_files_its_run_read(tmp_path):
    (tmp_path / "my-apps.toml").write_text(ADAPTER.format(command='"tcpdump -i {iface} -w {out}"', extra=""))
    text = '[campaign]\nsizes = "64"\nbackends = ["mydump"]\napps_files = ["my-apps.toml"]\n'
    first = campaign.loads(text, tmp_path / "c.toml", backends_known=backend_names())
    meta = json.loads(json.dumps({"settings": {"campaign": {"apps_files": first.apps_files}}}))  # as run.json
    again = campaign.loads(text, tmp_path / "results" / "run" / "campaign.toml", backends_known=backend_names(),
                           apps_files=recorded_apps_files(meta))
    assert again.apps_files == first.apps_files == (str(tmp_path / "my-apps.toml"),)
    assert recorded_apps_files({"settings": {"campaign": {"apps_files": [1]}}}) is None


def test_the_docs_state_the_bounds_of_a_command():
    text = " ".join((PYTHON_DIR.parent / "docs" / "apps.md").read_text().split())
    assert (f"at most {inputs.WORD_MAX_BYTES:,} bytes in one word and {inputs.COMMAND_MAX_BYTES // 1024} KiB in all"
            in text)
