"""tune/tune.json: what a tune found for each backend, as records.

`capbench tune` writes one TuneSummary per backend it tuned (tune.output); `capbench report`
reads them back (read_summaries) and leads its page with them, so that the report of a tune
says what the tune said. The records are declared once, here: the writer fills these classes,
the reader checks a file against the same declarations (records.fields_problem).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capbench import inputs
from capbench.errors import CapbenchError
from capbench.records import RecordError, control_text, fields_problem, from_json, number_problem, plain, short
from capbench.report.stats import fmt_stat, stat_of

TUNE_DIR = "tune"  # in the results folder
TUNE_FILE = "tune.json"
TUNE_SCHEMA = 1
UNITS = ("pps", "pct")  # a goal's quantity (tuning.Goal.unit)
# A tune of a few hundred configurations writes some hundred KiB: a file far larger is none of its.
TUNE_FILE_LIMIT = 16 << 20
DEFAULTS_INDEX = 0  # the defaults' number in a tune's space: the configuration every race keeps


@dataclass(frozen=True)
class KnobAxis:
    """A knob the tune searched: its name as --knobs gives it, its default (None: the backend's or
    the test bed's own) and the values it tried."""

    name: str
    default: str | None
    candidates: tuple[str, ...]


@dataclass(frozen=True)
class Ranked:
    """One configuration in the tune's ranking, best first."""

    rank: int
    index: int  # its number in the tune's space (DEFAULTS_INDEX: the defaults)
    config: dict[str, str]  # knob -> value; {} for the defaults
    label: str
    trial_s: float  # the trial length its values are from: the race's for a finalist
    values: tuple[float, ...]  # the goal of each repetition at that length (those with an answer)
    screening_values: tuple[float, ...]  # the goal at the first rung (the shortest trials)
    finalist: bool  # raced in the final rung
    cpu_ns: float | None  # CPU per packet, the median over those repetitions
    layers_pct: dict[str, float]  # where the remaining loss was, by layer (median share)
    verdict: str  # "best", "within noise of the best (p …)", "worse beyond noise (p …)", "out after rung N", …
    disturbed: bool  # a measurement the host disturbed is among its values
    cpu_groups_pct: dict[str, dict[str, float]] = field(default_factory=dict)  # --profile: role -> group -> %

    @property
    def is_defaults(self) -> bool:
        return self.index == DEFAULTS_INDEX


@dataclass(frozen=True)
class Unscreened:
    """A configuration the budget did not reach."""

    index: int
    config: dict[str, str]
    label: str


@dataclass(frozen=True)
class TuneSummary:
    """What a tune found for one backend or capture program."""

    schema: int
    backend: str
    goal: str  # as --goal names it
    goal_title: str  # as the tables say it ("PDR")
    unit: str  # report.units quantity of the goal: "pps" or "pct"
    size: str  # the frame length or traffic profile tuned at
    knobs: tuple[KnobAxis, ...]
    first_trial_s: float  # the first rung's trial length (the screening)
    final_trial_s: float  # the race's
    spent_s: float
    best_line: str  # the tune's answer, as it printed it
    ranking: tuple[Ranked, ...]
    run: tuple[str, ...]  # the best configuration's `capbench run` line
    defaults_run: tuple[str, ...]
    reasons: tuple[str, ...]  # what the account (and profiles) say the best changed
    unscreened: tuple[Unscreened, ...] = ()
    command: str = ""  # a capture program's command with the best values filled in

    @property
    def best(self) -> Ranked:
        return self.ranking[0]

    @property
    def defaults(self) -> Ranked | None:
        return next((r for r in self.ranking if r.is_defaults), None)


def goal_text(unit: str, values: Sequence[float]) -> str:
    """A configuration's goal over its repetitions: their mean (what the race ranks by and Welch's
    test compares), min–max, sd and count; "not measured" for none (a measurement without an
    answer is left out of them: tuning.Goal.value)."""
    if not values:
        return "not measured"
    s = stat_of(values)
    if unit == "pps":
        return fmt_stat(s.scaled(1e-3), ",.0f", n=True, mean=True) + " kpps"
    return fmt_stat(s, ".3g", n=True, mean=True) + " %"


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def layers_text(layers: dict[str, float]) -> str:
    shown = [(n, v) for n, v in sorted(layers.items(), key=lambda x: -x[1]) if v > 0]
    return ", ".join(f"{n} {v:.2g} %" for n, v in shown) or "none"


def cpu_text(ns: float | None) -> str:
    return "—" if ns is None else f"{ns:,.0f} ns"


def verdict_text(defaults: bool, verdict: str, disturbed: bool) -> str:
    """A ranking's Verdict cell: "defaults, " for the defaults' row, the verdict, "(disturbed)"
    where the host disturbed one of its measurements."""
    return ", ".join(x for x in ("defaults" if defaults else "", verdict + (" (disturbed)" if disturbed else "")) if x)


def to_json(summaries: Sequence[TuneSummary]) -> str:
    return json.dumps([plain(s) for s in summaries], indent=2) + "\n"


def summary_problem(item: object) -> str | None:
    """Why one element of tune.json is no TuneSummary this capbench wrote, as far as its shape
    shows (None: it may be one; the constructor says which field is missing)."""
    if not isinstance(item, dict):
        return f"an element is {short(item)}, not an object"
    version = item.get("schema")
    if version != TUNE_SCHEMA or isinstance(version, bool):
        return (f"schema {short(version)}, this capbench reads {TUNE_SCHEMA}" if "schema" in item
                else "written by a capbench before tune.json had a schema")
    problem = fields_problem(TuneSummary, item) or number_problem("the summary", item)
    if problem:
        return problem
    text = control_text(item)
    return f"holds {text}, a text with a control character" if text is not None else None


def meaning_problem(s: TuneSummary) -> str | None:
    """Why a summary of the right shape holds no tune's answer (None: it does)."""
    if s.unit not in UNITS:
        return f"unit is {short(s.unit)}, not one of {', '.join(UNITS)}"
    if not s.ranking:
        return "its ranking is empty"
    return None


def parse(text: str) -> list[TuneSummary]:
    """The summaries of a tune.json's text; RecordError saying why when it holds none capbench wrote."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise RecordError("corrupt", f"not JSON ({str(e)[:80]})") from None
    if not isinstance(doc, list) or not doc:
        raise RecordError("invalid", f"{short(doc)} is not a list of tune summaries")
    out = []
    for item in doc:
        problem = summary_problem(item)
        if problem:
            raise RecordError("invalid", problem)
        s = from_json(TuneSummary, item, "tune summary")
        problem = meaning_problem(s)
        if problem:
            raise RecordError("invalid", problem)
        out.append(s)
    return out


def read_summaries(run_path: Path, notes: list[str]) -> list[TuneSummary]:
    """The tune summaries of a results folder ([] where it holds no tune); a file that cannot be
    read, or holds what no capbench wrote, adds a note and is left out."""
    path = run_path / TUNE_DIR / TUNE_FILE
    try:
        text = inputs.read_text(path, what="a tune summary", limit=TUNE_FILE_LIMIT, missing_ok=True)
    except CapbenchError as e:
        notes.append(f"{e}: the tune's ranking is left out.")
        return []
    if text is None:
        return []
    try:
        return parse(text)
    except RecordError as e:
        notes.append(f"{TUNE_DIR}/{TUNE_FILE}: {e.why}: the tune's ranking is left out.")
        return []
