"""A run on the terminal: the line of each trial and the progress bars while it runs, and at its
end the tables, the methods' answers and what to try when rows are lower bounds, then the answer
(best per length, where each backend starts to lose, how sure each is: print_answer). `capbench run`
hands these to the campaign runner as its callbacks (campaign.runner.RunCallbacks): the
campaign layer draws nothing itself."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capbench.campaign.matrix import Step
from capbench.errors import CapbenchError
from capbench.methods import registry
from capbench.methods.measurer import superseded
from capbench.methods.verdict import LOSSLESS, LOSSY, LOWER_BOUND, measured, verdict, way_forward
from capbench.report import summary, tables
from capbench.report.answers import answers_of
from capbench.report.keys import as_trial
from capbench.trial.accounting import format_pct
from capbench.trial.measure import TrialResult
from capbench.trial.trial_run import Progress


def progress_bar(done: int, total: int, width: int = 24) -> str:
    """[#########---------------] for done of total (plain text: it reads the same in a log)."""
    filled = round(width * done / total) if total else width
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def trial_line(n: int, r: TrialResult) -> str:
    offered, sent = tables.offered_cell(r), tables.sent_cell(r)
    loss = format_pct(r.loss_pct, exact_zero=(r.lost == 0))
    one = r.method in registry.REGISTRY and registry.get(r.method).answer_type is None  # a trial is its result
    what = r.method if one else f"{r.method} {r.purpose}"
    sensor = f"sensor {r.sensor} " if r.sensors else ""
    line = (f"[{n}] {what:<16} {sensor}{r.backend:<7} {r.size_label:>5} B  offered {offered:>9} sent {sent:>10} pps  "
            f"captured {r.rx_pps:>11,.0f} pps ({r.rx_gbps:.3f} Gbps)  loss {loss} %")
    if r.unexplained:
        line += f"  UNEXPLAINED {r.unexplained:,}"
    if r.failure:
        line += f"  FAILED: {r.failure}"
    if verdict(r) == LOWER_BOUND:
        line += "  (generator short, nothing lost: a lower bound)"
    if r.disturbed:
        again = "run again" if superseded(r) else f"run {r.attempt} times, decided on as it is"
        line += f"  {tables.DISTURBED_MARK} DISTURBED: {r.disturbed_reason or 'the host interfered'} ({again})"
    elif r.attempt > 1:
        line += f"  (run {r.attempt}: the host disturbed the run before)"
    return line


def outcome_table(outcomes: Sequence[dict[str, Any]]) -> Table | None:
    """The answers of the searches, one line each in the method's words (MethodAnswer.text): RFC
    2544 throughput, MLR's NDR/PDR, a sweep's first loss, ... An answer that the generator bounded
    (it could not hold the next rate: `bounded_by`) says "generator-bound (a lower bound)", never
    reads as the capture's limit; lines from before `bounded_by` read as they did; a line of a
    method this capbench does not know says so in one line."""
    if not outcomes:
        return None
    t = Table(title="Method answers (searches.jsonl; every trial in trials.jsonl)", title_justify="left")
    for h in ("Method", "Backend", "Frame [B]", "Placement", "Answer", "Trials", "Trial time [s]"):
        t.add_column(Text(h), justify="right" if h in ("Frame [B]", "Trials", "Trial time [s]") else "left")
    for o in outcomes:
        try:
            a = registry.answer_from_json(o)
        except (CapbenchError, TypeError, ValueError, KeyError, AttributeError) as e:
            t.add_row(str(o.get("method", "?")), str(o.get("backend", "?")), str(o.get("frame_len", "?")),
                      str(o.get("pin") or ""), f"not read: {e}", "", "")
            continue
        t.add_row(a.method, a.backend, str(a.frame_len), a.pin or "", a.said(), str(a.trials),
                  f"{a.total_trial_s:.1f}")
    return t


def human_console(*, stderr: bool = False, width: int = 120) -> Console:
    """The console of the human view (stderr with --json): a terminal's own width, else `width`
    (a file or a pipe has none, and rich would take 80 columns and wrap the tables' cells)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=width)


def print_results(trials: Sequence[TrialResult], outcomes: Sequence[dict[str, Any]],
                  console: Console | None = None, advice: Sequence[str] = ()) -> None:
    """Every table of the run, then its answer (print_answer) with `advice`: what to change where
    it lost (the command's, which knows the knobs: tune.knobs.advice_lines)."""
    if console is None:
        console = human_console()
    # iperf-like tables from the iperf trials, the RFC 2544 (#1 A:A / #2 A:B), MLR and
    # back-to-back answers of searches.jsonl, the sweeps; then every answer as one table.
    tables.print_tables(trials, console, outcomes)
    table = outcome_table(outcomes)
    if table is not None:
        console.print(table)
    print_answer(trials, outcomes, console, advice)


ANSWER_TITLE = "The answer"


def print_answer(trials: Sequence[TrialResult], outcomes: Sequence[dict[str, Any]], console: Console,
                 advice: Sequence[str] = ()) -> None:
    """The run's end (issue 28): the answer, as the report's summary gives it: the best backend per
    frame length (a table, its Trials column saying how many trials each row rests on), where each
    backend starts to lose (loss that repeats, with its spread), how sure each point is."""
    records = [as_trial(t) for t in trials]
    if not records:
        return
    found = answers_of(records, outcomes)
    best, losses = summary.summary(records, found)
    headers, rows = summary.best_table(records)
    console.print(Text(f"\n{ANSWER_TITLE}", style="bold"))
    if rows:
        t = Table(title=summary.best_heading(records, found), box=box.SIMPLE_HEAD, title_justify="left")
        for i, h in enumerate(headers):
            t.add_column(Text(h), justify="left" if h in ("Best", "Note") else "right", overflow="fold",
                         no_wrap=i == 0)
        for row in rows:
            t.add_row(*(Text(c) for c in row))
        console.print(t)
    else:
        console.print(Text(summary.best_heading(records, found)))
        for line in best:
            console.print(Text(f"  {line}"))
    if losses:
        console.print(Text("Where each backend starts to lose:"))
        for line in losses:
            console.print(Text(f"  {line}"))
    if advice:
        console.print(Text("What governs the loss, and how to search it:"))
        for line in advice:
            console.print(Text(f"  {line}"))


def trial_progress(n: int, total: int, left_s: float, number: int, records: Sequence[TrialResult]) -> str:
    """The line after each trial (RunCallbacks.on_trial): the bar of this invocation's trials, the
    time left, and the trial (`number`: the place of its first record in the run, a resumed run's
    earlier ones counted); with several sensors, a line more for each further sensor's record."""
    head = f"{progress_bar(n, total, 12)} {n}/~{total} ~{left_s / 60:.1f} min left "
    lines = [head + trial_line(number, records[0])]
    lines += [" " * len(head) + trial_line(number + i, r) for i, r in enumerate(records[1:], 1)]
    return "\n".join(lines)


def search_bounds(trials: Sequence[TrialResult]) -> str | None:
    """Where a step of several trials stands, from its trials so far: the highest offered rate it
    captured without loss and the lowest it lost at (a search's bounds); None before any."""
    trials = [r for r in trials if not superseded(r)]  # the runs the search decided on
    lossless = [r.offered_pps for r in trials if r.offered_pps and verdict(r) == LOSSLESS]
    lossy = [r.offered_pps for r in trials if r.offered_pps and verdict(r) == LOSSY]
    if not lossless and not lossy:
        return None
    low = f"{max(lossless) / 1e6:.3f}" if lossless else "?"
    high = f"{min(lossy) / 1e6:.3f}" if lossy else "?"
    return f"trial {len(trials) + 1}, lossless up to {low} Mpps, lossy from {high} Mpps"


def live_line(step: Step, p: Progress, left_s: float | None = None, trials: Sequence[TrialResult] = ()) -> str:
    """The line of a trial while it sends (the live view): its step (a search's trial and bounds so
    far), its time, the generator's and the counter's running counts, the frames not (yet)
    captured, the receive CPU's busy share, and the run's time left as estimated after the last
    trial."""
    parts = [f"{step.method} {step.backend} {step.size} B at {p.load}: {p.elapsed_s:4.1f}/{p.duration_s:g} s"]
    bounds = search_bounds(trials) if registry.get(step.method).answer_type is not None else None
    if bounds:
        parts.insert(1, f"({bounds})")
    if p.sent is not None:
        parts.append(f"sent {p.sent:,} ({(p.sent_pps or 0) / 1e6:.3f} Mpps)")
    if p.captured is not None:
        parts.append(f"captured {p.captured:,}")
        if p.sent is not None:
            behind = p.sent - p.captured
            parts.append(f"not captured so far {behind:,} ({100 * behind / p.sent if p.sent else 0:.2f} %)")
    if p.rx_cpu_busy_pct is not None:
        parts.append(f"receive CPU {p.rx_cpu} {p.rx_cpu_busy_pct:.0f} % busy")
    if left_s is not None:
        parts.append(f"run: ~{left_s / 60:.1f} min left")
    return "  ".join(parts)


class LiveLine:
    """One line on stderr that a trial rewrites once a second (\r, erase to the end of the line),
    cleared before any other line is written; nothing at all when `enabled` is false (--quiet, or
    not a terminal: a log gets the trial lines only)."""

    def __init__(self, enabled: bool, stream: Any = None):
        self.enabled, self.stream, self.shown = enabled, stream or sys.stderr, False

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((120, 20)).columns
        self.stream.write("\r\033[K" + text[:max(10, width - 1)])
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def step_progress(done: int, total: int, step: Step, left_s: float) -> str | None:
    """The line after each step of several trials (RunCallbacks.on_step); None after a one-trial
    step, whose trial line said it."""
    if registry.get(step.method).answer_type is None:
        return None
    return (f"{progress_bar(done, total)} step {done}/{total} done ({step.method}, {step.backend}, "
            f"{step.size}, {step.pin}); about {left_s / 60:.1f} min left")
