"""RFC 2544 throughput (section 26.1) by binary search, as seed 000 ran it.

RFC 2544 defines throughput as "the fastest rate at which the count of test
frames transmitted by the DUT is equal to the number of test frames sent to
it". Seed 000 finds it with a binary search: start at wire speed; after a
trial with loss lower the rate by the step, after a trial without loss raise
it; halve the step after each trial; stop when the step is below a precision
(1 % of the link). Each trial lasts 60 s unless told otherwise.

Here the search keeps the bracket it has established: the highest rate that
passed (`lower`, 0 before any) and the lowest that failed (`upper`, the wire
rate before any trial). Each trial runs at the middle of the bracket, which is
exactly the seed's halving step, and the search stops once the bracket is no
wider than the precision: the throughput it reports is then within the
precision of the true one (the seed stops one halving earlier, when the next
step would be below it, and leaves a bracket up to twice as wide).

A trial passes when it is LOSSLESS by the one rule of capbench.methods.verdict:
its generator held the rate and it lost at most `loss_tolerance_frames` frames
(0, as RFC 2544 demands, by default). A LOSSY trial (more lost, whether or not
the generator held the rate) and a LOWER_BOUND (nothing lost, the generator
short) both fail: the rate was not shown to pass, so the search goes lower.

The result tells the bracket's upper end (`upper_bound_pps`, the lowest rate
that failed) from the lowest rate at which the capture lost frames
(`lowest_lossy_pps`, from the LOSSY trials), and says which bounded the
throughput (`bounded_by`): "capture loss" (a trial at the upper end was lossy),
"generator" (the trials there were lower bounds: the throughput is then a lower
bound of the capture's, and a note says so) or "none" (the wire rate passed).

Two guards against the saturation seed 000 warns about ("after sending the
traffic at the speed when the DUT is unable to receive all packets ...
following behaviour of DUT is unpredictable and the test results are
distorted"): a pause before every trial, and a verification trial at the
found rate after a longer pause. If the verification loses frames, the found
rate was a distorted pass: it becomes the lowest failing rate, the search goes
on below it, and the result says so in `notes` and `verification_failures_pps`.

Figures come from trials only: the throughput is the rate of a trial that
passed (and whose verification passed), or 0 when no trial passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.methods.measurer import (
    LoadMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialOutcome,
    TrialRunner,
    check_max_load,
    max_load_note,
    check_loss_tolerance,
    check_pause,
    check_precision_pct,
    check_trial_s,
    same_load,
)
from capbench.methods.method import (DEFAULT_LINK_BPS, DEFAULT_PAUSE_S, DEFAULT_PRECISION_PCT, TRIAL_OVERHEAD_S, Bound, Context, Estimate, Figures, Method, MethodAnswer,
                                     MethodSettings, Metric, binary_search_trials, held_text, load_of, tagger,
                                     without_bound_notes)
from capbench.methods.verdict import (
    CAPTURE_LOSS,
    GENERATOR_BOUND,
    GENERATOR,
    LOSSLESS,
    LOSSY,
    bound_at,
    generator_note,
    generator_short,
    generator_short_text,
    loss_text,
    short_lossy_text,
    verdict,
)
from capbench.rates import wire_bps, wire_pps
from capbench.trial.measure import TrialResult

RFC2544_TRIAL_S = 60.0  # RFC 2544 section 24: "the duration of the test portion of each trial SHOULD be at least 60 s"
MIN_TRIAL_S = 1.0
VERIFY_PAUSE_S = 10.0  # the least pause before a verification trial, against saturation


@dataclass(frozen=True)
class Rfc2544Result:
    """The outcome of one throughput search at one frame length."""

    frame_len: int
    link_bps: float
    wire_pps: float
    throughput_pps: float  # highest rate that passed, verified; 0.0 when no rate passed
    throughput_gbps: float  # on the wire, with 20 B preamble + gap per frame
    # Lowest rate whose trial (the generator holding the rate) lost more than the tolerance; None if none did.
    lowest_lossy_pps: float | None
    upper_bound_pps: float | None  # the bracket's upper end, the lowest rate that failed; None: the wire rate passed
    bounded_by: str  # what failed at upper_bound_pps: "capture loss", "generator" or "none" (the wire rate passed)
    precision_pct: float
    precision_pps: float
    loss_tolerance_frames: int
    trial_s: float
    short_trials: bool  # trial_s below RFC 2544's 60 s: the result says so, it is not an RFC 2544 figure
    verified: bool  # a verification trial at throughput_pps passed (False when throughput is 0)
    verification_failures_pps: tuple[float, ...]  # found rates whose verification lost frames
    trials: tuple[SearchTrial, ...]  # every trial, in the order it ran
    total_trial_s: float  # traffic time of all trials
    total_pause_s: float  # time spent in pauses before trials
    notes: tuple[str, ...]


def trial_passed(trial: SearchTrial, loss_tolerance_frames: int) -> bool:
    """LOSSLESS: the generator held the rate and at most `loss_tolerance_frames` were lost."""
    return verdict(trial.result, loss_tolerance_frames) == LOSSLESS


def lowest_lossy(trials: Iterable[tuple[float, TrialOutcome]], loss_tolerance_frames: int) -> float | None:
    """The lowest rate of (rate, result) trials that were LOSSY (more than the tolerance lost,
    whether or not the generator held the rate); None when there is none."""
    return min((rate for rate, r in trials if verdict(r, loss_tolerance_frames) == LOSSY), default=None)


def what_bounded(upper_pps: float | None, trials: Iterable[tuple[float, TrialOutcome]],
                 loss_tolerance_frames: int) -> str | None:
    """What failed at the bracket's upper end `upper_pps`, from (rate, result) trials, by their
    verdicts there (verdict.bound_at): CAPTURE_LOSS, GENERATOR, NOT_BOUNDED without an upper end,
    None when no trial at `upper_pps` says (a record without them)."""
    at = [r for rate, r in trials if upper_pps is not None and same_load(rate, upper_pps)]
    return bound_at(upper_pps, (verdict(r, loss_tolerance_frames) for r in at))


def bound_notes(bounded_by: str | None, upper_pps: float | None, throughput_pps: float,
                trials: Iterable[tuple[float, TrialOutcome]], loss_tolerance_frames: int) -> list[str]:
    """The notes on what bounded a throughput, from (rate, result) trials: the generator's shortfall
    that makes it a lower bound, or the capture loss at the upper end of a generator that fell short
    there (its loss is capture loss at the rate it sent)."""
    if upper_pps is None:
        return []
    at = [r for rate, r in trials if same_load(rate, upper_pps)]
    if bounded_by == GENERATOR and throughput_pps > 0:
        return [generator_note(upper_pps, at)]
    short_lossy = [r for r in at if verdict(r, loss_tolerance_frames) == LOSSY and generator_short(r)]
    if bounded_by == CAPTURE_LOSS and short_lossy:
        return [short_lossy_text(upper_pps, short_lossy[0])]
    return []


def search(
    measurer: LoadMeasurer,
    *,
    frame_len: int,
    link_bps: float = DEFAULT_LINK_BPS,
    precision_pct: float = DEFAULT_PRECISION_PCT,
    loss_tolerance_frames: int = 0,
    trial_s: float = RFC2544_TRIAL_S,
    pause_s: float = DEFAULT_PAUSE_S,
    verify_pause_s: float = VERIFY_PAUSE_S,
    pause: Pause | None = None,
    on_trial: OnTrial | None = None,
    max_load_pps: float | None = None,
) -> Rfc2544Result:
    """Search the RFC 2544 throughput of `measurer` at `frame_len` on a `link_bps` link (module doc).

    `precision_pct` is a share of the wire rate; `pause(seconds)` is called
    before each trial (`time.sleep` by default), for `pause_s` before search
    trials and `verify_pause_s` before the verification trial; `on_trial(trial)`
    runs as each trial ends.
    """
    check_precision_pct(precision_pct)
    check_loss_tolerance(loss_tolerance_frames)
    check_trial_s(trial_s, minimum_s=MIN_TRIAL_S)
    check_pause(verify_pause_s)
    wire = wire_pps(link_bps, frame_len)
    max_pps = check_max_load(max_load_pps, wire)  # the wire rate, or --max-rate
    precision_pps = wire * precision_pct / 100.0
    runner = TrialRunner(measurer.measure, pause_s=pause_s, pause=pause, on_trial=on_trial)
    notes: list[str] = []
    if trial_s < RFC2544_TRIAL_S:
        notes.append(f"trials of {trial_s:g} s, shorter than RFC 2544's {RFC2544_TRIAL_S:g} s")

    passed: list[float] = []  # rates with a passing search trial
    lower = 0.0  # highest rate known to pass (0: none yet)
    upper: float | None = None  # lowest rate known to fail (None: not even the wire rate has)
    failures: list[float] = []
    while True:
        ceiling = max_pps if upper is None else upper
        if upper is None and not passed:
            rate = max_pps  # the first trial: at wire speed (or the maximum load)
        elif ceiling - lower > precision_pps * (1 + 1e-9) and not (upper is None and lower >= max_pps):
            rate = (lower + ceiling) / 2.0
        else:
            # The bracket is narrow enough: verify the rate found, unless there is none.
            if lower <= 0:
                at_ceiling = [t.result for t in runner.trials if same_load(t.load_pps, ceiling)]
                lossy = [r for r in at_ceiling if verdict(r, loss_tolerance_frames) == LOSSY]
                if lossy:
                    notes.append(f"no rate passed: at the lowest rate tried, {ceiling:,.0f} pps, the capture "
                                 f"{loss_text(lossy[0], ceiling)}")
                else:
                    notes.append(f"no rate passed: {generator_short_text(ceiling, at_ceiling)}, the lowest rate "
                                 f"tried, and lost nothing (nothing is known of the capture)")
                verified = False
                break
            check = runner.run(lower, trial_s, "verify", pause_s=verify_pause_s)
            if trial_passed(check, loss_tolerance_frames):
                verified = True
                break
            failures.append(lower)
            if verdict(check.result, loss_tolerance_frames) == LOSSY:
                notes.append(f"verification at {lower:,.0f} pps {loss_text(check.result, lower)}: its earlier "
                             f"pass was distorted (saturation?); searching on below it")
            else:  # a lower bound: nothing lost, but the generator could not send the rate this time
                notes.append(f"verification at {lower:,.0f} pps: {generator_short_text(lower, [check.result])} "
                             f"and lost nothing (a lower bound, not a pass); searching on below it")
            upper = lower
            below = [r for r in passed if r < upper]
            lower = max(below) if below else 0.0
            continue
        trial = runner.run(rate, trial_s, "search")
        if trial_passed(trial, loss_tolerance_frames):
            passed.append(rate)
            lower = rate
        else:
            upper = rate

    if upper is None and lower >= max_pps:
        notes.append("the wire rate passed: the capture path keeps up with the link at this frame length"
                     if same_load(max_pps, wire) else max_load_note(max_pps, wire))
    tried = [(t.load_pps, t.result) for t in runner.trials]
    bounded_by = what_bounded(upper, tried, loss_tolerance_frames) or CAPTURE_LOSS  # a failed trial is at upper
    notes += bound_notes(bounded_by, upper, lower, tried, loss_tolerance_frames)
    return Rfc2544Result(
        frame_len=frame_len,
        link_bps=link_bps,
        wire_pps=wire,
        throughput_pps=lower,
        throughput_gbps=wire_bps(lower, frame_len) / 1e9,
        lowest_lossy_pps=lowest_lossy(tried, loss_tolerance_frames),
        upper_bound_pps=upper,
        bounded_by=bounded_by,
        precision_pct=precision_pct,
        precision_pps=precision_pps,
        loss_tolerance_frames=loss_tolerance_frames,
        trial_s=trial_s,
        short_trials=trial_s < RFC2544_TRIAL_S,
        verified=verified,
        verification_failures_pps=tuple(failures),
        trials=tuple(runner.trials),
        total_trial_s=runner.total_trial_s,
        total_pause_s=runner.total_pause_s,
        notes=tuple(notes),
    )


# --- the method object (capbench.methods.method) ------------------------------------------


@dataclass(frozen=True)
class Rfc2544Answer(MethodAnswer):
    """An RFC 2544 throughput search's line in searches.jsonl (Rfc2544Result without its trials)."""

    METHOD = "rfc2544"

    throughput_pps: float
    throughput_gbps: float
    lowest_lossy_pps: float | None
    upper_bound_pps: float | None
    bounded_by: str | None  # None: a version-1 line from before bounded_by (judged from its trials)
    precision_pct: float
    loss_tolerance_frames: int
    trial_s: float | None
    short_trials: bool
    verified: bool
    verification_failures_pps: tuple[float, ...]
    notes: tuple[str, ...]

    @classmethod
    def from_v1(cls, d: dict[str, Any]) -> dict[str, Any]:
        # A line from before bounded_by names the bracket's upper end lowest_lossy_pps.
        return super().from_v1(d if "bounded_by" in d else d | {"upper_bound_pps": d.get("lowest_lossy_pps")})

    @classmethod
    def of(cls, r: Rfc2544Result, backend: str) -> Rfc2544Answer:
        return cls(**cls.common(r, backend),
                   throughput_pps=r.throughput_pps, throughput_gbps=r.throughput_gbps,
                   lowest_lossy_pps=r.lowest_lossy_pps, upper_bound_pps=r.upper_bound_pps, bounded_by=r.bounded_by,
                   precision_pct=r.precision_pct, loss_tolerance_frames=r.loss_tolerance_frames, trial_s=r.trial_s,
                   short_trials=r.short_trials, verified=r.verified,
                   verification_failures_pps=r.verification_failures_pps, notes=r.notes)

    def text(self) -> str:
        out = (f"throughput {self.throughput_pps:,.0f} pps ({self.throughput_gbps:.3f} Gbps)"
               + ("" if self.verified else ", not verified") + (", short trials" if self.short_trials else ""))
        if self.bounded_by == GENERATOR:
            out += f", {GENERATOR_BOUND}: {held_text(self.upper_bound_pps)}"
        return out

    def figures(self, tried: Sequence[TrialResult], wire: float) -> Figures:
        info: dict[str, Any] = {"verified": self.verified, "short_trials": self.short_trials, "trial_s": self.trial_s,
                                "verification_failures_pps": list(self.verification_failures_pps)}
        notes = list(self.notes)
        upper, bounded, lowest = self.upper_bound_pps, self.bounded_by, self.lowest_lossy_pps
        if tried:  # judged again from the trials, by today's rule
            pairs = [(load_of(r), r) for r in tried]
            tolerance = self.loss_tolerance_frames
            bounded = what_bounded(upper, pairs, tolerance) or self.bounded_by
            lowest = lowest_lossy(pairs, tolerance)
            notes = without_bound_notes(notes) + bound_notes(bounded, upper, self.throughput_pps, pairs, tolerance)
        info |= {"upper_bound_pps": upper, "bounded_by": bounded, "lowest_lossy_pps": lowest}
        return Figures({METRIC.name: self.throughput_pps}, {METRIC.name: Bound(bounded, upper, lowest)},
                       wire * self.precision_pct / 100.0, tuple(notes), info)


METRIC = Metric("rfc2544_pps", "RFC 2544 throughput", "pps")


def trial_note(lengths: Iterable[float], short: bool) -> list[str]:
    """The tables' note on the trial lengths of RFC 2544-style searches."""
    lengths = sorted(set(lengths))
    if not lengths:
        return []
    text = f"Trials of {', '.join(f'{x:g}' for x in lengths)} s"
    return [text + (f": shorter than RFC 2544's {RFC2544_TRIAL_S:g} s, so not RFC 2544 figures." if short else ".")]


class Rfc2544(Method):
    name = "rfc2544"
    takes_max_load = True
    help = "RFC 2544 throughput (26.1): binary search for the highest rate without loss, verified"
    answer_type = Rfc2544Answer
    trial_s = RFC2544_TRIAL_S
    trial_help = "RFC 2544's minimum"
    min_trial_s = MIN_TRIAL_S
    title = "RFC 2544 throughput"
    best_rank = 1
    loss_lines = True
    names_lowest_lossy = True
    loss_label = "RFC 2544"
    metrics = (METRIC,)
    table = "throughput"
    table_title = "RFC 2544 throughput"

    def search(self, m: Any, frame_len: int, c: Context, on_trial: Any) -> Rfc2544Result:
        s = c.settings
        return search(m, frame_len=frame_len, link_bps=c.link_bps, precision_pct=s.precision_pct,
                      loss_tolerance_frames=s.loss_tolerance_frames, trial_s=s.trial_length(self),
                      pause_s=s.pause_s, verify_pause_s=max(s.pause_s, VERIFY_PAUSE_S), pause=c.pause,
                      on_trial=on_trial, max_load_pps=s.max_load_pps(frame_len, c.link_bps))

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, **_: Any) -> Rfc2544Answer:
        assert isinstance(size, int)
        return Rfc2544Answer.of(self.search(measurer, size, context, tagger(context.record, self.name)), backend)

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        trial = settings.trial_length(self)
        searches = binary_search_trials(settings.precision_pct)
        verify = trial + max(settings.pause_s, VERIFY_PAUSE_S) + overhead_s  # it waits longer, against saturation
        return Estimate(searches + 1, searches * (trial + settings.pause_s + overhead_s) + verify)

    def derive(self, tried: Sequence[TrialResult], loss_tolerance_frames: int, precision_pct: float | None
               ) -> Figures:
        """The rate of the last verification trial that passed (a search pass that its verification
        then failed was distorted, seed 000's saturation, and is never the throughput)."""
        wire = wire_pps(tried[0].link_bps, tried[0].frame_len)
        verifies = [r for r in tried if r.purpose == "verify"]
        passed = [r for r in verifies if verdict(r, loss_tolerance_frames) == LOSSLESS]
        failed = [load_of(r) for r in verifies if verdict(r, loss_tolerance_frames) != LOSSLESS]
        notes = []
        value = load_of(passed[-1]) if passed else None
        if not passed:
            notes.append("no verification trial passed: no throughput (the search found no rate, or was cut short)"
                         if verifies or any(r.purpose for r in tried) else
                         "the trials name no verification trial: no throughput can be taken from them")
        pairs = [(load_of(r), r) for r in tried]
        # The search's bracket narrows with every failure: its upper end is the lowest rate that failed.
        upper = min((x for x, r in pairs if verdict(r, loss_tolerance_frames) != LOSSLESS), default=None)
        bounded = what_bounded(upper, pairs, loss_tolerance_frames)
        lowest = lowest_lossy(pairs, loss_tolerance_frames)
        info = {"verified": bool(passed), "short_trials": any(r.requested_duration_s < RFC2544_TRIAL_S for r in tried),
                "trial_s": max(r.requested_duration_s for r in tried), "verification_failures_pps": failed,
                "upper_bound_pps": upper, "bounded_by": bounded, "lowest_lossy_pps": lowest}
        notes += bound_notes(bounded, upper, value or 0.0, pairs, loss_tolerance_frames)
        if failed:
            notes.append(f"verification failed at {', '.join(f'{x:,.0f}' for x in failed)} pps: a distorted pass, "
                         f"searched on below it")
        return Figures({METRIC.name: value}, {METRIC.name: Bound(bounded, upper, lowest)},
                       wire * precision_pct / 100.0 if precision_pct else 0.0, tuple(notes), info)
