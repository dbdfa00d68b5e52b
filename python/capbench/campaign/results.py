"""Result files: results/<UTC timestamp>/trials.jsonl and run.json.

trials.jsonl holds one TrialResult record per line, written and flushed as
each trial ends, so an interrupted run keeps what finished. run.json holds the
machine (kernel, CPU model, cores), the capbench version and git commit, all
settings, and the start and end time. Reports read only these files.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import __version__
from capbench.trial import accounting
from capbench.testbed import host_sysctl
from capbench.binaries import repo_dir
from capbench.errors import RunError, Terminated, UsageError
from capbench.inputs import (JSONL_MAX_BYTES, RUN_JSON_MAX_BYTES, check_dir, check_file, json_lines, open_own,
                             read_bytes, read_text,
                             shown)
from capbench.trial.measure import SCHEMA, TrialResult

TRIALS_FILE = "trials.jsonl"
RUN_FILE = "run.json"
SEARCHES_FILE = "searches.jsonl"  # one line per method answer (rfc2544, mlr, sweep, back2back)


def utc_stamp(t: float | None = None) -> str:
    """A timestamp usable as a directory name: 2025-11-23T07-30-05Z."""
    return time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime(time.time() if t is None else t))


def utc_iso(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


def cpu_model(path: str = "/proc/cpuinfo") -> str:
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(repo: Path | None = None) -> tuple[str, bool | None]:
    """(commit, dirty) of the source tree, ("unknown", None) outside a git checkout."""
    repo = repo or repo_dir()

    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown", None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit, (bool(status) if status is not None else None)


def machine_info() -> dict[str, Any]:
    u = os.uname()
    commit, dirty = git_commit()
    return {
        "kernel": {"sysname": u.sysname, "release": u.release, "version": u.version, "machine": u.machine},
        "hostname": u.nodename,
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "capbench_version": __version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "python": platform.python_version(),
        "sysctls": host_sysctl.snapshot(),
    }


def _open_own(path: Path, flags: int, mode: str) -> Any:
    """A file of the results folder opened for writing, never through a link (inputs.open_own)."""
    return os.fdopen(open_own(path, flags), mode, **({} if "b" in mode else {"encoding": "utf-8"}))


def _open_append(path: Path) -> Any:
    return _open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "a")


class RunWriter:
    """Writes one run's directory. Use `create()`, then `append()` per trial, then `finish()`."""

    def __init__(self, path: Path, meta: dict[str, Any]):
        self.path = path
        self.meta = meta
        self.count = 0
        self._trials = _open_append(path / TRIALS_FILE)
        self._write_meta()

    @classmethod
    def create(cls, root: Path | str, settings: dict[str, Any], *, command: list[str] | None = None) -> RunWriter:
        """A new directory root/<UTC timestamp>/ (suffixed -2, -3 ... if it exists)."""
        root = Path(root)
        stamp = utc_stamp()
        try:
            root.mkdir(parents=True, exist_ok=True)
            path, n = root / stamp, 1
            while True:
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    n += 1
                    path = root / f"{stamp}-{n}"
        except OSError as e:
            raise UsageError(f"cannot create the results directory in {root}: {e.strerror}: "
                             f"choose another with --results DIR") from None
        meta = {
            "schema": SCHEMA,
            **machine_info(),
            "command": command if command is not None else sys.argv,
            "settings": settings,
            "started_at": utc_iso(),
            "ended_at": None,
            "status": "running",
            "trials": 0,
        }
        return cls(path, meta)

    def _write_meta(self) -> None:
        tmp = self.path / f".{RUN_FILE}.tmp"
        tmp.unlink(missing_ok=True)  # a new file (O_EXCL below): never one a link leads to
        with _open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, "w") as f:
            f.write(json.dumps(self.meta, indent=2) + "\n")
        tmp.replace(self.path / RUN_FILE)

    def append(self, result: TrialResult) -> None:
        self._trials.write(json.dumps(result.to_record(), separators=(",", ":")) + "\n")
        self._trials.flush()
        self.count += 1

    @classmethod
    def resume(cls, path: Path | str) -> RunWriter:
        """Open a run directory again to append to it (`capbench run --resume DIR`)."""
        path = Path(path)
        meta = read_run(path)
        for name in (TRIALS_FILE, SEARCHES_FILE):  # before appending: a new line must start a line
            dropped = drop_cut_line(path / name)
            if dropped:
                print(f"{path / name}: dropped its last line, cut short when the run stopped "
                      f"({dropped} bytes); the trial or answer it held runs again", file=sys.stderr, flush=True)
        scan = scan_trials(path)
        meta.update(status="running", ended_at=None, resumed_at=[*meta.get("resumed_at", []), utc_iso()])
        w = cls(path, meta)
        w.count = len(scan.trials)
        return w

    def append_outcome(self, outcome: dict[str, Any]) -> None:
        """A method's answer for one backend and frame length, flushed at once (searches.jsonl)."""
        with _open_append(self.path / SEARCHES_FILE) as f:
            f.write(json.dumps(outcome, separators=(",", ":")) + "\n")

    def finish(self, status: str = "complete", error: str | None = None) -> None:
        """Close trials.jsonl and record the end: status complete | interrupted | refused | failed."""
        if not self._trials.closed:
            self._trials.close()
        self.meta.update(ended_at=utc_iso(), status=status, trials=self.count)
        if error:
            self.meta["error"] = error
        self._write_meta()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.meta["status"] == "running":
            if exc_type is None:
                self.finish("complete")
            elif issubclass(exc_type, UsageError):
                self.finish("refused", str(exc))  # bad input found once the run had begun
            elif issubclass(exc_type, (KeyboardInterrupt, Terminated)):
                self.finish("interrupted")
            else:
                self.finish("failed", str(exc))


def drop_cut_line(path: Path) -> int:
    """Cut a JSON Lines file back to just after its last newline; the bytes dropped (0: none).

    A crash while writing leaves the last line cut short, without its newline; appending
    to it would glue the next record onto it and lose both. A last line that lacks only
    its newline (a whole JSON object) is kept and ended instead.
    """
    try:
        os.stat(path)
    except FileNotFoundError:
        return 0
    except OSError:
        pass  # check_file says what is wrong
    check_file(path, what=path.name)  # a FIFO would block open(), a device never end
    with _open_own(path, os.O_RDWR, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        end = size  # the file from `end` on has no newline
        chunk = 1 << 16
        while end > 0:
            start = max(0, end - chunk)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                end = start + at + 1
                break
            end = start
        if end == size:
            return 0
        f.seek(end)
        tail = f.read()
        try:
            whole = isinstance(json.loads(tail), dict)
        except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
            whole = False
        if whole:
            f.seek(size)
            f.write(b"\n")
            return 0
        f.truncate(end)
        return size - end


@dataclass(frozen=True)
class SkippedLine:
    """A line of trials.jsonl that holds no readable trial, and why."""

    line: int
    kind: str  # one of SKIP_KINDS
    message: str  # "path:N: why" as read_trials raises it
    why: str = ""  # what is wrong with the line, without the path


# Why a line holds no trial: "truncated" (the last line, cut by a crash), "corrupt" (not a
# JSON object, not UTF-8), "invalid" (a record no trial can have written: a wrong type, a
# count below zero, NaN, more received than sent, an account that does not add up), "schema"
# (another version's record).
SKIP_KINDS = ("truncated", "corrupt", "invalid", "schema")


@dataclass(frozen=True)
class TrialScan:
    """Everything a trials.jsonl holds: the trials, their records as written (with any fields
    this version does not know), and the lines that could not be read."""

    path: Path
    trials: list[TrialResult]
    records: list[dict[str, Any]]
    skipped: list[SkippedLine]


# --- what a trial record may hold -------------------------------------------------

# The fields of a record, with their declared types: TrialResult is the one place.
_TRIAL_TYPES = typing.get_type_hints(TrialResult)
# The account's signed differences (accounting.py): counters that disagree show as a value below 0.
SIGNED_FIELDS = frozenset({"unexplained", "link_drops"})
# Fields whose numbers are not counts, rates or times, so may be below zero: the per-layer
# account (loss_layers.py splits the link layer with a signed remainder) and the programs' raw summaries.
UNSIGNED_EXEMPT = frozenset({"loss_layers", "raw"})
COUNTER_LIMIT = 1 << 64  # the programs' counters are 64-bit: a larger number was never counted


def conforms(value: Any, tp: Any) -> bool:
    """Whether a JSON value can stand for a field of type `tp` (JSON has lists where the record has tuples)."""
    if tp is Any:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if tp is tuple or origin is tuple:
        if not isinstance(value, (list, tuple)):
            return False
        if args and args[-1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args)))
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            return False
        return not args or all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    return True  # a type this check does not know: TrialResult's constructor judges


def numbers(value: Any) -> Iterator[int | float]:
    """Every number in a JSON value (true and false are not numbers here)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)


# A terminal's control characters (ESC, CR without LF, backspace, the C1 range): no text a run
# writes holds one (tab and newline stand in error texts and campaign_toml), and printed from a
# loaded file they would rewrite the screen or break the line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


def control_text(value: Any) -> str | None:
    """The first text (a string or a key) anywhere in a JSON value that holds a control
    character, shown as JSON; None when there is none."""
    if isinstance(value, str):
        return short(value) if _CONTROL.search(value) else None
    if isinstance(value, dict):
        return next((t for k, v in value.items() for t in (control_text(k), control_text(v)) if t), None)
    if isinstance(value, (list, tuple)):
        return next((t for v in value if (t := control_text(v))), None)
    return None


def record_problem(record: dict[str, Any]) -> str | None:
    """Why `record` cannot be a trial capbench measured (None: it can). Derived from TrialResult's
    fields and types and from accounting.account: a wrong type, NaN or infinity, a number beyond
    a 64-bit counter, a count, rate or time below zero, more frames received than sent, or an
    account (lost, link_drops, unexplained, loss_pct) other than the one the counts give."""
    for name, tp in _TRIAL_TYPES.items():
        if name not in record:
            continue
        value = record[name]
        if not conforms(value, tp):
            return f"{name} is {short(value)}, not {_type_text(tp)}"
        if name == "raw":
            continue
        for x in numbers(value):
            if isinstance(x, float) and not math.isfinite(x):
                return f"{name} holds {x!r}, not a number a counter or clock gives"
            if abs(x) >= COUNTER_LIMIT:
                return f"{name} holds {short(x)}, beyond any 64-bit counter"
            if x < 0 and name not in SIGNED_FIELDS and name not in UNSIGNED_EXEMPT:
                return f"{name} is {short(value)}: below zero"
    text = control_text(record)
    if text is not None:
        return f"holds {text}, a text with a control character"
    counts = {k: record.get(k, 0) for k in ("sent", "delivered", "backlog_drops", "socket_drops", "received",
                                              "xsk_drops", "app_drops")}
    if any(k not in record for k in ("sent", "delivered", "received")):
        return None  # the constructor says which field is missing
    if counts["received"] > counts["sent"]:
        return f"received {counts['received']:,} is above sent {counts['sent']:,}"
    acc = accounting.account(**counts)
    for name in ("lost", "link_drops", "unexplained"):
        if name in record and record[name] != getattr(acc, name):
            return f"{name} is {short(record[name])}, but the counts give {getattr(acc, name):,}"
    if "loss_pct" in record and not math.isclose(record["loss_pct"], acc.loss_pct, rel_tol=1e-9, abs_tol=1e-12):
        return f"loss_pct is {record['loss_pct']!r}, but the counts give {acc.loss_pct!r}"
    return None


def short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_text(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)


def scan_trials(path: Path | str) -> TrialScan:
    """Read a run directory's (or a file's) trials, skipping unreadable lines instead of failing.

    A run that crashed while writing leaves its last line cut short (no newline at the end):
    that line is "truncated"; a line that is no JSON object is "corrupt"; a record no trial
    can have written is "invalid" (record_problem); records of another schema version are
    "schema". The file itself must be a regular file (inputs.read_bytes).
    """
    path = Path(path)
    if os.path.isdir(path):  # False for a path stat() refuses (too long, say): read_bytes says why
        path = path / TRIALS_FILE
    data = read_bytes(path, what=TRIALS_FILE, limit=JSONL_MAX_BYTES)
    last = data.count(b"\n") + 1 if data and not data.endswith(b"\n") else 0  # a line cut by a crash
    trials: list[TrialResult] = []
    records: list[dict[str, Any]] = []
    skipped: list[SkippedLine] = []
    for n, record, unread in json_lines(data):
        bad = "truncated" if n == last else "corrupt"
        if unread:
            skipped.append(SkippedLine(n, bad, f"{path}:{n}: {unread}"))
            continue
        if not isinstance(record, dict):
            skipped.append(SkippedLine(n, bad, f"{path}:{n}: not a trial record"))
            continue
        if record.get("schema") != SCHEMA:
            skipped.append(SkippedLine(n, "schema", f"{path}:{n}: trial schema {short(record.get('schema'))}, "
                                                    f"this capbench reads {SCHEMA}"))
            continue
        problem = record_problem(record)
        if problem:
            skipped.append(SkippedLine(n, "invalid", f"{path}:{n}: {problem}", problem))
            continue
        try:
            trials.append(TrialResult.from_record(record))
        except RunError as e:
            skipped.append(SkippedLine(n, bad, f"{path}:{n}: {e}"))
            continue
        records.append(record)
    return TrialScan(path, trials, records, skipped)


def read_trials(path: Path | str) -> list[TrialResult]:
    """The trials of a run directory (or of a trials.jsonl file); RunError on the first bad line."""
    scan = scan_trials(path)
    if scan.skipped:
        raise RunError(scan.skipped[0].message)
    return scan.trials


# --- run.json -----------------------------------------------------------------------

# What run.json's fields hold (RunWriter.create writes them; machine_info the machine's): a
# reader relies on these types, so a field of another type is left out (report) or refused (--resume).
RUN_FIELD_TYPES: dict[str, Any] = {
    "schema": int, "kernel": dict[str, str], "hostname": str, "cpu_model": str, "cores": int | None,
    "capbench_version": str, "git_commit": str, "git_dirty": bool | None, "python": str,
    "sysctls": dict, "command": list[str], "settings": dict, "started_at": str, "ended_at": str | None,
    "status": str, "trials": int, "error": str, "resumed_at": list[str], "campaign_toml": str,
    "testbed": dict, "placements": dict,
}


def _run_field_ok(value: Any, tp: Any) -> bool:
    if typing.get_origin(tp) is list:
        return isinstance(value, list) and all(conforms(v, typing.get_args(tp)[0]) for v in value)
    return conforms(value, tp)


def check_run(meta: Any, path: Path | str) -> tuple[dict[str, Any], list[str]]:
    """(run.json's fields of the types RUN_FIELD_TYPES gives, what was wrong: one text per field left out)."""
    where = Path(path) / RUN_FILE
    if not isinstance(meta, dict):
        return {}, [f"{where} is not a JSON object"]
    good, wrong = {}, []
    for key, value in meta.items():
        tp = RUN_FIELD_TYPES.get(key)
        bad_number = any(isinstance(x, float) and not math.isfinite(x) for x in numbers(value))
        text = control_text([key, value])
        if (tp is not None and not _run_field_ok(value, tp)) or bad_number:
            wrong.append(f"{where}: {key} is {short(value)}, not {_type_text(tp) if tp is not None else 'a finite number'}")
        elif text is not None:
            wrong.append(f"{where}: {short(key)} holds {text}, a text with a control character")
        else:
            good[key] = value
    return good, wrong


def read_run_raw(path: Path | str, *, missing_ok: bool = False) -> Any:
    """run.json of a run directory as JSON (any JSON value); None when missing and `missing_ok`.
    A file that is not a regular UTF-8 file of JSON is one UsageError."""
    where = Path(path) / RUN_FILE
    text = read_text(where, what=RUN_FILE, limit=RUN_JSON_MAX_BYTES, missing_ok=missing_ok)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}: not JSON ({e.msg}, line {e.lineno})") from None
    except RecursionError:
        raise UsageError(f"{where}: not JSON (nested too deep)") from None


def read_run(path: Path | str) -> dict[str, Any]:
    """run.json of a run directory, every field of its declared type (RUN_FIELD_TYPES); one
    UsageError otherwise (a run must not be continued from metadata it cannot trust)."""
    path = Path(path)
    if not check_dir(path, what="results directory"):
        raise UsageError(f"cannot read {shown(path / RUN_FILE)}: no such directory: give a results directory of "
                         f"`capbench run`")
    meta, wrong = check_run(read_run_raw(path), path)
    if wrong:
        raise UsageError(wrong[0])
    return meta


# --- searches.jsonl -----------------------------------------------------------------


def outcome_problem(o: Any) -> str | None:
    """Why a line's JSON value is no method answer (None: it may be one): not an object, a method,
    backend, frame length or step key of another type, a number that is NaN, infinite or beyond
    a 64-bit counter. (What the report reads besides: report.answers.check_outcome.)"""
    if not isinstance(o, dict):
        return "not a JSON object"
    for key, tp in (("method", str), ("backend", str), ("frame_len", int), ("step", str), ("repeat", int)):
        if key in o and not conforms(o[key], tp):
            return f"{key} is {short(o[key])}, not {tp.__name__}"
    for x in numbers(o):
        if isinstance(x, float) and not math.isfinite(x) or abs(x) >= COUNTER_LIMIT:
            return f"holds {x!r}, not a number a counter or clock gives"
    text = control_text(o)
    if text is not None:
        return f"holds {text}, a text with a control character"
    return None


def read_outcomes(path: Path | str, skipped: list[tuple[int, str]] | None = None,
                  check: Callable[[dict[str, Any]], str | None] | None = None) -> list[dict[str, Any]]:
    """The method answers of a run directory (searches.jsonl). A line that holds none (outcome_problem,
    then `check` when given; a line cut by a crash, whose search runs again; bytes that are not
    UTF-8) is left out, and (its number, why) goes into `skipped` when given."""
    data = read_bytes(Path(path) / SEARCHES_FILE, what=SEARCHES_FILE, limit=JSONL_MAX_BYTES, missing_ok=True)
    if data is None:
        return []
    outcomes = []
    for n, o, problem in json_lines(data):
        if problem is None:
            problem = outcome_problem(o)
        if problem is None and check is not None:
            problem = check(o)
        if problem is None:
            outcomes.append(o)
        elif skipped is not None:
            skipped.append((n, problem))
    return outcomes
