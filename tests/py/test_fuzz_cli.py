"""Fuzz: `capbench` argv as a whole, for what runs without root or a network: `report` and
`compare` end in exit status 2 with one line for every bad input; `run` is parsed and its
campaign read and checked (the steps before it needs root: nothing is run here)."""

import contextlib
import io
import json
import os

from capbench.cli.parser import build_parser
from capbench.cli.run import _campaign_of
from capbench.testbed import host_sysctl
from capbench.errors import UsageError
from capbench.rates import parse_duration
from fuzzing import clean, examples, no_hang, one_line, scratch_dir
from hypothesis import example, given, settings
from hypothesis import strategies as st
from inproc import capbench_inproc

DIR = scratch_dir("capbench-fuzz-cli-")


def _paths() -> list[str]:
    """Paths of every kind a user could give, none of them a run a report can be drawn of."""
    fifo = DIR / "fifo"
    os.mkfifo(fifo)
    empty = DIR / "empty"
    empty.mkdir()
    bad = DIR / "bad-run"
    bad.mkdir()
    (bad / "trials.jsonl").write_bytes(b'{"schema": 1, "sent": -1}\n\xff\n')
    (bad / "run.json").write_bytes(b"\xff")
    fifo_run = DIR / "fifo-run"
    fifo_run.mkdir()
    os.mkfifo(fifo_run / "trials.jsonl")
    live = DIR / "resumable"
    live.mkdir()
    (live / "run.json").write_text(json.dumps({"schema": 1, "status": "interrupted",
                                               "command": ["capbench", "run", "--duration", "604801"]}))
    (live / "trials.jsonl").write_text("")
    toml = DIR / "c.toml"
    toml.write_text('[campaign]\nduration = "1e11"\n')
    good = DIR / "good.toml"
    good.write_text('[campaign]\nbackends = ["pcap"]\nsizes = [64]\n')
    return [str(p) for p in (fifo, empty, bad, fifo_run, live, toml, good, DIR / "none", bad / "run.json")] + [
        "/dev/zero", "/dev/urandom", "/tmp/" + "a" * 5000, "", "-", "/"]


PATHS = _paths()
VALUES = st.one_of(st.sampled_from(["0", "1", "-1", "inf", "nan", "1e400", "5", "1e11", "100000000000", "64",
                                    "64,1518", "seed", "dist:" + PATHS[0], "trace:/dev/zero", "max", "50%", "2gpps",
                                    "pcap", "afp-v3,pcap", "iperf", "mlr", "A:A", "1g", "4M", "9" * 500]),
                   st.sampled_from(PATHS), st.text(max_size=12))
RUN_FLAGS = ["--method", "--backends", "--sizes", "--link", "--rate", "--duration", "--trial", "--precision",
             "--loss-tolerance", "--steps", "--pause", "--engine", "--pin", "--gen-cpu", "--rx-cpu", "--cap-cpu",
             "--app-load", "--procs", "--backend-args", "--proc-cpus", "--groups", "--group-size", "--group-gap",
             "--ring", "--repeat", "--campaign", "--resume", "--backlog", "--settle", "--rx-mode", "--napi-sched"]
FLAG_ARGS = st.lists(st.tuples(st.sampled_from(RUN_FLAGS), VALUES), max_size=4).map(
    lambda pairs: [x for pair in pairs for x in pair])


def run_up_to_root(argv: list[str]):
    """What `capbench run` does before it needs root: parse, read and check the campaign, the options."""
    args = build_parser().parse_args(argv)
    c, _, _ = _campaign_of(args)
    parse_duration(args.settle, what="--settle", allow_zero=True)
    if args.backlog is not None:
        host_sysctl.check_backlog(args.backlog)
    return c


@given(FLAG_ARGS, st.lists(st.text(max_size=8), max_size=1))
@example(["--campaign", "/dev/zero"], [])
@example(["--resume", PATHS[2]], [])  # run.json not UTF-8 under --resume
@example(["--duration", "100000000000"], [])
@example(["--campaign", "/tmp/" + "a" * 5000], [])
@example(["--resume", "/tmp/" + "a" * 5000], [])  # Path.exists() raised ENAMETOOLONG: a traceback
def test_fuzz_run_argv(flags, extra):
    argv = ["run", *flags, *extra]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            clean(lambda: run_up_to_root(argv))
        except SystemExit as e:  # argparse's own exit: only for --help or --version
            assert e.code == 0 and ({"-h", "--help", "--version"} & set(argv)), (e.code, argv)


def assert_one_line_exit_2(p) -> None:
    assert p.returncode == 2, (p.returncode, p.args, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("capbench: "), p.stderr
    one_line(lines[0])


COMPARE_OPTIONS = st.lists(st.tuples(st.sampled_from(["--threshold", "--fail-on-regression", "--out"]), VALUES),
                           max_size=2).map(lambda pairs: [x for pair in pairs for x in pair])


# Half the profile's inputs: each builds capbench's whole parser (8 ms), and the choices are few
# (PATHS x PATHS x the options).
@settings(max_examples=examples(0.5))
@given(st.sampled_from(PATHS), st.sampled_from(PATHS), COMPARE_OPTIONS, st.sampled_from(["report", "compare"]))
@example(PATHS[1], PATHS[1], ["--fail-on-regression", "inf"], "compare")
@example("/tmp/" + "a" * 5000, PATHS[1], [], "report")
def test_fuzz_report_and_compare_argv(a, b, options, command):
    argv = [command, a, *([b] if command == "compare" else []), *[o for o in options if command == "compare"
                                                                    or not o.startswith("--")]]
    with no_hang():
        try:
            p = capbench_inproc(*argv)
        except SystemExit as e:
            assert e.code == 0 and ({"-h", "--help", "--version"} & set(argv)), (e.code, argv)
            return
    assert_one_line_exit_2(p)


def test_the_paths_reach_the_readers():
    """The harness's paths are refused by the readers, not by argparse alone."""
    p = capbench_inproc("report", PATHS[3])
    assert_one_line_exit_2(p)
    assert "FIFO" in p.stderr
    assert isinstance(clean(lambda: run_up_to_root(["run", "--campaign", PATHS[6]])), object)
    assert isinstance(clean(lambda: run_up_to_root(["run", "--campaign", PATHS[5]])), UsageError)
