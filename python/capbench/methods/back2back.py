"""RFC 2544 back-to-back frames (section 26.4): the longest burst at wire rate captured without loss.

A burst of frames with minimum inter-frame gaps is sent; if the capture path
counts every frame the burst is lengthened, otherwise shortened. Here that is
a binary search over the burst length in frames, as the throughput search is
over the rate: start with the longest burst (`max_frames`, by default 2 s of
frames at wire rate), keep the longest passing burst and the shortest failing
one, try the middle, and stop once they are no more than `precision_frames`
apart (1 % of `max_frames` by default). A burst passes when it is LOSSLESS by
the one rule of capbench.methods.verdict: the generator sent all of it at wire
rate and at most `loss_tolerance_frames` frames (0) were lost. A LOSSY burst
(more lost, whether or not the generator kept up) and a LOWER_BOUND (nothing
lost, the generator short) both fail; `bounded_by` says which ended the search:
"capture loss" (a repetition's shortest failing burst was lossy), "generator"
(only lower bounds failed: the answer is a lower bound of the capture's) or
"none" (the longest burst passed every time).

RFC 2544 asks for the search to be repeated (at least 50 times) and the mean
reported: `repeats` runs the search that many times; the result has each
repetition's longest passing burst, their mean and minimum. The figures are
burst lengths that passed a trial, or 0 when no burst did.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from capbench.errors import UsageError
from capbench.methods.measurer import (
    BurstMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialRunner,
    check_loss_tolerance,
)
from capbench.methods.method import (DEFAULT_LINK_BPS, DEFAULT_PAUSE_S, TRIAL_OVERHEAD_S, Bound, Context, Estimate, Figures, Method, MethodAnswer,
                                     MethodSettings, Metric, tagger)
from capbench.methods.verdict import (
    GENERATOR,
    GENERATOR_BOUND,
    LOSSLESS,
    LOSSY,
    NOT_BOUNDED,
    bound_at,
    generator_short,
    loss_text,
    rule,
)
from capbench.rates import Rate, wire_pps
from capbench.trial.measure import Measurer, TrialResult

DEFAULT_BURST_S = 2.0


@dataclass(frozen=True)
class BackToBackResult:
    frame_len: int
    link_bps: float
    wire_pps: float
    max_frames: int  # the longest burst tried
    precision_frames: int
    loss_tolerance_frames: int
    longest_frames: tuple[int, ...]  # per repetition: the longest burst that passed (0: none did)
    mean_frames: float  # RFC 2544's reported figure: the mean over repetitions
    min_frames: int
    mean_burst_s: float  # mean_frames at wire rate
    unlimited: bool  # the longest burst tried passed in every repetition
    trials: tuple[SearchTrial, ...]
    total_trial_s: float
    total_pause_s: float
    notes: tuple[str, ...]
    bounded_by: str = NOT_BOUNDED  # what failed at the shortest failing bursts: "capture loss", "generator", "none"


def burst_verdict(trial: SearchTrial, frames: int, loss_tolerance_frames: int) -> str:
    """The burst's verdict (module doc); a burst of fewer frames than asked did not test the burst
    asked for: its generator fell short."""
    r = trial.result
    return rule(max(0, r.lost) > loss_tolerance_frames, generator_short(r) or r.sent < frames)


def burst_passed(trial: SearchTrial, frames: int, loss_tolerance_frames: int) -> bool:
    return burst_verdict(trial, frames, loss_tolerance_frames) == LOSSLESS


def search(
    measure_burst: BurstMeasurer,
    *,
    frame_len: int,
    link_bps: float = DEFAULT_LINK_BPS,
    max_frames: int | None = None,
    precision_frames: int | None = None,
    loss_tolerance_frames: int = 0,
    repeats: int = 1,
    pause_s: float = DEFAULT_PAUSE_S,
    pause: Pause | None = None,
    on_trial: OnTrial | None = None,
) -> BackToBackResult:
    """The longest loss-free burst `measure_burst(frames)` captures, by binary search (module doc)."""
    rate = wire_pps(link_bps, frame_len)
    max_frames = round(rate * DEFAULT_BURST_S) if max_frames is None else max_frames
    if max_frames < 1:
        raise UsageError(f"longest burst {max_frames} frames must be 1 frame or more")
    precision_frames = max(1, max_frames // 100) if precision_frames is None else precision_frames
    if precision_frames < 1:
        raise UsageError(f"burst precision {precision_frames} frames must be 1 frame or more")
    check_loss_tolerance(loss_tolerance_frames)
    if repeats < 1:
        raise UsageError(f"--repeat {repeats} must be 1 or more")

    runner = TrialRunner(None, pause_s=pause_s, pause=pause, on_trial=on_trial)
    notes: list[str] = []
    found: list[int] = []
    ended: list[str] = []  # the verdict of each repetition's shortest failing burst
    for rep in range(1, repeats + 1):
        lower, upper = 0, None  # longest passing, shortest failing burst
        frames = max_frames
        failed: SearchTrial | None = None  # the trial of the shortest failing burst
        while True:
            trial = runner.run(rate, frames / rate, f"burst {rep}/{repeats}",
                               call=lambda n=frames: measure_burst(n))
            if burst_passed(trial, frames, loss_tolerance_frames):
                lower = frames
            else:
                upper, failed = frames, trial
            if upper is None or upper - lower <= precision_frames:
                break
            frames = (lower + upper) // 2
        found.append(lower)
        if failed is not None and upper is not None:
            failed_frames = upper
            ended.append(burst_verdict(failed, failed_frames, loss_tolerance_frames))
            if lower == 0 and ended[-1] == LOSSY:
                notes.append(f"repetition {rep}: the shortest burst tried ({failed_frames:,} frames) "
                             f"{loss_text(failed.result, rate)}")
            elif lower == 0:
                notes.append(f"repetition {rep}: the generator could not send the shortest burst tried "
                             f"({failed_frames:,} frames at wire rate: it sent {failed.result.sent:,}) and nothing "
                             f"was lost: nothing is known of the capture")
            elif ended[-1] != LOSSY:
                notes.append(f"repetition {rep}: the generator could not send {failed_frames:,} frames at wire rate "
                             f"(it sent {failed.result.sent:,}, nothing lost): {lower:,} frames is a lower bound of "
                             f"the capture's, set by the generator")
    mean = statistics.fmean(found)
    unlimited = all(n == max_frames for n in found)
    if unlimited:
        notes.append(f"the longest burst tried, {max_frames:,} frames ({max_frames / rate:g} s at wire rate), "
                     f"passed: the capture path keeps up with the link")
    return BackToBackResult(
        frame_len=frame_len,
        link_bps=link_bps,
        wire_pps=rate,
        max_frames=max_frames,
        precision_frames=precision_frames,
        loss_tolerance_frames=loss_tolerance_frames,
        longest_frames=tuple(found),
        mean_frames=mean,
        min_frames=min(found),
        mean_burst_s=mean / rate,
        unlimited=unlimited,
        trials=tuple(runner.trials),
        total_trial_s=runner.total_trial_s,
        total_pause_s=runner.total_pause_s,
        notes=tuple(notes),
        # bound_at: LOSSY somewhere is capture loss, else the lower bounds are the generator's.
        bounded_by=bound_at(max_frames, ended) if ended else NOT_BOUNDED,
    )


# --- the method object (capbench.methods.method) ------------------------------------------

# Frames a back-to-back burst may need beyond its own sending time: process start-up,
# the counter's last ring blocks.
BURST_MARGIN_S = 1.0


def burst_measurer(m: Measurer) -> Callable[[int], TrialResult]:
    """measure_burst(frames): `frames` frames at the link's wire rate, then the counts."""
    wire = wire_pps(m.setup.link_bps, m.setup.frame_len)

    def measure_burst(frames: int) -> TrialResult:
        setup = dataclasses.replace(m.setup, gen_args=(*m.setup.gen_args, "--count", str(frames)))
        burst = Measurer(m.binaries, m.testbed, setup)
        return burst.measure(frames / wire + BURST_MARGIN_S, Rate("pct", 100.0, "100%"))

    return measure_burst


@dataclass(frozen=True)
class BackToBackAnswer(MethodAnswer):
    METHOD = "back2back"

    max_frames: int
    precision_frames: int
    longest_frames: tuple[int, ...]
    mean_frames: float
    min_frames: int
    mean_burst_s: float
    unlimited: bool
    bounded_by: str | None
    notes: tuple[str, ...]

    @classmethod
    def of(cls, r: BackToBackResult, backend: str) -> BackToBackAnswer:
        return cls(**cls.common(r, backend),
                   max_frames=r.max_frames, precision_frames=r.precision_frames, longest_frames=r.longest_frames,
                   mean_frames=r.mean_frames, min_frames=r.min_frames, mean_burst_s=r.mean_burst_s,
                   unlimited=r.unlimited, bounded_by=r.bounded_by, notes=r.notes)

    def text(self) -> str:
        out = f"longest burst {self.mean_frames:,.0f} frames ({self.mean_burst_s * 1e3:.2f} ms)"
        if self.bounded_by == GENERATOR:
            out += f", {GENERATOR_BOUND}: the generator could not send the bursts at wire rate"
        return out

    def figures(self, tried: Sequence[TrialResult], wire: float) -> Figures:
        info = {"unlimited": self.unlimited, "max_frames": self.max_frames, "bounded_by": self.bounded_by}
        return Figures({METRIC.name: self.mean_frames}, {METRIC.name: Bound(self.bounded_by)},
                       float(self.precision_frames), self.notes, info)


METRIC = Metric("b2b_frames", "back-to-back burst", "frames")


class BackToBack(Method):
    name = "back2back"
    help = "RFC 2544 back-to-back frames (26.4): the longest burst at wire rate captured without loss"
    answer_type = BackToBackAnswer
    title = "back-to-back burst"
    metrics = (METRIC,)
    table = "bursts"
    table_title = "Back-to-back (longest lossless burst at wire rate)"
    takes_sensors = False  # a burst's Measurer is built from one capture's setup (burst_measurer)

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, **_: Any) -> BackToBackAnswer:
        assert isinstance(size, int)
        s = context.settings
        # A resumed step's campaign.ReplayMeasurer has its own measure_burst: it replays the bursts
        # recorded before it makes new ones (burst_measurer(m) alone would start every burst afresh).
        measure_burst = getattr(measurer, "measure_burst", None) or burst_measurer(measurer)
        r = search(measure_burst, frame_len=size, link_bps=context.link_bps,
                   loss_tolerance_frames=s.loss_tolerance_frames, pause_s=s.pause_s, pause=context.pause,
                   on_trial=tagger(context.record, self.name))
        return BackToBackAnswer.of(r, backend)

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        """About 12 bursts of up to DEFAULT_BURST_S each."""
        return Estimate(12, 12 * (DEFAULT_BURST_S + settings.pause_s + overhead_s))
