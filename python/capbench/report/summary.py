"""The report's summary in sentences: the best backend per frame length, where each starts to lose.

Only iperf-like trials that reached their offered load count; frame lengths where the
generator fell short are named as not measured, never as loss.
"""

from __future__ import annotations

from capbench.report.keys import series_labels
from capbench.report.load import Trial
from capbench.report.stats import (FirstLoss, Group, best_per_size, first_loss, fmt_loss, group_trials, sent_pps,
                                   sweep_lines)


def _figures(g: Group) -> str:
    rx, gbps = g.stat("rx_pps"), g.stat("rx_gbps")
    app, kernel = g.stat("app_cpu_pct"), g.stat("kernel_cpu_pct")
    reps = f", median of {rx.n}" if rx.n > 1 else ""
    return (f"{rx.median:,.0f} pps ({gbps.median:.3f} Gbps), loss {fmt_loss(g.stat('loss_pct'))} %, "
            f"app / kernel load {app.median:.1f} / {kernel.median:.1f} %{reps}")


def _sizes(sizes) -> str:
    return ", ".join(str(s) for s in sorted(sizes)) + " B"


def _same_capture(a: Group, b: Group) -> bool:
    """As many packets captured (within 0.01 %) with the same loss: only the CPU tells them apart."""
    ra, rb = a.stat("rx_pps").median, b.stat("rx_pps").median
    return abs(ra - rb) <= 1e-4 * max(ra, rb) and a.stat("loss_pct").median == b.stat("loss_pct").median


def best_lines(groups: list[Group]) -> list[str]:
    labels = series_labels(g.series for g in groups)
    lines = []
    for size, best in best_per_size(groups):
        at_size = [g for g in groups if g.frame_len == size]
        short = sorted({labels[g.series] for g in at_size if g.short})
        short_text = f" (generator short of the offered load for {', '.join(short)}: not measured)" if short else ""
        if best is None:
            lines.append(f"{size} B: no result — the generator fell short of the offered load for every backend.")
        else:
            others = [g for g in at_size if not g.short and g is not best]
            alone = " (the only backend measured)" if not others and len(labels) > 1 and not short else ""
            tied = sorted(labels[g.series] for g in others if _same_capture(g, best))
            tie_text = f" ({', '.join(tied)} captured as much, with more CPU)" if tied else ""
            lines.append(f"{size} B: {labels[best.series]}{alone} — {_figures(best)}{tie_text}{short_text}.")
    return lines


def _loss_line(fl: FirstLoss, label: str) -> str:
    short = f"; not measured at {_sizes(fl.short)} (generator short of the offered load)" if fl.short else ""
    if fl.group is None:
        if not fl.lossless:
            return f"{label}: no result — the generator fell short of the offered load at every frame length."
        return f"{label}: no loss at {_sizes(fl.lossless)}{short}."
    g = fl.group
    return (f"{label}: loses packets from {g.frame_len} B down (loss {fmt_loss(g.stat('loss_pct'))} % at "
            f"{g.frame_len} B, captured {g.stat('rx_gbps').median:.3f} Gbps){short}.")


def first_loss_lines(groups: list[Group]) -> list[str]:
    labels = series_labels(g.series for g in groups)
    return [_loss_line(fl, labels[fl.series]) for fl in first_loss(groups)]


def sweep_loss_lines(trials: list[Trial]) -> list[str]:
    """Per swept series and frame length: the lowest rate sent at which packets were lost."""
    lines = sweep_lines(trials)
    labels = series_labels(key for key, _size in lines)
    out = []
    for (key, size), groups in lines.items():
        valid = [g for g in groups if not g.short]
        lossy = [g for g in valid if g.any_loss]
        name = f"{labels[key]} {size} B (sweep)"
        if not valid:
            out.append(f"{name}: no result — the generator fell short of every offered rate.")
        elif not lossy:
            out.append(f"{name}: no loss up to {sent_pps(valid[-1]):,.0f} pps.")
        else:
            g = lossy[0]
            out.append(f"{name}: loses packets from {sent_pps(g):,.0f} pps (loss {fmt_loss(g.stat('loss_pct'))} %).")
    return out


def summary(trials: list[Trial]) -> tuple[list[str], list[str]]:
    """(best backend per frame length, first loss point per backend): the frame length where an
    iperf-like series starts to lose, and the rate where a sweep does."""
    groups = list(group_trials(t for t in trials if t.method == "iperf").values())
    best = best_lines(groups) if groups else []
    losses = first_loss_lines(groups) if groups else []
    return best, losses + sweep_loss_lines(trials)
