"""Real interfaces (`capbench run --gen-iface/--cap-iface`, testbed/ports.py) end to end, on a veth
pair the test builds in namespaces of its own and gives by name, as a user gives two cabled ports:
the same account, the NIC's own counters read, its settings recorded (a veth's driver is veth),
`--nic-set` and a NIC knob (`--vary nic-channels`) applied and put back, `--pin` on a port without
IRQs said in one line; and the refusals before anything is sent (a NIC knob the driver refuses,
with ethtool's own reason)."""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path

import pytest
from capbench.owners import HostSettings
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


def rps_masks(ns: str, ifname: str) -> dict[str, int]:
    out = netns.sh(ns, f"for q in /sys/class/net/{ifname}/queues/rx-*; do echo $q $(cat $q/rps_cpus); done")
    return {line.split()[0].rsplit("/", 1)[1]: int(line.split()[1], 16) for line in out.splitlines()}


def held_on(ifname: str) -> list[str]:
    """The host settings the registry holds on `ifname` (root's: a run's)."""
    return [path for path in HostSettings().listed() if f"/{ifname}/" in path]


def test_a_run_on_ports_reads_the_nic_and_records_its_settings(tmp_path: Path):
    # --nic-set for the run, a NIC knob per configuration (veth: rx channels), --pin on a port
    # without IRQs but with RPS (--rx-mode rps): each held and put back, each recorded.
    with cabled_ports() as (a, pa, b, pb):
        # veth attaches an XDP program (the capture port's delivered counter) only where its receive
        # queues are at least its peer's transmit queues: the sending port gets one.
        netns.run_in(a, ["ethtool", "-L", pa, "tx", "1"])
        before = channels(b, pb)
        p = run_capbench("run", *port_args(a, pa, b, pb), "--rate", "50kpps", "--link", "10g", "--sizes", "64",
                         "--duration", "1", "--nic-set", "tx-channels=1", "--backends", "afp-v3", "--results",
                         str(tmp_path), "--no-report", "--vary", "nic-channels=1,2", "--pin", "A:A", "--rx-mode",
                         "rps", timeout=200)
        assert_run_measured(p)
        assert channels(b, pb) == before  # --nic-set and the knob put back
        assert held_on(pb) == [] and set(rps_masks(b, pb).values()) == {0}  # and RPS
        (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
        trials = decided_trials(d / "trials.jsonl")
        run = json.loads((d / "run.json").read_text())
    no_irqs = [line for line in p.stderr.splitlines() if "no receive IRQ to steer" in line]
    assert no_irqs == [f"{pb} has no receive IRQ to steer (none: a veth has no IRQ (its receive work runs in the "
                       f"sender's softirq, a NAPI thread, or where RPS steers it)): --pin places the counter and RPS "
                       f"only"]
    assert run["ports"]["irq_steering"] == no_irqs[0]
    assert run["ports"]["capture"]["driver"] == "veth" and run["testbed"]["cap_if"] == pb
    assert sorted(t["knobs"]["nic-channels"] for t in trials) == ["1", "2"]
    for t in trials:
        assert t["ports"] is True and t["nic"]["driver"] == "veth", t["nic"]
        # the run's setting and the configuration's, recorded with the trial
        assert t["nic"]["channels"]["current"]["tx"] == 1
        assert t["nic"]["channels"]["current"]["rx"] == int(t["knobs"]["nic-channels"])
        assert t["nic"]["rx_interrupts"].startswith("none: a veth has no IRQ")
        # RPS steered every receive queue to the receive CPU, which the trial measured as such
        assert t["kernel_rx_cpu"] is not None
        assert {int(m, 16) for m in t["nic"]["rps_cpus"].values()} == {1 << t["kernel_rx_cpu"]}, t["nic"]["rps_cpus"]
        # Every frame is accounted for, and the NIC's own counters went up with the traffic.
        assert t["sent"] == 50_000 and t["received"] + t["lost"] == t["sent"]
        assert t["nic_counters"].get("link.rx_packets", 0) >= t["delivered"] > 0
        assert t["raw"]["gen"]["iface"] == pa


@pytest.mark.parametrize("knob, says", [("nic-ring=512", "`ethtool -g {pb}` says: netlink error: Operation not "
                                                         "supported"),
                                        ("nic-rx-usecs=8", "`ethtool -c {pb}` says: netlink error: Operation not "
                                                           "supported"),
                                        ("nic-channels=9", f"{{pb}}'s maximum is 2")])
def test_a_nic_knob_the_driver_refuses_is_one_line_and_changes_nothing(tmp_path, knob, says):
    with cabled_ports() as (a, pa, b, pb):
        before = channels(b, pb)
        p = run_capbench("run", *port_args(a, pa, b, pb), "--rate", "1kpps", "--sizes", "64", "--duration", "1",
                         "--nic-set", "tx-channels=1", "--vary", knob, "--results", str(tmp_path))
        assert p.returncode == 2, p.stderr
        assert says.format(pb=pb) in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert channels(b, pb) == before and held_on(pb) == [] and not any(tmp_path.iterdir())


def test_a_nic_knob_on_the_veth_test_bed_is_one_line(tmp_path):
    for argv in (("run", "--vary", "nic-ring=512,1024", "--rate", "1kpps"), ("tune", "--knobs", "nic-channels")):
        p = run_capbench(*argv, "--backends", "afp-v3", "--sizes", "64", "--results", str(tmp_path))
        assert p.returncode == 2, p.stderr
        assert "the veth test bed has none; give your ports (--gen-iface, --cap-iface)" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir()), p.stderr


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
