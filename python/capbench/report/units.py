"""The unit of a figure's axis, chosen for the range of its values: every figure of the
report asks here, so that an axis reads "1.2 Mpps" and never "1.2" under a "1e6" offset.

A quantity names its base unit (pps, bps, %, ns) and the units it may be shown in, smallest
first; `pick` takes the largest unit in which the largest value is still at least 1 (a share:
% from 0.01 %, ppm below). A log axis spans decades (latency: a p50 of 10 µs beside a max of
3 ms), where the largest value's unit would read "0.01 ms": `pick_typical` takes the unit of
the median of the values given (the figure gives its lowest percentile), so that typical
values read as whole numbers. The report's figures
also never use matplotlib's offset or scientific notation (`PLAIN`, `plain`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib


@dataclass(frozen=True)
class Unit:
    name: str  # as the axis label shows it
    factor: float  # base units per one of it: a value in base units / factor = the value in this unit
    least: float | None = None  # the largest magnitude (base units) from which it is chosen; None: factor

    def of(self, value: float) -> float:
        return value / self.factor


# Per quantity, in its base unit: the units it may be shown in, smallest first.
UNITS: dict[str, tuple[Unit, ...]] = {
    "pps": (Unit("pps", 1.0), Unit("kpps", 1e3), Unit("Mpps", 1e6), Unit("Gpps", 1e9)),
    "bps": (Unit("bps", 1.0), Unit("kbps", 1e3), Unit("Mbps", 1e6), Unit("Gbps", 1e9)),
    # a share in %: below 0.01 % in parts per million of the whole (0.0001 % = 1 ppm)
    "pct": (Unit("ppm", 1e-4, 0.0), Unit("%", 1.0, 0.01)),
    "ns": (Unit("ns", 1.0), Unit("µs", 1e3), Unit("ms", 1e6), Unit("s", 1e9)),
}

# No offset ("+1.4e6" above an axis) and no scientific notation ("1e−6") on any axis of the report's figures.
PLAIN = {"axes.formatter.useoffset": False, "axes.formatter.limits": (-100, 100)}
matplotlib.rcParams.update(PLAIN)


def pick(quantity: str, values: Iterable[float]) -> Unit:
    """The unit of `quantity` for values (in its base unit): the largest in which the largest
    magnitude is at least 1 (or its `least`); the smallest when there are no values or all are 0."""
    units = UNITS[quantity]
    # NaN is a figure not measured (stats.stat_of of none): it chooses no unit.
    top = max((abs(v) for v in values if not math.isnan(v)), default=0.0)
    chosen = units[0]
    for u in units:
        if top >= (u.factor if u.least is None else u.least):
            chosen = u
    return chosen


def pick_typical(quantity: str, values: Iterable[float]) -> Unit:
    """The unit of `quantity` in which the median magnitude of values is at least 1 (`pick` of it):
    for an axis over decades, where the largest value would push typical ones below 1."""
    ordered = sorted(abs(v) for v in values)
    return pick(quantity, ordered[len(ordered) // 2:][:1])


def plain(value: float) -> str:
    """A tick of a log axis without an exponent: "0.01", "10", "100,000" (not "1e+05")."""
    if value == 0 or abs(value) >= 1:
        return f"{value:,.0f}"
    return f"{value:.{-math.floor(math.log10(abs(value)) + 1e-9)}f}"


def label(text: str, unit: Unit, after: str = "") -> str:
    """An axis label: "captured [Mpps]", or with `after`, "lost [% of sent]"."""
    return f"{text} [{unit.name}{' ' + after if after else ''}]"


def least_span(axis, span: float) -> None:
    """Widen an axis (ax.xaxis or ax.yaxis) around its middle to at least `span` of its data units:
    without an offset, values a hair apart would get ticks of many decimals."""
    lo, hi = axis.get_view_interval()
    if hi - lo < span:
        mid = (lo + hi) / 2
        (axis.axes.set_xlim if axis is axis.axes.xaxis else axis.axes.set_ylim)(mid - span / 2, mid + span / 2)
