"""Safe by default: capbench-gen, run directly or by `capbench gen`, needs a rate, stops by itself
and sends only to a MAC it was given (`capbench gen` learns one: from the neighbour table, a veth's
peer, or the test bed's); `testbed down` without an ID
leaves the test beds `testbed up` built; `capbench xdpcount` is the helper `testbed up` names."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from capbench.testbed import netns
from capbench.testbed import veth_pair as testbed

from e2e_env import (assert_one_line_usage_error, capbench_cmd, capbench_env, capbench_namespaces,
                     missing_prerequisite, run_capbench)

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))


@dataclass
class Link:
    ns: str  # a namespace of this test's own, not capbench's
    a: str   # a veth whose peer b is in the same namespace
    b: str
    far: str  # a veth whose peer (far_peer) is in ns_far
    ns_far: str
    lone: str = "lo"  # no veth: no peer to learn a MAC from

    @property
    def far_peer(self) -> str:
        return "x" + self.far[2:]


@pytest.fixture
def link() -> Iterator[Link]:
    tag = secrets.token_hex(3)
    lk = Link(ns=f"cbsafe-{tag}", a=f"sa{tag}", b=f"sb{tag}", far=f"sf{tag}", ns_far=f"cbsafe-{tag}-far")
    try:
        for ns in (lk.ns, lk.ns_far):
            netns.add_netns(ns)
            netns.set_sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            netns.set_sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        netns.ip("-n", lk.ns, "link", "add", lk.a, "type", "veth", "peer", "name", lk.b)
        netns.ip("-n", lk.ns, "link", "add", lk.far, "type", "veth", "peer", "name", lk.far_peer, "netns", lk.ns_far)
        for ifname in (lk.a, lk.b, lk.far, lk.lone):
            netns.ip("-n", lk.ns, "link", "set", ifname, "up")
        netns.ip("-n", lk.ns_far, "link", "set", lk.far_peer, "up")
        yield lk
    finally:
        for ns in (lk.ns, lk.ns_far):
            netns.delete_netns(ns)


def gen(lk: Link, *args: str) -> subprocess.CompletedProcess:
    return run_capbench("gen", "--netns", lk.ns, "--engine", "afpacket", "--size", "64", *args, timeout=60)


def mac_of(ns: str, ifname: str) -> str:
    return json.loads(netns.ip("-n", ns, "-j", "link", "show", "dev", ifname))[0]["address"]


def tx_packets(lk: Link) -> int:
    return json.loads(netns.ip("-n", lk.ns, "-j", "-s", "link", "show", "dev", lk.a))[0]["stats64"]["tx"]["packets"]


def destinations(lk: Link, *gen_args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `capbench gen` on lk.a while tcpdump listens on its peer: the gen's result and the
    destination MACs of the frames that arrived."""
    with subprocess.Popen(netns.exec_argv(lk.ns, ["tcpdump", "-i", lk.b, "-e", "-n", "-l", "-c", "3", "udp"]),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as dump:
        for line in dump.stderr:  # its first lines: "verbose output suppressed", "listening on IF"
            if "listening on" in line:
                break
        p = gen(lk, "--iface", lk.a, "--count", "3", *gen_args)
        try:
            out, _ = dump.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            dump.kill()
            out, _ = dump.communicate()
    # `12:00:00.000000 02:..:01 > 02:..:02, ethertype IPv4 ...`
    return p, {m.group(1) for m in re.finditer(r"[0-9a-f:]{17} > ([0-9a-f:]{17})", out)}


needs_tcpdump = pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is missing")


def test_gen_needs_a_rate_and_sends_nothing_without(link):
    before = tx_packets(link)
    p = gen(link, "--iface", link.a, "--dst-mac", "02:00:00:00:00:09")
    assert_one_line_usage_error(p, "capbench-gen", "no --rate given")  # the program's own rule
    assert tx_packets(link) == before


def test_gen_refuses_a_made_up_mac(link):
    # The loopback interface has no peer: nothing to learn a MAC from.
    p = gen(link, "--iface", link.lone, "--rate", "1kpps")
    assert_one_line_usage_error(p, "capbench", "sends only to a MAC it is given or learns", "--dst-mac", "--dst-ip")
    p = gen(link, "--iface", link.far, "--rate", "1kpps", "--dst-ip", "198.51.100.99")
    assert_one_line_usage_error(p, "capbench", "--dst-ip 198.51.100.99: the neighbour table has no MAC for it",
                                "--dst-mac")


@needs_tcpdump
def test_gen_learns_the_veth_peer(link):
    p, macs = destinations(link, "--rate", "1kpps")
    assert p.returncode == 0, p.stderr
    peer = mac_of(link.ns, link.b)
    assert f"sending to {peer} ({link.a}'s veth peer)" in p.stderr
    assert macs == {peer}


def test_gen_learns_the_veth_peer_in_another_namespace(link):
    """Issue 28 item 8: the usual two-namespace set-up was refused; the peer's MAC is learnt through
    the link's netnsid (the namespace's name) and the peer's ifindex there."""
    before = json.loads(netns.ip("-n", link.ns_far, "-j", "-s", "link", "show", "dev", link.far_peer))[0]
    p = gen(link, "--iface", link.far, "--rate", "1kpps", "--count", "3")
    assert p.returncode == 0, p.stderr
    peer = mac_of(link.ns_far, link.far_peer)
    assert f"sending to {peer} ({link.far}'s veth peer in {link.ns_far})" in p.stderr
    after = json.loads(netns.ip("-n", link.ns_far, "-j", "-s", "link", "show", "dev", link.far_peer))[0]
    assert after["stats64"]["rx"]["packets"] - before["stats64"]["rx"]["packets"] >= 3  # they arrived there


@needs_tcpdump
def test_gen_learns_the_mac_of_an_ip_from_the_neighbour_table(link):
    netns.ip("-n", link.ns, "neigh", "add", "198.51.100.7", "lladdr", "02:00:00:00:00:07", "dev", link.a,
             "nud", "permanent")
    p, macs = destinations(link, "--rate", "1kpps", "--dst-ip", "198.51.100.7")
    assert p.returncode == 0, p.stderr
    assert macs == {"02:00:00:00:00:07"}


@needs_tcpdump
def test_gen_sends_to_the_mac_it_is_given(link):
    p, macs = destinations(link, "--rate", "1kpps", "--dst-mac", "02:00:00:00:00:0a")
    assert p.returncode == 0, p.stderr
    assert macs == {"02:00:00:00:00:0a"}


def test_gen_stops_after_ten_seconds_by_default(link):
    p = gen(link, "--iface", link.a, "--rate", "100pps", "--dst-mac", "02:00:00:00:00:0b", "--trailer", "0")
    assert p.returncode == 0, p.stderr
    assert "capbench-gen: sending for 10 s (the default)" in p.stderr
    summary = json.loads(p.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["sent"] == 100 * 10  # round(rate x 10 s), then it ended


def test_gen_in_a_capbench_testbed_sends_to_its_mac(tb, binaries):
    # The generator side of a capbench test bed: its peer is capbench's own, and so is the MAC.
    p = run_capbench("gen", "--netns", tb.gen_ns, "--iface", tb.gen_if, "--engine", "afpacket", "--size", "64",
                     "--rate", "10kpps", "--count", "5")
    assert p.returncode == 0, p.stderr
    assert "sending" not in p.stderr
    # capbench-gen itself, without capbench: the same rules on the same link.
    p = subprocess.run(netns.exec_argv(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if,
                                        "--rate", "10kpps", "--count", "5"]),
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert_one_line_usage_error(p, "capbench-gen", "no --dst-mac given")


def up() -> str:
    p = run_capbench("testbed", "up")
    assert p.returncode == 0, p.stderr
    tb_id = re.search(r"test bed ([0-9a-f]{6})", p.stdout).group(1)
    if not (f"capbench xdpcount --netns capbench-" in p.stdout and "capbench-xdpcount" not in p.stdout):
        run_capbench("testbed", "down", tb_id)  # a failed check leaves no test bed behind
        raise AssertionError(p.stdout)
    return tb_id


def test_testbed_down_without_id_keeps_what_testbed_up_built():
    tb_id = up()
    try:
        p = run_capbench("testbed", "down")
        assert p.returncode == 0, p.stderr
        assert f"kept test bed {tb_id}: built by `testbed up`" in p.stdout
        assert f"capbench testbed down {tb_id}" in p.stdout
        assert {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} <= capbench_namespaces()
        assert f"{tb_id}" in run_capbench("testbed", "status").stdout
    finally:
        p = run_capbench("testbed", "down", tb_id)
    assert p.returncode == 0 and f"removed test bed {tb_id}" in p.stdout, p.stderr
    assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & capbench_namespaces()


def test_testbed_down_without_id_removes_a_half_built_testbed_up():
    # A `testbed up` killed while it built: its state says "testbed up" but not kept, a leftover.
    code = ("import os, signal\nfrom capbench.testbed import veth_pair\n"
            "tb = veth_pair.create(purpose='testbed up')\nprint(tb.id, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=capbench_env(), timeout=60)
    assert p.returncode == -signal.SIGKILL, p.stderr
    tb_id = p.stdout.strip()
    assert testbed.read_state(tb_id)["purpose"] == "testbed up" and not testbed.read_state(tb_id)["kept"]
    p = run_capbench("testbed", "down")
    assert p.returncode == 0 and f"removed test bed {tb_id}" in p.stdout, p.stdout
    assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & capbench_namespaces()


def test_xdpcount_is_a_capbench_command(tb):
    with subprocess.Popen(capbench_cmd("xdpcount", "--netns", tb.cap_ns, "--iface", tb.cap_if),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=capbench_env()) as proc:
        try:
            ready = json.loads(proc.stdout.readline())
            assert ready["type"] == "ready" and ready["iface"] == tb.cap_if
            sent = run_capbench("gen", "--netns", tb.gen_ns, "--iface", tb.gen_if, "--size", "64", "--count", "20",
                                "--rate", "10kpps", "--trailer", "0")
            assert sent.returncode == 0, sent.stderr
        finally:  # ended whatever failed: the with block waits for it
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["type"] == "summary" and summary["capbench"] == 20


def test_a_namespace_named_like_a_testbed_is_not_one():
    # Only a test bed capbench built (its state file) exempts the generator from the safe defaults.
    tag = secrets.token_hex(3)
    ns = f"capbench-{tag}-gen"
    netns.add_netns(ns)
    try:
        netns.ip("-n", ns, "link", "add", "v" + tag, "type", "veth", "peer", "name", "w" + tag, "netns", "1")
        p = run_capbench("gen", "--netns", ns, "--iface", "v" + tag, "--count", "1", "--rate", "1kpps")
        assert_one_line_usage_error(p, "capbench", f"capbench gen on v{tag} in {ns} (not a capbench test bed)")
    finally:
        netns.delete_netns(ns)
        netns.ip("link", "del", "w" + tag, check=False)
