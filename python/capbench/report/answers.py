"""The answers of the search methods: one per search, and their repetitions.

A search (RFC 2544, MLR), a sweep or a back-to-back search is one campaign step; its
trials visit many rates, none of them a repetition of another. What the step found is
its *answer*, and the answer of record is the method's own outcome in searches.jsonl.
Repetitions of a step (`--repeat N`: the same step key but for `rep=`) give one answer
each, reported as median, min–max and standard deviation.

When a run holds no outcome for a search (a run without searches.jsonl, trial records
alone as `capbench run` prints them, a search cut short), the answer is derived from the
trials, and only where the trials decide it:

each method says how (Method.derive: RFC 2544's last passing verification, a sweep's
first lossy step; MLR and back-to-back need their own bookkeeping and have none).

What bounded an answer (`bounded_by`): every trial is judged by the one rule of
capbench.methods.verdict (LOSSLESS, LOSSY whether or not the generator held the rate,
or a LOWER_BOUND: nothing lost, the generator short). An answer whose upper end only
lower bounds failed is "generator-bound (a lower bound)" of the capture's limit, and the
tables say so. Wherever the trials of a search are at hand, what bounded its answer, its
lowest lossy rate and (for a sweep) its edges are judged again from them by today's rule,
so lines of searches.jsonl written under an older rule (before `bounded_by`, or when a
trial that lost frames while its generator fell short was not counted lossy) read as a
search would judge them now; the notes that said what bounded them are written again.
An RFC 2544 line from before `bounded_by` names the bracket's upper end `lowest_lossy_pps`.

The lines are read by the methods' typed answers (capbench.methods.registry, from_json of
every version), and each answer's figures come from its method (MethodAnswer.figures): this
module knows no method by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from capbench.errors import CapbenchError
from capbench.methods import registry
from capbench.methods.method import Bound, Figures, interference_text, load_of
from capbench.methods.verdict import GENERATOR, GENERATOR_BOUND  # noqa: F401 (GENERATOR_BOUND: the report's word)
from capbench.rates import link_name, wire_pps
from capbench.report.keys import SeriesKey, SettingsKey, series_key
from capbench.report.load import Trial
from capbench.report.stats import Metric, Stat, decided, stat_of
from capbench.campaign.results import conforms, numbers, short

# The methods whose answers the report tabulates (a constant-load method has none).
SEARCH_METHODS = tuple(m.name for m in registry.REGISTRY.values() if m.answer_type and m.report_answer)


def _nan(_r: Any) -> float:
    return math.nan  # an answer is not a figure of one trial


def metric(name: str) -> Metric:
    """The Metric of an answer figure, as its method names it (rfc2544_pps, mlr_<GOAL>_pps, ...)."""
    found = next((x for m in registry.REGISTRY.values() if (x := m.metric(name)) is not None), None)
    return Metric(name, found.label if found else name, found.unit if found else "", True, _nan)


def rate_of(t: Trial) -> float:
    """The rate a search asked a trial for (what the answers are made of)."""
    return load_of(t.result)


@dataclass(frozen=True)
class Answer:
    """What one search found (one step, one repetition)."""

    method: str
    series: SeriesKey
    frame_len: int
    repeat: int
    step: str  # the campaign step key ("" for records without one)
    values: dict[str, float | None]  # metric name -> value; None: the search gave no answer for it
    wire_pps: float
    precision_pps: float  # how close to the truth the search got (0: unknown or exact)
    source: str  # "searches.jsonl" or "trials"
    trials: tuple[Trial, ...]
    notes: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)  # verified, short_trials, trial_s, first_lossy_pps, ...
    bounds: dict[str, Bound] = field(default_factory=dict)  # what bounded each figure (by metric name)
    # The answer rests on trials the host disturbed (MethodAnswer.disturbed_note, and the
    # interference measured in words); "": it does not.
    disturbed: str = ""
    interference: str = ""

    @property
    def key(self) -> tuple[SeriesKey, int]:
        return (self.series, self.frame_len)

    def bounded_by(self, name: str) -> str | None:
        """What bounded the answer `name` (metric name): "capture loss", "generator", "none", or
        None when the record does not say."""
        return self.bounds.get(name, Bound()).bounded_by

    def lowest_lossy_pps(self, name: str) -> float | None:
        """The lowest rate at which the capture itself lost too much, for the answer `name`."""
        return self.bounds.get(name, Bound()).lowest_lossy_pps

    def generator_bound(self, name: str) -> bool:
        """The answer `name` is a rate below one the generator could not hold: a lower bound of
        the capture's limit, not the limit."""
        return self.values.get(name) is not None and self.bounded_by(name) == GENERATOR

    def generator_short_pps(self, name: str) -> float | None:
        """The rate the generator could not hold that bounded the answer `name`, if it did."""
        return self.bounds[name].short_pps if self.generator_bound(name) else None


@dataclass(frozen=True)
class AnswerGroup:
    """The repetitions of one search: the answers of one series at one frame length."""

    series: SeriesKey
    frame_len: int
    answers: tuple[Answer, ...]

    @property
    def method(self) -> str:
        return self.series.method

    @property
    def settings_key(self) -> SettingsKey:
        """The key `capbench compare` matches answers by: the step's settings without the rates it visited."""
        return SettingsKey(self.series, self.frame_len, "")

    @property
    def wire_pps(self) -> float:
        return self.answers[0].wire_pps

    @property
    def precision_pps(self) -> float:
        return max(a.precision_pps for a in self.answers)

    @property
    def pin(self) -> str:
        return self.series.placement.split(" (")[0]

    def metrics(self) -> list[str]:
        names: list[str] = []
        for a in self.answers:
            names += [n for n in a.values if n not in names]
        return names

    def values(self, name: str) -> list[float]:
        return [v for a in self.answers if (v := a.values.get(name)) is not None]

    def stat(self, name: str) -> Stat | None:
        """Median, min–max and sd over the repetitions that gave an answer; None when none did."""
        v = self.values(name)
        return stat_of(v) if v else None

    def info_values(self, key: str) -> list[Any]:
        return [a.info[key] for a in self.answers if a.info.get(key) is not None]

    def generator_bound(self, name: str) -> list[Answer]:
        """The repetitions whose answer `name` the generator bounded (a lower bound of the capture's)."""
        return [a for a in self.answers if a.generator_bound(name)]

    def generator_short_pps(self, name: str) -> list[float]:
        """The rates the generator could not hold that bounded the repetitions' answers `name`."""
        return [x for a in self.answers if (x := a.generator_short_pps(name)) is not None]

    @property
    def disturbed(self) -> tuple[Answer, ...]:
        """The repetitions whose answer rests on trials the host disturbed."""
        return tuple(a for a in self.answers if a.disturbed)

    @property
    def notes(self) -> list[str]:
        out: list[str] = []
        for a in self.answers:
            out += [n for n in a.notes if n not in out]
        return out


def main_metric(method: str, names: Sequence[str] = ()) -> str | None:
    """The figure that stands for a search: its throughput (MLR: the first goal, NDR by default)."""
    m = registry.REGISTRY.get(method)
    return m.main_metric(names) if m is not None else None


# --- from searches.jsonl -----------------------------------------------------------


# The fields of a method answer (searches.jsonl, methods.dispatch writes them) that the report
# reads, with the types it reads them as; a line holding another type is left out (check_outcome).
_NUMBER, _COUNT, _TEXT, _FLAG = float | None, int | None, str | None, bool | None
OUTCOME_FIELDS: dict[str, Any] = {
    "method": str, "backend": str, "frame_len": int, "step": _TEXT, "repeat": _COUNT, "pin": _TEXT,
    "app_load": _TEXT, "procs": _COUNT, "link_bps": _NUMBER, "wire_pps": _NUMBER, "precision_pct": _NUMBER,
    "notes": tuple[str, ...], "note": _TEXT, "throughput_pps": _NUMBER, "verified": _FLAG, "short_trials": _FLAG,
    "trial_s": _NUMBER, "verification_failures_pps": tuple[float, ...], "upper_bound_pps": _NUMBER,
    "lowest_lossy_pps": _NUMBER, "bounded_by": _TEXT, "loss_tolerance_frames": _COUNT, "final_trial_s": _NUMBER,
    "goals": tuple[dict[str, Any], ...], "lossless_up_to_pps": _NUMBER, "first_lossy_pps": _NUMBER,
    "steps": _COUNT, "short_steps_pps": tuple[float, ...], "mean_frames": _NUMBER, "precision_frames": _NUMBER,
    "unlimited": _FLAG, "max_frames": _COUNT,
}
GOAL_FIELDS: dict[str, Any] = {
    "name": str, "throughput_pps": _NUMBER, "lower_bound_pps": _NUMBER, "upper_bound_pps": _NUMBER,
    "note": _TEXT, "loss_ratio": _NUMBER, "exceed_ratio": _NUMBER, "bounded_by": _TEXT, "lowest_lossy_pps": _NUMBER,
}


def check_outcome(o: dict[str, Any]) -> str | None:
    """Why the report cannot read the method answer `o` (None: it can): a field of OUTCOME_FIELDS
    (or of a goal, GOAL_FIELDS) missing or of another type, a number below zero, or a value reading
    it fails on. Method, backend, frame length and a goal's name must be there (the others may not)."""
    for fields, d in [(OUTCOME_FIELDS, o)] + [(GOAL_FIELDS, g) for g in o.get("goals") or () if isinstance(g, dict)]:
        for name, tp in fields.items():
            if (name in d or tp in (str, int)) and not conforms(d.get(name), tp):
                return f"{name} is {short(d.get(name))}, not {getattr(tp, '__name__', tp)}"
            if name in d and (any(x < 0 for x in numbers(d[name])) or (name == "frame_len" and d[name] == 0)):
                return f"{name} is {short(d[name])}: {'zero' if d[name] == 0 else 'below zero'}"
    try:
        _from_outcome(o, _series_of_outcome(o, "xdp"), ())
    except CapbenchError as e:
        return str(e)
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as e:
        return f"a value the report cannot read ({e})"
    return None


def _answer(method: str, series: SeriesKey, frame_len: int, repeat: int, step: str, wire: float,
            trials: tuple[Trial, ...], source: str, f: Figures) -> Answer:
    return Answer(method, series, frame_len, repeat, step, f.values, wire, f.precision, source, trials, f.notes, f.info,
                  f.bounds)


def _from_outcome(o: dict[str, Any], series: SeriesKey, trials: tuple[Trial, ...]) -> Answer:
    """The answer of a searches.jsonl line, its figures by its method (judged again from its
    trials when they are at hand)."""
    a = registry.answer_from_json(o)
    wire = a.wire_pps or wire_pps(a.link_bps or (trials[0].result.link_bps if trials else 1e9), a.frame_len)
    found = _answer(a.method, series, a.frame_len, a.repeat or 1, a.step or "", wire, trials, "searches.jsonl",
                    a.figures(tuple(t.result for t in trials), wire))
    note = a.disturbed_note()
    if not note:
        return found
    return dataclasses.replace(found, notes=(*found.notes, note), disturbed=note,
                               interference=interference_text(a.interference))


def _series_of_outcome(o: dict[str, Any], engine: str) -> SeriesKey:
    """A series for an answer whose trials are not in trials.jsonl (a line cut by a crash)."""
    pin = str(o.get("pin") or "auto")
    extra = (("procs", str(o["procs"])),) if o.get("procs") is not None else ()
    return SeriesKey(method=str(o["method"]), backend=str(o["backend"]), link=link_name(float(o.get("link_bps") or 1e9)),
                     engine=engine, app_load=str(o.get("app_load") or "touch"), placement=pin, extra=extra)


# --- from the trials ---------------------------------------------------------------


def _derived(method: str, ts: tuple[Trial, ...], loss_tolerance_frames: int, precision_pct: float | None) -> Answer:
    r = ts[0].result
    found = registry.get(method).derive(tuple(t.result for t in ts), loss_tolerance_frames, precision_pct)
    if found is None:
        found = Figures({}, notes=(f"no {method} answer in searches.jsonl, and it is not derived from trials",))
    return _answer(method, series_key(ts[0]), r.frame_len, r.repeat, r.step, wire_pps(r.link_bps, r.frame_len), ts,
                   "trials", found)


def answers_of(trials: Iterable[Trial], outcomes: Iterable[dict[str, Any]] = (), loss_tolerance_frames: int = 0,
               precision_pct: float | None = None, engine: str = "?") -> list[Answer]:
    """Every search's answer, in the order the searches ran (module doc): from its outcome in
    searches.jsonl when there is one, else from its trials."""
    by_step: dict[str, list[Trial]] = {}
    for t in decided(trials):  # what the searches decided on: not the runs the host spoiled
        if t.method not in SEARCH_METHODS:
            continue
        r = t.result
        key = r.step or f"{t.method}|{series_key(t)}|{r.frame_len}"  # records without steps: one search per setting
        by_step.setdefault(key, []).append(t)
    outcomes = [o for o in outcomes if o.get("method") in SEARCH_METHODS]
    with_step = {str(o["step"]): o for o in outcomes if o.get("step")}
    loose = [o for o in outcomes if not o.get("step")]  # answers of runs from before campaigns
    out: list[Answer] = []
    for key, ts in by_step.items():
        method, r = ts[0].method, ts[0].result
        o = with_step.pop(key, None)
        if o is None and not r.step:
            o = next((x for x in loose if (x["method"], x["backend"], x["frame_len"]) == (method, r.backend,
                                                                                           r.frame_len)), None)
            if o is not None:
                loose.remove(o)
        out.append(_from_outcome(o, series_key(ts[0]), tuple(ts)) if o is not None
                   else _derived(method, tuple(ts), loss_tolerance_frames, precision_pct))
    # Answers whose trials are not in trials.jsonl: the series is rebuilt from the outcome.
    for o in [*with_step.values(), *loose]:
        out.append(_from_outcome(o, _series_of_outcome(o, engine), ()))
    return out


def group_answers(answers: Iterable[Answer]) -> dict[tuple[SeriesKey, int], AnswerGroup]:
    """Answers by series and frame length, repetitions together, in the order they ran."""
    lists: dict[tuple[SeriesKey, int], list[Answer]] = {}
    for a in answers:
        lists.setdefault(a.key, []).append(a)
    return {k: AnswerGroup(k[0], k[1], tuple(sorted(v, key=lambda a: a.repeat))) for k, v in lists.items()}


def run_answers(run: Any) -> list[Answer]:
    """The answers of a RunData (report.load): its outcomes, its trials, its settings."""
    settings = (run.meta.get("settings") or {})
    campaign = settings.get("campaign") if isinstance(settings.get("campaign"), dict) else {}
    precision = campaign.get("precision_pct", settings.get("precision_pct"))
    engine = campaign.get("engine", settings.get("engine", "?"))
    return answers_of(run.trials, run.outcomes, run.loss_tolerance_frames,
                      float(precision) if isinstance(precision, (int, float)) else None, str(engine))


def results_answers(results: Iterable[Any], outcomes: Iterable[dict[str, Any]] = (),
                    loss_tolerance_frames: int = 0) -> list[Answer]:
    """The answers of TrialResults as `capbench run` holds them (no run directory read)."""
    return answers_of([Trial(r, r.to_record(), r.method) for r in results], outcomes, loss_tolerance_frames)


# --- the answers as tables (terminal, Markdown, HTML) -----------------------------


@dataclass(frozen=True)
class AnswerTable:
    """A table as text cells, for the terminal, Markdown and HTML alike."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str]
    classes: list[str] = field(default_factory=list)  # one per row: "short", "lossy", "unexplained" or ""


def tables(answers: Iterable[Answer]) -> list[AnswerTable]:
    """The searches' answers as tables, each method's in its layout (report.answer_tables)."""
    from capbench.report import answer_tables  # it builds on this module

    return answer_tables.tables(answers)
