"""Figures of merit over repetitions, the best backend per frame length, the first loss.

Each trial is judged by the one rule of capbench.methods.verdict: a trial that lost
frames is a capture result (lossy), whether or not its generator held the offered load;
one whose generator fell short and that lost nothing is a lower bound, which measured
the generator, not the capture method at that load, and never counts as a capture
result here. A group of repetitions uses only its valid (measured) trials; a group with
none is "short" and reported as such.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from capbench.trial import loss_layers
from capbench.trial.accounting import format_pct
from capbench.methods import registry
from capbench.methods.measurer import disturbed, superseded
from capbench.methods.verdict import measured
from capbench.report.keys import SeriesKey, SettingsKey, settings_key
from capbench.report.load import Trial
from capbench.trial.measure import OFFERED_MIN_SHARE, TrialResult

# A change of a CPU load smaller than this (percentage points of one CPU) is no change, however
# consistent: the load is sampled from scheduler ticks, and the counter's loop spins or sleeps
# with what else runs on its CPU.
CPU_LEAST_CHANGE_PTS = 3.0
# A change of the captured rate smaller than the share of the offered load the generator may
# miss and still count as having offered it (trial.OFFERED_MIN_SHARE) is the generator's, not
# the capture's.
RATE_LEAST_CHANGE_PCT = 100.0 * (1.0 - OFFERED_MIN_SHARE)


def _share(n: int, r: TrialResult) -> float:
    return 100.0 * n / r.sent if r.sent else 0.0


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    unit: str
    higher_is_better: bool
    get: Callable[[TrialResult], float]
    is_loss: bool = False
    least_change: float = 0.0  # no smaller absolute change counts (in `unit`)
    least_rel_pct: float = 0.0  # no smaller change relative to A counts (%)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("rx_pps", "captured", "pps", True, lambda r: r.rx_pps, least_rel_pct=RATE_LEAST_CHANGE_PCT),
    Metric("rx_gbps", "captured", "Gbps", True, lambda r: r.rx_gbps, least_rel_pct=RATE_LEAST_CHANGE_PCT),
    Metric("loss_pct", "loss", "%", False, lambda r: r.loss_pct, is_loss=True),
    Metric("ring_pct", f"lost in {loss_layers.RX_RING}", "% of sent", False,
           lambda r: _share(loss_layers.ring_drops(r), r), is_loss=True),
    Metric("link_pct", f"lost at {loss_layers.LINK} (no counter)", "% of sent", False,
           lambda r: _share(loss_layers.link_only_drops(r), r), is_loss=True),
    Metric("backlog_pct", "lost in backlog", "% of sent", False, lambda r: _share(r.backlog_drops, r), is_loss=True),
    Metric("socket_pct", "lost at socket", "% of sent", False, lambda r: _share(loss_layers.own_drops(r, loss_layers.SOCKET), r),
           is_loss=True),
    # Either sign is a disagreement of the counters: closer to 0 is better.
    Metric("unexplained_pct", "unexplained (either sign)", "% of sent", False,
           lambda r: abs(_share(r.unexplained, r)), is_loss=True),
    Metric("app_cpu_pct", "app load", "% CPU", False, lambda r: r.app_cpu_pct, least_change=CPU_LEAST_CHANGE_PTS),
    # None where not measured (a remote sensor or a port without a receive CPU): left out of the Stat.
    Metric("kernel_cpu_pct", "kernel load", "% CPU", False, lambda r: r.kernel_cpu_pct,
           least_change=CPU_LEAST_CHANGE_PTS),
)}


@dataclass(frozen=True)
class Stat:
    """A figure over repetitions: median, min–max, count, sample standard deviation (0 for one)
    and mean (NaN where unknown)."""

    median: float
    lo: float
    hi: float
    n: int
    sd: float = 0.0
    mean: float = math.nan

    @property
    def exact_zero(self) -> bool:
        return self.lo == 0 and self.hi == 0

    @property
    def spread(self) -> bool:
        """Repetitions that did not all give the same value."""
        return self.n > 1 and self.lo != self.hi

    def scaled(self, k: float) -> Stat:
        return Stat(self.median * k, self.lo * k, self.hi * k, self.n, self.sd * abs(k), self.mean * k)


def stat_of(values: Iterable[float | None]) -> Stat:
    """The Stat of the values that were measured (None: not measured, left out); of none, NaN and
    n 0 (load_text shows it as not measured)."""
    v = [x for x in values if x is not None]
    if not v:
        return Stat(math.nan, math.nan, math.nan, 0)
    return Stat(statistics.median(v), min(v), max(v), len(v), statistics.stdev(v) if len(v) > 1 else 0.0,
                statistics.fmean(v))


NOT_MEASURED = "—"  # a figure nobody measured: never printed as 0


def load_text(s: Stat) -> str:
    """A CPU load (% of one CPU) over repetitions: its median, or NOT_MEASURED."""
    return NOT_MEASURED if s.n == 0 else f"{s.median:.1f}"


SIGNIFICANCE_LEVEL = 0.05
SIGNIFICANCE = "Student's two-sample t-test at 95 %"


def t_score(a: Stat, b: Stat) -> float:
    """Student's two-sample t of B's mean against A's, with the pooled variance of both runs'
    repetitions (pyperf's tscore, for samples of any sizes). ±inf when neither run varied and
    the means differ, 0 when they are equal."""
    df = a.n + b.n - 2
    diff = b.mean - a.mean
    pooled = ((a.n - 1) * a.sd ** 2 + (b.n - 1) * b.sd ** 2) / df
    if pooled == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / math.sqrt(pooled * (1 / a.n + 1 / b.n))


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method, as in
    Numerical Recipes' betacf)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_p_value(t: float, df: int) -> float:
    """Two-tailed p-value of Student's t with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2)."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def p_value(a: Stat, b: Stat) -> float | None:
    """How likely a difference of the means at least this large is when nothing changed
    (SIGNIFICANCE, as pyperf's compare_to tests); None when a run has fewer than two
    repetitions: then there is no noise estimate."""
    if a.n < 2 or b.n < 2:
        return None
    return t_p_value(t_score(a, b), a.n + b.n - 2)


def fmt_stat(s: Stat, fmt: str, n: bool = False, mean: bool = False) -> str:
    """median (with mean: the mean), and with repetitions that differ (min–max, sd; with n: and
    their count)."""
    text = format(s.mean if mean else s.median, fmt)
    if s.spread:
        text += (f" ({format(s.lo, fmt)}–{format(s.hi, fmt)}, sd {format(s.sd, fmt)}"
                 + (f", n={s.n})" if n else ")"))
    elif n and s.n > 1:
        text += f" (n={s.n}, all equal)"
    return text


def fmt_loss(s: Stat) -> str:
    """A loss percentage that never reads 0 unless no packet was lost; with repetitions that
    differ, (min–max, sd)."""
    text = format_pct(s.median, exact_zero=s.exact_zero)
    if s.spread:
        text += (f" ({format_pct(s.lo, exact_zero=s.lo == 0)}–{format_pct(s.hi, exact_zero=s.hi == 0)}, "
                 f"sd {format_pct(s.sd, exact_zero=s.sd == 0)})")
    return text


def loss_text(s: Stat) -> str:
    """A loss in words: "2.17 %", with repetitions that differ "2.17 % (0.80–3.55, sd 1.95)"."""
    text = format_pct(s.median, exact_zero=s.exact_zero) + " %"
    if s.spread:
        text += (f" ({format_pct(s.lo, exact_zero=s.lo == 0)}–{format_pct(s.hi, exact_zero=s.hi == 0)}, "
                 f"sd {format_pct(s.sd, exact_zero=s.sd == 0)})")
    return text


def decided(trials: Iterable[Trial]) -> list[Trial]:
    """The trials the methods decided on: without the runs the host disturbed that were run again."""
    return [t for t in trials if not superseded(t.result)]


def reruns(trials: Iterable[Trial]) -> int:
    """How many runs the host disturbed and were run again (recorded, not repetitions)."""
    return sum(1 for t in trials if superseded(t.result))


@dataclass(frozen=True)
class Group:
    """The repetitions of one measurement (trials with one SettingsKey)."""

    key: SettingsKey
    trials: tuple[Trial, ...]

    @property
    def valid(self) -> tuple[Trial, ...]:
        return tuple(t for t in self.trials if measured(t.result))

    @property
    def short(self) -> bool:
        """Every repetition was a lower bound (generator short, nothing lost): not a capture result."""
        return not self.valid

    @property
    def used(self) -> tuple[Trial, ...]:
        return self.valid or self.trials

    @property
    def series(self) -> SeriesKey:
        return self.key.series

    @property
    def frame_len(self) -> int:
        return self.key.frame_len

    def stat(self, metric: str) -> Stat:
        return stat_of(METRICS[metric].get(t.result) for t in self.used)

    @property
    def any_loss(self) -> bool:
        return any(t.result.lost != 0 for t in self.used)

    @property
    def lossy_reps(self) -> int:
        """How many of the repetitions used lost frames."""
        return sum(1 for t in self.used if t.result.lost != 0)

    @property
    def loses(self) -> bool:
        """Loss that repeats (issue 28): lost in two repetitions or more, or in the only one (then
        measured once: `once`). A loss in one repetition of several did not repeat (`unrepeated`)."""
        return self.lossy_reps >= 2 or (len(self.used) == 1 and self.lossy_reps == 1)

    @property
    def unrepeated(self) -> bool:
        return self.lossy_reps == 1 and len(self.used) > 1

    @property
    def once(self) -> bool:
        """One trial decided this point: a loss there may be the host's as well as the capture's."""
        return len(self.used) == 1

    @property
    def disturbed(self) -> int:
        """How many of the repetitions used stayed disturbed by the host after every run allowed."""
        return sum(1 for t in self.used if disturbed(t.result))


def group_trials(trials: Iterable[Trial]) -> dict[SettingsKey, Group]:
    """Trials grouped by settings, in the order they were first run; a run the host disturbed and
    that was run again (methods.measurer.superseded) is no repetition: it is left out."""
    lists: dict[SettingsKey, list[Trial]] = {}
    for t in decided(trials):
        lists.setdefault(settings_key(t), []).append(t)
    return {k: Group(k, tuple(v)) for k, v in lists.items()}


def iperf_groups(trials: Iterable[Trial]) -> dict[SettingsKey, Group]:
    """The iperf-like measurements: constant-load trials grouped by settings, their repetitions
    together. The trials of a search (RFC 2544, MLR) or a sweep are never repetitions of each
    other, even where a search visited one rate twice."""
    return group_trials(t for t in trials if registry.constant_load(t.method))


def has_repetitions(groups: Iterable[Group]) -> bool:
    return any(len(g.trials) > 1 for g in groups)


def same_capture(a: Group, b: Group) -> bool:
    """As many packets captured (within 0.01 %) with the same loss: only the CPU tells them apart."""
    ra, rb = a.stat("rx_pps").median, b.stat("rx_pps").median
    return abs(ra - rb) <= 1e-4 * max(ra, rb) and a.stat("loss_pct").median == b.stat("loss_pct").median


def cpu_load(g: Group) -> float:
    """App + kernel load (medians), to the 0.1 % the tables print; a kernel load not measured (a
    remote sensor without a receive CPU) adds nothing."""
    kernel = g.stat("kernel_cpu_pct")
    return round(g.stat("app_cpu_pct").median, 1) + (round(kernel.median, 1) if kernel.n else 0.0)


def best_per_size(groups: Iterable[Group]) -> list[tuple[int, Group | None]]:
    """Per frame length: the valid group with the highest median captured rate (less loss breaks
    ties); of those that captured as much (same_capture), the one with the least CPU. None when
    every trial at that length was a lower bound (generator short, nothing lost) or failed."""
    by_size: dict[int, list[Group]] = {}
    for g in groups:
        by_size.setdefault(g.frame_len, []).append(g)
    out = []
    for size in sorted(by_size):
        # A group whose trials failed (a capture program that did not run to the stop) is no best.
        valid = [g for g in by_size[size] if not g.short and not any(t.result.failure for t in g.trials)]
        top = max(valid, key=lambda g: (g.stat("rx_pps").median, -g.stat("loss_pct").median), default=None)
        tied = [g for g in valid if top is not None and same_capture(g, top)]
        out.append((size, min(tied, key=cpu_load) if tied else None))
    return out


@dataclass(frozen=True)
class FirstLoss:
    series: SeriesKey
    group: Group | None  # the largest frame length with loss; None: no loss where measured
    lossless: tuple[int, ...]  # valid frame lengths without loss
    short: tuple[int, ...]  # frame lengths where the generator fell short (not measured)
    lossy: tuple[Group, ...] = ()  # every valid frame length with loss that repeats (Group.loses), longest first
    unrepeated: tuple[Group, ...] = ()  # lengths that lost in one repetition of several: counted as lossless

    @property
    def all_below_lost(self) -> bool:
        """Every frame length measured below the largest lossy one lost too: loss "from N B down"."""
        return self.group is not None and not any(n < self.group.frame_len for n in self.lossless)


def first_loss(groups: Iterable[Group]) -> list[FirstLoss]:
    """Per series, from the longest frames (the lightest load) down: where loss that repeats starts
    (Group.loses), and every length that lost so (a shorter length may have lost nothing: see
    FirstLoss.all_below_lost); the lengths whose loss did not repeat apart."""
    by_series: dict[SeriesKey, list[Group]] = {}
    for g in groups:
        by_series.setdefault(g.series, []).append(g)
    out = []
    for series, gs in by_series.items():
        gs = sorted(gs, key=lambda g: -g.frame_len)
        lossy = [g for g in gs if not g.short and g.loses]
        out.append(FirstLoss(series, lossy[0] if lossy else None,
                             tuple(g.frame_len for g in gs if not g.short and not g.loses),
                             tuple(g.frame_len for g in gs if g.short), tuple(lossy),
                             tuple(g for g in gs if not g.short and g.unrepeated)))
    return out


def group_losses(r: TrialResult) -> list[int] | None:
    """Frames lost in each group of a grouped stream (seed 004), in group order; None when the
    trial sent no groups, or its counter counted none of the frames it received.

    The counter files every frame it receives under group `sequence / group_size` and lists
    the frames of each group up to the highest one seen (or the number of groups the
    generator announced). A group lost `group_size − received` frames; the generator's last
    group holds only what it sent of it (`sent − (n − 1) · group_size`), and a group that
    never arrived, or is missing from the end of the list, lost all of its frames."""
    size = r.group_size
    if size <= 0 or r.sent <= 0:
        return None
    received = list(r.group_received)
    if r.received > 0 and sum(received) == 0:
        return None  # the counter did not count groups (it reads no sequence numbers with --app-load none)
    n = -(-r.sent // size)
    return [max(min(size, r.sent - g * size) - (received[g] if g < len(received) else 0), 0) for g in range(n)]


def group_untracked(r: TrialResult) -> int:
    """Frames the counter received but could not file under a group (its table of groups was full)."""
    groups = ((r.raw or {}).get("cap") or {}).get("groups") or {}
    value = groups.get("untracked", 0) if isinstance(groups, dict) else 0
    return int(value) if isinstance(value, (int, float)) else 0


def sent_pps(g: Group) -> float:
    """The rate the generator really sent (median over the repetitions used)."""
    return stat_of(t.result.achieved_pps for t in g.used).median


SWEPT = tuple(m.name for m in registry.REGISTRY.values() if m.swept)  # a search's trials never make a sweep


def sweep_lines(trials: Iterable[Trial]) -> dict[tuple[SeriesKey, int], list[Group]]:
    """Series and frame lengths measured at 3 or more offered rates (a sweep, seed 003, or
    iperf-like trials at several rates), each a list of groups in the order of the rate sent;
    the repetitions of a sweep step are one group. The rates an RFC 2544 or MLR search
    visited are not a sweep."""
    lines: dict[tuple[SeriesKey, int], list[Group]] = {}
    for g in group_trials(t for t in trials if t.method in SWEPT).values():
        lines.setdefault((g.series, g.frame_len), []).append(g)
    return {k: sorted(v, key=sent_pps) for k, v in lines.items() if len({g.key.rate for g in v}) >= 3}
