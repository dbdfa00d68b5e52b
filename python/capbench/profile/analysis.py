"""A trial's samples turned into its record's `profile`: for each role of the trial (the
generator's CPU, the receive CPU, the counters' or programs' CPUs), where its CPUs' time went
(NET_RX, other kernel work, user space, idle), which group of receive work it went to
(groups.toml), its top functions, and its CPU time per captured packet; and the folded stacks
its flame graph is drawn from.

Every figure is a count of samples of the cpu-clock event, one every `period_ns` of a CPU's time,
so a time is samples x period_ns. A role of whole CPUs has window_s of each CPU's time, and its
shares are of that: the time no sample fell in is "unsampled" (on this VM a halted idle vCPU
takes no samples; a vCPU the hypervisor did not run neither), and /proc/stat's idle and steal
shares over the same window are kept beside it as the kernel's own account. A role of processes
(the counters) has the time of its samples.

Only the trial's own work makes a role's figures (Owners: its processes and its receive threads);
everything else on its CPUs is the group "others" (other processes, other test beds' receive
threads), with its top processes named, so that a busy host does not read as a slow capture stack.
A sample that caught one of the trial's tasks being preempted by another's (the scheduler hands the
CPU over on its way back to user space: the tick that preempts is the one the sampler aliases with)
is others' too. A process role's figures are of its own time; the time others took from it is its
`others_ms`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from capbench.profile import groups
from capbench.testbed import cpu
from capbench.profile.perf_script import UNKNOWN, Sample

TOP_FUNCTIONS = 10  # each role's top functions by self and by total time
# The shares of a CPU's time by where its samples ran: the trial's NET_RX receive work (softirq or
# NAPI thread), its other kernel work, its user space, others' work (not the trial's: Owners), the
# idle task, and the time without a sample. They add up to 100 %.
SHARES = ("net_rx", "kernel", "user", "others", "idle", "unsampled")
OTHERS = "others"  # the share of others' work (its group is groups.toml's of kind OTHERS)
FOREIGN_NET_RX = "NET_RX softirq of another device"  # others' work done in one of the trial's tasks


def _pct(n: float, total: float) -> float:
    return round(100.0 * n / total, 3) if total else 0.0


def classify(s: Sample) -> tuple[str, str]:
    """(share, group) of one sample."""
    ksyms = s.kernel_symbols
    group = groups.group_of(ksyms, s.reaches_user, s.pid == 0)
    if groups.is_net_rx(ksyms):
        share = "net_rx"
    elif s.user_leaf:
        share = "user"
    elif group == groups.table().by_kind(groups.IDLE).name:
        share = "idle"
    else:
        share = "kernel"
    return share, group


@dataclass(frozen=True)
class Owners:
    """Whose samples are the trial's: its processes (capbench, its programs, counters, generator and
    profiler: every process of its run cgroup, testbed.cgroups) and its receive threads (the NAPI or
    cpumap kernel threads it placed). Without receive threads of its own (RPS), the trial's receive
    work is NET_RX softirq work in whatever task its CPU was running, so NET_RX work there is the
    trial's, except in another device's receive thread; with them, NET_RX work anywhere else is
    another device's (another test bed's softirq or thread)."""

    pids: frozenset[int]
    rx_threads: frozenset[int] = frozenset()

    def holds(self, s: Sample) -> bool:
        if s.pid in self.rx_threads:
            return True
        ksyms = s.kernel_symbols
        if groups.is_net_rx(ksyms):
            return not self.rx_threads and not groups.is_rx_thread(ksyms)
        return s.pid == 0 or s.pid in self.pids  # pid 0: the CPU's idle task


def _next_on_cpu(samples: Sequence[Sample]) -> list[int | None]:
    """For each sample, the next one on its CPU (perf script prints them in time order)."""
    found: list[int | None] = [None] * len(samples)
    last: dict[int, int] = {}
    for i, s in enumerate(samples):
        if s.cpu in last:
            found[last[s.cpu]] = i
        last[s.cpu] = i
    return found


def classify_all(samples: Sequence[Sample], owners: Owners | None) -> tuple[list[tuple[str, str]], dict[int, str]]:
    """(share, group) of every sample, others' samples ("others") told apart by `owners` (None:
    every sample is the trial's), and the process each of others' samples stands for (its own, or
    for a trial task preempted there the task that ran next)."""
    kinds = [classify(s) for s in samples]
    takers: dict[int, str] = {}
    if owners is None:
        return kinds, takers
    theirs = [not owners.holds(s) for s in samples]
    others = (OTHERS, groups.table().by_kind(groups.OTHERS).name)
    for i, (s, j) in enumerate(zip(samples, _next_on_cpu(samples))):
        if theirs[i]:
            # Another device's NET_RX softirq work in one of the trial's tasks is named as such.
            mine = s.pid in owners.pids or s.pid in owners.rx_threads
            kinds[i], takers[i] = others, FOREIGN_NET_RX if mine else s.comm
        elif j is not None and theirs[j] and groups.is_preempted(s.kernel_symbols):
            kinds[i], takers[i] = others, samples[j].comm
    return kinds, takers


@dataclass(frozen=True)
class Role:
    """Whose samples make a role: those of whole CPUs (the generator's, the receive work's), or
    those of some processes wherever they ran (the counters, a capture program's process tree:
    on a CPU they share with the receive work, only their own time)."""

    cpus: tuple[int, ...] = ()
    pids: frozenset[int] | None = None

    def holds(self, s: Sample) -> bool:
        return s.pid in self.pids if self.pids is not None else s.cpu in self.cpus


def role_profile(samples: Sequence[Sample], kinds: Sequence[tuple[str, str]], role: Role, *,
                 packets: int, period_ns: int, window_s: float, profiler_pid: int | None,
                 proc_stat: tuple[Mapping[int, cpu.CpuJiffies], Mapping[int, cpu.CpuJiffies]] | None = None,
                 takers: Mapping[int, str] | None = None) -> dict[str, Any]:
    """One role's block of the record, from its samples (`kinds[i]`, `takers`: classify_all's) and,
    for a role of whole CPUs, /proc/stat read at the window's ends (`proc_stat`)."""
    takers = takers or {}
    held = [i for i, s in enumerate(samples) if role.holds(s)]
    theirs = [i for i in held if i in takers]
    # The samples whose shares the role's figures are: every one of its CPUs', or a process role's own.
    whole = role.pids is None
    mine = held if whole else [i for i in held if i not in takers]
    n = len(mine)
    cpus = sorted({samples[i].cpu for i in held}) if not whole else sorted(role.cpus)
    # The time the shares are of, in periods: the window on each CPU, or the processes' samples.
    span = max(float(n), window_s * 1e9 / period_ns * len(cpus)) if whole else float(n)
    shares = Counter(kinds[i][0] for i in mine)
    shares["unsampled"] = span - n
    grouped: Counter[Any] = Counter(kinds[i][1] for i in mine)
    unsampled = groups.table().by_kind(groups.UNSAMPLED).name
    grouped[unsampled] = span - n
    self_time: Counter[str] = Counter()
    total_time: Counter[str] = Counter()
    for i in mine:
        frames = samples[i].frames
        if frames:
            self_time[frames[0].name] += 1
        total_time.update({f.name for f in frames})
    idle_name = groups.table().by_kind(groups.IDLE).name
    others_name = groups.table().by_kind(groups.OTHERS).name
    busy = n - grouped[idle_name] - grouped[others_name]  # the trial's own work
    names = groups.table().names()
    stat = {}
    if whole and proc_stat is not None:
        # The kernel's own account of the same CPUs over the window (a cross-check of "unsampled").
        stat = {"stat_idle_pct": cpu.time_pct(*proc_stat, cpus, "idle", "iowait"),
                "stat_steal_pct": cpu.time_pct(*proc_stat, cpus, "steal")}
    return {
        "cpus": cpus,  # a process role's: where its samples ran
        "processes": not whole,
        "samples": n,
        # The periods of the window on these CPUs: a CPU that took a sample every period, busy or
        # idle, has this many. (A process role's CPUs are shared: no such figure.)
        "expected_samples": round(window_s * 1e9 / period_ns) * len(cpus) if whole else None,
        "busy_ms": round(busy * period_ns / 1e6, 3),
        "shares_pct": {k: _pct(shares[k], span) for k in SHARES},
        "groups_pct": {g: _pct(grouped[g], span) for g in names},
        **stat,
        # The trial's CPU time of these CPUs per captured packet: its busy samples' time / packets.
        "ns_per_packet": round(busy * period_ns / packets, 3) if packets else None,
        "groups_ns_per_packet": ({g: round(grouped[g] * period_ns / packets, 3)
                                  for g in groups.table().busy_names()} if packets else {}),
        # Who ran there: the processes (their comm) of the samples, the trial's and any other.
        "top_processes": [[name, _pct(c, span)] for name, c in
                          Counter(samples[i].comm for i in mine).most_common(TOP_FUNCTIONS)],
        # Others' time here (not the trial's: Owners): on a process role's CPUs, the time they took
        # from its processes; and who they were, % of the role's time.
        "others_ms": round(len(theirs) * period_ns / 1e6, 3),
        "others_top_processes": [[name, _pct(c, span)] for name, c in
                                 Counter(takers[i] for i in theirs).most_common(TOP_FUNCTIONS)],
        # The functions by the time in them (self) and under them (total), % of the role's time.
        "top_self": [[name, _pct(c, span)] for name, c in self_time.most_common(TOP_FUNCTIONS)],
        "top_total": [[name, _pct(c, span)] for name, c in total_time.most_common(TOP_FUNCTIONS)],
        "profiler_pct": _pct(sum(1 for i in mine if samples[i].pid == profiler_pid), span),
    }


def profile_record(samples: Sequence[Sample], roles: Mapping[str, Role], *, packets: int,
                   period_ns: int, hz: float, window_s: float, profiler_pid: int | None,
                   facts: Mapping[str, Any],
                   proc_stat: tuple[Mapping[int, cpu.CpuJiffies], Mapping[int, cpu.CpuJiffies]] | None = None,
                   owners: Owners | None = None) -> dict[str, Any]:
    """The record's `profile`: `facts` (how it was sampled, where its files are) and one block per
    role whose CPUs are known, the trial's work told from others' by `owners` (None: all of it the
    trial's); the unresolved frames counted, not hidden."""
    kinds, takers = classify_all(samples, owners)
    frames = sum(len(s.frames) for s in samples)
    unresolved = sum(1 for s in samples for f in s.frames if f.symbol == UNKNOWN)
    return {
        **facts,
        "period_ns": period_ns,
        "hz": hz,
        "window_s": round(window_s, 6),
        "samples": len(samples),
        "packets": packets,
        "frames": frames,
        "unresolved_frames": unresolved,
        "unresolved_leaf_samples": sum(1 for s in samples if s.frames and s.frames[0].symbol == UNKNOWN),
        # What the trial's own work was told from others' by: how many processes, which receive threads.
        "owners": None if owners is None else {"processes": len(owners.pids),
                                               "rx_threads": sorted(owners.rx_threads)},
        "roles": {name: role_profile(samples, kinds, role, packets=packets, period_ns=period_ns, window_s=window_s,
                                     profiler_pid=profiler_pid, proc_stat=proc_stat, takers=takers)
                  for name, role in roles.items()},
    }


def cpu_labels(roles: Mapping[str, Role], cpus: Iterable[int]) -> dict[int, str]:
    """The flame graph's root frame of each CPU: `CPU 1 (receive, counter)` (the roles of whole
    CPUs, and those of processes pinned there)."""
    labels = {}
    for c in sorted(set(cpus)):
        mine = [name for name, role in roles.items() if c in role.cpus]
        labels[c] = f"CPU {c}" + (f" ({', '.join(mine)})" if mine else "")
    return labels


# The folded stacks' frame above others' samples (not the trial's), under their CPU's.
OTHERS_FRAME = "[others: not the trial's]"
# The folded stacks' mark of a kernel frame (stackcollapse-perf.pl --kernel's): `veth_poll_[k]`.
KERNEL_MARK = "_[k]"


def _folded_name(text: str) -> str:
    # The folded format separates frames with ";" and ends a line with " COUNT".
    return text.replace(";", ":")


def folded(samples: Sequence[Sample], roles: Mapping[str, Role], owners: Owners | None = None) -> dict[str, int]:
    """The samples as folded stacks (Brendan Gregg's format, flamegraph.pl's and inferno's input):
    `CPU 1 (receive, counter);comm;root frame;...;leaf frame` -> samples, a kernel frame marked
    `_[k]` as stackcollapse-perf.pl --kernel marks it; others' samples (not the trial's: `owners`,
    classify_all) under one frame OTHERS_FRAME after their CPU's."""
    labels = cpu_labels(roles, (s.cpu for s in samples))
    theirs = classify_all(samples, owners)[1]
    stacks: Counter[str] = Counter()
    for i, s in enumerate(samples):
        names = [_folded_name(f.symbol + (KERNEL_MARK if f.kernel else "")) for f in reversed(s.frames)]
        whose = [OTHERS_FRAME] if i in theirs else []
        stacks[";".join([labels[s.cpu], *whose, _folded_name(s.comm or "?"), *names])] += 1
    return dict(stacks)


def write_folded(path: Any, stacks: Mapping[str, int]) -> None:
    with open(path, "w") as f:
        for stack, count in sorted(stacks.items()):
            f.write(f"{stack} {count}\n")
