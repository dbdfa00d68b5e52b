"""The figure of a tune: its goal against each knob, drawn from the tune's summary record
(tune_summary.TuneSummary), so that `capbench tune` (tune/goal-by-knob-*.png) and `capbench
report` (report.html) draw the same figure from the same numbers."""

from __future__ import annotations

from capbench.report import plots, units
from capbench.report.tune_summary import TuneSummary, mean


def _text(text: str) -> str:
    """A text from the record as matplotlib shows it: a `$` as itself, not the start of math."""
    return text.replace("$", r"\$")


def figure(s: TuneSummary) -> plots.Figure | None:
    """Per knob: every configuration's first-rung values at its value of the knob (grey dots), the
    finalists' values in the race (mean, bars min to max; the best in blue). None without knobs."""
    if not s.knobs:
        return None
    values = [v for r in s.ranking for v in (*r.values, *r.screening_values)]
    unit = units.pick(s.unit, values)
    fig = plots.Figure(figsize=(4.2 * len(s.knobs), 3.6), layout="constrained")
    for i, k in enumerate(s.knobs):
        ax = fig.add_subplot(1, len(s.knobs), i + 1)
        # The defaults sit at the knob's default, or at a tick of their own where the knob's default
        # is the backend's (not among the candidates).
        ticks = ([] if k.default in k.candidates else ["default"]) + list(k.candidates)
        where = {v: n for n, v in enumerate(ticks)}

        def x_of(config: dict[str, str]) -> int:
            return where.get(config.get(k.name, k.default if k.default in where else "default"), 0)

        dots = [(x_of(r.config), v) for r in s.ranking for v in r.screening_values]
        ax.plot([x for x, _ in dots], [unit.of(v) for _, v in dots], "o", color="0.6", markersize=4,
                label=f"each configuration, {s.first_trial_s:g} s trials")
        shown: set[str] = set()
        for r in s.ranking:
            vs = r.values
            if not r.finalist or not vs:
                continue
            mid = mean(vs)
            kind = "best" if r.rank == 1 else "the other finalists"
            ax.errorbar([x_of(r.config)], [unit.of(mid)], yerr=[[unit.of(mid - min(vs))], [unit.of(max(vs) - mid)]],
                        fmt="o", capsize=4, color="C0" if r.rank == 1 else "C1",
                        label=None if kind in shown else f"{kind}, {s.final_trial_s:g} s trials (mean, min to max)")
            shown.add(kind)
        ax.set_xticks(range(len(ticks)), [_text(t) for t in ticks])
        ax.set_xlabel(_text(k.name))
        ax.set_ylabel(_text(f"{s.goal_title} [{unit.name}]"))
        ax.grid(True, alpha=0.3)
    plots._legend_below(fig, fig.axes[0])  # under the panels: inside one it covered the bars
    fig.suptitle(_text(f"capbench tune {s.backend}: {s.goal_title} against each knob"))
    return fig
