"""The seed's tables as Markdown and CSV, from trial records only.

One table per series (backend, placement, ...), one row per trial as in the terminal
tables (capbench.tables), with a Note column that says in words what the terminal's
`*` and colours say: the generator fell short of the offered load (not a capture
result at that load), or the counters disagree.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from capbench.accounting import format_pct
from capbench.rates import wire_bps
from capbench.report.keys import SeriesKey, pin_of, series_key, series_labels
from capbench.report.load import Trial
from capbench.report.stats import rfc2544_throughput
from capbench.tables import loss_places, offered_cell
from capbench.trial import OFFERED_MIN_SHARE, TrialResult

HEADERS = ("Frame [B]", "Offered [pps]", "Captured [pps / Gbps]", "Loss [%]", "App / kernel load [%]",
           "Lost at link / backlog / socket / unexplained", "Note")

CSV_FIELDS = ("method", "backend", "placement", "engine", "app_load", "link_bps", "rate", "frame_len",
              "offered_pps", "achieved_pps", "sent", "received", "rx_pps", "rx_gbps", "loss_pct", "lost",
              "link_drops", "backlog_drops", "socket_drops", "unexplained", "app_cpu_pct", "kernel_cpu_pct",
              "invalid_offered_load", "note")


def note_of(r: TrialResult) -> str:
    notes = []
    if r.invalid_offered_load:
        target = f"{r.offered_pps:,.0f} pps" if r.offered_pps is not None else "the offered load"
        notes.append(f"generator sent less than {OFFERED_MIN_SHARE:.1%} of {target}: "
                     f"not a capture result at that load")
    if r.unexplained:
        notes.append(f"counters disagree by {r.unexplained:,} packets")
    return "; ".join(notes)


def row_cells(r: TrialResult) -> list[str]:
    return [
        str(r.frame_len),
        offered_cell(r),
        f"{r.rx_pps:,.0f} / {r.rx_gbps:.3f}",
        format_pct(r.loss_pct, exact_zero=(r.lost == 0)) + ("*" if r.invalid_offered_load else ""),
        f"{r.app_cpu_pct:.1f} / {r.kernel_cpu_pct:.1f}",
        loss_places(r),
        note_of(r),
    ]


def by_series(trials: Iterable[Trial]) -> dict[SeriesKey, list[Trial]]:
    out: dict[SeriesKey, list[Trial]] = {}
    for t in trials:
        out.setdefault(series_key(t), []).append(t)
    return out


def series_title(key: SeriesKey, label: str) -> str:
    extra = "".join(f", {k} {v}" for k, v in key.extra)
    return (f"{key.method}: {label} ({key.link} link, {key.placement}, engine {key.engine}, "
            f"app load {key.app_load}{extra})")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def md_table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    headers = list(headers)
    lines = ["| " + " | ".join(map(_md_escape, headers)) + " |",
             "|" + "|".join("---:" if i < len(headers) - 1 else "---" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def row_class(r: TrialResult) -> str:
    """How a row reads at a glance: short (not a capture result), unexplained, lossy, or plain."""
    if r.invalid_offered_load:
        return "short"
    if r.unexplained:
        return "unexplained"
    return "lossy" if r.lost else ""


def seed_tables(trials: list[Trial]) -> list[tuple[str, list[str], list[list[str]], list[TrialResult]]]:
    """(title, headers, rows, the rows' trials) per series."""
    groups = by_series(trials)
    labels = series_labels(groups)
    return [(series_title(k, labels[k]), list(HEADERS), [row_cells(t.result) for t in ts], [t.result for t in ts])
            for k, ts in groups.items()]


LOSS_TOTAL_HEADERS = ("Backend", "Trials", "Sent", "Lost", "Loss [%]", "Not counted (generator short)")


def loss_totals(trials: list[Trial]) -> list[list[str]]:
    """Seed 004's loss table: all packets sent and lost per series, over the trials that reached
    their offered load (the others are counted apart, not as capture loss)."""
    groups = by_series(trials)
    labels = series_labels(groups)
    rows = []
    for k, ts in groups.items():
        valid = [t.result for t in ts if not t.result.invalid_offered_load]
        sent, lost = sum(r.sent for r in valid), sum(r.lost for r in valid)
        pct = format_pct(100.0 * lost / sent, exact_zero=(lost == 0)) if sent else "—"
        rows.append([labels[k], str(len(valid)), f"{sent:,}", f"{lost:,}", pct, str(len(ts) - len(valid))])
    return rows


PIN_ORDER = {"A:A": 0, "A:B": 1, "auto": 2}


def rfc2544_tables(trials: list[Trial]) -> list[tuple[str, list[str], list[list[str]]]]:
    """Seed 000's Tables 4-6: RFC 2544 throughput per frame length, one column per placement
    (#1 A:A, #2 A:B, ...), "pps / Gbps"; "—" where the search found no lossless rate."""
    found = [t for t in trials if t.method == "rfc2544"]
    tables: dict[tuple, dict[str, list[Trial]]] = {}
    for t in found:
        k = series_key(t)
        tables.setdefault((k.backend, k.link, k.engine, k.app_load, k.extra), {}).setdefault(pin_of(t), []).append(t)
    out = []
    for (backend, link, engine, app_load, extra), by_pin in tables.items():
        pins = sorted(by_pin, key=lambda p: (PIN_ORDER.get(p, 9), p))
        best = {p: rfc2544_throughput(by_pin[p]) for p in pins}
        sizes = sorted({t.result.frame_len for ts in by_pin.values() for t in ts}, reverse=True)
        rows = [[str(size)] + [f"{best[p][size]:,.0f} / {wire_bps(best[p][size], size) / 1e9:.3f}"
                               if size in best[p] else "—" for p in pins] for size in sizes]
        extra_text = "".join(f", {a} {b}" for a, b in extra)
        out.append((f"RFC 2544 throughput: {backend} ({link} link, engine {engine}, app load {app_load}{extra_text})",
                    ["Frame [B]"] + [f"#{i + 1} {p} [pps / Gbps]" for i, p in enumerate(pins)], rows))
    return out


def markdown(trials: list[Trial]) -> str:
    parts = []
    for title, headers, rows, _results in seed_tables(trials):
        parts.append(f"### {title}\n\n{md_table(headers, rows)}\n")
    for title, headers, rows in rfc2544_tables(trials):
        parts.append(f"### {title}\n\n{md_table(headers, rows)}\n")
    parts.append(f"### Total loss per backend\n\n{md_table(LOSS_TOTAL_HEADERS, loss_totals(trials))}\n")
    if any(t.result.invalid_offered_load for t in trials):
        parts.append(f"Offered and loss marked `*`: the generator sent less than {OFFERED_MIN_SHARE:.1%} of the "
                     f"offered load; such rows measure this machine's generator, not the capture method at that "
                     f"load, and their loss is not capture loss.\n")
    return "\n".join(parts)


def csv_text(trials: list[Trial]) -> str:
    """One row per trial, numbers at full precision (a small loss stays nonzero)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for t in trials:
        r, k = t.result, series_key(t)
        w.writerow({
            **{f: getattr(r, f) for f in CSV_FIELDS if hasattr(r, f)},
            "method": t.method, "placement": k.placement, "engine": r.gen_engine, "app_load": k.app_load,
            "note": note_of(r),
        })
    return buf.getvalue()
