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

import statistics
from dataclasses import dataclass

from capbench.errors import UsageError
from capbench.methods.measurer import (
    BurstMeasurer,
    OnTrial,
    Pause,
    SearchTrial,
    TrialRunner,
    check_loss_tolerance,
)
from capbench.methods.verdict import (
    LOSSLESS,
    LOSSY,
    NOT_BOUNDED,
    bound_at,
    generator_short,
    loss_text,
    rule,
)
from capbench.rates import wire_pps

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
    link_bps: float = 1e9,
    max_frames: int | None = None,
    precision_frames: int | None = None,
    loss_tolerance_frames: int = 0,
    repeats: int = 1,
    pause_s: float = 2.0,
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
