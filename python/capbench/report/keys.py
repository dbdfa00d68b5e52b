"""What a trial measured: the settings that identify it, the series it is drawn in.

Two trials with the same SettingsKey are repetitions of one measurement (in one run)
or the same measurement in two runs (`capbench compare`). The key holds every setting
a trial record carries: method, backend, frame length, link, rate, generator engine,
application load and placement (the CPUs of generator, kernel receive work and
counter); axes that later methods add to the record (`procs`, `ring`, `traffic`) join
it when present.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from capbench.rates import link_name
from capbench.report.load import Trial

EXTRA_AXES = ("procs", "ring", "traffic")


def _cpu(c: int | None) -> str:
    return "any" if c is None else str(c)


def placement_of(t: Trial) -> str:
    """`gen 0, rx 1, app 1`: the CPUs of generator, kernel receive work and counter."""
    r = t.result
    return f"gen {_cpu(r.gen_cpu)}, rx {_cpu(r.kernel_rx_cpu)}, app {_cpu(r.cap_cpu)}"


def pin_of(t: Trial) -> str:
    """The seeds' name of a placement: A:A (kernel and counter share a CPU), A:B (apart),
    auto (left to the scheduler); a record's own `pin` field, then its step's, wins."""
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
    for part in step.split("|"):
        if part.startswith("pin="):
            return part[4:]
    return ""


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
    extra: tuple[tuple[str, str], ...] = ()


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


def series_key(t: Trial) -> SeriesKey:
    r = t.result
    extra = tuple((k, str(t.record[k])) for k in EXTRA_AXES if t.record.get(k) is not None)
    # A mix of lengths (imix:seed, random:64-960, ...) records its mean as frame_len: the
    # profile keeps it apart from a fixed length of that size, in a series of its own.
    size = str(t.record.get("size") or "")
    if size and not size.isdigit():
        extra += (("sizes", size),)
    return SeriesKey(method=t.method, backend=r.backend, link=link_name(r.link_bps), engine=r.gen_engine,
                     app_load=r.app_load or "touch", placement=f"{pin_of(t)} ({placement_of(t)})", extra=extra)


def settings_key(t: Trial) -> SettingsKey:
    """The key `capbench compare` matches trials by, and repetitions share."""
    return SettingsKey(series_key(t), t.result.frame_len, t.result.rate)


def series_labels(keys: Iterable[SeriesKey]) -> dict[SeriesKey, str]:
    """Short legend labels: the backend, plus only the settings that differ between the series."""
    keys = list(dict.fromkeys(keys))
    varying = [f.name for f in fields(SeriesKey)
               if f.name != "backend" and len({getattr(k, f.name) for k in keys}) > 1]
    labels = {}
    for k in keys:
        parts = [k.backend]
        for name in varying:
            value = getattr(k, name)
            if name == "extra":
                parts += [f"{a}={b}" for a, b in value]
            elif name == "placement":
                parts.append(value.split(" (")[0] if _pins_differ(keys) else value)
            elif name == "app_load":
                parts.append(f"load {value}")
            else:
                parts.append(str(value))
        labels[k] = " ".join(parts)
    return labels


def _pins_differ(keys: list[SeriesKey]) -> bool:
    """Whether the short pin names (A:A, A:B, auto) alone tell the placements apart."""
    full = {k.placement for k in keys}
    return len({p.split(" (")[0] for p in full}) == len(full)
