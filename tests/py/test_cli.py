"""Bad input through the real command line: one line on stderr, exit status 2, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from capbench.errors import UsageError
from capbench.cli.main import error_line
from capbench.cli.parser import build_parser
from capbench.cli.passthrough import _split_passthrough
from capbench.cli.run import campaign_from_args
from capbench.campaign import plan

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def capbench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = os.environ | {"PYTHONPATH": str(PYTHON_DIR)} | (env or {})
    return subprocess.run([sys.executable, "-m", "capbench", *args], capture_output=True, text=True,
                          env=full_env, timeout=60, stdin=subprocess.DEVNULL)


def assert_usage_error(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("capbench: "), lines[0]
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "--sizes", "63"], ["63 B", "64"]),
        (["run", "--sizes", "64,9000"], ["9000", "MTU"]),
        (["run", "--sizes", "big"], ["big"]),
        (["run", "--rate", "2g"], ["wire rate", "--rate"]),
        (["run", "--rate", "101%"], ["101%"]),
        (["run", "--rate", "fast"], ["fast", "Mpps"]),
        (["run", "--rate", "100kpps", "--sizes", "1518"], ["wire rate"]),
        (["run", "--backends", "pfring"], ["pfring", "pcap", "raw", "afp-v2", "afp-v3", "fanout"]),
        (["run", "--backends", "pcap,pcap"], ["twice"]),
        (["run", "--engine", "dpdk"], ["dpdk", "xdp"]),
        (["run", "--link", "3g"], ["3g", "10g"]),
        (["run", "--duration", "0"], ["--duration"]),
        (["run", "--duration", "long"], ["long"]),
        (["run", "--settle", "-1"], ["--settle"]),
        (["run", "--app-load", "heavy"], ["heavy", "spin:NS"]),
        (["run", "--app-load", "spin:0"], ["spin:0"]),
        (["run", "--app-load", "spin:2000000000"], ["spin:2000000000"]),
        (["run", "--gen-cpu", "x"], ["--gen-cpu"]),
        (["capture", "--procs", "0"], ["--procs"]),
        (["capture", "--procs", "2", "--proc-cpus", "1"], ["--proc-cpus", "one per process"]),
        (["run", "--method", "fastest"], ["fastest", "rfc2544"]),
        (["run", "--method", "rfc2544", "--sizes", "imix:seed"], ["profiles"]),
        (["run", "--pin", "A:C"], ["A:C", "A:B"]),
        (["run", "--pin", "A:B", "--cap-cpu", "0"], ["--pin", "--cap-cpu"]),
        (["run", "--repeat", "0"], ["--repeat"]),
        (["run", "--ring", "big"], ["big", "4M"]),
        (["run", "--ring", "1k"], ["4k to 1G"]),
        (["run", "--procs", "two"], ["--procs"]),
        (["run", "--precision", "0"], ["--precision"]),
        (["run", "--steps", "1"], ["--steps"]),
        (["run", "--campaign", "/nonexistent.toml"], ["no campaign file"]),
        (["run", "--campaign", "campaigns/seed2008.toml", "--sizes", "64"], ["--campaign", "--sizes"]),
        (["run", "--resume", "/nonexistent/run"], ["cannot read", "run.json"]),
        (["run", "--gen-cpu", "-1"], ["--gen-cpu"]),
        (["run", "--backlog", "0"], ["--backlog", "1000"]),
        (["run", "--backlog", "many"], ["--backlog"]),
        (["testbed", "up", "--backlog", "-5"], ["--backlog"]),
        (["run", "--frobnicate"], ["--frobnicate"]),
        (["frobnicate"], ["frobnicate"]),
        ([], ["COMMAND"]),
        (["testbed"], ["ACTION"]),
        (["report", "/nonexistent/results"], ["cannot read", "results directory"]),
        # Empty values are bad input, not "use the default".
        (["run", "--sizes", ""], ["frame sizes"]),
        (["run", "--campaign", ""], ["--campaign is empty"]),
        (["run", "--resume", ""], ["--resume is empty"]),
        # Caught before a test bed or a results folder exists (the generator's --check for profiles).
        (["run", "--sizes", "random:64-2000"], ["random:64-2000", "2000 B", "1518"]),
        (["run", "--rate", "1.4Mpps", "--sizes", "imix:seed"], ["imix:seed", "wire rate"]),
        (["run", "--procs", "2", "--backends", "afxdp"], ["--procs 2", "afxdp", "one XDP program"]),
        (["run", "--ring", "2G"], ["4k to 1G"]),
        (["run", "--method", "rfc2544", "--trial", "0.5"], ["--trial 0.5", "at least 1 s"]),
        (["run", "--method", "rfc2544", "--rate", "50%"], ["--rate", "iperf"]),
        (["run", "--backend-args", "fanout"], ["BACKEND=OPTIONS"]),
        (["run", "--backend-args", "fanout=--cpu 1"], ["--cpu", "capbench sets"]),
        (["run", "--backend-args", "pfring=--x"], ["pfring"]),
        # The counter judges a backend's own options (capbench-cap --check) before a test bed exists.
        (["run", "--backends", "fanout", "--backend-args", "fanout=--workers 0"], ["fanout", "bad --workers '0'"]),
        (["run", "--backends", "pcap", "--backend-args", "pcap=--frobnicate"], ["pcap", "unknown option --frobnicate"]),
        (["run", "--proc-cpus", "a"], ["--proc-cpus"]),
        # Options for a backend the run does not measure would be silently dropped.
        (["run", "--backend-args", "fanout=--workers 2"], ["fanout", "no matrix measures", "--backends"]),
        (["run", "--backends", "pcap", "--procs", "2", "--backend-args", "pcap=--write /tmp/cb-x.pcap"],
         ["--write", "--procs 2", "same file"]),
        (["run", "--backends", "afxdp", "--backend-args", "afxdp=--xdp-bind zerocopy"], ["zerocopy", "veth"]),
        (["run", "--backends", "pcap", "--backend-args", "pcap=--write /nonexistent/x.pcap"],
         ["pcap", "cannot write /nonexistent/x.pcap"]),
        (["capture", "--iface", "lo", "--backend", "xdp", "--procs", "2"], ["--procs 2", "one XDP program"]),
        (["capture", "--iface", "lo", "--procs"], ["--procs needs a value"]),
        # Several counters: judged once, before any starts.
        (["capture", "--iface", "lo", "--procs", "2", "--proc-cpus", "0,4096"], ["--proc-cpus 4096", "usable CPUs"]),
        (["capture", "--iface", "no-such-if", "--procs", "3"], ["unknown interface 'no-such-if'"]),
        (["capture", "--iface", "lo", "--procs", "2", "--write", "/tmp/cb-x.pcap"], ["--write", "same file"]),
    ],
)
def test_bad_input(args, words):
    assert_usage_error(capbench(*args), *words)


def test_check_tries_the_write_path():
    """`capbench capture` passes through to capbench-cap, whose own line it is."""
    p = capbench("capture", "--iface", "lo", "--check", "--write", "/nonexistent/x.pcap")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == ["capbench-cap: cannot write /nonexistent/x.pcap: No such file or directory: "
                                     "choose another --write file"]


def test_missing_programs_name_make(tmp_path):
    p = capbench("run", "--sizes", "64", env={"CAPBENCH_BUILD_DIR": str(tmp_path)})
    assert_usage_error(p, "capbench-gen", "make")


def test_missing_programs_for_passthrough(tmp_path):
    p = capbench("capture", "--iface", "lo", env={"CAPBENCH_BUILD_DIR": str(tmp_path)})
    assert_usage_error(p, "capbench-cap", "make")


@pytest.mark.skipif(os.geteuid() == 0, reason="checks the message users without capabilities get")
def test_not_root(fake_build):
    assert_usage_error(capbench("run", "--sizes", "64"), "needs CAP_", "setpriv")
    assert_usage_error(capbench("testbed", "up"), "needs CAP_", "setpriv")


def test_unknown_cpu(fake_build):
    if os.geteuid() != 0:
        pytest.skip("the CPU check comes after the capability check")
    assert_usage_error(capbench("run", "--cap-cpu", "4096"), "--cap-cpu 4096", "usable CPUs")


def test_unknown_netns(fake_build):
    if os.geteuid() != 0:
        pytest.skip("--netns needs CAP_SYS_ADMIN before the namespace is looked up")
    assert_usage_error(capbench("gen", "--netns", "no-such-ns-here", "--iface", "x"), "no-such-ns-here")


def test_help_has_examples():
    for args in (["--help"], ["run", "--help"], ["testbed", "--help"]):
        p = capbench(*args)
        assert p.returncode == 0 and "examples:" in p.stdout, args
    assert "--rx-cpu" in capbench("run", "--help").stdout


def test_passthrough_help_shows_program_help(fake_build):
    p = capbench("capture", "--help")
    assert p.returncode == 0
    assert "capbench capture [--netns NS]" in p.stdout
    assert "usage: capbench-cap --iface IF" in p.stdout


def test_passthrough_passes_options_and_output_unchanged(fake_build):
    p = capbench("gen", "--iface", "lo", "--size", "64", "--duration", "0.1", "--rate", "100%", "--dst-mac",
                 "02:00:00:00:00:01")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1].startswith('{"type": "summary"')
    from calls import read_calls

    assert read_calls(fake_build)[-1] == ["capbench-gen", "--iface", "lo", "--size", "64", "--duration", "0.1",
                                          "--rate", "100%", "--dst-mac", "02:00:00:00:00:01"]


@pytest.mark.parametrize("args, words", [
    (["--iface", "lo", "--rate", "1kpps"], ["sends only to a MAC it is given or learns", "--dst-mac", "--dst-ip"]),
    (["--iface", "lo", "--rate", "1kpps", "--dst-ip", "not-an-ip"], ["--dst-ip 'not-an-ip'", "address"]),
    (["--iface", "lo", "--rate", "1kpps", "--dst-ip"], ["--dst-ip needs an address"]),
    (["--iface", "lo", "--rate", "1kpps", "--dst-ip", "127.0.0.9", "--dst-mac", "02:00:00:00:00:01"],
     ["--dst-mac or --dst-ip, not both"]),
])
def test_gen_outside_a_testbed_is_refused_without_a_mac(fake_build, args, words):
    # Without --rate, capbench-gen itself refuses (tests/py/test_gen_safety.py).
    from calls import read_calls

    assert_usage_error(capbench("gen", *args), *words)
    assert read_calls(fake_build) == []  # nothing started


def test_gen_leaves_the_length_to_the_generator(fake_build):
    # capbench-gen bounds a run nobody bounded itself, and says so (tests/py/test_gen_safety.py).
    from calls import read_calls

    argv = ["--iface", "lo", "--size", "64", "--rate", "1kpps", "--dst-mac", "02:00:00:00:00:01"]
    for bound in ([], ["--count", "5"], ["--duration=2"]):
        assert capbench("gen", *argv, *bound).returncode == 0
        assert read_calls(fake_build)[-1] == ["capbench-gen", *argv, *bound]


def test_capture_procs_runs_several_counters_and_tags_their_lines(fake_build):
    import json

    from calls import read_calls

    p = capbench("capture", "--iface", "lo", "--procs", "3", "--proc-cpus", "1,0,1", "--duration", "0.1")
    assert p.returncode == 0, p.stderr
    summaries = [json.loads(line) for line in p.stdout.splitlines() if '"summary"' in line]
    assert sorted(s["proc"] for s in summaries) == [1, 2, 3]
    calls = [c for c in read_calls(fake_build) if c[0] == "capbench-cap"]
    caps = [c for c in calls if "--check" not in c]
    assert sorted(c[c.index("--cpu") + 1] for c in caps) == ["0", "1", "1"]
    # Each distinct set of options was checked once before any counter started.
    checks = [c for c in calls if "--check" in c]
    assert sorted(c[c.index("--cpu") + 1] for c in checks) == ["0", "1"]
    assert all("--procs" not in c for c in caps)


def test_passthrough_exit_status(fake_build):
    p = capbench("capture", "--iface", "eth9", env={"FAKE_FAIL": "capbench-cap"})
    assert p.returncode == 2
    assert p.stderr.strip() == "capbench-cap: cannot attach to eth9: No such device"


def test_split_passthrough():
    assert _split_passthrough(["--netns", "ns1", "--iface", "x", "--netns=ns2", "-h"]) == (
        "ns2", True, False, ["--iface", "x"])
    assert _split_passthrough(["--iface", "x", "--", "--netns", "y"]) == (None, False, False,
                                                                          ["--iface", "x", "--netns", "y"])
    assert _split_passthrough(["-i", "x", "-V"]) == (None, False, True, ["-i", "x"])
    assert _split_passthrough(["-i", "x", "--", "--version"]) == (None, False, False, ["-i", "x", "--version"])


def test_run_defaults_are_the_seeds():
    from capbench.campaign import execute as campaign_run

    c = campaign_from_args(build_parser().parse_args(["run"]))
    (m,) = c.matrices
    assert m.backends == ("pcap", "afp-v3") and m.methods == ("iperf",)
    assert m.sizes == (64, 73, 128, 207, 256, 313, 512, 726, 1024, 1174, 1280, 1319, 1518)
    assert (c.link_bps, c.rate, m.durations, m.counts, c.engine) == (1e9, "100%", (5.0,), (), "xdp")
    # A:A on two cores: generator on CPU 0, receive work and counter on CPU 1 (the seed's "#1").
    assert m.pins == ("A:A",) and plan.placement("A:A", [0, 1]) == plan.Placement(0, 1, 1, False)
    # The default run must fit in 3 minutes here.
    steps = c.steps()
    assert len(steps) == 26
    assert sum(plan.estimate_step(c, s).seconds for s in steps) + 10 < 180


def test_run_flags_make_a_matrix():
    c = campaign_from_args(build_parser().parse_args(
        ["run", "--method", "iperf,rfc2544", "--pin", "A:A,A:B", "--sizes", "64", "--backends", "afp-v3",
         "--repeat", "2", "--procs", "1,2", "--app-load", "touch,spin:500", "--trial", "10s"]))
    assert len(c.steps()) == 2 * 2 * 2 * 2 * 2
    assert c.trial_s == 10
    c = campaign_from_args(build_parser().parse_args(["run", "--ring", "256k,4M", "--sizes", "64"]))
    assert [s.ring for s in c.steps()] == [256 << 10, 256 << 10, 4 << 20, 4 << 20]  # x pcap, afp-v3
    c = campaign_from_args(build_parser().parse_args(["run", "--rx-cpu", "1", "--cap-cpu", "0"]))
    assert c.custom_cpus == (0, 1, 0) and c.matrices[0].pins == ("cpus",)


def test_rx_ring_is_an_axis_named_in_the_step_key_only_when_given():
    c = campaign_from_args(build_parser().parse_args(["run", "--rx-ring", "1024,4096", "--sizes", "64",
                                                      "--backends", "afp-v3"]))
    assert [s.rx_ring for s in c.steps()] == [1024, 4096]
    assert [s.key.split("|")[-2] for s in c.steps()] == ["rx_ring=1024", "rx_ring=4096"]
    plain = campaign_from_args(build_parser().parse_args(["run", "--sizes", "64", "--backends", "afp-v3"]))
    assert plain.steps()[0].rx_ring == 0 and "rx_ring" not in plain.steps()[0].key  # older runs resume


@pytest.mark.parametrize("argv, mode, ports, words", [
    (["--rx-ring", "1024"], "napi", False, ("--rx-ring 1024", "add --rx-mode cpumap")),
    (["--rx-ring", "1024"], "cpumap", True, ("--rx-ring 1024", "ethtool -G")),
    (["--rx-ring", "1024", "--backends", "afxdp,pcap"], "cpumap", False, ("--rx-ring with afxdp", "napi")),
])
def test_rx_ring_where_it_cannot_apply_is_refused(argv, mode, ports, words):
    from capbench.cli.run import check_rx_ring

    c = campaign_from_args(build_parser().parse_args(["run", *argv]))
    with pytest.raises(UsageError) as e:
        check_rx_ring(c, mode, ports)
    assert all(w in str(e.value) for w in words) and "\n" not in str(e.value)
    check_rx_ring(campaign_from_args(build_parser().parse_args(["run"])), mode, ports)  # not given: nothing to check


def test_report_prints_tables(tmp_path):
    from capbench.campaign.results import RunWriter
    from records import make_result

    with RunWriter.create(tmp_path, {"sizes": [64]}) as w:
        w.append(make_result(frame_len=64))
        w.append(make_result(frame_len=73, sent=6_720_430, received=6_720_000, socket_drops=430))
    p = capbench("report", str(w.path), env={"COLUMNS": "150"})
    assert p.returncode == 0, p.stderr
    assert "1,488,095" in p.stdout and "0.0064" in p.stdout


def test_profile_file_errors_name_the_file_and_line(tmp_path):
    dist = tmp_path / "sizes.csv"
    dist.write_text("64,1\n128,-2\n")
    assert_usage_error(capbench("run", "--sizes", f"64,dist:{dist}", "--results", str(tmp_path / "r")),
                       f"{dist} line 2")
    assert not (tmp_path / "r").exists()  # no results folder for a run that never started


@pytest.mark.parametrize("run_json, words", [
    ('{"hello": 1}', ["not a run of `capbench run`"]),
    ("{garbage", ["not JSON"]),
    ('{"schema": 99, "command": ["capbench", "run"]}', ["schema 99"]),
])
def test_resume_refuses_what_is_not_a_resumable_run(tmp_path, run_json, words):
    (tmp_path / "run.json").write_text(run_json)
    assert_usage_error(capbench("run", "--resume", str(tmp_path)), "cannot resume", *words)


def test_a_control_character_in_an_error_is_written_as_its_escape():
    """Found by the fuzz harnesses once their line check refused control characters (issue 15):
    argparse echoed an argument holding ESC raw ('unrecognized arguments: \\x1b[2J' cleared the
    terminal), and so did an error naming a run.json's capbench_version. cli.error_line, the one
    place an error becomes a line, writes each as its escape."""
    p = capbench("report", "x", "\x1b[2J\x08X")
    assert_usage_error(p, "unrecognized arguments: \\x1b[2J\\x08X")
    assert "\x1b" not in p.stderr and "\x08" not in p.stderr
    assert error_line(ValueError("a\x9bb\tc")) == "a\\x9bb c"
