"""RFC 2544 back-to-back frames (section 26.4): the longest burst at wire rate captured without loss.

A burst of frames with minimum inter-frame gaps is sent; if the capture path
counts every frame the burst is lengthened, otherwise shortened. Here that is
a binary search over the burst length in frames, as the throughput search is
over the rate: start with the longest burst (`max_frames`, by default 2 s of
frames at wire rate), keep the longest passing burst and the shortest failing
one, try the middle, and stop once they are no more than `precision_frames`
apart (1 % of `max_frames` by default). A burst passes when it lost at most
`loss_tolerance_frames` frames (0) and the generator sent all of it.

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
    offered_short,
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


def burst_passed(trial: SearchTrial, frames: int, loss_tolerance_frames: int) -> bool:
    r = trial.result
    return not offered_short(r) and r.sent >= frames and r.lost <= loss_tolerance_frames


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
    for rep in range(1, repeats + 1):
        lower, upper = 0, None  # longest passing, shortest failing burst
        frames = max_frames
        while True:
            trial = runner.run(rate, frames / rate, f"burst {rep}/{repeats}",
                               call=lambda n=frames: measure_burst(n))
            if burst_passed(trial, frames, loss_tolerance_frames):
                lower = frames
            else:
                upper = frames
            if upper is None or upper - lower <= precision_frames:
                break
            frames = (lower + upper) // 2
        found.append(lower)
        if lower == 0:
            notes.append(f"repetition {rep}: the shortest burst tried ({upper:,} frames) lost frames")
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
    )
