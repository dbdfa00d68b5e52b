"""A trial's samples turned into its record's `profile`: for each role of the trial (the
generator's CPU, the receive CPU, the counters' or programs' CPUs), where its CPUs' time went
(NET_RX, other kernel work, user space, idle), which group of receive work it went to
(groups.toml), its top functions, and its CPU time per captured packet; and the folded stacks
its flame graph is drawn from.

Every figure is a count of samples of the cpu-clock event, one every `period_ns` of a CPU's time
(busy or idle), so a share is samples / samples and a time is samples x period_ns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from capbench.profile import groups
from capbench.profile.perf_script import UNKNOWN, Sample

TOP_FUNCTIONS = 10  # each role's top functions by self and by total time
# The shares of a CPU's time by where its samples ran: NET_RX receive work (softirq or NAPI
# thread), the kernel's other work, user space, the idle task. They add up to 100 %.
SHARES = ("net_rx", "kernel", "user", "idle")


def _pct(n: int, total: int) -> float:
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
                 packets: int, period_ns: int, window_s: float, hz: float, profiler_pid: int | None) -> dict[str, Any]:
    """One role's block of the record, from its samples (`kinds[i]`: classify(samples[i]))."""
    mine = [i for i, s in enumerate(samples) if role.holds(s)]
    n = len(mine)
    cpus = sorted({samples[i].cpu for i in mine}) if role.pids is not None else sorted(role.cpus)
    shares = Counter(kinds[i][0] for i in mine)
    grouped = Counter(kinds[i][1] for i in mine)
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
    return {
        "cpus": cpus,  # a process role's: where its samples ran
        "processes": role.pids is not None,
        "samples": n,
        # A CPU gives one sample per period, busy or idle: fewer than this were lost or throttled.
        # (A process role's CPUs are shared: no such figure.)
        "expected_samples": round(window_s * hz) * len(cpus) if role.pids is None else None,
        "busy_ms": round(busy * period_ns / 1e6, 3),
        "shares_pct": {k: _pct(shares[k], n) for k in SHARES},
        "groups_pct": {g: _pct(grouped[g], n) for g in names},
        # The CPU time of these CPUs per captured packet: the busy samples' time / packets.
        "ns_per_packet": round(busy * period_ns / packets, 3) if packets else None,
        "groups_ns_per_packet": ({g: round(grouped[g] * period_ns / packets, 3) for g in names if g != idle_name}
                                 if packets else {}),
        "top_self": [[name, _pct(c, n)] for name, c in self_time.most_common(TOP_FUNCTIONS)],
        "top_total": [[name, _pct(c, n)] for name, c in total_time.most_common(TOP_FUNCTIONS)],
        "profiler_pct": _pct(sum(1 for i in mine if samples[i].pid == profiler_pid), n),
    }


def profile_record(samples: Sequence[Sample], roles: Mapping[str, Role], *, packets: int,
                   period_ns: int, hz: float, window_s: float, profiler_pid: int | None,
                   facts: Mapping[str, Any]) -> dict[str, Any]:
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
                                     hz=hz, profiler_pid=profiler_pid)
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
