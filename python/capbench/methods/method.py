"""What a method is: one object that runs it, estimates it, and types and presents its answer.

A method (`capbench run --method NAME`) runs at one backend x frame length at a time
(`Method.run`), from a Measurer and the settings every method of a run shares
(`MethodSettings`), handing each trial to `Context.record` as it ends. A search returns
its *answer*, a frozen dataclass (`MethodAnswer`) that goes to searches.jsonl as one line
(`to_json`) and is read back by `from_json` — lines of every earlier version included
(a line without `schema` is version 1, written before answers were typed: the same field
names, fewer of them; its upgrade step is each answer's `from_v1`). Both go through
capbench.records, as the trial and run records do. A constant-load method has no answer:
its trials are its result.

The method also declares what the rest of capbench asks of it, once: its defaults (trial
length), whether it takes size profiles, how many trials and seconds a step of it will take
(the progress bar), and its answer's figures, one-line text and report words as plain data
(`Figures`, strings). Presentation (capbench.report) reads these through the registry
(capbench.methods.registry) and never the other way: nothing here imports the report.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from capbench.errors import UsageError
from capbench.methods.measurer import MAX_ATTEMPTS, SearchTrial, disturbed
from capbench.methods.verdict import CAPTURE_AT_SENT_RATE, GENERATOR, SET_BY_GENERATOR, STOPPED_BY_GENERATOR
from capbench.records import RecordError, fields_problem, filled, from_json, plain, upgrade
from capbench.trial.measure import TrialResult, TrialSetup

DEFAULT_PAUSE_S = 2.0  # before each trial of a search, sweep or burst
DEFAULT_LINK_BPS = TrialSetup.link_bps  # a trial's own default link speed
DEFAULT_PRECISION_PCT = 1.0  # of the wire rate
DEFAULT_STEPS = 26  # seed 003's 26 inter-packet gaps (a sweep's offered rates)
TRIAL_OVERHEAD_S = 0.8  # process start-up, settle and stop per trial, measured here

Record = Callable[[TrialResult], None]


@dataclass(frozen=True)
class MethodSettings:
    """The settings every method of a run shares (each reads those it uses)."""

    method: str = "iperf"
    precision_pct: float = DEFAULT_PRECISION_PCT  # of the wire rate (rfc2544, mlr)
    loss_tolerance_frames: int = 0  # rfc2544, back2back
    trial_s: float | None = None  # search / sweep trial length; None: the method's default (Method.trial_s)
    steps: int = DEFAULT_STEPS
    pause_s: float = DEFAULT_PAUSE_S  # before each trial of a search, sweep or burst
    max_load: Any = None  # a searches' highest load (capbench.rates.Rate, --max-rate); None: the wire rate
    goals: tuple[str, ...] = ()  # mlr: the goals searched, by name (mlr.default_goals); (): all of them
    duration_sum_trials: int | None = None  # mlr: the final trials whose time decides a load; None: its default

    def max_load_pps(self, frame_len: int, link_bps: float) -> float | None:
        """The highest load a search tries at `frame_len` (MLRsearch's Max Load); None: the wire rate."""
        return None if self.max_load is None else self.max_load.pps(frame_len, link_bps)

    def trial_length(self, method: Method) -> float:
        """The trial length of `method`: the one given, else the method's default."""
        return self.trial_s or method.trial_s or 0.0


@dataclass(frozen=True)
class Context:
    """What every step of one run shares."""

    settings: MethodSettings
    link_bps: float
    record: Record
    pause: Callable[[float], None] | None  # None: time.sleep


def tagger(record: Record, method: str) -> Callable[[SearchTrial], None]:
    """An on_trial for a search: its trial, filed under `method` with why it ran (`purpose`)."""
    def on_trial(trial: SearchTrial) -> None:
        record(dataclasses.replace(trial.result, method=method, purpose=trial.purpose))
    return on_trial


def load_of(r: TrialResult) -> float:
    """The rate a search asked a trial for (what the answers are made of)."""
    return r.offered_pps if r.offered_pps is not None else r.achieved_pps


# --- the answer ---------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """What bounded one figure of an answer (capbench.methods.verdict)."""

    bounded_by: str | None = None  # "capture loss", "generator", "none"; None: the record does not say
    short_pps: float | None = None  # the rate the generator could not hold, when it bounded the figure
    lowest_lossy_pps: float | None = None  # the lowest rate at which the capture itself lost too much

    @property
    def generator(self) -> bool:
        return self.bounded_by == GENERATOR


@dataclass(frozen=True)
class Figures:
    """An answer as the report reads it: figures by metric name (None: no answer for it), what
    bounded each, how close to the truth (pps; 0: unknown or exact), words, and the rest."""

    values: dict[str, float | None]
    bounds: dict[str, Bound] = field(default_factory=dict)
    precision: float = 0.0
    notes: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)  # verified, short_trials, trial_s, first_lossy_pps, ...


@dataclass(frozen=True)
class Metric:
    """A figure a method's answer gives: its name (in the report's tables and compare), label and unit."""

    name: str
    label: str
    unit: str


def _tag(default: Any = None) -> Any:
    return field(default=default, kw_only=True)


CAMPAIGN_TAGS = ("step", "repeat", "pin", "app_load", "procs", "size")


def interference_of(results: Sequence[Any]) -> dict[str, Any]:
    """What the host did in the trials `results` that stayed disturbed, in a few figures: the
    first reason, the longest stop of a CPU and, per trial, the most steal and others' CPU time
    over the CPUs it used (the witness's host_interference, trial/record.py); {} for none."""
    found = [r for r in results if disturbed(r)]
    if not found:
        return {}

    def per_cpu(r: Any, key: str) -> list[float]:
        cpus = r.host_interference.values() if isinstance(r.host_interference, dict) else ()
        return [float(v) for c in cpus if isinstance(c, dict)
                and isinstance(v := c.get(key), (int, float)) and not isinstance(v, bool)]

    def most(key: str) -> float:
        """The largest over the trials of: the longest stop on any CPU, or the sum over the CPUs."""
        if key == "longest_stop_us":
            return max((max(per_cpu(r, key), default=0.0) for r in found), default=0.0)
        return max((sum(per_cpu(r, key)) for r in found), default=0.0)

    return {"reason": next((r.disturbed_reason for r in found if r.disturbed_reason), ""),
            "longest_stop_us": most("longest_stop_us"), "steal_ms": most("steal_ms"), "others_ms": most("others_ms")}


def interference_text(interference: dict[str, Any]) -> str:
    """The interference of interference_of in words: "receive CPU stopped ...; longest stop 20.0 ms,
    steal 0 ms, others' CPU time 20 ms"."""
    def number(key: str) -> float:  # a line written by another capbench may hold anything
        v = interference.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    parts = [f"longest stop {number('longest_stop_us') / 1000:.1f} ms", f"steal {number('steal_ms'):.0f} ms",
             f"others' CPU time {number('others_ms'):.0f} ms"]
    reason = str(interference.get("reason") or "")
    return "; ".join(([reason] if reason else []) + [", ".join(parts)])


@dataclass(frozen=True)
class MethodAnswer:
    """The answer of one method at one backend and frame length: one line of searches.jsonl.

    SCHEMA is the version of the line (`schema`); a line without one is version 1, the plain
    dicts of capbench before answers were typed, with the same field names; version 2 had no
    `disturbed` (issue 28: no witness watched the host, so nothing was known disturbed). The
    campaign tags the answer with its step (key, repetition and settings) before it is recorded.

    `disturbed`: the answer rests on trials the host disturbed even after MAX_ATTEMPTS runs each
    (methods/measurer.py): `disturbed_trials` of the `trials` it decided on, with the
    `interference` measured (interference_of); `reruns`: the runs the host spoiled that were run
    again (recorded in trials.jsonl, not counted in `trials`)."""

    SCHEMA: ClassVar[int] = 3
    METHOD: ClassVar[str] = ""

    backend: str
    frame_len: int
    link_bps: float
    wire_pps: float
    trials: int
    total_trial_s: float
    total_pause_s: float
    step: str | None = _tag()
    repeat: int | None = _tag()
    pin: str | None = _tag()
    app_load: str | None = _tag()
    procs: int | None = _tag()
    size: str | None = _tag()
    disturbed: bool = _tag(False)
    disturbed_trials: int = _tag(0)
    reruns: int = _tag(0)
    interference: dict[str, Any] = field(default_factory=dict, kw_only=True)

    @property
    def method(self) -> str:
        return self.METHOD

    def to_json(self) -> dict[str, Any]:
        """The searches.jsonl line: schema, method, the fields (their names as version 1 had
        them), then the campaign's tags if it tagged the answer."""
        fields = plain(self)
        tags = {name: fields.pop(name) for name in CAMPAIGN_TAGS}
        out: dict[str, Any] = {"schema": self.SCHEMA, "method": self.METHOD, **fields, **self.extra_json()}
        if self.step is not None:  # tagged by the campaign: every tag, as it was set (app_load None: the default)
            out |= tags
        return out

    def extra_json(self) -> dict[str, Any]:
        """Figures a line carries beyond the fields (derived, for readers of the line alone)."""
        return {}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MethodAnswer:
        """The answer of a searches.jsonl line of any version up to SCHEMA: an older one through
        its upgrade step, then read as strictly as the trial record (capbench.records). One
        RecordError otherwise: a version this capbench does not read, a field of another type,
        a field every version has missing."""
        what = f"{cls.METHOD} answer"
        line = upgrade({"schema": 1} | d, current=cls.SCHEMA, steps={1: cls.from_v1, 2: cls.from_v2}, what=what)
        problem = fields_problem(cls, line)
        if problem:
            raise RecordError("invalid", f"{what}: {problem}")
        return from_json(cls, line, what)

    @classmethod
    def from_v1(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A version-1 line (capbench before answers were typed: no schema, the same field names,
        fewer of them) in version 2's shape, as its readers took it: a field it lacks or holds as
        null takes its default, or 0, false or empty (None where the field may be None). An
        answer whose version 1 said something in other words first puts it in today's."""
        return filled(cls, d)

    @classmethod
    def from_v2(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A version-2 line: no witness watched the host then, so nothing was known disturbed
        (the new fields' defaults)."""
        return d

    @staticmethod
    def common(r: Any, backend: str) -> dict[str, Any]:
        """The fields every answer takes from its method's result (and the backend it ran on): the
        trials it decided on, those of them the host still disturbed, and the runs it spoiled."""
        ran = (*getattr(r, "warmups", ()), *r.trials)  # an MLR warm-up ran, though no goal read it
        spoiled = [t.result for t in r.trials if disturbed(t.result)]
        return dict(backend=backend, frame_len=r.frame_len, link_bps=r.link_bps, wire_pps=r.wire_pps,
                    trials=len(ran), total_trial_s=r.total_trial_s, total_pause_s=r.total_pause_s,
                    disturbed=bool(spoiled), disturbed_trials=len(spoiled),
                    reruns=sum(max(0, getattr(t.result, "attempt", 1) - 1) for t in ran),
                    interference=interference_of(spoiled))

    def disturbed_note(self) -> str:
        """"disturbed: ..." for an answer that rests on trials the host disturbed; "" otherwise."""
        if not self.disturbed:
            return ""
        return (f"disturbed: the host interfered in {self.disturbed_trials} of the {self.trials} trials it "
                f"decided on, each run {MAX_ATTEMPTS} times ({interference_text(self.interference)}): "
                f"the answer may measure the host, not the capture")

    def said(self) -> str:
        """The answer in one line with what the host did to it (the terminal's answers)."""
        note = self.disturbed_note()
        return f"{self.text()}; {note}" if note else self.text()

    def tagged(self, **tags: Any) -> MethodAnswer:
        return dataclasses.replace(self, **tags)

    # --- what the report and the terminal read (plain data) ---

    def text(self) -> str:
        """The answer in one line (the terminal's table of method answers)."""
        raise NotImplementedError

    def figures(self, tried: Sequence[TrialResult]) -> Figures:
        """The answer's figures for the report; `tried`: the step's trials, when at hand (what
        bounded the answer is then judged again from them by today's rule)."""
        raise NotImplementedError


def without_bound_notes(notes: Iterable[str]) -> list[str]:
    """Notes without those that said what bounded the answer (the generator, or capture loss at
    the rate it sent): the caller writes them again from the trials, by today's rule."""
    return [n for n in notes if not n.endswith((SET_BY_GENERATOR, CAPTURE_AT_SENT_RATE, STOPPED_BY_GENERATOR))]


def held_text(pps: float | None) -> str:
    return f"the generator could not hold {pps:,.0f} pps" if pps is not None else "the generator fell short"


# --- the method ---------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    trials: int
    seconds: float


def binary_search_trials(precision_pct: float) -> int:
    """A binary search from the wire rate halves its step until it is below the precision:
    about log2(100 / precision) trials, plus the first at the wire rate."""
    return math.ceil(math.log2(100.0 / precision_pct)) + 1


class Method:
    """One method: subclasses set the class attributes and implement run, estimate, and (searches)
    their answer type's from_json, text and figures."""

    name: ClassVar[str]
    help: ClassVar[str]  # one line
    answer_type: ClassVar[type[MethodAnswer] | None] = None  # None: the trials are the result (no answer)
    trial_s: ClassVar[float | None] = None  # default trial length; None: the method sets no trial length
    trial_help: ClassVar[str] = ""  # what the default trial length is, in --trial's help
    min_trial_s: ClassVar[float | None] = None  # the shortest trial the campaign accepts
    takes_profiles: ClassVar[bool] = False  # runs at size profiles (imix:...), not only fixed lengths
    sets_own_load: ClassVar[bool] = True  # chooses its loads (False: runs at --rate)
    takes_max_load: ClassVar[bool] = False  # its loads stay at or below --max-rate (MLRsearch's Max Load)
    # Its trials go through Measurer.measure only, so it runs with several sensors on one stream
    # (trial/sensors.py); False: it builds Measurers of one capture itself (back-to-back's bursts).
    takes_sensors: ClassVar[bool] = True
    # The report's words (capbench.report formats them):
    report_answer: ClassVar[bool] = True  # the report tabulates its answers (with answer_type)
    title: ClassVar[str] = ""  # the answer's name in the summary ("RFC 2544 throughput")
    best_rank: ClassVar[int | None] = None  # the best backend is judged by the lowest-ranked answer present
    loss_lines: ClassVar[bool] = False  # the summary names up to which rate each series lost nothing
    loss_label: ClassVar[str] = ""  # ... under this name ("": its figure's label)
    swept: ClassVar[bool] = False  # its trials at several rates of one setting make a sweep (seed 003's table)
    names_lowest_lossy: ClassVar[bool] = False  # ... and the lowest rate at which it lost
    metrics: ClassVar[tuple[Metric, ...]] = ()  # the answer's fixed figures (MLR: one per goal, by name)
    table: ClassVar[str | None] = None  # the layout of its answer tables (report.answer_tables.LAYOUTS)
    table_title: ClassVar[str] = ""

    def run(self, measurer: Any, backend: str, size: int | str, context: Context, *, rate: Any,
            duration_s: float) -> MethodAnswer | None:
        raise NotImplementedError

    def estimate(self, settings: MethodSettings, duration_s: float, overhead_s: float = TRIAL_OVERHEAD_S
                 ) -> Estimate:
        """Rough trials and seconds of one step (the progress bar): `duration_s` is a constant-load trial's."""
        raise NotImplementedError

    def check_sizes(self, sizes: Iterable[int | str]) -> None:
        if not self.takes_profiles and any(isinstance(s, str) for s in sizes):
            raise UsageError(f"--method {self.name} searches at fixed frame lengths: give lengths in "
                             f"--sizes, not profiles (profiles work with --method iperf)")

    def main_metric(self, names: Sequence[str] = ()) -> str | None:
        """The figure that stands for the answer (its throughput)."""
        return self.metrics[0].name if self.metrics else None

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def derive(self, tried: Sequence[TrialResult], loss_tolerance_frames: int, precision_pct: float | None
               ) -> Figures | None:
        """The answer from the trials alone (no line in searches.jsonl), where they decide it; None
        when the method's answer needs its own bookkeeping."""
        return None
