"""Real interfaces instead of the veth test bed (`capbench run --gen-iface IF --cap-iface IF`): two
ports cabled together, or a port and a tap, in capbench's own namespace or in namespaces the user
names. capbench builds nothing here: it checks the ports, learns the sensor's MAC, holds the
`--nic-set` changes for the run (testbed.nic, put back at its end and after a crash) and leaves
the ports' receive steering alone (their IRQ affinity decides where the receive work runs; every
trial records it).

Safety first (nic.check_safe_to_send): the interface of a default route or of this SSH session is
refused unless --force-iface; a run on ports needs an explicit --rate (iperf) or --link (the
searches send up to its wire rate), and every trial is bounded by its duration.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from capbench.errors import UsageError
from capbench.owners import Holder, HostSettings
from capbench.testbed import nic
from capbench.testbed.veth_pair import Testbed

# The receive model a record of a real interface (a port, a topology's sensor) names: its driver's
# NAPI, placed by its IRQ affinity, which capbench neither sets nor changes (--rx-mode is its veth
# test bed's). Records before issue 28 said "rps" for these.
NIC_RX_MODE = "nic"


@dataclass(frozen=True)
class Ports:
    """The user's ports, as given on the command line."""

    gen_if: str
    cap_if: str
    gen_ns: str | None = None
    cap_ns: str | None = None
    dst_mac: str | None = None  # None: the capture port's own, learned
    force: bool = False  # --force-iface
    nic_set: str = ""  # --nic-set, on the capture port

    def check(self, *, iperf: bool, searches: bool, rate_given: bool, link_given: bool) -> None:
        """Every check before anything is sent or changed: UsageError (one line, exit 2)."""
        for ns, ifname in ((self.gen_ns, self.gen_if), (self.cap_ns, self.cap_if)):
            nic.check_exists(ns, ifname)
        if (self.gen_ns, self.gen_if) == (self.cap_ns, self.cap_if):
            raise UsageError(f"--gen-iface and --cap-iface are both {self.gen_if}: give two ports, cabled together "
                             f"(or a port and a tap)")
        # The capture port gets an XDP program and the --nic-set changes: the same rule as the sender's.
        for ns, ifname in ((self.gen_ns, self.gen_if), (self.cap_ns, self.cap_if)):
            nic.check_safe_to_send(ns, ifname, force=self.force)
        if iperf and not rate_given:
            raise UsageError(f"sending on {self.gen_if} needs an explicit --rate (a real link has no default "
                             f"load), e.g. --rate 10%")
        if searches and not link_given:
            raise UsageError(f"the searches send up to the link's wire rate: give --link, the speed of "
                             f"{self.gen_if}'s link (1g, 10g, ...)")
        if self.nic_set:
            nic.check_nic_set(nic.parse_nic_set(self.nic_set), nic.describe(self.cap_ns, self.cap_if), self.cap_if)

    def namespaces(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(ns for ns in (self.gen_ns, self.cap_ns) if ns))


@contextlib.contextmanager
def ports_testbed(p: Ports, registry: HostSettings | None = None) -> Iterator[Testbed]:
    """The ports as a Testbed for the run (ports=True: nothing to build, steer or remove), with
    the --nic-set changes held until it ends, however it ends (owners.HostSettings puts them back
    when this process is gone, too: `capbench testbed down`)."""
    tb_id = "p" + secrets.token_hex(3)[1:]
    tb = Testbed(id=tb_id, gen_ns=p.gen_ns, cap_ns=p.cap_ns, gen_if=p.gen_if, cap_if=p.cap_if,
                 gen_mac=nic.learn_mac(p.gen_ns, p.gen_if), cap_mac=nic.learn_mac(p.cap_ns, p.cap_if),
                 rx_cpu=None, dst_mac=p.dst_mac or nic.learn_mac(p.cap_ns, p.cap_if), rx_mode=NIC_RX_MODE, ports=True)
    registry = registry or HostSettings()
    registry.check()  # before anything changes: a registry it cannot trust stops the run here
    # Alive only while this process runs: the user's namespaces outlive the run.
    me = Holder.of_this_process(tb_id)
    try:
        if p.nic_set:
            nic.hold(me, p.cap_ns, p.cap_if, nic.parse_nic_set(p.nic_set), registry)
        yield tb
    finally:
        registry.release(me.id)


def describe(tb: Testbed) -> dict[str, dict]:
    """Both ports as nic.describe says (run.json, and every trial of a run on ports)."""
    return {"generator": nic.describe(tb.gen_ns, tb.gen_if), "capture": nic.describe(tb.cap_ns, tb.cap_if)}


def ports_from_args(gen_if: str | None, cap_if: str | None, *, gen_ns: str | None, cap_ns: str | None,
                    dst_mac: str | None, force: bool, nic_set: str | None) -> Ports | None:
    """The flags' Ports; None without --gen-iface and --cap-iface (the veth test bed)."""
    given = [f for f, v in (("--gen-netns", gen_ns), ("--cap-netns", cap_ns), ("--dst-mac", dst_mac),
                            ("--force-iface", force), ("--nic-set", nic_set)) if v]
    if gen_if is None and cap_if is None:
        if given:
            raise UsageError(f"{', '.join(given)} go with --gen-iface and --cap-iface (real interfaces)")
        return None
    if not gen_if or not cap_if:
        raise UsageError("give both --gen-iface (the port capbench sends on) and --cap-iface (the port it "
                         "captures on)")
    if dst_mac is not None and not _mac_ok(dst_mac):
        raise UsageError(f"--dst-mac {dst_mac!r}: give a unicast MAC such as 02:00:00:00:00:01")
    return Ports(gen_if=gen_if, cap_if=cap_if, gen_ns=gen_ns, cap_ns=cap_ns, dst_mac=dst_mac and dst_mac.lower(),
                 force=force, nic_set=nic_set or "")


def _mac_ok(mac: str) -> bool:
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(x) == 2 and all(c in "0123456789abcdefABCDEF" for c in x) for x in parts):
        return False
    return not int(parts[0], 16) & 1 and mac.lower() != "00:00:00:00:00:00"  # no multicast/broadcast, no zero

