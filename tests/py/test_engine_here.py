"""The generator's engine on a kernel that refuses the default one (preflight.engine_here): the
xdp engine's BPF_PROG_RUN with live frames is missing before Linux 5.18 and forbidden by some
kernels (EPERM, as on a sandbox's). The fake capbench-gen (conftest.py) refuses its probe when
FAKE_NO_LIVE_FRAMES is set, with the real one's line."""

import json

import pytest
from calls import read_calls
from test_cli import assert_usage_error, capbench

from capbench import declared
from capbench.binaries import find_program
from capbench.errors import UsageError
from capbench.testbed import preflight

NO_LIVE = {"FAKE_NO_LIVE_FRAMES": "1"}
# Neither live frames nor an XDP loop: only the afpacket engine runs.
NO_XDP = {**NO_LIVE, "FAKE_NO_XDP_LOOP": "1"}


def asked_here(engine: str) -> str | None:
    return preflight.engine_refusal(str(find_program("capbench-gen")), engine)


def test_the_default_engine_where_the_kernel_runs_it(fake_build):
    assert preflight.engine_here(asked_here, declared.gen().default_engine, asked=False) == ("xdp", None)


def test_the_default_gives_way_to_the_next_engine_that_runs_here(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_NO_LIVE_FRAMES", "1")
    engine, why = preflight.engine_here(asked_here, "xdp", asked=False)
    assert engine == "xdploop"
    assert why.startswith("sending with the xdploop engine: this kernel refuses to run XDP programs on live frames")
    assert "use --engine" not in why  # the note says what was done, not a fix


def test_the_engines_are_asked_in_their_declared_order(fake_build, monkeypatch):
    for k, v in NO_XDP.items():
        monkeypatch.setenv(k, v)
    engine, why = preflight.engine_here(asked_here, "xdp", asked=False)
    assert engine == "afpacket"
    assert why.startswith("sending with the afpacket engine: this kernel refuses to run XDP programs on live frames")


def test_an_engine_asked_for_is_refused_in_one_line(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_NO_LIVE_FRAMES", "1")
    with pytest.raises(UsageError, match=r"^--engine xdp: this kernel refuses .* use --engine xdploop or afpacket$"):
        preflight.engine_here(asked_here, "xdp", asked=True)
    assert preflight.engine_here(asked_here, "afpacket", asked=True) == ("afpacket", None)


def test_an_engine_of_the_softirq_is_passed_over_where_its_cpu_is_shared(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_NO_LIVE_FRAMES", "1")
    engine, why = preflight.engine_here(asked_here, "xdp", asked=False, shared_cpu="placement A:B puts a counter there")
    assert engine == "afpacket"
    assert why.endswith("; not with the xdploop engine, which sends from the generator CPU's softirq and keeps it "
                        "busy: placement A:B puts a counter there")
    # Asked for, it is what it was asked for.
    assert preflight.engine_here(asked_here, "xdploop", asked=True, shared_cpu="x") == ("xdploop", None)


def test_no_engine_that_runs_is_the_default_engines_line():
    with pytest.raises(UsageError, match=r"^refused: use another$"):
        preflight.engine_here(lambda e: "refused: use another", "xdp", asked=False)


def test_gen_without_engine_sends_with_the_one_that_runs_and_says_so(fake_build):
    p = capbench("gen", "--iface", "lo", "--size", "64", "--rate", "1kpps", "--count", "5", "--dst-mac", "02:00:00:00:00:01",
                 env=NO_XDP)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("capbench gen: sending with the afpacket engine: this kernel refuses"), p.stderr
    (call,) = read_calls(fake_build)
    assert call[0] == "capbench-gen" and call[-2:] == ["--engine", "afpacket"]


def test_gen_with_engine_is_left_as_given(fake_build):
    p = capbench("gen", "--iface", "lo", "--size", "64", "--rate", "1kpps", "--count", "5", "--dst-mac", "02:00:00:00:00:01",
                 "--engine", "xdp", env=NO_LIVE)
    assert p.returncode == 0 and "sending with" not in p.stderr, p.stderr  # the fake sends: the real one refuses
    (call,) = read_calls(fake_build)
    assert call[-2:] == ["--engine", "xdp"]


def test_gen_bad_input_is_one_line_without_the_note(fake_build):
    assert_usage_error(capbench("gen", "--iface", "lo", "--rate", "1kpps", "--count", "5", "--size", "70000",
                                "--dst-mac", "02:00:00:00:00:01", env=NO_LIVE), "70000")
    assert read_calls(fake_build) == []  # nothing sent


def test_run_bad_input_is_one_line_without_the_note(fake_build):
    assert_usage_error(capbench("run", "--sizes", "random:64-2000", env=NO_LIVE), "2000 B")


def test_gen_check_probe_lists_every_engine_with_its_verdict(fake_build):
    p = capbench("gen", "--check", "--probe", "--mtu", "1500", "--size", "64", "--rate", "1kpps",
                 "--dst-mac", "02:00:00:00:00:01", env=NO_LIVE)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    probes = [(x["engine"], x["runs"]) for x in lines if x["type"] == "probe"]
    assert probes == [("xdp", False), ("xdploop", True), ("afpacket", True)]
    assert "live frames" in lines[0]["why"]
    (check,) = [x for x in lines if x["type"] == "check"]
    assert check["engine"] == "xdploop"  # the first that runs: what a run would send with


def test_gen_check_probe_checks_with_the_first_engine_that_runs(fake_build):
    p = capbench("gen", "--check", "--probe", "--mtu", "1500", "--size", "64", "--rate", "1kpps",
                 "--dst-mac", "02:00:00:00:00:01", env=NO_XDP)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(x["engine"], x["runs"]) for x in lines if x["type"] == "probe"] == [
        ("xdp", False), ("xdploop", False), ("afpacket", True)]
    assert [x["engine"] for x in lines if x["type"] == "check"] == ["afpacket"]
