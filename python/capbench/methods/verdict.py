"""One rule for what is loss: the verdict of a trial at its target load.

A frame the generator sent and the counter did not capture is lost, always, at
the rate the generator achieved: `lost = sent - received`, and the loss ratio is
`lost / sent` with nothing folded into it. Whether the generator held its target
is a separate question, answered by the trial record's `invalid_offered_load`
(capbench.trial.measure: it sent fewer frames than asked, or at less than 99.9 % of the
target rate) or by a trial that sent nothing. Together they give each trial one
verdict at its target (`tolerance`: the frames, or the share of them, a search
lets a trial lose and still pass; 0 by default):

- LOSSY: more than the tolerance lost, or the capture program under test failed the
  trial (`failure`), whether or not the generator held its
  target. A lossy trial whose generator fell short failed at the load it was
  asked for (a search must go lower); its loss is capture loss at the rate the
  generator achieved.
- LOSSLESS: the generator held its target and at most the tolerance was lost.
- LOWER_BOUND: at most the tolerance lost, but the generator fell short: the
  capture kept up with what was sent, and nothing is known of the target.

RFC 2544, MLR, the sweep, back-to-back, the summary's iperf-like rows and the
exit status of `capbench run` all judge trials with `verdict`. A search's
answer says what bounded it (`bounded_by`): CAPTURE_LOSS when lossy trials did,
GENERATOR only when the trials at its upper end were lower bounds (the answer is
then a lower bound of the capture's, set by the generator), NOT_BOUNDED when
the wire rate passed.

When no trial gave a verdict (all were lower bounds), `way_forward` lists what a
user can do instead of reading "no result".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol

from capbench.testbed.ports import NIC_RX_MODE

LOSSLESS = "lossless"
LOSSY = "lossy"
LOWER_BOUND = "lower bound"

# What bounded a search's answer from above (module doc).
CAPTURE_LOSS = "capture loss"
GENERATOR = "generator"
NOT_BOUNDED = "none"


class Counts(Protocol):
    """The part of a trial the rule reads (capbench.trial.measure.TrialResult has it all)."""

    @property
    def sent(self) -> int: ...

    @property
    def lost(self) -> int: ...


def generator_short(trial: Counts) -> bool:
    """The generator did not hold the trial's target: `invalid_offered_load`, or nothing sent."""
    return bool(getattr(trial, "invalid_offered_load", False)) or trial.sent <= 0


def loss_ratio(trial: Counts) -> float:
    """`lost / sent` in [0, 1]; 0 for a trial that sent nothing (it lost nothing: it is a lower
    bound by `generator_short`)."""
    if trial.sent <= 0:
        return 0.0
    return min(1.0, max(0, trial.lost) / trial.sent)


def rule(lost_too_much: bool, short: bool) -> str:
    """The verdict from its two facts (module doc): loss first, then the generator."""
    if lost_too_much:
        return LOSSY
    return LOWER_BOUND if short else LOSSLESS


def failed(trial: Counts) -> bool:
    """The capture program under test failed the trial (ended early, hung at the stop, or its
    counts could not be read: the record's `failure`)."""
    return bool(getattr(trial, "failure", ""))


def verdict(trial: Counts, tolerance_frames: int = 0, *, max_loss_ratio: float | None = None) -> str:
    """LOSSLESS, LOSSY or LOWER_BOUND (module doc). The tolerance is `tolerance_frames` frames, or
    with `max_loss_ratio` (an MLR goal's) a loss ratio. A failed trial is LOSSY whatever it lost:
    a program that did not run to the stop says nothing of the frames it might have missed."""
    if failed(trial):
        return LOSSY
    if max_loss_ratio is not None:
        lost_too_much = loss_ratio(trial) > max_loss_ratio
    else:
        lost_too_much = max(0, trial.lost) > tolerance_frames
    return rule(lost_too_much, generator_short(trial))


def measured(trial: Counts) -> bool:
    """The trial says something of the capture (LOSSLESS or LOSSY with no tolerance), not only of
    the generator."""
    return verdict(trial) != LOWER_BOUND


def sent_pps(trial: Any, load_pps: float) -> float:
    """The rate the generator sent in a trial asked for `load_pps`: the load when it held it, the
    rate it achieved when it fell short."""
    if not generator_short(trial):
        return load_pps
    achieved = getattr(trial, "achieved_pps", None)
    return load_pps if achieved is None else min(load_pps, float(achieved))


def bound_at(upper_pps: float | None, verdicts: Iterable[str]) -> str | None:
    """What bounded an answer whose upper end is `upper_pps`, from the verdicts of the trials there
    (module doc): NOT_BOUNDED without an upper end; CAPTURE_LOSS when one was lossy; GENERATOR
    when one was a lower bound; None when no trial there says (a record without them)."""
    if upper_pps is None:
        return NOT_BOUNDED
    found = set(verdicts)
    if LOSSY in found:
        return CAPTURE_LOSS
    if LOWER_BOUND in found:
        return GENERATOR
    return None


# --- the words -----------------------------------------------------------------------

# The words that end the note on a lossy trial whose generator fell short (short_lossy_text).
CAPTURE_AT_SENT_RATE = "capture loss at the rate the generator sent"
# The words that end the note on an answer the generator bounded (generator_note).
SET_BY_GENERATOR = "a lower bound of the capture's, set by the generator"
# The words that end the note on a search the generator stopped before any load passed.
# The mark of an answer the generator bounded (it could not hold the next rate): a lower bound of
# the capture's limit, never the limit, wherever it is named.
GENERATOR_BOUND = "generator-bound (a lower bound)"
STOPPED_BY_GENERATOR = "the generator, not the capture, stopped the search"


def _asked_frames(trial: Any) -> int | None:
    offered = getattr(trial, "offered_pps", None)
    duration = getattr(trial, "requested_duration_s", None)
    return round(offered * duration) if offered and duration else None


def sent_text(trial: Any, load_pps: float) -> str:
    """What a generator short of `load_pps` sent, in numbers that differ from the load: "it sent
    M pps", or where that rounds to the load, "it sent S of the F frames asked"."""
    achieved = getattr(trial, "achieved_pps", None)
    if trial.sent <= 0:
        return "it sent nothing"
    if achieved is not None and round(achieved) < round(load_pps):
        return f"it sent {achieved:,.0f} pps"
    asked = _asked_frames(trial)
    if asked is not None and trial.sent < asked:
        return f"it sent {trial.sent:,} of the {asked:,} frames asked"
    if getattr(trial, "schedule_slipped", False):  # a record from when a slip made a trial short
        return f"it sent {trial.sent:,} frames but fell behind its schedule"
    return f"it sent {trial.sent:,} frames, short of its target"


def generator_short_text(load_pps: float, trials: Iterable[Any] = ()) -> str:
    """"the generator could not hold N pps (it sent M pps)", M from the short trial of `trials`
    that sent least."""
    short = [t for t in trials if generator_short(t)]
    least = min(short, key=lambda t: sent_pps(t, load_pps), default=None)
    held = f" ({sent_text(least, load_pps)})" if least is not None else ""
    return f"the generator could not hold {load_pps:,.0f} pps{held}"


def generator_note(load_pps: float, trials: Iterable[Any] = (), what: str = "the throughput") -> str:
    """The note of an answer the generator bounded: it could not hold `load_pps` (`trials`: those
    at that load, for what it sent), so `what` is a lower bound of the capture's."""
    return f"{generator_short_text(load_pps, trials)}: {what} is {SET_BY_GENERATOR}"


def loss_text(trial: Any, load_pps: float) -> str:
    """A trial's loss in words: "lost L of S frames (x %)", and where the generator fell short of
    `load_pps`, at what rate it sent them (the loss is capture loss at that rate)."""
    from capbench.trial.accounting import format_pct  # here: the rule itself needs no formatting

    ratio_pct = format_pct(100.0 * loss_ratio(trial), exact_zero=trial.lost <= 0)
    text = f"lost {max(0, trial.lost):,} of {trial.sent:,} frames ({ratio_pct} %)"
    if generator_short(trial):
        text += f" sent at {sent_pps(trial, load_pps):,.0f} pps (the generator could not hold {load_pps:,.0f} pps)"
    return text


def short_lossy_text(load_pps: float, trial: Any) -> str:
    """The note on a lossy trial at `load_pps` whose generator fell short: its loss is capture loss."""
    return f"at {load_pps:,.0f} pps the capture {loss_text(trial, load_pps)}: {CAPTURE_AT_SENT_RATE}"


# --- what to do when nothing was measured ------------------------------------------------


def _pct_below(share: float) -> int:
    """A round --rate percentage below `share` of the target: 5 % steps, at least 1 %."""
    step = 5 if share > 0.1 else 1
    return max(1, math.floor((share * 100 - 1e-9) / step) * step)


def _share_sent(trial: Any) -> float:
    """The share of its target a short trial's generator sent: of the rate, or of the frames asked."""
    share = sent_pps(trial, trial.offered_pps) / trial.offered_pps
    asked = _asked_frames(trial)
    return min(share, trial.sent / asked) if asked else share


def way_forward(trials: Iterable[Any]) -> list[str]:
    """What to do about trials that were lower bounds (the generator fell short, nothing lost):
    one line per action, none when every trial gave a verdict. Each line names the option and
    why; numbers come from the trials (what the generator sent, the modes and CPUs used), and
    a cause is named only where the records show it (other test beds in use)."""
    from capbench.methods import registry  # noqa: PLC0415 - the registry's methods import this module

    short = [t for t in trials if verdict(t) == LOWER_BOUND]
    if not short:
        return []
    out = []
    methods = [registry.REGISTRY.get(getattr(t, "method", "iperf")) for t in short]  # None: unknown
    paced = [t for t, m in zip(short, methods) if getattr(t, "offered_pps", None) and m is not None
             and not m.sets_own_load]
    if paced:
        worst = min(paced, key=_share_sent)
        share = _share_sent(worst)
        out.append(f"a lower --rate: at {worst.size_label} B the generator sent {share * 100:.1f} % of its target "
                   f"({sent_text(worst, worst.offered_pps)}, asked for {worst.offered_pps:,.0f} pps); --rate "
                   f"{_pct_below(share)}% stays below that")
    # A method that does not search (a constant load, or a sweep of set rates) has no answer the
    # generator bounded: the search finds the highest rate both hold.
    if any(m is not None and (m.answer_type is None or m.swept) for m in methods):
        out.append("--method rfc2544: it searches the highest rate the generator holds and the capture takes "
                   "without loss, and says which of the two bounded it")
    modes = sorted({m for t in short if (m := getattr(t, "rx_mode", None))})
    if modes == [NIC_RX_MODE]:
        pass  # real interfaces: their driver places the receive work, no test bed mode to choose
    elif modes == ["rps"]:
        out.append("--rx-mode napi: the capture veth's receive work then runs in a kernel thread on the receive "
                   "CPU, as a NIC's does, not on the generator's CPU (this run used rps)")
    elif modes:
        out.append(f"--rx-mode rps or napi: compare the two test bed modes (this run used {', '.join(modes)})")
    else:
        out.append("--rx-mode napi (the capture veth's receive work in a kernel thread on the receive CPU) "
                   "or rps: the test bed mode decides which CPU pays for the receive work")
    cpus = sorted({c for t in short if (c := getattr(t, "gen_cpu", None)) is not None})
    where = f" (the generator ran on CPU {', '.join(map(str, cpus))})" if cpus else ""
    others = sorted({o for t in short for o in getattr(t, "other_testbeds", ()) or ()})
    seen = (f"; other capbench test beds were in use during these trials: {', '.join(others)}" if others else "")
    out.append(f"a quieter machine: nothing else running on the generator's CPU{where}{seen}")
    return out
