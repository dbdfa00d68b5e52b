"""The report's figures: each a function of the trial records that draws a matplotlib
Figure, or says why this run holds no data for it (Skipped).

Points are medians over repetitions with min–max error bars when a measurement was
repeated. Each trial is judged by the one loss rule (capbench.methods.verdict): one whose
generator fell short of the offered load but that lost frames is drawn as any other (its
loss is capture loss at the rate the generator sent); a lower bound (generator short,
nothing lost) is an open circle off the line (MARKERS): it measured the generator.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display; before anything imports pyplot

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from capbench import inputs  # noqa: E402
from capbench.trial.accounting import format_pct  # noqa: E402
from capbench.trial import loss_layers as account  # noqa: E402  (plots.loss_layers is a figure)
from capbench.methods.verdict import measured  # noqa: E402
from capbench.rates import link_name, wire_pps  # noqa: E402
from capbench.report import answers as answers_mod  # noqa: E402
from capbench.profile import groups as cpu_groups  # noqa: E402
from capbench.report import latency, profiles, stats, units  # noqa: E402
from capbench.report.answers import Answer  # noqa: E402
from capbench.report.keys import SeriesKey, cpus_used, key_labels, pin_of, series_key, series_labels  # noqa: E402
from capbench.report.load import Trial  # noqa: E402
from capbench.report.stats import Group, iperf_groups  # noqa: E402

# How a lower bound (verdict.LOWER_BOUND: the generator fell short, nothing was lost) is named.
LOWER_BOUND_TEXT = "lower bound (generator short, nothing lost)"
SHORT_NOTE = f"open circle: {LOWER_BOUND_TEXT}, not a capture result"


@dataclass(frozen=True)
class Marker:
    meaning: str  # as the report's one key of markers says it
    style: dict  # matplotlib's marker keywords; a face of None is the series' colour


# Every marker of the report's figures, each with one meaning in all of them; report.html shows them in
# one key (marker_key), the figures' own legends name only their series.
# (Each marker symbol with a hollow face or not names one kind: kind_of reads a figure's markers back.)
MARKERS: dict[str, Marker] = {
    "measured": Marker("measured (median; bars: min to max)", {"marker": "o", "markersize": 6, "markerfacecolor": None}),
    "lower_bound": Marker(LOWER_BOUND_TEXT, {"marker": "o", "markersize": 6, "markerfacecolor": "white"}),
    "kernel": Marker("kernel receive load (dotted)", {"marker": "s", "markersize": 5, "markerfacecolor": None}),
    "unverified": Marker("RFC 2544 answer not verified", {"marker": "D", "markersize": 8, "markerfacecolor": "white"}),
    "answer": Marker("latency method's answer", {"marker": "*", "markersize": 12, "markerfacecolor": None}),
    "lost_frames": Marker("latency of a trial that lost frames", {"marker": "X", "markersize": 7,
                                                                   "markerfacecolor": None}),
}


def marker_style(kind: str, color: str) -> dict:
    """The keywords of ax.plot for MARKERS[kind] in a series' colour."""
    style = dict(MARKERS[kind].style)
    if style["markerfacecolor"] is None:
        style["markerfacecolor"] = color
    return style | {"color": color}


def _mark(ax, xs, ys, color: str, kind: str, **kw) -> None:
    """Points alone, drawn as MARKERS[kind]."""
    ax.plot(xs, ys, linestyle="none", **marker_style(kind, color) | kw)


def kind_of(line: Line2D) -> str | None:
    """The MARKERS kind a drawn line's markers are, or None (a line without markers)."""
    hollow = matplotlib.colors.same_color(line.get_markerfacecolor(), "white")
    for kind, m in MARKERS.items():
        if line.get_marker() == m.style["marker"] and hollow == (m.style["markerfacecolor"] == "white"):
            return kind
    return None


def kinds_used(fig: Figure) -> set[str]:
    """The MARKERS kinds a figure draws."""
    return {k for ax in fig.axes for line in ax.get_lines() if (k := kind_of(line))}


def marker_key(kinds: Sequence[str] | None = None) -> Figure:
    """The one key of the figures' markers (all of them, or those of `kinds`, in MARKERS' order)."""
    kinds = [k for k in MARKERS if kinds is None or k in kinds]
    fig = Figure(figsize=(11, 0.15 + 0.25 * ((len(kinds) + 2) // 3)))
    handles = [Line2D([], [], linestyle="none", **marker_style(k, "#444444")) for k in kinds]
    fig.legend(handles, [MARKERS[k].meaning for k in kinds], loc="center", ncols=min(3, len(kinds)),
               fontsize="small", frameon=False)
    return fig
# The loss layers of the bars, from the bottom: (packets of a record, the layer's one name
# (trial.loss_layers), colour).
LAYERS: tuple[tuple[Callable[[Any], int], str, str], ...] = (
    (account.ring_drops, account.RX_RING, "#8c564b"),
    (account.link_only_drops, account.LINK, "#bcbd22"),
    (lambda r: r.backlog_drops, account.BACKLOG, "#ff7f0e"),
    (lambda r: account.own_drops(r, account.SOCKET), account.SOCKET, "#1f77b4"),
    (lambda r: account.own_drops(r, account.AF_XDP), account.AF_XDP_RINGS, "#17becf"),
    (account.other_own_drops, account.OTHER_OWN, "#7f7f7f"),
    (lambda r: r.app_drops, account.APPLICATION, "#9467bd"),
    (lambda r: r.unexplained, account.UNEXPLAINED, "#d62728"))


@dataclass(frozen=True)
class Skipped:
    reason: str


@dataclass(frozen=True)
class Drawn:
    figure: Figure
    caption: str


# Figures up to this wide (inches) are drawn two to a row in report.html; a wider one gets its own row.
HALF_PAGE_IN = 8.0

# The sections of report.html that show figures: most in "Figures", the profiles' in their own.
FIGURES_SECTION = "Figures"
PROFILE_SECTION = "Where the CPU time goes"


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem
    title: str
    # (the trials, the searches' answers: None derives them from the trials) -> the figure
    draw: Callable[[list[Trial], Sequence[Answer] | None], Drawn | Skipped]
    section: str = FIGURES_SECTION  # the section of report.html that shows it


# --- helpers -----------------------------------------------------------------------


def _colors(keys) -> dict[SeriesKey, str]:
    """A colour per series: tab10, or tab20 beyond ten series so that no two share one (up to 20)."""
    keys = set(keys)
    palette = matplotlib.colormaps["tab10" if len(keys) <= 10 else "tab20"].colors
    return {k: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, k in enumerate(sorted(set(keys)))}


def _by_series(groups) -> dict[SeriesKey, list[Group]]:
    out: dict[SeriesKey, list[Group]] = {}
    for g in groups:
        out.setdefault(g.series, []).append(g)
    return out


def _errorbar(ax, xs, stats_, color, label, kind="measured", linestyle="-"):
    med = [s.median for s in stats_]
    yerr = [[s.median - s.lo for s in stats_], [s.hi - s.median for s in stats_]]
    has_spread = any(s.n > 1 for s in stats_)
    ax.errorbar(xs, med, yerr=yerr if has_spread else None, label=label, linestyle=linestyle,
                capsize=3 if has_spread else 0, **marker_style(kind, color))


FEW_LENGTHS = 4  # a frame-length axis of this many lengths or fewer ticks each and dodges its series


def _frame_axis(ax, sizes) -> None:
    """A frame-length x axis: ticks at the lengths measured when they are few, and one length
    centred in a range around it (not matplotlib's ±3 B)."""
    sizes = sorted(set(sizes))
    if not sizes:
        return
    if len(sizes) == 1:
        ax.set_xlim(sizes[0] - _half_range(sizes[0]), sizes[0] + _half_range(sizes[0]))
    if len(sizes) <= FEW_LENGTHS:
        ax.set_xticks(sizes)


def _half_range(size: int) -> float:
    """How far either side of one frame length its axis reaches."""
    return max(size * 0.5, 1)


def _dodge(keys, sizes) -> dict:
    """Each series' x offset in bytes: at a few frame lengths, several series (the settings of a
    --vary) side by side around each length, within 60 % of the gap to the next (or of the range
    shown around one length), so that their points and bars do not hide each other; 0 along a
    longer axis, where the lines tell them apart."""
    keys, sizes = sorted(set(keys)), sorted(set(sizes))
    if len(keys) < 2 or not sizes or len(sizes) > FEW_LENGTHS:
        return {k: 0.0 for k in keys}
    gap = min((b - a for a, b in zip(sizes, sizes[1:])), default=_half_range(sizes[0]))
    step = 0.6 * gap / len(keys)
    return {k: (i - (len(keys) - 1) / 2) * step for i, k in enumerate(keys)}


def _unmeasured(gs, metric: str) -> list:
    """The groups in which no trial measured `metric` (None in every record: a remote sensor's or a
    port's kernel load is not read here). They are left out of that metric's lines, never drawn as 0."""
    return [g for g in gs if g.stat(metric).n == 0]


def _unmeasured_note(what: str, left_out: Sequence[str]) -> str:
    """The caption's sentence on points left out because `what` was not measured there."""
    if not left_out:
        return ""
    return (f" {what[0].upper()}{what[1:]} was not measured for {', '.join(left_out)} (a remote sensor's or a "
            f"port's receive CPU is not read here): those points are left out.")


def _per_frame(ax, groups_by_series, labels, colors, metric: str, scale: float = 1.0) -> tuple[bool, list[str]]:
    """One line per series over frame length through the measured points (side by side at a few
    lengths: _dodge); lower bounds as their markers.
    Also the points left out as not measured (`_unmeasured`), named "label at N B"."""
    any_short, left_out = False, []
    dx = _dodge(groups_by_series, {g.frame_len for gs in groups_by_series.values() for g in gs})
    for key, gs in groups_by_series.items():
        gs = sorted(gs, key=lambda g: g.frame_len)
        unmeasured = _unmeasured(gs, metric)
        left_out += [f"{labels[key]} at {g.frame_len} B" for g in unmeasured]
        gs = [g for g in gs if g not in unmeasured]
        valid = [g for g in gs if not g.short]
        short = [g for g in gs if g.short]
        scaled = [g.stat(metric).scaled(scale) for g in valid]
        if valid:
            _errorbar(ax, [g.frame_len + dx[key] for g in valid], scaled, colors[key], labels[key])
        if short:
            any_short = True
            _mark(ax, [g.frame_len + dx[key] for g in short], [g.stat(metric).median * scale for g in short],
                  colors[key], "lower_bound", label=None if valid else f"{labels[key]} (lower bound)")
    return any_short, left_out


def _finish(ax, xlabel: str, ylabel: str, legend: bool = True) -> None:
    """Labels, grid and the series' legend (the markers' meanings are in the report's one key)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles and legend:
        ax.legend(handles, labels, fontsize="small")


def _legend_below(fig: Figure, ax) -> None:
    """One legend of the series under the figure's panels (they share it): two columns, or one for
    long labels, the figure taller by its rows so that the panels keep their size."""
    _legend_under(fig, *ax.get_legend_handles_labels())


def _legend_under(fig: Figure, handles: list, labels: list[str]) -> None:
    """_legend_below's legend of the given handles: as many columns as its labels' length leaves room for."""
    if not handles:
        return
    ncols = 1 if max(map(len, labels)) > 45 else min(4, len(labels)) if max(map(len, labels)) <= 20 else 2
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize="small")
    fig.set_figheight(fig.get_figheight() + 0.2 * -(-len(labels) // ncols))


def _wire(ax, groups, per_bps: bool = False, scale: float = 1.0) -> None:
    """The link's wire rate over the frame lengths measured: in pps or in bps, times scale."""
    _wire_line(ax, {g.frame_len for g in groups}, {g.trials[0].result.link_bps for g in groups}, per_bps, scale)


def _wire_xs(sizes) -> list[float]:
    """Where the wire rate is drawn: over the lengths measured, or around the one measured."""
    sizes = sorted(sizes)
    if len(sizes) == 1:
        return [sizes[0] - _half_range(sizes[0]), sizes[0], sizes[0] + _half_range(sizes[0])]  # _frame_axis's
    return list(range(min(sizes), max(sizes) + 1, max(1, (max(sizes) - min(sizes)) // 200)))


def _wire_line(ax, sizes, links, per_bps: bool = False, scale: float = 1.0) -> None:
    xs = _wire_xs(sizes)
    for link in sorted(links):
        ys = [link * scale for _ in xs] if per_bps else [wire_pps(link, x) * scale for x in xs]
        ax.plot(xs, ys, color="black", linestyle="--", linewidth=1, label=f"wire rate ({link_name(link)})")


def _wire_top(sizes, links, per_bps: bool = False) -> float:
    """The highest wire rate _wire_line draws (pps or bps): for the axis' unit."""
    return max((link if per_bps else wire_pps(link, min(_wire_xs(sizes))) for link in links), default=0.0)


@dataclass(frozen=True)
class _Iperf:
    """The iperf-like measurements of a run, by series, with their legend labels and colours."""

    groups: list[Group]
    by: dict[SeriesKey, list[Group]]
    labels: dict[SeriesKey, str]
    colors: dict[SeriesKey, str]


def _iperf(trials: list[Trial]) -> _Iperf | Skipped:
    groups = list(iperf_groups(trials).values())
    if not groups:
        return Skipped("no iperf-like trials in this run")
    by = _by_series(groups)
    return _Iperf(groups, by, series_labels(by), _colors(by))


def _cpus_note(d: _Iperf) -> str:
    """Where a series' capture really ran, when not (only) on its placement's counter CPU."""
    used = [f"{d.labels[k]}: {u}" for k, gs in d.by.items() if (u := cpus_used(t for g in gs for t in g.trials))]
    return f" CPUs the capture really used: {'; '.join(used)}." if used else ""


def _repetition_note(groups) -> str:
    n = max((len(g.trials) for g in groups), default=1)
    return f" Points are medians of up to {n} repetitions; bars span min to max." if n > 1 else ""


# --- the figures -----------------------------------------------------------------


@dataclass(frozen=True)
class _Panel:
    metric: str
    ylabel: str  # without its unit
    quantity: str  # units.UNITS' key
    base: float = 1.0  # the metric's values times base are in the quantity's base unit
    wire: bool = False  # draw the link's wire rate (in the panel's quantity: pps or bps)
    after: str = ""  # after the unit in the label: "[% of one CPU]"


def _frame_panels(trials: list[Trial], title: str, panels: tuple[_Panel, _Panel], sharey: bool,
                  caption: str) -> Drawn | Skipped:
    """Two panels side by side of iperf-like figures against frame length, a line per series."""
    d = _iperf(trials)
    if isinstance(d, Skipped):
        return d
    fig = Figure(figsize=(7.5, 3.2), layout="constrained")
    short, left_out = False, {}
    sizes, links = {g.frame_len for g in d.groups}, {g.trials[0].result.link_bps for g in d.groups}
    shown = [units.pick(p.quantity, [g.stat(p.metric).hi * p.base for g in d.groups]
                        + ([_wire_top(sizes, links, p.quantity == "bps")] if p.wire else []))
             for p in panels]
    if sharey:  # one unit for both
        shown = [max(shown, key=lambda u: u.factor)] * 2
    for ax, panel, unit in zip(fig.subplots(1, 2, sharey=sharey), panels, shown):
        scale = panel.base / unit.factor
        if panel.wire:
            _wire(ax, d.groups, per_bps=panel.quantity == "bps", scale=1 / unit.factor)
        panel_short, left_out[panel.ylabel] = _per_frame(ax, d.by, d.labels, d.colors, panel.metric, scale)
        short = panel_short or short
        _frame_axis(ax, sizes)
        _finish(ax, "frame length [B]", units.label(panel.ylabel, unit, panel.after), legend=False)
    _legend_below(fig, fig.axes[0])
    fig.suptitle(title)
    return Drawn(fig, caption + _repetition_note(d.groups) + _cpus_note(d)
                 + (f" {SHORT_NOTE[0].upper()}{SHORT_NOTE[1:]}." if short else "")
                 + "".join(_unmeasured_note(what, points) for what, points in left_out.items()))


def throughput(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    return _frame_panels(
        trials, "Iperf-like capture throughput vs frame length",
        (_Panel("rx_pps", "captured", "pps", wire=True),
         _Panel("rx_gbps", "captured", "bps", 1e9, wire=True, after="on the wire")),
        sharey=False, caption="Captured packets per second (left) and the wire bit rate they fill (right) per "
                              "backend, with the wire rate of the link (dashed).")


def load(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    return _frame_panels(
        trials, "Application and kernel load vs frame length",
        (_Panel("app_cpu_pct", "application load", "pct", after="of one CPU"),
         _Panel("kernel_cpu_pct", "kernel receive load", "pct", after="of one CPU")),
        sharey=True, caption="The counter's CPU time (left) and the softirq+irq time of the CPU doing the kernel's "
                             "receive work (right), in % of one CPU over the sending time.")


def loss_layers(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    d = _iperf(trials)
    if isinstance(d, Skipped):
        return d
    groups, by = d.groups, d.by
    keys = sorted(by)
    # Each bar is labelled with its series: by name, or where names are long, by number (named in the caption)
    numbered = max(len(d.labels[k]) for k in keys) > 24
    labels = {k: f"#{i}" if numbered else d.labels[k] for i, k in enumerate(keys, 1)}
    sizes = sorted({g.frame_len for g in groups})
    width = 0.8 / len(keys)
    # Half the page up to about 28 bars (the default run's 13 lengths of two backends), wider beyond
    fig = Figure(figsize=(max(7.5, 0.2 * len(sizes) * len(keys) + 2), 3.8), layout="constrained")
    ax = fig.subplots()
    unit = units.pick("pct", [g.stat("loss_pct").hi for g in groups if not g.short])
    top = 0.0
    for i, key in enumerate(keys):
        for j, size in enumerate(sizes):
            g = next((g for g in by[key] if g.frame_len == size), None)
            if g is None:
                continue
            x = j + (i - (len(keys) - 1) / 2) * width
            if g.short:
                ax.text(x, 0, f"{labels[key]}: lower bound", rotation=90, ha="center", va="bottom",
                        fontsize="x-small", color="grey")
                continue
            r = min(g.used, key=lambda t: abs(t.result.loss_pct - g.stat("loss_pct").median)).result
            loss = unit.of(r.loss_pct)
            bottom = 0.0
            for v, color in _layer_heights(r, unit):
                ax.bar(x, v, width * 0.9, bottom=bottom, color=color, edgecolor="white", linewidth=0.5)
                bottom += v
            top = max(top, loss)
            if r.unexplained < 0:  # the layers count more drops than packets missing: the counters disagree
                ax.hlines(loss, x - width * 0.45, x + width * 0.45, colors="#d62728", linewidth=2)
            text = f"{labels[key]}: {format_pct(r.loss_pct, exact_zero=(r.lost == 0))} %"
            if r.unexplained < 0:
                text += " *"
            ax.text(x, loss, " " + text, rotation=90, ha="center", va="bottom", fontsize="x-small")
    ax.set_ylim(0, top / 0.55 if top > 0 else 1)  # room above the bars for their labels
    if top == 0:
        text = (f"every trial a {LOWER_BOUND_TEXT}" if all(g.short for g in groups)
                else "no loss in any trial measured")
        ax.text(0.5, 0.6, text, transform=ax.transAxes, ha="center", color="grey")
    ax.set_xlim(-0.5, len(sizes) - 0.5)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_xlabel("frame length [B]")
    ax.set_ylabel(units.label("lost", unit, "of sent"))
    ax.grid(True, axis="y", alpha=0.3)
    handles = [matplotlib.patches.Patch(color=c, label=n) for _f, n, c in LAYERS]
    handles.append(Line2D([], [], color="#d62728", linewidth=2,
                          label="total loss (*: the layers count more drops than are missing)"))
    fig.legend(handles=handles, fontsize="small", loc="outside lower center", ncols=3)
    fig.suptitle("Where the packets were lost, per frame length and backend")
    return Drawn(fig, f"Lost packets by layer ({account.RX_RING}: no room in the capture interface's receive "
                      f"ring, by its own counter; {account.LINK}: lost before the capture interface, in no counter; "
                      "backlog: the kernel's per-CPU queue; socket: the capture socket's ring; application: queued by the socket, never read by the "
                      "counter; unexplained: missing by the sequence numbers, counted by no layer), "
                      f"in {unit.name} of the packets sent, labelled with the total loss (of the repetition with the "
                      f"median loss). A {LOWER_BOUND_TEXT} has no bar; a short generator's trial that lost frames has "
                      f"its bar: capture loss at the rate it sent. Where the layers count more drops than are missing "
                      f"(*), the bar is the loss, shared in their proportions."
                      + (f" Bars: {'; '.join(f'{labels[k]} {d.labels[k]}' for k in keys)}." if numbered else "")
                      + _cpus_note(d))


def _layer_heights(r, unit: units.Unit) -> list[tuple[float, str]]:
    """A trial's loss-layer bar, (height, colour) from the bottom, in `unit` of the packets sent: never
    taller than its loss. Where the layers count more drops than packets are missing (the counters
    disagree, unexplained < 0), the loss is shared among them in their proportions."""
    if not r.sent:
        return []
    counts = [(max(packets(r), 0), color) for packets, _n, color in LAYERS]
    counted = sum(c for c, _color in counts)
    shrink = min(1.0, max(r.lost, 0) / counted) if counted else 0.0
    return [(unit.of(100.0 * c * shrink / r.sent), color) for c, color in counts if c > 0 and shrink > 0]


def _answer_link(g: answers_mod.AnswerGroup) -> float:
    return next((t.result.link_bps for a in g.answers for t in a.trials), 0.0) or \
        g.wire_pps * (g.frame_len + 20) * 8  # from the wire rate: frame + preamble and gap


def _answer_groups(trials: list[Trial], answers: Sequence[Answer] | None, method: str
                   ) -> dict[SeriesKey, list[answers_mod.AnswerGroup]]:
    """The answers of one search method by series, each series' frame lengths in order."""
    found = answers if answers is not None else answers_mod.answers_of(trials)
    by: dict[SeriesKey, list[answers_mod.AnswerGroup]] = {}
    for g in answers_mod.group_answers(found).values():
        if g.method == method:
            by.setdefault(g.series, []).append(g)
    return {k: sorted(gs, key=lambda g: g.frame_len) for k, gs in by.items()}


def _answer_panel(ax, by: dict[SeriesKey, list[answers_mod.AnswerGroup]], metric: str, unit: units.Unit,
                  labels: dict[SeriesKey, str], colors: dict[SeriesKey, str],
                  unverified: Callable[[Answer], bool] = lambda a: False) -> list[str]:
    """One line per series through its answers `metric` over frame length, side by side at a few
    lengths (_dodge: the settings of a --vary or a tune at one length), the wire rate dashed, the
    `unverified` answers marked; the measurements without an answer, named."""
    groups = [g for gs in by.values() for g in gs]
    sizes, links = {g.frame_len for g in groups}, {_answer_link(g) for g in groups}
    _wire_line(ax, sizes, links, scale=1 / unit.factor)
    dx = _dodge(by, sizes)
    missing = []
    for key, gs in by.items():
        points = [(g, g.stat(metric)) for g in gs]
        missing += [f"{labels[key]} {g.frame_len} B" for g, s in points if s is None]
        points = [(g, s.scaled(1 / unit.factor)) for g, s in points if s is not None]
        if points:
            _errorbar(ax, [g.frame_len + dx[key] for g, _s in points], [s for _g, s in points], colors[key],
                      labels[key])
        shaky = [(g, s) for g, s in points if any(unverified(a) for a in g.answers)]
        if shaky:
            _mark(ax, [g.frame_len + dx[key] for g, _s in shaky], [s.median for _g, s in shaky], colors[key],
                  "unverified")
    _frame_axis(ax, sizes)
    return missing


def _answer_unit(by: dict[SeriesKey, list[answers_mod.AnswerGroup]], metrics: Sequence[str]) -> units.Unit:
    groups = [g for gs in by.values() for g in gs]
    sizes, links = {g.frame_len for g in groups}, {_answer_link(g) for g in groups}
    return units.pick("pps", [_wire_top(sizes, links)] + [s.hi for g in groups for m in metrics if (s := g.stat(m))])


def rfc2544(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """RFC 2544 throughput against frame length: each search's answer (searches.jsonl, else the
    rate whose verification passed), medians over repetitions with min–max bars."""
    by = _answer_groups(trials, answers, "rfc2544")
    if not by:
        return Skipped("no RFC 2544 searches in this run (they come from `capbench run --method rfc2544`)")
    groups = [g for gs in by.values() for g in gs]
    labels, colors = series_labels(by), _colors(by)
    fig = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = fig.subplots()
    unit = _answer_unit(by, ("rfc2544_pps",))

    def shaky(a: Answer) -> bool:
        return bool(a.values.get("rfc2544_pps")) and not a.info.get("verified")

    missing = _answer_panel(ax, by, "rfc2544_pps", unit, labels, colors, shaky)
    unverified = any(shaky(a) for g in groups for a in g.answers)
    _finish(ax, "frame length [B]", units.label("RFC 2544 throughput", unit))
    fig.suptitle("RFC 2544 throughput vs frame length")
    derived = any(a.source == "trials" for g in groups for a in g.answers)
    caption = ("The highest rate each backend captured without loss (RFC 2544 section 26.1): each search's answer "
               + ("as the method recorded it (searches.jsonl)" if not derived else
                  "(searches.jsonl, or where it holds none, the rate of the verification trial that passed)")
               + "; the wire rate dashed." + _answer_repetition_note(groups) + _side_by_side_note(by))
    if unverified:
        caption += f" Open diamonds: an {MARKERS['unverified'].meaning[len('RFC 2544 '):]}."
    if missing:
        caption += f" No answer (no verification passed, or the search was cut short): {', '.join(missing)}."
    return Drawn(fig, caption)


def mlr(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """The MLR search's goals against frame length, a panel per goal (NDR, PDR): each search's
    lower bound, medians over repetitions with min–max bars."""
    by = _answer_groups(trials, answers, "mlr")
    if not by:
        return Skipped("no MLR searches in this run (they come from `capbench run --method mlr` and `capbench tune`)")
    groups = [g for gs in by.values() for g in gs]
    goals = list(dict.fromkeys(m for g in groups for m in g.metrics()))
    if not goals:
        return Skipped("no MLR search in this run gave an answer (each was cut short before its searches.jsonl line)")
    labels, colors = series_labels(by), _colors(by)
    fig = Figure(figsize=(4.2 * len(goals) + 1.0, 3.6), layout="constrained")
    axes = fig.subplots(1, len(goals), sharey=True, squeeze=False)[0]
    unit = _answer_unit(by, goals)
    missing = []
    for ax, goal in zip(axes, goals):
        name = answers_mod.metric(goal).label
        missing += [f"{name} of {m}" for m in _answer_panel(ax, by, goal, unit, labels, colors)]
        _finish(ax, "frame length [B]", units.label(name, unit) if ax is axes[0] else "", legend=False)
        ax.set_title(name, fontsize="medium")
    _legend_below(fig, axes[0])
    fig.suptitle("MLR search: throughput of each goal vs frame length")
    caption = ("Each goal's throughput (the lower bound of the highest load that met its loss ratio, FD.io "
               "CSIT's MLRsearch) as the search recorded it (searches.jsonl); the wire rate dashed."
               + _answer_repetition_note(groups) + _side_by_side_note(by))
    if missing:
        caption += f" No answer (the search was cut short, or no load met the goal): {', '.join(missing)}."
    return Drawn(fig, caption)


def _side_by_side_note(by: dict[SeriesKey, list[answers_mod.AnswerGroup]]) -> str:
    sizes = {g.frame_len for gs in by.values() for g in gs}
    moved = set(_dodge(by, sizes).values()) - {0.0}
    return (" Several settings at one frame length are drawn side by side around it (their x offset is no "
            "length of its own).") if moved else ""


def _answer_repetition_note(groups) -> str:
    n = max((len(g.answers) for g in groups), default=1)
    return f" Points are medians of up to {n} repetitions; bars span min to max." if n > 1 else ""


def sweep(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """Capture rate and CPU against the offered rate (seed 003), one line per series and frame length."""
    lines = stats.sweep_lines(trials)
    if not lines:
        return Skipped("no sweep: no backend and frame length was measured at 3 or more offered rates "
                       "(`capbench run --method sweep`)")
    labels = series_labels(k for k, _ in lines)
    colors = _colors(lines)
    fig = Figure(figsize=(7.5, 5), layout="constrained")
    ax_rate, ax_cpu = fig.subplots(2, 1, sharex=True)
    sent = stats.sent_pps
    lim = max(max(sent(g) for gs in lines.values() for g in gs), 1)
    unit = units.pick("pps", [lim] + [g.stat("rx_pps").hi for gs in lines.values() for g in gs])
    k = 1 / unit.factor
    cpu = units.pick("pct", [g.stat(m).hi for gs in lines.values() for g in gs
                             for m in ("app_cpu_pct", "kernel_cpu_pct")])
    left_out = []
    for (key, size), gs in lines.items():
        valid, short = [g for g in gs if not g.short], [g for g in gs if g.short]
        color, label = colors[(key, size)], f"{labels[key]} {size} B"
        if valid:
            xs = [sent(g) * k for g in valid]
            _errorbar(ax_rate, xs, [g.stat("rx_pps").scaled(k) for g in valid], color, label)
            _errorbar(ax_cpu, xs, [g.stat("app_cpu_pct").scaled(1 / cpu.factor) for g in valid], color, f"{label} app")
            unmeasured = _unmeasured(valid, "kernel_cpu_pct")
            left_out += [f"{label} at {sent(g):,.0f} pps" for g in unmeasured]
            kernel = [g for g in valid if g not in unmeasured]
            if kernel:
                _errorbar(ax_cpu, [sent(g) * k for g in kernel],
                          [g.stat("kernel_cpu_pct").scaled(1 / cpu.factor) for g in kernel], color, f"{label} kernel",
                          kind="kernel", linestyle=":")
        if short:  # x is what the generator really sent, but not the rate the step named
            _mark(ax_rate, [sent(g) * k for g in short], [g.stat("rx_pps").median * k for g in short], color,
                  "lower_bound")
    ax_rate.plot([0, lim * k], [0, lim * k], color="black", linestyle="--", linewidth=1, label="everything captured")
    _finish(ax_rate, "", units.label("captured", unit))
    _finish(ax_cpu, units.label("offered rate (sent by the generator)", unit), units.label("CPU", cpu, "of one CPU"))
    fig.suptitle("Capture rate and CPU usage vs offered rate")
    return Drawn(fig, "Captured rate (top) and application and kernel load (bottom) against the rate the "
                      "generator sent." + _repetition_note([g for gs in lines.values() for g in gs])
                 + _unmeasured_note("kernel load", left_out))


def repetitions(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """The spread of the iperf-like captured rate over repetitions (a search's trials are not
    repetitions of each other: the spread of its answers is in its own figure and tables)."""
    groups = [g for g in iperf_groups(trials).values() if len(g.valid) > 1]
    if not groups:
        return Skipped("no repetitions of iperf-like trials: every constant-load measurement ran once, or none "
                       "ran (`capbench run --repeat N`)")
    by = _by_series(groups)
    labels, colors = series_labels(by), _colors(by)
    fig = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = fig.subplots()
    sizes = {g.frame_len for g in groups}
    dx = _dodge(by, sizes)
    for key, gs in by.items():
        gs = sorted(gs, key=lambda g: g.frame_len)
        rel = []
        for g in gs:
            s = g.stat("rx_pps")
            m = s.median or 1.0
            rel.append(stats.Stat(0.0, 100 * (s.lo - s.median) / m, 100 * (s.hi - s.median) / m, s.n,
                                  100 * s.sd / m))
        _errorbar(ax, [g.frame_len + dx[key] for g in gs], rel, colors[key],
                  f"{labels[key]} (n = {max(g.stat('rx_pps').n for g in gs)})", linestyle="none")
    ax.axhline(0, color="black", linewidth=0.8)
    _frame_axis(ax, sizes)
    _finish(ax, "frame length [B]", "captured rate vs its median [%]")
    fig.suptitle("Run-to-run spread of the captured rate")
    return Drawn(fig, "For each measurement repeated more than once, the spread of the captured rate over its "
                      "valid repetitions: min and max relative to the median. This is the noise "
                      "`capbench compare` weighs changes against." + _side_by_side_note(by))


def _bins(max_lost: int) -> list[tuple[int, int]]:
    edges = [(0, 0), (1, 9)]
    lo = 10
    while lo <= max(max_lost, 10):
        edges.append((lo, lo * 10 - 1))
        lo *= 10
    return edges


def loss_groups(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """Seed 004: a grouped stream's groups, counted by how many of their frames were lost."""
    by: dict[SeriesKey, list[tuple[Trial, list[int]]]] = {}
    uncounted, short, untracked = 0, 0, 0
    for t in trials:
        if t.result.group_size <= 0:
            continue
        if not measured(t.result):  # a lower bound: it lost nothing, of a load the generator did not hold
            short += 1
            continue
        lost = stats.group_losses(t.result)
        if lost is None:
            uncounted += 1
            continue
        untracked += stats.group_untracked(t.result)
        by.setdefault(series_key(t), []).append((t, lost))
    if not by:
        if not (uncounted or short):
            return Skipped("no trial sent a grouped stream: no record holds per-group counts (group_size and "
                           "group_received, from a run whose generator sends groups and whose counter counts them)")
        return Skipped(f"no grouped trial to draw: {short} were lower bounds (generator short, nothing lost), and "
                       f"the counter of "
                       f"{uncounted} counted no group (app load none counts no frame by its sequence number)")
    labels, colors = series_labels(by), _colors(by)
    bins = _bins(max(max(lost, default=0) for items in by.values() for _t, lost in items))
    width = 0.8 / len(by)
    fig = Figure(figsize=(max(7.5, len(bins) * 0.9), 3.4), layout="constrained")
    ax = fig.subplots()
    for i, (key, items) in enumerate(sorted(by.items())):
        lost_all = [x for _t, lost in items for x in lost]
        sizes = sorted({t.result.group_size for t, _lost in items})
        size_text = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}–{sizes[-1]:,}"
        counts = [sum(lo <= x <= hi for x in lost_all) for lo, hi in bins]
        ax.bar([j + (i - (len(by) - 1) / 2) * width for j in range(len(bins))], counts, width, color=colors[key],
               label=f"{labels[key]}: {len(lost_all):,} groups of {size_text} frames, "
                     f"{sum(x > 0 for x in lost_all):,} lossy ({len(items)} trial{'s' if len(items) > 1 else ''})")
    most = max(t.result.group_size for items in by.values() for t, _lost in items)  # no group loses more
    ax.set_xticks(range(len(bins)), ["0" if hi == 0 else f"{lo:,}" if min(hi, most) == lo else
                                     f"{lo:,}–{min(hi, most):,}" for lo, hi in bins], rotation=30)
    _finish(ax, "frames lost in the group", "groups")
    fig.suptitle("Loss per group of packets sent")
    caption = ("Seed 004's histogram: the generator sends its frames in groups, the counter files each frame "
               "it receives under group sequence / group size; each bar counts the groups by how many of their "
               "frames were lost (group size − frames received; a trial's last group holds only what was sent "
               "of it, and a group that never arrived counts whole).")
    if short:
        caption += f" {short} trial{'s' if short > 1 else ''} left out: {LOWER_BOUND_TEXT}."
    if uncounted:
        caption += f" {uncounted} trial{'s' if uncounted > 1 else ''} whose counter counted no group left out."
    if untracked:
        caption += (f" The counter could not file {untracked:,} frames under their group (too many groups): their "
                    f"groups show as lossier than they were.")
    return Drawn(fig, caption)


LATENCY_ANSWER = "latency at throughput"  # the purpose of the latency method's own trial
LATENCY_SHOWN = ("p50", "p99", "max")  # one panel each; the record holds more (report.latency)


def _link_share_pct(t: Trial) -> float:
    """What the generator sent, as % of the link's wire rate (frames + 20 B preamble and gap):
    loads of different frame lengths on one axis."""
    r = t.result
    mean = r.mean_frame_len or float(r.frame_len)
    return 100.0 * r.achieved_pps * (mean + 20) * 8 / r.link_bps


def latency_fig(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """Latency percentiles against the load, one panel per percentile, one colour per series.

    The latency method's trials when the run has them (its search trials and its answer,
    RFC 2544 26.2: the trial at the throughput found, drawn as a star); otherwise every
    trial whose counter measured latency. A trial that lost frames is hollow: its
    percentiles describe only the frames that arrived."""
    rows = [(t, latency.percentiles(t.record)) for t in trials]
    rows = [(t, p) for t, p in rows if p]
    if not rows:
        return Skipped("no trial record holds latency percentiles (`capbench run --method latency`)")
    own = [(t, p) for t, p in rows if t.method == "latency"]
    chosen = own or rows
    by: dict[SeriesKey, list] = {}
    for t, p in chosen:
        by.setdefault(series_key(t), []).append((t, p))
    labels, colors = series_labels(by), _colors(by)
    names = [n for n in LATENCY_SHOWN if any(n in p for _t, p in chosen)]
    if not names:
        names = sorted({n for _t, p in chosen for n in p}, key=latency.order)[-3:]
    fig = Figure(figsize=(max(7.5, 1.2 + 2.1 * len(names)), 3.2), layout="constrained")
    axes = fig.subplots(1, len(names), sharey=True, squeeze=False)[0]
    # A log axis shared by the panels: the unit in which a typical value of the lowest percentile reads as
    # a whole number (a p50 of 20 µs: "20 µs", not "0.02 ms" chosen for a max of 90 ms)
    unit = units.pick_typical("ns", [p[names[0]] for _t, p in chosen if names[0] in p])
    answered = sum(t.result.purpose == LATENCY_ANSWER for t, _p in chosen)
    lossy = sum(t.result.lost > 0 for t, _p in chosen)
    for ax, name in zip(axes, names):
        for key, items in by.items():
            for t, p in items:
                if name not in p:
                    continue
                kind = ("answer" if t.result.purpose == LATENCY_ANSWER else
                        "lost_frames" if t.result.lost > 0 else "measured")
                _mark(ax, [_link_share_pct(t)], [unit.of(p[name])], colors[key], kind)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: units.plain(v)))  # 10, not 10¹
        ax.set_title(name)
        ax.set_xlabel("sent load [% of wire rate]")
        units.least_span(ax.xaxis, 1.0)  # loads a few ppm apart: not ticks of seven decimals
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(units.label("latency", unit))
    handles = [matplotlib.patches.Patch(color=colors[k]) for k in by]
    texts = [labels[k] for k in by]
    _legend_under(fig, handles, texts)
    fig.suptitle("Latency percentiles vs load")
    which = ("the latency method's trials, its search trials included" if own
             else "every trial whose counter measured it (no latency method in this run)")
    caption = (f"Latency from the generator's transmit stamp to capture against the load the generator sent, "
               f"{', '.join(names)}, all frame lengths: {which} ({len(chosen)} trial{'' if len(chosen) == 1 else 's'}).")
    if answered:
        caption += (f" Stars ({answered}): the latency method's answers, each the trial at the throughput its "
                    f"search found (RFC 2544 26.2).")
    if lossy:
        caption += (f" Crosses ({lossy}): trials that lost frames; their percentiles are of the frames "
                    f"that arrived, queueing before the drop included.")
    return Drawn(fig, caption)


def cpu_time(trials: list[Trial], answers: Sequence[Answer] | None = None) -> Drawn | Skipped:
    """Where the receive CPU's time goes (--profile): a stacked bar per measurement of the groups of
    profile/groups.toml, in % of that CPU's time over the load window and in its CPU time per
    captured packet; the mean of the repetitions."""
    found = profiles.receive_by_settings(trials)
    if not found:
        return Skipped(profiles.NOT_PROFILED if not profiles.profiled(trials) else
                       "no trial's profile names the CPU of its receive work (it was not known)")
    table = cpu_groups.table()
    idle, unsampled_group = table.by_kind(cpu_groups.IDLE).name, table.by_kind(cpu_groups.UNSAMPLED).name
    keys = list(found)
    labels = key_labels(keys)
    # Left: each group's share of the window (its share of the samples times the share of the
    # window they cover), and the time no sample covers; right: CPU ns per captured packet.
    pct = {k: {g: profiles.mean([r.window_pct(g) for _t, r in found[k]]) for g in table.names()} for k in keys}
    unsampled = {k: profiles.mean([100.0 * (1.0 - r.sampled) for _t, r in found[k]]) for k in keys}
    ns = {k: {g: profiles.mean([r.groups_ns[g] for r in rs]) for g in table.busy_names()}
          for k in keys if (rs := [r for _t, r in found[k] if r.ns_per_packet is not None])}
    fig = Figure(figsize=(12, 2.3 + 0.34 * len(keys)), layout="constrained")
    ax_pct, ax_ns = fig.subplots(1, 2, sharey=True)
    per_packet = units.pick("ns", [sum(v.values()) for v in ns.values()])
    ys = list(range(len(keys)))
    at_pct, at_ns = [0.0] * len(keys), [0.0] * len(keys)
    style = {"edgecolor": "white", "linewidth": 0.5, "height": 0.7}
    for g in table.names():
        if g == unsampled_group:
            continue  # drawn last, hatched
        widths = [pct[k][g] for k in keys]
        ax_pct.barh(ys, widths, left=at_pct, label=table.label(g), color=table.color(g), **style)
        at_pct = [a + w for a, w in zip(at_pct, widths)]
        if g in table.busy_names():
            widths = [per_packet.of(ns[k][g]) if k in ns else 0.0 for k in keys]
            ax_ns.barh(ys, widths, left=at_ns, color=table.color(g), **style)
            at_ns = [a + w for a, w in zip(at_ns, widths)]
    ax_pct.barh(ys, [unsampled[k] for k in keys], left=at_pct, label=table.label(unsampled_group), color="white",
                hatch="///",
                **style | {"edgecolor": table.color(idle)})
    for i, k in enumerate(keys):
        ax_ns.text(at_ns[i], i, f" {at_ns[i]:,.0f}" if k in ns and at_ns[i] >= 100 else f" {at_ns[i]:.3g}" if k in ns else " no packet captured", va="center",
                   fontsize="small", color="#333")
    ax_ns.set_xlim(0, max(at_ns + [1.0]) * 1.15)  # room for the totals
    ax_pct.set_xlim(0, 100)
    ax_pct.set_yticks(ys, [labels[k] + (f" (mean of {len(found[k])})" if len(found[k]) > 1 else "") for k in keys])
    ax_pct.invert_yaxis()
    ax_pct.set_xlabel("share of the receive CPU's time over the load window [%]")
    ax_ns.set_xlabel(units.label("receive CPU's busy time per captured packet", per_packet))
    for ax in (ax_pct, ax_ns):
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_axisbelow(True)
    fig.legend(*ax_pct.get_legend_handles_labels(), loc="outside lower center", ncols=5, fontsize="small")
    fig.suptitle("Where the receive CPU's time goes")
    caption = ("Each bar: the CPU that did the kernel's receive work in the trial, its samples given to the groups "
               "of capbench/profile/groups.toml (walked from the leaf: a helper counts for the group of the "
               "function that called it). Left: each group's share of that CPU's time over the load window; "
               f"hatched, the time no sample covers ({table.label(unsampled_group)}). Right: its busy time per captured packet, "
               f"in {per_packet.name}, the total at the bar's end.")
    if any(pin_of(t) == "A:A" for rs in found.values() for t, _r in rs):
        caption += (f" Where the capture process was placed on the receive CPU (A:A), its own time is in "
                    f"\"{table.label(table.by_kind(cpu_groups.USER).name)}\".")
    n = max(len(v) for v in found.values())
    if n > 1:
        caption += f" Bars are means of up to {n} repetitions."
    return Drawn(fig, caption)


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("throughput", "Throughput vs frame length", throughput),
    FigureSpec("load", "Application and kernel load vs frame length", load),
    FigureSpec("loss_layers", "Loss by layer", loss_layers),
    FigureSpec("rfc2544", "RFC 2544 throughput vs frame length", rfc2544),
    FigureSpec("mlr", "MLR throughput vs frame length", mlr),
    FigureSpec("sweep", "Capture rate and CPU vs offered rate", sweep),
    FigureSpec("repetitions", "Repetitions: run-to-run spread", repetitions),
    FigureSpec("loss_groups", "Loss per group", loss_groups),
    FigureSpec("latency", "Latency percentiles vs load", latency_fig),
    FigureSpec("cpu_time", "Where the receive CPU's time goes", cpu_time, PROFILE_SECTION),
)


def save(fig: Figure, stem: Path) -> tuple[Path, Path]:
    """stem.png and stem.svg; SVG text stays text (searchable, and the legends name the series)."""
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    write_figure(fig, png)
    write_figure(fig, svg)
    return png, svg


def write_figure(fig: Figure, path: Path) -> Path:
    """One file of a figure, its format by its suffix (.png or .svg), the same bytes for the same
    figure (no date, no random ids)."""
    kw = {"dpi": 110, "metadata": {"Software": None}} if path.suffix == ".png" else {"metadata": {"Date": None}}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": path.stem}):
        buf = io.BytesIO()
        fig.savefig(buf, format=path.suffix[1:], **kw)
        inputs.write_own(path, buf.getvalue())
    return path
