"""The seed's tables as Markdown and CSV, from trial records and the method answers.

One iperf-like table per series (backend, placement, ...), one row per measurement as
in the terminal tables (capbench.report.tables): the repetitions of a step are one row, each
figure their median (min–max, sd). A Note column says in words what the terminal's `*`,
"lower bound" and colours say, by the one loss rule (capbench.methods.verdict): the
generator did not hold the offered load, and then either nothing was lost (a lower bound,
not a capture result at that load) or its loss is capture loss at the rate it sent; or
the counters disagree. Then the answers of the searches (RFC 2544 as
seed 000's Tables 4–6, MLR, back-to-back) and the sweeps, as in the terminal.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any

from capbench.trial.accounting import format_pct
from capbench.methods.verdict import (CAPTURE_AT_SENT_RATE, LOWER_BOUND, generator_note, generator_short,
                                      generator_short_text, measured, verdict)
from capbench.methods import registry
from capbench.report import answer_tables as layouts
from capbench.report import answers as answers_mod
from capbench.report.answers import Answer, AnswerTable
from capbench.report.keys import SeriesKey, cpus_used, series_key, series_labels
from capbench.report.load import Trial
from capbench.report.stats import iperf_groups
from capbench.report.tables import HEADERS as TABLE_HEADERS
from capbench.report.tables import (DISTURBED_MARK, SHORT_MARK, answer_ranking_tables, disturbed_note, program_witness,
                                    ranking_tables, row_cells, row_class, short_note, sweep_tables)
from capbench.trial.measure import TrialResult

HEADERS = (*TABLE_HEADERS, "Note")

# trials.csv: the fields of a trials.jsonl record, in its order and with its names (schema
# first, as TrialResult.to_record writes it), then the Note of the tables.
RECORD_FIELDS = tuple(sorted((f.name for f in dataclasses.fields(TrialResult)), key=lambda n: n != "schema"))
CSV_FIELDS = (*RECORD_FIELDS, "note")


def short_text(r: TrialResult, footnoted: bool = False) -> str:
    """A trial the generator fell short in, by the one loss rule: "the generator could not hold N
    pps (it sent M pps): the captured rate is a lower bound ..." when nothing was lost, "...: its
    loss is capture loss at the rate the generator sent" when frames were; "" when it held.
    `footnoted`: in a table whose footnote says what `*` means (short_footnote) and whose Offered
    cell has what was sent, only the load it could not hold."""
    if not generator_short(r):
        return ""
    if footnoted:
        return generator_short_text(r.offered_pps) if r.offered_pps is not None else ""
    if r.offered_pps is None:
        held = "the generator did not hold the offered load"
        return f"{held}: a lower bound" if verdict(r) == LOWER_BOUND else f"{held}: its loss is {CAPTURE_AT_SENT_RATE}"
    if verdict(r) == LOWER_BOUND:
        return generator_note(r.offered_pps, [r], "the captured rate")
    return f"{generator_short_text(r.offered_pps, [r])}: its loss is {CAPTURE_AT_SENT_RATE}"


def note_of(r: TrialResult, footnoted: bool = False) -> str:
    notes = [short] if (short := short_text(r, footnoted)) else []
    if r.failure:
        notes.append(f"FAILED: {r.failure}")
    if r.unexplained:
        notes.append(f"counters disagree by {r.unexplained:,} packets")
    notes += program_witness(r)
    return "; ".join(notes)


def group_note(rs: Sequence[TrialResult], footnoted: bool = False) -> str:
    """The Note of a row: of its one trial, or of its repetitions (those that count); `footnoted`
    as for short_text."""
    host = [r for r in rs if r.disturbed]
    said = (f"{DISTURBED_MARK} the host interfered" + (f" in {len(host)} of {len(rs)} repetitions" if len(rs) > 1 else "")
            + f": {host[0].disturbed_reason}") if host else ""
    if len(rs) == 1:
        return "; ".join(x for x in (note_of(rs[0], footnoted), said) if x)
    valid = [r for r in rs if measured(r)]
    notes = []
    if not valid and footnoted:
        notes.append("a lower bound in every repetition" + (f": {generator_short_text(rs[0].offered_pps)}"
                                                             if rs[0].offered_pps is not None else ""))
    elif not valid:
        notes.append(f"in every repetition {generator_note(rs[0].offered_pps, rs, 'the captured rate')}"
                     if rs[0].offered_pps is not None else "a lower bound in every repetition")
    elif len(valid) < len(rs):
        notes.append(f"{len(rs) - len(valid)} of {len(rs)} repetitions left out: lower bounds (the generator fell "
                     f"short of the offered load and nothing was lost)")
    short = [r for r in valid if generator_short(r)]
    if short and short[0].offered_pps is not None:
        some = f" in {len(short)} of {len(valid)} repetitions" if len(short) < len(valid) else ""
        notes.append(f"{generator_short_text(short[0].offered_pps)}{some}" if footnoted else
                     f"{generator_short_text(short[0].offered_pps, short)}{some}: its loss is {CAPTURE_AT_SENT_RATE}")
    disagree = [r for r in (valid or rs) if r.unexplained]
    if disagree:
        notes.append("counters disagree by " + ", ".join(f"{r.unexplained:,}" for r in disagree) + " packets"
                     + (f" ({len(disagree)} repetitions)" if len(disagree) > 1 else ""))
    return "; ".join(notes + ([said] if said else []))


def by_series(trials: Iterable[Trial]) -> dict[SeriesKey, list[Trial]]:
    out: dict[SeriesKey, list[Trial]] = {}
    for t in trials:
        out.setdefault(series_key(t), []).append(t)
    return out


def series_title(key: SeriesKey, label: str, trials: Iterable[Trial | TrialResult] = ()) -> str:
    """`iperf: pcap (1g link, A:A (gen 0, rx 1, app 1), engine xdp, app load touch)`, the CPUs the
    capture really used joining the placement where they differ from it (keys.cpus_used)."""
    return f"{key.method}: {label} ({key.title(cpus_used(trials))})"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def md_table(headers: Iterable[str], rows: Iterable[Iterable[str]], text_last: bool = True) -> str:
    """Numbers right-aligned; the last column, a note, left-aligned (unless text_last is False)."""
    headers = list(headers)
    lines = ["| " + " | ".join(map(_md_escape, headers)) + " |",
             "|" + "|".join("---:" if i < len(headers) - 1 or not text_last else "---"
                            for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def short_footnote(shown: Iterable[TrialResult]) -> str:
    """Under a table with rows the generator fell short in (`*` on Offered): what the mark means,
    said once for the table, each row's note naming only the load it could not hold; "" without."""
    note = short_note(shown, loads=False)
    return f"{SHORT_MARK} {note}" if note else ""


def iperf_tables(trials: list[Trial]) -> list[AnswerTable]:
    """A table per series of iperf-like trials: a row per measurement, its repetitions aggregated
    (median (min–max, sd), n with the captured rate), what `*` means in a footnote."""
    by: dict[SeriesKey, list[tuple[Trial, ...]]] = {}
    for g in iperf_groups(trials).values():
        by.setdefault(g.series, []).append(g.trials)
    labels = series_labels(by)
    out = []
    for k, groups in by.items():
        results = [[t.result for t in ts] for ts in groups]
        note = short_footnote(r for rs in results for r in rs)
        host = disturbed_note(r for rs in results for r in rs)
        out.append(AnswerTable(series_title(k, labels[k], (t for ts in groups for t in ts)), list(HEADERS),
                               [row_cells(rs) + [group_note(rs, footnoted=True)] for rs in results],
                               [n for n in (note, host) if n], [row_class(rs) for rs in results]))
    return out


LOSS_TOTAL_HEADERS = ("Backend", "Trials", "Sent", "Lost", "Loss [%]", "Not counted (lower bounds)")


def loss_totals(trials: list[Trial]) -> list[list[str]]:
    """Seed 004's loss table: all packets sent and lost per series of iperf-like trials, over the
    trials the one loss rule measured (verdict.measured: a short generator's loss counts); the
    lower bounds (generator short, nothing lost) are counted apart. A search's or a sweep's
    trials overload the receiver on purpose: their loss is not summed."""
    groups = by_series(t for t in trials if registry.constant_load(t.method))
    labels = series_labels(groups)
    rows = []
    for k, ts in groups.items():
        valid = [t.result for t in ts if measured(t.result)]
        sent, lost = sum(r.sent for r in valid), sum(r.lost for r in valid)
        pct = format_pct(100.0 * lost / sent, exact_zero=(lost == 0)) if sent else "—"
        rows.append([_label(ts, labels[k]), str(len(valid)), f"{sent:,}", f"{lost:,}", pct, str(len(ts) - len(valid))])
    return rows


# Seed 004's loss bins: how many frames each group lost, in decades.
LOSS_BINS = ((0, 0), (1, 10), (11, 100), (101, 1_000), (1_001, 10_000), (10_001, None))
LOSS_BIN_HEADERS = ("Backend", "Groups", *(f"{lo:,}" if hi == lo else f"{lo:,}–{hi:,}" if hi else f"> {lo - 1:,}"
                                             for lo, hi in LOSS_BINS))


def loss_bins(trials: list[Trial]) -> list[list[str]]:
    """Seed 004's loss bins per series of iperf-like trials with groups (capbench run --groups): how
    many groups lost 0 frames, 1–10, 11–100, ... (group size − frames received of the group)."""
    groups = by_series(t for t in trials if registry.constant_load(t.method) and t.result.group_size)
    labels = series_labels(groups)
    rows = []
    for k, ts in groups.items():
        lost = [t.result.group_size - int(n) for t in ts for n in t.result.group_received]
        counts = [sum(1 for x in lost if lo <= x and (hi is None or x <= hi)) for lo, hi in LOSS_BINS]
        rows.append([_label(ts, labels[k]), f"{len(lost):,}", *(f"{n:,}" for n in counts)])
    return rows


def _label(ts: Sequence[Trial], label: str) -> str:
    """A series' row name: "sensor 2: afp-v3" for a sensor on one stream (its other settings are the
    run's, shared by every sensor), else the series label."""
    r = ts[0].result
    return f"sensor {r.sensor}: {r.backend}" if r.sensors else label


def sensors_note(trials: Iterable[Trial]) -> str:
    """With several sensors on one stream: what they share on this machine (the report says so)."""
    rs = [t.result for t in trials if t.result.sensors]
    if not rs:
        return ""
    cpus = sorted({c for r in rs for c in (r.kernel_rx_cpu, r.cap_cpu) if c is not None})
    tap = {r.tap_cpu for r in rs}
    tap_text = "the generator's CPU (its softirq)" if tap == {None} else f"CPU {', '.join(map(str, sorted(tap - {None})))}"
    return (f"{rs[0].sensors} sensors captured one stream through the tap (its receive work on {tap_text}); their "
            f"receive work and capture processes share CPU {', '.join(map(str, cpus))} on this machine, so each "
            f"sensor's figures include the others' load: the mechanism, not this machine's CPUs, is what the "
            f"comparison shows.")


def answer_tables(trials: list[Trial], answers: Sequence[Answer] | None = None) -> list[AnswerTable]:
    """The searches' answers (RFC 2544 as seed 000's Tables 4–6, MLR, back-to-back), then the sweeps."""
    found = list(answers) if answers is not None else answers_mod.answers_of(trials)
    return layouts.tables(found) + sweep_tables(trials, found)


def method_tables(trials: list[Trial], method: str, answers: Sequence[Answer] | None = None) -> list[AnswerTable]:
    """The answer tables of one method (RFC 2544's are seed 000's Tables 4-6: answer_tables)."""
    found = list(answers) if answers is not None else answers_mod.answers_of(trials)
    return layouts.tables(found, (method,))


def markdown(trials: list[Trial], answers: Sequence[Answer] | None = None) -> str:
    parts = []
    for t in iperf_tables(trials):
        notes = "".join(f"\n\\{n}\n" if n.startswith(SHORT_MARK) else f"\n{n}\n" for n in t.notes)  # not a bullet
        parts.append(f"### {t.title}\n\n{md_table(t.headers, t.rows)}\n{notes}")
    found = list(answers) if answers is not None else answers_mod.answers_of(trials)
    for t in ranking_tables(trials) + answer_tables(trials, found) + answer_ranking_tables(found):
        notes = "".join(f"\n{n}\n" for n in t.notes)
        parts.append(f"### {t.title}\n\n{md_table(t.headers, t.rows, text_last=False)}\n{notes}")
    totals = loss_totals(trials)
    if totals:
        parts.append(f"### Total loss per backend (iperf-like trials)\n\n{md_table(LOSS_TOTAL_HEADERS, totals)}\n")
    bins = loss_bins(trials)
    if bins:
        parts.append(f"### Groups by frames lost (seed 004's loss bins)\n\n{md_table(LOSS_BIN_HEADERS, bins)}\n")
    if note := sensors_note(trials):
        parts.append(note + "\n")
    # The sweeps' `*` (the iperf-like tables' footnotes say theirs)
    note = short_note(t.result for t in trials if registry.swept(t.method) and not registry.constant_load(t.method))
    if note:
        parts.append(f"Offered marked `{SHORT_MARK}`: {note}\n")
    return "\n".join(parts)


def csv_cell(v: Any) -> Any:
    """A record's value in one CSV cell: numbers at full precision, None empty, a list or an
    object (latency percentiles, per-process counts, the programs' summaries) as its JSON text."""
    if v is None:
        return ""
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(",", ":"))
    return v


def csv_text(trials: list[Trial]) -> str:
    """One row per trial: the fields of its trials.jsonl record (CSV_FIELDS), numbers at full
    precision (a small loss stays nonzero), and the Note."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for t in trials:
        record = t.result.to_record() | {"method": t.method}  # method: run.json's for records without one
        w.writerow({f: csv_cell(record.get(f)) for f in RECORD_FIELDS} | {"note": note_of(t.result)})
    return buf.getvalue()
