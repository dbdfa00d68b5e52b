"""The trials' CPU profiles (`capbench run --profile`) as the report reads them.

A record's `profile` (capbench.profile.analysis.profile_record) is read here and nowhere else
in the report: the figure of where the receive CPU's time goes, the section's tables, the flame
graphs' titles and compare all take its figures from the Profile this module makes. The record
is input like any other: a field of the wrong type, or a number that is not finite, reads as
missing, never as a traceback.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.profile import groups
from capbench.profile.analysis import SHARES
from capbench.records import printable
from capbench.report.keys import AnyTrial, SettingsKey, as_trial, series_labels, settings_key
from capbench.report.load import Trial
from capbench.trial.record import TrialResult

RECEIVE, COUNTER = "receive", "counter"  # the roles the report shows (analysis: trial_run.roles)
TOP_SHOWN = 3  # top functions of the receive CPU in the section's table
NAME_MAX = 120  # a function's name as a table shows it, at most
NOT_PROFILED = ("no trial was profiled: `capbench run --profile` samples every CPU with perf over each trial's "
                "load window")


def _number(v: Any) -> float | None:
    """A finite number of 0 or more, or None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return f if math.isfinite(f) and f >= 0 else None


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 63 else None


def _text(v: Any, limit: int = NAME_MAX) -> str:
    text = printable(v) if isinstance(v, str) else ""
    return text if len(text) <= limit else text[:limit - 2] + ".."


def _dict(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}


@dataclass(frozen=True)
class RoleTime:
    """One role's block of a record's profile (analysis.role_profile), as far as it is readable."""

    cpus: tuple[int, ...]
    samples: int
    expected_samples: int | None  # None for a role of processes (its CPUs are shared)
    shares_pct: dict[str, float]  # net_rx, kernel, user, idle (0 where the record has none)
    groups_pct: dict[str, float]  # every group of groups.table(), in its order (0 where the record has none)
    groups_ns: dict[str, float]  # CPU ns per captured packet of each group but idle; {} when unknown
    ns_per_packet: float | None  # the role's busy time per captured packet; None when nothing was captured
    top_self: tuple[tuple[str, float], ...]
    top_processes: tuple[tuple[str, float], ...] = ()  # who ran there (comm), the trial's and others'

    @property
    def sampled(self) -> float:
        """The share of the window its samples cover (1 for a role of processes): a role of whole
        CPUs has the window's time, and the part no sample fell in is its "unsampled" group (this
        VM's halted idle vCPU takes no cpu-clock sample; lost samples neither)."""
        unsampled = groups.table().by_kind(groups.UNSAMPLED).name
        return max(0.0, 1.0 - self.groups_pct.get(unsampled, 0.0) / 100.0)

    def window_pct(self, group: str) -> float:
        """A group's share of the role's time over the load window (the records' groups_pct)."""
        return self.groups_pct.get(group, 0.0)

    @property
    def busy_window_pct(self) -> float:
        """The share of the window the role's CPUs were sampled busy (every group but idle)."""
        t = groups.table()
        quiet = (t.by_kind(groups.IDLE).name, t.by_kind(groups.UNSAMPLED).name)
        return sum(self.window_pct(g) for g in self.groups_pct if g not in quiet)


def _role(block: Any) -> RoleTime | None:
    if not isinstance(block, dict):
        return None
    names = groups.table().names()
    pct, ns = _dict(block.get("groups_pct")), _dict(block.get("groups_ns_per_packet"))
    shares = _dict(block.get("shares_pct"))
    cpus = block.get("cpus")
    top_self, top_processes = _pairs(block.get("top_self")), _pairs(block.get("top_processes"))
    ns_per_packet = _number(block.get("ns_per_packet"))
    return RoleTime(
        cpus=tuple(c for c in (cpus if isinstance(cpus, list) else []) if _count(c) is not None),
        samples=_count(block.get("samples")) or 0,
        expected_samples=_count(block.get("expected_samples")),
        shares_pct={k: _number(shares.get(k)) or 0.0 for k in SHARES},
        groups_pct={g: _number(pct.get(g)) or 0.0 for g in names},
        groups_ns=({g: _number(ns.get(g)) or 0.0 for g in groups.table().busy_names()}
                   if ns_per_packet is not None else {}),
        ns_per_packet=ns_per_packet,
        top_self=top_self, top_processes=top_processes)


def _pairs(value: Any) -> tuple[tuple[str, float], ...]:
    """[[name, pct], ...] of a record, as far as it is readable."""
    return tuple((_text(x[0]), v) for x in (value if isinstance(value, list) else [])
                 if isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and (v := _number(x[1])) is not None)


@dataclass(frozen=True)
class Profile:
    """A trial's profile: how it was sampled, what perf could not resolve, each role's time."""

    tool: str
    event: str
    hz: float | None
    period_ns: float | None
    samples: int
    frames: int
    unresolved_frames: int
    unresolved_leaf_samples: int
    folded: str  # the folded stacks' file, relative to the results folder ("" when none)
    warnings: tuple[str, ...]
    skipped_lines: int
    roles: dict[str, RoleTime]

    @property
    def receive(self) -> RoleTime | None:
        return self.roles.get(RECEIVE)

    @property
    def counter(self) -> RoleTime | None:
        return self.roles.get(COUNTER)


def profile_of(t: AnyTrial) -> Profile | None:
    """The trial's profile; None when it was not profiled (or its profile is not an object)."""
    p = as_trial(t).result.profile
    if not isinstance(p, dict) or not p:
        return None
    roles = {name: role for name, block in _dict(p.get("roles")).items()
             if isinstance(name, str) and (role := _role(block)) is not None}
    warnings = p.get("warnings")
    return Profile(
        tool=_text(p.get("tool")), event=_text(p.get("event")), hz=_number(p.get("hz")),
        period_ns=_number(p.get("period_ns")), samples=_count(p.get("samples")) or 0,
        frames=_count(p.get("frames")) or 0, unresolved_frames=_count(p.get("unresolved_frames")) or 0,
        unresolved_leaf_samples=_count(p.get("unresolved_leaf_samples")) or 0, folded=_text(p.get("folded"), 4096),
        warnings=tuple(_text(w, 300) for w in (warnings if isinstance(warnings, list) else []) if isinstance(w, str)),
        skipped_lines=_count(p.get("skipped_lines")) or 0, roles=roles)


def profiled(trials: Iterable[Trial]) -> list[tuple[Trial, Profile]]:
    """The trials that were profiled, with their profiles, in the order they ran."""
    return [(t, p) for t in trials if (p := profile_of(t)) is not None]


def receive_by_settings(trials: Iterable[Trial]) -> dict[SettingsKey, list[tuple[Trial, RoleTime]]]:
    """The receive CPU's time of each profiled measurement (its repetitions together), in the order
    the measurements ran. A trial whose profile names no receive CPU is left out."""
    out: dict[SettingsKey, list[tuple[Trial, RoleTime]]] = {}
    for t, p in profiled(trials):
        if p.receive is not None:
            out.setdefault(settings_key(t), []).append((t, p.receive))
    return out


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def sampling_text(meta: Mapping[str, Any], trials: Iterable[Trial]) -> str:
    """How the profiles were sampled, in words: perf's version, its event and rate (run.json's
    `profile`, else the first profile's own)."""
    run = _dict(meta.get("profile"))
    first = next((p for _t, p in profiled(trials)), None)
    tool = _text(run.get("tool")) or (first.tool if first else "") or "perf"
    event = _text(run.get("event")) or (first.event if first else "") or "cpu-clock"
    hz = _number(run.get("hz")) or (first.hz if first else None)
    period = _number(run.get("period_ns")) or (first.period_ns if first else None)
    rate = f" at {hz:g} Hz per CPU" if hz else ""
    every = f" (a sample every {period / 1e6:.3f} ms of each CPU's time)" if period else ""
    return f"Sampled by {tool}, event {event}{rate}{every}, over each trial's load window."


def _pct(v: float) -> str:
    return f"{v:.1f}"


def _ns(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}"


def _counter_ns(r: TrialResult, counter: RoleTime | None) -> str:
    """The counter's CPU time per packet; for a polling counter, with the share of that time its
    read loops polled idle (record.idle_poll_pct), which its time per packet includes."""
    ns = _ns(counter.ns_per_packet if counter else None)
    return ns if r.idle_poll_pct is None else f"{ns}\n({r.idle_poll_pct:.1f} % idle polling)"


def _top(role: RoleTime | None, n: int, processes: bool = False) -> str:
    pairs = () if role is None else role.top_processes if processes else role.top_self
    if not pairs:
        return "—"
    return "\n".join(f"{pct:.1f} % {name}" for name, pct in pairs[:n])


# The section's table: a row per profiled trial (each has its flame graph). COMPACT: the columns
# of the Markdown and terminal tables.
HEADERS = ("Backend", "Frame [B]", "Rate", "Receive CPU [ns/packet]",
           "NET_RX / kernel / user / idle / no sample [% of its time]", "Its top functions [% of its time, self]",
           "Who ran there [% of its time]", "Counter [ns/packet]", "Counter's top function [% of its time, self]",
           "Receive CPU's samples [of expected]", "Unresolved frames [of all]")
COMPACT = (0, 1, 2, 3, 4, 5, 7)
TEXT_COLUMNS = (0, 5, 6, 8)  # left-aligned: names


@dataclass(frozen=True)
class Row:
    trial: Trial
    profile: Profile
    cells: list[str]

    def compact(self) -> list[str]:
        return [self.cells[i] for i in COMPACT]


def rows(trials: Iterable[Trial], top: int = TOP_SHOWN) -> list[Row]:
    """A row per profiled trial, in the order they ran (HEADERS); `top`: how many functions of the
    receive CPU it names."""
    found = profiled(trials)
    labels = series_labels(settings_key(t).series for t, _p in found)
    repeated = {k for k, n in Counter(settings_key(t) for t, _p in found).items() if n > 1}
    out = []
    for t, p in found:
        r, rx, counter = t.result, p.receive, p.counter
        key = settings_key(t)
        backend = labels[key.series] + (f" (rep {r.repeat})" if key in repeated else "")
        samples = "—" if rx is None else (f"{rx.samples:,}" + (f" of {rx.expected_samples:,}"
                                                              if rx.expected_samples is not None else ""))
        unresolved = (f"{p.unresolved_frames:,} of {p.frames:,}" if p.frames else "—")
        out.append(Row(t, p, [
            backend, r.size_label, r.rate or "—", _ns(rx.ns_per_packet if rx else None),
            " / ".join(_pct(rx.shares_pct[k]) for k in SHARES) if rx else "—", _top(rx, top),
            _top(rx, top, processes=True), _counter_ns(r, counter), _top(counter, 1),
            samples, unresolved]))
    return out


def notes(trials: Iterable[Trial]) -> list[str]:
    """What the reader of the profiles must know: perf's warnings (lost samples), lines of its
    output that were no sample."""
    out = []
    for t, p in profiled(trials):
        r = t.result
        what = f"{r.backend} {r.size_label} B ({r.started_at})"
        out += [f"{what}: perf: {w}" for w in p.warnings]
        if p.skipped_lines:
            out.append(f"{what}: {p.skipped_lines:,} lines of perf script's output were no sample, skipped")
    return out
