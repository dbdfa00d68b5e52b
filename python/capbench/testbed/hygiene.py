"""System settings that change capture figures: recorded in run.json, and set by `--tune`.

Recorded before a campaign: each CPU's frequency governor (where the kernel
exposes cpufreq; VMs often do not), the net.core sysctls (host_sysctl), the
capture interface's RPS masks and offloads (GRO, LRO, ... from `ethtool -k`),
and the IRQ affinity of its queues (a veth has no IRQ: its receive work runs in
the sender's softirq or where RPS steers it).

`--tune` sets what helps a capture benchmark and puts it back afterwards: its
test bed holds each host setting (capbench.owners), which is put back when the
last test bed holding it goes, so a crashed run is undone by `capbench testbed
down`, and never under another run that still needs it: the `performance` governor, a backlog of
10,000 packets and a 64 MiB socket buffer ceiling (net.core.rmem_max). On the
capture interface it turns receive offloads that merge packets (GRO, GRO list)
off, so the counter sees every frame as sent; the interface is the test bed's
own and goes with it, so nothing needs putting back (a veth has them off
already, and LRO is fixed off). The RPS masks are every run's business, not
--tune's: --pin sets them for each step. A veth has no IRQ to move.

What a killed capbench left behind besides its test bed: the programs in its cgroups (testbed.cgroups),
which changed their user or ignored every signal it could no longer send, and its folders in /tmp
(named with its pid). The next run ends the programs; `capbench testbed down` ends them and removes
the folders.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import shutil
import stat
import statistics
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from capbench import owners
from capbench.testbed import cgroups
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.owners import Setting, process_alive

TUNED_BACKLOG = 10_000
TUNED_RMEM_MAX = 64 << 20
NOISE_SPREAD_PCT = 5.0  # repeated trials spread by more than this: the machine looks noisy
GOVERNORS = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


def governors() -> dict[str, str] | str:
    found = {}
    for path in sorted(glob.glob(GOVERNORS)):
        cpu = re.search(r"cpu(\d+)", path)
        try:
            found[cpu.group(1) if cpu else path] = Path(path).read_text().strip()
        except OSError:
            continue
    return found or "not exposed (no cpufreq in this kernel or VM)"


def offloads(ns: str | None, ifname: str) -> dict[str, str] | str:
    """`ethtool -k IF` in `ns`: the offloads that change what a capture sees (gro, lro, ...)."""
    if shutil.which("ethtool") is None:
        return "ethtool not installed (apt-get install ethtool)"
    try:
        out = netns.sh(ns, f"ethtool -k {ifname}")
    except Exception as e:  # noqa: BLE001 - a record, never a failure
        return f"ethtool -k {ifname} failed: {e}"
    keep = ("generic-receive-offload", "large-receive-offload", "rx-gro-hw", "rx-gro-list",
            "generic-segmentation-offload", "rx-vlan-offload", "rx-checksumming")
    result = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in keep:
            result[key.strip()] = value.strip()
    return result


def rps_masks(ns: str | None, ifname: str) -> dict[str, str]:
    script = f"for f in /sys/class/net/{ifname}/queues/rx-*/rps_cpus; do echo $f $(cat $f); done"
    try:
        out = netns.sh(ns, script)
    except Exception:  # noqa: BLE001
        return {}
    masks = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            masks[parts[0].split("/queues/")[1].split("/")[0]] = parts[1]
    return masks


def kernel_config_text() -> str | None:
    """The running kernel's build configuration (/proc/config.gz, or /boot/config-RELEASE)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read()
    except OSError:
        pass
    try:
        return Path(f"/boot/config-{os.uname().release}").read_text()
    except OSError:
        return None


def irq_time_accounting(config: str | None) -> str:
    """How /proc/stat's irq and softirq columns (the kernel load) are measured.

    With CONFIG_IRQ_TIME_ACCOUNTING the kernel reads a clock on every interrupt and
    softirq entry and exit, so the time is exact. Without it (tick accounting) each
    timer tick charges the whole tick to whatever it interrupted: softirq time is a
    sample, and a receive path that takes a few % of a CPU for a second may show 0."""
    if config is None:
        return "unknown (no /proc/config.gz or /boot/config-RELEASE to read)"
    if re.search(r"^CONFIG_IRQ_TIME_ACCOUNTING=y", config, re.M):
        return "exact (CONFIG_IRQ_TIME_ACCOUNTING)"
    hz = re.search(r"^CONFIG_HZ=(\d+)", config, re.M)
    every = f"{1000 / int(hz.group(1)):g} ms timer tick" if hz else "timer tick"
    return (f"sampled at every {every} (no CONFIG_IRQ_TIME_ACCOUNTING): a kernel load of a few % "
            "over a short trial may read 0")


def snapshot(ns: str | None = None, ifname: str | None = None) -> dict[str, Any]:
    """What run.json records of the system (the capture interface's part when one is given)."""
    snap: dict[str, Any] = {"cpu_governors": governors(), "sysctls": host_sysctl.snapshot(),
                            "irq_time_accounting": irq_time_accounting(kernel_config_text()),
                            "programs_held_by": cgroups.containment()}
    if ifname:
        snap["capture_interface"] = {
            "name": ifname,
            "rps_cpus": rps_masks(ns, ifname),
            "offloads": offloads(ns, ifname),
            "irq_affinity": "none: a veth has no IRQ (its receive work runs in the sender's softirq, or "
                            "where RPS steers it)" if ifname.startswith("cb") else irq_affinity(ifname),
        }
    return snap


def irq_affinity(ifname: str) -> dict[str, str]:
    """smp_affinity_list of the IRQs named after a real NIC (/proc/interrupts)."""
    found = {}
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        if ifname in line:
            irq = line.split(":", 1)[0].strip()
            try:
                found[irq] = Path(f"/proc/irq/{irq}/smp_affinity_list").read_text().strip()
            except OSError:
                continue
    return found


def tuned_settings() -> list[Setting]:
    """The host settings --tune needs (its test bed holds each one: capbench.owners)."""
    governors = [Setting(path=path, value="performance", at_least=False) for path in sorted(glob.glob(GOVERNORS))]
    return governors + [host_sysctl.setting(key, value)
                        for key, value in ((host_sysctl.BACKLOG, TUNED_BACKLOG), (host_sysctl.RMEM_MAX, TUNED_RMEM_MAX))]


def is_governor(path: str, value: str) -> bool:
    """Whether `path` at `value` is a CPU's frequency governor (GOVERNORS) at a governor's name (at
    most CPUFREQ_NAME_LEN - 1 = 15 characters): what the host-settings registry may read and write
    back (owners.declare)."""
    return owners.glob_matches(GOVERNORS, path) and re.fullmatch(r"[a-z0-9_]{1,15}", value) is not None


owners.declare(owners.FILE, is_governor)


MERGING_OFFLOADS = {"generic-receive-offload": "gro", "rx-gro-list": "rx-gro-list"}


def tune_interface(ns: str | None, ifname: str) -> dict[str, str]:
    """Turn off the receive offloads of `ifname` that merge packets; {offload: what was done}."""
    found = offloads(ns, ifname)
    if isinstance(found, str):
        return {"offloads": found}
    done = {}
    for name, flag in MERGING_OFFLOADS.items():
        state = found.get(name, "")
        if not state:
            continue
        if state.startswith("off"):
            done[name] = "off already"
        elif "[fixed]" in state:
            done[name] = f"{state}: the driver does not let it change"
        else:
            try:
                netns.sh(ns, f"ethtool -K {ifname} {flag} off")
                done[name] = "turned off"
            except Exception as e:  # noqa: BLE001 - said in run.json, the run goes on
                done[name] = f"could not turn off: {e}"
    return done


def noisy(groups: Iterable[tuple[str, list[float]]]) -> list[str]:
    """Warnings for repeated measurements whose spread ((max − min) / median) exceeds 5 %."""
    out = []
    for name, values in groups:
        if len(values) < 2:
            continue
        med = statistics.median(values)
        if med > 0:
            spread = 100.0 * (max(values) - min(values)) / med
            if spread > NOISE_SPREAD_PCT:
                out.append(f"{name}: {len(values)} repetitions spread by {spread:.1f} % "
                           f"(more than {NOISE_SPREAD_PCT:g} %): the machine looks noisy")
    return out


# --- what a killed capbench left behind ------------------------------------------------


def stale_run_groups(root: Path | None) -> list[tuple[cgroups.Group, int]]:
    """The run groups under `root` whose capbench no longer runs (killed: nobody ended them), with
    its pid."""
    return [(group, pid) for group, pid, ticks in cgroups.run_groups(root) if not process_alive(pid, ticks)]


def left_running(group: cgroups.Group, pid: int, gone: bool = True) -> str:
    """What runs in the run group of capbench `pid` (`gone`: which no longer runs); "" if nothing."""
    commands = [cgroups.command_line(p) or "(gone)" for p in group.pids()]
    owner = f"capbench pid {pid}" + (", which no longer runs" if gone else "")
    return f"{len(commands)} process(es) of {owner}: {'; '.join(commands)}" if commands else ""


def stale_programs() -> list[str]:
    """What runs in the run groups of every capbench that was killed, a line for each."""
    return [text for group, pid in stale_run_groups(cgroups.hierarchy_root()) if (text := left_running(group, pid))]


def end_run_group(group: cgroups.Group, pid: int, gone: bool = True) -> list[str]:
    """Kill everything in the run group of capbench `pid` (`gone`: which no longer runs) and remove
    it; a line for what ran in it, and one if it stays."""
    text = left_running(group, pid, gone)
    lines = [f"ended {text}"] if text else []
    if not group.end():
        lines.append(f"could not remove the cgroup {group.path}: remove it by hand (rmdir) when it is empty")
    return lines


def end_stale_programs() -> list[str]:
    """End the programs of every capbench that was killed (its run groups): a line for each."""
    return [line for group, pid in stale_run_groups(cgroups.hierarchy_root()) for line in end_run_group(group, pid)]


def end_programs_of(pid: int, start_ticks: int | None) -> list[str]:
    """End the programs capbench process `pid` started (its run group, wherever it is), running or not."""
    if start_ticks is None:
        return []
    name, gone = cgroups.run_group_name(pid, start_ticks), not process_alive(pid, start_ticks)
    return [line for group, _, _ in cgroups.run_groups(cgroups.hierarchy_root()) if group.path.name == name
            for line in end_run_group(group, pid, gone)]


def folders_of(prefix: str, pid: int | None = None) -> list[Path]:
    """The folders /tmp/<prefix><pid>-* that capbench process `pid` made, or (None) that every capbench
    that no longer runs made: of this user (another user's folder, or a link, is not capbench's)."""
    found = []
    for path in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
        owner = path.name[len(prefix):].split("-", 1)[0]
        try:
            st = path.lstat()
        except OSError:
            continue
        if (owner.isdigit() and stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
                and (int(owner) == pid if pid is not None else not process_alive(int(owner)))):
            found.append(path)
    return sorted(found)
