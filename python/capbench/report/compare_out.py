"""A Comparison as a terminal table, Markdown, a figure and an HTML page."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from capbench import inputs
from capbench.trial.accounting import format_pct
from capbench.report import html, plots
from capbench.report.answers import metric
from capbench.report.compare import NS_PER_PACKET, TOTAL_LABEL, WATCHED, Change, Comparison
from capbench.report.keys import SettingsKey, key_labels
from capbench.report.stats import CPU_LEAST_CHANGE_PTS, SIGNIFICANCE, Stat, fmt_loss
from capbench.report.tables_md import md_table

HEADERS = ("Measurement", "Figure", "A", "B", "Change", "Verdict")
COLORS = {"worse": "#d62728", "better": "#2ca02c", "": "#9e9e9e"}


def _counted(c: Change) -> bool:
    """A figure counted in packets, frames or ns (a rate, a burst, CPU time per packet), not a share."""
    return (c.metric.name == "rx_pps" or (c.answer and c.metric.unit in ("pps", "frames"))
            or c.metric.unit == NS_PER_PACKET)


def fmt_value(c: Change, which: str) -> str:
    """The median, and with repetitions that differ (min–max, sd)."""
    s = c.a if which == "a" else c.b
    if c.metric.is_loss:
        return fmt_loss(s) + " %"
    fmt = ",.0f" if _counted(c) else ".1f"
    text = format(s.median, fmt)
    if s.spread:
        text += f" ({format(s.lo, fmt)}–{format(s.hi, fmt)}, sd {format(s.sd, fmt)})"
    return text


FACTOR_FROM_PCT = 1000.0  # a relative change beyond +1,000 % reads better as a factor


def fmt_relative(c: Change) -> str:
    """The change relative to A: a percentage; a factor (×23) for a growth beyond 1,000 %; "new" from 0."""
    rel = c.rel_pct
    if rel is None or abs(c.a.median) < 1e-12:
        return "new"
    if rel > FACTOR_FROM_PCT:
        factor = c.b.median / c.a.median
        return f"×{factor:,.0f}" if factor >= 100 else f"×{factor:.1f}"
    return f"{rel:+.1f} %" if round(rel, 1) else "0.0 %"  # not "-0.0 %"


def fmt_change(c: Change) -> str:
    d = c.delta
    if d == 0:
        return "0"
    if _counted(c):
        text = f"{d:+,.0f} {c.metric.unit}" if round(d) else f"0 {c.metric.unit}"  # not "-0 pps"
    elif c.metric.is_loss:
        text = ("+" if d > 0 else "-") + format_pct(abs(d), exact_zero=False) + " pts"
    else:
        text = f"{d:+.2f} pts"
    return f"{text} ({fmt_relative(c)})"


NOT_JUDGED = "not judged (no noise estimate)"


def verdict(c: Change) -> str:
    if c.short:
        what = "the generator bounded the answer (a lower bound)" if c.answer else "a lower bound"
        return f"not compared: {what} in {c.short}"
    if c.apart:
        return f"not judged: {c.apart}"
    if c.delta == 0:
        return "no change"
    if c.significant and c.disturbed:
        return f"{'worse' if c.worse else 'better'}, host disturbed in {c.disturbed}: not a regression"
    if c.significant:
        return "worse" if c.worse else "better"
    if not c.judged:
        return NOT_JUDGED
    if c.answer and abs(c.delta) <= c.precision:
        return "within the search's precision"
    if c.too_small:
        least = (f"{c.metric.least_change:g} pts" if abs(c.delta) <= c.metric.least_change
                 else f"{c.metric.least_rel_pct:g} %")
        return f"no change (under {least})"
    if c.by_repetitions:
        return "not significant" + (f" (p {c.p:.2g})" if c.p is not None else "")
    return "below threshold"


def shown(cmp: Comparison) -> list[Change]:
    """The changes worth a row: a figure that is 0 in both runs is left out, and a measurement
    that is a lower bound (generator short, nothing lost) shows its captured rate only (it is not judged)."""
    return [c for c in cmp.changes
            if not (c.a.exact_zero and c.b.exact_zero) and (not c.short or c.answer or c.metric.name == "rx_pps")]


def rows(cmp: Comparison) -> list[list[str]]:
    labels = key_labels([c.key for c in cmp.changes])
    out, last = [], None
    for c in shown(cmp):
        name = labels[c.key] if c.key != last else ""
        last = c.key
        out.append([name, f"{c.metric.label} [{c.metric.unit}]", fmt_value(c, "a"), fmt_value(c, "b"),
                    fmt_change(c), verdict(c)])
    return out


PROFILE_TITLE = "Where the receive CPU's time goes (--profile), B against A"
PROFILE_HEADERS = ("Measurement", "Receive CPU", "A [%]", "B [%]", "Change [pts]", "A [ns/packet]", "B [ns/packet]",
                   "Change [ns/packet]", "Verdict")


def profile_verdict(c: Change) -> str:
    """A profile's figure has no better or worse: a change beyond the noise is "more" or "less"."""
    v = verdict(c)
    return ("more" if c.delta > 0 else "less") if v in ("worse", "better") else v


def _signed(value: float, fmt: str) -> str:
    text = format(value, fmt)
    return "0" if float(text.replace(",", "")) == 0 else text


def profile_judged(cmp: Comparison) -> bool:
    return any(c.judged for pc in cmp.profile for c in (pc.share, pc.ns) if c is not None)


def profile_headers(cmp: Comparison) -> tuple[str, ...]:
    """PROFILE_HEADERS; without the verdict where nothing could be judged (the headline says why)."""
    return PROFILE_HEADERS if profile_judged(cmp) else PROFILE_HEADERS[:-1]


def profile_rows(cmp: Comparison) -> list[list[str]]:
    """A row per group of each measurement both runs profiled (the receive CPU's busy time first):
    its share of the receive CPU's time, its ns per captured packet, and where anything could be
    judged the verdict; a group that is 0 in both runs is left out."""
    labels = key_labels([pc.key for pc in cmp.profile])
    judged = profile_judged(cmp)
    out, last = [], None
    for pc in cmp.profile:
        if all(c is None or (c.a.exact_zero and c.b.exact_zero) for c in (pc.share, pc.ns)):
            continue
        name = labels[pc.key] if pc.key != last else ""
        last = pc.key
        ns = ([fmt_value(pc.ns, "a"), fmt_value(pc.ns, "b"),
               _signed(pc.ns.delta, "+,.0f") + (f" ({fmt_relative(pc.ns)})" if pc.ns.delta else "")]
              if pc.ns else ["—"] * 3)
        row = [name, pc.share.metric.label, fmt_value(pc.share, "a"), fmt_value(pc.share, "b"),
               _signed(pc.share.delta, "+.1f"), *ns]
        if judged:
            verdicts = list(dict.fromkeys(profile_verdict(c) for c in (pc.share, pc.ns) if c is not None))
            row.append(verdicts[0] if len(verdicts) == 1 else f"share {verdicts[0]}; ns/packet {verdicts[1]}")
        out.append(row)
    return out


def profile_headline(cmp: Comparison) -> list[str]:
    """What the profiles' table shows and how it is judged; [] when no measurement was profiled in a run."""
    lines = []
    keys = list(dict.fromkeys(pc.key for pc in cmp.profile))
    if keys:
        judged = profile_judged(cmp)
        lines.append(
            f"Where the receive CPU's time goes: {_plural(len(keys), 'measurement')} profiled in both runs. Each "
            f"group's share of the receive CPU's time over the load window (%, its change in points), and its CPU "
            f"time per captured packet; \"{TOTAL_LABEL}\" is all of its busy time. A profile is one sample per "
            f"trial: " + (f"where both runs repeated a measurement, a change counts when {SIGNIFICANCE} finds it "
                          f"(Holm over the profiles' figures), and a share must also change by more than "
                          f"{CPU_LEAST_CHANGE_PTS:g} points" if judged else
                          "no measurement was repeated in both runs, so these changes are shown, not judged "
                          "(run both with --repeat N)") + "; a profile's figure is never a regression.")
    if cmp.profiled_once:
        labels = key_labels([k for k, _w in cmp.profiled_once])
        lines.append("Profiled in one run only (not compared): "
                     + "; ".join(f"{labels[k]} in {w}" for k, w in cmp.profiled_once) + ".")
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def headline(cmp: Comparison) -> list[str]:
    """What a reader needs first: what was compared, the noise rule, the marked changes."""
    marked = [c for c in cmp.changes if c.significant]
    worse = [c for c in marked if c.worse]
    keys = set(cmp.measurements)
    answers = cmp.answer_keys
    common = [_plural(len(keys), "measurement")] if keys or not answers else []
    common += [_plural(len(answers), "search step") + " (compared by their answers)"] if answers else []
    lines = [f"A = {cmp.a.path}, B = {cmp.b.path}: {' and '.join(common)} in common"
             + (f", {len(cmp.only_a)} only in A" if cmp.only_a else "")
             + (f", {len(cmp.only_b)} only in B" if cmp.only_b else "") + ".",
             cmp.noise_rule()]
    lines.append("Figures that are 0 in both runs are left out.")
    short = {c.key for c in cmp.changes if c.short}
    if short:
        lines.append(f"{len(short)} of them not compared: lower bounds (the generator fell short of the offered "
                     f"load and nothing was lost), so they measured the generator, not the capture method.")
    if cmp.conditions:
        labels = key_labels([c.key for c in cmp.conditions])
        lines.append("The conditions differed: " + "; ".join(
            f"{labels[c.key]}: {', '.join(c.differed())}" for c in cmp.conditions) + ".")
    if cmp.unanswered:
        labels = key_labels([k for k, _n, _w in cmp.unanswered])
        lines.append("No answer to compare (the search found none, or was cut short): " + "; ".join(
            f"{labels[k]} {metric_label(n)} in {w}" for k, n, w in cmp.unanswered) + ".")
    if keys and len(short) == len(keys) and not any(c.answer for c in cmp.changes):
        lines.append("Nothing to judge: every measurement in common was a lower bound in a run (the generator "
                     "fell short and nothing was lost).")
    elif all(c.delta == 0 for c in cmp.changes if not c.short):
        lines.append("No change: every figure compared is the same in both runs.")
    elif not cmp.judged:
        lines.append("Nothing judged: no measurement was repeated in both runs, so there is no noise estimate; "
                     "run both with --repeat N (3 or more), or give --threshold PCT.")
    elif not marked:
        lines.append("No change beyond the noise.")
    else:
        lines.append(f"{len(marked)} changes beyond the noise: {len(worse)} worse, "
                     f"{len(marked) - len(worse)} better.")
    return lines


def metric_label(name: str) -> str:
    return metric(name).label


def _terminal_table(title: str, headers: tuple[str, ...], rows_: list[list[str]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for i, h in enumerate(headers):
        left = h in ("Measurement", "Figure", "Receive CPU", "Verdict")
        table.add_column(Text(h), justify="left" if left else "right", no_wrap=i == 1)
    styles = {"worse": "red", "better": "green"}
    for row in rows_:
        table.add_row(*(Text(cell) for cell in row), style=styles.get(row[-1]))  # Text: "[pps]" is not markup
    return table


def terminal(cmp: Comparison, console: Console) -> None:
    console.print(_terminal_table("capbench compare: B against A", HEADERS, rows(cmp)))
    for line in headline(cmp):
        console.print(Text(line))
    if cmp.profile:
        console.print(_terminal_table(PROFILE_TITLE, profile_headers(cmp), profile_rows(cmp)))
    for line in profile_headline(cmp):
        console.print(Text(line))


def terminal_text(cmp: Comparison, width: int = 140) -> str:
    console = Console(record=True, width=width, file=io.StringIO())
    terminal(cmp, console)
    return console.export_text()


def markdown(cmp: Comparison) -> str:
    parts = ["# capbench compare\n", *[f"- {line}" for line in headline(cmp)], "",
             md_table(HEADERS, rows(cmp)), ""]
    if cmp.profile or cmp.profiled_once:
        parts += [f"## {PROFILE_TITLE}\n", *[f"- {line}" for line in profile_headline(cmp)], ""]
        parts += [md_table(profile_headers(cmp), profile_rows(cmp)), ""] if cmp.profile else []
    for name, keys in (("Only in A", cmp.only_a), ("Only in B", cmp.only_b)):
        if keys:
            parts += [f"## {name}\n", *[f"- {k.text()}" for k in keys], ""]
    return "\n".join(parts)


def _colour(c: Change) -> str:
    return COLORS["" if not c.significant else ("worse" if c.worse else "better")]


def _measurement_panels(sub, cmp: Comparison, keys: list[SettingsKey]) -> None:
    """One panel per watched figure of the iperf-like measurements."""
    labels = key_labels(keys)
    axes = sub.subplots(1, len(WATCHED), sharey=True)
    for ax, name in zip(axes, WATCHED):
        by_key = {c.key: c for c in cmp.changes if c.metric.name == name and not c.answer}
        values, colors, hatches = [], [], []
        for k in keys:
            c = by_key[k]
            rel = c.rel_pct
            values.append(c.delta if name != "rx_pps" else (rel if rel is not None else 0.0))
            colors.append(_colour(c))
            hatches.append("//" if c.short else "")
        bars = ax.barh(range(len(keys)), values, color=colors)
        for bar, hatch in zip(bars, hatches):
            if hatch:
                bar.set_hatch(hatch)
                bar.set_alpha(0.4)
        ax.axvline(0, color="black", linewidth=0.8)
        metric_ = by_key[keys[0]].metric
        ax.set_title("captured rate" if name == "rx_pps" else metric_.label)
        ax.set_xlabel("change [%]" if name == "rx_pps" else f"change [{metric_.unit} points]")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(keys)), [labels[k] for k in keys])
    axes[0].invert_yaxis()


def _answer_panel(sub, changes: list[Change]) -> None:
    """The searches' answers: the change of each, relative to A."""
    labels = key_labels([c.key for c in changes])
    ax = sub.subplots()
    values = [c.rel_pct if c.rel_pct is not None else 0.0 for c in changes]
    ax.barh(range(len(changes)), values, color=[_colour(c) for c in changes])
    for i, c in enumerate(changes):
        if c.rel_pct is None:
            ax.text(0, i, " new (A: 0)", va="center", fontsize="small")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(changes)), [f"{labels[c.key]}: {c.metric.label}" for c in changes])
    ax.invert_yaxis()
    ax.set_title("search answers")
    ax.set_xlabel("change [%]")
    ax.grid(True, axis="x", alpha=0.3)


def figure(cmp: Comparison) -> Figure:
    """One panel per watched figure of the iperf-like measurements and one of the searches' answers:
    the change of every one, coloured when beyond the noise."""
    keys = cmp.measurements
    answer_changes = [c for c in cmp.changes if c.answer]
    heights = ([1.2 + 0.45 * len(keys)] if keys else []) + ([1.0 + 0.4 * len(answer_changes)] if answer_changes else [])
    fig = Figure(figsize=(12, sum(heights) + 1.5), layout="constrained")
    subs = list(fig.subfigures(len(heights), 1, height_ratios=heights, squeeze=False)[:, 0])
    if keys:
        _measurement_panels(subs.pop(0), cmp, keys)
    if answer_changes:
        _answer_panel(subs.pop(0), answer_changes)
    handles = [Patch(color=COLORS["worse"], label="worse, beyond the noise"),
               Patch(color=COLORS["better"], label="better, beyond the noise"),
               Patch(color=COLORS[""], label="not judged, or within the noise" + (" or precision" if answer_changes else ""))]
    if any(c.short for c in cmp.changes):
        handles.append(Patch(facecolor=COLORS[""], alpha=0.4, hatch="//", label="lower bound: not compared"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small")
    fig.suptitle("B against A")
    return fig


def page(cmp: Comparison, svg_text: str) -> str:
    def run_items(name, run):
        m = run.meta
        kernel = (m.get("kernel") or {}).get("release")
        return [(f"{name}", str(run.path)), (f"{name} started", m.get("started_at")),
                (f"{name} commit", m.get("git_commit")), (f"{name} kernel", kernel),
                (f"{name} CPU", m.get("cpu_model")), (f"{name} notes", " ".join(run.notes) or None)]

    classes = [("worse" if r[-1] == "worse" else "better" if r[-1] == "better" else
                "short" if r[-1].startswith("not compared") else "") for r in rows(cmp)]
    sections = [
        ("Summary", html.bullet_list(headline(cmp))),
        ("Runs", html.kv_table(run_items("A", cmp.a) + run_items("B", cmp.b))),
        ("Changes", html.table_html(html.Table("Every figure, B against A", list(HEADERS), rows(cmp), classes))),
        ("Figure", html.figure_html("Changes", svg_text, "Captured rate in % of A; loss and CPU in points. "
                                    "Coloured: beyond the noise.", None, "compare")),
    ]
    if cmp.profile or cmp.profiled_once:
        sections.append((PROFILE_TITLE, html.bullet_list(profile_headline(cmp)) + (html.table_html(html.Table(
            "Each group of receive work, B against A", list(profile_headers(cmp)), profile_rows(cmp),
            text_last=profile_judged(cmp), text_columns=(0, 1), wide=True))
            if cmp.profile else "")))
    for name, keys in (("Only in A", cmp.only_a), ("Only in B", cmp.only_b)):
        if keys:
            sections.append((name, html.bullet_list(k.text() for k in keys)))
    return html.page(f"capbench compare: {cmp.b.name} against {cmp.a.name}", sections)


@dataclass(frozen=True)
class CompareFiles:
    dir: Path
    html: Path
    markdown: Path
    text: Path
    png: Path
    svg: Path


def write(cmp: Comparison, out: Path) -> CompareFiles:
    out.mkdir(parents=True, exist_ok=True)
    text = out / "compare.txt"
    inputs.write_own(text, terminal_text(cmp))
    md = out / "compare.md"
    inputs.write_own(md, markdown(cmp))
    png, svg = plots.save(figure(cmp), out / "compare")
    page_path = out / "compare.html"
    inputs.write_own(page_path, page(cmp, svg.read_text(encoding="utf-8")))
    return CompareFiles(out, page_path, md, text, png, svg)


def _num(x: float | None) -> float | None:
    """A number JSON can hold: NaN and infinities (an unknown figure) are null."""
    return x if x is None or math.isfinite(x) else None


def _stat(s: Stat) -> dict[str, Any]:
    return {"median": _num(s.median), "min": _num(s.lo), "max": _num(s.hi), "n": s.n, "sd": _num(s.sd)}


def _change(c: Change) -> dict[str, Any]:
    return {"figure": c.metric.name, "label": c.metric.label, "unit": c.metric.unit, "a": _stat(c.a), "b": _stat(c.b),
            "delta": _num(c.delta), "rel_pct": _num(c.rel_pct), "judged": c.judged, "significant": c.significant,
            "worse": c.worse, "by_repetitions": c.by_repetitions, "p": _num(c.p), "answer": c.answer,
            "lower_bound_in": c.short or None, "disturbed_in": c.disturbed or None, "not_judged_because": c.apart or None}


def to_json(result: Comparison, regressions_pct: float | None = None) -> dict[str, Any]:
    """The comparison as `capbench compare --json` prints it (docs/json.md): every change of every
    measurement both runs hold, the profiles' changes, the measurements only one run holds."""
    doc: dict[str, Any] = {
        "type": "comparison", "a": str(result.a.path), "b": str(result.b.path), "noise": result.noise_rule(),
        "changes": [{"measurement": c.key.text(), **_change(c)} for c in result.changes],
        "profile": [{"measurement": p.key.text(), "group": p.group, "share_pct": _change(p.share),
                     "ns_per_packet": _change(p.ns) if p.ns is not None else None} for p in result.profile],
        "only_a": [k.text() for k in result.only_a], "only_b": [k.text() for k in result.only_b],
        "conditions": [{"measurement": c.key.text(), "sent_pps": {"a": c.sent_pps[0], "b": c.sent_pps[1]},
                        "disturbed": {"a": c.disturbed[0], "b": c.disturbed[1]},
                        "other_testbeds": {"a": list(c.other_testbeds[0]), "b": list(c.other_testbeds[1])},
                        "differed": c.differed()} for c in result.conditions],
    }
    if regressions_pct is not None:
        doc["regressions"] = [{"measurement": c.key.text(), **_change(c)} for c in result.regressions(regressions_pct)]
    return doc
