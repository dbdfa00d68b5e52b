"""`capbench report DIR`: everything a run's result files show, written into DIR/report/.

    tables.txt     the terminal tables (as `capbench run` prints them)
    tables.md      the same tables, the summary and the loss totals as Markdown
    trials.csv     one row per trial: the fields of trials.jsonl under the same names (a list or
                   an object as its JSON text), numbers at full precision, and the tables' Note
    <figure>.png / .svg   every figure this run has the records for
    tune-<n>.png / .svg   a tune's goal against each knob, per backend it tuned (tune/tune.json)
    markers.svg    the one key of the markers the figures draw (plots.MARKERS), shown above them
    flame-<trial>.svg     the flame graph of each profiled trial (--profile), linked from report.html
    report.html    one self-contained page: the summary (a tune's ranking first), the figures, where the CPU time goes, the tables
                   (long ones folded), the machine and settings
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from capbench import inputs
from capbench.methods import registry
from capbench.report import tables
from capbench.errors import UsageError
from capbench.report import (answer_tables, answers, flamegraph, html, plots, profiles, summary, tables_md, tune_figure,
                             tune_section)
from capbench.report.flamegraph import FlameFile
from capbench.report.load import RunData, Trial, load_run

REPORT_DIR = "report"


@dataclass(frozen=True)
class FigureFile:
    name: str
    title: str
    caption: str
    png: Path | None
    svg: Path | None
    skipped: str | None  # why it was not drawn
    section: str = plots.FIGURES_SECTION  # the section of report.html that shows it
    markers: frozenset[str] = frozenset()  # the plots.MARKERS kinds it draws
    wide: bool = False  # wider than half the page reads: report.html gives it a row of its own


@dataclass(frozen=True)
class Report:
    run: RunData
    dir: Path
    html: Path
    markdown: Path
    csv: Path
    text: Path
    figures: list[FigureFile]
    flame_graphs: dict[str, FlameFile]  # by the folded file the records name

    @property
    def notes(self) -> list[str]:
        return self.run.notes


def terminal_tables(run: RunData, width: int = 120) -> str:
    console = Console(record=True, width=width, file=io.StringIO())
    tables.print_tables(run.trials, console, run.outcomes, run.loss_tolerance_frames)
    return console.export_text()


def draw_figures(run: RunData, out: Path) -> list[FigureFile]:
    found = answers.run_answers(run)
    files = []
    for spec in plots.FIGURES:
        drawn = spec.draw(run.trials, found)
        if isinstance(drawn, plots.Skipped):
            files.append(FigureFile(spec.name, spec.title, "", None, None, drawn.reason, spec.section))
            continue
        png, svg = plots.save(drawn.figure, out / spec.name)
        files.append(FigureFile(spec.name, spec.title, drawn.caption, png, svg, None, spec.section,
                                frozenset(plots.kinds_used(drawn.figure)),
                                drawn.figure.get_figwidth() > plots.HALF_PAGE_IN))
    return files


def draw_tune_figures(run: RunData, out: Path) -> list[FigureFile]:
    """A tune's figure of its goal against each knob, per backend it tuned (tune_figure.figure: the one
    the tune drew). Named by position: a backend's name is text from the results folder."""
    files = []
    for i, s in enumerate(run.tunes, start=1):
        fig = tune_figure.figure(s)
        if fig is None:
            continue
        png, svg = plots.save(fig, out / f"tune-{i}")
        files.append(FigureFile(f"tune-{i}", tune_section.title(s), tune_section.FIGURE_CAPTION, png, svg, None,
                                wide=fig.get_figwidth() > plots.HALF_PAGE_IN))
    return files


def draw_flame_graphs(run: RunData, out: Path) -> dict[str, FlameFile]:
    """A flame graph per folded file the profiled trials name (the sensors of one trial share
    theirs), or why there is none (a file missing, unreadable or empty)."""
    by_file: dict[str, list[Trial]] = {}
    for t, p in profiles.profiled(run.trials):
        if p.folded:
            by_file.setdefault(p.folded, []).append(t)
    files, taken = {}, set()
    for folded_name, trials in by_file.items():
        p = profiles.profile_of(trials[0])
        assert p is not None
        try:
            folded = flamegraph.read(flamegraph.folded_path(run.path, folded_name))
        except UsageError as e:
            files[folded_name] = FlameFile(folded_name, None, str(e))
            continue
        if not folded.stacks:
            files[folded_name] = FlameFile(folded_name, None, f"{folded_name} holds no stack"
                                           + (f" ({folded.skipped:,} lines unreadable)" if folded.skipped else ""))
            continue
        r = trials[0].result
        what = (f"{' + '.join(dict.fromkeys(t.result.backend for t in trials))}, {r.size_label} B, rate "
                f"{r.rate or '—'} (trial of {r.started_at})")
        lay = flamegraph.layout(folded)
        fig = flamegraph.draw(lay, flamegraph.title(what, lay, folded, p.period_ns, p.hz))
        files[folded_name] = FlameFile(folded_name, plots.write_figure(fig, out / flamegraph.file_name(folded_name,
                                                                                                          taken)))
    return files


def metadata(run: RunData) -> list[tuple[str, Any]]:
    m = run.meta
    k = m.get("kernel") or {}
    commit = m.get("git_commit")
    if commit and m.get("git_dirty"):
        commit = f"{commit} (with uncommitted changes)"
    items: list[tuple[str, Any]] = [
        ("results", str(run.path)),
        ("status", m.get("status")),
        ("started / ended (UTC)", f"{m.get('started_at', '?')} / {m.get('ended_at') or '?'}"),
        ("trials", f"{len(run.trials)} in trials.jsonl"
                   + (f" ({m['trials']} recorded in run.json)" if m.get("trials") not in (None, len(run.trials))
                      else "")),
        ("host", m.get("hostname")),
        ("kernel", " ".join(str(k.get(f, "")) for f in ("sysname", "release", "version", "machine")).strip()
         or None),
        ("CPU", m.get("cpu_model")),
        ("cores", m.get("cores")),
        ("capbench", m.get("capbench_version")),
        ("commit", commit),
        ("Python", m.get("python")),
        ("command", " ".join(m["command"]) if isinstance(m.get("command"), list) else m.get("command")),
    ]
    if m.get("error"):
        items.append(("error", m["error"]))
    return items


def metadata_groups(run: RunData) -> list[tuple[str, list[tuple[str, Any]]]]:
    """(heading, items): the machine and run, then settings (nested ones flattened), test bed and host sysctls."""
    m = run.meta
    return [("Machine and run", metadata(run))] + [
        (heading, html.flat_items((m.get(key) or {}).items()))
        for heading, key in (("Settings", "settings"), ("Test bed", "testbed"), ("Host sysctls", "sysctls"))
        if isinstance(m.get(key), dict) and m.get(key)]


# Each group of metadata_groups: its key-value pairs per row in report.html; a heading not named here is
# shown folded, under one line (FOLDED_RUN).
RUN_PAIRS = {"Machine and run": 2, "Settings": 4}
FOLDED_RUN = "Test bed and host sysctls"


def run_html(run: RunData) -> str:
    """The Run section: the machine and the settings as tables, the test bed and host sysctls folded."""
    groups = metadata_groups(run)
    shown = [(h, items, RUN_PAIRS[h]) for h, items in groups if h in RUN_PAIRS]
    folded = [(h, items) for h, items in groups if h not in RUN_PAIRS]
    out = html.kv_groups(shown)
    if folded:
        out += (f"<details><summary>{html.esc(' and '.join(h for h, _i in folded))}</summary>"
                f"{html.kv_groups(folded)}</details>")
    return out


def flame_cell(profile: profiles.Profile, flames: dict[str, FlameFile] | None) -> tuple[str, str | None]:
    """A profiled trial's flame graph in a table: (text, the file it links to, or None)."""
    flame = flames.get(profile.folded) if flames is not None and profile.folded else None
    if flame is not None and flame.svg is not None:
        return "flame graph", flame.svg.name
    if flame is not None:
        return f"not drawn: {flame.problem}", None
    return ("no folded stacks recorded" if not profile.folded else "—"), None


PROFILE_TABLE = "Per trial: the receive CPU and the counter"
NO_PROFILE = "No trial of this run was profiled: `capbench run --profile` samples every CPU with perf over each " \
             "trial's load window and says here where the receive CPU's time went."


def profile_html(run: RunData, figures: list[FigureFile], flames: dict[str, FlameFile] | None) -> str:
    """The section of the profiles: how they were sampled, the figure, a row per profiled trial with
    its flame graph, what perf warned of."""
    rows = profiles.rows(run.trials)
    parts = [f"<p>{html.esc(profiles.sampling_text(run.meta, run.trials) if rows else NO_PROFILE)}</p>"]
    parts += [_drawn_html(f) for f in figures if f.section == plots.PROFILE_SECTION and f.skipped is None]
    if rows:
        cells = [flame_cell(r.profile, flames) for r in rows]
        parts.append(html.table_html(html.Table(PROFILE_TABLE, [*profiles.HEADERS, "Flame graph"],
                                                [r.cells + [text] for r, (text, _href) in zip(rows, cells)],
                                                text_columns=profiles.TEXT_COLUMNS,
                                                links=[href for _text, href in cells], wide=True,
                                                notes=tuple(profiles.notes(run.trials)))))
    return "\n".join(parts)


def _drawn_html(f: FigureFile) -> str:
    """A drawn figure without a heading of its own: its title is in the image."""
    assert f.svg is not None
    return (f'<figure class="{"plot wide" if f.wide else "plot"}" id="fig-{html.esc(f.name)}">'
            f'{html.inline_svg(f.svg.read_text(encoding="utf-8"), f.name)}<figcaption>{html.esc(f.caption)}</figcaption>'
            f"</figure>")


def figures_html(figures: list[FigureFile], key_svg: str | None) -> str:
    """The Figures section: the markers' one key, the drawn figures two to a row, and the figures
    this run has no data for in one line."""
    drawn = [f for f in figures if f.section == plots.FIGURES_SECTION and f.skipped is None]
    parts = []
    if drawn and key_svg:
        parts.append(f'<div class="key">{html.inline_svg(key_svg, "markers")}</div>')
    parts.append('<div class="figures">' + "".join(_drawn_html(f) for f in drawn) + "</div>")
    parts.append(html.not_drawn((f.title, f.skipped) for f in figures if f.skipped is not None))
    return "\n".join(parts)


LOWER_BOUNDS_SEEN = ("Rows in grey italics and open circles are lower bounds (the generator fell short of the offered "
                     "load and nothing was lost): they measure this machine's generator, not the capture method at "
                     "that load.")

# A table of a row per measurement with more rows than this is folded under its title in report.html.
FOLD_ROWS = 6


def report_html(run: RunData, figures: list[FigureFile], flames: dict[str, FlameFile] | None = None,
                key_svg: str | None = None) -> str:
    found = answers.run_answers(run)
    best, losses = summary.summary(run.trials, found)
    # The best per frame length (a table where iperf-like trials give it figures in columns) beside
    # where each backend starts to lose and what the starred rows below are
    heading, (best_headers, best_rows) = summary.best_heading(run.trials, found), summary.best_table(run.trials)
    # What a starred row means: the iperf-like tables say it in their footnotes, the sweeps' here; and what
    # the lower bounds (generator short, nothing lost) look like in the tables and the figures
    note = tables.short_note(t.result for t in run.trials
                             if registry.swept(t.method) and not registry.constant_load(t.method))
    bounds = any(tables.is_lower_bound([t.result]) for t in run.trials if registry.swept(t.method))
    note = " ".join(([f"Offered marked {tables.SHORT_MARK} in the sweeps: {note}"] if note else [])
                    + [LOWER_BOUNDS_SEEN] * bounds)
    sides = [html.table_html(html.Table(heading, best_headers, best_rows, text_columns=(1,), kind="summary",
                                        text_last=best_headers[-1] == summary.BEST_HEADERS[-1]))  # the Note
             if best_rows else f"<h3>{html.esc(heading)}</h3>{html.bullet_list(best)}" if best else "",
             (f"<h3>Where each backend starts to lose packets</h3>{html.bullet_list(losses)}" if losses else "")
             + (f'<p class="small">{html.esc(note)}</p>' if note else "")]
    summary_html = f'<div class="side">{"".join(f"<div>{x}</div>" for x in sides if x)}</div>' if any(sides) else ""
    if run.tunes:  # a tune's answer first; the configurations' single searches folded below it
        summary_html = tune_section.section_html(run.tunes) + (tune_section.searches_html(summary_html)
                                                               if summary_html else "")
    if probe := host_probe_line(run):
        summary_html += f'<p class="small">{html.esc(probe)}</p>'  # after a list, not a table: no note's pull-up

    # The searches' answers open; a row per measurement (iperf-like, a sweep's steps) folded where long
    table_html = "\n".join(
        [html.table_html(html.Table(t.title, t.headers, t.rows, t.classes or None, text_last=False,
                                    notes=tuple(t.notes)))
         for t in answer_tables.tables(found) + tables.ranking_tables(run.trials) + tables.answer_ranking_tables(found)]
        + [html.table_html(html.Table(t.title, t.headers, t.rows, t.classes or None, text_last=text_last,
                                      notes=tuple(t.notes), folded=len(t.rows) > FOLD_ROWS))
           for tables_of, text_last in ((tables_md.iperf_tables(run.trials), True),
                                        (tables.sweep_tables(run.trials, found), False))
           for t in tables_of])
    totals = tables_md.loss_totals(run.trials)
    if totals:
        table_html += "\n" + html.table_html(html.Table(
            "Total loss per backend (iperf-like trials measured: lower bounds counted apart)",
            list(tables_md.LOSS_TOTAL_HEADERS), totals, text_last=False))
    bins = tables_md.loss_bins(run.trials)
    if bins:
        table_html += "\n" + html.table_html(html.Table("Groups by frames lost (seed 004's loss bins)",
                                                       list(tables_md.LOSS_BIN_HEADERS), bins))
    if sensors := tables_md.sensors_note(run.trials):
        table_html += f'<p class="note">{html.esc(sensors)}</p>'
    # The answer first: the summary and every figure fill the first two screens; the tables with
    # every figure's numbers, then how the run was made, follow.
    sections = [
        ("Summary", summary_html or "<p>Neither iperf-like trials nor search answers to summarize: see the figures "
                                    "and tables below.</p>"),
        (plots.FIGURES_SECTION, figures_html(figures, key_svg)),
    ]
    if profiles.profiled(run.trials):  # else the figures' line says what --profile would add
        sections.append((plots.PROFILE_SECTION, profile_html(run, figures, flames)))
    sections += [("Tables", table_html), ("Run", run_html(run))]
    return html.page(f"capbench report: {run.name}", sections, run.notes)


def host_probe_line(run: RunData) -> str:
    """The host before the first trial (run.json's host_probe, trial/witness.Probe): its line, or
    why it was not measured; "" for a run that did not probe (older runs, a topology)."""
    found = run.meta.get("host_probe")
    if not isinstance(found, dict):
        return ""
    if isinstance(found.get("line"), str):
        return found["line"]
    return f"host probe: not measured ({found.get('not_measured', 'no reason recorded')})"


def markdown_report(run: RunData, flames: dict[str, FlameFile] | None = None) -> str:
    found = answers.run_answers(run)
    best, losses = summary.summary(run.trials, found)
    parts = [f"# capbench report: {run.name}\n"]
    parts += [f"> {n}\n" for n in run.notes]
    level = "##"
    if run.tunes:  # a tune's answer first; the configurations' single searches below it
        parts.append(tune_section.markdown(run.tunes))
        if best or losses:
            parts.append(f"## {tune_section.SEARCHES_TITLE}\n\n{tune_section.SEARCHES_NOTE}\n")
            level = "###"
    if best:
        parts.append(f"{level} {summary.best_heading(run.trials, found)}\n\n" + "\n".join(f"- {line}" for line in best)
                     + "\n")
    if losses:
        parts.append(f"{level} Where each backend starts to lose packets\n\n" + "\n".join(f"- {x}" for x in losses)
                     + "\n")
    if probe := host_probe_line(run):
        parts.append(f"{probe}\n")
    parts.append("## Tables\n\n" + tables_md.markdown(run.trials, found))
    rows = profiles.rows(run.trials, top=1)
    if rows:
        cells = [flame_cell(r.profile, flames) for r in rows]
        table = tables_md.md_table([*(profiles.HEADERS[i] for i in profiles.COMPACT), "Flame graph"],
                                   [r.compact() + [f"[{text}]({href})" if href else text]
                                    for r, (text, href) in zip(rows, cells)])
        parts.append(f"## {plots.PROFILE_SECTION}\n\n{profiles.sampling_text(run.meta, run.trials)}\n\n{table}\n"
                     + "".join(f"\n{n}\n" for n in profiles.notes(run.trials)))
    return "\n".join(parts)


def write_report(path: Path | str, out: Path | str | None = None) -> Report:
    """Read DIR's result files and write the report into DIR/report/ (or `out`)."""
    run = load_run(path)
    out = Path(out) if out is not None else run.path / REPORT_DIR
    try:
        out.mkdir(parents=True, exist_ok=True)
        text = out / "tables.txt"
        inputs.write_own(text, terminal_tables(run))
        flames = draw_flame_graphs(run, out)
        md = out / "tables.md"
        inputs.write_own(md, markdown_report(run, flames))
        csv = out / "trials.csv"
        inputs.write_own(csv, tables_md.csv_text(run.trials))
        figures = draw_tune_figures(run, out) + draw_figures(run, out)
        kinds = {k for f in figures if f.section == plots.FIGURES_SECTION for k in f.markers}
        key = plots.write_figure(plots.marker_key(kinds), out / "markers.svg") if kinds else None
        page = out / "report.html"
        inputs.write_own(page, report_html(run, figures, flames, key.read_text(encoding="utf-8") if key else None))
    except OSError as e:
        raise UsageError(f"cannot write the report into {out}: {e.strerror}: choose another folder with --out DIR") from None
    return Report(run=run, dir=out, html=page, markdown=md, csv=csv, text=text, figures=figures, flame_graphs=flames)


def outcome_line(report: Report) -> str:
    """One line for the terminal: where the report is and which figures were not drawn, and why."""
    drawn = [f.name for f in report.figures if f.skipped is None]
    missing = [f.name for f in report.figures if f.skipped is not None]
    line = f"report: {report.html} ({len(drawn)} figures: {', '.join(drawn) or 'none'}"
    if missing:
        line += f"; no data in this run for: {', '.join(missing)}"
    return line + ")"
