"""`capbench compare A B`: the same measurements in two runs, and what changed beyond the noise.

iperf-like trials are matched by their SettingsKey (method, backend, frame length, link,
rate, engine, application load, placement). For every figure (captured rate, loss and
its layers, application and kernel load) the change is B's median minus A's.

Searches are compared by their answers, never trial by trial (a search visits whatever
rates its trials lead it to): the RFC 2544 throughput, MLR's lower bounds (NDR, PDR), a
sweep's highest rate before its first loss, the longest back-to-back burst, of each
step matched by its settings without the repetition (report.answers). A change of an
answer is marked only when it is also larger than the search's precision.

Noise, honestly: when both runs repeated a measurement, a change counts only if the
min–max ranges of the repetitions do not overlap. Without repetitions there is no
noise estimate at all; a relative change above a stated threshold (default 5 %) is
marked instead, and the report says so. A measurement where the generator fell short
of the offered load in either run is shown but never marked and never a regression:
it did not measure the capture method at that load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from capbench.errors import UsageError
from capbench.report import answers as answers_mod
from capbench.report.answers import AnswerGroup
from capbench.report.keys import SettingsKey
from capbench.report.load import RunData
from capbench.report.stats import METRICS, Group, Metric, Stat, iperf_groups

DEFAULT_THRESHOLD_PCT = 5.0
COMPARED = ("rx_pps", "loss_pct", "link_pct", "backlog_pct", "socket_pct", "unexplained_pct", "app_cpu_pct",
            "kernel_cpu_pct")
# The figures --fail-on-regression watches; the loss layers are the loss split up.
WATCHED = ("rx_pps", "loss_pct", "app_cpu_pct", "kernel_cpu_pct")


@dataclass(frozen=True)
class Change:
    key: SettingsKey
    metric: Metric
    a: Stat
    b: Stat
    by_repetitions: bool  # the noise is the repetitions' spread (else: the threshold)
    short: str  # "" or which run's generator fell short of the offered load: "A", "B", "A and B"
    significant: bool  # larger than the noise
    precision: float = 0.0  # a search answer's precision (pps, frames): no smaller change is marked
    answer: bool = False  # a search's answer (report.answers), not a figure of iperf-like trials

    @property
    def delta(self) -> float:
        return self.b.median - self.a.median

    @property
    def rel_pct(self) -> float | None:
        """100 · delta / |A|; None when A is 0 (a change from nothing has no relative size)."""
        if self.a.median == 0:
            return 0.0 if self.delta == 0 else None
        return 100.0 * self.delta / abs(self.a.median)

    @property
    def worse(self) -> bool:
        return self.delta < 0 if self.metric.higher_is_better else self.delta > 0

    @property
    def better(self) -> bool:
        return self.delta != 0 and not self.worse

    def worse_by_more_than(self, pct: float) -> bool:
        """A regression: worse by more than pct % of A's value (a figure that was 0, such as loss,
        and is not any more is worse by more than any pct) and, where repetitions measure the
        noise, beyond it. Without repetitions pct alone decides (--threshold only marks)."""
        if self.short or not self.worse or (self.by_repetitions and not self.significant):
            return False
        rel = self.rel_pct
        return rel is None or abs(rel) > pct


@dataclass(frozen=True)
class Comparison:
    a: RunData
    b: RunData
    changes: list[Change]
    only_a: list[SettingsKey]
    only_b: list[SettingsKey]
    threshold_pct: float
    unanswered: list[tuple[SettingsKey, str, str]] = field(default_factory=list)  # (key, figure, "A"/"B"/"A and B")

    @property
    def by_repetitions(self) -> bool:
        return any(c.by_repetitions for c in self.changes)

    def noise_rule(self) -> str:
        rep = "a change is marked when the min–max ranges of the repetitions do not overlap"
        thr = (f"a change of more than {self.threshold_pct:g} % of A's value (or any change from 0) is marked "
               f"instead (--threshold)")
        if all(c.by_repetitions for c in self.changes):
            text = f"Noise: both runs repeated every measurement; {rep}."
        elif not self.by_repetitions:
            text = f"Noise: no measurement was repeated in both runs, so no noise estimate exists; {thr}."
        else:
            text = (f"Noise: where both runs repeated a measurement, {rep}; the others ran once in a run, so no "
                    f"noise estimate exists for them and {thr}.")
        if any(c.answer for c in self.changes):
            text += (" A search's answer (RFC 2544 throughput, MLR bounds, a sweep's last lossless rate) is marked "
                     "only when its change is also larger than the search's precision.")
        return text

    def regressions(self, pct: float) -> list[Change]:
        """Watched figures worse by more than pct %: the iperf-like captured rate, loss and CPU, and
        every search answer."""
        return [c for c in self.changes if (c.answer or c.metric.name in WATCHED) and c.worse_by_more_than(pct)]

    @property
    def measurements(self) -> list[SettingsKey]:
        return list(dict.fromkeys(c.key for c in self.changes if not c.answer))

    @property
    def answer_keys(self) -> list[SettingsKey]:
        return list(dict.fromkeys([c.key for c in self.changes if c.answer] + [k for k, _n, _w in self.unanswered]))


def _significant(a: Stat, b: Stat, by_repetitions: bool, threshold_pct: float) -> bool:
    if by_repetitions:
        return a.hi < b.lo or b.hi < a.lo
    if a.median == 0:
        return b.median != 0
    return abs(100.0 * (b.median - a.median) / abs(a.median)) > threshold_pct


def _short(ga: Group, gb: Group) -> str:
    return " and ".join(name for name, g in (("A", ga), ("B", gb)) if g.short)


def _answers(run: RunData) -> dict[SettingsKey, AnswerGroup]:
    return {g.settings_key: g for g in answers_mod.group_answers(answers_mod.run_answers(run)).values()}


def answer_changes(ga: AnswerGroup, gb: AnswerGroup, threshold_pct: float
                   ) -> tuple[list[Change], list[tuple[SettingsKey, str, str]]]:
    """The change of every answer of one search step (median over its repetitions in each run)."""
    names = ga.metrics() + [n for n in gb.metrics() if n not in ga.metrics()]
    changes, unanswered = [], []
    precision = max(ga.precision_pps, gb.precision_pps)
    for name in names:
        sa, sb = ga.stat(name), gb.stat(name)
        if sa is None or sb is None:
            unanswered.append((ga.settings_key, name, " and ".join(w for w, s in (("A", sa), ("B", sb)) if s is None)))
            continue
        by_reps = sa.n > 1 and sb.n > 1
        # An answer the generator bounded is a lower bound of the capture's limit: shown, never
        # marked and never a regression, as an iperf figure of a short generator.
        short = " and ".join(w for w, g in (("A", ga), ("B", gb)) if g.generator_bound(name))
        marked = (not short and _significant(sa, sb, by_reps, threshold_pct)
                  and abs(sb.median - sa.median) > precision)
        changes.append(Change(ga.settings_key, answers_mod.metric(name), sa, sb, by_reps, short, marked, precision,
                              True))
    return changes, unanswered


def compare(a: RunData, b: RunData, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> Comparison:
    if not (threshold_pct > 0 and math.isfinite(threshold_pct)):
        raise UsageError(f"--threshold {threshold_pct:g}: give a percentage above 0, e.g. 5")
    groups_a, groups_b = iperf_groups(a.trials), iperf_groups(b.trials)
    common = [k for k in groups_a if k in groups_b]
    answers_a, answers_b = _answers(a), _answers(b)
    common_answers = [k for k in answers_a if k in answers_b]
    if not common and not common_answers:
        raise UsageError(
            f"{a.path} and {b.path} have no measurement in common: no iperf-like measurement (matched by method, "
            f"backend, frame length, link, rate, engine, app load and placement) and no search step (matched by "
            f"method and the same settings but the rates it visited): A has {_some(list(groups_a) + list(answers_a))}; "
            f"B has {_some(list(groups_b) + list(answers_b))}")
    changes = []
    for key in common:
        ga, gb = groups_a[key], groups_b[key]
        by_reps = len(ga.used) > 1 and len(gb.used) > 1
        short = _short(ga, gb)
        for name in COMPARED:
            sa, sb = ga.stat(name), gb.stat(name)
            changes.append(Change(key, METRICS[name], sa, sb, by_reps, short,
                                  not short and _significant(sa, sb, by_reps, threshold_pct)))
    unanswered: list[tuple[SettingsKey, str, str]] = []
    for key in common_answers:
        more, missing = answer_changes(answers_a[key], answers_b[key], threshold_pct)
        changes += more
        unanswered += missing
    only_a = [k for k in groups_a if k not in groups_b] + [k for k in answers_a if k not in answers_b]
    only_b = [k for k in groups_b if k not in groups_a] + [k for k in answers_b if k not in answers_a]
    return Comparison(a, b, changes, only_a, only_b, threshold_pct, unanswered)


def _some(keys: list[SettingsKey]) -> str:
    if not keys:
        return "nothing"
    text = "; ".join(k.text() for k in keys[:2])
    return text + (f" and {len(keys) - 2} more" if len(keys) > 2 else "")
