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
# The shares of a CPU's time by where its samples ran: NET_RX receive work (softirq or NAPI
# thread), the kernel's other work, user space, the idle task, and the time without a sample.
# They add up to 100 %.
SHARES = ("net_rx", "kernel", "user", "idle", "unsampled")


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
                 proc_stat: tuple[Mapping[int, cpu.CpuJiffies], Mapping[int, cpu.CpuJiffies]] | None = None
                 ) -> dict[str, Any]:
    """One role's block of the record, from its samples (`kinds[i]`: classify(samples[i])) and,
    for a role of whole CPUs, /proc/stat read at the window's ends (`proc_stat`)."""
    mine = [i for i, s in enumerate(samples) if role.holds(s)]
    n = len(mine)
    cpus = sorted({samples[i].cpu for i in mine}) if role.pids is not None else sorted(role.cpus)
    # The time the shares are of, in periods: the window on each CPU, or the processes' samples.
    whole = role.pids is None
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
    busy = n - grouped[idle_name]
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
        # The CPU time of these CPUs per captured packet: the busy samples' time / packets.
        "ns_per_packet": round(busy * period_ns / packets, 3) if packets else None,
        "groups_ns_per_packet": ({g: round(grouped[g] * period_ns / packets, 3)
                                  for g in groups.table().busy_names()} if packets else {}),
        # Who ran there: the processes (their comm) of the samples, the trial's and any other.
        "top_processes": [[name, _pct(c, span)] for name, c in
                          Counter(samples[i].comm for i in mine).most_common(TOP_FUNCTIONS)],
        # The functions by the time in them (self) and under them (total), % of the role's time.
        "top_self": [[name, _pct(c, span)] for name, c in self_time.most_common(TOP_FUNCTIONS)],
        "top_total": [[name, _pct(c, span)] for name, c in total_time.most_common(TOP_FUNCTIONS)],
        "profiler_pct": _pct(sum(1 for i in mine if samples[i].pid == profiler_pid), span),
    }


def profile_record(samples: Sequence[Sample], roles: Mapping[str, Role], *, packets: int,
                   period_ns: int, hz: float, window_s: float, profiler_pid: int | None,
                   facts: Mapping[str, Any],
                   proc_stat: tuple[Mapping[int, cpu.CpuJiffies], Mapping[int, cpu.CpuJiffies]] | None = None
                   ) -> dict[str, Any]:
    """The record's `profile`: `facts` (how it was sampled, where its files are) and one block per
    role whose CPUs are known; the unresolved frames counted, not hidden."""
    kinds = [classify(s) for s in samples]
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
        "roles": {name: role_profile(samples, kinds, role, packets=packets, period_ns=period_ns, window_s=window_s,
                                     profiler_pid=profiler_pid, proc_stat=proc_stat)
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


# The folded stacks' mark of a kernel frame (stackcollapse-perf.pl --kernel's): `veth_poll_[k]`.
KERNEL_MARK = "_[k]"


def _folded_name(text: str) -> str:
    # The folded format separates frames with ";" and ends a line with " COUNT".
    return text.replace(";", ":")


def folded(samples: Sequence[Sample], roles: Mapping[str, Role]) -> dict[str, int]:
    """The samples as folded stacks (Brendan Gregg's format, flamegraph.pl's and inferno's input):
    `CPU 1 (receive, counter);comm;root frame;...;leaf frame` -> samples, a kernel frame marked
    `_[k]` as stackcollapse-perf.pl --kernel marks it."""
    labels = cpu_labels(roles, (s.cpu for s in samples))
    stacks: Counter[str] = Counter()
    for s in samples:
        names = [_folded_name(f.symbol + (KERNEL_MARK if f.kernel else "")) for f in reversed(s.frames)]
        stacks[";".join([labels[s.cpu], _folded_name(s.comm or "?"), *names])] += 1
    return dict(stacks)


def write_folded(path: Any, stacks: Mapping[str, int]) -> None:
    with open(path, "w") as f:
        for stack, count in sorted(stacks.items()):
            f.write(f"{stack} {count}\n")
