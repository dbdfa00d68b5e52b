"""Whether the host, not the code under test, spoiled a trial, from the trial's own counters.

The VMs these tests run on stop a vCPU for 0.2-50 ms at a time, and other work shares the
CPUs. Some expectations of a test hold only if the host did not stop while the trial ran:
a loss-free trial at 100 kpps (the capture veth's 256-frame ring lasts 2.6 ms there), a
generator at 100 % of the wire rate (a stall's time stays lost). Such a test repeats a trial
when its own counters show the host interfered, at most `REPEATS` times, and reports every
repetition as a warning with the counters that decided it. Every other assertion of the test
holds for every trial, repeated or not. When every attempt was spoiled, the test is skipped
with the measured reason: it never passes on a host that could not run it.

What counts as the host's doing, each from the counter of the layer it belongs to:
- the generator fell short of the offered load (`invalid_offered_load`: it sent less than
  OFFERED_MIN_SHARE of it, its largest lag in `gen_max_lag_ns`): the sending CPU stopped;
- every lost frame is in a layer that only a stopped receive CPU fills at these rates: the
  capture veth's receive ring (the sender's tx_queue_N_xdp_xmit_errors, part of `link_drops`)
  or the receive CPU's backlog (the capture veth's own rx_dropped), and none is in the
  socket, the AF_XDP ring, the application or unexplained — unless the trial's counter polls
  on the receive CPU: then it starves the ring's thread itself, and that loss is the trial's.
- capbench's interference witness marked the trial `disturbed` (trial/witness.py): a stop of a
  CPU of the trial, or another task's time there, explains at least half its loss, wherever the
  loss fell (with a receive ring of 4096 frames, a held counter overflows its socket first).
A loss anywhere else (a socket that overflowed, a frame nobody can account for) with no such
witness is the code's, and fails the test at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pytest
from layer_rows import own_drops

# How many times a trial the host spoiled is run again (so at most 1 + REPEATS attempts).
REPEATS = 4

T = TypeVar("T")

# The layers of the account that the code under test fills, besides the program's own rows
# (`layers`); loss in any of them is never the host's.
CODE_LAYERS = ("app_drops", "unexplained")


def _get(r: Any, name: str) -> Any:
    """A field of a TrialResult or of a trials.jsonl line."""
    return r[name] if isinstance(r, Mapping) else getattr(r, name)


def interference(r: Any) -> str | None:
    """Why the host, by this trial's own counters, spoiled it; None if nothing shows it did."""
    why = []
    if _get(r, "disturbed"):  # capbench's own witness (trial/witness.py) names the CPU and the figure
        why.append(_get(r, "disturbed_reason"))
    if _get(r, "invalid_offered_load"):
        why.append(f"the generator sent {_get(r, 'achieved_pps'):,.0f} pps of {_get(r, 'offered_pps') or 0:,.0f} "
                   f"(largest lag {_get(r, 'gen_max_lag_ns') / 1e6:.1f} ms)")
    lost = _get(r, "lost")
    host_layers = _get(r, "link_drops") + _get(r, "backlog_drops")
    starves_its_ring = _get(r, "polls") and _get(r, "cap_cpu") == _get(r, "kernel_rx_cpu")
    code_layers = own_drops(_get(r, "layers")) + sum(_get(r, k) for k in CODE_LAYERS)
    if lost > 0 and lost == host_layers and not code_layers and not starves_its_ring:
        ring = _get(r, "ring_drops")
        why.append(f"{lost:,} frames lost in the receive ring ({ring if ring is not None else '?'}) and backlog "
                   f"({_get(r, 'backlog_drops'):,}) only, the generator's largest lag "
                   f"{_get(r, 'gen_max_lag_ns') / 1e6:.1f} ms")
    return "; ".join(why) or None


def spoiled(trials: list[Any]) -> str | None:
    """For a run of several trials (a search, several sensors): the first trial the host spoiled."""
    lossy_or_short = [t for t in trials if _get(t, "lost") or _get(t, "invalid_offered_load")]
    reasons = [interference(t) for t in lossy_or_short]
    if lossy_or_short and all(reasons):
        return reasons[0]
    return None


def until_undisturbed(attempt: Callable[[int], T], what: str, judge: Callable[[T], str | None]) -> T:
    """`attempt(i)` until `judge` of its result finds no host interference, at most 1 + REPEATS
    times; each repetition is a warning with its reason. Skips the test when every attempt was
    spoiled (the host could not run it), with the reasons measured."""
    reasons = []
    for i in range(1 + REPEATS):
        result = attempt(i)
        why = judge(result)
        if why is None:
            return result
        reasons.append(why)
        warnings.warn(f"{what}: attempt {i + 1} of {1 + REPEATS} spoiled by the host: {why}", stacklevel=2)
    pytest.skip(f"{what}: the host interfered with all {1 + REPEATS} attempts: " + " | ".join(reasons))
