"""What a trial measured: the settings that identify it, the series it is drawn in.

Two trials with the same SettingsKey are repetitions of one measurement (in one run)
or the same measurement in two runs (`capbench compare`). The terminal tables, tables.md,
the figures and compare all group by these keys, so one definition says which settings
a measurement is:

- SeriesKey, one line in a figure, one table: method, backend, link, generator engine,
  application load, placement (the pin and the CPUs of generator, kernel receive work and
  counter), and every setting of AXES that differs from its default (processes, ring size,
  backend options, receive mode, the receive thread's scheduling, groups, a mix of frame lengths);
- SettingsKey: a series at one frame length and one rate.

What a trial merely observed (where the scheduler ran the counter's threads, the CPUs its
fanout workers were given) is no part of the identity, as repetitions differ in it; the
titles show it where it differs from the placement (cpus_used).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

from capbench.campaign.matrix import RUN_KNOBS, config_text, split_knob
from capbench.rates import link_name
from capbench.report.load import Trial
from capbench.testbed import rxmode
from capbench.trial.measure import TrialResult

# Trials or their typed results: the terminal tables hold results, the report their records.
AnyTrial = Trial | TrialResult


def _cpu(c: int | None) -> str:
    return "any" if c is None else str(c)


def _cpus(cpus: Iterable[int | None]) -> str:
    return ",".join(_cpu(c) for c in cpus)


def as_trial(t: AnyTrial) -> Trial:
    """A Trial of a TrialResult (a run in progress holds results): its fields are its record."""
    if isinstance(t, Trial):
        return t
    return Trial(t, {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}, t.method)


def value(t: Trial, name: str, default: Any = None) -> Any:
    """A record field as written; `default` for a record written before the field existed (what
    such a record measured, which need not be the field's default in TrialResult)."""
    return t.record.get(name, default)


def _bytes(n: Any) -> str:
    n = int(n)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _step_part(step: str, name: str) -> str:
    """The `name=` part of a campaign step key ("" when there is none)."""
    for part in step.split("|"):
        if part.startswith(f"{name}="):
            return part[len(name) + 1:]
    return ""


def _run_length(step: str) -> str:
    """`10 s` or `1,000,000 frames` from a step key's dur= or count= part; "" without either."""
    count = _step_part(step, "count")
    if count.isdigit():
        return f"{int(count):,} frames"
    dur = _step_part(step, "dur")
    return f"{dur[:-1]} s" if dur.endswith("s") else dur


def _profile(t: Trial) -> str:
    # A mix of lengths (imix:seed, random:64-960, ...) records its mean as frame_len: the
    # profile keeps it apart from a fixed length of that size, in a series of its own.
    size = str(value(t, "size", "") or "")
    return size if size and not size.isdigit() else ""


def _sensor(t: Trial) -> tuple[int, int] | int:
    """(this sensor, of how many) for a sensor behind the tap; 0 for a trial of one capture."""
    n = int(value(t, "sensors", 0) or 0)
    return (int(value(t, "sensor", 0) or 0), n) if n else 0


DEFAULTS = "defaults"  # how tables name the configuration of a step that set no knob (a tune's baseline)


def knobs_of(t: Trial) -> dict[str, str]:
    """The knobs a trial's step set (capbench run --vary, capbench tune); {} for none."""
    return dict(value(t, "knobs", {}) or {})


def _backend_knobs(t: Trial) -> str:
    """A trial's backend knobs, "block-size=1M" (its backend is the series'), and its port's NIC
    knobs ("nic-ring=1024"); its run knobs show as their own settings (ring, rx ring, placement)."""
    return config_text((owner[1][2:] if (owner := split_knob(n)) else n, v) for n, v in knobs_of(t).items()
                       if n not in RUN_KNOBS)


@dataclass(frozen=True)
class Axis:
    """A setting of a measurement beyond the SeriesKey's own fields."""

    name: str  # the record's field
    default: Any  # what a record written before the field existed measured
    title: str  # how keys and titles name it: "ring 4 MiB"
    text: Callable[[Any], str] = str  # the value as titles show it
    get: Callable[[Trial], Any] | None = None  # for a setting not in the record as such
    titled: Callable[[Trial], str] | None = None  # a title that depends on the trial's other settings

    def title_of(self, t: Trial) -> str:
        return self.titled(t) if self.titled is not None else self.title


# Every setting of a trial that makes it another measurement, beyond method, backend, link,
# engine, app load, placement, frame length and rate (SeriesKey, SettingsKey). A trial whose
# value differs from the default holds (title, text) in SeriesKey.extra. One line per setting.
AXES: tuple[Axis, ...] = (
    Axis("procs", 1, "procs"),  # capture processes
    Axis("ring_bytes", 0, "ring", _bytes),
    Axis("backend_args", "", "backend args"),
    Axis("knobs", "", "knobs", get=_backend_knobs),  # the backend options a --vary or tune set
    Axis("rx_mode", "rps", "rx mode"),  # napi: the capture veth's NAPI thread does the receive work; rps: RPS
    # The receive thread's scheduling ("other", "fifo:50"; "" with rps), named after its model's thread.
    Axis("napi_sched", "", "receive thread",
         titled=lambda t: rxmode.RECEIVE_THREADS.get(str(value(t, "rx_mode", "rps")), "receive thread")),
    # The receive ring's depth in frames (--rx-ring with --rx-mode cpumap; the veth's 256 before).
    Axis("rx_ring", 256, "rx ring", lambda v: "—" if v is None else f"{v:,} frames"),
    # The receive CPU's backlog queue in packets, where a knob set it (the host's own otherwise).
    Axis("backlog", None, "backlog", lambda v: f"{v:,} packets"),
    Axis("groups", "", "groups", get=lambda t: _step_part(str(value(t, "step", "") or ""), "groups")),
    # The run length where a campaign varies it (--duration LIST) or counts frames (--count).
    Axis("run", "", "run", get=lambda t: _run_length(str(value(t, "step", "") or ""))),
    Axis("sizes", "", "sizes", get=_profile),  # a mix of frame lengths (its mean is the frame length)
    # Several sensors on one stream: which one, of how many (each its own series and table).
    Axis("sensor", 0, "sensor", get=lambda t: _sensor(t), text=lambda v: f"{v[0]} of {v[1]}"),
)
# The app load of a capture program's trial: the work it does is its own, not capbench-cap's --app-load.
PROGRAM_APP_LOAD = "its own"
# What the key is made of, in words (error messages and help).
IDENTITY_TEXT = ("method, backend, frame length, rate, link, engine, app load, placement, "
                 + ", ".join(a.title for a in AXES))


# The settings a run knob sets (campaign.matrix.RUN_KNOBS): the axis, or the placement ("pin").
KNOB_AXES = {"ring": "ring_bytes", "rx-ring": "rx_ring", "pin": "placement", "backlog": "backlog", "knobs": "knobs"}
assert set(KNOB_AXES) - {"knobs"} == set(RUN_KNOBS), "a run knob without the axis it sets"


def without_knobs(t: AnyTrial, also: Iterable[str] = ()) -> SeriesKey:
    """A trial's series but the settings its knobs set, and those the knobs `also` set elsewhere in
    its run (a tune's defaults set none, and run the rx ring its other configurations vary): what
    the configurations of a --vary (or a tune) share, which a ranking of them groups by."""
    t = as_trial(t)
    knobs = knobs_of(t)
    set_here = {KNOB_AXES["knobs"]} | {KNOB_AXES[n] for n in (*knobs, *also) if n in KNOB_AXES}
    if not _step_part(str(value(t, "step", "") or ""), "ring"):
        # no --ring: the buffer it ran is its options' (ring_bytes from the program's summary),
        # the same --backend-args for all, so a backend knob made any difference
        set_here.add(KNOB_AXES["ring"])
    titles = {a.title_of(t) for a in AXES if a.name in set_here}
    k = series_key(t)
    return dataclasses.replace(k, extra=tuple(e for e in k.extra if e[0] not in titles),
                               placement="placement by knob" if KNOB_AXES["pin"] in set_here else k.placement)


def axis_value(t: Trial, axis: Axis) -> Any:
    v = axis.get(t) if axis.get is not None else value(t, axis.name, axis.default)
    if isinstance(v, list):
        v = tuple(v)
    return axis.default if v is None else v


def placement_of(t: Trial) -> str:
    """`gen 0, rx 1, app 1`: the CPUs of generator, kernel receive work and counter (with several
    capture processes, the CPU of each)."""
    r = as_trial(t).result
    procs = int(value(t, "procs", 1) or 1)
    proc_cpus = tuple(value(t, "proc_cpus", ()) or ())
    app = _cpus(proc_cpus) if procs > 1 and proc_cpus else _cpu(r.cap_cpu)
    return f"gen {_cpu(r.gen_cpu)}, rx {_cpu(r.kernel_rx_cpu)}, app {app}"


def pin_of(t: Trial) -> str:
    """The seeds' name of a placement: A:A (kernel and counter share a CPU), A:B (apart),
    auto (left to the scheduler); a record's own `pin` field, then its step's, wins."""
    t = as_trial(t)
    if t.record.get("pin"):
        return str(t.record["pin"])
    step_pin = pin_of_step(t.result.step)
    if step_pin in ("A:A", "A:B", "auto"):
        return step_pin
    r = t.result
    if r.cap_cpu is None or r.kernel_rx_cpu is None:
        return "auto"
    return "A:A" if r.cap_cpu == r.kernel_rx_cpu else "A:B"


def pin_of_step(step: str) -> str:
    """The `pin=` part of a campaign step key ("" when there is none)."""
    return _step_part(step, "pin")


def step_base(step: str) -> str:
    """A step key without its repetition: the repetitions of one step share it."""
    return step.rsplit("|rep=", 1)[0]


@dataclass(frozen=True, order=True)
class SeriesKey:
    """Everything but frame length and rate: one line in a figure, one table."""

    method: str
    backend: str
    link: str
    engine: str
    app_load: str
    placement: str
    extra: tuple[tuple[str, str], ...] = ()  # (Axis.title, its text) of the settings off their default

    def title(self, used: str = "") -> str:
        """`1g link, A:A (gen 0, rx 1, app 1), engine xdp, app load touch, ring 4 MiB`; `used`
        (cpus_used) joins the placement."""
        placement = self.placement if not used else (
            f"{self.placement[:-1]}; {used})" if self.placement.endswith(")") else f"{self.placement} ({used})")
        extra = "".join(f", {k} {v}" for k, v in self.extra)
        return f"{self.link} link, {placement}, engine {self.engine}, app load {self.app_load}{extra}"


@dataclass(frozen=True, order=True)
class SettingsKey:
    series: SeriesKey
    frame_len: int
    rate: str

    def text(self) -> str:
        s = self.series
        parts = [s.method, s.backend, f"{self.frame_len} B", f"{s.link} link"]
        parts += [f"rate {self.rate}"] if self.rate else []
        parts += [f"engine {s.engine}", f"app load {s.app_load}", s.placement]
        parts += [f"{k} {v}" for k, v in s.extra]
        return ", ".join(parts)


def series_key(t: AnyTrial) -> SeriesKey:
    t = as_trial(t)
    r = t.result
    extra = []
    for axis in AXES:
        v = axis_value(t, axis)
        if v != axis.default:
            extra.append((axis.title_of(t), axis.text(v)))
    return SeriesKey(method=t.method, backend=r.backend, link=link_name(r.link_bps), engine=r.gen_engine,
                     app_load=r.app_load or (PROGRAM_APP_LOAD if r.app_command else "touch"), placement=f"{pin_of(t)} ({placement_of(t)})",
                     extra=tuple(extra))


def settings_key(t: AnyTrial) -> SettingsKey:
    """The key `capbench compare` matches trials by, and repetitions share."""
    t = as_trial(t)
    return SettingsKey(series_key(t), t.result.frame_len, t.result.rate)


RUN_AXIS = next(a for a in AXES if a.name == "run")


def run_length(key: SettingsKey) -> float | None:
    """The run length a key names (its `run` setting: `2 s`, `1,000 frames`, as a number); None
    when it names none (a run of one length)."""
    text = dict(key.series.extra).get(RUN_AXIS.title)
    return None if text is None else float(text.split()[0].replace(",", ""))


def without_run_length(key: SettingsKey) -> SettingsKey:
    extra = tuple(e for e in key.series.extra if e[0] != RUN_AXIS.title)
    return dataclasses.replace(key, series=dataclasses.replace(key.series, extra=extra))


def matched(a: Iterable[SettingsKey], b: Iterable[SettingsKey]) -> dict[SettingsKey, SettingsKey]:
    """A's keys matched to B's (`capbench compare`): the same key; else, where only one of the runs
    names the run length (a tune names each rung's trial length, `run 2 s`, and a campaign of
    several durations each duration; a run of one length names none), the same key but for it,
    the longest of that run's lengths: a tune's last rung, the one it decided on and its best
    configuration's run line repeats."""
    a, b = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    out = {k: k for k in a if k in set(b)}
    rest_a = [k for k in a if k not in out]
    rest_b = [k for k in b if k not in out.values()]

    def by_base(keys: list[SettingsKey], named: bool) -> dict[SettingsKey, SettingsKey]:
        """base -> the key of the longest run length (named) or the one key naming none."""
        found: dict[SettingsKey, SettingsKey] = {}
        for k in keys:
            length = run_length(k)
            if (length is not None) != named:
                continue
            base = without_run_length(k)
            if base not in found or (named and length > (run_length(found[base]) or 0.0)):
                found[base] = k
        return found

    for named_a in (True, False):
        side_a, side_b = by_base(rest_a, named_a), by_base(rest_b, not named_a)
        out |= {ka: side_b[base] for base, ka in side_a.items() if base in side_b}
    return out


def cpus_used(trials: Iterable[AnyTrial]) -> str:
    """Where the capture really ran, when that is not the placement's counter CPU: the CPUs its
    fanout workers were pinned to (`worker_cpus`) and the CPUs its read threads last ran on
    (`cap_cpus_seen`), over all the trials of a table; and whether one is the generator's.
    "" when they are the counter's CPUs (or the records do not say)."""
    placed: set[int] = set()
    workers: set[int] = set()
    seen: set[int] = set()
    gen: set[int] = set()
    for t in trials:
        t = as_trial(t)
        r = t.result
        procs = int(value(t, "procs", 1) or 1)
        proc_cpus = tuple(value(t, "proc_cpus", ()) or ())
        placed |= {c for c in (proc_cpus if procs > 1 and proc_cpus else (r.cap_cpu,)) if c is not None}
        workers |= set(value(t, "worker_cpus", ()) or ())
        seen |= set(value(t, "cap_cpus_seen", ()) or ())
        if r.gen_cpu is not None:
            gen.add(r.gen_cpu)
    parts = []
    if workers and workers != placed:
        parts.append(f"workers on CPU{'s' if len(workers) > 1 else ''} {', '.join(map(str, sorted(workers)))}")
    others = seen - workers if workers else seen
    if others and others != placed:
        parts.append(f"read threads ran on CPU{'s' if len(others) > 1 else ''} "
                     f"{', '.join(map(str, sorted(others)))}")
    shared = sorted(((workers | others) & gen) - placed)
    if parts and shared:
        parts.append(f"CPU {', '.join(map(str, shared))} is the generator's")
    return "; ".join(parts)


def series_labels(keys: Iterable[SeriesKey]) -> dict[SeriesKey, str]:
    """Short legend labels: the backend, plus only the settings that differ between the series."""
    keys = list(dict.fromkeys(keys))
    varying = [f.name for f in fields(SeriesKey)
               if f.name != "backend" and len({getattr(k, f.name) for k in keys}) > 1]
    # The settings every series holds alike (a tune's rx mode, its rung's run length) name none of them.
    shared = set.intersection(*(set(k.extra) for k in keys)) if keys else set()
    labels = {}
    for k in keys:
        parts = [k.backend]
        for name in varying:
            v = getattr(k, name)
            if name == "extra":
                own = [f"{a} {b}" for a, b in v if (a, b) not in shared]
                # a series at its defaults where the others set something says so, not just its backend
                parts += own or ["defaults"]
            elif name == "placement":
                parts.append(v.split(" (")[0] if _pins_differ(keys) else v)
            elif name == "app_load":
                parts.append(f"load {v}")
            else:
                parts.append(str(v))
        labels[k] = " ".join(parts)
    return labels


def key_labels(keys: list[SettingsKey]) -> dict[SettingsKey, str]:
    """Short names: the series label (backend and what differs), frame length, and the rate where two
    measurements differ by it alone (a search's answer has no rate of its own)."""
    labels = series_labels(k.series for k in keys)
    rates: dict[tuple, set[str]] = {}
    for k in keys:
        rates.setdefault((k.series, k.frame_len), set()).add(k.rate)
    return {k: f"{labels[k.series]} {k.frame_len} B"
            + (f" at {k.rate}" if k.rate and len(rates[k.series, k.frame_len]) > 1 else "") for k in keys}


def _pins_differ(keys: list[SeriesKey]) -> bool:
    """Whether the short pin names (A:A, A:B, auto) alone tell the placements apart."""
    full = {k.placement for k in keys}
    return len({p.split(" (")[0] for p in full}) == len(full)
