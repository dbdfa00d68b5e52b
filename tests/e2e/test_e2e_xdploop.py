"""capbench-gen's xdploop engine on a real test bed: its probe, exact counts at a load the afpacket
engine cannot send, and nothing left once it ends, SIGKILL included (its veth loop lives in a network
namespace only its file descriptors hold, its programs in bpf_links)."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from capbench.testbed import netns, rxmode
from capbench.testbed.procs import ChildSet

from e2e_env import run_in, run_stream, skip_without_engine


@pytest.fixture(autouse=True)
def _runs_here():
    skip_without_engine("xdploop")


def rx_packets(ns: str, iface: str) -> int:
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", iface], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    return int(json.loads(out)[0]["stats64"]["rx"]["packets"])


def test_the_probe_asks_every_piece_and_sends_nothing(binaries, tb):
    before = rx_packets(tb.cap_ns, tb.cap_if)
    p = run_in(tb.gen_ns, [str(binaries.gen), "--check", "--probe", "--engine", "xdploop", "--iface", tb.gen_if,
                           "--rate", "1kpps", "--dst-mac", tb.dst_mac])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["engine"] == "xdploop"
    assert rx_packets(tb.cap_ns, tb.cap_if) == before


def test_a_million_frames_a_second_arrive_exactly(binaries, tb):
    # 1 Mpps of 64 B frames for 1 s: about twice what the afpacket engine sends here. Every frame
    # stamped is sent and counted at the capture veth; nothing is refused on the way.
    gen, cap, xdp = run_stream(binaries, tb, ["--engine", "xdploop", "--rate", "1Mpps", "--duration", "1",
                                              "--cpu", "0", "--link", "10g"])
    assert gen["sent"] == gen["target_frames"] == 1_000_000, gen
    assert gen["refused"] == 0
    assert xdp["capbench"] + xdp.get("ring_drops", 0) == 1_000_000, xdp


def test_unpaced_it_outruns_the_afpacket_engine(binaries, tb):
    # Not a timing target (bench/bench_generator.py has those): the loop's frames skip the copy a
    # socket's skb gets at a veth peer with XDP, so even a loaded machine sends more this way.
    def unpaced(engine):
        gen, _, _ = run_stream(binaries, tb, ["--engine", engine, "--rate", "max", "--duration", "0.5",
                                              "--cpu", "0"])
        return gen["achieved_pps"]

    loop, afp = unpaced("xdploop"), unpaced("afpacket")
    assert loop > afp, (loop, afp)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_nothing_is_left_when_it_ends(binaries, tb, how):
    ring = rxmode.ring_args(tb.rx_mode, rxmode.DEFAULT_RX_RING, tb.rx_cpu)
    with ChildSet() as kids:
        xdp = kids.start("capbench-xdpcount", [str(binaries.xdpcount), "--iface", tb.cap_if, *ring],
                         netns_name=tb.cap_ns)
        xdp.wait_for("ready", 5)
        gen = subprocess.Popen(netns.exec_argv(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, "--engine",
                                                           "xdploop", "--rate", "max", "--duration", "0", "--cpu",
                                                           "0", "--dst-mac", tb.dst_mac, "--trailer", "0"]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            while rx_packets(tb.cap_ns, tb.cap_if) < 10_000 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert rx_packets(tb.cap_ns, tb.cap_if) >= 10_000, "the loop never sent"
        finally:
            # ip netns exec execs the program: the signal reaches capbench-gen itself.
            gen.send_signal(how)
            gen.wait(10)
        time.sleep(0.2)
        after = rx_packets(tb.cap_ns, tb.cap_if)
        time.sleep(0.5)
        # The loop ended with its process: nothing more arrives, and its programs are gone.
        assert rx_packets(tb.cap_ns, tb.cap_if) == after
        kids.stop_all()
    progs = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True, timeout=10).stdout
    deadline = time.monotonic() + 5  # bpf_link and namespace teardown is the kernel's, after exit
    while "cb_loop_" in progs and time.monotonic() < deadline:
        time.sleep(0.1)
        progs = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True, timeout=10).stdout
    assert "cb_loop_" not in progs
