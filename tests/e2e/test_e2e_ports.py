"""Real interfaces (`capbench run --gen-iface/--cap-iface`, testbed/ports.py) end to end, on a veth
pair the test builds in namespaces of its own and gives by name, as a user gives two cabled ports:
the same account, the NIC's own counters read, its settings recorded (a veth's driver is veth),
`--nic-set` applied and put back; and the refusals before anything is sent."""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path

import pytest
from capbench.testbed import netns

from e2e_env import decided_trials, assert_run_measured, missing_prerequisite, run_capbench


@contextlib.contextmanager
def cabled_ports(queues: int = 2):
    """Two namespaces joined by a veth pair, IPv6 off (no router solicitations on the wire)."""
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    tag = secrets.token_hex(3)
    a, b = f"ports-{tag}-a", f"ports-{tag}-b"
    try:
        for ns in (a, b):
            netns.add_netns(ns)
            netns.set_sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            netns.set_sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
        netns.ip("link", "add", f"pa{tag}", "netns", a, "numtxqueues", str(queues), "numrxqueues", str(queues),
                 "type", "veth", "peer", "name", f"pb{tag}", "netns", b, "numtxqueues", str(queues),
                 "numrxqueues", str(queues))
        for ns, ifname in ((a, f"pa{tag}"), (b, f"pb{tag}")):
            netns.ip("-n", ns, "link", "set", "dev", ifname, "up")
        yield a, f"pa{tag}", b, f"pb{tag}"
    finally:
        for ns in (a, b):
            with contextlib.suppress(Exception):
                netns.delete_netns(ns)


def port_args(gen_ns, gen_if, cap_ns, cap_if, *more):
    return ("--gen-netns", gen_ns, "--gen-iface", gen_if, "--cap-netns", cap_ns, "--cap-iface", cap_if, *more)


def channels(ns: str, ifname: str) -> str:
    return netns.run_in(ns, ["ethtool", "-l", ifname]).split("Current hardware settings:")[1]


def test_a_run_on_ports_reads_the_nic_and_records_its_settings(tmp_path: Path):
    with cabled_ports() as (a, pa, b, pb):
        before = channels(b, pb)
        p = run_capbench("run", *port_args(a, pa, b, pb), "--rate", "50kpps", "--link", "10g", "--sizes", "64",
                         "--duration", "1", "--nic-set", "tx-channels=1", "--backends", "afp-v3", "--results",
                         str(tmp_path), "--no-report", timeout=200)
        assert_run_measured(p)
        assert channels(b, pb) == before  # --nic-set put back
        (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
        (t,) = decided_trials(d / "trials.jsonl")
        run = json.loads((d / "run.json").read_text())
    assert t["ports"] is True and t["nic"]["driver"] == "veth", t["nic"]
    assert t["nic"]["channels"]["current"]["tx"] == 1  # the run's setting, recorded with the trial
    assert run["ports"]["capture"]["driver"] == "veth" and run["testbed"]["cap_if"] == pb
    # Every frame is accounted for, and the NIC's own counters went up with the traffic.
    assert t["sent"] == 50_000 and t["received"] + t["lost"] == t["sent"]
    assert t["nic_counters"].get("link.rx_packets", 0) >= t["delivered"] > 0
    assert t["raw"]["gen"]["iface"] == pa


@pytest.mark.parametrize("case, says", [
    ("missing", "no interface 'nosuch0'"),
    ("no-rate", "needs an explicit --rate"),
    ("default-route", "carries the default route"),
    ("same", "give two ports"),
    ("bad-nic-set", "frobs"),
])
def test_unsafe_or_unknown_ports_are_refused(tmp_path, case, says):
    with cabled_ports() as (a, pa, b, pb):
        args = {"missing": port_args(a, "nosuch0", b, pb, "--rate", "1kpps"),
                "no-rate": port_args(a, pa, b, pb),
                "default-route": port_args(a, pa, b, pb, "--rate", "1kpps"),
                "same": port_args(a, pa, a, pa, "--rate", "1kpps"),
                "bad-nic-set": port_args(a, pa, b, pb, "--rate", "1kpps", "--nic-set", "frobs=3")}[case]
        if case == "default-route":
            netns.ip("-n", a, "addr", "add", "10.251.0.1/30", "dev", pa)
            netns.ip("-n", a, "route", "add", "default", "via", "10.251.0.2", "dev", pa)
        p = run_capbench("run", *args, "--sizes", "64", "--duration", "1", "--results", str(tmp_path))
        assert p.returncode == 2, p.stderr
        assert says in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not any(tmp_path.iterdir())
        assert not [x for x in netns.ip("-n", b, "-o", "link", "show").splitlines() if " xdp" in x]
