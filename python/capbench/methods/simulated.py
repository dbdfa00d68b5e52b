"""A simulated capture path: trial results from a model instead of traffic.

For the search methods' unit tests and for a dry run of a campaign. The model
is a receiver that drains `capacity_pps` frames per second into the
application, behind a queue of `buffer_frames` frames:

- a trial of `duration_s` at `load_pps` sends `round(load_pps x duration_s)`
  frames; the application receives at most `capacity x duration_s + buffer`
  of them (a short trial hides an overload in the queue, a long one does not);
- `noise_pct`: each trial's capacity is drawn around `capacity_pps` with that
  relative standard deviation (a seeded `random.Random`, so runs repeat);
- `background_loss_ratio`: a share of the received frames lost at any load
  (at least one frame when above 0): a path that loses at every rate;
- saturation (seed 000: after a trial that overloads the receiver, "following
  behaviour of DUT is unpredictable and the test results are distorted"): a
  trial that starts less than `saturation_recovery_s` after the end of an
  overloading trial runs at `capacity x saturation_factor`. Time passes
  during trials and pauses (`pause`, the hook the searches call), so a long
  enough pause lets the device recover. A factor below 1 makes the next
  trial lose more, above 1 makes it look better than the device is (say, a
  CPU clock that ramped up under the overload): the case a search's
  verification trial must catch.

- `generator_pps`: the fastest the generator sends (None: any load up to the
  wire rate). A trial at a higher load sends `generator_pps x duration_s`
  frames over the whole trial and is marked `invalid_offered_load` (below
  capbench.trial.measure.OFFERED_MIN_SHARE of the load), as a real generator that
  falls short is; the receiver then meets what was sent, so one trial can be
  short of its target *and* lose frames (a capacity below `generator_pps`).

- `disturbed_trials`: the trials (0-based, in the order the device ran them) during which the
  host stopped the receive CPU for `stop_ms` (issue 28): the receiver drains nothing for that
  long, so the trial loses what arrived then beyond its queue (at least one frame), and the
  record says what a witness would: `disturbed`, its reason and `host_interference` for the
  receive CPU. The searches' rule of repeating a disturbed trial is tested with these.

Every result is a `capbench.trial.measure.TrialResult` with consistent integer counts
(`sent = received + backlog_drops + the socket layer's drops`, nothing lost on the link,
nothing unexplained); overload drops are split between the backlog queue and
the socket by `backlog_drop_share`, background losses are socket drops. The
application's CPU (`app_cpu_pct`) is `app_cpu_ns` per received frame, at most one
CPU (a counter that costs more per frame than the frames leave it time for is
busy all the time); the kernel's is 0. `raw["simulated"]` holds the
trial's effective capacity and whether saturation distorted it.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import random
from dataclasses import dataclass, field

from capbench.trial import accounting
from capbench.rates import Rate, wire_bps, wire_pps
from capbench.trial.measure import OFFERED_MIN_SHARE, TrialResult
from capbench.trial.record import PACKET_SOCKET_COUNTER, LayerCount

# Simulated trials are stamped from this instant on, advancing with the model's clock.
_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _timestamp(clock_s: float) -> str:
    at = _EPOCH + datetime.timedelta(seconds=clock_s)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


@dataclass
class SimulatedDevice:
    """A capture path with a known capacity; `measure` and `measure_burst` return TrialResults."""

    capacity_pps: float
    frame_len: int = 64
    link_bps: float = 1e9
    buffer_frames: int = 0
    noise_pct: float = 0.0
    background_loss_ratio: float = 0.0
    saturation_factor: float = 1.0
    saturation_recovery_s: float = 0.0
    backlog_drop_share: float = 0.0
    seed: int = 0
    backend: str = "simulated"
    generator_pps: float | None = None
    disturbed_trials: frozenset[int] = frozenset()
    stop_ms: float = 20.0
    app_cpu_ns: float = 0.0  # the application's CPU time per received frame
    # The model's state: its clock, when the last overload's distortion wears off, what it was asked for.
    clock_s: float = field(default=0.0, init=False)
    saturated_until_s: float = field(default=-math.inf, init=False)
    total_trial_s: float = field(default=0.0, init=False)
    total_pause_s: float = field(default=0.0, init=False)
    trials: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.capacity_pps >= 0:
            raise ValueError(f"capacity {self.capacity_pps!r} pps must be 0 or more")
        if not 0 <= self.background_loss_ratio < 1:
            raise ValueError(f"background loss ratio {self.background_loss_ratio!r} must be in [0, 1)")
        if self.generator_pps is not None and not self.generator_pps > 0:
            raise ValueError(f"generator rate {self.generator_pps!r} pps must be above 0")
        if self.noise_pct < 0 or self.buffer_frames < 0 or self.saturation_factor < 0 or self.app_cpu_ns < 0:
            raise ValueError("noise, buffer, saturation factor and CPU per frame must be 0 or more")
        self._rng = random.Random(self.seed)

    @property
    def wire_pps(self) -> float:
        return wire_pps(self.link_bps, self.frame_len)

    def pause(self, seconds: float) -> None:
        """Idle time between trials (the searches' pause hook): the model's clock advances, nothing sleeps."""
        self.clock_s += seconds
        self.total_pause_s += seconds

    def measure(self, duration_s: float, load: float | Rate) -> TrialResult:
        """One trial of `duration_s` at a constant `load` (pps or a Rate), at most the wire rate."""
        load_pps = load.pps(self.frame_len, self.link_bps) if isinstance(load, Rate) else float(load)
        if load_pps is None or not load_pps > 0 or not duration_s > 0:
            raise ValueError(f"a simulated trial needs a positive load and duration, got {load_pps!r} pps, "
                             f"{duration_s!r} s")
        if load_pps > self.wire_pps * (1 + 1e-9):
            raise ValueError(f"load {load_pps:,.0f} pps is above the wire rate of {self.wire_pps:,.0f} pps")
        sent = round(min(load_pps, self.generator_pps or load_pps) * duration_s)
        return self._trial(load_pps, duration_s, sent)

    def measure_burst(self, frames: int) -> TrialResult:
        """One burst of `frames` sent back to back at wire rate (RFC 2544 back-to-back); a generator
        slower than the wire rate sends what it can in the burst's time."""
        if frames <= 0:
            raise ValueError(f"a burst needs at least one frame, got {frames!r}")
        duration_s = frames / self.wire_pps
        sent = frames if self.generator_pps is None else min(frames, round(self.generator_pps * duration_s))
        return self._trial(self.wire_pps, duration_s, sent)

    def _trial(self, load_pps: float, duration_s: float, sent: int) -> TrialResult:
        started_s = self.clock_s
        capacity = self.capacity_pps
        if self.noise_pct > 0:
            capacity *= max(0.0, 1.0 + self.noise_pct / 100.0 * self._rng.gauss(0.0, 1.0))
        distorted = started_s < self.saturated_until_s
        if distorted:
            capacity *= self.saturation_factor
        drained = math.floor(capacity * duration_s) + self.buffer_frames
        through = min(sent, drained)
        overload_drops = sent - through
        stopped = self.trials in self.disturbed_trials
        if stopped:  # what arrived while the receiver was stopped, beyond its queue, is lost
            arrived = math.ceil(sent / duration_s * self.stop_ms / 1000.0)
            stop_drops = min(through, max(1, arrived - self.buffer_frames))
            through -= stop_drops
            overload_drops += stop_drops
        background = 0
        if self.background_loss_ratio > 0 and through > 0:
            background = min(through, math.ceil(through * self.background_loss_ratio))
        received = through - background
        backlog_drops = round(overload_drops * self.backlog_drop_share)
        socket_drops = overload_drops - backlog_drops + background

        self.clock_s += duration_s
        self.total_trial_s += duration_s
        self.trials += 1
        if overload_drops > 0 and self.saturation_recovery_s > 0:
            self.saturated_until_s = self.clock_s + self.saturation_recovery_s

        acc = accounting.account(sent=sent, delivered=sent, backlog_drops=backlog_drops,
                                 layers=(LayerCount("socket", PACKET_SOCKET_COUNTER, socket_drops),), received=received)
        rx_pps = received / duration_s
        return TrialResult(
            started_at=_timestamp(started_s),
            backend=self.backend,
            frame_len=self.frame_len,
            link_bps=self.link_bps,
            rate=Rate.from_pps(load_pps).text,
            offered_pps=load_pps,
            gen_engine="simulated",
            app_load=None,
            requested_duration_s=duration_s,
            duration_s=duration_s,
            achieved_pps=sent / duration_s,
            invalid_offered_load=sent < OFFERED_MIN_SHARE * round(load_pps * duration_s),  # of the frames asked
            **{f.name: getattr(acc, f.name) for f in dataclasses.fields(acc)},  # every stage's drops, as accounted
            duplicates=0,
            reordered=0,
            foreign=0,
            seq_lost=acc.lost,
            rx_pps=rx_pps,
            rx_gbps=wire_bps(rx_pps, self.frame_len) / 1e9,
            app_cpu_pct=min(100.0, rx_pps * self.app_cpu_ns / 1e7),  # ns per frame x frames per s, % of 1 s
            kernel_cpu_pct=0.0,
            window_s=duration_s,
            gen_cpu=None,
            cap_cpu=None,
            kernel_rx_cpu=None,
            raw={"simulated": {"capacity_pps": capacity, "saturated": distorted, "clock_s": started_s}},
            **(self._stop() if stopped else {}),
        )

    def _stop(self) -> dict[str, object]:
        """What a witness records of a trial during which the receive CPU was stopped for stop_ms."""
        stop_us = round(self.stop_ms * 1000)
        return {"disturbed": True,
                "disturbed_reason": f"receive CPU stopped for {self.stop_ms:g} ms (simulated)",
                "host_interference": {"1": {"roles": ["receive"], "steal_ms": 0, "others_ms": self.stop_ms,
                                            "others_top": [["simulated", self.stop_ms]],
                                            "longest_stop_us": stop_us, "stops": 1}}}
