"""A run directory as the report sees it: run.json, the trials, the method answers
(searches.jsonl, when the run used a search method), a tune's answer (tune/tune.json, when the
run was a tune), and what could not be read.

Reports read nothing else, so they can be redrawn on another machine. Bad input ends
with a UsageError (exit status 2) only where nothing can be drawn; a line cut by a
crash, or records of another version among readable ones, are skipped and counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench.campaign.results import (RUN_FILE, SEARCHES_FILE, TRIALS_FILE, SkippedLine, load_run_meta,
                                       read_outcomes, read_run_raw, scan_trials)
from capbench.errors import CapbenchError, UsageError
from capbench.inputs import check_dir, shown
from capbench.trial.record import TrialResult


@dataclass(frozen=True)
class Trial:
    """One trial: its typed result, and its record as written (fields of newer methods
    such as `method` or `latency` are read from the record)."""

    result: TrialResult
    record: dict[str, Any] = field(compare=False)
    method: str = "iperf"


@dataclass(frozen=True)
class RunData:
    path: Path
    meta: dict[str, Any]  # run.json; {} when it is missing or unreadable (see notes)
    trials: list[Trial]
    skipped: list[SkippedLine]
    notes: list[str]  # what the reader must know about the input: skipped lines, a missing run.json
    # The method answers (searches.jsonl): RFC 2544 throughput, MLR bounds, a sweep's first loss.
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    # A tune's answer per backend (tune/tune.json: tune_summary.TuneSummary); [] for a run.
    tunes: list[Any] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.resolve().name

    @property
    def loss_tolerance_frames(self) -> int:
        """The frames a search trial could lose and still pass (run.json; 0, RFC 2544's, when unknown)."""
        return loss_tolerance_of(self.meta)


def loss_tolerance_of(meta: dict[str, Any]) -> int:
    settings = meta.get("settings") or {}
    for where in (settings.get("campaign") or {}, settings):
        value = where.get("loss_tolerance_frames") if isinstance(where, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def _read_outcomes(path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The method answers the report can read: results.read_outcomes's, each also read once the
    way the report reads it (answers.check_outcome), so a wrong value is a skipped line, not a crash."""
    from capbench.report import answers  # answers reads this module's Trial

    skipped: list[tuple[int, str]] = []
    try:
        good = read_outcomes(path, skipped, check=answers.check_outcome)
    except CapbenchError as e:
        notes.append(f"{e}: the method answers are derived from the trials instead.")
        return []
    cut = [n for n, why in skipped if why.startswith("not JSON")]
    if cut:
        where = ", ".join(map(str, cut))
        notes.append(f"{len(cut)} line{'s' if len(cut) > 1 else ''} of {SEARCHES_FILE} skipped: not JSON (line "
                     f"{where}; a line cut by a crash is its search in flight, which `--resume` runs again).")
    other = [(n, why) for n, why in skipped if not why.startswith("not JSON")]
    if other:
        n = len(other)
        lines = [f"line {k}: {why}" for k, why in other[:3]]
        notes.append(f"{n} line{'s' if n > 1 else ''} of {SEARCHES_FILE} skipped: not a method answer "
                     f"({'; '.join(lines)}{'; ...' if n > 3 else ''}).")
    return good


def _read_meta(path: Path, notes: list[str]) -> dict[str, Any]:
    try:
        raw = read_run_raw(path, missing_ok=True)
    except CapbenchError as e:
        notes.append(f"{e}: the machine and settings of this run are unknown.")
        return {}
    if raw is None:
        notes.append(f"{RUN_FILE} is missing: the machine and settings of this run are unknown.")
        return {}
    if not isinstance(raw, dict):
        notes.append(f"{RUN_FILE} is not a JSON object: the machine and settings are unknown.")
        return {}
    meta, wrong = load_run_meta(raw, path)
    for text in wrong:
        notes.append(f"{text}: left out of the report.")
    return meta


def _skipped_note(skipped: list[SkippedLine]) -> str:
    invalid = next((s.why for s in skipped if s.kind == "invalid"), "")
    kinds = {"truncated": "cut short (a crash while writing)", "corrupt": "unreadable",
             "invalid": f"impossible, left out of every table and figure (the first: {invalid})",
             "schema": "of another schema version"}
    parts = []
    for kind, text in kinds.items():
        lines = [s.line for s in skipped if s.kind == kind]
        if lines:
            parts.append(f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))} {text}")
    n = len(skipped)
    return f"{n} line{'s' if n > 1 else ''} of {TRIALS_FILE} skipped: {'; '.join(parts)}."


def load_run(path: Path | str) -> RunData:
    """Read a results directory of `capbench run`; UsageError where nothing can be drawn."""
    path = Path(path)
    if not check_dir(path, what="results directory"):
        raise UsageError(f"cannot read {shown(path)}: no such directory: give a results directory of `capbench run` "
                         f"(results/<UTC time>/)")
    if not os.path.lexists(path / TRIALS_FILE):  # lexists: False, not OSError, for a path too long
        what = "no results" if not os.path.lexists(path / RUN_FILE) else f"no {TRIALS_FILE} (the run recorded no trial)"
        raise UsageError(f"{path} holds {what}: give a results directory of `capbench run` (results/<UTC time>/)")
    notes: list[str] = []
    meta = _read_meta(path, notes)
    # A record written before trials carried their method was run by the run's method.
    scan = scan_trials(path, defaults={"method": str((meta.get("settings") or {}).get("method") or "iperf")})
    if not scan.trials:
        if scan.skipped and all(s.kind == "schema" for s in scan.skipped):
            raise UsageError(f"{scan.skipped[0].message}: report these results with the capbench that wrote them")
        if scan.skipped:
            raise UsageError(f"{scan.path} holds no readable trial ({_skipped_note(scan.skipped).rstrip('.')})")
        raise UsageError(f"{scan.path} holds no trial: the run (status {meta.get('status', 'unknown')}) ended "
                         f"before its first trial finished")
    if scan.skipped:
        notes.insert(0, _skipped_note(scan.skipped))
    trials = [Trial(r, rec, r.method) for r, rec in zip(scan.trials, scan.records)]
    # Read here, not at the top: the summary's formatting (report.stats) reads this module's Trial.
    from capbench.report.tune_summary import read_summaries

    return RunData(path=path, meta=meta, trials=trials, skipped=scan.skipped, notes=notes,
                   outcomes=_read_outcomes(path, notes), tunes=read_summaries(path, notes))
