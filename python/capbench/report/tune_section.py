"""The part of a report that shows a tune's answer (tune/tune.json: report.tune_summary).

A tune measures most configurations once, on short trials, and races the few best on longer
ones: each configuration's own searches, read one at a time, can name a "best" the race did not
(the highest single screening search, on a host that stopped for 20 ms, is no evidence). So a
report of a tune leads with the tune's ranking and verdicts, as the tune printed them, and shows
the configurations' own searches below it, folded.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from capbench.report import html
from capbench.report.tables_md import md_table
from capbench.report.tune_summary import TuneSummary, cpu_text, goal_text, layers_text, verdict_text

# The ranking's rows shown open: the best this many and the defaults; the others fold under them.
SHOWN_ROWS = 10
FIGURE_CAPTION = ("The tune's goal against each knob: grey dots are every configuration's screening searches on "
                  "the shortest trials; the finalists' values in the race are shown as their mean with bars from "
                  "the lowest to the highest, the best in blue.")
SEARCHES_TITLE = "Each configuration's own searches, one at a time"
SEARCHES_NOTE = ("These are the configurations' single searches, most of them one screening search on the "
                 "shortest trials: the tune's ranking above weighs them, with repetitions and Welch's test, "
                 "and is the answer.")


def title(s: TuneSummary) -> str:
    size = f"{s.size} B" if s.size.isdigit() else s.size
    return f"capbench tune {s.backend}: {s.goal_title} at {size}"


def headers(s: TuneSummary) -> list[str]:
    return ["#", "Configuration", f"{s.goal_title} (mean, min–max, n)", "Trials of", "CPU / packet",
            "Loss by layer", "Verdict"]


def row(s: TuneSummary, r) -> list[str]:
    return [str(r.rank), r.label, goal_text(s.unit, r.values), f"{r.trial_s:g} s", cpu_text(r.cpu_ns),
            layers_text(r.layers_pct), verdict_text(r.is_defaults, r.verdict, r.disturbed)]


def split(s: TuneSummary) -> tuple[list, list]:
    """(the rows shown open: the best SHOWN_ROWS and the defaults; the others)."""
    shown = [r for r in s.ranking if r.rank <= SHOWN_ROWS or r.is_defaults]
    return shown, [r for r in s.ranking if r not in shown]


def lines(s: TuneSummary) -> list[str]:
    """The tune's answer in sentences: its best and how sure, why, what it did not reach, its line."""
    out = [s.best_line, *s.reasons]
    if s.unscreened:
        out.append(f"not measured: {len(s.unscreened)} of {len(s.ranking) + len(s.unscreened)} configurations "
                   f"(the budget did not reach them: {', '.join(u.label for u in s.unscreened[:5])}"
                   f"{', …' if len(s.unscreened) > 5 else ''})")
    out.append(f"measured for {s.spent_s:,.0f} s; the race ran {s.final_trial_s:g} s trials")
    return out


def run_lines(s: TuneSummary) -> list[str]:
    out = [f"run it: {shlex.join(s.run)}"]
    if s.command:
        out.append(f"{s.backend}'s command with it: {s.command}")
    return out


def section_html(tunes: Sequence[TuneSummary]) -> str:
    parts = []
    for s in tunes:
        shown, rest = split(s)
        best, *why = lines(s)
        parts.append(f"<h3>{html.esc(title(s))}</h3><p><b>{html.esc(best)}</b></p>{html.bullet_list(why)}"
                     + "".join(f"<p><code>{html.esc(x)}</code></p>" for x in run_lines(s)))
        classes = ["better" if r.rank == 1 else "" for r in shown]
        parts.append(html.table_html(html.Table(f"Ranking of {s.backend}'s configurations, best first",
                                                headers(s), [row(s, r) for r in shown], classes,
                                                text_columns=(1, 5), kind="summary")))
        if rest:
            parts.append(html.table_html(html.Table(f"The other {len(rest)} configurations of {s.backend}",
                                                    headers(s), [row(s, r) for r in rest], text_columns=(1, 5),
                                                    folded=True)))
    return "\n".join(parts)


def searches_html(summary_html: str) -> str:
    """The configurations' own searches (the report's usual summary of a run), folded under one line."""
    return (f'<details class="table"><summary>{html.esc(SEARCHES_TITLE)}</summary>'
            f'<p class="small">{html.esc(SEARCHES_NOTE)}</p>{summary_html}</details>')


def markdown(tunes: Sequence[TuneSummary]) -> str:
    return "\n".join(f"## {title(s)}\n\n" + "\n".join(f"- {x}" for x in lines(s)) + "\n\n"
                     + "".join(f"`{x}`\n\n" for x in run_lines(s))
                     + md_table(headers(s), (row(s, r) for r in s.ranking)) + "\n" for s in tunes)
