"""Trial records for tests that do not run trials."""

from capbench.rates import wire_pps
from capbench.trial.accounting import layer_drops
from capbench.trial.measure import TrialResult
from capbench.trial.record import LayerCount, named_layers


def make_result(backend="pcap", frame_len=64, sent=7_440_476, received=None, delivered=None,
                backlog_drops=0, socket_drops=0, xsk_drops=0, **kw) -> TrialResult:
    """A record; the program's rows are `layers` when given, else those its drops stand for as a
    record before issue 29 named them (socket_drops, xsk_drops: record.named_layers)."""
    received = sent if received is None else received
    delivered = sent if delivered is None else delivered
    lost = sent - received
    link_drops = sent - delivered
    rx_pps = received / 5.0
    if "layers" not in kw:
        kw["layers"] = tuple(LayerCount(**row) for row in named_layers(
            {"socket_drops": socket_drops, "xsk_drops": xsk_drops, "raw": kw.get("raw", {}), "backend": backend,
             "app_command": kw.get("app_command", "")}))
    fields = dict(
        started_at="2025-11-23T07:30:05.000Z", backend=backend, frame_len=frame_len, link_bps=1e9, rate="100%",
        offered_pps=wire_pps(1e9, frame_len), gen_engine="xdp", app_load=None, requested_duration_s=5.0,
        duration_s=5.0, sent=sent, achieved_pps=sent / 5.0, delivered=delivered, link_drops=link_drops,
        backlog_drops=backlog_drops, received=received, lost=lost, loss_pct=100.0 * lost / sent,
        unexplained=lost - link_drops - backlog_drops - layer_drops(kw["layers"]) - kw.get("app_drops", 0),
        duplicates=0, reordered=0, foreign=0, seq_lost=0, rx_pps=rx_pps,
        rx_gbps=rx_pps * (frame_len + 20) * 8 / 1e9, app_cpu_pct=63.6, kernel_cpu_pct=12.25, window_s=5.1,
        gen_cpu=0, cap_cpu=1, kernel_rx_cpu=1, raw={"gen": {"sent": sent}},
    )
    fields.update(kw)
    return TrialResult(**fields)
