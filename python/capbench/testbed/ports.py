"""Real interfaces instead of the veth test bed (`capbench run --gen-iface IF --cap-iface IF`): two
ports cabled together, or a port and a tap, in capbench's own namespace or in namespaces the user
names. capbench builds nothing here: it checks the ports, learns the sensor's MAC, holds the
`--nic-set` changes for the run (testbed.nic, put back at its end and after a crash), and for each
step (StepSettings) its NIC knobs (`--vary nic-ring=...`, `capbench tune --knobs nic-ring`) and its
placement's receive CPU: each receive queue's IRQ steered there (its smp_affinity_list), held and
put back like the other host settings. Every trial records where the port's receive interrupts
ran (/proc/interrupts before and after it).

Safety first (nic.check_safe_to_send): the interface of a default route or of this SSH session is
refused unless --force-iface; a run on ports needs an explicit --rate (iperf) or --link (the
searches send up to its wire rate), and every trial is bounded by its duration.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from capbench.errors import RunError, UsageError
from capbench.owners import Holder, HostSettings, Setting
from capbench.testbed import netns, nic
from capbench.testbed.veth_pair import Testbed

# The receive model a record of a real interface (a port, a topology's sensor) names: its driver's
# NAPI, placed by its IRQ affinity (steered to the placement's receive CPU on a port; --rx-mode is
# the veth test bed's). Records before issue 28 said "rps" for these.
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
    rps: bool = False  # --rx-mode rps: each receive queue's RPS to the step's receive CPU, too

    def check(self, *, iperf: bool, searches: bool, rate_given: bool, link_given: bool,
              knobs: Mapping[str, Iterable[str]] | None = None) -> None:
        """Every check before anything is sent or changed: UsageError (one line, exit 2). `knobs`:
        the values of each NIC knob the run's steps set (nic.NIC_KNOBS), checked against the driver."""
        self.check_exist()
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
        items = nic.parse_nic_set(self.nic_set) if self.nic_set else []
        if items:
            nic.check_nic_set(items, nic.describe(self.cap_ns, self.cap_if), self.cap_if)
        for name, values in (knobs or {}).items():
            reading = nic.read_knob(self.cap_ns, self.cap_if, name)
            for item in items:
                if (item.group, item.param) == (reading.knob.group, reading.param):
                    raise UsageError(f"--nic-set {item.text} and knob {name} both set {self.cap_if}'s "
                                     f"{reading.param} {nic.GROUPS[item.group][2]}: give one of them")
            for v in values:
                reading.check(v)

    def check_exist(self) -> None:
        for ns, ifname in ((self.gen_ns, self.gen_if), (self.cap_ns, self.cap_if)):
            nic.check_exists(ns, ifname)

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


def port_knobs(knobs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The NIC knobs of a step's configuration: {knob: value}."""
    return {n: v for n, v in knobs if n in nic.NIC_KNOBS}


def knob_values(configs: Iterable[Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The values each NIC knob takes over the steps' configurations: {knob: [values]}."""
    found: dict[str, list[str]] = {}
    for config in configs:
        for name, value in port_knobs(config).items():
            found.setdefault(name, [])
            if value not in found[name]:
                found[name].append(value)
    return found


def check_veth_bed(knobs: Iterable[str]) -> None:
    """A NIC knob on the veth test bed: one line (its NICs are veths, which change none of them)."""
    named = [n for n in dict.fromkeys(knobs) if n in nic.NIC_KNOBS]
    if named:
        k = nic.NIC_KNOBS[named[0]]
        raise UsageError(f"knob {k.name} sets a real port's {k.what} (ethtool {nic.GROUPS[k.group][1]}): the veth "
                         f"test bed has none; give your ports (--gen-iface, --cap-iface), or leave out "
                         f"{', '.join(named)}")


# How long a port may take to come back up after a NIC setting changed: many drivers reset the
# device on `ethtool -G/-L`, and the link renegotiates (seconds on a copper 1/10 GbE port).
LINK_UP_S = 20.0


def wait_link_up(ns: str | None, ifname: str, timeout_s: float = LINK_UP_S) -> None:
    deadline = time.monotonic() + timeout_s
    while (state := netns.operstate(ifname, ns)) != "UP":
        if time.monotonic() > deadline:
            raise RunError(f"{ifname} is {state or 'gone'} {timeout_s:g} s after its NIC settings changed: "
                           f"check its link (cable, peer)")
        time.sleep(0.1)


@dataclass
class StepSettings:
    """What each step of a run on ports sets on the capture port, held in the host-settings registry
    while it is in force and put back when a step no longer wants it (and at the run's end, or by
    whoever finds this process dead): each NIC knob of the step's configuration, a holder per knob
    (the run's holder keeps --nic-set), and each receive IRQ steered to the step's receive CPU."""

    tb: Testbed
    registry: HostSettings
    rps: bool = False  # steer each receive queue's RPS to the receive CPU too (--rx-mode rps)
    knobs: dict[str, str] = field(default_factory=dict)  # in force now: {knob: value}
    steered: int | None = None  # the receive CPU of the step now (None: nothing steered)
    irq_cpu: int | None = None  # the CPU its receive work is steered to now (IRQs, RPS; None: left alone)
    rx_irqs: list[dict[str, Any]] | str = field(default_factory=list)  # nic.port_rx_irqs, or why none

    def holder(self, what: str) -> Holder:
        return Holder.of_this_process(f"{self.tb.id}-{what}")

    def apply(self, knobs: Iterable[tuple[str, str]], rx_cpu: int | None) -> None:
        """Set the step's NIC knobs and steer the receive IRQs to `rx_cpu` (None: leave them where
        they were). A value the driver refuses: one line with ethtool's reason (UsageError); what
        was held stays held until the run ends and puts it back."""
        wanted = port_knobs(knobs)
        if wanted == self.knobs:
            self.steer(rx_cpu)
            return
        # A NIC's channels (and on many drivers a ring change) free its queues' IRQs and request new
        # ones: what was steered is put back first, and the queues and IRQs there are now steered after.
        self.steer(None)
        for name in dict.fromkeys([*self.knobs, *wanted]):
            if self.knobs.get(name) == wanted.get(name):
                continue
            holder = self.holder(name)
            if name not in wanted:
                self.registry.release(holder.id)  # back to what the port had
                del self.knobs[name]
            else:  # the same holder asks for the new value: one change on the NIC, not two
                reading = nic.read_knob(self.tb.cap_ns, self.tb.cap_if, name)
                try:
                    nic.hold(holder, self.tb.cap_ns, self.tb.cap_if, [reading.item(wanted[name])], self.registry)
                except RunError as e:  # the driver refused the value: ethtool's own reason in the line
                    raise UsageError(f"knob {name} {wanted[name]}: {e}") from None
                self.knobs[name] = wanted[name]
        wait_link_up(self.tb.cap_ns, self.tb.cap_if)
        self.rx_irqs = nic.port_rx_irqs(self.tb.cap_ns, self.tb.cap_if)
        self.steer(rx_cpu)

    def steer(self, rx_cpu: int | None) -> None:
        """Each receive IRQ of the port on `rx_cpu` only, and with `rps` each receive queue's RPS
        there too (held: put back at the run's end; None: put back now)."""
        if rx_cpu == self.steered:
            return
        settings: list[Setting] = []
        if not isinstance(self.rx_irqs, str):
            settings += [nic.irq_affinity(e["irq"], rx_cpu) for e in self.rx_irqs] if rx_cpu is not None else []
        if self.rps and rx_cpu is not None:
            settings += [nic.rps_setting(self.tb.cap_ns, self.tb.cap_if, q, rx_cpu)
                         for q in nic.rx_queue_names(self.tb.cap_ns, self.tb.cap_if)]
        holder = self.holder("irq")
        if rx_cpu is None:
            self.registry.release(holder.id)
        for setting in settings:
            try:
                self.registry.hold(holder, setting)
            except RunError as e:  # a managed IRQ refuses (EIO): the kernel places it itself
                raise UsageError(f"cannot steer {self.tb.cap_if}'s receive work to CPU {rx_cpu} ({setting.key}): "
                                 f"{e}; --pin auto leaves it where it is") from None
        self.steered = rx_cpu
        self.irq_cpu = rx_cpu if not isinstance(self.rx_irqs, str) or self.rps else None

    def no_irqs_line(self) -> str | None:
        """One line when the port has no receive IRQ to steer (a veth): --pin places the counter
        (and with --rx-mode rps the RPS) only."""
        if not isinstance(self.rx_irqs, str):
            return None
        places = "the counter and RPS" if self.rps else "the counter"
        return f"{self.tb.cap_if} has no receive IRQ to steer ({self.rx_irqs}): --pin places {places} only"

    def release(self) -> None:
        """Put back everything a step set (each holder released, also one a failed change left)."""
        errors = []
        for what in [*nic.NIC_KNOBS, "irq"]:  # "irq": the receive CPU's holder (IRQs and RPS)
            try:
                self.registry.release(self.holder(what).id)
            except RunError as e:
                errors.append(str(e))
        self.knobs, self.steered, self.irq_cpu = {}, None, None
        if errors:
            raise RunError("; ".join(errors))


@contextlib.contextmanager
def step_settings(tb: Testbed, rps: bool = False, registry: HostSettings | None = None) -> Iterator[StepSettings]:
    """The port's per-step settings (StepSettings) for a run, all put back when it ends, however."""
    held = StepSettings(tb, registry or HostSettings(), rps, rx_irqs=nic.port_rx_irqs(tb.cap_ns, tb.cap_if))
    try:
        yield held
    finally:
        held.release()


def describe(tb: Testbed) -> dict[str, dict]:
    """Both ports as nic.describe says (run.json, and every trial of a run on ports)."""
    return {"generator": nic.describe(tb.gen_ns, tb.gen_if), "capture": nic.describe(tb.cap_ns, tb.cap_if)}


def ports_from_args(gen_if: str | None, cap_if: str | None, *, gen_ns: str | None, cap_ns: str | None,
                    dst_mac: str | None, force: bool, nic_set: str | None, rps: bool = False) -> Ports | None:
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
                 force=force, nic_set=nic_set or "", rps=rps)


def _mac_ok(mac: str) -> bool:
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(x) == 2 and all(c in "0123456789abcdefABCDEF" for c in x) for x in parts):
        return False
    return not int(parts[0], 16) & 1 and mac.lower() != "00:00:00:00:00:00"  # no multicast/broadcast, no zero

