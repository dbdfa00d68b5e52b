"""Bad input through the real command line: one line on stderr, exit status 2, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from capbench import cli

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
        (["run", "--gen-cpu", "-1"], ["--gen-cpu"]),
        (["run", "--backlog", "0"], ["--backlog", "1000"]),
        (["run", "--backlog", "many"], ["--backlog"]),
        (["testbed", "up", "--backlog", "-5"], ["--backlog"]),
        (["run", "--frobnicate"], ["--frobnicate"]),
        (["frobnicate"], ["frobnicate"]),
        ([], ["COMMAND"]),
        (["testbed"], ["ACTION"]),
        (["report", "/nonexistent/results"], ["cannot read", "results directory"]),
    ],
)
def test_bad_input(args, words):
    assert_usage_error(capbench(*args), *words)


def test_missing_programs_name_make(tmp_path):
    p = capbench("run", "--sizes", "64", env={"CAPBENCH_BUILD_DIR": str(tmp_path)})
    assert_usage_error(p, "capbench-gen", "make")


def test_missing_programs_for_passthrough(tmp_path):
    p = capbench("capture", "--iface", "lo", env={"CAPBENCH_BUILD_DIR": str(tmp_path)})
    assert_usage_error(p, "capbench-cap", "make")


@pytest.mark.skipif(os.geteuid() == 0, reason="checks the message non-root users get")
def test_not_root(fake_build):
    assert_usage_error(capbench("run", "--sizes", "64"), "root", "sudo")
    assert_usage_error(capbench("testbed", "status"), "root", "sudo")


def test_unknown_cpu(fake_build):
    if os.geteuid() != 0:
        pytest.skip("the CPU check comes after the root check")
    assert_usage_error(capbench("run", "--cap-cpu", "4096"), "--cap-cpu 4096", "usable CPUs")


def test_unknown_netns(fake_build):
    if os.geteuid() != 0:
        pytest.skip("--netns needs root before the namespace is looked up")
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
    p = capbench("gen", "--iface", "lo", "--size", "64", "--duration", "0.1", "--rate", "100%")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1].startswith('{"type": "summary"')
    from calls import read_calls

    assert read_calls(fake_build)[-1] == ["capbench-gen", "--iface", "lo", "--size", "64", "--duration", "0.1",
                                          "--rate", "100%"]


def test_passthrough_exit_status(fake_build):
    p = capbench("capture", "--iface", "eth9", env={"FAKE_FAIL": "capbench-cap"})
    assert p.returncode == 2
    assert p.stderr.strip() == "capbench-cap: cannot attach to eth9: No such device"


def test_split_passthrough():
    assert cli._split_passthrough(["--netns", "ns1", "--iface", "x", "--netns=ns2", "-h"]) == (
        "ns2", True, ["--iface", "x"])
    assert cli._split_passthrough(["--iface", "x", "--", "--netns", "y"]) == (None, False, ["--iface", "x", "--netns", "y"])


def test_run_settings_defaults_are_the_seeds():
    args = cli.build_parser().parse_args(["run"])
    s = cli.parse_run_settings(args)
    assert s.backends == ("pcap", "afp-v3")
    assert s.sizes == (64, 73, 128, 207, 256, 313, 512, 726, 1024, 1174, 1280, 1319, 1518)
    assert (s.link, s.rate, s.duration_s, s.engine) == ("1g", "100%", 5.0, "xdp")
    assert (s.gen_cpu, s.rx_cpu, s.cap_cpu) == (0, 1, 1)
    assert s.settle_s == 0.3
    # The default run must fit in 3 minutes here.
    trials = len(s.backends) * len(s.sizes)
    assert trials * (s.duration_s + cli.TRIAL_OVERHEAD_S) + 10 < 180


def test_report_prints_tables(tmp_path):
    from capbench.results import RunWriter
    from records import make_result

    with RunWriter.create(tmp_path, {"sizes": [64]}) as w:
        w.append(make_result(frame_len=64))
        w.append(make_result(frame_len=73, sent=6_720_430, received=6_720_000, socket_drops=430))
    p = capbench("report", str(w.path), env={"COLUMNS": "150"})
    assert p.returncode == 0, p.stderr
    assert "1,488,095" in p.stdout and "0.0064" in p.stdout
