"""Real interfaces (`--gen-iface`, `--cap-iface`): what a NIC is, its own drop counters, the
settings a run changes on it (`--nic-set`), and the checks before capbench sends on it.

describe(ns, ifname)  the driver, firmware, rings, channels, coalescing, offloads, link, queues and
                      each queue's IRQ with its CPU affinity, for every trial's record. What the
                      driver does not support is recorded as the reason ("not supported by veth"),
                      never a value.
counters(ns, ifname)  the NIC-layer counters as one flat {name: int}: rtnl_link_stats64
                      ("link." + name), the driver's `ethtool -S` ("nic." + the driver's own name,
                      per-queue ones included: per_queue() groups them) and ethtool's standard
                      statistics ("std.GROUP." + name); counter_deltas(before, after) per trial.
NicSetting            one `--nic-set` item (ring `ethtool -G`, channels `-L`, coalescing `-C`),
                      held through owners.HostSettings like a sysctl: put back when its last holder
                      ends, and by whoever finds that holder dead (`capbench testbed down` after a
                      crash); the accessor of kind "ethtool" below is how it is read and written.
check_exists, check_safe_to_send, check_bounded_send, learn_mac: before sending on a real port.

Everything runs inside the interface's namespace (`ns`; None: capbench's own) through
netns. ethtool 6.1 (Debian 12) prints JSON (`--json`) only for some subcommands (`-k`,
`-S --groups` here; not `-i -g -l -c -S` or the plain one): each reader asks for JSON first and
parses the text when this ethtool refuses (newer ones print JSON for -g/-l/-c too, with the
keys of the text: "rx-max", "rx", ...).

The generator's destination MAC on a real cable: the sensor's, never a broadcast or flood by
default. When both ports are on this host (two ports cabled together, or a port and a tap), it
is learned from the capture interface (`learn_mac(cap_ns, cap_if)`); when the sensor is another
host, the user gives it (`--dst-mac`), as no ARP or LLDP is done on a capture link.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import owners
from capbench.errors import RunError, UsageError
from capbench.options import whole_number
from capbench.owners import Holder, HostSettings, Setting, SettingGone
from capbench.testbed import netns

ETHTOOL = "ethtool"
KIND = "ethtool"  # the kind of owners.Setting a NicSetting holds

# --- running ethtool and ip -------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    ok: bool
    out: str
    err: str

    @property
    def why(self) -> str:
        """The program's last error line."""
        return (self.err.strip().splitlines() or ["exit status non-zero"])[-1]


def _run(ns: str | None, argv: list[str]) -> Ran:
    try:
        p = subprocess.run(netns.exec_argv(ns, argv), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=30)
    except FileNotFoundError:
        package = netns.PACKAGES.get(argv[0], argv[0])
        raise RunError(f"{argv[0]} not found: install {package} (apt-get install {package})") from None
    return Ran(p.returncode == 0, p.stdout, p.stderr)


def _ip_json(ns: str | None, *args: str) -> Any:
    """`ip -j ARGS` in `ns`, parsed; RunError with ip's own line when it fails."""
    out = netns.ip(*(["-n", ns] if ns else []), "-j", *args)
    try:
        return json.loads(out or "[]")
    except ValueError:
        raise RunError(f"`ip -j {' '.join(args)}` printed no JSON") from None


# ethtool's words when the driver lacks an operation (netlink: EOPNOTSUPP; ioctl: the same text).
UNSUPPORTED = ("Operation not supported", "not supported")
JSON_REFUSED = "bad command line argument"  # an ethtool that has no --json for this subcommand


def unsupported(ran: Ran) -> bool:
    return not ran.ok and any(u in ran.err for u in UNSUPPORTED)


def ethtool(ns: str | None, *args: str, json_first: bool = False) -> tuple[Ran, bool]:
    """`ethtool ARGS` in `ns`; with json_first, `ethtool --json ARGS` first and the text form where
    this ethtool has no JSON for it. (what ran, whether it is JSON)."""
    if json_first:
        ran = _run(ns, [ETHTOOL, "--json", *args])
        if ran.ok or JSON_REFUSED not in ran.err:
            return ran, ran.ok
    return _run(ns, [ETHTOOL, *args]), False


# --- parsing ethtool's output (text and JSON) ---------------------------------------------


def _key(label: str) -> str:
    """A text label as ethtool's own parameter name: "RX Mini" -> "rx-mini", "Combined" -> "combined"."""
    return re.sub(r"\s+", "-", label.strip().lower())


def _value(text: str) -> int | str | None:
    """An ethtool value: an int, None for "n/a" (the driver does not have it), else the text."""
    text = text.strip()
    if text.lower() == "n/a" or text == "":
        return None
    if re.fullmatch(r"\d+", text):
        return int(text)
    if isinstance(text, str) and text in ("true", "false"):
        return "on" if text == "true" else "off"
    return text


def _json_value(v: Any) -> int | str | None:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, int):
        return v
    return None if v is None else str(v)


def parse_info(text: str) -> dict[str, str]:
    """`ethtool -i`: driver, version, firmware-version, bus-info, ... (empty values kept as "")."""
    info = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def parse_max_current(text: str) -> dict[str, dict[str, int | str | None]]:
    """`ethtool -g` or `-l` text: {"max": {param: v}, "current": {param: v}}; None for n/a. Lines
    after the two sections (rx-buf-len, tx-push, ... of -g) are current settings without a maximum."""
    found: dict[str, dict[str, int | str | None]] = {"max": {}, "current": {}}
    section = None
    for line in text.splitlines():
        if line.startswith("Pre-set maximums"):
            section = "max"
        elif line.startswith("Current hardware settings"):
            section = "current"
        elif section and ":" in line:
            label, _, value = line.rpartition(":")
            found[section][_key(label)] = _value(value)
    return found


def parse_max_current_json(data: Any) -> dict[str, dict[str, int | str | None]]:
    """The JSON of `ethtool --json -g/-l` (newer ethtool): "rx-max" is a maximum, "rx" current."""
    obj = data[0] if isinstance(data, list) and data else data
    found: dict[str, dict[str, int | str | None]] = {"max": {}, "current": {}}
    for k, v in (obj or {}).items():
        if k == "ifname":
            continue
        if k.endswith("-max"):
            found["max"][k[:-4]] = _json_value(v)
        else:
            found["current"][k] = _json_value(v)
    return found


# ethtool -c prints some names other than the ones -C takes.
COALESCE_ALIASES = {"rx-frame-low": "rx-frames-low", "rx-frame-high": "rx-frames-high",
                    "tx-frame-low": "tx-frames-low", "tx-frame-high": "tx-frames-high"}


def parse_coalesce(text: str) -> dict[str, int | str | None]:
    """`ethtool -c` text: {param: value}, None for n/a; the two-valued lines ("Adaptive RX: off  TX:
    n/a", "CQE mode RX: n/a  TX: n/a") as adaptive-rx/-tx and cqe-mode-rx/-tx."""
    found: dict[str, int | str | None] = {}
    for line in text.splitlines()[1:]:
        m = re.match(r"^(Adaptive|CQE mode) RX:\s*(\S+)\s+TX:\s*(\S+)", line.strip())
        if m:
            base = "adaptive" if m.group(1) == "Adaptive" else "cqe-mode"
            found[f"{base}-rx"], found[f"{base}-tx"] = _value(m.group(2)), _value(m.group(3))
            continue
        label, sep, value = line.partition(":")
        if sep and label.strip():
            key = _key(label)
            found[COALESCE_ALIASES.get(key, key)] = _value(value)
    return found


def parse_coalesce_json(data: Any) -> dict[str, int | str | None]:
    obj = data[0] if isinstance(data, list) and data else data
    return {COALESCE_ALIASES.get(k, k): _json_value(v) for k, v in (obj or {}).items() if k != "ifname"}


def parse_features(text: str) -> dict[str, str]:
    """`ethtool -k` text: {feature: "on" | "off" (+ " [fixed]" where the driver does not let it change)}."""
    found = {}
    for line in text.splitlines()[1:]:
        label, sep, value = line.partition(":")
        state = value.strip()
        if sep and (state.startswith("on") or state.startswith("off")):
            found[label.strip()] = state
    return found


def parse_features_json(data: Any) -> dict[str, str]:
    """`ethtool --json -k`: {"feature": {"active": bool, "fixed": bool|null, "requested": bool}}."""
    obj = data[0] if isinstance(data, list) and data else data
    found = {}
    for name, f in (obj or {}).items():
        if isinstance(f, dict) and isinstance(f.get("active"), bool):
            found[name] = ("on" if f["active"] else "off") + (" [fixed]" if f.get("fixed") else "")
    return found


LINK_FIELDS = {"Speed": "speed", "Duplex": "duplex", "Auto-negotiation": "auto-negotiation", "Port": "port",
               "Link detected": "link-detected"}


def parse_link(text: str) -> dict[str, str]:
    """Plain `ethtool IF`: speed, duplex, auto-negotiation, port, link detected; what the driver
    does not report ("Unknown!") as "unknown (not reported by the driver)"."""
    found = {}
    for line in text.splitlines():
        label, sep, value = line.strip().partition(":")
        if sep and label in LINK_FIELDS:
            value = value.strip()
            found[LINK_FIELDS[label]] = ("unknown (not reported by the driver)" if value.startswith("Unknown")
                                         else value)
    return found


def parse_stats(text: str) -> dict[str, int]:
    """`ethtool -S` text: every counter under its driver's name. A name the driver prints twice
    (some do, per port or per ring) keeps each value: the second as NAME#2."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        # rsplit: some drivers put a colon in the name ("rxq0: rx_bytes: 17", "[0]: rx_bytes: 9")
        label, sep, value = line.strip().rpartition(":")
        value = value.strip()
        if not sep or not re.fullmatch(r"-?\d+", value):
            continue
        name, n = label.strip(), 2
        key = name
        while key in found:
            key, n = f"{name}#{n}", n + 1
        found[key] = int(value)
    return found


def parse_std_stats_json(data: Any) -> dict[str, int]:
    """`ethtool --json -S IF --groups ...`: {"GROUP.Name": n}; rmon histograms ("rx-pktsNtoM": [{"low",
    "high", "val"}]) as "rmon.rx-pktsNtoM.LOW-HIGH"."""
    found: dict[str, int] = {}

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, bool):
            return
        if isinstance(v, int):
            found[prefix] = v
        elif isinstance(v, dict):
            if {"low", "high", "val"} <= v.keys():
                found[f"{prefix}.{v['low']}-{v['high']}"] = int(v["val"])
            else:
                for k, sub in v.items():
                    walk(f"{prefix}.{k}" if prefix else k, sub)
        elif isinstance(v, list):
            for sub in v:
                walk(prefix, sub)

    for obj in data if isinstance(data, list) else [data]:
        if isinstance(obj, dict):
            walk("", {k: v for k, v in obj.items() if k != "ifname"})
    return found


def parse_link_stats(data: Any) -> dict[str, int]:
    """`ip -s -s -j link show dev IF`: rtnl_link_stats64 under its kernel names (rx_dropped,
    rx_missed_errors, ..., multicast, collisions); carrier_changes is IFLA_CARRIER_CHANGES."""
    obj = data[0] if isinstance(data, list) and data else {}
    stats = obj.get("stats64") or obj.get("stats") or {}
    found = {}
    for direction in ("rx", "tx"):
        for k, v in (stats.get(direction) or {}).items():
            if isinstance(v, int) and not isinstance(v, bool):
                name = k if k in ("multicast", "collisions", "carrier_changes") else f"{direction}_{k}"
                found[name] = v
    return found


# --- what a NIC is ------------------------------------------------------------------------


def _reason(ran: Ran, driver: str | None, what: str) -> str:
    if unsupported(ran):
        return f"not supported by {driver}" if driver else f"not supported by this interface ({ran.why})"
    return f"{what} failed: {ran.why}"


def _max_current(ns: str | None, ifname: str, flag: str, driver: str | None) -> dict | str:
    ran, is_json = ethtool(ns, flag, ifname, json_first=True)
    if not ran.ok:
        return _reason(ran, driver, f"ethtool {flag}")
    try:
        return parse_max_current_json(json.loads(ran.out)) if is_json else parse_max_current(ran.out)
    except ValueError:
        return f"ethtool {flag} printed what capbench cannot read"


def _sysfs(ns: str | None, ifname: str) -> dict[str, Any]:
    """From /sys/class/net/IF as the namespace sees it: queues, the device's sysfs path, its MSI IRQs."""
    q = shlex.quote(ifname)
    script = (f"d=/sys/class/net/{q}; ls $d/queues; echo ::; readlink -f $d/device 2>/dev/null; echo ::; "
              f"ls $d/device/msi_irqs 2>/dev/null || ls $d/device/../msi_irqs 2>/dev/null; echo ::; "
              f"cat $d/address $d/mtu 2>/dev/null")
    try:
        queues, device, msi, addr = (netns.sh(ns, script).split("::\n") + ["", "", "", ""])[:4]
    except RunError:
        return {}
    names = queues.split()
    return {"rx_queues": sum(n.startswith("rx-") for n in names), "tx_queues": sum(n.startswith("tx-") for n in names),
            "device": device.strip() or None, "msi_irqs": {int(i) for i in msi.split() if i.isdigit()},
            "address": (addr.split() or [None])[0]}


QUEUE_IN_IRQ_NAME = re.compile(r"(?i)(txrx|rx|tx|input|output|comp|fp|queue)[-._]?(\d+)(?:@.*)?$")


def parse_interrupts(text: str) -> dict[int, str]:
    """/proc/interrupts: {irq: its name (the last column)} for the numbered IRQs."""
    found = {}
    for line in text.splitlines()[1:]:
        head, sep, rest = line.partition(":")
        if sep and head.strip().isdigit():
            parts = rest.split()
            found[int(head)] = parts[-1] if parts else ""
    return found


def match_irqs(ifname: str, irq_names: Mapping[int, str], msi_irqs: Iterable[int] = (),
               device: str | None = None) -> dict[int, str]:
    """The IRQs of `ifname`: those named after it (igb "eth1-TxRx-0", ixgbe, i40e, mlx5 ...); where
    none is, those of its device's MSI vectors (virtio_net's are named after the virtio device,
    "virtio2-input.0", not the interface), its config vector left out."""
    named = {i: n for i, n in irq_names.items() if re.search(rf"(^|[^\w]){re.escape(ifname)}($|[^\w])", n)}
    if named:
        return named
    msi = set(msi_irqs)
    dev = os.path.basename(device) if device else ""
    found = {i: n for i, n in irq_names.items() if i in msi}
    if dev.startswith("virtio"):
        found = {i: n for i, n in found.items() if n.startswith(dev + "-")}
    return {i: n for i, n in found.items() if not n.endswith("-config")}


def irqs(ifname: str, sysfs: Mapping[str, Any], driver: str | None,
         proc: Path = Path("/proc")) -> list[dict[str, Any]] | str:
    """Each queue's IRQ and its CPU affinity (smp_affinity_list; effective_affinity_list where the
    kernel has it), or why there is none."""
    if driver in ("veth", None) or not sysfs.get("device"):
        what = driver or "this interface"
        return (f"none: a {what} has no IRQ (its receive work runs in the sender's softirq, a NAPI thread, "
                f"or where RPS steers it)" if driver == "veth" else f"none: {what} has no device with IRQs")
    try:
        names = parse_interrupts((proc / "interrupts").read_text())
    except OSError as e:
        return f"cannot read /proc/interrupts: {e.strerror}"
    found = []
    for irq, name in sorted(match_irqs(ifname, names, sysfs.get("msi_irqs") or (), sysfs.get("device")).items()):
        m = QUEUE_IN_IRQ_NAME.search(name)
        entry: dict[str, Any] = {"irq": irq, "name": name, "queue": int(m.group(2)) if m else None}
        for key, file in (("affinity", "smp_affinity_list"), ("effective_affinity", "effective_affinity_list")):
            try:
                entry[key] = (proc / "irq" / str(irq) / file).read_text().strip()
            except OSError:
                entry[key] = None
        found.append(entry)
    return found or f"none found: no IRQ in /proc/interrupts is named after {ifname} or is its device's"


# A queue IRQ whose name says it only transmits ("eth1-tx-0", virtio's "output.0"): no receive work.
TX_ONLY_IRQ = ("tx", "output")


def rx_irqs(found: list[dict[str, Any]] | str) -> list[dict[str, Any]] | str:
    """Of irqs()'s entries, those that run receive work: each queue's IRQ that is not transmit-only
    (igb's TxRx, mlx5's comp, virtio's input); a device with no queue in its IRQ names (e1000's one
    "eth0") has its receive work on all of them. A reason (text) stays a reason."""
    if isinstance(found, str):
        return found
    queued = [e for e in found if e.get("queue") is not None]
    if not queued:
        return list(found)
    return [e for e in queued if (m := QUEUE_IN_IRQ_NAME.search(e["name"])) and m.group(1).lower() not in TX_ONLY_IRQ]


def port_rx_irqs(ns: str | None, ifname: str, proc: Path = Path("/proc")) -> list[dict[str, Any]] | str:
    """The receive IRQs of port `ifname` in `ns` (rx_irqs of irqs()), or why it has none."""
    ran, _ = ethtool(ns, "-i", ifname)
    driver = parse_info(ran.out).get("driver") if ran.ok else None
    found = rx_irqs(irqs(ifname, _sysfs(ns, ifname), driver or None, proc))
    return found or f"none: no IRQ of {ifname} runs receive work (its IRQs are transmit-only)"


def parse_interrupt_counts(text: str) -> dict[int, dict[int, int]]:
    """/proc/interrupts: {irq: {cpu: interrupts so far}} for the numbered IRQs. The header names the
    CPU of each column ("CPU0 CPU2": an offline CPU has no column); a line may have fewer counts
    than columns (the kernel prints only the CPUs that exist for some chips), its name after them."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU") and c[3:].isdigit()]
    found = {}
    for line in lines[1:]:
        head, sep, rest = line.partition(":")
        if not sep or not head.strip().isdigit():
            continue
        counts = {}
        for cpu_no, word in zip(cpus, rest.split()):
            if not word.isdigit():
                break
            counts[cpu_no] = int(word)
        found[int(head)] = counts
    return found


def interrupt_counts(proc: Path = Path("/proc")) -> dict[int, dict[int, int]]:
    """Every numbered IRQ's per-CPU count now (/proc/interrupts; not namespaced: the host's)."""
    try:
        return parse_interrupt_counts((proc / "interrupts").read_text())
    except OSError as e:
        raise RunError(f"cannot read /proc/interrupts: {e.strerror}") from None


def interrupts_per_cpu(before: Mapping[int, Mapping[int, int]],
                       after: Mapping[int, Mapping[int, int]]) -> dict[str, int]:
    """Where the IRQs read twice ran in between: {"cpuN": interrupts}, the CPUs that took any,
    summed over the IRQs (a count that went down, an IRQ freed and reused, counts from 0)."""
    total: dict[int, int] = {}
    for irq, counts in after.items():
        for cpu_no, n in counts.items():
            was = before.get(irq, {}).get(cpu_no, 0)
            total[cpu_no] = total.get(cpu_no, 0) + (n - was if n >= was else n)
    return {f"cpu{c}": n for c, n in sorted(total.items()) if n}


def rx_interrupts(desc: Mapping[str, Any], before: Mapping[int, Mapping[int, int]],
                  after: Mapping[int, Mapping[int, int]]) -> dict[str, int] | str:
    """Where the port's receive interrupts ran between two interrupt_counts(): {"cpuN": interrupts}
    over its receive IRQs (rx_irqs of describe()'s "irqs"), or why it has none."""
    found = rx_irqs(desc.get("irqs") or "none: not described")
    if isinstance(found, str):
        return found
    wanted = {e["irq"] for e in found}
    return interrupts_per_cpu({i: c for i, c in before.items() if i in wanted},
                              {i: c for i, c in after.items() if i in wanted})


# Where an IRQ may run: /proc/irq/N/smp_affinity_list, a CPU list ("1", "0-3,8"). Writing it moves
# the IRQ (the kernel applies it at the IRQ's next interrupt, or at once); a managed IRQ (the
# kernel spreads the queues of some drivers itself) refuses the write with EIO.
IRQ_AFFINITY = "/proc/irq/{irq}/smp_affinity_list"


def is_irq_affinity(path: str, value: str) -> bool:
    """Whether `path` at `value` is an IRQ's CPU list as --pin on a port sets it (ports.StepSettings
    .steer): what the host-settings registry may read and write back (owners.declare)."""
    return (re.fullmatch(r"/proc/irq/\d{1,7}/smp_affinity_list", path) is not None
            and re.fullmatch(r"\d{1,5}([-,]\d{1,5})*", value) is not None)


owners.declare(owners.FILE, is_irq_affinity)


def irq_affinity(irq: int, cpu_no: int) -> Setting:
    """IRQ `irq` on CPU `cpu_no` only, as a host setting to hold (owners.HostSettings)."""
    return Setting(path=IRQ_AFFINITY.format(irq=irq), value=str(cpu_no), at_least=False, key=f"irq {irq} CPUs")


# A port's RPS (--rx-mode rps on ports): /sys/class/net/IF/queues/rx-N/rps_cpus as the port's
# namespace shows it (sysfs is per network namespace), a CPU bitmap in hex, printed as 32-bit words
# joined by commas ("00000000,00000002") and read back in any width: held by the registry under a
# kind of its own ("rps/NS/IF/rx-N"), its values the bitmap as one hex number ("2"; "0": no RPS).
RPS_KIND = "rps"


def rps_path(ns: str | None, ifname: str, queue: str) -> str:
    return f"{RPS_KIND}/{ns or ''}/{ifname}/{queue}"


def _rps_file(path: str) -> tuple[str | None, str, str]:
    """(namespace, interface, its rps_cpus file) of an rps_path."""
    kind, ns, ifname, queue = path.split("/")
    if kind != RPS_KIND:
        raise RunError(f"{path!r} is not an RPS setting")
    return ns or None, ifname, f"/sys/class/net/{ifname}/queues/{queue}/rps_cpus"


def read_rps(path: str) -> str:
    """A receive queue's RPS CPUs as one hex number (the "rps" accessor's read)."""
    ns, ifname, file = _rps_file(path)
    if _gone(ns, ifname):
        raise SettingGone(path)
    # A queue removed by a channel change (ethtool -L) is gone; one made again starts afresh.
    text = netns.sh(ns, f"cat {shlex.quote(file)} 2>/dev/null || echo gone").strip().replace(",", "")
    if text == "gone":
        raise SettingGone(path)
    if not re.fullmatch(r"[0-9a-fA-F]+", text):
        raise RunError(f"cannot read {file}: {text or 'empty'}")
    return format(int(text, 16), "x")


def write_rps(path: str, value: str) -> None:
    ns, ifname, file = _rps_file(path)
    read_rps(path)  # SettingGone where the queue (or the port) is gone
    netns.write_file(ns, file, value)


def is_rps_setting(path: str, value: str) -> bool:
    """Whether `path` at `value` is a receive queue's RPS CPUs as --rx-mode rps on a port sets them."""
    parts = path.split("/")
    return (len(parts) == 4 and parts[0] == RPS_KIND and 0 < len(parts[2]) < IFNAMSIZ
            and re.fullmatch(r"rx-\d{1,5}", parts[3]) is not None and re.fullmatch(r"[0-9a-f]{1,256}", value) is not None)


owners.register_accessor(RPS_KIND, read_rps, write_rps)
owners.declare(RPS_KIND, is_rps_setting)


def rps_setting(ns: str | None, ifname: str, queue: str, cpu_no: int) -> Setting:
    """Receive queue `queue` ("rx-0") of `ifname` steering its frames to CPU `cpu_no`, as a host setting."""
    return Setting(path=rps_path(ns, ifname, queue), value=format(1 << cpu_no, "x"), at_least=False,
                   key=f"{ifname} {queue} rps_cpus", kind=RPS_KIND)


def rx_queue_names(ns: str | None, ifname: str) -> list[str]:
    """The receive queues of `ifname` ("rx-0", ...), as its sysfs shows them."""
    names = netns.sh(ns, f"ls /sys/class/net/{shlex.quote(ifname)}/queues").split()
    return sorted((n for n in names if re.fullmatch(r"rx-\d+", n)), key=lambda n: int(n[3:]))


def describe(ns: str | None, ifname: str) -> dict[str, Any]:
    """What a trial records of the interface: driver, version, firmware, bus-info; ring sizes and
    channels (max and current); coalescing; offloads; MTU, MAC, speed and duplex; rx/tx queues;
    each queue's IRQ and its CPU affinity. An item the driver does not support is its reason."""
    check_exists(ns, ifname)
    desc: dict[str, Any] = {"name": ifname, "namespace": ns}
    ran, _ = ethtool(ns, "-i", ifname)
    info = parse_info(ran.out) if ran.ok else {}
    driver = info.get("driver") or None
    desc["driver"] = driver or _reason(ran, None, "ethtool -i")
    for key in ("version", "firmware-version", "bus-info"):
        desc[key] = (info.get(key) or "none reported by the driver") if ran.ok else desc["driver"]
    desc["rings"] = _max_current(ns, ifname, "-g", driver)
    desc["channels"] = _max_current(ns, ifname, "-l", driver)
    ran, is_json = ethtool(ns, "-c", ifname, json_first=True)
    if ran.ok:
        coal = parse_coalesce_json(json.loads(ran.out)) if is_json else parse_coalesce(ran.out)
        desc["coalescing"] = {k: v for k, v in coal.items() if v is not None}  # n/a: the driver has no such knob
    else:
        desc["coalescing"] = _reason(ran, driver, "ethtool -c")
    ran, is_json = ethtool(ns, "-k", ifname, json_first=True)
    desc["offloads"] = ((parse_features_json(json.loads(ran.out)) if is_json else parse_features(ran.out))
                        if ran.ok else _reason(ran, driver, "ethtool -k"))
    ran, _ = ethtool(ns, ifname)
    desc["link"] = parse_link(ran.out) if ran.ok else _reason(ran, driver, "ethtool")
    link = (_ip_json(ns, "link", "show", "dev", ifname) or [{}])[0]
    desc["mtu"] = link.get("mtu")
    desc["mac"] = link.get("address")
    desc["operstate"] = link.get("operstate")
    sysfs = _sysfs(ns, ifname)
    desc["queues"] = {"rx": sysfs.get("rx_queues"), "tx": sysfs.get("tx_queues")} if sysfs else \
        "cannot read /sys/class/net/IF/queues"
    desc["irqs"] = irqs(ifname, sysfs, driver)
    return desc


# --- the NIC's own counters ---------------------------------------------------------------

# What each rtnl_link_stats64 counter means (include/uapi/linux/if_link.h, the source of
# Documentation/networking/statistics.rst), in one line each. All are __u64 in the ABI; a driver
# that fills one from a 32-bit hardware register accumulates it into 64 bits itself (igb, ixgbe
# read clear-on-read registers into u64 sums). They start at 0 when the device is created and
# are never reset by the kernel while it exists; a driver may lose its software part on a reset
# (some rebuild their rings and per-ring sums on `ethtool -G/-L`), so counter_deltas treats a
# counter that went down as reset.
COUNTER_MEANINGS: dict[str, str] = {
    "rx_packets": "good packets received (the device handed them to the host)",
    "rx_bytes": "bytes of the good packets received, FCS excluded",
    "rx_errors": "bad packets received: length, CRC, frame and other errors together",
    "rx_dropped": "received but not processed by the stack (no resources, unknown protocol, L2 filter); "
                  "not the device's buffer exhaustion, which is rx_missed_errors",
    "rx_missed_errors": "dropped by the device for lack of buffer space: the host did not keep up "
                        "(hardware only; /proc/net/dev folds it into 'drop')",
    "rx_fifo_errors": "receiver FIFO overflow events (may not be one per packet; used interchangeably with "
                      "rx_over_errors; software devices count queue overflows here)",
    "rx_over_errors": "receiver FIFO overflow events; on fast NICs: packets that did not fit the host's "
                      "buffers (larger than MTU, no next ring buffer for a scatter)",
    "rx_crc_errors": "packets received with a bad FCS (802.3 aFrameCheckSequenceErrors)",
    "rx_length_errors": "packets dropped for an invalid length (too short, too long, length field wrong)",
    "rx_frame_errors": "frame alignment errors (802.3 aAlignmentErrors)",
    "rx_nohandler": "received but dropped because the device is not meant to receive (a bond's backup)",
    "rx_otherhost_dropped": "dropped because the destination MAC was not this host's",
    "multicast": "multicast packets received, often counted by the device (may include ones never delivered)",
    "tx_packets": "packets transmitted",
    "tx_bytes": "bytes transmitted, FCS excluded",
    "tx_errors": "transmit problems: aborted, carrier, FIFO, heartbeat, window errors together",
    "tx_dropped": "dropped on their way to transmission, e.g. for lack of resources",
    "tx_fifo_errors": "transmit FIFO underruns: the frame did not reach the transmitter in time",
    "tx_aborted_errors": "aborted transmissions (fast NICs: any device discard on transmit)",
    "tx_carrier_errors": "transmissions lost to loss of carrier",
    "collisions": "collisions during transmission",
}

# The ethtool standard statistics groups (IEEE 802.3 MAC and MAC-control counters, RMON's
# histograms): the same names on every driver that has them, u64 by the netlink ABI.
STD_GROUPS = ("eth-mac", "eth-ctrl", "rmon")


def counters(ns: str | None, ifname: str) -> dict[str, int]:
    """The NIC-layer counters of `ifname`, all 64-bit: "link.NAME" (rtnl_link_stats64, see
    COUNTER_MEANINGS), "nic.NAME" (every `ethtool -S` counter under the driver's own name, the
    per-queue ones included: per_queue()), "std.GROUP.NAME" (ethtool's standard statistics, where
    the driver has them). A part this driver does not have is absent."""
    found = {f"link.{k}": v for k, v in parse_link_stats(_ip_json(ns, "-s", "-s", "link", "show", "dev", ifname)).items()}
    ran, _ = ethtool(ns, "-S", ifname)
    if ran.ok:
        found |= {f"nic.{k}": v for k, v in parse_stats(ran.out).items()}
    ran, is_json = ethtool(ns, "-S", ifname, "--groups", *STD_GROUPS, json_first=True)
    if ran.ok:
        std = parse_std_stats_json(json.loads(ran.out)) if is_json else \
            {f"{g}": v for g, v in parse_stats(ran.out).items()}
        found |= {f"std.{k}": v for k, v in std.items()}
    return found


# Per-queue counter names: veth, igb, ixgbe, ice "rx_queue_0_drops"; i40e "rx-0.packets";
# mlx5, virtio_net "rx0_packets"; be2net "rxq0: rx_bytes"; bnx2x "[0]: rx_bytes" (no direction).
QUEUE_NAMES = (
    re.compile(r"^(?P<dir>rx|tx)_queue_(?P<q>\d+)_(?P<name>.+)$"),
    re.compile(r"^(?P<dir>rx|tx)-(?P<q>\d+)\.(?P<name>.+)$"),
    re.compile(r"^(?P<dir>rx|tx)q?(?P<q>\d+)(?:_|: )(?P<name>.+)$"),
    re.compile(r"^\[(?P<q>\d+)\]: (?P<name>.+)$"),
)


def queue_of(name: str) -> tuple[str, int, str] | None:
    """("rx" | "tx" | "queue", N, counter) of a per-queue `ethtool -S` name; None for a device-wide one."""
    for rx in QUEUE_NAMES:
        m = rx.match(name)
        if m:
            return m.groupdict().get("dir") or "queue", int(m.group("q")), m.group("name")
    return None


def per_queue(found: Mapping[str, int]) -> dict[str, dict[int, dict[str, int]]]:
    """The per-queue driver counters of counters() (or of their deltas), grouped:
    {"rx": {0: {"drops": 3, ...}, 1: {...}}, "tx": {...}}."""
    grouped: dict[str, dict[int, dict[str, int]]] = {}
    for key, v in found.items():
        if key.startswith("nic."):
            q = queue_of(key[4:])
            if q:
                grouped.setdefault(q[0], {}).setdefault(q[1], {})[q[2]] = v
    return grouped


def counter_deltas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """after − before for each counter read both times. A counter that went down was reset
    between the two (a driver reset, the device re-created): its delta is its `after` value, what
    is known to have counted since (counter_resets names them). A counter only one side has (a
    queue added or removed by `ethtool -L`) is left out."""
    return {k: (after[k] - before[k] if after[k] >= before[k] else after[k]) for k in before if k in after}


def counter_resets(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
    return sorted(k for k in before if k in after and after[k] < before[k])


# --- settings a run changes: --nic-set ------------------------------------------------------

# group -> (the ethtool option that shows it, the one that sets it, what it is called)
GROUPS = {"ring": ("-g", "-G", "ring sizes"), "channels": ("-l", "-L", "channels"),
          "coalesce": ("-c", "-C", "coalescing")}
RING_KEYS = ("rx", "tx", "rx-mini", "rx-jumbo")
CHANNEL_KEYS = ("rx", "tx", "other", "combined")
COALESCE_ON_OFF = ("adaptive-rx", "adaptive-tx", "cqe-mode-rx", "cqe-mode-tx")
COALESCE_NUMBERS = ("rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq", "tx-usecs", "tx-frames",
                    "tx-usecs-irq", "tx-frames-irq", "stats-block-usecs", "pkt-rate-low", "pkt-rate-high",
                    "sample-interval", "rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low",
                    "rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high")
# The --nic-set names: ethtool's own, except that ring and channels both have rx and tx:
# rx=/tx= are ring sizes (the issue's `rx=4096,tx=4096`), rx-channels=/tx-channels= channels.
# "ring.rx", "channels.rx", "coalesce.rx-usecs" name the group outright.
SHORT_NAMES: dict[str, tuple[str, str]] = (
    {k: ("ring", k) for k in RING_KEYS}
    | {"combined": ("channels", "combined"), "other": ("channels", "other"),
       "rx-channels": ("channels", "rx"), "tx-channels": ("channels", "tx")}
    | {k: ("coalesce", k) for k in COALESCE_ON_OFF + COALESCE_NUMBERS})
U32_MAX = 2**32 - 1
IFNAMSIZ = 16  # an interface name is shorter (linux/if.h)


@dataclass(frozen=True)
class NicSetting:
    """One `--nic-set` item: `param` of `group` (ring, channels, coalesce) at `value` ("on"/"off"
    or a number, as text: ethtool's)."""

    group: str
    param: str
    value: str

    @property
    def text(self) -> str:
        return f"{self.group}.{self.param}={self.value}"

    def setting(self, ns: str | None, ifname: str) -> Setting:
        """This item on `ifname` in `ns`, as a host setting to hold (owners.HostSettings)."""
        return Setting(path=setting_path(ns, ifname, self.group, self.param), value=self.value, at_least=False,
                       key=f"{ifname} {GROUPS[self.group][2]} {self.param}", kind=KIND)


def _names() -> str:
    return "rx, tx (ring sizes), combined, rx-channels, tx-channels, other (channels), rx-usecs, adaptive-rx, ... " \
           "(coalescing, ethtool -C's names)"


def parse_nic_set(text: str) -> list[NicSetting]:
    """`--nic-set` text, e.g. "rx=4096,tx=4096", "combined=2", "rx-usecs=50,adaptive-rx=off": the
    items in order. UsageError naming the bad item (unknown key, bad value, twice)."""
    items: list[NicSetting] = []
    for raw in (p.strip() for p in text.split(",")):
        if not raw:
            raise UsageError(f"--nic-set {text!r} has an empty item: give KEY=VALUE items joined by commas, "
                             f"e.g. rx=4096,tx=4096")
        key, sep, value = raw.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        if not sep or not value:
            raise UsageError(f"--nic-set item {raw!r} has no value: write KEY=VALUE, e.g. rx=4096")
        group, _, param = key.rpartition(".")
        if group:
            known = {"ring": RING_KEYS, "channels": CHANNEL_KEYS, "coalesce": COALESCE_ON_OFF + COALESCE_NUMBERS}
            if group not in known or param not in known[group]:
                raise UsageError(f"--nic-set item {raw!r}: unknown key {key!r}: give one of {_names()}, "
                                 f"or ring.rx, channels.rx, coalesce.rx-usecs")
        elif key in SHORT_NAMES:
            group, param = SHORT_NAMES[key]
        else:
            raise UsageError(f"--nic-set item {raw!r}: unknown key {key!r}: give one of {_names()}")
        if param in COALESCE_ON_OFF:
            if value not in ("on", "off"):
                raise UsageError(f"--nic-set item {raw!r}: {param} is on or off")
        elif not re.fullmatch(r"\d+", value) or int(value) > U32_MAX:
            raise UsageError(f"--nic-set item {raw!r}: {param} takes a whole number from 0 to {U32_MAX}")
        else:
            value = str(int(value))
        item = NicSetting(group, param, value)
        if any((i.group, i.param) == (group, param) for i in items):
            raise UsageError(f"--nic-set names {group} {param} twice: give each setting once")
        items.append(item)
    return items


def check_nic_set(items: Iterable[NicSetting], desc: Mapping[str, Any], ifname: str) -> None:
    """Each item against what the driver says (describe()): UsageError naming the first item the
    driver does not support or whose value is above the driver's maximum (`ethtool -g`/`-l`)."""
    driver = desc.get("driver") if isinstance(desc.get("driver"), str) else "its driver"
    for item in items:
        shown = desc.get({"ring": "rings", "channels": "channels", "coalesce": "coalescing"}[item.group])
        what = GROUPS[item.group][2]
        if isinstance(shown, str):
            raise UsageError(f"--nic-set {item.text}: {ifname} cannot change its {what} ({shown}): leave it out")
        if item.group == "coalesce":
            if item.param not in shown:
                raise UsageError(f"--nic-set {item.text}: {driver} on {ifname} has no {item.param} (ethtool -c "
                                 f"reads n/a): leave it out, or give one of {', '.join(sorted(shown)) or 'none'}")
            continue
        top = shown["max"].get(item.param)
        if top is None or shown["current"].get(item.param) is None:
            others = [k for k, v in shown["max"].items() if isinstance(v, int) and v > 0]
            raise UsageError(f"--nic-set {item.text}: {driver} on {ifname} has no {item.param} {what} (its maximum "
                             f"reads n/a): leave it out" + (f", or set {', '.join(others)}" if others else ""))
        if isinstance(top, int) and int(item.value) > top:
            raise UsageError(f"--nic-set {item.text}: {ifname}'s maximum is {top} ({driver}, ethtool "
                             f"{GROUPS[item.group][0]}): give {top} or less")
        if item.group == "channels" and int(item.value) == 0 and item.param != "other":
            raise UsageError(f"--nic-set {item.text}: {ifname} needs at least one {item.param} channel")


def setting_path(ns: str | None, ifname: str, group: str, param: str) -> str:
    """The registry key of a NIC setting: ethtool/NS/IF/GROUP/PARAM (NS empty: capbench's own
    namespace). Neither a namespace name (a file name) nor an interface name can hold a '/'."""
    return f"{KIND}/{ns or ''}/{ifname}/{group}/{param}"


def _split_path(path: str) -> tuple[str | None, str, str, str]:
    kind, ns, ifname, group, param = path.split("/")
    if kind != KIND or group not in GROUPS:
        raise RunError(f"{path!r} is not a NIC setting")
    return ns or None, ifname, group, param


def _gone(ns: str | None, ifname: str) -> bool:
    if ns and ns not in netns.list_netns():
        return True
    return not netns.link_exists(ifname, ns)


def read_setting(path: str) -> str:
    """The current value of a NIC setting, as ethtool prints it (the "ethtool" accessor's read)."""
    ns, ifname, group, param = _split_path(path)
    if _gone(ns, ifname):
        raise SettingGone(path)
    flag = GROUPS[group][0]
    ran, is_json = ethtool(ns, flag, ifname, json_first=True)
    if not ran.ok:
        raise RunError(f"cannot read {ifname}'s {GROUPS[group][2]} (ethtool {flag}): {ran.why}")
    if group == "coalesce":
        values = parse_coalesce_json(json.loads(ran.out)) if is_json else parse_coalesce(ran.out)
    else:
        values = (parse_max_current_json(json.loads(ran.out)) if is_json else parse_max_current(ran.out))["current"]
    value = values.get(param)
    if value is None:
        raise RunError(f"{ifname} has no {param} {GROUPS[group][2]} (ethtool {flag} reads n/a)")
    return str(value)


def write_setting(path: str, value: str) -> None:
    """Set a NIC setting (`ethtool -G/-L/-C IF PARAM VALUE`; the "ethtool" accessor's write)."""
    ns, ifname, group, param = _split_path(path)
    if _gone(ns, ifname):
        raise SettingGone(path)
    flag = GROUPS[group][1]
    ran = _run(ns, [ETHTOOL, flag, ifname, param, value])
    if not ran.ok:
        raise RunError(f"cannot set {ifname}'s {param} {GROUPS[group][2]} to {value} (ethtool {flag}): {ran.why}")


def is_nic_setting(path: str, value: str) -> bool:
    """Whether `path` at `value` is a --nic-set item capbench makes (a key of `setting_path`, a
    parameter of its group, on or off or a u32 as parse_nic_set allows): what the host-settings
    registry may read and write back (owners.declare)."""
    parts = path.split("/")
    if len(parts) != 5 or parts[0] != KIND or not parts[2] or len(parts[2]) >= IFNAMSIZ:
        return False
    group, param = parts[3], parts[4]
    if (group, param) not in SHORT_NAMES.values():  # every group's every parameter has a short name
        return False
    if param in COALESCE_ON_OFF:
        return value in ("on", "off")
    return value.isascii() and value.isdigit() and int(value) <= U32_MAX


owners.register_accessor(KIND, read_setting, write_setting)
owners.declare(KIND, is_nic_setting)


def hold(holder: Holder, ns: str | None, ifname: str, items: Iterable[NicSetting],
         registry: HostSettings | None = None) -> list[dict[str, str]]:
    """Apply each item for `holder`, in order, each held in the registry before it is changed: put
    back when the holder is released (`registry.release(holder.id)`) or found dead. The records of
    what changed (owners.Setting.record). On a failure the items already held stay held: the caller
    releases the holder, as for any host setting."""
    registry = registry or HostSettings()
    records = []
    for item in items:
        record = registry.hold(holder, item.setting(ns, ifname))
        if record:
            records.append(record)
    return records


# --- knobs: the NIC settings a search varies on a port (capbench tune, run --vary) -----------


@dataclass(frozen=True)
class NicKnob:
    """A setting of the capture port's NIC that `capbench tune --knobs` and `capbench run --vary` may
    set, per configuration, held like a --nic-set item (testbed.ports.StepSettings)."""

    name: str  # as --knobs and --vary name it
    group: str  # GROUPS: ring, channels, coalesce
    params: tuple[str, ...]  # its ethtool parameter: the first of these the driver has
    what: str  # in words
    lowest: int  # the smallest candidate (ring, channels: powers of two from here to the driver's maximum)
    fixed: tuple[int, ...] = ()  # the candidates where the driver reports no maximum (coalescing)


NIC_KNOBS = {k.name: k for k in (
    NicKnob("nic-ring", "ring", ("rx",), "receive ring", 64),
    # ethtool -c reports no maximum: from an interrupt per frame (0) to a few per millisecond.
    NicKnob("nic-rx-usecs", "coalesce", ("rx-usecs",), "receive interrupt coalescing", 0, (0, 8, 32, 128)),
    # Most NICs have combined channels (a queue pair per interrupt); some (veth) rx and tx ones.
    NicKnob("nic-channels", "channels", ("combined", "rx"), "receive channels", 1),
)}


# Where describe keeps what each group's `ethtool` flag shows.
DESCRIBED = {"ring": "rings", "channels": "channels", "coalesce": "coalescing"}


def knob_params(k: NicKnob, shown: Any) -> list[tuple[str, int, int | None]]:
    """The parameters of NIC knob `k` the driver shows in `shown` (parse_coalesce's values, or
    parse_max_current's "max" and "current"): (parameter, its value now, its maximum or None)."""
    if not isinstance(shown, dict):  # describe's reason: the driver cannot show the group
        return []
    if k.group == "coalesce":
        return [(p, shown[p], None) for p in k.params if isinstance(shown.get(p), int)]
    most, now = shown.get("max") or {}, shown.get("current") or {}
    return [(p, now[p], most[p]) for p in k.params
            if isinstance(most.get(p), int) and most[p] > 0 and isinstance(now.get(p), int)]


def knobs_described(desc: Mapping[str, Any]) -> tuple[str, ...]:
    """The NIC knobs whose parameter the port's driver showed in `desc` (describe's, as a trial
    records it): the ones read_knob would find there, so a search could change them."""
    return tuple(name for name, k in NIC_KNOBS.items() if knob_params(k, desc.get(DESCRIBED[k.group])))


def check_knob_text(name: str, value: str) -> str:
    """`value` of NIC knob `name` as a whole number, else one line saying what it takes (the
    driver's own limits are checked against the port: KnobReading.check)."""
    k = NIC_KNOBS[name]
    number = whole_number(value, k.lowest, U32_MAX)
    if number is None:
        raise UsageError(f"knob {name} {value!r}: the {k.what} takes a whole number from {k.lowest} to {U32_MAX}")
    return str(number)


@dataclass(frozen=True)
class KnobReading:
    """A NIC knob on one port: the driver's parameter, its value now, its maximum (None: the
    driver reports none)."""

    knob: NicKnob
    ifname: str
    driver: str
    param: str
    current: int
    maximum: int | None

    def candidates(self) -> tuple[str, ...]:
        """Powers of two from the knob's lowest to the driver's maximum and the maximum itself, or the
        knob's fixed ones; the current value among them."""
        if self.maximum is None:
            found = set(self.knob.fixed)
        else:
            found, v = {self.maximum}, max(1, self.knob.lowest)
            while v < self.maximum:
                found.add(v)
                v *= 2
        return tuple(str(v) for v in sorted(found | {self.current}))

    def check(self, value: str) -> None:
        if self.maximum is not None and int(value) > self.maximum:
            raise UsageError(f"knob {self.knob.name} {value}: {self.ifname}'s maximum is {self.maximum} "
                             f"({self.driver}, ethtool {GROUPS[self.knob.group][0]}): give {self.maximum} or less")

    def item(self, value: str) -> NicSetting:
        return NicSetting(self.knob.group, self.param, value)


def read_knob(ns: str | None, ifname: str, name: str) -> KnobReading:
    """NIC knob `name` on port `ifname`: what its driver reports (ethtool -g, -l, -c); UsageError with
    ethtool's own reason when the driver cannot show it (then it cannot change it either)."""
    k = NIC_KNOBS[name]
    show, change, what = GROUPS[k.group]
    ran, _ = ethtool(ns, "-i", ifname)
    driver = (parse_info(ran.out).get("driver") if ran.ok else None) or "its driver"
    ran, is_json = ethtool(ns, show, ifname, json_first=True)
    if not ran.ok:
        raise UsageError(f"knob {name}: {ifname} ({driver}) cannot change its {k.what} (ethtool {change}): "
                         f"`ethtool {show} {ifname}` says: {ran.why}")
    if k.group == "coalesce":
        shown = parse_coalesce_json(json.loads(ran.out)) if is_json else parse_coalesce(ran.out)
    else:
        shown = parse_max_current_json(json.loads(ran.out)) if is_json else parse_max_current(ran.out)
    found = knob_params(k, shown)
    if not found:
        raise UsageError(f"knob {name}: {ifname} ({driver}) has no {' or '.join(k.params)} {what} (`ethtool {show} "
                         f"{ifname}` reads n/a): leave {name} out")
    param, current, maximum = found[0]
    return KnobReading(k, ifname, driver, param, current, maximum)


# --- before sending on a real interface ----------------------------------------------------


def interfaces(ns: str | None) -> list[str]:
    return [link.get("ifname", "?") for link in _ip_json(ns, "link", "show")]


def check_exists(ns: str | None, ifname: str) -> None:
    """UsageError naming the namespace's interfaces when `ifname` is not one of them."""
    if ns and ns not in netns.list_netns():
        raise UsageError(f"no network namespace {ns!r}: see `ip netns list`")
    if not netns.link_exists(ifname, ns):
        where = f"namespace {ns}" if ns else "this namespace"
        raise UsageError(f"no interface {ifname!r} in {where}: give one of {', '.join(interfaces(ns))}")


IpJson = Callable[..., Any]  # (ns, *ip args) -> parsed `ip -j` output
FORCE_FLAG = "--force-iface"  # what lets a run use an interface send_hazard refuses


def default_route_interfaces(ns: str | None, ip_json: IpJson = _ip_json) -> set[str]:
    """The interfaces of the namespace's default routes, IPv4 and IPv6 (multipath ones too)."""
    found = set()
    for family in ("-4", "-6"):
        try:
            routes = ip_json(ns, family, "route", "show", "default")
        except RunError:
            continue
        for r in routes or []:
            found |= {h["dev"] for h in [r, *(r.get("nexthops") or [])] if h.get("dev")}
    return found


def ssh_interfaces(ssh_connection: str | None, ip_json: IpJson = _ip_json) -> set[str]:
    """The interfaces this SSH session uses (SSH_CONNECTION "client port server port"): the one
    holding the server address, and the one the route back to the client leaves by."""
    parts = (ssh_connection or "").split()
    if len(parts) != 4:
        return set()
    client, server = parts[0], parts[2]
    found = set()
    try:
        for link in ip_json(None, "addr", "show") or []:
            if any(a.get("local") == server for a in link.get("addr_info") or []):
                found.add(link["ifname"])
    except RunError:
        pass
    try:
        found |= {r["dev"] for r in ip_json(None, "route", "get", client) or [] if r.get("dev")}
    except RunError:
        pass
    return found - {"lo"}


def send_hazard(ns: str | None, ifname: str, *, ssh_connections: Mapping[str, str | None],
                ip_json: IpJson = _ip_json) -> str | None:
    """Why a host could lose its own network if capbench sent on `ifname` (or took its frames
    with XDP): it carries a default route of namespace `ns` (None: the host's own), or one of
    `ssh_connections` ({what it is: its SSH_CONNECTION as that host sees it}). None: neither.
    `ip_json` runs `ip -j` on that host (another host's: over its SSH connection)."""
    if ifname in default_route_interfaces(ns, ip_json):
        where = f" of namespace {ns}" if ns else ""
        return f"{ifname} carries the default route{where}: capbench would flood that host's own network"
    for what, connection in ssh_connections.items():
        if ifname in ssh_interfaces(connection, ip_json):
            return f"{ifname} carries {what}: sending on it could cut it off"
    return None


def check_safe_to_send(ns: str | None, ifname: str, *, force: bool, env: Mapping[str, str] | None = None,
                       ip_json: IpJson = _ip_json) -> None:
    """Refuse (UsageError) to send on the interface of the namespace's default route, or (in
    capbench's own namespace) the one this SSH session came in on, unless `force` (--force-iface)."""
    if force:
        return
    env = os.environ if env is None else env
    why = send_hazard(ns, ifname, ssh_connections={"this SSH session": env.get("SSH_CONNECTION")} if ns is None
                      else {}, ip_json=ip_json)
    if why:
        raise UsageError(f"{why}; give another interface, or add {FORCE_FLAG} if it is a test port")


def check_bounded_send(ifname: str, *, rate: Any, duration_s: float | None, count: int | None) -> None:
    """Sending on a real interface needs an explicit rate and a bounded duration or count."""
    if rate is None:
        raise UsageError(f"sending on {ifname} needs an explicit --rate (a real link has no default rate)")
    if not (duration_s and duration_s > 0) and not (count and count > 0):
        raise UsageError(f"sending on {ifname} needs a bounded --duration or --count")


def learn_mac(ns: str | None, ifname: str) -> str:
    """The interface's own MAC (/sys/class/net/IF/address, as ip shows it): the destination a
    generator on this host sends to when `ifname` is the capture port."""
    check_exists(ns, ifname)
    mac = ((_ip_json(ns, "link", "show", "dev", ifname) or [{}])[0].get("address") or "").lower()
    if not re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", mac) or mac == "00:00:00:00:00:00":
        raise UsageError(f"{ifname} has no Ethernet MAC address ({mac or 'none'}): give the sensor's with --dst-mac")
    return mac
