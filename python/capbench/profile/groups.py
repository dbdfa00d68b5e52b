"""The grouping table (groups.toml): which group of receive work a sample's time belongs to.

Everything that names kernel functions by group is in groups.toml; this module reads it once and
classifies stacks with it. The report's stacked bars and the flame graph's colours take the
groups' order, labels and colours from here too.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).with_name("groups.toml")
# The compiler's suffixes on a local copy of a function (GCC's interprocedural optimisations):
# `tpacket_rcv.constprop.0`, `veth_xdp_rcv_bulk_skb.isra.0`, `foo.part.0`, `foo.cold`.
_SUFFIX = re.compile(r"(\.(constprop|isra|part|cold|llvm)(\.\d+)?)+$")
# Samples of these kinds: no function names them (groups.toml's last groups); OTHERS is the time of
# what is not the trial's (profile.analysis.Owners); UNSAMPLED is the time of a CPU no sample fell in.
USER, REST, OTHERS, IDLE, UNSAMPLED = "user", "rest", "others", "idle", "unsampled"


@dataclass(frozen=True)
class Group:
    name: str
    label: str
    color: str
    kind: str = "functions"  # or USER, REST, OTHERS, IDLE, UNSAMPLED
    functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    groups: tuple[Group, ...]
    net_rx: tuple[str, ...]
    idle: tuple[str, ...]
    preempted: tuple[str, ...] = ()
    rx_thread: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return [g.name for g in self.groups]

    def busy_names(self) -> list[str]:
        """The groups of the trial's busy time on a CPU: all but others', the idle task's and the
        unsampled time."""
        return [g.name for g in self.groups if g.kind not in (OTHERS, IDLE, UNSAMPLED)]

    def by_kind(self, kind: str) -> Group:
        return next(g for g in self.groups if g.kind == kind)

    def label(self, name: str) -> str:
        return next((g.label for g in self.groups if g.name == name), name)

    def color(self, name: str) -> str:
        return next((g.color for g in self.groups if g.name == name), "#8c8c8c")


def base_name(symbol: str) -> str:
    """A symbol without the compiler's local-copy suffixes."""
    return _SUFFIX.sub("", symbol)


@functools.cache
def table(path: Path = TABLE) -> Table:
    """The grouping table, read once."""
    data = tomllib.loads(path.read_text())
    groups = tuple(Group(name=g["name"], label=g["label"], color=g["color"], kind=g.get("kind", "functions"),
                         functions=tuple(g.get("functions", ()))) for g in data["group"])
    context = data["context"]
    return Table(groups=groups, net_rx=tuple(context["net_rx"]), idle=tuple(context["idle"]),
                 preempted=tuple(context.get("preempted", ())), rx_thread=tuple(context.get("rx_thread", ())))


class _Matcher:
    """Names to groups: a name written out in full first, then the globs in the table's order."""

    def __init__(self, named: Sequence[tuple[str, Iterable[str]]]):
        self.exact: dict[str, str] = {}
        self.globs: list[tuple[str, re.Pattern[str]]] = []
        for name, patterns in named:
            globs = []
            for p in patterns:
                if any(c in p for c in "*?["):
                    globs.append(fnmatch.translate(p))
                else:
                    self.exact.setdefault(p, name)
            if globs:
                self.globs.append((name, re.compile("|".join(globs))))
        self.match = functools.lru_cache(maxsize=65536)(self._match)

    def _match(self, symbol: str) -> str | None:
        sym = base_name(symbol)
        if sym in self.exact:
            return self.exact[sym]
        return next((name for name, rx in self.globs if rx.match(sym)), None)


@functools.cache
def _matchers(path: Path = TABLE) -> tuple[_Matcher, _Matcher, _Matcher, _Matcher, _Matcher]:
    """(the groups' functions, the net_rx frames, the idle frames, the preemption frames, the receive
    threads' frames) of the table."""
    t = table(path)
    return (_Matcher([(g.name, g.functions) for g in t.groups if g.kind == "functions"]),
            _Matcher([("net_rx", t.net_rx)]), _Matcher([("idle", t.idle)]),
            _Matcher([("preempted", t.preempted)]), _Matcher([("rx_thread", t.rx_thread)]))


def group_of(kernel_frames: Sequence[str], reaches_user: bool, idle_task: bool, path: Path = TABLE) -> str:
    """The group of one sample: `kernel_frames` its kernel symbols leaf first, `reaches_user` whether
    its stack has user-space frames (or its leaf is one), `idle_task` whether it is pid 0's."""
    funcs, _, idle, _, _ = _matchers(path)
    t = table(path)
    for sym in kernel_frames:
        found = funcs.match(sym)
        if found is not None:
            return found
        if idle_task and idle.match(sym):
            return t.by_kind(IDLE).name
    return t.by_kind(USER).name if reaches_user else t.by_kind(REST).name


def frame_group(symbol: str, path: Path = TABLE) -> str | None:
    """The group one kernel frame's function belongs to (a flame graph's colour): the group that
    names it, the idle group for a frame of the idle loop, None when no group names it."""
    funcs, _, idle, _, _ = _matchers(path)
    found = funcs.match(symbol)
    if found is None and idle.match(symbol):
        return table(path).by_kind(IDLE).name
    return found


def is_net_rx(kernel_frames: Iterable[str], path: Path = TABLE) -> bool:
    """The sample ran NET_RX receive work (the softirq, a NAPI thread, busy polling)."""
    net_rx = _matchers(path)[1]
    return any(net_rx.match(sym) for sym in kernel_frames)


def is_preempted(kernel_frames: Iterable[str], path: Path = TABLE) -> bool:
    """The sample caught its task being preempted: the CPU handed to the next task."""
    preempted = _matchers(path)[3]
    return any(preempted.match(sym) for sym in kernel_frames)


def is_rx_thread(kernel_frames: Iterable[str], path: Path = TABLE) -> bool:
    """The sample is of a kernel thread that does NET_RX receive work (a threaded NAPI poll)."""
    rx_thread = _matchers(path)[4]
    return any(rx_thread.match(sym) for sym in kernel_frames)
