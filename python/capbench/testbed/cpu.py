"""CPU time and kernel drop counters, read from /proc as snapshots with deltas.

- /proc/stat: per-CPU jiffies; the softirq+irq share of one CPU is the kernel's
  receive work when RPS steers it there ("kernel load" in the seed's tables).
- /proc/PID/stat: utime+stime of a process (all its threads), in clock ticks
  ("application load").
- /proc/net/softnet_stat: per-CPU packet counters; the 2nd column (hex) counts
  frames dropped because the CPU's backlog queue was full
  (net.core.netdev_max_backlog): drops before any socket sees the frame.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuJiffies:
    """One CPU's line of /proc/stat (guest time is already inside user/nice)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal

    @property
    def kernel_rx(self) -> int:
        """Interrupt and softirq time: where the kernel's packet receive work is accounted."""
        return self.irq + self.softirq


def parse_proc_stat(text: str) -> dict[int, CpuJiffies]:
    """Per-CPU jiffies from the text of /proc/stat."""
    cpus: dict[int, CpuJiffies] = {}
    for line in text.splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            name, *fields = line.split()
            values = [int(v) for v in fields[:8]] + [0] * (8 - len(fields[:8]))
            cpus[int(name[3:])] = CpuJiffies(*values)
    return cpus


def read_proc_stat(path: str = "/proc/stat") -> dict[int, CpuJiffies]:
    with open(path) as f:
        return parse_proc_stat(f.read())


def kernel_rx_pct(before: dict[int, CpuJiffies], after: dict[int, CpuJiffies], cpu: int) -> float:
    """softirq+irq time of `cpu` between two snapshots, as % of that CPU's time."""
    total = after[cpu].total - before[cpu].total
    if total <= 0:
        return 0.0
    return 100.0 * (after[cpu].kernel_rx - before[cpu].kernel_rx) / total


def time_pct(before: dict[int, CpuJiffies], after: dict[int, CpuJiffies], cpus: Iterable[int],
             *fields: str) -> float | None:
    """The share (%) of the time of `cpus` between two snapshots that /proc/stat accounts to
    `fields` (idle, iowait, steal, ...); None where a CPU is missing or no time passed."""
    cpus = list(cpus)
    if not cpus or any(c not in before or c not in after for c in cpus):
        return None
    total = sum(after[c].total - before[c].total for c in cpus)
    if total <= 0:
        return None
    part = sum(getattr(after[c], f) - getattr(before[c], f) for c in cpus for f in fields)
    return round(100.0 * part / total, 3)


def _stat_fields(text: str) -> list[str]:
    """The fields of a /proc/PID/stat line from field 3 (state) on. The command name (field 2)
    may contain spaces and parentheses, so split after the last ')'."""
    return text.rsplit(")", 1)[1].split()


def parse_pid_stat_ticks(text: str) -> int:
    """utime+stime (clock ticks) from the text of /proc/PID/stat."""
    fields = _stat_fields(text)
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return int(fields[11]) + int(fields[12])


def read_pid_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return parse_pid_stat_ticks(f.read())


def process_cpu_pct(ticks_before: int, ticks_after: int, window_s: float) -> float:
    """A process's CPU time between two snapshots as % of one CPU over `window_s`."""
    if window_s <= 0:
        return 0.0
    return 100.0 * (ticks_after - ticks_before) / CLK_TCK / window_s


def parse_softnet_drops(text: str) -> dict[int, int]:
    """Per-CPU backlog drop counters from the text of /proc/net/softnet_stat.

    One line per online CPU; since Linux 5.10 the 13th column is the CPU number
    (older kernels skip offline CPUs, so the line index is only a fallback).
    """
    drops: dict[int, int] = {}
    for index, line in enumerate(text.splitlines()):
        cols = line.split()
        if len(cols) < 2:
            continue
        cpu = int(cols[12], 16) if len(cols) >= 13 else index
        drops[cpu] = int(cols[1], 16)
    return drops


def read_softnet_drops(path: str = "/proc/net/softnet_stat") -> dict[int, int]:
    with open(path) as f:
        return parse_softnet_drops(f.read())


def counter_delta(before: dict[int, int], after: dict[int, int], cpus=None) -> int:
    """Sum of the per-CPU increases of a counter (over `cpus`, or all CPUs).

    The softnet counters are 32-bit in the kernel, so a decrease is a wrap.
    """
    total = 0
    for cpu, value in after.items():
        if cpus is not None and cpu not in cpus:
            continue
        d = value - before.get(cpu, 0)
        total += d if d >= 0 else d + (1 << 32)
    return total


def usable_cpus() -> list[int]:
    """The CPUs this process may run on that are online, in order."""
    return sorted(online_cpus() & os.sched_getaffinity(0))


def online_cpus(path: str = "/sys/devices/system/cpu/online") -> set[int]:
    """CPU numbers from a kernel cpu list such as `0-3,6`."""
    try:
        with open(path) as f:
            return parse_cpu_list(f.read())
    except OSError:
        return set(range(os.cpu_count() or 1))


def parse_cpu_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def parse_pid_stat_last_cpu(text: str) -> int:
    """The CPU a task last ran on (field 39 of /proc/PID/stat or /proc/PID/task/TID/stat)."""
    return int(_stat_fields(text)[36])


def read_thread_cpus(pid: int) -> tuple[int, ...]:
    """The CPUs the threads of `pid` other than its main thread last ran on, sorted and
    distinct: for capbench-cap, where its read loops (the workers) are running. Empty if
    the process has no other thread or is gone."""
    return tuple(sorted(_task_cpus(pid, skip_main=True)))


def _task_cpus(pid: int, *, skip_main: bool = False, proc: str = "/proc") -> set[int]:
    """The CPUs the threads of `pid` last ran on (without its main thread: `skip_main`); empty
    if the process is gone."""
    cpus = set()
    try:
        tids = [t for t in os.listdir(f"{proc}/{pid}/task") if not (skip_main and t == str(pid))]
    except OSError:
        return cpus
    for tid in tids:
        try:
            with open(f"{proc}/{pid}/task/{tid}/stat") as f:
                cpus.add(parse_pid_stat_last_cpu(f.read()))
        except (OSError, IndexError, ValueError):
            continue  # the thread ended between the listing and the read
    return cpus


def parse_pid_stat_times(text: str) -> tuple[int, int, int, int]:
    """(utime, stime, cutime, cstime) in clock ticks from the text of /proc/PID/stat (fields 14-17:
    the task's own user and system time, and those of its children it has waited for)."""
    fields = _stat_fields(text)
    return int(fields[11]), int(fields[12]), int(fields[13]), int(fields[14])


def parse_pid_stat_ppid(text: str) -> int:
    """The parent's pid (field 4 of /proc/PID/stat)."""
    return int(_stat_fields(text)[1])


def process_tree(root: int, proc: str = "/proc") -> tuple[int, ...]:
    """`root` and every process descended from it that is alive now, root first. A capture program
    may fork (dumpcap under tshark, a supervisor and its workers): the whole tree is the thing
    under test."""
    parents: dict[int, int] = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as f:
                parents[int(name)] = parse_pid_stat_ppid(f.read())
        except (OSError, IndexError, ValueError):
            continue  # it ended between the listing and the read
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier and pid not in tree]
        tree += frontier
    return tuple(tree)


@dataclass(frozen=True)
class TreeTimes:
    """The user and system CPU time (clock ticks) of a process tree at one moment, and its processes."""

    user: int
    system: int
    pids: tuple[int, ...]


def read_tree_times(root: int, proc: str = "/proc") -> TreeTimes:
    """CPU time of `root`'s process tree: every live process's own time, plus the root's waited-for
    children's (cutime, cstime: a child that ended and was reaped during the window keeps its time
    there). A child that ended but is not reaped yet is still in the tree. FileNotFoundError if
    `root` is gone."""
    user = system = 0
    pids = process_tree(root, proc)
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/stat") as f:
                ut, st, cut, cst = parse_pid_stat_times(f.read())
        except (OSError, IndexError, ValueError):
            if pid == root:
                raise FileNotFoundError(f"{proc}/{pid}/stat") from None
            continue
        user += ut + (cut if pid == root else 0)
        system += st + (cst if pid == root else 0)
    return TreeTimes(user, system, pids)


def read_tree_cpus(pids: tuple[int, ...], proc: str = "/proc") -> tuple[int, ...]:
    """The CPUs every thread of the processes `pids` last ran on, sorted and distinct."""
    return tuple(sorted({c for pid in pids for c in _task_cpus(pid, proc=proc)}))


def pids_named(named: Callable[[str], bool], proc: Path = Path("/proc")) -> list[int]:
    """The pids, in order, of the tasks whose comm (a thread's name, cut to 15 characters) `named`
    accepts."""
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue  # gone between the listing and the read
        if named(comm):
            pids.append(int(entry.name))
    return sorted(pids)


def ksoftirqd_pid(cpu: int, proc: Path = Path("/proc")) -> int | None:
    """The pid of CPU `cpu`'s ksoftirqd (comm "ksoftirqd/N"): where that CPU's softirq work runs once
    the kernel defers it from the back of an interrupt. None if there is none."""
    found = pids_named(lambda comm: comm == f"ksoftirqd/{cpu}", proc)
    return found[0] if found else None
