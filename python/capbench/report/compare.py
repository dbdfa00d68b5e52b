"""`capbench compare A B`: the same measurements in two runs, and what changed beyond the noise.

iperf-like trials are matched by their SettingsKey (report.keys: every setting that makes a
measurement, ring size and backend options included); where only one run names its run length
(a tune names each rung's trial length, a run of one length none), by the same key but for it,
the longest of that run's (keys.matched). For every figure (captured rate, loss
and its layers, application and kernel load) the change is B's median minus A's.

Searches are compared by their answers, never trial by trial (a search visits whatever
rates its trials lead it to): the RFC 2544 throughput, MLR's lower bounds (NDR, PDR), a
sweep's highest rate before its first loss, the longest back-to-back burst, of each
step matched by its settings without the repetition (report.answers). A change of an
answer counts only when it is also larger than the search's precision.

Noise, honestly (as pyperf's compare_to): when both runs repeated a measurement, a change
counts only if Student's two-sample t-test on the repetitions finds it at 95 %; else it is
"not significant". A comparison tests many figures at once, so the p-values are corrected
for their number (Holm): two runs of one configuration show no change in 95 % of
comparisons, not one figure in 20 marked by chance. Without repetitions in both runs there is no noise estimate, and nothing
is judged unless --threshold is given: then a relative change above it counts. Whatever the
test says, a CPU load must also change by stats.CPU_LEAST_CHANGE_PTS points and a captured
rate by more than the generator's own tolerance (stats.RATE_LEAST_CHANGE_PCT). A
measurement that is a lower bound in either run (capbench.methods.verdict: the generator
fell short of the offered load and nothing was lost) is shown but never judged and never a
regression: it did not measure the capture method at that load. One whose generator fell
short but that lost frames is judged: its loss is capture loss at the rate sent.

The conditions of the two runs (issue 28): where the generator sent a measurement at rates
that differ by more than its tolerance, the captured rate is not judged (the change is the
generator's), and the capture is judged by its loss, which is at the rate actually sent. A
measurement or answer that rests on trials the host disturbed (the witness, `disturbed`) in
either run is shown and judged, but never a regression. `conditions` lists, per measurement,
what differed: the rate sent, the trials the host disturbed, other capbench test beds up.

Profiles (--profile), where both runs profiled a measurement: how each group of receive work
(capbench/profile/groups.toml) changed its share of the receive CPU's time (points) and its
CPU time per captured packet, and the receive CPU's busy time per packet in all. A profile is
one sample per trial: with repetitions in both runs the t-test judges these figures too (Holm
over the profile's figures, apart from the others); without, the change is shown and not
judged (--threshold does not apply: one profile's shares move with its sampling). They are
never regressions: a share that grows is not worse by itself.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from capbench.errors import UsageError
from capbench.profile import groups as cpu_groups
from capbench.report import answers as answers_mod
from capbench.report import profiles
from capbench.report.answers import AnswerGroup
from capbench.report.keys import IDENTITY_TEXT, SettingsKey, matched
from capbench.report.load import RunData
from capbench.report.stats import (CPU_LEAST_CHANGE_PTS, METRICS, RATE_LEAST_CHANGE_PCT, SIGNIFICANCE,
                                   SIGNIFICANCE_LEVEL, Group, Metric, Stat, iperf_groups, p_value, sent_pps, stat_of)
from capbench.trial.record import TrialResult
COMPARED = ("rx_pps", "loss_pct", "ring_pct", "link_pct", "backlog_pct", "socket_pct", "unexplained_pct", "app_cpu_pct",
            "kernel_cpu_pct")
# The figures --fail-on-regression watches; the loss layers are the loss split up.
WATCHED = ("rx_pps", "loss_pct", "app_cpu_pct", "kernel_cpu_pct")
# The figures that follow the rate the generator sent: not judged where the runs sent other rates.
RATE_FIGURES = ("rx_pps", "rx_gbps")


@dataclass(frozen=True)
class Change:
    key: SettingsKey
    metric: Metric
    a: Stat
    b: Stat
    by_repetitions: bool  # both runs repeated it: the t-test judges (else: --threshold, if given)
    short: str  # "" or which run's measurement was a lower bound (generator short, nothing lost): "A", "B", "A and B"
    significant: bool  # judged, and larger than the noise
    precision: float = 0.0  # a search answer's precision (pps, frames): no smaller change is marked
    answer: bool = False  # a search's answer (report.answers), not a figure of iperf-like trials
    judged: bool = True  # False: neither repetitions nor --threshold to judge it by, or a lower bound
    p: float | None = None  # the t-test's p-value (by_repetitions), adjusted by holm() in compare()
    disturbed: str = ""  # "" or which run's measurement rests on trials the host disturbed: "A", "B", "A and B"
    apart: str = ""  # "" or why the conditions kept it from being judged (the generator sent other rates)

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

    @property
    def too_small(self) -> bool:
        """Smaller than the least change its figure counts (CPU points, the generator's
        tolerance of a rate) or than the search's precision: no change, whatever the noise."""
        d = abs(self.delta)
        rel = self.rel_pct
        return (d <= max(self.metric.least_change, self.precision)
                or (rel is not None and abs(rel) <= self.metric.least_rel_pct))

    def worse_by_more_than(self, pct: float) -> bool:
        """A regression: a judged change beyond the noise (significant), worse, by more than pct %
        of A's value (a figure that was 0, such as loss, and is not any more is worse by more
        than any pct)."""
        if not self.significant or not self.worse or self.disturbed:
            return False
        rel = self.rel_pct
        return rel is None or abs(rel) > pct


TOTAL = "all"  # a profile's row of the receive CPU's busy time, every group together
TOTAL_LABEL = "receive CPU, busy"
NS_PER_PACKET = "ns/packet"


@dataclass(frozen=True)
class ProfileChange:
    """How one group's part of the receive CPU changed between two runs' profiles of a measurement."""

    key: SettingsKey
    group: str  # a group of groups.toml, or TOTAL
    share: Change  # its share of the receive CPU's time over the load window, in % (points)
    ns: Change | None  # its CPU time per captured packet (None: idle, or a run captured nothing)


@dataclass(frozen=True)
class Comparison:
    a: RunData
    b: RunData
    changes: list[Change]
    only_a: list[SettingsKey]
    only_b: list[SettingsKey]
    threshold_pct: float | None
    unanswered: list[tuple[SettingsKey, str, str]] = field(default_factory=list)  # (key, figure, "A"/"B"/"A and B")
    profile: list[ProfileChange] = field(default_factory=list)  # measurements both runs profiled
    profiled_once: list[tuple[SettingsKey, str]] = field(default_factory=list)  # (key, the run, "A" or "B")
    conditions: list[Conditions] = field(default_factory=list)  # measurements whose conditions differed

    @property
    def by_repetitions(self) -> bool:
        return any(c.by_repetitions for c in self.changes)

    def noise_rule(self) -> str:
        rep = (f"a change counts when {SIGNIFICANCE} on the repetitions finds it, corrected for the number of "
               f"figures compared (Holm), else it is not significant")
        if self.threshold_pct is None:
            thr = "nothing is judged (give --threshold PCT to mark relative changes above PCT %)"
        else:
            thr = (f"a change of more than {self.threshold_pct:g} % of A's value (or any change from 0) is marked "
                   f"instead (--threshold)")
        if all(c.by_repetitions for c in self.changes):
            text = f"Noise: both runs repeated every measurement; {rep}."
        elif not self.by_repetitions:
            text = f"Noise: no measurement was repeated in both runs, so there is no noise estimate; {thr}."
        else:
            text = (f"Noise: where both runs repeated a measurement, {rep}; the others ran once in a run, so there "
                    f"is no noise estimate for them and {thr}.")
        text += (f" A CPU load must also change by more than {CPU_LEAST_CHANGE_PTS:g} points, a captured rate by "
                 f"more than {METRICS['rx_pps'].least_rel_pct:g} % (the generator's tolerance).")
        if any(c.answer for c in self.changes):
            text += (" A search's answer (RFC 2544 throughput, MLR bounds, a sweep's last lossless rate) counts "
                     "only when its change is also larger than the search's precision.")
        return text

    @property
    def judged(self) -> bool:
        """Whether any change could be judged (repetitions in both runs, or --threshold)."""
        return any(c.judged for c in self.changes)

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


def judge(key: SettingsKey, metric: Metric, a: Stat, b: Stat, threshold_pct: float | None, short: str = "",
          precision: float = 0.0, answer: bool = False, disturbed: str = "", apart: str = "") -> Change:
    """The change of one figure and, without repetitions, whether it is beyond --threshold; with
    repetitions its p-value, which holm() weighs against those of the other figures."""
    by_reps = a.n > 1 and b.n > 1
    c = Change(key, metric, a, b, by_reps, short, False, precision, answer,
               judged=not short and not apart and (by_reps or threshold_pct is not None), disturbed=disturbed,
               apart=apart)
    if not c.judged or c.delta == 0 or c.too_small:
        return c
    if by_reps:
        # The t-test weighs means; the change shown is of medians: both must point one way.
        return dataclasses.replace(c, p=p_value(a, b) if (b.mean - a.mean) * c.delta > 0 else 1.0)
    rel = c.rel_pct
    return dataclasses.replace(c, significant=rel is None or abs(rel) > threshold_pct)


def holm(changes: list[Change], level: float = SIGNIFICANCE_LEVEL) -> list[Change]:
    """The changes with a p-value, their p adjusted by Holm's step-down method and marked
    significant when it is at most `level`: the k-th smallest of m p-values is multiplied by
    m − k + 1 (and is never below the one before it). A comparison weighs dozens of figures,
    and at 95 % one unchanged figure in 20 would pass the test alone: so corrected, two runs
    of one configuration show any change in at most 5 % of comparisons."""
    tested = sorted((i for i, c in enumerate(changes) if c.p is not None), key=lambda i: changes[i].p)
    out = list(changes)
    running = 0.0
    for k, i in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - k) * changes[i].p))
        out[i] = dataclasses.replace(changes[i], p=running, significant=running <= level)
    return out


def _short(ga: Group, gb: Group) -> str:
    return " and ".join(name for name, g in (("A", ga), ("B", gb)) if g.short)


def _runs(a: bool, b: bool) -> str:
    """"A", "B", "A and B" or "": the runs of which something holds."""
    return " and ".join(name for name, x in (("A", a), ("B", b)) if x)


@dataclass(frozen=True)
class Conditions:
    """What differed between the runs around one measurement: the rate the generator sent (median
    pps; None for a search, whose rates are its own), the trials (or answers) the host disturbed,
    other capbench test beds up during its trials."""

    key: SettingsKey
    sent_pps: tuple[float | None, float | None]
    disturbed: tuple[int, int]
    measured: tuple[int, int]  # trials (or answers) in each run
    other_testbeds: tuple[tuple[str, ...], tuple[str, ...]]

    @property
    def sent_differs(self) -> bool:
        """The generator sent rates apart by more than its own tolerance (stats.RATE_LEAST_CHANGE_PCT)."""
        a, b = self.sent_pps
        return a is not None and b is not None and abs(b - a) > max(a, b) * RATE_LEAST_CHANGE_PCT / 100.0

    @property
    def disturbed_in(self) -> str:
        return _runs(self.disturbed[0] > 0, self.disturbed[1] > 0)

    def differed(self) -> list[str]:
        """What differed, in words ([] when nothing did)."""
        out = []
        if self.sent_differs:
            a, b = self.sent_pps
            out.append(f"the generator sent {a:,.0f} pps in A, {b:,.0f} pps in B: the captured rate is not judged, "
                       f"the loss (at the rate sent) is")
        if any(self.disturbed):
            out.append("the host disturbed " + " and ".join(
                f"{n} of {m} in {run}" for run, n, m in zip("AB", self.disturbed, self.measured) if n)
                + ": no regression is counted there")
        beds = [f"{', '.join(o)} in {run}" for run, o in zip("AB", self.other_testbeds) if o]
        if beds and self.other_testbeds[0] != self.other_testbeds[1]:
            out.append(f"other capbench test beds were up: {'; '.join(beds)}")
        return out


def _group_conditions(key: SettingsKey, ga: Group, gb: Group) -> Conditions:
    def of(g: Group) -> tuple[float, int, int, tuple[str, ...]]:
        rs = [t.result for t in g.used]
        return (sent_pps(g), sum(1 for r in rs if r.disturbed), len(rs),
                tuple(sorted({o for r in rs for o in r.other_testbeds})))
    a, b = of(ga), of(gb)
    return Conditions(key, (a[0], b[0]), (a[1], b[1]), (a[2], b[2]), (a[3], b[3]))


def _answer_conditions(ga: AnswerGroup, gb: AnswerGroup) -> Conditions:
    def of(g: AnswerGroup) -> tuple[int, int, tuple[str, ...]]:
        others = {o for a in g.answers for t in a.trials for o in t.result.other_testbeds}
        return len(g.disturbed), len(g.answers), tuple(sorted(others))
    a, b = of(ga), of(gb)
    return Conditions(ga.settings_key, (None, None), (a[0], b[0]), (a[1], b[1]), (a[2], b[2]))


def _answers(run: RunData) -> dict[SettingsKey, AnswerGroup]:
    return {g.settings_key: g for g in answers_mod.group_answers(answers_mod.run_answers(run)).values()}


def answer_changes(ga: AnswerGroup, gb: AnswerGroup, threshold_pct: float | None
                   ) -> tuple[list[Change], list[tuple[SettingsKey, str, str]]]:
    """The change of every answer of one search step (median over its repetitions in each run); one
    that rests on trials the host disturbed is never a regression."""
    names = ga.metrics() + [n for n in gb.metrics() if n not in ga.metrics()]
    disturbed = _answer_conditions(ga, gb).disturbed_in
    changes, unanswered = [], []
    precision = max(ga.precision_pps, gb.precision_pps)
    for name in names:
        sa, sb = ga.stat(name), gb.stat(name)
        if sa is None or sb is None:
            unanswered.append((ga.settings_key, name, " and ".join(w for w, s in (("A", sa), ("B", sb)) if s is None)))
            continue
        # An answer the generator bounded is a lower bound of the capture's limit: shown, never
        # judged and never a regression, as an iperf figure that is a lower bound.
        short = " and ".join(w for w, g in (("A", ga), ("B", gb)) if g.generator_bound(name))
        changes.append(judge(ga.settings_key, answers_mod.metric(name), sa, sb, threshold_pct, short, precision,
                             answer=True, disturbed=disturbed))
    return changes, unanswered


def _receive_value(group: str, ns: bool, role: profiles.RoleTime) -> float | None:
    if ns:
        return role.ns_per_packet if group == TOTAL else role.groups_ns.get(group)
    return role.busy_window_pct if group == TOTAL else role.window_pct(group)


def _profile_metric(group: str, ns: bool) -> Metric:
    """A figure of a trial's receive CPU (NaN where the trial's profile has none): a group's share
    of its time over the window (or all its busy time's: TOTAL), or its CPU ns per captured packet."""
    def get(r: TrialResult) -> float:
        p = profiles.profile_of(r)
        v = _receive_value(group, ns, p.receive) if p is not None and p.receive is not None else None
        return math.nan if v is None else v

    label = TOTAL_LABEL if group == TOTAL else cpu_groups.table().label(group)
    if ns:
        return Metric(f"rx_ns:{group}", label, NS_PER_PACKET, False, get)
    return Metric(f"rx_share:{group}", label, "% of the receive CPU", False, get, least_change=CPU_LEAST_CHANGE_PTS)


def _profile_stat(metric: Metric, g: Group) -> Stat | None:
    """The figure over the repetitions that count and were profiled; None when none was."""
    values = [v for t in g.used if not math.isnan(v := metric.get(t.result))]
    return stat_of(values) if values else None


def profile_changes(keys: list[SettingsKey], groups_a: dict[SettingsKey, Group], groups_b: dict[SettingsKey, Group]
                    ) -> tuple[list[ProfileChange], list[tuple[SettingsKey, str]]]:
    """Of the measurements both runs hold: the changes of those both profiled (judged by their
    repetitions only, Holm over these figures alone), and those one run profiled."""
    table = cpu_groups.table()
    idle = table.by_kind(cpu_groups.IDLE).name
    out: list[ProfileChange] = []
    once = []
    for key in keys:
        ga, gb = groups_a[key], groups_b[key]
        total = _profile_metric(TOTAL, False)
        profiled = [name for name, g in (("A", ga), ("B", gb)) if _profile_stat(total, g) is not None]
        if len(profiled) < 2:
            once += [(key, name) for name in profiled]
            continue
        for group in [TOTAL, *table.names()]:
            found = []
            for metric in (_profile_metric(group, False), _profile_metric(group, True) if group != idle else None):
                sa, sb = (_profile_stat(metric, ga), _profile_stat(metric, gb)) if metric else (None, None)
                found.append(judge(key, metric, sa, sb, None) if metric and sa and sb else None)
            assert found[0] is not None
            out.append(ProfileChange(key, group, found[0], found[1]))
    judged = iter(holm([c for pc in out for c in (pc.share, pc.ns) if c is not None]))
    return [dataclasses.replace(pc, share=next(judged), ns=next(judged) if pc.ns is not None else None)
            for pc in out], once


def compare(a: RunData, b: RunData, threshold_pct: float | None = None) -> Comparison:
    """B against A; `threshold_pct` (--threshold): the relative change that counts where a
    measurement was not repeated in both runs (None: such changes are not judged)."""
    if threshold_pct is not None and not (threshold_pct > 0 and math.isfinite(threshold_pct)):
        raise UsageError(f"--threshold {threshold_pct:g}: give a percentage above 0, e.g. 5")
    groups_a, groups_b = iperf_groups(a.trials), iperf_groups(b.trials)
    answers_a, answers_b = _answers(a), _answers(b)
    # B's measurements under the keys of A's they match (keys.matched: a tune's run length).
    pairs, answer_pairs = matched(groups_a, groups_b), matched(answers_a, answers_b)
    groups_b = {k: g for k, g in groups_b.items() if k not in pairs.values()} | {
        ka: groups_b[kb] for ka, kb in pairs.items()}
    answers_b = {k: g for k, g in answers_b.items() if k not in answer_pairs.values()} | {
        ka: answers_b[kb] for ka, kb in answer_pairs.items()}
    common = [k for k in groups_a if k in pairs]
    common_answers = [k for k in answers_a if k in answer_pairs]
    if not common and not common_answers:
        raise UsageError(
            f"{a.path} and {b.path} have no measurement in common: no iperf-like measurement (matched by "
            f"{IDENTITY_TEXT}) and no search step (matched by the same settings but the rates it visited): A has {_some(list(groups_a) + list(answers_a))}; "
            f"B has {_some(list(groups_b) + list(answers_b))}")
    changes = []
    conditions = []
    for key in common:
        ga, gb = groups_a[key], groups_b[key]
        short = _short(ga, gb)
        cond = _group_conditions(key, ga, gb)
        conditions.append(cond)
        apart = "the generator sent other rates" if cond.sent_differs else ""
        for name in COMPARED:
            sa, sb = ga.stat(name), gb.stat(name)
            if sa.n and sb.n:  # a figure not measured in a run (a remote sensor's kernel load) is not compared
                changes.append(judge(key, METRICS[name], sa, sb, threshold_pct, short,
                                     disturbed=cond.disturbed_in, apart=apart if name in RATE_FIGURES else ""))
    unanswered: list[tuple[SettingsKey, str, str]] = []
    for key in common_answers:
        conditions.append(_answer_conditions(answers_a[key], answers_b[key]))
        more, missing = answer_changes(answers_a[key], answers_b[key], threshold_pct)
        changes += more
        unanswered += missing
    changes = holm(changes)
    only_a = [k for k in groups_a if k not in groups_b] + [k for k in answers_a if k not in answers_b]
    only_b = [k for k in groups_b if k not in groups_a] + [k for k in answers_b if k not in answers_a]
    profile, once = profile_changes(common, groups_a, groups_b)
    return Comparison(a, b, changes, only_a, only_b, threshold_pct, unanswered, profile, once,
                      [c for c in conditions if c.differed()])


def _some(keys: list[SettingsKey]) -> str:
    if not keys:
        return "nothing"
    text = "; ".join(k.text() for k in keys[:2])
    return text + (f" and {len(keys) - 2} more" if len(keys) > 2 else "")
