"""Terminal tables in the seeds' shapes, drawn from trial records (and the method answers of
searches.jsonl, when given):

- iperf-like (seed 000's Table 1): one table per backend and setting, a row per frame
  length, built from the iperf trials only; the repetitions of a step are one row, each
  figure their median (min–max, sd);
- RFC 2544 throughput (seed 000's Tables 4–6): a row per frame length, a column per
  placement (#1 A:A, #2 A:B); MLR's lower bounds and back-to-back bursts alike;
- sweep (seed 003): offered against captured rate and CPU, a row per step.

The trials of one search are never repetitions of each other: a search's answer is the
method's (capbench.report.answers).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capbench.trial import loss_layers
from capbench.trial.accounting import format_pct
from capbench.methods.verdict import (CAPTURE_AT_SENT_RATE, SET_BY_GENERATOR, generator_short, generator_short_text,
                                      measured)
from capbench.methods import registry
from capbench.report import answer_tables, profiles
from capbench.report import answers as answers_mod
from capbench.campaign.matrix import config_text
from capbench.report.keys import (DEFAULTS, AnyTrial, SeriesKey, SettingsKey, as_trial, cpus_used, knobs_of, pin_of,
                                  series_key, series_labels, settings_key, without_knobs)
from capbench.report.load import Trial
from capbench.methods.measurer import superseded
from capbench.report.stats import Stat, decided, load_text, stat_of, sweep_lines
from capbench.trial.measure import INVALID_LOAD_TEXT, TrialResult

# The seed's columns. In the terminal the last header is broken over lines (it is wider
# than its cells); the others stay whole as in the seed's Table 1, and rich wraps them at
# spaces only when a column must shrink to fit the width.
LOST_AT = f"Lost in {loss_layers.RX_RING} / {loss_layers.BACKLOG} / {loss_layers.SOCKET} / {loss_layers.UNEXPLAINED}"
HEADERS = ("Frame [B]", "Offered [pps]", "Sent [pps]", "Captured [pps / Gbps]", "Loss [%]", "App / kernel load [%]",
           LOST_AT)
TERMINAL_HEADERS = HEADERS[:-1] + (LOST_AT.replace(" / ", " /\n", 2),)


# The mark of a row the generator fell short in (verdict.generator_short): on its Offered cell,
# a fact about the generator; its loss is capture loss all the same (verdict.LOSSY).
SHORT_MARK = "*"
# A row whose loss the host's interference could explain (TrialResult.disturbed, trial/witness.py):
# beside its Loss figure; disturbed_note says what it means, each row's line why.
DISTURBED_MARK = "‡"
# Where a row is a lower bound (verdict.LOWER_BOUND: generator short, nothing lost): the
# spread of its Captured cell, as the capture kept up with all it was sent.
LOWER_BOUND_MARK = "lower bound"


def offered_cell(r: TrialResult) -> str:
    """The load asked of the generator (its target, pps); "max" for an unpaced one."""
    return f"{r.offered_pps:,.0f}" if r.offered_pps is not None else "max"


def sent_cell(r: TrialResult) -> str:
    """What the generator really sent per second; `*` when it did not hold the offered load."""
    return f"{r.achieved_pps:,.0f}" + (SHORT_MARK if generator_short(r) else "")


def loss_places(r: TrialResult) -> str:
    """Where the lost packets went: rx ring / backlog / socket / unexplained ("—" when none lost).

    Frames lost between sender and receiver that no ring counter holds follow the ring's, marked
    "link". The capture program's own layers (its declared rows) stand in the socket's place:
    the socket's unmarked, any other marked with its tag (LAYER_TAGS: the AF_XDP rings' "xsk"; a
    layer without one, by its name). Frames the socket queued that the counter never read follow,
    marked "app"."""
    if r.lost == 0 and r.unexplained == 0 and r.link_drops == 0:
        return "—"
    ring = f"{loss_layers.ring_drops(r):,}"
    if loss_layers.link_only_drops(r):
        ring += f" + {loss_layers.link_only_drops(r):,} {loss_layers.LINK}"
    own = loss_layers.own_families(r)
    socket_n = own.pop(loss_layers.SOCKET, 0)
    parts = ([f"{socket_n:,}"] if socket_n or not own else []) + [f"{n:,} {layer_tag(name)}" for name, n in own.items()]
    socket = " + ".join(parts)
    if r.app_drops:
        socket += f" + {r.app_drops:,} app"
    return f"{ring} / {r.backlog_drops:,} / {socket} / {r.unexplained:,}"


# --- one row: a trial, or the repetitions of one measurement -----------------------


def _used(rs: Sequence[TrialResult]) -> list[TrialResult]:
    """The repetitions that count: those the one loss rule measured (verdict.measured: lossless
    or lossy); all of them when every one was a lower bound."""
    return [r for r in rs if measured(r)] or list(rs)


def is_lower_bound(rs: Sequence[TrialResult]) -> bool:
    """Every repetition was a lower bound (generator short, nothing lost): not a capture result."""
    return not any(measured(r) for r in rs)


def _spread(s: Stat, fmt: str, n: bool = False) -> str:
    """"min–max, sd" of repetitions that differ (with n: ", n=N", or "n=N, all equal"); "" for one."""
    if s.spread:
        return f"{format(s.lo, fmt)}–{format(s.hi, fmt)}, sd {format(s.sd, fmt)}" + (f", n={s.n}" if n else "")
    return f"n={s.n}, all equal" if n and s.n > 1 else ""


def _loss_spread(s: Stat) -> str:
    if not s.spread:
        return ""
    return (f"{format_pct(s.lo, exact_zero=s.lo == 0)}–{format_pct(s.hi, exact_zero=s.hi == 0)}, "
            f"sd {format_pct(s.sd, exact_zero=s.sd == 0)}")


def idle_poll_text(rs: Sequence[TrialResult]) -> str:
    """"97.2 % of it idle polling": of a polling counter's ~100 % CPU, the median share its read
    loops spent in polls that found nothing (record.idle_poll_pct); "" where no record says."""
    idle = [r.idle_poll_pct for r in rs if r.idle_poll_pct is not None]
    return f"{statistics.median(idle):.1f} % of it idle polling" if idle else ""


def row_parts(rs: Sequence[TrialResult]) -> list[tuple[str, str]]:
    """(figure, its spread) per column: frame, offered (the target), sent (what the generator
    achieved), captured, loss, app / kernel load, lost per layer; of one trial, or of the repetitions of one measurement: the median, and their
    min–max and sd ("" when there is one repetition, or none differs). A row whose generator
    did not hold the offered load is marked `*` in Sent (SHORT_MARK), and its loss is capture
    loss; a row that is a lower bound (generator short, nothing lost) says so in Captured
    (LOWER_BOUND_MARK); the repetitions that were lower bounds while others were measured are
    left out, and said so. A polling counter's CPU cell says how much of its load was idle
    polling (idle_poll_text)."""
    used = _used(rs)
    mark = SHORT_MARK if any(generator_short(x) for x in used) else ""
    host = DISTURBED_MARK if any(x.disturbed for x in used) else ""
    bound = LOWER_BOUND_MARK if is_lower_bound(rs) else ""
    r = used[0]
    left_out = len(rs) - len(used)
    left = f"{left_out} lower-bound rep{'s' if left_out > 1 else ''} left out" if left_out else ""
    if len(used) == 1:
        return [(r.size_label, ""), (offered_cell(r), ""), (f"{r.achieved_pps:,.0f}{mark}", left),
                (f"{r.rx_pps:,.0f} / {r.rx_gbps:.3f}", bound),
                (format_pct(r.loss_pct, exact_zero=(r.lost == 0)) + host, ""),
                (f"{r.app_cpu_pct:.1f} / {load_text(stat_of([r.kernel_cpu_pct]))}", idle_poll_text(used)),
                (loss_places(r), "")]
    rx, loss = stat_of(x.rx_pps for x in used), stat_of(x.loss_pct for x in used)
    app, kernel = stat_of(x.app_cpu_pct for x in used), stat_of(x.kernel_cpu_pct for x in used)
    cpu_spread = f"{_spread(app, '.1f') or 'all equal'} / {_spread(kernel, '.1f') or 'all equal'}" \
        if app.spread or kernel.spread else ""
    cpu_spread = "; ".join(x for x in (cpu_spread, idle_poll_text(used)) if x)
    places, which = "—", ""
    if any(loss_places(x) != "—" for x in used):  # the account of the repetition with the median loss
        mid = sorted(used, key=lambda x: x.loss_pct)[(len(used) - 1) // 2]
        places = loss_places(mid)
        which = f"rep {mid.repeat}, median loss" if len({x.repeat for x in used}) == len(used) else "median loss"
    rx_spread = ", ".join(x for x in (bound, _spread(rx, ",.0f", n=True)) if x)
    return [(r.size_label, ""), (offered_cell(r), ""),
            (f"{statistics.median(x.achieved_pps for x in used):,.0f}{mark}", left),
            (f"{rx.median:,.0f} / {statistics.median(x.rx_gbps for x in used):.3f}", rx_spread),
            (format_pct(loss.median, exact_zero=loss.exact_zero) + host, _loss_spread(loss)),
            (f"{app.median:.1f} / {load_text(kernel)}", cpu_spread), (places, which)]


def row_cells(rs: Sequence[TrialResult], sep: str = " ") -> list[str]:
    """row_parts as text: "figure (spread)"; the terminal puts the spread on a line of its own."""
    return [f"{main}{sep}({spread})" if spread else main for main, spread in row_parts(rs)]


def row_class(rs: Sequence[TrialResult]) -> str:
    """How a row reads at a glance: short (a lower bound, not a capture result), unexplained,
    lossy, or plain."""
    if is_lower_bound(rs):
        return "short"
    used = _used(rs)
    if any(r.unexplained for r in used):
        return "unexplained"
    return "lossy" if any(r.lost for r in used) else ""


ROW_STYLES = {"short": "dim", "unexplained": "red", "lossy": "yellow", "": None}


# --- iperf-like tables -------------------------------------------------------------


def repetitions(trials: Iterable[AnyTrial]) -> dict[SettingsKey, list[TrialResult]]:
    """iperf-like trials grouped by measurement (report.keys), repetitions together, in order of the first."""
    groups: dict[SettingsKey, list[TrialResult]] = {}
    for t in decided(as_trial(t) for t in trials):  # a run the host spoiled and that ran again is none
        groups.setdefault(settings_key(t), []).append(t.result)
    return groups


def repeated_rates(trials: Iterable[TrialResult], outcomes: Iterable[dict[str, Any]] = ()
                   ) -> list[tuple[str, list[float]]]:
    """(what, value of each repetition) for the measurements that were repeated: the captured
    pps of an iperf step run with several `repeat`s, and the answer of a search step run
    several times (RFC 2544 throughput, MLR NDR, a sweep's highest lossless rate). The trials
    of one search are not repetitions."""
    trials = list(trials)
    out = []
    steps = repetitions(r for r in trials if registry.constant_load(r.method) and r.step and measured(r))
    for rs in steps.values():
        if len({x.repeat for x in rs}) > 1:
            r = rs[0]
            out.append((f"{r.method} {r.backend} {r.size_label} B ({pin_of(r)})", [x.rx_pps for x in rs]))
    for g in answers_mod.group_answers(answers_mod.results_answers(trials, outcomes)).values():
        name = answers_mod.main_metric(g.method, g.metrics())
        values = g.values(name) if name else []
        if len({a.repeat for a in g.answers}) > 1 and len(values) > 1:
            out.append((f"{g.method} {g.series.backend} {g.frame_len} B ({g.pin}) "
                        f"{answers_mod.metric(name).label}", values))
    return out


def _table(title: str, headers: Sequence[str]) -> Table:
    # at least as wide as its title (up to 120 columns), which would otherwise wrap over a narrow table
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", min_width=min(len(title), 120))
    for i, header in enumerate(headers):
        # Text: "[pps]" is not markup; cells wrap at spaces and never lose their end to an ellipsis
        table.add_column(Text(header), justify="right", overflow="fold", no_wrap=i == 0)
    return table


def backend_table(title: str, trials: list[AnyTrial]) -> Table:
    # "Offered" is the target asked of the generator, "Sent" what it achieved (its own count over
    # its sending time, the seed's tables' generator rate): a shortfall shows beside the target.
    table = _table(f"Iperf-like capture throughput: {title}", TERMINAL_HEADERS)
    for rs in repetitions(trials).values():
        table.add_row(*(Text(c) for c in row_cells(rs, sep="\n")), style=ROW_STYLES[row_class(rs)])
    return table


def series_title(key: SeriesKey, trials: Iterable[AnyTrial]) -> str:
    """A table's settings: backend, link, placement with the CPUs the capture really used
    where they differ from it, engine, app load and every other setting off its default."""
    return f"{key.backend} ({key.title(cpus_used(trials))})"


def group_by_series(trials: Iterable[AnyTrial]) -> dict[SeriesKey, list[Trial]]:
    """Trials by table (one series of report.keys), in the order they ran."""
    groups: dict[SeriesKey, list[Trial]] = {}
    for t in trials:
        t = as_trial(t)
        groups.setdefault(series_key(t), []).append(t)
    return groups


# --- the settings of a --vary, ranked -------------------------------------------------------

RANK_HEADERS = ("#", "Knobs", "Loss [%]", "Captured [pps]", "Reps")
WITHIN_SPREAD_MARK = "≈"  # a setting whose loss range reaches the best's: not told apart from it


def _loss_median(rs: Sequence[TrialResult]) -> tuple[float, float]:
    """How settings rank: the median loss of the repetitions that count, then the most captured."""
    used = _used(rs)
    return stat_of(r.loss_pct for r in used).median, -stat_of(r.rx_pps for r in used).median


def ranking_tables(trials: Iterable[AnyTrial]) -> list[answers_mod.AnswerTable]:
    """Per measurement that several knob settings of one run share (backend, frame length, rate
    and every setting but the knobs'), the settings ranked by median loss, then captured rate,
    with the spread of their repetitions; a setting whose loss range reaches the best's is marked
    WITHIN_SPREAD_MARK: the repetitions do not tell it from the best."""
    groups: dict[tuple, dict[str, list[TrialResult]]] = {}
    used = [t for t in decided(as_trial(t) for t in trials) if registry.constant_load(t.method)]
    names = {n for t in used for n in knobs_of(t)}  # every knob the run set (a tune's defaults set none)
    for t in used if names else ():
        where = (without_knobs(t, names), t.result.frame_len, t.result.rate)
        groups.setdefault(where, {}).setdefault(config_text(knobs_of(t).items()) or DEFAULTS, []).append(t.result)
    out = []
    for (key, frame_len, rate), by_config in groups.items():
        if len(by_config) < 2:
            continue
        ranked = sorted(by_config.items(), key=lambda kv: _loss_median(kv[1]))
        best = stat_of(r.loss_pct for r in _used(ranked[0][1]))
        rows, classes = [], []
        for i, (config, rs) in enumerate(ranked, 1):
            used = _used(rs)
            loss, rx = stat_of(r.loss_pct for r in used), stat_of(r.rx_pps for r in used)
            near = i > 1 and loss.n > 1 and best.n > 1 and loss.lo <= best.hi
            rows.append([f"{i}{WITHIN_SPREAD_MARK if near else ''}", config,
                         format_pct(loss.median, exact_zero=loss.exact_zero)
                         + (f" ({_loss_spread(loss)})" if loss.spread else ""),
                         f"{rx.median:,.0f}" + (f" ({_spread(rx, ',.0f')})" if rx.spread else ""), str(loss.n)])
            classes.append(row_class(rs))
        reps = min(len(_used(rs)) for rs in by_config.values())
        notes = [f"{WITHIN_SPREAD_MARK}: its loss range reaches the best's, so its repetitions do not tell it "
                 f"from #1." if any(WITHIN_SPREAD_MARK in r[0] for r in rows) else "",
                 "One repetition each: an order this close may be noise; --repeat 3 shows the spreads."
                 if reps < 2 else ""]
        out.append(answers_mod.AnswerTable(
            f"Settings ranked by loss: {key.method} {key.backend} {frame_len} B at {rate} "
            f"({key.title()})", list(RANK_HEADERS), rows, [n for n in notes if n], classes))
    return out


def answer_ranking_tables(found: Iterable[answers_mod.Answer]) -> list[answers_mod.AnswerTable]:
    """The same for searches (RFC 2544, MLR: issue 30): per search that several knob settings of
    one run share (method, backend, frame length and every setting but the knobs'; a tune's
    defaults among them), the settings ranked by each of its figures (MLR: each goal), median
    over the repetitions with their spread; a setting whose range reaches the best's is marked
    WITHIN_SPREAD_MARK."""
    found = [a for a in found if a.trials]
    names = {n for a in found for n in knobs_of(a.trials[0])}  # every knob the run set
    if not names:
        return []
    groups: dict[tuple, dict[str, list[answers_mod.Answer]]] = {}
    for a in found:
        t = a.trials[0]
        where = (without_knobs(t, names), a.frame_len)
        groups.setdefault(where, {}).setdefault(config_text(knobs_of(t).items()) or DEFAULTS, []).append(a)
    out = []
    for (key, frame_len), by_config in groups.items():
        if len(by_config) < 2:
            continue
        metrics = list(dict.fromkeys(m for answers in by_config.values() for a in answers for m in a.values))
        for name in metrics:
            stats_ = {c: stat_of(vs) for c, answers in by_config.items()
                      if (vs := [v for a in answers if (v := a.values.get(name)) is not None])}
            if len(stats_) < 2:
                continue
            label = answers_mod.metric(name).label
            ranked = sorted(stats_.items(), key=lambda kv: (-kv[1].median, kv[0]))
            best = ranked[0][1]
            rows = []
            for i, (config, st) in enumerate(ranked, 1):
                near = i > 1 and st.n > 1 and best.n > 1 and st.hi >= best.lo
                disturbed = sum(1 for a in by_config[config] if a.disturbed)
                rows.append([f"{i}{WITHIN_SPREAD_MARK if near else ''}", config,
                             f"{st.median:,.0f}" + (f" ({_spread(st, ',.0f')})" if st.spread else ""), str(st.n),
                             f"{disturbed} of {len(by_config[config])}" if disturbed else "—"])
            reps = min(st.n for st in stats_.values())
            notes = [f"{WITHIN_SPREAD_MARK}: its range reaches the best's, so its repetitions do not tell it from "
                     f"#1." if any(WITHIN_SPREAD_MARK in r[0] for r in rows) else "",
                     "One search each: an order this close may be noise; --repeat 3 shows the spreads."
                     if reps < 2 else ""]
            out.append(answers_mod.AnswerTable(
                f"Settings ranked by {label}: {key.backend} {frame_len} B ({key.title()})",
                ["#", "Knobs", f"{label} [{answers_mod.metric(name).unit}]", "Reps", "Disturbed"], rows,
                [n for n in notes if n]))
    return out


# --- sweeps ------------------------------------------------------------------------


SWEEP_HEADERS = HEADERS[1:]
TERMINAL_SWEEP_HEADERS = TERMINAL_HEADERS[1:]


def sweep_tables(trials: Sequence[Trial], answers: Sequence[answers_mod.Answer] = (), sep: str = " "
                 ) -> list[answers_mod.AnswerTable]:
    """Seed 003's sweep: a row per offered rate (its repetitions one row), captured rate, loss
    and CPU; the title says where the sweep starts to lose (the method's answer)."""
    lines = sweep_lines(trials)
    labels = series_labels(k for k, _size in lines)
    groups = answers_mod.group_answers(answers)
    out = []
    for (key, size), gs in lines.items():
        rows, classes = [], []
        for g in gs:
            rs = [t.result for t in g.trials]
            rows.append(row_cells(rs, sep)[1:])
            classes.append(row_class(rs))
        answer = groups.get((key, size))
        found = answer_tables.sweep_first_loss(answer) if answer is not None else ""
        used = cpus_used(t for g in gs for t in g.trials)
        title = f"Sweep: {labels[key]} {size} B ({key.title(used)})" + (f": {found}" if found else "")
        out.append(answers_mod.AnswerTable(title, list(SWEEP_HEADERS), rows, [], classes))
    return out


# --- printing ----------------------------------------------------------------------


def _print_answer_table(console: Console, t: answers_mod.AnswerTable, headers: Sequence[str] | None = None) -> None:
    table = _table(t.title, headers or t.headers)
    for i, row in enumerate(t.rows):
        table.add_row(*(Text(c) for c in row), style=ROW_STYLES.get(t.classes[i] if t.classes else "", None))
    console.print(table)
    for line in t.notes:
        console.print(Text(f"  {line}"))


def _with_b(size_label: str) -> str:
    return f"{size_label}{' B' if size_label.isdigit() else ''}"


def program_witness(r: TrialResult) -> list[str]:
    """A capture program's own counts beside capbench's (its file, the kernel's counters), and
    where they disagree (trial.loss_layers.program_remarks)."""
    if not r.app_command:
        return []
    counts = ", ".join(f"{k} {v:,}" for k, v in r.app_counts.items()) or "nothing"
    file = f"; its file holds {r.file_frames:,} frames" if r.file_frames is not None else ""
    return [f"{r.backend} says: {counts}{file}"] + [x for x in loss_layers.program_remarks(r) if not x.startswith("FAILED")]


# The capture program's layer families that the Lost column marks with a short tag (loss_places);
# the others are marked by their name.
LAYER_TAGS = {loss_layers.AF_XDP: "xsk"}
# What a tag says, under a table that shows it.
TAG_MEANINGS = {"xsk": "dropped in the AF_XDP socket's rings (XDP_STATISTICS: RX ring full, fill ring empty)."}


def layer_tag(family: str) -> str:
    return LAYER_TAGS.get(family, family)


# What each loss layer is, once per table (trial.loss_layers names them; its per-trial account,
# with each counter's figures, is in trials.jsonl and the report).
LAYER_MEANINGS = {
    loss_layers.RX_RING: "no room in the capture side's receive ring (its own counter: the cpumap queue's "
                         "xdp:xdp_cpumap_enqueue drops; the napi model's veth ring: the sender's xdp_xmit_errors)",
    loss_layers.VETH_RING: "no room in the veth's own 256-frame ring before the rx ring (the sender's "
                           "xdp_xmit_errors), drained on the generator's CPU",
    loss_layers.LINK: "lost between the sender and the capture interface, in no interface counter",
    "interface": "the capture interface's rx_dropped: no room in its receive ring (records without the ring's counter)",
    loss_layers.BACKLOG: "the kernel's per-CPU backlog (RPS) queue was full (the interface's rx_dropped less the ring's)",
    loss_layers.SOCKET: "the capture socket's buffer was full (PACKET_STATISTICS tp_drops; pcap: libpcap's ps_drop; "
                        "a program: its own count)",
    "application": "taken by the socket, never read by the capture application",
}


def own_tag_lines(results: Iterable[TrialResult]) -> list[tuple[str, str]]:
    """(tag, what it means) for each capture program's layer the Lost column marks in `results`
    (loss_places), in the order first seen: a known tag's meaning, else the layer's counter."""
    out: dict[str, str] = {}
    for r in results:
        for row in loss_layers.own_rows(r):
            family = loss_layers.family(row.layer)
            if row.packets and family != loss_layers.SOCKET:
                out.setdefault(layer_tag(family), TAG_MEANINGS.get(layer_tag(family), f"{row.counter}."))
    return list(out.items())


def layer_lines(results: Iterable[TrialResult]) -> list[str]:
    """One line per loss layer that lost frames in any of `results`: its name, what it is, and in
    how many rows it lost (the numbers are the table's)."""
    rows: dict[str, int] = {}
    said: dict[str, str] = {}
    for r in results:
        if superseded(r):
            continue
        for name, _n, src in loss_layers.layers(r):
            rows[name] = rows.get(name, 0) + 1
            said.setdefault(name, src)
    return [f"{name}: {LAYER_MEANINGS.get(name, said[name])} (lost in {n} row{'s' if n != 1 else ''})"
            for name, n in rows.items()]


def row_remarks(r: TrialResult) -> list[str]:
    """What a row's numbers cannot say, one line each: a capture program's own count beside
    capbench's, a failed program, counters that disagree (unexplained packets), the host's
    interference of a row it stayed disturbed in."""
    out = program_witness(r)[:1]
    if r.failure:
        out.append(f"FAILED: {r.failure}")
    if r.unexplained:
        out.append(loss_layers.explain(r))
    if r.disturbed:
        out.append(f"disturbed: {r.disturbed_reason or 'the host interfered'} (every run allowed was disturbed)")
    return out


def rerun_note(n: int) -> str:
    """The line under the tables when the host disturbed runs that were run again."""
    return (f"{n} run{'s' if n != 1 else ''} the host disturbed {'were' if n != 1 else 'was'} run again (each "
            f"recorded in trials.jsonl, `attempt`); the tables and answers show the runs decided on.")


def short_note(shown: Iterable[TrialResult], loads: bool = True) -> str:
    """What `*` says under tables with rows the generator fell short in: what it sent (verdict's
    words; per load unless `loads` is False, where each row's note says it), and that such a row
    is a lower bound where it lost nothing while what it lost is capture loss at the rate sent;
    "" when the generator held every load."""
    by_load: dict[tuple[str, float], list[TrialResult]] = {}
    short = [r for r in shown if generator_short(r)]
    for r in short:
        if r.offered_pps is not None and loads:
            by_load.setdefault((_with_b(r.size_label), r.offered_pps), []).append(r)
    if not short:
        return ""
    held = "; ".join(f"{size}: {generator_short_text(load, rs)}" for (size, load), rs in by_load.items())
    held = f" ({held})" if held and len(held) < 600 else ""
    return (f"{INVALID_LOAD_TEXT}{held}. A starred row that lost nothing is {SET_BY_GENERATOR} "
            f"(\"{LOWER_BOUND_MARK}\"); what a starred row lost is {CAPTURE_AT_SENT_RATE}.")


def disturbed_note(shown: Iterable[TrialResult]) -> str:
    """What DISTURBED_MARK says under tables with such rows; "" without."""
    n = sum(1 for r in shown if r.disturbed)
    if not n:
        return ""
    return (f"{DISTURBED_MARK} the host's interference could explain this loss ({n} trial{'s' if n > 1 else ''}: "
            f"a CPU of the trial stopped, other work held it, or the generator fell short; each row's line says "
            f"which, host_interference in trials.jsonl has the figures): run it again, on a quieter host, or "
            f"with a deeper ring before reading it as the capture's.")


def print_tables(trials: Iterable[AnyTrial], console: Console | None = None,
                 outcomes: Iterable[dict[str, Any]] = (), loss_tolerance_frames: int = 0) -> None:
    """Print every table the trials make (TrialResults of a run, or the Trials of its records):
    iperf-like per backend, the search answers (RFC 2544, MLR, back-to-back; from `outcomes`,
    the lines of searches.jsonl, else derived from the trials) and sweeps; to a pipe or file
    at 120 columns, not rich's default 80."""
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=120)
    records = [as_trial(t) for t in trials]
    trials = [t.result for t in records]
    if not trials:
        console.print("No trial finished.")
        return
    iperf = [t for t in records if registry.constant_load(t.method)]
    for key, rows in group_by_series(iperf).items():
        console.print(backend_table(series_title(key, rows), rows))
        # The per-row numbers are in the table: under it one line per layer that lost, and only
        # what a row's numbers cannot say (a program's own count, counters that disagree).
        for line in layer_lines(t.result for t in rows):
            console.print(Text(f"  {line}"))
        reps = repetitions(rows)
        for t in decided(rows):
            r = t.result
            rep = f" (rep {r.repeat})" if r.step and len(reps[settings_key(t)]) > 1 else ""
            for line in row_remarks(r):
                console.print(Text(f"  {_with_b(r.size_label)}{rep}: {line}"))
    for t in ranking_tables(iperf):
        _print_answer_table(console, t)
    if any(r.sensors for r in trials):
        _print_sensor_tables(console, records)
    found = answers_mod.answers_of(records, outcomes, loss_tolerance_frames)
    for t in answer_tables.tables(found) + answer_ranking_tables(found):
        _print_answer_table(console, t)
    sweeps = sweep_tables(records, found, sep="\n")
    for t in sweeps:
        _print_answer_table(console, t, TERMINAL_SWEEP_HEADERS)
    _print_profile_table(console, records)
    shown = [t.result for t in iperf] + [t.result for t in records if registry.swept(t.method)
                                          and not registry.constant_load(t.method) and sweeps]
    note = short_note(shown)
    if note:
        console.print(Text(f"{SHORT_MARK} {note}"))
    if note := disturbed_note(shown):
        console.print(Text(note))
    for tag, meaning in own_tag_lines(shown):
        console.print(Text(f"{tag}: {meaning}"))  # a counter's words are text, not markup
    if any(r.app_drops for r in shown):
        console.print("app: queued by the socket, never read by the counter (kernel packets − drops − frames read).")
    if any(r.unexplained for r in shown):
        console.print("[red]Some packets are unexplained: the counters disagree (see trials.jsonl, field raw).[/red]")
    spoiled = sum(1 for r in trials if superseded(r))
    if spoiled:
        console.print(Text(rerun_note(spoiled)))
    if not iperf and not found and not sweeps:
        console.print(f"No iperf-like trial and no search answer among the {len(trials)} trials "
                      f"(methods: {', '.join(sorted({r.method for r in trials}))}).")



def _print_profile_table(console: Console, records: list[Trial]) -> None:
    """--profile: the receive CPU's time per captured packet, its shares and top function, and the
    counter's time, a row per profiled trial (report.html has the rest, and the flame graphs)."""
    rows = profiles.rows(records, top=1)
    if not rows:
        return
    table = _table("Where the CPU time goes (--profile)",
                   [profiles.HEADERS[i].replace(" [", "\n[") for i in profiles.COMPACT])
    for row in rows:
        table.add_row(*(Text(c) for c in row.compact()))
    console.print(table)
    console.print(Text(f"  {profiles.sampling_text({}, records)}"))


def _print_sensor_tables(console: Console, records: list[Trial]) -> None:
    """Several sensors on one stream: seed 004's total loss per sensor and its loss bins, side by side."""
    from capbench.report import tables_md  # it builds on this module

    for title, headers, rows in (("Total loss per sensor (one stream, the same frames)", tables_md.LOSS_TOTAL_HEADERS,
                                  tables_md.loss_totals(records)),
                                 ("Groups by frames lost (seed 004's loss bins)", tables_md.LOSS_BIN_HEADERS,
                                  tables_md.loss_bins(records))):
        if rows:
            t = _table(title, headers)
            for row in rows:
                t.add_row(*row)
            console.print(t)
    console.print(Text(tables_md.sensors_note(records)))
