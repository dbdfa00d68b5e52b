"""The searches' answers as tables (terminal, Markdown, HTML): each method's answers in the
layout its Method names (`table`): a throughput per frame length and placement (RFC 2544, seed
000's Tables 4-6), goals' lower bounds (MLR), burst lengths (back-to-back); and a sweep's
answer in words. The figures and marks come from the answers (report.answers), the words for
what bounded them from capbench.methods.verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from capbench.methods import registry
from capbench.methods.measurer import MAX_ATTEMPTS
from capbench.methods.method import Method
from capbench.methods.rfc2544 import trial_note
from capbench.rates import wire_bps
from capbench.report.answers import GENERATOR_BOUND, Answer, AnswerGroup, AnswerTable, group_answers, metric
from capbench.report.stats import Stat, stat_of

PIN_ORDER = {"A:A": 0, "A:B": 1, "auto": 2}


def _pps_cell(s: Stat | None, frame_len: int, n: bool = True) -> str:
    """"pps / Gbps", with repetitions the median (min–max, sd, n); "—" without an answer."""
    if s is None:
        return "—"
    if s.median == 0 and s.exact_zero:
        return "0 (no rate passed)" + (f" (n={s.n})" if n and s.n > 1 else "")
    text = f"{s.median:,.0f} / {wire_bps(s.median, frame_len) / 1e9:.3f}"
    if s.spread:
        text += f" ({s.lo:,.0f}–{s.hi:,.0f}, sd {s.sd:,.0f}" + (f", n={s.n})" if n else ")")
    elif n and s.n > 1:
        text += f" (n={s.n}, all equal)"
    return text


def _table_groups(groups: Iterable[AnswerGroup], method: str) -> dict[tuple, dict[str, list[AnswerGroup]]]:
    """Answer groups of one method by table (backend, link, engine, app load, other axes) and placement."""
    tables: dict[tuple, dict[str, list[AnswerGroup]]] = {}
    for g in groups:
        if g.method != method:
            continue
        k = g.series
        tables.setdefault((k.backend, k.link, k.engine, k.app_load, k.extra), {}).setdefault(g.pin, []).append(g)
    return tables


def _pins(by_pin: dict[str, list[AnswerGroup]]) -> list[str]:
    return sorted(by_pin, key=lambda p: (PIN_ORDER.get(p, 9), p))


def _title(what: str, table_key: tuple) -> str:
    backend, link, engine, app_load, extra = table_key
    extra_text = "".join(f", {a} {b}" for a, b in extra)
    return f"{what}: {backend} ({link} link, engine {engine}, app load {app_load}{extra_text})"


def generator_mark(g: AnswerGroup, name: str) -> str:
    """The mark after an answer the generator bounded, " generator-bound (a lower bound)" (with
    repetitions: in how many of them); "" for an answer the capture bounded."""
    bound = g.generator_bound(name)
    if not bound:
        return ""
    n = len(g.values(name))
    return f" {GENERATOR_BOUND}" + (f" in {len(bound)} of {n}" if len(bound) < n else "")


def generator_notes(g: AnswerGroup, name: str, where: str, what: str) -> list[str]:
    """A table's note for an answer the generator bounded: which rate it could not hold."""
    shorts = sorted(set(g.generator_short_pps(name)))
    if not shorts:
        return []
    return [f"{where}: {GENERATOR_BOUND}: the generator could not hold {', '.join(f'{x:,.0f}' for x in shorts)} "
            f"pps, so {what} stopped below it: this figure is a lower bound of the capture's limit, not the limit."]


DISTURBED_MARK = "disturbed"


def disturbed_mark(g: AnswerGroup) -> str:
    """The mark after an answer that rests on trials the host disturbed, " disturbed" (with
    repetitions: in how many of them); "" otherwise."""
    if not g.disturbed:
        return ""
    n = len(g.answers)
    return f" {DISTURBED_MARK}" + (f" in {len(g.disturbed)} of {n}" if len(g.disturbed) < n else "")


def disturbed_notes(g: AnswerGroup, where: str) -> list[str]:
    """A table's note for an answer that rests on trials the host disturbed: what the host did."""
    return [f"{where}: {DISTURBED_MARK}: the host interfered in trials the search decided on, each run "
            f"{MAX_ATTEMPTS} times ({a.interference}): the figure may measure the host, not the capture."
            for a in g.disturbed[:1]]


def _trial_note(gs: list[AnswerGroup]) -> list[str]:
    return trial_note((float(x) for g in gs for x in g.info_values("trial_s")),
                      any(x for g in gs for x in g.info_values("short_trials")))


def throughput_tables(groups: Iterable[AnswerGroup], method: Method) -> list[AnswerTable]:
    """Seed 000's Tables 4-6: RFC 2544 throughput per frame length, one column per placement
    (#1 A:A, #2 A:B, ...), "pps / Gbps"; with repetitions the median (min–max, sd, n)."""
    out = []
    name = method.main_metric() or ""
    for table_key, by_pin in _table_groups(groups, method.name).items():
        pins = _pins(by_pin)
        cells: dict[tuple[str, int], AnswerGroup] = {(p, g.frame_len): g for p in pins for g in by_pin[p]}
        sizes = sorted({size for _p, size in cells}, reverse=True)
        notes: list[str] = []
        rows = []
        for size in sizes:
            row = [str(size)]
            for p in pins:
                g = cells.get((p, size))
                if g is None:
                    row.append("")
                    continue
                text = _pps_cell(g.stat(name), size)
                failures = sorted({x for fs in g.info_values("verification_failures_pps") for x in fs})
                if failures:
                    text += " †"
                    notes.append(f"† {size} B {p}: the verification trial failed at "
                                 f"{', '.join(f'{x:,.0f}' for x in failures)} pps, so that search pass was not "
                                 f"taken (distorted by an overload before it, seed 000's saturation, or noise); "
                                 f"the search went on below it.")
                unverified = [a for a in g.answers if a.values.get(name) and not a.info.get("verified")]
                if unverified:
                    text += " (not verified)"
                text += generator_mark(g, name) + disturbed_mark(g)
                notes += generator_notes(g, name, f"{size} B {p}", "the search")
                notes += disturbed_notes(g, f"{size} B {p}")
                row.append(text)
            rows.append(row)
        derived = any(a.source == "trials" for p in pins for g in by_pin[p] for a in g.answers)
        if derived:
            notes.append("Derived from the trials (no answer in searches.jsonl): the rate of the verification "
                         "trial that passed.")
        notes += _trial_note([g for p in pins for g in by_pin[p]])
        out.append(AnswerTable(_title(method.table_title, table_key),
                               ["Frame [B]"] + [f"#{i + 1} {p} [pps / Gbps]" for i, p in enumerate(pins)], rows,
                               notes))
    return out


def goal_tables(groups: Iterable[AnswerGroup], method: Method) -> list[AnswerTable]:
    """MLR search: each goal's lower bound (NDR, PDR) per frame length and placement."""
    out = []
    for table_key, by_pin in _table_groups(groups, method.name).items():
        pins = _pins(by_pin)
        goals: list[str] = []
        for p in pins:
            for g in by_pin[p]:
                goals += [m for m in g.metrics() if m not in goals]
        cells = {(p, g.frame_len): g for p in pins for g in by_pin[p]}
        sizes = sorted({size for _p, size in cells}, reverse=True)
        notes = [n for p in pins for g in by_pin[p] for n in g.notes if "not derived" in n][:1]
        notes += _trial_note([g for p in pins for g in by_pin[p]])
        if not goals:  # no answer in searches.jsonl, and none is derived from the trials
            rows = [[str(size)] + ["— (no answer recorded)" if (p, size) in cells else "" for p in pins]
                    for size in sizes]
            out.append(AnswerTable(_title(method.table_title, table_key),
                                   ["Frame [B]"] + [f"#{i + 1} {p}" for i, p in enumerate(pins)], rows, notes))
            continue
        columns = [(p, m) for p in pins for m in goals]
        rows = [[str(size)] + [_pps_cell(cells[p, size].stat(m), size) + generator_mark(cells[p, size], m)
                               + disturbed_mark(cells[p, size]) if (p, size) in cells else "" for p, m in columns]
                for size in sizes]
        notes += [n for size in sizes for p in pins if (p, size) in cells
                  for n in disturbed_notes(cells[p, size], f"{size} B {p}")]
        notes += [n for size in sizes for p, m in columns if (p, size) in cells
                  for n in generator_notes(cells[p, size], m, f"{size} B {p} {metric(m).label.removeprefix('MLR ')}",
                                           "the goal's search")]
        out.append(AnswerTable(_title(f"{method.table_title} (lower bounds)", table_key),
                               ["Frame [B]"] + [f"#{pins.index(p) + 1} {p} {metric(m).label.removeprefix('MLR ')} "
                                                f"[pps / Gbps]" for p, m in columns], rows, notes))
    return out


def burst_tables(groups: Iterable[AnswerGroup], method: Method) -> list[AnswerTable]:
    """RFC 2544 back-to-back: the longest burst at wire rate captured without loss."""
    out = []
    name = method.main_metric() or ""
    for table_key, by_pin in _table_groups(groups, method.name).items():
        pins = _pins(by_pin)
        cells = {(p, g.frame_len): g for p in pins for g in by_pin[p]}
        sizes = sorted({size for _p, size in cells}, reverse=True)
        rows = []
        notes: list[str] = []
        for size in sizes:
            row = [str(size)]
            for p in pins:
                s = cells[p, size].stat(name) if (p, size) in cells else None
                if s is None:
                    row.append("—" if (p, size) in cells else "")
                    continue
                g = cells[p, size]
                text = f"{s.median:,.0f}" + (f" ({s.lo:,.0f}–{s.hi:,.0f}, sd {s.sd:,.0f}, n={s.n})" if s.spread else "")
                row.append(f"{text} ({1e3 * s.median / g.wire_pps:.2f} ms){generator_mark(g, name)}{disturbed_mark(g)}")
                notes += disturbed_notes(g, f"{size} B {p}")
                if g.generator_bound(name):
                    notes.append(f"{size} B {p}: {GENERATOR_BOUND}: the generator could not send the shortest "
                                 f"failing burst at wire rate and nothing was lost, so this figure is a lower bound "
                                 f"of the capture's, not its limit.")
            rows.append(row)
        out.append(AnswerTable(_title(method.table_title, table_key),
                               ["Frame [B]"] + [f"#{i + 1} {p} [frames]" for i, p in enumerate(pins)], rows, notes))
    return out


# The layouts a method's answer tables take (Method.table names one), in the order of the registry.
LAYOUTS: dict[str, Callable[[Iterable[AnswerGroup], Method], list[AnswerTable]]] = {
    "throughput": throughput_tables, "goals": goal_tables, "bursts": burst_tables}


def tables(answers: Iterable[Answer], methods: Iterable[str] | None = None) -> list[AnswerTable]:
    """The answer tables of every method (or of `methods`), in the order of the registry."""
    groups = list(group_answers(answers).values())
    return [t for m in registry.REGISTRY.values() if m.table and (methods is None or m.name in methods)
            for t in LAYOUTS[m.table](groups, m)]


def sweep_first_loss(g: AnswerGroup) -> str:
    """A sweep's answer in words: where it starts to lose, over its repetitions; a lossless run that
    the generator ended (it could not hold the next step) is generator-bound, a lower bound."""
    name = registry.get(g.method).main_metric() or ""
    s = g.stat(name)
    if s is None:
        return "no answer (the sweep was cut short)"
    firsts = [float(x) for x in g.info_values("first_lossy_pps")]
    shorts = sorted(set(g.generator_short_pps(name)))
    short_text = (f"the generator could not hold {', '.join(f'{x:,.0f}' for x in shorts)} pps" if shorts else "")
    if not firsts:
        reps = f" (n={s.n})" if s.n > 1 else ""
        if not g.generator_bound(name):
            return f"no loss up to {s.median:,.0f} pps{reps}"
        if s.median <= 0:
            return f"{GENERATOR_BOUND}: {short_text}, no step measured the capture{reps}"
        bound, n = len(g.generator_bound(name)), len(g.values(name))
        some = f" (in {bound} of {n} repetitions)" if bound < n else ""
        return f"{GENERATOR_BOUND}: no loss up to {s.median:,.0f} pps{reps}, {short_text}{some}"
    first = stat_of(firsts)
    text = f"first loss at {first.median:,.0f} pps"
    if first.spread:
        text += f" ({first.lo:,.0f}–{first.hi:,.0f}, sd {first.sd:,.0f}, n={first.n})"
    elif first.n > 1:
        text += f" (n={first.n}, all equal)"
    if len(firsts) < len(g.answers):
        text += f"; {len(g.answers) - len(firsts)} of {len(g.answers)} repetitions lost nothing"
    if shorts:
        text += f"; below it {short_text} (not measured)"
    return text
