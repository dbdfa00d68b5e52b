"""Result files: results/<UTC timestamp>/trials.jsonl and run.json.

trials.jsonl holds one TrialResult record per line, written and flushed as
each trial ends, so an interrupted run keeps what finished. run.json holds the
machine (kernel, CPU model, cores), the capbench version and git commit, all
settings, and the start and end time. Reports read only these files.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capbench import __version__
from capbench import owners
from capbench.testbed import host_sysctl
from capbench.binaries import source_tree
from capbench.errors import RunError, Terminated, UsageError
from capbench.inputs import (JSONL_MAX_BYTES, RUN_JSON_MAX_BYTES, check_dir, check_file, json_lines, open_own,
                             read_bytes, read_text,
                             shown)
from capbench.records import (COUNTER_LIMIT, RecordError, conforms, control_text, field_types, numbers, short,
                              to_json, type_text, upgrade)
from capbench.trial.record import TrialResult, load_trial

TRIALS_FILE = "trials.jsonl"
PROFILES_DIR = "profiles"  # --profile: each profiled trial's folded stacks (its flame graph's input)
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
    """(commit, dirty) of the source tree, ("unknown", None) outside a git checkout and for an
    installed capbench (whose prefix may sit in some other checkout: a venv inside a clone)."""
    repo = repo or source_tree()
    if repo is None:
        return "unknown", None

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
        """A new directory root/<UTC timestamp>/ (suffixed -2, -3 ... if it exists). `root` is
        reached following only links of this user or root (owners.reach_folder: UsageError for
        another's) and made without following any; the run's folder is named as `root` is given."""
        root = Path(root)
        reached = owners.reach_folder(root, "--results")
        stamp = utc_stamp()
        try:
            fd = owners.make_folder(reached)
            try:
                name, n = stamp, 1
                while True:
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                        break
                    except FileExistsError:
                        n += 1
                        name = f"{stamp}-{n}"
            finally:
                os.close(fd)
            path = root / name
        except OSError as e:
            raise UsageError(f"cannot create the results directory in {root}: {e.strerror}: "
                             f"choose another with --results DIR") from None
        record = RunRecord(**machine_info(), command=command if command is not None else sys.argv,
                           settings=settings, started_at=utc_iso())
        return cls(path, record.to_json())

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


def scan_trials(path: Path | str, defaults: dict[str, Any] | None = None) -> TrialScan:
    """Read a run directory's (or a file's) trials, skipping unreadable lines instead of failing.

    A run that crashed while writing leaves its last line cut short (no newline at the end):
    that line is "truncated"; a line that is no JSON object is "corrupt"; a record no trial
    can have written is "invalid" (trial.record.record_problem); records of a version this
    capbench does not read are "schema". Each record is read by trial.record.load_trial, with
    `defaults` for the fields it lacks. The file itself must be a regular file (inputs.read_bytes).
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
        try:
            trials.append(load_trial(record, defaults))
        except RecordError as e:
            kind = bad if e.kind == "corrupt" else e.kind
            skipped.append(SkippedLine(n, kind, f"{path}:{n}: {e.why}", e.why if kind == "invalid" else ""))
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

# run.json's versions (its `schema`), the way pyperf keeps its format's history:
#   1 - (capbench 0.1) the first run.json. Fields written once known (error, resumed_at, ...)
#       are absent before; a run.json without `schema` is read as version 1.
# A change to a field's meaning or type makes version 2: RUN_SCHEMA goes up and _RUN_UPGRADES
# gets the step from 1's shape to 2's, so load_run_meta stays the one place that knows older shapes.
RUN_SCHEMA = 1
_RUN_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_LATER = {"later": True}  # a field written once known: absent from run.json until then


def _later() -> Any:
    return field(default=None, metadata=_LATER)


@dataclass(frozen=True)
class RunRecord:
    """run.json: the machine (machine_info), the command and settings, the start and end, and
    what the run learnt as it went. Each field once, with its type: a reader relies on these
    types, so a field of another type is left out (report) or refused (--resume)."""

    kernel: dict[str, str]
    hostname: str
    cpu_model: str
    cores: int | None
    capbench_version: str
    git_commit: str
    git_dirty: bool | None
    python: str
    sysctls: dict
    command: list[str]
    settings: dict
    started_at: str
    ended_at: str | None = None
    status: str = "running"  # running | complete | interrupted | refused | failed
    trials: int = 0
    schema: int = RUN_SCHEMA
    # Written once known (the runner writes them into RunWriter.meta):
    error: str = _later()  # why a refused or failed run ended
    resumed_at: list[str] = _later()  # each --resume
    campaign_toml: str = _later()  # the campaign file a run of --campaign started with
    testbed: dict = _later()  # the test bed (testbed.Testbed)
    placements: dict = _later()  # each placement's CPUs (runner.step_placement)
    system: dict = _later()  # hygiene.snapshot and what --tune set
    notes: list[str] = _later()
    warnings: list[str] = _later()  # hygiene.noisy
    # The host before the first trial (trial/witness.Probe.to_json): its stops and others' time on
    # the run's CPUs with nothing loaded, and what they mean for the run's top rate.
    host_probe: dict = _later()
    # A run on several hosts (--topology): whether --insecure-ssh let ssh run commands of the topology's
    # or skip host-key checks (remote.ssh_rules).
    insecure_ssh: bool = _later()

    def to_json(self) -> dict[str, Any]:
        """run.json's object: the version first; a field written once known only when it is."""
        later = {f.name for f in dataclasses.fields(self) if f.metadata.get("later")}
        return {k: v for k, v in to_json(self).items() if not (k in later and v is None)}


def check_run(meta: Any, path: Path | str) -> tuple[dict[str, Any], list[str]]:
    """(run.json's fields of the types RunRecord declares, what was wrong: one text per field left out).
    A field RunRecord does not declare (a newer writer's) is kept when its numbers are finite."""
    where = Path(path) / RUN_FILE
    if not isinstance(meta, dict):
        return {}, [f"{where} is not a JSON object"]
    types_ = field_types(RunRecord)
    good, wrong = {}, []
    for key, value in meta.items():
        tp = types_.get(key)
        bad_number = any(isinstance(x, float) and not math.isfinite(x) for x in numbers(value))
        text = control_text([key, value])
        if text is not None:  # first: the line below shows the key as it is
            wrong.append(f"{where}: {short(key)} holds {text}, a text with a control character")
        elif (tp is not None and not conforms(value, tp)) or bad_number:
            wrong.append(f"{where}: {key} is {short(value)}, not {type_text(tp) if tp is not None else 'a finite number'}")
        else:
            good[key] = value
    return good, wrong


def load_run_meta(raw: Any, path: Path | str) -> tuple[dict[str, Any], list[str]]:
    """run.json of any version this capbench reads, in today's shape: the one reader of run.json
    (check_run's fields and what was wrong). A version it does not read is one UsageError."""
    if isinstance(raw, dict) and "schema" in raw:
        try:
            raw = upgrade(raw, current=RUN_SCHEMA, steps=_RUN_UPGRADES, what="run.json")
        except RecordError:
            version = raw.get("capbench_version", "?")
            raise UsageError(
                f"{path} holds results of schema {short(raw['schema'])} (capbench "
                f"{version if isinstance(version, str) else short(version)}); this capbench {__version__} reads "
                f"schema {RUN_SCHEMA}: read them with the capbench that wrote them") from None
    return check_run(raw, path)


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
    """run.json of a run directory, every field of its declared type (RunRecord); one
    UsageError otherwise (a run must not be continued from metadata it cannot trust)."""
    path = Path(path)
    if not check_dir(path, what="results directory"):
        raise UsageError(f"cannot read {shown(path / RUN_FILE)}: no such directory: give a results directory of "
                         f"`capbench run`")
    meta, wrong = load_run_meta(read_run_raw(path), path)
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
