"""Result files: results/<UTC timestamp>/trials.jsonl and run.json.

trials.jsonl holds one TrialResult record per line, written and flushed as
each trial ends, so an interrupted run keeps what finished. run.json holds the
machine (kernel, CPU model, cores), the capbench version and git commit, all
settings, and the start and end time. Reports read only these files.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import __version__, host_sysctl
from capbench.binaries import repo_dir
from capbench.errors import RunError, Terminated, UsageError
from capbench.trial import SCHEMA, TrialResult

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


class RunWriter:
    """Writes one run's directory. Use `create()`, then `append()` per trial, then `finish()`."""

    def __init__(self, path: Path, meta: dict[str, Any]):
        self.path = path
        self.meta = meta
        self.count = 0
        self._trials = open(path / TRIALS_FILE, "a", encoding="utf-8")
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
        tmp.write_text(json.dumps(self.meta, indent=2) + "\n", encoding="utf-8")
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
        with open(self.path / SEARCHES_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(outcome, separators=(",", ":")) + "\n")

    def finish(self, status: str = "complete", error: str | None = None) -> None:
        """Close trials.jsonl and record the end: status complete | interrupted | failed."""
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
        f = open(path, "rb+")
    except FileNotFoundError:
        return 0
    except OSError as e:
        raise RunError(f"cannot repair {path}: {e.strerror}") from None
    with f:
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
    kind: str  # "truncated" (the last line, cut by a crash) | "corrupt" | "schema" (another version's record)
    message: str  # "path:N: ..." as read_trials raises it


@dataclass(frozen=True)
class TrialScan:
    """Everything a trials.jsonl holds: the trials, their records as written (with any fields
    this version does not know), and the lines that could not be read."""

    path: Path
    trials: list[TrialResult]
    records: list[dict[str, Any]]
    skipped: list[SkippedLine]


def scan_trials(path: Path | str) -> TrialScan:
    """Read a run directory's (or a file's) trials, skipping unreadable lines instead of failing.

    A run that crashed while writing leaves its last line cut short (no newline at the end):
    that line is "truncated"; any other unreadable line is "corrupt"; records of another
    schema version are "schema".
    """
    path = Path(path)
    if path.is_dir():
        path = path / TRIALS_FILE
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}: give a results directory of `capbench run`") from None
    lines = text.splitlines()
    cut_last = bool(text) and not text.endswith("\n")
    trials: list[TrialResult] = []
    records: list[dict[str, Any]] = []
    skipped: list[SkippedLine] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        bad = "truncated" if (cut_last and n == len(lines)) else "corrupt"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            skipped.append(SkippedLine(n, bad, f"{path}:{n}: not JSON ({e.msg})"))
            continue
        if not isinstance(record, dict):
            skipped.append(SkippedLine(n, "corrupt", f"{path}:{n}: not a trial record"))
            continue
        if record.get("schema") != SCHEMA:
            skipped.append(SkippedLine(n, "schema", f"{path}:{n}: trial schema {record.get('schema')!r}, "
                                                    f"this capbench reads {SCHEMA}"))
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


def read_run(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        return json.loads((path / RUN_FILE).read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(
            f"cannot read {path / RUN_FILE}: {e.strerror}: give a results directory of `capbench run`"
        ) from None
    except json.JSONDecodeError as e:
        raise RunError(f"{path / RUN_FILE}: not JSON ({e.msg})") from None


def read_outcomes(path: Path | str, skipped: list[int] | None = None) -> list[dict[str, Any]]:
    """The method answers of a run directory (searches.jsonl), skipping a line cut by a crash
    (its number goes into `skipped` when given)."""
    try:
        text = (Path(path) / SEARCHES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as e:
        raise RunError(f"cannot read {Path(path) / SEARCHES_FILE}: {e.strerror}") from None
    outcomes = []
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            outcomes.append(json.loads(line))
        except json.JSONDecodeError:
            if skipped is not None:
                skipped.append(n)
            continue  # the last line of a crashed run: its search runs again
    return outcomes
