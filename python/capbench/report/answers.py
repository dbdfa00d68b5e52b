"""The answers of the search methods: one per search, and their repetitions.

A search (RFC 2544, MLR), a sweep or a back-to-back search is one campaign step; its
trials visit many rates, none of them a repetition of another. What the step found is
its *answer*, and the answer of record is the method's own outcome in searches.jsonl.
Repetitions of a step (`--repeat N`: the same step key but for `rep=`) give one answer
each, reported as median, min–max and standard deviation.

When a run holds no outcome for a search (a run without searches.jsonl, trial records
alone as `capbench run` prints them, a search cut short), the answer is derived from the
trials, and only where the trials decide it:

- rfc2544: the rate of the last verification trial (purpose "verify") that passed. A
  search pass that its verification then failed was distorted (seed 000's saturation)
  and is never the throughput; without a passing verification there is no answer;
- sweep: the offered rate of the first step that lost packets and the highest step
  below it; a sweep cut short before its last step without a loss has no answer yet;
- mlr, back2back: their answers need the search's own bookkeeping (load classes, burst
  repetitions): without searches.jsonl they have none.

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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from capbench.methods import mlr as mlr_method
from capbench.methods import rfc2544 as rfc2544_method
from capbench.methods import sweep as sweep_method
from capbench.methods.verdict import (
    CAPTURE_AT_SENT_RATE,
    GENERATOR,
    LOSSLESS,
    SET_BY_GENERATOR,
    STOPPED_BY_GENERATOR,
    verdict,
)
from capbench.rates import link_name, wire_bps, wire_pps
from capbench.report.keys import SeriesKey, SettingsKey, series_key
from capbench.report.load import Trial
from capbench.report.stats import Metric, Stat, stat_of
from capbench.campaign.results import conforms, numbers, short

SEARCH_METHODS = ("rfc2544", "mlr", "sweep", "back2back")
RFC2544_TRIAL_S = 60.0
_STEP = re.compile(r"^step (\d+)/(\d+)$")
GENERATOR_BOUND = "generator-bound (a lower bound)"


def _nan(_r: Any) -> float:
    return math.nan  # an answer is not a figure of one trial


def metric(name: str) -> Metric:
    """The Metric of an answer figure: rfc2544_pps, sweep_lossless_pps, b2b_frames, mlr_<GOAL>_pps."""
    if name in METRICS:
        return METRICS[name]
    goal = name.removeprefix("mlr_").removesuffix("_pps")
    return Metric(name, f"MLR {goal}", "pps", True, _nan)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("rfc2544_pps", "RFC 2544 throughput", "pps", True, _nan),
    Metric("sweep_lossless_pps", "sweep: no loss up to", "pps", True, _nan),
    Metric("b2b_frames", "back-to-back burst", "frames", True, _nan),
)}


def rate_of(t: Trial) -> float:
    """The rate a search asked a trial for (what the answers are made of)."""
    r = t.result
    return r.offered_pps if r.offered_pps is not None else r.achieved_pps


def trial_passed(t: Trial, loss_tolerance_frames: int = 0) -> bool:
    """As RFC 2544's search judges a trial: LOSSLESS (the generator held the load, at most the tolerated loss)."""
    return verdict(t.result, loss_tolerance_frames) == LOSSLESS


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

    @property
    def key(self) -> tuple[SeriesKey, int]:
        return (self.series, self.frame_len)

    def bounded_by(self, name: str) -> str | None:
        """What bounded the answer `name` (metric name): "capture loss", "generator", "none", or
        None when the record does not say."""
        if name.startswith("mlr_"):
            return self.info.get(name.removesuffix("_pps") + "_bounded_by")
        return self.info.get("bounded_by")

    def generator_bound(self, name: str) -> bool:
        """The answer `name` is a rate below one the generator could not hold: a lower bound of
        the capture's limit, not the limit."""
        return self.values.get(name) is not None and self.bounded_by(name) == GENERATOR

    def generator_short_pps(self, name: str) -> float | None:
        """The rate the generator could not hold that bounded the answer `name`, if it did."""
        if not self.generator_bound(name):
            return None
        if name.startswith("mlr_"):
            return self.info.get(name.removesuffix("_pps") + "_upper_pps")
        if self.method == "sweep":
            top = self.values.get(name) or 0.0
            return next((float(x) for x in self.info.get("short_steps_pps") or () if float(x) > top), None)
        return self.info.get("upper_bound_pps")


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
    def notes(self) -> list[str]:
        out: list[str] = []
        for a in self.answers:
            out += [n for n in a.notes if n not in out]
        return out


def main_metric(method: str, names: Sequence[str] = ()) -> str | None:
    """The figure that stands for a search: its throughput (MLR: the first goal, NDR by default)."""
    fixed = {"rfc2544": "rfc2544_pps", "sweep": "sweep_lossless_pps", "back2back": "b2b_frames"}
    if method in fixed:
        return fixed[method]
    return next((n for n in names if n.startswith("mlr_")), None)


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
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as e:
        return f"a value the report cannot read ({e})"
    return None


def _from_outcome(o: dict[str, Any], series: SeriesKey, trials: tuple[Trial, ...]) -> Answer:
    method, frame_len = str(o["method"]), int(o["frame_len"])
    link = float(o.get("link_bps") or (trials[0].result.link_bps if trials else 1e9))
    wire = float(o.get("wire_pps") or wire_pps(link, frame_len))
    precision = wire * float(o["precision_pct"]) / 100.0 if o.get("precision_pct") else 0.0
    values: dict[str, float | None] = {}
    info: dict[str, Any] = {}
    notes = [str(n) for n in o.get("notes") or ()]
    tried = [(rate_of(t), t.result) for t in trials]
    if method == "rfc2544":
        values["rfc2544_pps"] = float(o.get("throughput_pps") or 0.0)
        info = {"verified": bool(o.get("verified")), "short_trials": bool(o.get("short_trials")),
                "trial_s": o.get("trial_s"),
                "verification_failures_pps": list(o.get("verification_failures_pps") or ())}
        # A line from before bounded_by: its lowest_lossy_pps is the bracket's upper end.
        upper = o.get("upper_bound_pps") if "bounded_by" in o else o.get("lowest_lossy_pps")
        if trials:  # judged again from the trials, by today's rule (module doc)
            tolerance = int(o.get("loss_tolerance_frames") or 0)
            bounded = rfc2544_method.what_bounded(upper, tried, tolerance) or o.get("bounded_by")
            info |= {"upper_bound_pps": upper, "bounded_by": bounded,
                     "lowest_lossy_pps": rfc2544_method.lowest_lossy(tried, tolerance)}
            notes = _without_bound_notes(notes) + rfc2544_method.bound_notes(
                bounded, upper, values["rfc2544_pps"] or 0.0, tried, tolerance)
        elif "bounded_by" in o:
            info |= {"lowest_lossy_pps": o.get("lowest_lossy_pps"), "upper_bound_pps": upper,
                     "bounded_by": o["bounded_by"]}
        else:  # nothing says what bounded it: read as it was written
            info |= {"upper_bound_pps": upper, "bounded_by": None, "lowest_lossy_pps": upper}
    elif method == "mlr":
        final_s = float(o.get("final_trial_s") or RFC2544_TRIAL_S)
        for g in o.get("goals") or ():
            name = f"mlr_{g['name']}"
            values[f"{name}_pps"] = float(g.get("throughput_pps") or g.get("lower_bound_pps") or 0.0)
            upper = g.get("upper_bound_pps")
            info[f"{name}_upper_pps"] = upper
            note = str(g.get("note") or "")
            if trials:  # judged again from the trials, by today's rule (module doc)
                c = mlr_method.Criterion(float(g.get("loss_ratio") or 0.0), float(g.get("exceed_ratio") or 0.0),
                                         final_s, final_s)
                bounded, lowest = mlr_method.what_bounded(
                    ((rate_of(t), t.result.requested_duration_s, t.result) for t in trials), c, upper)
                info[f"{name}_bounded_by"] = bounded or g.get("bounded_by")
                info[f"{name}_lowest_lossy_pps"] = lowest
                kept = _without_bound_notes(note.split("; ") if note else [])
                bound = mlr_method.bound_note(info[f"{name}_bounded_by"], upper, values[f"{name}_pps"], tried,
                                              c.loss_ratio)
                note = "; ".join([*kept, bound] if bound else kept)
            else:
                info[f"{name}_bounded_by"] = g.get("bounded_by")
                info[f"{name}_lowest_lossy_pps"] = g.get("lowest_lossy_pps")
            if note:
                notes.append(f"{g['name']}: {note}")
        info["trial_s"] = o.get("final_trial_s")
        info["short_trials"] = (o.get("final_trial_s") or RFC2544_TRIAL_S) < RFC2544_TRIAL_S
    elif method == "sweep":
        values["sweep_lossless_pps"] = float(o.get("lossless_up_to_pps") or 0.0)
        info = {"first_lossy_pps": o.get("first_lossy_pps"), "steps": o.get("steps"), "trial_s": o.get("trial_s"),
                "short_steps_pps": list(o.get("short_steps_pps") or ()), "bounded_by": o.get("bounded_by")}
        if trials:  # judged again from the trials, by today's rule: its edges are the steps' verdicts
            edges = _sweep_edges(trials)
            values["sweep_lossless_pps"] = edges.lossless_up_to_pps or 0.0
            info |= {"first_lossy_pps": edges.first_lossy_pps, "short_steps_pps": list(edges.short_steps_pps),
                     "bounded_by": edges.bounded_by}
    elif method == "back2back":
        values["b2b_frames"] = float(o.get("mean_frames") or 0.0)
        precision = float(o.get("precision_frames") or 0.0)
        info = {"unlimited": o.get("unlimited"), "max_frames": o.get("max_frames"), "bounded_by": o.get("bounded_by")}
    return Answer(method, series, frame_len, int(o.get("repeat") or 1), str(o.get("step") or ""), values, wire,
                  precision, "searches.jsonl", trials, tuple(notes), info)


def _series_of_outcome(o: dict[str, Any], engine: str) -> SeriesKey:
    """A series for an answer whose trials are not in trials.jsonl (a line cut by a crash)."""
    pin = str(o.get("pin") or "auto")
    extra = (("procs", str(o["procs"])),) if o.get("procs") is not None else ()
    return SeriesKey(method=str(o["method"]), backend=str(o["backend"]), link=link_name(float(o.get("link_bps") or 1e9)),
                     engine=engine, app_load=str(o.get("app_load") or "touch"), placement=pin, extra=extra)


def _without_bound_notes(notes: Iterable[str]) -> list[str]:
    """Notes without those that said what bounded the answer (the generator, or capture loss at
    the rate it sent): the caller writes them again from the trials, by today's rule."""
    return [n for n in notes if not n.endswith((SET_BY_GENERATOR, CAPTURE_AT_SENT_RATE, STOPPED_BY_GENERATOR))]


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6)


def _sweep_edges(ts: Sequence[Trial]) -> sweep_method.LossEdges:
    """Where a sweep's steps start to lose, by each step's verdict (as the sweep judges its steps)."""
    return sweep_method.loss_edges((rate_of(t), verdict(t.result)) for t in ts)


# --- from the trials ---------------------------------------------------------------


def _derived(method: str, ts: tuple[Trial, ...], loss_tolerance_frames: int, precision_pct: float | None) -> Answer:
    first = ts[0]
    r = first.result
    series, frame_len = series_key(first), r.frame_len
    wire = wire_pps(r.link_bps, frame_len)
    values: dict[str, float | None] = {}
    info: dict[str, Any] = {}
    notes: list[str] = []
    precision = 0.0
    if method == "rfc2544":
        precision = wire * precision_pct / 100.0 if precision_pct else 0.0
        verifies = [t for t in ts if t.result.purpose == "verify"]
        passed = [t for t in verifies if trial_passed(t, loss_tolerance_frames)]
        failed = [rate_of(t) for t in verifies if not trial_passed(t, loss_tolerance_frames)]
        if passed:
            values["rfc2544_pps"] = rate_of(passed[-1])
        else:
            values["rfc2544_pps"] = None
            notes.append("no verification trial passed: no throughput (the search found no rate, or was cut short)"
                         if verifies or any(t.result.purpose for t in ts) else
                         "the trials name no verification trial: no throughput can be taken from them")
        tried = [(rate_of(t), t.result) for t in ts]
        # The search's bracket narrows with every failure: its upper end is the lowest rate that failed.
        upper = min((x for x, r in tried if verdict(r, loss_tolerance_frames) != LOSSLESS), default=None)
        bounded = rfc2544_method.what_bounded(upper, tried, loss_tolerance_frames)
        info = {"verified": bool(passed), "short_trials": any(t.result.requested_duration_s < RFC2544_TRIAL_S
                                                               for t in ts),
                "trial_s": max(t.result.requested_duration_s for t in ts), "verification_failures_pps": failed,
                "upper_bound_pps": upper, "bounded_by": bounded,
                "lowest_lossy_pps": rfc2544_method.lowest_lossy(tried, loss_tolerance_frames)}
        notes += rfc2544_method.bound_notes(bounded, upper, values["rfc2544_pps"] or 0.0, tried,
                                            loss_tolerance_frames)
        if failed:
            notes.append(f"verification failed at {', '.join(f'{x:,.0f}' for x in failed)} pps: a distorted pass, "
                         f"searched on below it")
    elif method == "sweep":
        steps = [(int(m.group(1)), int(m.group(2))) for t in ts if (m := _STEP.match(t.result.purpose))]
        complete = not steps or any(i == n for i, n in steps)
        edges = _sweep_edges(ts)  # as the sweep judges its steps
        if edges.first_lossy_pps is None and not complete:
            values["sweep_lossless_pps"] = None
            notes.append("the sweep was cut short before its last step, without a loss so far")
        else:
            values["sweep_lossless_pps"] = edges.lossless_up_to_pps or 0.0
        info = {"first_lossy_pps": edges.first_lossy_pps, "steps": max((n for _i, n in steps), default=len(ts)),
                "short_steps_pps": list(edges.short_steps_pps), "bounded_by": edges.bounded_by}
    else:
        notes.append(f"no {method} answer in searches.jsonl, and it is not derived from trials")
    return Answer(method, series, frame_len, r.repeat, r.step, values, wire, precision, "trials", ts, tuple(notes),
                  info)


def answers_of(trials: Iterable[Trial], outcomes: Iterable[dict[str, Any]] = (), loss_tolerance_frames: int = 0,
               precision_pct: float | None = None, engine: str = "?") -> list[Answer]:
    """Every search's answer, in the order the searches ran (module doc): from its outcome in
    searches.jsonl when there is one, else from its trials."""
    by_step: dict[str, list[Trial]] = {}
    for t in trials:
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


def _trial_note(gs: list[AnswerGroup]) -> list[str]:
    lengths = sorted({float(x) for g in gs for x in g.info_values("trial_s")})
    short = any(x for g in gs for x in g.info_values("short_trials"))
    if not lengths:
        return []
    text = f"Trials of {', '.join(f'{x:g}' for x in lengths)} s"
    return [text + (f": shorter than RFC 2544's {RFC2544_TRIAL_S:g} s, so not RFC 2544 figures." if short else ".")]


def rfc2544_tables(groups: Iterable[AnswerGroup]) -> list[AnswerTable]:
    """Seed 000's Tables 4-6: RFC 2544 throughput per frame length, one column per placement
    (#1 A:A, #2 A:B, ...), "pps / Gbps"; with repetitions the median (min–max, sd, n)."""
    out = []
    for table_key, by_pin in _table_groups(groups, "rfc2544").items():
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
                text = _pps_cell(g.stat("rfc2544_pps"), size)
                failures = sorted({x for fs in g.info_values("verification_failures_pps") for x in fs})
                if failures:
                    text += " †"
                    notes.append(f"† {size} B {p}: the verification trial failed at "
                                 f"{', '.join(f'{x:,.0f}' for x in failures)} pps, so that search pass was not "
                                 f"taken (distorted by an overload before it, seed 000's saturation, or noise); "
                                 f"the search went on below it.")
                unverified = [a for a in g.answers if a.values.get("rfc2544_pps") and not a.info.get("verified")]
                if unverified:
                    text += " (not verified)"
                text += generator_mark(g, "rfc2544_pps")
                notes += generator_notes(g, "rfc2544_pps", f"{size} B {p}", "the search")
                row.append(text)
            rows.append(row)
        derived = any(a.source == "trials" for p in pins for g in by_pin[p] for a in g.answers)
        if derived:
            notes.append("Derived from the trials (no answer in searches.jsonl): the rate of the verification "
                         "trial that passed.")
        notes += _trial_note([g for p in pins for g in by_pin[p]])
        out.append(AnswerTable(_title("RFC 2544 throughput", table_key),
                               ["Frame [B]"] + [f"#{i + 1} {p} [pps / Gbps]" for i, p in enumerate(pins)], rows,
                               notes))
    return out


def mlr_tables(groups: Iterable[AnswerGroup]) -> list[AnswerTable]:
    """MLR search: each goal's lower bound (NDR, PDR) per frame length and placement."""
    out = []
    for table_key, by_pin in _table_groups(groups, "mlr").items():
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
            out.append(AnswerTable(_title("MLR search", table_key),
                                   ["Frame [B]"] + [f"#{i + 1} {p}" for i, p in enumerate(pins)], rows, notes))
            continue
        columns = [(p, m) for p in pins for m in goals]
        rows = [[str(size)] + [_pps_cell(cells[p, size].stat(m), size) + generator_mark(cells[p, size], m)
                               if (p, size) in cells else "" for p, m in columns] for size in sizes]
        notes += [n for size in sizes for p, m in columns if (p, size) in cells
                  for n in generator_notes(cells[p, size], m, f"{size} B {p} {metric(m).label.removeprefix('MLR ')}",
                                           "the goal's search")]
        out.append(AnswerTable(_title("MLR search (lower bounds)", table_key),
                               ["Frame [B]"] + [f"#{pins.index(p) + 1} {p} {metric(m).label.removeprefix('MLR ')} "
                                                f"[pps / Gbps]" for p, m in columns], rows, notes))
    return out


def back2back_tables(groups: Iterable[AnswerGroup]) -> list[AnswerTable]:
    """RFC 2544 back-to-back: the longest burst at wire rate captured without loss."""
    out = []
    for table_key, by_pin in _table_groups(groups, "back2back").items():
        pins = _pins(by_pin)
        cells = {(p, g.frame_len): g for p in pins for g in by_pin[p]}
        sizes = sorted({size for _p, size in cells}, reverse=True)
        rows = []
        notes: list[str] = []
        for size in sizes:
            row = [str(size)]
            for p in pins:
                s = cells[p, size].stat("b2b_frames") if (p, size) in cells else None
                if s is None:
                    row.append("—" if (p, size) in cells else "")
                    continue
                g = cells[p, size]
                text = f"{s.median:,.0f}" + (f" ({s.lo:,.0f}–{s.hi:,.0f}, sd {s.sd:,.0f}, n={s.n})" if s.spread else "")
                row.append(f"{text} ({1e3 * s.median / g.wire_pps:.2f} ms){generator_mark(g, 'b2b_frames')}")
                if g.generator_bound("b2b_frames"):
                    notes.append(f"{size} B {p}: {GENERATOR_BOUND}: the generator could not send the shortest "
                                 f"failing burst at wire rate and nothing was lost, so this figure is a lower bound "
                                 f"of the capture's, not its limit.")
            rows.append(row)
        out.append(AnswerTable(_title("Back-to-back (longest lossless burst at wire rate)", table_key),
                               ["Frame [B]"] + [f"#{i + 1} {p} [frames]" for i, p in enumerate(pins)], rows, notes))
    return out


def tables(answers: Iterable[Answer]) -> list[AnswerTable]:
    groups = list(group_answers(answers).values())
    return rfc2544_tables(groups) + mlr_tables(groups) + back2back_tables(groups)


def sweep_first_loss(g: AnswerGroup) -> str:
    """A sweep's answer in words: where it starts to lose, over its repetitions; a lossless run that
    the generator ended (it could not hold the next step) is generator-bound, a lower bound."""
    s = g.stat("sweep_lossless_pps")
    if s is None:
        return "no answer (the sweep was cut short)"
    firsts = [float(x) for x in g.info_values("first_lossy_pps")]
    shorts = sorted(set(g.generator_short_pps("sweep_lossless_pps")))
    short_text = (f"the generator could not hold {', '.join(f'{x:,.0f}' for x in shorts)} pps" if shorts else "")
    if not firsts:
        reps = f" (n={s.n})" if s.n > 1 else ""
        if not g.generator_bound("sweep_lossless_pps"):
            return f"no loss up to {s.median:,.0f} pps{reps}"
        if s.median <= 0:
            return f"{GENERATOR_BOUND}: {short_text}, no step measured the capture{reps}"
        bound, n = len(g.generator_bound("sweep_lossless_pps")), len(g.values("sweep_lossless_pps"))
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
