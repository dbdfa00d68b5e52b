"""The real-interface path on a veth pair given by name, in this test's own namespaces
(nic-<random>a, nic-<random>b): describe() and counters() read the NIC layers (a veth's driver is
veth), a --nic-set change (veth's channels) is applied and put back, also after its holder is
SIGKILLed, and the send checks refuse what they must. Needs root; removes its namespaces."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from capbench.errors import UsageError
from capbench.owners import Holder, HostSettings
from capbench.testbed import netns, nic

from e2e_env import missing_prerequisite

PYTHON_DIR = str(Path(__file__).resolve().parents[2] / "python")
QUEUES = 4
MAC = "02:cb:00:00:0e:02"


@pytest.fixture(scope="module")
def pair():
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    tag = secrets.token_hex(3)
    a, b = f"nic-{tag}a", f"nic-{tag}b"
    ifa, ifb = f"nic{tag}a", f"nic{tag}b"
    try:
        for ns in (a, b):
            netns.add_netns(ns)
        netns.ip("link", "add", ifa, "netns", a, "numtxqueues", str(QUEUES), "numrxqueues", str(QUEUES), "type", "veth",
                 "peer", "name", ifb, "netns", b, "address", MAC, "numtxqueues", str(QUEUES), "numrxqueues", str(QUEUES))
        for ns, ifname in ((a, ifa), (b, ifb)):
            netns.ip("-n", ns, "link", "set", "dev", ifname, "up")
        yield a, ifa, b, ifb
    finally:
        for ns in (a, b):
            netns.delete_netns(ns)
    assert a not in netns.list_netns() and b not in netns.list_netns()


def channels_rx(ns: str, ifname: str) -> int:
    return nic.describe(ns, ifname)["channels"]["current"]["rx"]


def test_describe_a_veth(pair):
    a, ifa, b, ifb = pair
    d = nic.describe(b, ifb)
    assert d["driver"] == "veth" and d["mac"] == MAC and d["mtu"] == 1500
    assert d["rings"] == "not supported by veth" and d["coalescing"] == "not supported by veth"
    assert d["channels"]["max"] == {"rx": QUEUES, "tx": QUEUES, "other": None, "combined": None}
    assert d["queues"] == {"rx": QUEUES, "tx": QUEUES}
    assert d["offloads"]["large-receive-offload"] == "off [fixed]"
    assert d["link"]["speed"] == "10000Mb/s"
    assert d["irqs"].startswith("none: a veth has no IRQ")


def test_counters_of_a_veth_and_their_deltas(pair):
    a, ifa, b, ifb = pair
    before = nic.counters(b, ifb)
    for name in ("link.rx_dropped", "link.rx_missed_errors", "link.rx_fifo_errors", "link.rx_over_errors",
                 "link.tx_dropped", "nic.rx_queue_0_drops", "nic.tx_queue_3_xdp_xmit_errors"):
        assert name in before
    assert sorted(nic.per_queue(before)["rx"]) == list(range(QUEUES))
    # A few frames from a's side: b's rx_packets counts them.
    netns.ip("-n", a, "addr", "add", "10.77.0.1/24", "dev", ifa)
    netns.ip("-n", a, "neigh", "add", "10.77.0.2", "lladdr", MAC, "dev", ifa)
    send = "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor _ in range(3): s.sendto(b'x', ('10.77.0.2', 9))"
    subprocess.run(netns.exec_argv(a, [sys.executable, "-c", send]), check=True, timeout=30)
    after = nic.counters(b, ifb)
    delta = nic.counter_deltas(before, after)
    assert delta["link.rx_packets"] >= 3 and nic.counter_resets(before, after) == []


def test_nic_set_on_a_veth_is_applied_and_put_back(pair, tmp_path):
    a, ifa, b, ifb = pair
    items = nic.parse_nic_set("rx-channels=2")
    nic.check_nic_set(items, nic.describe(b, ifb), ifb)
    reg, me = HostSettings(tmp_path), Holder.of_this_process("nic-e2e")
    records = nic.hold(me, b, ifb, items, reg)
    try:
        assert records == [{"key": f"{ifb} channels rx", "was": str(QUEUES), "set": "2", "restores_to": str(QUEUES)}]
        assert channels_rx(b, ifb) == 2 and nic.describe(b, ifb)["queues"]["rx"] == 2
    finally:
        reg.release(me.id)
    assert channels_rx(b, ifb) == QUEUES


def test_what_veth_cannot_change_is_one_line(pair):
    a, ifa, b, ifb = pair
    desc = nic.describe(b, ifb)
    for text, says in (("rx=512", "not supported by veth"), ("rx-usecs=50", "not supported by veth"),
                       ("combined=2", "no combined channels"), ("rx-channels=9", f"maximum is {QUEUES}")):
        with pytest.raises(UsageError, match=says):
            nic.check_nic_set(nic.parse_nic_set(text), desc, ifb)


def test_a_killed_holder_s_nic_setting_is_put_back_by_the_cleanup(pair, tmp_path):
    a, ifa, b, ifb = pair
    script = textwrap.dedent(f"""
        import time
        from capbench.owners import Holder, HostSettings
        from capbench.testbed import nic
        nic.hold(Holder.of_this_process("killed"), {b!r}, {ifb!r}, nic.parse_nic_set("rx-channels=1,tx-channels=3"),
                 HostSettings({str(tmp_path)!r}))
        print("ready", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
    try:
        assert p.stdout.readline().strip() == "ready"
        ch = nic.describe(b, ifb)["channels"]["current"]
        assert (ch["rx"], ch["tx"]) == (1, 3)
        assert set(HostSettings(tmp_path).held()) == {f"ethtool/{b}/{ifb}/channels/rx", f"ethtool/{b}/{ifb}/channels/tx"}
    finally:
        p.send_signal(signal.SIGKILL)  # no chance to clean up
        p.wait()
    # What `capbench testbed down` (or any next run) does: find the holder dead, put its settings back.
    assert HostSettings(tmp_path).held() == {}
    ch = nic.describe(b, ifb)["channels"]["current"]
    assert (ch["rx"], ch["tx"]) == (QUEUES, QUEUES)


def test_send_checks(pair):
    a, ifa, b, ifb = pair
    with pytest.raises(UsageError, match=f"no interface 'nosuch0' in namespace {a}: give one of lo, {ifa}"):
        nic.check_exists(a, "nosuch0")
    assert nic.learn_mac(b, ifb) == MAC
    with pytest.raises(UsageError, match="no Ethernet MAC"):
        nic.learn_mac(b, "lo")
    nic.check_safe_to_send(b, ifb, force=False)  # no default route in b
    netns.ip("-n", b, "addr", "add", "10.78.0.2/24", "dev", ifb)
    netns.ip("-n", b, "route", "add", "default", "via", "10.78.0.1")
    with pytest.raises(UsageError, match=f"{ifb} carries the default route of namespace {b}.*--force-iface"):
        nic.check_safe_to_send(b, ifb, force=False)
    nic.check_safe_to_send(b, ifb, force=True)
    nic.check_safe_to_send(b, "lo", force=False)
