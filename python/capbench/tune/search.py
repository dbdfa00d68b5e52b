"""The search of `capbench tune`: successive halving, then a race of the finalists (issue 30).

A pure function of a `measure(configuration, rung, repetition)` callback, so it runs the same on
the test bed, on the simulated device (tests/py/test_tune_search.py) and on a resumed run, whose
recorded measurements the callback hands back (the same values and costs, so the same decisions).

- **Rungs.** A rung is a trial length (an MLR search's final trial, an iperf trial's duration) and
  the method's own estimate of what one measurement there costs. Every configuration is measured
  once on the first (shortest) rung; the better third (at least FINALISTS) climbs to the next rung
  and is measured there, as long as the budget left still covers that rung and the final race on
  it; the configurations left then race on the rung where the climbing stopped.
- **The race.** The FINALISTS best so far, and the defaults (configuration 0: the baseline a person
  compares with), are measured again, round after round, while the budget covers a round. From
  MIN_REPS values each on, a finalist the leader beats significantly drops out of the race (F-race);
  the race ends when one is left, at MAX_REPS, or when the next round does not fit the budget;
  then, if they fit, the leader and the finalist least separated from it are measured once more.
- **Screening.** The first rung's measurements are watched too: where they cost so much more
  than estimated (an MLR search at 64 B on a VM reruns half of its trials as disturbed, and needs
  twice the trials of its estimate) that the budget runs out before the rung ends, as many are
  measured as leave room for a race of two values each, and the configurations not reached stay
  unmeasured (`Outcome.unscreened`, named in the output) rather than the budget overrun; the
  order spreads over the space (screening_order).
- **Budget.** Planned with the estimates, scaled by how the measurements so far compared with
  theirs (the costs the callback returns: the recorded time they took), so a host slower than the
  estimate ends the climbing earlier instead of overrunning (per rung: an estimate may be off by
  more on one rung than on another). What else the budget pays for (`Settings.overhead_s`: the
  test bed's set-up as measured, the report at the end as estimated) is taken off what is left
  before each decision. A budget that does not cover every
  configuration on the first rung and the shortest race is refused (`smallest_budget`).
- **A CPU limit** (`max_app_cpu_pct`, `capbench tune --max-app-cpu`): a configuration whose
  application CPU (the mean of its measurements' on a rung) is above the limit is not eligible to
  be best: it ranks after every eligible one, does not climb or race ahead of them, and leaves the
  race (the defaults stay in it: they are what the output compares with). Where none is
  eligible, the best is the best of the ineligible, and `over_limit` says so.
- **Significance.** Welch's two-sample t-test at 95 % on the repeated goal values of two
  finalists: configurations differ in their spread (a configuration that loses scatters far more
  than one that does not), so no pooled variance; and with 3 to 10 values each, a rank test
  (Mann-Whitney) cannot reach 5 % at all below 4 values each (its smallest two-sided p for 3
  against 3 is 0.1). Two finalists the test does not separate are "within noise" of each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from capbench.report.stats import t_p_value
from capbench.report.tune_summary import DEFAULTS_INDEX

KEEP = 1 / 3  # the share of a rung's configurations that climbs to the next (successive halving's 1/eta)
FINALISTS = 3  # configurations in the final race, besides the defaults
MIN_REPS = 3  # values of a finalist before the test may drop it (and what the shortest race gives each)
MAX_REPS = 10  # values of a finalist at most: beyond them the spread is known well enough
SIGNIFICANCE_LEVEL = 0.05
SIGNIFICANCE = "Welch's two-sample t-test at 95 %"
BASELINE = DEFAULTS_INDEX  # the configuration every race keeps: the defaults (as tune.json numbers them)


@dataclass(frozen=True)
class Rung:
    """A trial length and the method's estimate of one measurement at it."""

    length_s: float
    cost_s: float


@dataclass(frozen=True)
class Measurement:
    """One measurement of a configuration: its goal value, what it cost (seconds, charged to the
    budget), its CPU time per captured packet (ns; breaks ties, lower is better), its application's
    CPU (% of one CPU, at the goal's load; judged against Settings.max_app_cpu_pct)."""

    value: float
    cost_s: float
    cpu_ns: float | None = None
    app_cpu_pct: float | None = None


Measure = Callable[[int, int, int], Measurement]  # (configuration, rung, repetition from 1) -> its measurement


class BudgetTooSmall(ValueError):
    """The budget does not cover the shortest search; `least_s` would."""

    def __init__(self, least_s: float):
        super().__init__(f"the smallest budget is {least_s:.0f} s")
        self.least_s = least_s


@dataclass(frozen=True)
class Settings:
    budget_s: float
    rungs: tuple[Rung, ...]  # shortest first
    higher_is_better: bool = True  # PDR and NDR; the loss at a rate is better lower
    finalists: int = FINALISTS
    min_reps: int = MIN_REPS
    max_reps: int = MAX_REPS
    # What the budget pays for besides the measurements, asked before each decision (seconds).
    overhead_s: Callable[[], float] = lambda: 0.0
    max_app_cpu_pct: float | None = None  # a configuration whose application CPU is above it is not eligible


@dataclass(frozen=True)
class Comparison:
    """A finalist against the leader: Welch's p-value (None: fewer than two values of one) and
    whether the difference is beyond the noise."""

    p_value: float | None
    significant: bool


@dataclass
class Outcome:
    """What the search measured and found."""

    measured: dict[tuple[int, int], list[Measurement]] = field(default_factory=dict)  # (config, rung) -> values
    final_rung: int = 0
    finalists: tuple[int, ...] = ()  # in the race (the defaults among them), best first
    ranking: tuple[int, ...] = ()  # every configuration, best first
    spent_s: float = 0.0
    comparisons: dict[int, Comparison] = field(default_factory=dict)  # finalist -> against the best
    # The configurations not eligible under Settings.max_app_cpu_pct: config -> its application's
    # CPU (%, the mean on the rung it is ranked by).
    over_limit: dict[int, float] = field(default_factory=dict)
    max_app_cpu_pct: float | None = None  # the limit they are over (Settings')
    # The configurations the first rung did not reach: its measurements cost so much more than their
    # estimates (an MLR search's reruns of disturbed trials, more trials than the method's estimate)
    # that measuring them too would have overrun the budget. Ranked nowhere; the output names them.
    unscreened: tuple[int, ...] = ()
    screen_scale: float = 1.0  # what the first rung's measurements cost against their estimates

    def values(self, config: int, rung: int | None = None) -> list[float]:
        """The goal values of `config` on `rung` (the final rung by default)."""
        return [m.value for m in self.measured.get((config, self.final_rung if rung is None else rung), [])]

    def highest_rung(self, config: int) -> int:
        return max(r for c, r in self.measured if c == config)

    @property
    def best(self) -> int:
        return self.ranking[0]


def screening_order(n: int) -> list[int]:
    """The first rung's order of `n` configurations: the defaults (0) first, then the others
    stepping through them by a stride prime to their number, so that any first part of the order
    samples each knob's values (a grid's neighbours differ in one knob); the same for the same n
    (a resumed search repeats it)."""
    stride = next(k for k in (7, 5, 3, 2, 1) if n <= 1 or math.gcd(k, n - 1) == 1)
    return [0] + [1 + (i * stride) % (n - 1) for i in range(n - 1)] if n > 1 else [0]


def smallest_budget(n: int, s: Settings) -> float:
    """The shortest search of `n` configurations: each once on the first rung, then the race of
    the finalists and the defaults on it to MIN_REPS values each."""
    racing = min(n, s.finalists + 1)
    return s.rungs[0].cost_s * (n + racing * (s.min_reps - 1))


def welch(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Welch's two-sided p-value of the means of `a` and `b`; None with fewer than two values of
    either. Two samples that do not vary: 1 when equal, 0 when not."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    va = math.fsum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = math.fsum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    if va + vb == 0:
        return 1.0 if ma == mb else 0.0
    t = (mb - ma) / math.sqrt(va + vb)
    # Welch-Satterthwaite degrees of freedom (a term of a sample that does not vary is 0).
    df = (va + vb) ** 2 / sum(v * v / (len(x) - 1) for v, x in ((va, a), (vb, b)) if v)
    return t_p_value(t, df)


class _Race:
    def __init__(self, n: int, measure: Measure, s: Settings):
        self.n, self.measure, self.s = n, measure, s
        self.out = Outcome()
        self.estimated_s: dict[int, float] = {}  # rung -> the estimates of its measurements so far
        self.spent_s: dict[int, float] = {}  # rung -> what they cost

    def scale(self, rung: int) -> float:
        """How the measurements on `rung` compared with their estimates; before any there, how all
        so far did (1 before any at all): an estimate can be off by more on one rung than another."""
        if self.estimated_s.get(rung):
            return self.spent_s[rung] / self.estimated_s[rung]
        estimated = sum(self.estimated_s.values())
        return sum(self.spent_s.values()) / estimated if estimated else 1.0

    def left_s(self) -> float:
        return self.s.budget_s - self.out.spent_s - self.s.overhead_s()

    def take(self, config: int, rung: int) -> None:
        got = self.out.measured.setdefault((config, rung), [])
        m = self.measure(config, rung, len(got) + 1)
        got.append(m)
        self.out.spent_s += m.cost_s
        self.spent_s[rung] = self.spent_s.get(rung, 0.0) + m.cost_s
        self.estimated_s[rung] = self.estimated_s.get(rung, 0.0) + self.s.rungs[rung].cost_s

    def app_cpu(self, config: int, rung: int) -> float | None:
        """The mean application CPU (%) of `config`'s measurements on `rung`; None where none says."""
        cpus = [m.app_cpu_pct for m in self.out.measured[(config, rung)] if m.app_cpu_pct is not None]
        return math.fsum(cpus) / len(cpus) if cpus else None

    def over_limit(self, config: int, rung: int) -> bool:
        """Whether `config` is not eligible on `rung`: its application CPU above the limit (one not
        measured is not judged)."""
        cpu = self.app_cpu(config, rung)
        return self.s.max_app_cpu_pct is not None and cpu is not None and cpu > self.s.max_app_cpu_pct

    def score(self, config: int, rung: int) -> tuple[bool, float, float]:
        """The sort key of a configuration on a rung (smaller first): eligible before not (the CPU
        limit), then its mean goal, better first, then its CPU time per packet (a tie of lossless
        configurations goes to the cheaper)."""
        ms = self.out.measured[(config, rung)]
        mean = math.fsum(m.value for m in ms) / len(ms)
        cpus = [m.cpu_ns for m in ms if m.cpu_ns is not None]
        cpu = math.fsum(cpus) / len(cpus) if cpus else math.inf
        return (self.over_limit(config, rung), -mean if self.s.higher_is_better else mean, cpu)

    def ranked(self, configs: Sequence[int], rung: int) -> list[int]:
        return sorted(configs, key=lambda c: (self.score(c, rung), c))

    def screen(self) -> list[int]:
        """The configurations measured once on the first rung: all of them, unless they cost so much
        more than estimated that the budget runs out first; then as many as leave room for a race of
        two values each (Welch's least), and at least the defaults and the finalists' number.
        They are taken in an order that spreads over the space (screening_order), so that a cut
        leaves no value of a knob unmeasured that a full rung would have."""
        screened: list[int] = []
        order = screening_order(self.n)
        racing = min(self.n, self.s.finalists + 1)
        for c in order:
            # this one and then the least race: as many configurations as fit, the space's coverage
            # first (a tune of 27 cut when the rest did not fit screened 4 and climbed with the rest)
            need_s = self.s.rungs[0].cost_s * self.scale(0) * (1 + racing)
            if len(screened) > self.s.finalists and need_s > self.left_s():
                break
            self.take(c, 0)
            screened.append(c)
        self.out.unscreened = tuple(sorted(set(order) - set(screened)))
        self.out.screen_scale = self.scale(0)
        return sorted(screened)

    def climb(self) -> tuple[int, list[int]]:
        """Every configuration on the first rung (screen), the better third up while the budget
        allows; (the rung reached, the configurations on it)."""
        alive, rung = self.screen(), 0
        while rung + 1 < len(self.s.rungs):
            keep = self.ranked(alive, rung)[:max(self.s.finalists, math.ceil(len(alive) * KEEP))]
            if BASELINE not in keep:
                keep.append(BASELINE)
            racing = min(len(keep), self.s.finalists + 1)
            need_s = self.s.rungs[rung + 1].cost_s * (len(keep) + racing * (self.s.min_reps - 1)) * self.scale(rung + 1)
            if need_s > self.left_s():
                break
            alive, rung = keep, rung + 1
            for c in alive:
                self.take(c, rung)
        return rung, alive

    def race(self, rung: int, alive: Sequence[int]) -> list[int]:
        """The finalists raced on `rung` (module doc); those still in the race at its end."""
        racing = self.ranked(alive, rung)[:self.s.finalists]
        if BASELINE not in racing:
            racing.append(BASELINE)
        self.out.finalists = tuple(racing)
        while True:
            # A finalist over the CPU limit cannot win: it leaves the race (the defaults stay).
            racing = [c for c in racing if c == BASELINE or not self.over_limit(c, rung)]
            if len(racing) < 2:
                break
            reps = min(len(self.out.measured[(c, rung)]) for c in racing)
            if reps >= self.s.max_reps:
                break
            if not self.fits(rung, len(racing)):
                self.last_pair(rung, racing)
                break
            for c in racing:
                self.take(c, rung)
            if reps + 1 >= self.s.min_reps:
                leader = self.ranked(racing, rung)[0]
                racing = [c for c in racing if c == leader or not self.compare(leader, c, rung).significant]
        return racing

    def last_pair(self, rung: int, racing: Sequence[int]) -> None:
        """Where a whole round no longer fits: the leader and the finalist the test separates from
        it least (the highest p-value; one not yet judged first) measured once more, if the two
        fit, so that a race does not leave most of a round's budget unspent (a 15 min tune here
        ended 100 s early, a 5 min one 70 s)."""
        if len(racing) > 2:
            leader = self.ranked(racing, rung)[0]
            p = {c: self.compare(leader, c, rung).p_value for c in racing if c != leader}
            racing = [leader, max(p, key=lambda c: (math.inf if p[c] is None else p[c], -c))]
        if self.fits(rung, len(racing)):
            for c in racing:
                self.take(c, rung)

    def fits(self, rung: int, measurements: int) -> bool:
        """Whether the budget left covers that many measurements on `rung`, at their estimate as
        corrected by the measurements so far (scale)."""
        return self.s.rungs[rung].cost_s * measurements * self.scale(rung) <= self.left_s()

    def compare(self, leader: int, other: int, rung: int) -> Comparison:
        p = welch(self.out.values(leader, rung), self.out.values(other, rung))
        return Comparison(p, p is not None and p < SIGNIFICANCE_LEVEL)

    def run(self) -> Outcome:
        self.out.max_app_cpu_pct = self.s.max_app_cpu_pct
        rung, alive = self.climb()
        self.out.final_rung = rung
        self.race(rung, alive)
        finalists = self.ranked(self.out.finalists, rung)
        self.out.finalists = tuple(finalists)
        # The race's winner, then every other configuration by the highest rung it reached and its
        # mean there: a finalist that lost the race ranks among those it was chosen with by value;
        # those over the CPU limit after every eligible one (the winner too, if it is).
        def key(c: int) -> tuple:
            top = rung if c in finalists else self.out.highest_rung(c)
            return (self.over_limit(c, top), c != finalists[0], -top, self.score(c, top), c)

        measured = [c for c in range(self.n) if c not in self.out.unscreened]
        self.out.ranking = tuple(sorted(measured, key=key))
        lead = self.out.ranking[0] if self.out.ranking[0] in finalists else finalists[0]
        self.out.comparisons = {c: self.compare(lead, c, rung) for c in finalists if c != lead}
        for c in measured:
            top = rung if c in finalists else self.out.highest_rung(c)
            cpu = self.app_cpu(c, top)
            if self.over_limit(c, top) and cpu is not None:
                self.out.over_limit[c] = cpu
        return self.out


def search(n: int, measure: Measure, s: Settings) -> Outcome:
    """Search `n` configurations (0: the defaults) by `measure` within `s.budget_s` (module doc);
    BudgetTooSmall when the budget does not cover the shortest search."""
    if n < 1 or not s.rungs:
        raise ValueError("a search needs a configuration and a rung")
    least = smallest_budget(n, s)
    if s.budget_s < least:
        raise BudgetTooSmall(least)
    return _Race(n, measure, s).run()
