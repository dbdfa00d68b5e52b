"""One owner at a time: of a results folder, and of each host setting a run changes.

Results folder. The run that writes DIR holds an exclusive flock(2) on DIR/run.lock,
which holds its pid as text for the refusal message. A second writer (`capbench run
--resume DIR` while the first still runs) finds the lock taken and is refused, naming
that pid; readers (`capbench report DIR`) take no lock. The kernel drops a flock when
the last descriptor of its open file goes, and a dying process closes all of its
descriptors, however it dies (SIGKILL too): a crashed owner leaves nothing to clean
up, and the lock file's old pid means nothing once the lock is free. The descriptor
is close-on-exec (Python's default, PEP 446), so the generator and capture programs
capbench starts do not inherit the lock and cannot keep it after capbench is gone.

Host settings. A run may raise net.core.netdev_max_backlog (--backlog) and, with
--tune, net.core.rmem_max and each CPU's frequency governor. They are host-wide, so
several runs can need the same one at once. A registry every run sees,
/run/capbench/host-settings.json (changed only under an flock of host-settings.lock
beside it), keeps per setting the value the first holder found (`original`), the
value capbench last wrote (`set`) and its holders: each test bed that needs it, with
the pid and start time of its owner and the value it found and wanted. A holder is
alive while its owner runs or its test bed's namespaces exist (`capbench testbed up`
exits at once and leaves its bed; a SIGKILLed run leaves its bed until `capbench
testbed down`). A setting is put back to `original` only when its last holder is
released or found dead, and only if it still reads `set` (a value someone changed
by hand since stands); until then nobody lowers it. Dead holders are dropped at
every access, so a holder that never cleaned up holds nothing past its own life.

Most settings are files (kind "file"). A setting of another kind (a NIC's ring size,
channels or coalescing: kind "ethtool", testbed.nic) names how it is read and written
through an accessor registered under that kind (`register_accessor`); its registry entry
records the kind, so whoever finds its holders dead puts it back the same way. A setting
whose object is gone (an interface that went with its namespace) has nothing to put back
(`SettingGone`). Two living holders never want different exact values of one setting: the
second is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from capbench import held_signals
from capbench.errors import RunError, UsageError
from capbench.inputs import open_own

RUN_DIR = Path("/run/capbench")  # capbench's host-wide state: tmpfs, gone at reboot like what it describes
RESULTS_LOCK = "run.lock"
REGISTRY = "host-settings.json"
REGISTRY_LOCK = "host-settings.lock"
# Where `ip netns add` binds named network namespaces (iproute2's NETNS_RUN_DIR).
NETNS_DIR = Path("/run/netns")
T = TypeVar("T")


@contextlib.contextmanager
def owned(make: Callable[[], T], undo: Callable[[T], None]) -> Iterator[T]:
    """What `make()` returns, for the `with` block, then `undo(it)` whatever ends the block.

    A signal at any moment leaves nothing behind: SIGINT and SIGTERM are held back while
    `make` runs (it cleans up after itself if it fails) and delivered inside the `try` that
    undoes it; `undo` runs with them held back again."""
    release = held_signals.hold()
    try:
        made = make()
    except BaseException:
        release()
        raise
    try:
        release()  # a signal that came meanwhile is raised here
        yield made
    finally:
        with held_signals.held():
            undo(made)


def process_start_ticks(pid: int) -> int | None:
    """Start time of a running process (field 22 of /proc/PID/stat); None if it does not
    exist or is a zombie (dead, waiting to be reaped: it owns nothing any more)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def process_alive(pid: Any, start_ticks: Any = None) -> bool:
    """Whether `pid` runs and, when its start time is given, is the same process (pids are reused)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    start = process_start_ticks(pid)
    return start is not None and (start_ticks is None or start == start_ticks)


# --- the results folder --------------------------------------------------------


class ResultsLock:
    """The flock of a results folder, held until `release()` or the end of the process."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # no pid of a finished run in the file
            os.close(self._fd)  # the kernel drops the flock with the last descriptor
            self._fd = None


def lock_results(d: Path | str) -> ResultsLock:
    """Make this process the only writer of the results folder `d`; UsageError naming the
    pid of the run that writes it when another does."""
    path = Path(d) / RESULTS_LOCK
    fd = open_own(path, os.O_RDWR | os.O_CREAT, verb="lock")  # never through a link: root writes it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        who = f"pid {owner}" if owner.isdigit() else "another capbench process"
        raise UsageError(f"{d} is being written by the run of {who}: one run writes a results folder at a "
                         f"time; let it end (or stop it), then resume") from None
    except OSError as e:
        os.close(fd)
        raise UsageError(f"cannot lock {d} for writing ({path}: {e.strerror})") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return ResultsLock(path, fd)


# --- host settings ------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """A host-wide file a run needs at a value: a sysctl under /proc/sys, a sysfs file."""

    path: str
    value: str
    at_least: bool  # an integer needed at `value` or more (a sysctl raised); else exactly `value`
    key: str | None = None  # the sysctl's name, for the records
    kind: str = "file"  # how `path` is read and written: the accessor registered under this kind

    def met_by(self, current: str) -> bool:
        if self.at_least:
            try:
                return int(current) >= int(self.value)
            except ValueError:
                return False
        return current == self.value

    def record(self, found: str, now: str, original: str) -> dict[str, str]:
        """What a holder records: the value it found, the value in force after it, the value the
        last holder puts back."""
        name = {"key": self.key} if self.key else {"path": self.path}
        return name | {"was": found, "set": now, "restores_to": original}


@dataclass(frozen=True)
class Holder:
    """A test bed that holds host settings, alive while its owner runs or a namespace of it exists."""

    id: str
    pid: int
    start_ticks: int | None
    namespaces: tuple[str, ...] = ()

    @classmethod
    def of_this_process(cls, holder_id: str, namespaces: tuple[str, ...] = ()) -> Holder:
        pid = os.getpid()
        return cls(holder_id, pid, process_start_ticks(pid), namespaces)


def holder_alive(h: dict) -> bool:
    if process_alive(h.get("pid"), h.get("start_ticks")):
        return True
    return any(isinstance(ns, str) and ns and (NETNS_DIR / ns).exists() for ns in h.get("namespaces") or ())


def read_value(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError as e:
        raise RunError(f"cannot read {path}: {e.strerror}") from None


def write_value(path: str, value: str) -> None:
    try:
        Path(path).write_text(value + "\n")
    except OSError as e:
        raise RunError(f"cannot set {path} to {value}: {e.strerror}") from None


class SettingGone(Exception):
    """Raised by an accessor when what a setting was on no longer exists (an interface removed
    with its namespace): there is nothing to read or put back."""


@dataclass(frozen=True)
class Accessor:
    """How settings of one kind are read and written: `read(path) -> value`, `write(path, value)`;
    both raise RunError on failure, SettingGone when the object is gone."""

    read: Callable[[str], str]
    write: Callable[[str, str], None]


ACCESSORS: dict[str, Accessor] = {"file": Accessor(read_value, write_value)}


def register_accessor(kind: str, read: Callable[[str], str], write: Callable[[str, str], None]) -> None:
    """Make settings of `kind` readable and restorable in this process (a test bed module does
    this when it is imported)."""
    ACCESSORS[kind] = Accessor(read, write)


def _accessor_error(kind: str) -> RunError:
    return RunError(f"a host setting of kind {kind!r} cannot be read or put back by this capbench "
                    f"(known: {', '.join(sorted(ACCESSORS))}): run `capbench testbed down` with the "
                    f"capbench that set it")


def accessor(kind: str) -> Accessor:
    if kind not in ACCESSORS:
        raise _accessor_error(kind)
    return ACCESSORS[kind]


class HostSettings:
    """The registry of held host settings (see the module doc). `directory` is /run/capbench
    for capbench; tests give a temporary one."""

    def __init__(self, directory: Path | str = RUN_DIR):
        self.directory = Path(directory)
        self.path = self.directory / REGISTRY

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        """The registry, read and written back under its flock, with SIGINT and SIGTERM held back
        so that an entry and the setting it describes change together. Not written back when
        the block raises."""
        with held_signals.held():
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.directory / REGISTRY_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as e:
                raise RunError(f"cannot open {self.directory / REGISTRY_LOCK}: {e.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # dropped by close(), or by the kernel if we die
                reg = self._load()
                yield reg
                self._save(reg)
            finally:
                os.close(fd)

    def _load(self) -> dict:
        try:
            reg = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {"settings": {}}
        except (OSError, ValueError) as e:
            reg = e
        if not isinstance(reg, dict) or not isinstance(reg.get("settings"), dict):
            raise RunError(f"{self.path} is not capbench's host-settings registry: it records the host "
                           f"settings capbench runs hold and their original values; check them (sysctl "
                           f"net.core), then remove it")
        return reg

    def _save(self, reg: dict) -> None:
        tmp = self.directory / f".{REGISTRY}.tmp"
        tmp.write_text(json.dumps(reg, indent=1) + "\n")
        tmp.replace(self.path)

    def _prune(self, reg: dict) -> list[str]:
        """Drop dead holders; put back each setting left without one. The errors, as text."""
        errors = []
        for path, entry in list(reg["settings"].items()):
            entry["holders"] = {k: h for k, h in entry.get("holders", {}).items() if holder_alive(h)}
            if entry["holders"]:
                continue
            kind = entry.get("kind") or "file"
            if kind not in ACCESSORS:  # kept for a capbench that knows how to put it back
                errors.append(str(_accessor_error(kind)))
                continue
            del reg["settings"][path]
            how = ACCESSORS[kind]
            try:
                if how.read(path) == entry["set"]:
                    how.write(path, entry["original"])
            except SettingGone:
                pass  # what it was on is gone, and its setting with it
            except RunError as e:
                errors.append(str(e))
        return errors

    def hold(self, holder: Holder, setting: Setting) -> dict[str, str] | None:
        """Make `setting` hold for `holder` until it is released; the record of what it found and
        what it set (Setting.record), or None when the host already met it and no run holds it
        (then there is nothing to put back)."""
        how = accessor(setting.kind)
        with self._locked() as reg:
            errors = self._prune(reg)
            try:
                found = how.read(setting.path)
            except SettingGone:
                raise RunError(f"cannot read {setting.key or setting.path}: it does not exist") from None
            entry = reg["settings"].get(setting.path)
            record = None
            if entry is not None and not setting.at_least and entry["set"] != setting.value:
                others = ", ".join(f"{k} (pid {h.get('pid')})" for k, h in sorted(entry["holders"].items())
                                   if k != holder.id)
                if others:
                    raise UsageError(f"{setting.key or setting.path} is held at {entry['set']} by {others}: "
                                     f"one value at a time; let that run end, or ask for {entry['set']}")
            if entry is not None or not setting.met_by(found):
                if entry is None:
                    entry = reg["settings"][setting.path] = {"key": setting.key, "original": found, "set": found,
                                                             "holders": {}}
                    if setting.kind != "file":
                        entry["kind"] = setting.kind
                change = not setting.met_by(found)
                entry["holders"][holder.id] = asdict(holder) | {"found": found, "wants": setting.value}
                if change:
                    entry["set"] = setting.value
                    # The registry first: a crash between the two leaves an entry whose `set` the
                    # file does not read, and such a value is never "put back" (the file's stands).
                    self._save(reg)
                    try:
                        how.write(setting.path, setting.value)
                    except (RunError, SettingGone):
                        del entry["holders"][holder.id]
                        if not entry["holders"]:
                            del reg["settings"][setting.path]
                        self._save(reg)
                        raise
                record = setting.record(found, setting.value if change else found, entry["original"])
        if errors:
            raise RunError("; ".join(errors))
        return record

    def release(self, holder_id: str) -> None:
        """End `holder_id`'s holds; put back every setting it was the last living holder of."""
        with self._locked() as reg:
            for entry in reg["settings"].values():
                entry.get("holders", {}).pop(holder_id, None)
            errors = self._prune(reg)
        if errors:
            raise RunError("; ".join(errors))

    def listed(self) -> dict[str, dict]:
        """The settings held now by living holders, {path: entry}, read without the lock and
        changing nothing (the registry is replaced whole, never written in place), so that a
        listing needs no privileges; held() puts back what dead holders left."""
        listed = {}
        for path, entry in self._load()["settings"].items():
            holders = {k: h for k, h in entry.get("holders", {}).items() if holder_alive(h)}
            if holders:
                listed[path] = entry | {"holders": holders}
        return listed

    def held(self) -> dict[str, dict]:
        """The settings held now (dead holders dropped first): {path: entry}."""
        with self._locked() as reg:
            errors = self._prune(reg)
            held = json.loads(json.dumps(reg["settings"]))
        if errors:
            raise RunError("; ".join(errors))
        return held
