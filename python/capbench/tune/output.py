"""What `capbench tune` ends with: a table ranked by the goal with its spread, the best
configuration as a ready `capbench run` line and a campaign file, the goal against each knob as a
figure, and the reasons the loss account gives (only where a counter shows the layer).

Everything here reads the tune's measurements (tuning.Tune) after its search; the files go into
the results folder's `tune/`: ranking.txt, best.toml, tune.json and goal-by-knob.{png,svg}.
"""

from __future__ import annotations

import io
import json
import math
import os
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capbench import declared, inputs
from capbench.campaign import matrix as cmod
from capbench.campaign.matrix import Matrix
from capbench.rates import link_name
from capbench.profile import groups as cpu_groups
from capbench.report import plots, profiles
from capbench.report.stats import CPU_LEAST_CHANGE_PTS
from capbench.tune import knobs as knobs_mod
from capbench.tune import search
from capbench.report import tune_summary as record
from capbench.report.tune_figure import figure
from capbench.report.tune_summary import TUNE_DIR, cpu_text, layers_text, verdict_text
from capbench.tune.tuning import Measured, Space, Tune

CONFIRM_REPEAT = 3  # the campaign file's repetitions of the best and the defaults


@dataclass(frozen=True)
class Row:
    """One configuration in the ranking."""

    rank: int
    config: int
    label: str
    rung: int  # the rung its figures are from: the final one for a finalist, else the highest it reached
    values: tuple[float, ...]
    cpu_ns: float | None
    layers: dict[str, float]
    verdict: str  # the best; within noise of it; worse beyond noise; out at a rung
    disturbed: bool
    screening: tuple[float, ...] = ()  # its values at the first rung
    cpu_pct: dict[str, dict[str, float]] = field(default_factory=dict)  # with --profile: merged_cpu
    generator_bound: bool = False  # a value of it is the generator's limit (Measured.generator_bound)


def rows_of(tune: Tune, space: Space) -> list[Row]:
    out = tune.results[space.backend]
    got = tune.measured[space.backend]
    rows = []
    for rank, c in enumerate(out.ranking, start=1):
        rung = out.final_rung if c in out.finalists else out.highest_rung(c)
        ms = [m for (cc, r, _), m in sorted(got.items()) if cc == c and r == rung]
        cpus = [m.cpu_ns for m in ms if m.cpu_ns is not None]
        rows.append(Row(rank, c, knobs_mod.label(space.configs[c]), rung, tuple(m.value for m in ms),
                        statistics.median(cpus) if cpus else None, merged_layers(ms), verdict(out, c),
                        any(m.disturbed for m in ms),
                        tuple(m.value for (cc, r, _), m in sorted(got.items()) if cc == c and r == 0),
                        merged_cpu(ms), any(m.generator_bound for m in ms)))
    return rows


def merged_layers(ms: Sequence[Measured]) -> dict[str, float]:
    """Each layer's median share over the measurements (0 where one did not lose there)."""
    names = dict.fromkeys(name for m in ms for name in m.layers)
    return {n: statistics.median(m.layers.get(n, 0.0) for m in ms) for n in names} if ms else {}


def merged_cpu(ms: Sequence[Measured]) -> dict[str, dict[str, float]]:
    """Where the CPU time went (--profile: Measured.cpu_pct), each role's groups the mean over the
    measurements that profiled it; {} where none did."""
    out = {}
    for role in dict.fromkeys(r for m in ms for r in m.cpu_pct):
        shares = [m.cpu_pct[role] for m in ms if role in m.cpu_pct]
        out[role] = {g: statistics.fmean(x.get(g, 0.0) for x in shares) for g in dict.fromkeys(
            g for x in shares for g in x)}
    return out


def over_limit_text(out: search.Outcome, c: int) -> str:
    """Why `c` cannot be best under --max-app-cpu."""
    return f"app CPU {out.over_limit[c]:.0f} % > --max-app-cpu {out.max_app_cpu_pct:g} %"


def verdict(out: search.Outcome, c: int) -> str:
    if c in out.over_limit:
        return "not eligible: " + over_limit_text(out, c)
    if c == out.best:
        return "best"
    cmp = out.comparisons.get(c)
    if cmp is None:
        rung = out.highest_rung(c)
        return "not in the final race" if rung == out.final_rung else f"out after rung {rung + 1}"
    if cmp.p_value is None:  # Welch's test needs two values of each: one run decides nothing
        return "not judged: fewer than two runs of it or of the best"
    p = f" (p {cmp.p_value:.2g})"
    return f"worse beyond noise{p}" if cmp.significant else f"within noise of the best{p}"


def goal_stat_text(tune: Tune, values: Sequence[float]) -> str:
    return record.goal_text(tune.goal.unit, values)


# The terminal's ranking: the best this many and the defaults; ranking.txt holds every row.
SHOWN_ROWS = 10


def knob_header(space: Space, knob: knobs_mod.Knob) -> str:
    """A knob's column: its name without the backend's, which the title names."""
    return knob.name.removeprefix(f"{space.backend}:")


def knob_cells(space: Space, config: int) -> list[str]:
    """A configuration's value of each knob; the defaults' those each knob names as its default
    ("—": the backend's or test bed's own)."""
    chosen = space.configs[config]
    return [chosen.get(k.name) or k.default or "—" for k in space.knobs]


def table(tune: Tune, space: Space, rows: Sequence[Row], shown: int | None = None) -> Table:
    """The ranking, a column per knob; `shown`: only the best that many and the defaults (the
    caption says how many more there are and where)."""
    lengths = tune.goal.lengths_s
    bound = "its upper bound" if tune.goal.mlr_goal else "the rate"
    t = Table(title=f"capbench tune {space.backend}: {tune.goal.title} per configuration, best first "
                    f"(mean, min–max over repetitions)", box=box.SIMPLE_HEAD, title_justify="left")
    right = ("#", "CPU / packet", "Trials of")
    for h in ("#", *(knob_header(space, k) for k in space.knobs), tune.goal.title, "Trials of", "CPU / packet",
              f"Loss by layer at {bound}", "Verdict"):
        t.add_column(Text(h), justify="right" if h in right else "left")
    kept = [r for r in rows if shown is None or r.rank <= shown or r.config == search.BASELINE]
    for r in kept:
        t.add_row(str(r.rank), *knob_cells(space, r.config), goal_stat_text(tune, r.values), f"{lengths[r.rung]:g} s",
                  cpu_text(r.cpu_ns), layers_text(r.layers),
                  verdict_text(r.config == search.BASELINE, r.verdict, r.disturbed))
    if len(kept) < len(rows):
        t.caption = f"{len(rows) - len(kept)} more configurations in tune/ranking.txt"
    return t


def final_length(tune: Tune, space: Space) -> float:
    """The trial length the race was run with: the one a run that confirms it should use."""
    return tune.goal.lengths_s[tune.results[space.backend].final_rung]


def run_line(tune: Tune, space: Space, config: int) -> list[str]:
    """The `capbench run` command of one configuration, at the tune's size and goal."""
    c = tune.campaign
    size = tune.base[space.backend].sizes[0]
    words = ["sudo", "capbench", "run", "--backends", space.backend, "--sizes", str(size),
             "--method", tune.goal.method, "--link", link_name(c.link_bps)]
    if tune.goal.mlr_goal:
        words += ["--trial", f"{final_length(tune, space):g}"]
    else:
        words += ["--rate", c.rate, "--duration", f"{final_length(tune, space):g}"]
    pins = tune.base[space.backend].pins
    if pins != Matrix().pins:  # a placement the tune was given
        words += ["--pin", ",".join(pins)]
    if c.engine != cmod.default_of("engine"):  # asked for, or the one the generator's kernel runs (engine_here)
        words += ["--engine", c.engine]
    fixed = backend_args(tune, space)
    if fixed:  # the backend's own options the tune held in every configuration
        words += ["--backend-args", f"{space.backend}={fixed}"]
    for f in apps_files(tune):  # where a program's adapter is the user's
        words += ["--apps-file", f]
    return words + list(tune.run_args) + knobs_mod.run_args(space.configs[config], space.knobs)


def backend_args(tune: Tune, space: Space) -> str:
    """The backend's own options (--backend-args) the tune ran every configuration with; "" for none."""
    return dict(tune.base[space.backend].backend_args).get(space.backend, "")


def apps_files(tune: Tune) -> list[str]:
    """The tune's adapter files (--apps-file), absolute: its lines and files work from anywhere."""
    return [os.path.abspath(f) for f in tune.campaign.apps_files]


def program_command(tune: Tune, space: Space, config: int) -> str | None:
    """A capture program's command template with the configuration's knob values filled in (the
    others at their defaults), its run fields left for capbench ({iface}, {out}): what `capbench run
    --app NAME=...` takes, or the line to run by hand. None for a capbench-cap backend."""
    app = tune.campaign.program(space.backend)
    if app is None:
        return None
    values = cmod.program_knob_values(space.configs[config].items(), space.backend)
    return app.with_knob_values(values).filled_command()


def campaign_key(knob: knobs_mod.Knob) -> str:
    """The campaign key of a run knob: its `capbench run` flag's name (campaign.matrix keys are)."""
    return knob.flag.lstrip("-").replace("-", "_")


def matrix_toml(space: Space, config: int) -> list[str]:
    """A matrix of one configuration: a run knob as its own key, a backend's (or a program's) knobs
    as a `vary` of one value each, as run_line sets them, so that its trials record the knobs as
    the tune's did and `capbench compare` matches the two."""
    lines = ["", "[[matrix]]", f"# {knobs_mod.label(space.configs[config])}"]
    vary = []
    by_name = {k.name: k for k in space.knobs}
    for name, value in space.configs[config].items():
        k = by_name[name]
        if k.scope == "run":
            lines.append(f"{campaign_key(k)} = [{json.dumps(value)}]")
        else:  # a NIC's, a backend's or program's knob, a host setting: as --vary sets it
            vary.append(f"{json.dumps(name)} = [{json.dumps(value)}]")
    if vary:
        lines.append(f"vary = {{ {', '.join(vary)} }}")
    return lines


def campaign_toml(tune: Tune, space: Space, best: int) -> str:
    """A campaign of the best configuration and the defaults, CONFIRM_REPEAT times each: the run
    that confirms the tune's answer (`capbench run --campaign best.toml`)."""
    c = tune.campaign
    head = ["# Written by capbench tune: its best configuration and the defaults, to confirm the answer.",
            "[campaign]", f"name = {json.dumps('tune-' + space.backend)}",
            f"methods = [{json.dumps(tune.goal.method)}]", f"backends = [{json.dumps(space.backend)}]",
            f"sizes = {json.dumps(str(tune.base[space.backend].sizes[0]))}", f"link = {json.dumps(link_name(c.link_bps))}",
            f"repeat = {CONFIRM_REPEAT}"]
    pins = tune.base[space.backend].pins
    if pins != Matrix().pins:
        head.append(f"pin = {json.dumps(list(pins))}")
    if c.engine != cmod.default_of("engine"):
        head.append(f"engine = {json.dumps(c.engine)}")
    if apps_files(tune):
        head.append(f"apps_files = {json.dumps(apps_files(tune))}")
    if backend_args(tune, space):
        head.append(f"backend_args = {{ {json.dumps(space.backend)} = {json.dumps(backend_args(tune, space))} }}")
    if tune.goal.mlr_goal:
        head.append(f"trial = \"{final_length(tune, space):g}s\"")
    else:
        head += [f"rate = {json.dumps(c.rate)}", f"duration = \"{final_length(tune, space):g}s\""]
    body = matrix_toml(space, best) + (matrix_toml(space, search.BASELINE) if best != search.BASELINE else [])
    return "\n".join(head + body) + "\n"


def reasons(tune: Tune, space: Space, rows: Sequence[Row]) -> list[str]:
    """What the account says the best configuration changed: for each layer where the defaults
    lost (a counter shows it) and a knob of the best governs, what it lost there at the defaults
    and with the best."""
    by_config = {r.config: r for r in rows}
    best, base = by_config[rows[0].config], by_config.get(search.BASELINE)
    bound = generator_reason(tune, best)
    if base is None or best.config == search.BASELINE:
        return bound
    where = " (at each one's upper bound)" if tune.goal.mlr_goal else f" (at {tune.campaign.rate})"
    out = []
    config = space.configs[best.config]
    for k in space.knobs:
        if config.get(k.name, k.default) == k.default:  # the best runs it as the defaults do
            continue
        for layer in k.governs:
            before, after = base.layers.get(layer, 0.0), best.layers.get(layer, 0.0)
            if before > 0 and after < before:
                done = "removed it" if after == 0 else f"brought it to {after:.2g} %"
                out.append(f"the {layer} lost {before:.2g} % at the defaults; {k.name} {config[k.name]} {done}{where}")
    return bound + out + cpu_reasons(tune, base, best)


def generator_reason(tune: Tune, best: Row) -> list[str]:
    """Where the generator, not the capture, bounded the best's answers: what its goal is then."""
    if not best.generator_bound:
        return []
    return [f"the generator bounded the best's {tune.goal.title} (it fell short of the loads above it, losing "
            f"nothing: engine {tune.campaign.engine}): its values are lower bounds of the capture's, and the "
            f"configurations that kept up with the generator rank by the host's noise, not by the capture"]


# How the reasons name a profile's roles (profile.analysis: the counter's processes, the receive CPU).
ROLE_WORDS = {profiles.COUNTER: ("the counter", "of its CPU time"), profiles.RECEIVE: ("the receive CPU", "of its time")}


def cpu_reasons(tune: Tune, base: Row, best: Row) -> list[str]:
    """With --profile: for the counter and the receive CPU, the group of work (groups.toml) whose
    share of their time changed most from the defaults to the best, where both were profiled and
    it changed by more than CPU_LEAST_CHANGE_PTS points (a profile's shares move that much by
    sampling alone): only what the profiles measured."""
    where = " (at each one's value)" if tune.goal.mlr_goal else f" (at {tune.campaign.rate})"
    out = []
    table = cpu_groups.table()
    for role, (who, of) in ROLE_WORDS.items():
        before, after = base.cpu_pct.get(role), best.cpu_pct.get(role)
        if not before or not after:
            continue
        changes = [(abs(after.get(g, 0.0) - before.get(g, 0.0)), g) for g in table.busy_names()]
        moved, group = max(changes, default=(0.0, ""))
        if moved <= CPU_LEAST_CHANGE_PTS:
            continue
        out.append(f"{who} spent {before.get(group, 0.0):.0f} % {of} in {table.label(group)} at the defaults, "
                   f"{after.get(group, 0.0):.0f} % with {best.label}{where}")
    return out


def best_text(tune: Tune, space: Space, rows: Sequence[Row]) -> str:
    out = tune.results[space.backend]
    best = rows[0]
    text = f"best of {space.backend}: {best.label}, {tune.goal.title} {goal_stat_text(tune, best.values)}"
    if best.config in out.over_limit:  # every configuration is over the CPU limit
        text += f" (no configuration is eligible; this one's {over_limit_text(out, best.config)})"
    if best.config == search.BASELINE:
        return text + ": no configuration beat the defaults beyond the noise"
    base = next((r for r in rows if r.config == search.BASELINE), None)
    if base is None or base.rung != best.rung:
        return text
    p = search.welch(out.values(best.config), out.values(search.BASELINE))
    if p is None:
        return text + "; the defaults were not repeated, so the difference is not judged"
    than = f"the defaults' {goal_stat_text(tune, base.values)}"
    return text + (f": better than {than} beyond the noise ({search.SIGNIFICANCE}, p {p:.2g})" if p < search.SIGNIFICANCE_LEVEL
                   else f": within noise of {than} (p {p:.2g})")


def unscreened_text(tune: Tune, space: Space) -> str:
    """The line on the configurations the first rung did not reach (search.Outcome.unscreened)."""
    out = tune.results[space.backend]
    n = len(out.unscreened)
    return (f"not measured: {n} of {len(space.configs)} configurations. The first rung's measurements cost "
            f"{out.screen_scale:.1f}x the methods' estimates (reruns of trials the host disturbed, longer searches), "
            f"and the budget would not have covered them: give a larger --budget, or narrow the space with --knobs "
            f"or --candidates (tune/tune.json lists them)")


def answered(values: Sequence[float]) -> tuple[float, ...]:
    """The values of the measurements that gave an answer (NaN: none; JSON has no NaN)."""
    return tuple(v for v in values if not math.isnan(v))


def summary_of(tune: Tune, space: Space, rows: Sequence[Row]) -> record.TuneSummary:
    """What the tune found for `space`'s backend, as tune/tune.json holds it."""
    out = tune.results[space.backend]
    lengths = tune.goal.lengths_s
    return record.TuneSummary(
        schema=record.TUNE_SCHEMA, backend=space.backend, goal=tune.goal.name, goal_title=tune.goal.title,
        unit=tune.goal.unit, size=str(tune.base[space.backend].sizes[0]),
        knobs=tuple(record.KnobAxis(k.name, k.default, tuple(k.candidates)) for k in space.knobs),
        first_trial_s=lengths[0], final_trial_s=lengths[out.final_rung], spent_s=out.spent_s,
        best_line=best_text(tune, space, rows),
        ranking=tuple(record.Ranked(
            rank=r.rank, index=r.config, config=dict(space.configs[r.config]), label=r.label, trial_s=lengths[r.rung],
            values=answered(r.values), screening_values=answered(r.screening), finalist=r.config in out.finalists,
            cpu_ns=r.cpu_ns, layers_pct=r.layers, verdict=r.verdict, disturbed=r.disturbed, cpu_groups_pct=r.cpu_pct)
            for r in rows),
        run=tuple(run_line(tune, space, rows[0].config)), defaults_run=tuple(run_line(tune, space, search.BASELINE)),
        reasons=tuple(reasons(tune, space, rows)),
        unscreened=tuple(record.Unscreened(c, dict(space.configs[c]), knobs_mod.label(space.configs[c]))
                         for c in out.unscreened),
        command=program_command(tune, space, rows[0].config) or "")


def finish(tune: Tune, path: Path, console: Console) -> None:
    """Print each backend's ranking, its best and why; write them into `path`/tune/."""
    folder = path / TUNE_DIR
    folder.mkdir(exist_ok=True)
    texts, summaries = [], []
    for space in tune.spaces:
        if space.backend not in tune.results:
            continue
        rows = rows_of(tune, space)
        console.print(table(tune, space, rows, SHOWN_ROWS))
        plain = Console(record=True, width=160, file=io.StringIO())
        plain.print(table(tune, space, rows))
        summary = summary_of(tune, space, rows)
        lines = [summary.best_line, *(f"  {x}" for x in summary.reasons),
                 *([unscreened_text(tune, space)] if tune.results[space.backend].unscreened else []),
                 "run it: " + shlex.join(summary.run)]
        if summary.command:
            lines.append(f"{space.backend}'s command with it: {summary.command}")
        toml = folder / f"best-{space.backend}.toml"
        inputs.write_own(toml, campaign_toml(tune, space, rows[0].config))
        lines.append(f"confirm it against the defaults: sudo capbench run --campaign {toml}")
        fig = figure(summary)
        if fig is not None:
            png, _ = plots.save(fig, folder / f"goal-by-knob-{space.backend}")
            lines.append(f"figure: {png}")
        for line in lines:
            console.print(Text(line))
        texts.append(plain.export_text() + "\n".join(lines) + "\n")
        summaries.append(summary)
    inputs.write_own(folder / "ranking.txt", "\n".join(texts))
    inputs.write_own(folder / record.TUNE_FILE, record.to_json(summaries))
