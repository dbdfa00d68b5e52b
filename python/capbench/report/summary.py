"""The report's summary in sentences: the best backend per frame length, where each starts to lose.

From iperf-like trials when the run has them, each judged by the one rule of
capbench.methods.verdict: a trial that lost frames counts as lossy whether or not its
generator held the offered load; one whose generator fell short and that lost nothing
is a lower bound, named as not measured, never as loss nor as a result. Where nothing
at a frame length (or of a backend) was measured, the line says what to do instead
(`verdict.way_forward`: a lower --rate, --method rfc2544, --rx-mode, a quieter
machine). From the searches' answers otherwise (RFC 2544 throughput, else MLR's
NDR, else a sweep's highest lossless rate); the first loss point of every search and
sweep is named either way. An answer that the generator bounded (it could not hold the
next rate, see capbench.methods.measurer) is "generator-bound (a lower bound)", never a
capture limit, wherever it is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from capbench.methods import registry
from capbench.methods.verdict import generator_short, measured, way_forward
from capbench.rates import wire_bps
from capbench.report.answers import (GENERATOR_BOUND, Answer, AnswerGroup, answers_of, group_answers, main_metric,
                                     metric, rate_of)
from capbench.report.keys import series_labels
from capbench.report.load import Trial
from capbench.report.stats import (FirstLoss, Group, best_per_size, cpu_load, first_loss, iperf_groups, load_text,
                                   loss_text, same_capture, sent_pps, stat_of, sweep_lines)


def _figures(g: Group) -> str:
    rx, gbps = g.stat("rx_pps"), g.stat("rx_gbps")
    app, kernel = g.stat("app_cpu_pct"), g.stat("kernel_cpu_pct")
    reps = f", median of {rx.n}" if rx.n > 1 else ""
    return (f"{rx.median:,.0f} pps ({gbps.median:.3f} Gbps), loss {loss_text(g.stat('loss_pct'))}, "
            f"app / kernel load {app.median:.1f} / {load_text(kernel)} %{reps}")


def _sizes(sizes) -> str:
    return ", ".join(str(s) for s in sorted(sizes)) + " B"


def _tie_text(tied: list[Group], best: Group, labels: dict) -> str:
    """The tie in words, "X captured as much, with more CPU; Y captured as much, with less CPU":
    more or less CPU (app + kernel load) only where the figures say so."""
    parts: dict[str, list[str]] = {}
    for g in tied:
        diff = round(cpu_load(g) - cpu_load(best), 1)
        how = ", with more CPU" if diff > 0 else ", with less CPU" if diff < 0 else ""
        parts.setdefault(how, []).append(labels[g.series])
    order = (", with more CPU", "", ", with less CPU")
    return "; ".join(f"{', '.join(sorted(parts[how]))} captured as much{how}" for how in order if how in parts)


LOWER_BOUNDS = "the generator fell short of the offered load and nothing was lost (lower bounds, not results)"


def advice_line(trials: Iterable[Trial]) -> str:
    """What to do about the run's lower bounds (verdict.way_forward), said once after the lines that
    name them; "" when none."""
    steps = way_forward(t.result for t in trials)
    return f"To measure the lower bounds: {'; '.join(steps)}." if steps else ""


def _sent_text(g: Group) -> str:
    """", the generator sent M of the N pps offered" for a group whose measured trials were all
    short of the offered load (their loss is capture loss at the rate sent); "" otherwise."""
    rs = [t.result for t in g.used]
    if not rs or not all(generator_short(r) for r in rs) or rs[0].offered_pps is None:
        return ""
    return f", the generator sent {sent_pps(g):,.0f} of the {rs[0].offered_pps:,.0f} pps offered"


@dataclass(frozen=True)
class BestAt:
    """The best backend at one frame length, in parts: a sentence of best_lines, a row of best_rows."""

    size: int
    best: Group | None  # None: no valid result at this length (`none` says why)
    label: str  # the best's series
    alone: str = ""  # "the only backend measured"
    tie: str = ""  # who captured as much (_tie_text)
    short: str = ""  # the backends that were lower bounds at this length
    none: str = ""
    short_names: tuple[str, ...] = ()  # those backends, for the table's short Note


# The table's Note says a lower bound in a few words: the lines on where each backend starts to lose
# (the terminal) and the note under the table (the report) say once what a lower bound is.
NONE_CELL = "no valid result: lower bounds only"


def best_at(groups: list[Group]) -> list[BestAt]:
    labels = series_labels(g.series for g in groups)
    out = []
    for size, best in best_per_size(groups):
        at_size = [g for g in groups if g.frame_len == size]
        short = sorted({labels[g.series] for g in at_size if g.short})
        short_text = (f"generator short of the offered load for {', '.join(short)}, nothing lost: a lower bound, "
                      f"not a result" if short else "")
        if best is None:
            out.append(BestAt(size, None, "", none=f"no valid result — for every backend {LOWER_BOUNDS}"))
            continue
        others = [g for g in at_size if not g.short and g is not best]
        tied = [g for g in others if same_capture(g, best)]
        out.append(BestAt(size, best, labels[best.series],
                          "the only backend measured" if not others and len(labels) > 1 and not short else "",
                          _tie_text(tied, best, labels) if tied else "", short_text, short_names=tuple(short)))
    return out


def _in_parens(text: str) -> str:
    return f" ({text})" if text else ""


def best_lines(groups: list[Group]) -> list[str]:
    return [f"{b.size} B: {b.none}." if b.best is None else
            f"{b.size} B: {b.label}{_in_parens(b.alone)} — {_figures(b.best)}{_sent_text(b.best)}{_in_parens(b.tie)}"
            f"{_in_parens(b.short)}." for b in best_at(groups)]


BEST_HEADERS = ("Frame [B]", "Best", "Captured [pps / Gbps]", "Loss", "Trials", "App / kernel load [%]",
                "Sent of offered [pps]", "Note")


def trials_cell(g: Group) -> str:
    """The Trials column: how many trials the row rests on, how many of them lost, how many the
    host disturbed ("1": measured once)."""
    n = len(g.used)
    parts = [f"{g.lossy_reps} lossy"] if n > 1 and g.lossy_reps else []
    if g.disturbed:
        parts.append(f"{g.disturbed} disturbed")
    return f"{n}" + (f" ({', '.join(parts)})" if parts else "")


MEASURED_ONCE = ("Each point was measured once: a loss there may be the host's as well as the capture's "
                 "(--repeat 3 shows which loss repeats).")


def measured_once_note(groups: Sequence[Group]) -> str:
    """One line under the best table and the loss lines when every point rests on one trial."""
    return MEASURED_ONCE if groups and all(g.once for g in groups if not g.short) else ""


def _short_cell(names: Sequence[str]) -> str:
    return f"lower bound for {', '.join(names)}" if names else ""


def best_rows(groups: list[Group]) -> list[list[str]]:
    """best_lines as the rows of a table (BEST_HEADERS): the figures in columns, the rest in the Note."""
    rows = []
    for b in best_at(groups):
        g = b.best
        if g is None:
            rows.append([str(b.size), "—", "—", "—", "—", "—", "—", NONE_CELL])
            continue
        rx, app, kernel = g.stat("rx_pps"), g.stat("app_cpu_pct"), g.stat("kernel_cpu_pct")
        offered = g.used[0].result.offered_pps if g.used else None
        reps = f"median of {rx.n}" if rx.n > 1 else ""
        rows.append([str(b.size), b.label, f"{rx.median:,.0f} / {g.stat('rx_gbps').median:.3f}",
                     loss_text(g.stat("loss_pct")), trials_cell(g), f"{app.median:.1f} / {load_text(kernel)}",
                     f"{sent_pps(g):,.0f}" + (f" of {offered:,.0f}" if offered is not None else ""),
                     "; ".join(x for x in (b.alone, reps, b.tie, _short_cell(b.short_names)) if x)])
    return rows


def _evidence(g: Group) -> str:
    """How sure a point is (issue 28): "measured once", or in how many repetitions it lost; and
    whether the host disturbed the trials it rests on."""
    n = len(g.used)
    text = "measured once" if g.once else f"lost in {g.lossy_reps} of {n} repetitions"
    if g.disturbed:
        text += f", host disturbed {'it' if g.once else f'{g.disturbed} of them'}"
    return text


def _unrepeated_text(fl: FirstLoss) -> str:
    if not fl.unrepeated:
        return ""
    return ("; loss that did not repeat (not counted) at " + ", ".join(
        f"{g.frame_len} B ({loss_text(g.stat('loss_pct'))}, {_evidence(g)})" for g in fl.unrepeated))


def _loss_line(fl: FirstLoss, label: str) -> str:
    short = (f"; a lower bound at {_sizes(fl.short)} (generator short of the offered load, nothing lost)"
             if fl.short else "")
    short += _unrepeated_text(fl)
    if fl.group is None:
        if not fl.lossless:
            return f"{label}: no valid result — at every frame length {LOWER_BOUNDS}."
        return f"{label}: no loss at {_sizes(fl.lossless)}{short}."
    g = fl.group
    if fl.all_below_lost:
        # "from N B down" only when shorter lengths were measured (and lost too)
        where = f"from {g.frame_len} B down" if len(fl.lossy) > 1 else f"at {g.frame_len} B"
        return (f"{label}: loses packets {where} (loss {loss_text(g.stat('loss_pct'))} at "
                f"{g.frame_len} B, {_evidence(g)}, captured {g.stat('rx_gbps').median:.3f} Gbps){short}.")
    # Not every shorter frame lost: name the lengths that did, and those that did not.
    lossy = ", ".join(f"{x.frame_len} B ({loss_text(x.stat('loss_pct'))}, {_evidence(x)})" for x in fl.lossy)
    return f"{label}: loses packets at {lossy}; no loss at {_sizes(fl.lossless)}{short}."


def first_loss_lines(groups: list[Group]) -> list[str]:
    labels = series_labels(g.series for g in groups)
    return [_loss_line(fl, labels[fl.series]) for fl in first_loss(groups)]


def sweep_loss_lines(trials: list[Trial]) -> list[str]:
    """Per iperf-like series measured at several rates and frame length: the lowest rate sent at
    which packets were lost (sweeps of the sweep method are answers: answer_sweep_lines)."""
    lines = {k: v for k, v in sweep_lines(trials).items() if not registry.get(k[0].method).answer_type}
    labels = series_labels(key for key, _size in lines)
    out = []
    for (key, size), groups in lines.items():
        valid = [g for g in groups if not g.short]
        lossy = [g for g in valid if g.any_loss]
        name = f"{labels[key]} {size} B (sweep)"
        if not valid:
            out.append(f"{name}: no valid result — at every offered rate {LOWER_BOUNDS}.")
        elif not lossy:
            out.append(f"{name}: no loss up to {sent_pps(valid[-1]):,.0f} pps.")
        else:
            g = lossy[0]
            out.append(f"{name}: loses packets from {sent_pps(g):,.0f} pps (loss {loss_text(g.stat('loss_pct'))}).")
    return out


# --- from the searches' answers ----------------------------------------------------

# The answers the best backend is judged by, in this order (Method.best_rank).
BEST_FROM = tuple(m.name for m in sorted((m for m in registry.REGISTRY.values() if m.best_rank is not None),
                                         key=lambda m: m.best_rank or 0))


def _title(method: str) -> str:
    return registry.get(method).title


def _best_method(groups: Sequence[AnswerGroup]) -> str | None:
    return next((m for m in BEST_FROM if any(g.method == m and g.stat(main_metric(m, g.metrics()) or "")
                                             for g in groups)), None)


def _reps(s) -> str:
    if s.n < 2:
        return ""
    return f", median of {s.n} ({s.lo:,.0f}–{s.hi:,.0f})" if s.spread else f", {s.n} repetitions alike"


def _at_wire(v: float, g: AnswerGroup) -> bool:
    return v >= g.wire_pps * (1 - 1e-6)


def answer_best_lines(groups: Sequence[AnswerGroup]) -> list[str]:
    """Per frame length, the series whose search answer (median over repetitions) is highest."""
    method = _best_method(groups)
    if method is None:
        return []
    gs = [g for g in groups if g.method == method]
    labels = series_labels(g.series for g in gs)
    out = []
    for size in sorted({g.frame_len for g in gs}):
        at = [(g, s) for g in gs if g.frame_len == size
              and (s := g.stat(main_metric(method, g.metrics()) or "")) is not None]
        name = metric(main_metric(method, at[0][0].metrics()) or "").label if at else _title(method)
        if not at:
            out.append(f"{size} B: no answer — every {_title(method)} search at this length was cut short.")
            continue
        best, bs = max(at, key=lambda gs_: gs_[1].median)
        if bs.median <= 0:
            hosts = "".join(_answer_evidence(g) for g, _s in at[:1])
            out.append(f"{size} B: no backend passed any rate ({name} 0 for all){hosts}.")
            continue
        tol = max(best.precision_pps, 1e-6 * bs.median)
        tied = sorted(labels[g.series] for g, s in at if g is not best and s.median >= bs.median - tol)
        wire = ", the wire rate" if _at_wire(bs.median, best) else ""
        tie = f"; {', '.join(tied)} as high (within the search's precision)" if tied else ""
        metric_name = main_metric(method, best.metrics()) or ""
        bound = _generator_words(best, metric_name)
        bound = f", {bound}" if bound else ""
        # The others whose answer the generator bounded: a lower bound of theirs, not their limit.
        others = sorted(labels[g.series] for g, _s in at
                        if g is not best and g.generator_bound(main_metric(method, g.metrics()) or ""))
        other = (f"; {GENERATOR_BOUND} for {', '.join(others)}: the generator, not the capture, stopped "
                 f"{'its' if len(others) == 1 else 'their'} search" if others else "")
        out.append(f"{size} B: {labels[best.series]} — {name} {bs.median:,.0f} pps "
                   f"({wire_bps(bs.median, size) / 1e9:.3f} Gbps{wire}){_reps(bs)}{bound}{tie}{other}"
                   f"{_answer_evidence(best)}.")
    return out


def _generator_held(g: AnswerGroup, name: str) -> tuple[str, str] | None:
    """For an answer `name` the generator bounded: (" in K of N repetitions" or "", "the generator
    could not hold R pps"); None when the capture bounded it."""
    bound = g.generator_bound(name)
    if not bound:
        return None
    shorts = sorted(set(g.generator_short_pps(name)))
    n = len(g.values(name))
    some = f" in {len(bound)} of {n} repetitions" if len(bound) < n else ""
    held = (f"the generator could not hold {', '.join(f'{x:,.0f}' for x in shorts)} pps" if shorts else
            "the generator could not hold the next rate")
    return some, held


def _generator_words(g: AnswerGroup, name: str) -> str:
    """The words for an answer the generator bounded, "generator-bound (a lower bound): the
    generator could not hold R pps"; "" for one the capture bounded."""
    found = _generator_held(g, name)
    return f"{GENERATOR_BOUND}{found[0]}: {found[1]}" if found else ""


def _lowest_lossy(g: AnswerGroup, name: str) -> list[float]:
    """The lowest rates at which the capture itself lost too much, over the repetitions."""
    return [float(x) for a in g.answers if (x := a.lowest_lossy_pps(name)) is not None]


def _search_point(g: AnswerGroup, name: str) -> str:
    """One frame length of a search's loss line, with how sure it is (_answer_evidence)."""
    return _search_figure(g, name) + _answer_evidence(g)


def _answer_evidence(g: AnswerGroup) -> str:
    """" (host disturbed K of N searches: ...)" for answers that rest on trials the host disturbed."""
    if not g.disturbed:
        return ""
    n = len(g.answers)
    some = "the search" if n == 1 else f"{len(g.disturbed)} of {n} searches"
    return f" (disturbed: the host interfered in {some}: {g.disturbed[0].interference})"


def _search_figure(g: AnswerGroup, name: str) -> str:
    s = g.stat(name)
    size = g.frame_len
    if s is None:
        return f"no answer at {size} B (cut short)"
    found = _generator_held(g, name)
    every = found is not None and not found[0]
    if s.median <= 0:
        if found and every:
            return f"{GENERATOR_BOUND} at {size} B: {found[1]}, the lowest rate tried; no rate measured the capture"
        return f"loses packets at every rate tried at {size} B"
    if _at_wire(s.median, g):
        return f"no loss up to the wire rate at {size} B"
    reps = f"; median of {s.n}" if s.n > 1 else ""
    figure = f"{s.median:,.0f} pps ({wire_bps(s.median, size) / 1e9:.3f} Gbps{reps})"
    lossy = _lowest_lossy(g, name)
    if found and every:
        # Not a capture limit: the search stopped where the generator fell short.
        text = f"{GENERATOR_BOUND} at {size} B: {figure} passed, {found[1]}"
        if lossy:
            text += f"; the capture lost frames at {stat_of(lossy).median:,.0f} pps"
        return text
    text = f"lossless up to {figure} at {size} B"
    if lossy and registry.get(g.method).names_lowest_lossy:
        text += f", loses at {stat_of(lossy).median:,.0f} pps"
    if found:
        text += f" ({_generator_words(g, name)})"
    return text


def answer_loss_lines(groups: Sequence[AnswerGroup]) -> list[str]:
    """Per series of RFC 2544 or MLR searches (Method.loss_lines): up to which rate it lost nothing,
    per frame length."""
    out = []
    for method in (m.name for m in registry.REGISTRY.values() if m.loss_lines):
        gs = [g for g in groups if g.method == method]
        labels = series_labels(g.series for g in gs)
        by: dict = {}
        for g in gs:
            by.setdefault(g.series, []).append(g)
        for series, sgs in by.items():
            name = main_metric(method, sgs[0].metrics())
            if name is None:
                out.append(f"{labels[series]} ({method}): no answer recorded.")
                continue
            what = registry.get(method).loss_label or metric(name).label
            points = [_search_point(g, name) for g in sorted(sgs, key=lambda g: g.frame_len)]
            out.append(f"{labels[series]} ({what}): {'; '.join(points)}.")
    return out


def answer_sweep_lines(groups: Sequence[AnswerGroup]) -> list[str]:
    """Per sweep (series and frame length): the lowest offered rate at which packets were lost."""
    gs = [g for g in groups if registry.swept(g.method) and registry.get(g.method).answer_type]
    labels = series_labels(g.series for g in gs)
    out = []
    for g in gs:
        name = f"{labels[g.series]} {g.frame_len} B (sweep)"
        metric_name = main_metric(g.method, g.metrics()) or ""
        s = g.stat(metric_name)
        firsts = [float(x) for x in g.info_values("first_lossy_pps")]
        found = _generator_held(g, metric_name)
        if s is None:
            out.append(f"{name}: no answer — the sweep was cut short before a loss.")
        elif not firsts and found:
            n = f" (n={s.n})" if s.n > 1 else ""
            out.append(f"{name}: {GENERATOR_BOUND}{found[0]}: no loss up to {s.median:,.0f} pps{n}, {found[1]}.")
        elif not firsts:
            out.append(f"{name}: no loss up to {s.median:,.0f} pps" + (f" (n={s.n})." if s.n > 1 else "."))
        else:
            first = stat_of(firsts)
            at = [t for a in g.answers for t in a.trials
                  if a.info.get("first_lossy_pps") is not None
                  and abs(rate_of(t) - float(a.info["first_lossy_pps"])) <= 1e-6 * rate_of(t)]
            loss = f" (loss {loss_text(stat_of(t.result.loss_pct for t in at))})" if at else ""
            reps = (f", median of {first.n} ({first.lo:,.0f}–{first.hi:,.0f})" if first.spread else
                    f", {first.n} repetitions alike" if first.n > 1 else "")
            nolost = len(g.answers) - len(firsts)
            more = f"; {nolost} of {len(g.answers)} repetitions lost nothing" if nolost else ""
            shorts = sorted({float(x) for xs in g.info_values("short_steps_pps") for x in xs if float(x) < first.hi})
            below = (f"; the generator could not hold {', '.join(f'{x:,.0f}' for x in shorts)} pps (not measured)"
                     if shorts else "")
            out.append(f"{name}: loses packets from {first.median:,.0f} pps{loss}{reps}{more}{below}.")
    return out


def best_table(trials: list[Trial]) -> tuple[list[str], list[list[str]]]:
    """The best backend per frame length as (headers, rows) of BEST_HEADERS, from iperf-like trials (no
    rows without), the Note left out where no row has one."""
    groups = list(iperf_groups(trials).values())
    rows = best_rows(groups) if groups else []
    if any(row[-1] for row in rows):
        return list(BEST_HEADERS), rows
    return list(BEST_HEADERS[:-1]), [row[:-1] for row in rows]


def best_heading(trials: list[Trial], answers: Sequence[Answer] | None = None) -> str:
    if any(registry.constant_load(t.method) for t in trials):
        return "Best backend per frame length"
    groups = list(group_answers(answers if answers is not None else answers_of(trials)).values())
    method = _best_method(groups)
    return f"Best backend per frame length ({_title(method)})" if method else "Best backend per frame length"


def summary(trials: list[Trial], answers: Sequence[Answer] | None = None) -> tuple[list[str], list[str]]:
    """(best backend per frame length, first loss point per backend): from the iperf-like
    trials when there are any, else from the searches' answers (RFC 2544 throughput, MLR NDR,
    a sweep's highest lossless rate); the losses of iperf-like series, searches and sweeps."""
    groups = list(iperf_groups(trials).values())
    found = list(answers) if answers is not None else answers_of(trials)
    agroups = list(group_answers(found).values())
    best = best_lines(groups) if groups else answer_best_lines(agroups)
    losses = first_loss_lines(groups) if groups else []
    # What to do about lower bounds, once: those of iperf-like rows, and searches that measured no rate.
    unmeasured = [t for g in groups for t in g.trials] + [t for g in agroups for a in g.answers
                                                          if not any(measured(t.result) for t in a.trials)
                                                          for t in a.trials]
    notes = [x for x in (measured_once_note(groups), advice_line(unmeasured)) if x]
    return best, (losses + answer_loss_lines(agroups) + answer_sweep_lines(agroups) + sweep_loss_lines(trials)
                  + notes)
