"""RFC 2544 latency (section 26.2): the throughput first (a 26.1 search, capbench.methods.rfc2544),
then one trial at that rate whose one-way latency (receive time - TX stamp, from the counter's
summary) is the answer. No rate passed the search: no latency, and the answer says so."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from capbench.methods.measurer import TrialRunner
from capbench.methods.method import (TRIAL_OVERHEAD_S, Context, Estimate, Figures, Method, MethodAnswer,
                                     MethodSettings, tagger)
from capbench.methods.rfc2544 import MIN_TRIAL_S, RFC2544_TRIAL_S, Rfc2544
from capbench.methods.verdict import GENERATOR, GENERATOR_BOUND
from capbench.trial.measure import TrialResult

NO_THROUGHPUT = "no rate passed the throughput search: no latency to measure"


@dataclass(frozen=True)
class LatencyAnswer(MethodAnswer):
    METHOD = "latency"

    bounded_by: str | None  # what bounded the throughput search
    throughput_pps: float
    latency: dict[str, int]  # p50_ns, p99_ns, p99.9_ns, max_ns (the counter's percentiles)
    iat: dict[str, int]
    rx_clock: str
    lost: int | None  # in the latency trial
    note: str | None = None  # why there is no latency

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        return out if self.note is not None else {k: v for k, v in out.items() if k != "note"}

    def text(self) -> str:
        if self.note:
            return self.note
        lat = self.latency
        out = (f"at {self.throughput_pps:,.0f} pps: p50 {lat.get('p50_ns', 0) / 1e3:,.1f} us, "
               f"p99 {lat.get('p99_ns', 0) / 1e3:,.1f} us, max {lat.get('max_ns', 0) / 1e3:,.1f} us "
               f"({self.rx_clock or '?'} clock)")
        return out + (f" (throughput {GENERATOR_BOUND})" if self.bounded_by == GENERATOR else "")

    def figures(self, tried: Sequence[TrialResult], wire: float) -> Figures:
        return Figures({})  # the report draws latency from the trials (report.latency)


class Latency(Method):
    name = "latency"
    takes_max_load = True
    help = "RFC 2544 latency (26.2): the throughput search, then a trial at the throughput for its latency"
    answer_type = LatencyAnswer
    trial_s = RFC2544_TRIAL_S
    trial_help = "as rfc2544"
    min_trial_s = MIN_TRIAL_S
    report_answer = False  # the report shows its trials' latency, not an answer table

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, **_: Any) -> LatencyAnswer:
        assert isinstance(size, int)
        s = context.settings
        found = Rfc2544().search(measurer, size, context, tagger(context.record, self.name))
        common = dict(backend=backend, frame_len=size, link_bps=found.link_bps, wire_pps=found.wire_pps,
                      bounded_by=found.bounded_by, throughput_pps=found.throughput_pps)
        if found.throughput_pps <= 0:
            return LatencyAnswer(**common, trials=len(found.trials), total_trial_s=found.total_trial_s,
                                 total_pause_s=found.total_pause_s, latency={}, iat={}, rx_clock="", lost=None,
                                 note=NO_THROUGHPUT)
        runner = TrialRunner(measurer.measure, pause_s=s.pause_s, pause=context.pause,
                             on_trial=tagger(context.record, self.name))
        r = runner.run(found.throughput_pps, s.trial_length(self), "latency at throughput").result
        return LatencyAnswer(**common, trials=len(found.trials) + 1, total_trial_s=found.total_trial_s + r.duration_s,
                             total_pause_s=found.total_pause_s + runner.total_pause_s,
                             latency=getattr(r, "latency", {}), iat=getattr(r, "iat", {}),
                             rx_clock=getattr(r, "rx_clock", ""), lost=r.lost)

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        search = Rfc2544().estimate(settings, duration_s, overhead_s)
        return Estimate(search.trials + 1, search.seconds + settings.trial_length(self) + overhead_s)
