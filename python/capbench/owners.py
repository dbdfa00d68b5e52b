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

Whose registry. Root's runs share /run/capbench (`state_folder()`); a run without uid 0, with
capabilities only (docs/capabilities.md), keeps its own in its user's state folder,
$XDG_STATE_HOME/capbench (~/.local/state/capbench), so that only that user's runs share it and
nothing such a run makes ever lands in root's folder. Not /run/user/UID: that exists only for a
login session (not under `sudo -u`, setpriv, cron) and logind removes it at the last logout,
while a test bed kept by `capbench testbed up` still holds its settings. A state folder outlives a
reboot, which puts every setting back: the registry records the kernel's boot id and one of
another boot is started afresh. Root writes what it reads there back into /proc and /sys, so the
folder and its files are trusted only if their owner alone can change them: they are opened
without following a link (O_NOFOLLOW, the files relative to the folder's descriptor), and the
folder, the lock and the registry must be owned by the run's user (root for /run/capbench) and
not writable by group or others, checked with fstat on what was opened; anything else is
refused in one line that says how to remove it (the audit of issue 27: a user who once ran with
the capabilities owned /run/capbench/host-settings.json, planted an entry, and the next root run
wrote its `original` into a file of the user's choosing).

What may be in it. A registry entry is read or written only if it is a setting capbench makes:
each module that makes settings declares, beside them, which keys and values are its own
(`declare(kind, makes)`: host_sysctl the sysctls it raises, hygiene the CPU governors, nic the
ethtool settings). An entry no declaration claims, or one with a '.' or '..' path component, is
dropped with a warning line naming it, never read or written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pwd
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from capbench import held_signals
from capbench.errors import RunError, UsageError
from capbench.inputs import kind_of, open_own

RUN_DIR = Path("/run/capbench")  # root's host-wide state: tmpfs, gone at reboot like what it describes
STATE_NAME = "capbench"  # the folder of a user's own, in their XDG state folder
RESULTS_LOCK = "run.lock"
REGISTRY = "host-settings.json"
REGISTRY_LOCK = "host-settings.lock"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # a new random id at every boot
FILE = "file"  # the kind of Setting that is a file: a sysctl under /proc/sys, a sysfs file
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


# --- capbench's state folder ------------------------------------------------------


def state_folder(uid: int | None = None) -> Path:
    """The folder of the host-wide state the runs of `uid` (this process's effective uid) share:
    /run/capbench for root; for another user $XDG_STATE_HOME/capbench, whose default is
    ~/.local/state/capbench (the XDG Base Directory spec; $HOME, or the passwd entry's home)."""
    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return RUN_DIR
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):  # the spec: a relative value is invalid and ignored
        home = os.environ.get("HOME") or pwd.getpwuid(uid).pw_dir
        base = os.path.join(home, ".local", "state")
    return Path(base) / STATE_NAME


def _who(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def _untrusted(path: Path, fd: int, owner: int) -> str | None:
    """Why the folder or file open as `fd` cannot be trusted to hold what root writes back (None
    if it can): it must be owned by `owner` and writable by nobody else (no group or other write
    bit), or someone else could have put into it what capbench then writes. fstat on the open
    descriptor, so that what is checked is what is used."""
    st = os.fstat(fd)
    whose = "root" if owner == 0 else "you"
    if st.st_uid != owner:
        return f"{path} is owned by {_who(st.st_uid)}, not {whose}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} can be written by {'group and others' if st.st_mode & stat.S_IWOTH else 'its group'} " \
               f"(mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _refusal(why: str, remove: Path, *, folder: bool = False) -> UsageError:
    return UsageError(f"{why}: capbench writes back the host settings recorded there and trusts them only if "
                      f"their owner alone can change them; check that no capbench runs (`capbench testbed "
                      f"status`), then remove it ({'rm -r' if folder else 'rm'} {remove}) and run again")


def _make_parents(path: Path, owner: int) -> None:
    """Make the missing folders above `path` (0700, as the XDG spec asks), only inside a folder of
    `owner`'s (or for root): a run with dac_override could make them anywhere, and $HOME may name a
    folder that is not the user's (nobody's /nonexistent)."""
    missing = []
    above = path.parent
    while not os.path.lexists(above) and above != above.parent:
        missing.append(above)
        above = above.parent
    if not missing:
        return
    if owner != 0 and os.stat(above).st_uid != owner:
        raise UsageError(f"cannot make {path} for the host settings your runs hold: {above} is not yours "
                         f"({_who(os.stat(above).st_uid)}): set XDG_STATE_HOME (or HOME) to a folder of yours")
    for folder in reversed(missing):  # os.makedirs gives its `mode` to the last folder only
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise RunError(f"cannot make {folder} for capbench's state: {e.strerror}") from None


def open_folder(path: Path, owner: int, *, create: bool) -> int | None:
    """A descriptor of the folder `path`, opened without following a link (O_NOFOLLOW) and checked
    to be a folder owned by `owner` that nobody else can write; made (0755, and its missing parents
    0700) when `create` and absent; None when absent and not `create`. UsageError, naming how to
    remove it, for a link, a non-folder, another owner or a group/other-writable mode."""
    if create:
        _make_parents(path, owner)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RunError(f"cannot open {path.parent}: {e.strerror}") from None
    try:
        made = False
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(path.name, 0o755, dir_fd=parent)
                made = True
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as e:
            # O_NOFOLLOW|O_DIRECTORY on a link fails ENOTDIR (ELOOP without O_DIRECTORY), as on a file
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                is_link = stat.S_ISLNK(os.lstat(path.name, dir_fd=parent).st_mode)
                raise _refusal(f"{path} is {'a symbolic link' if is_link else 'not a folder'}", path,
                               folder=not is_link) from None
            raise RunError(f"cannot open {path}: {e.strerror}") from None
    finally:
        os.close(parent)
    if made:
        os.fchmod(fd, 0o755)  # whatever the umask: others may list what root holds (testbed status)
    why = _untrusted(path, fd, owner)
    if why:
        os.close(fd)
        raise _refusal(why, path, folder=True)
    return fd


def open_in(folder: int, path: Path, flags: int, owner: int) -> int:
    """A descriptor of the regular file `path`, whose folder is open as `folder`, opened relative to
    it without following a link and checked as open_folder checks the folder (owner, mode).
    Created 0644 with O_CREAT; FileNotFoundError when absent without it."""
    try:
        fd = os.open(path.name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=folder)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refusal(f"{path} is a symbolic link", path) from None
        if e.errno == errno.ENOENT:
            raise
        raise RunError(f"cannot open {path}: {e.strerror}") from None
    mode = os.fstat(fd).st_mode
    why = None if stat.S_ISREG(mode) else f"{path} is {kind_of(mode)}, not a regular file"
    why = why or _untrusted(path, fd, owner)
    if why:
        os.close(fd)
        raise _refusal(why, path)
    os.set_blocking(fd, True)
    return fd


# --- the results folder --------------------------------------------------------


# The most links followed on one path, as the kernel's MAXSYMLINKS (ELOOP beyond).
MAX_LINKS = 40


def reach_folder(path: Path | str, option: str, euid: int | None = None) -> Path:
    """`path` (a results folder, given as `option`) as a path without symbolic links, following a
    link on the way only if it belongs to this process's user (`euid`) or to root; UsageError for
    any other link. The kernel's fs.protected_symlinks rule (a link is followed if its owner is the
    follower or owns the folder it is in) guards only sticky world-writable folders, and only where
    it is on; this applies everywhere and leaves out the folder's owner: a root run started in
    another user's folder must not write where that user's link leads (`results -> /etc`). What
    does not exist yet is taken as it is written: RunWriter.create makes it without following
    links. '..' goes up from what a link led to, as the kernel does."""
    euid = os.geteuid() if euid is None else euid
    text = str(path)
    if "\0" in text:
        raise UsageError(f"{option} {text!r}: a path cannot hold a NUL byte")
    reached = Path(os.getcwd())  # the kernel's name of the working folder: no link in it
    todo = list(reversed(Path(text).parts))
    links = 0
    while todo:
        part = todo.pop()
        if part == "..":
            reached = reached.parent
            continue
        step = reached / part  # an absolute part ("/") replaces what was reached
        try:
            st = os.lstat(step)
        except OSError:  # absent, or the kernel refuses the name: make_folder says why, if it matters
            reached = step
            continue
        if not stat.S_ISLNK(st.st_mode):
            reached = step
            continue
        if st.st_uid not in (euid, 0):
            raise UsageError(f"{option} {text}: {step} is a symbolic link of {_who(st.st_uid)}: capbench follows a "
                             f"link on the way to its results only if you or root made it; remove it, or give a "
                             f"folder of yours")
        links += 1
        if links > MAX_LINKS:
            raise UsageError(f"{option} {text}: more than {MAX_LINKS} symbolic links on the way (a loop?)")
        todo.extend(reversed(Path(os.readlink(step)).parts))
    _check_user_may_write(reached, option, text)
    return reached


def _check_user_may_write(reached: Path, option: str, text: str) -> None:
    """UsageError unless the user who runs capbench (the real uid: access(2) asks for it) may write
    in the folder `reached`, or in the nearest folder above it that exists, where it is made. A run
    given capabilities would write there with them, then could not read back what it wrote
    (capbench.inputs reads only what that user may): say so before anything is measured."""
    at = reached
    while not os.path.lexists(at) and at != at.parent:
        at = at.parent
    need = os.W_OK | os.X_OK | (os.R_OK if at == reached else 0)
    if os.path.isdir(at) and not os.access(at, need):
        raise UsageError(f"{option} {text}: you (uid {os.getuid()}) may not "
                         f"{'use' if at == reached else 'make a folder in'} {at}: give a folder of yours")


def make_folder(path: Path) -> int:
    """A descriptor of the folder `path` (absolute, without links: reach_folder's), made with its
    missing parents (0755 as the umask allows) one name at a time, each opened relative to the one
    before without following a link: a link put on the way since reach_folder looked fails (ENOTDIR)
    instead of leading elsewhere. OSError as the kernel says."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in path.parts[1:]:
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # made meanwhile by another run
                    os.mkdir(part, 0o755, dir_fd=fd)
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    kind: str = FILE  # how `path` is read and written: the accessor registered under this kind

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


ACCESSORS: dict[str, Accessor] = {FILE: Accessor(read_value, write_value)}


def register_accessor(kind: str, read: Callable[[str], str], write: Callable[[str, str], None]) -> None:
    """Make settings of `kind` readable and restorable in this process (a test bed module does
    this when it is imported)."""
    ACCESSORS[kind] = Accessor(read, write)


# (registry key, value) -> whether that is a setting, at a value, that the declaring module makes
Makes = Callable[[str, str], bool]
# kind -> the declarations of the settings of that kind capbench makes (`declare`)
DECLARED: dict[str, list[Makes]] = {}


def declare(kind: str, makes: Makes) -> None:
    """Declare which settings of `kind` a module makes: `makes(key, value)` is true for each
    registry key (a file's path, an accessor's own key) and value of its own. The module that makes
    the settings calls this beside them when it is imported; the registry reads or writes no entry
    that no declaration claims."""
    DECLARED.setdefault(kind, []).append(makes)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether `path` matches the glob `pattern` of /proc or /sys files, whose `*` stands for part
    of one path component (never a '/': fnmatch's `*` would let cpu*/x match cpu/../../x)."""
    regex = "[^/]*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, path) is not None


def undeclared(path: Any, entry: Any) -> str | None:
    """Why the registry entry `path` → `entry` is not a setting capbench makes, for the warning that
    drops it (None when a declaration of its kind claims its key and both of its values). An
    entry of a kind this process has no accessor for is left to the caller (kept)."""
    holders = entry.get("holders", {}) if isinstance(entry, dict) else None
    if not isinstance(holders, dict) or not all(isinstance(h, dict) for h in holders.values()):
        return "not a registry entry"
    kind, values = entry.get("kind") or FILE, (entry.get("original"), entry.get("set"))
    if not isinstance(path, str) or "\0" in path or any(part in (".", "..") for part in path.split("/")):
        return "not a plain path"
    if not all(isinstance(v, str) for v in values):
        return "its values are not text"
    if not any(all(makes(path, v) for v in values) for makes in DECLARED.get(kind, ())):
        return f"capbench makes no such {kind} setting, or not at {values[0]!r}"
    return None


def _dropped(registry: Path, path: Any, why: str) -> None:
    """The warning line of an entry dropped from the registry."""
    shown = repr(path) if len(repr(path)) <= 200 else f"{repr(path)[:200]}..."
    print(f"capbench: warning: {registry} names {shown}, which is not a host setting capbench makes ({why}): "
          f"dropped, never read or written", file=sys.stderr, flush=True)


def _accessor_error(kind: str) -> RunError:
    return RunError(f"a host setting of kind {kind!r} cannot be read or put back by this capbench "
                    f"(known: {', '.join(sorted(ACCESSORS))}): run `capbench testbed down` with the "
                    f"capbench that set it")


def accessor(kind: str) -> Accessor:
    if kind not in ACCESSORS:
        raise _accessor_error(kind)
    return ACCESSORS[kind]


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""  # no procfs: every registry is taken as this boot's


class HostSettings:
    """The registry of held host settings (see the module doc): in `directory`, by default the
    state folder of this process's user (state_folder()), owned by `owner` (this process's
    effective uid). Tests give a temporary folder."""

    def __init__(self, directory: Path | str | None = None, owner: int | None = None):
        self.owner = os.geteuid() if owner is None else owner
        self.directory = Path(directory) if directory is not None else state_folder(self.owner)
        self.path = self.directory / REGISTRY
        self._folder: int | None = None  # the folder's descriptor, while _locked holds the lock

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        """The registry, read and written back under its flock, with SIGINT and SIGTERM held back
        so that an entry and the setting it describes change together. Not written back when
        the block raises."""
        with held_signals.held():
            folder = open_folder(self.directory, self.owner, create=True)
            assert folder is not None  # made when absent
            try:
                try:
                    fd = open_in(folder, self.directory / REGISTRY_LOCK, os.O_RDWR | os.O_CREAT, self.owner)
                except FileNotFoundError as e:  # the folder went meanwhile
                    raise RunError(f"cannot open {self.directory / REGISTRY_LOCK}: {e.strerror}") from None
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # dropped by close(), or by the kernel if we die
                    reg = self._load(folder)
                    self._folder = folder  # where _save writes, while the lock is held
                    yield reg
                    self._save(reg)
                finally:
                    os.close(fd)
            finally:
                self._folder = None
                os.close(folder)

    def _load(self, folder: int) -> dict:
        """The registry, of this boot, with every entry that is no declared setting dropped (and said)."""
        try:
            fd = open_in(folder, self.path, os.O_RDONLY, self.owner)
        except FileNotFoundError:
            return {"boot": boot_id(), "settings": {}}
        try:
            with os.fdopen(fd, "rb") as f:
                reg = json.loads(f.read())
        except (OSError, ValueError) as e:
            reg = e
        if not isinstance(reg, dict) or not isinstance(reg.get("settings"), dict):
            raise RunError(f"{self.path} is not capbench's host-settings registry: it records the host "
                           f"settings capbench runs hold and their original values; check them (sysctl "
                           f"net.core), then remove it")
        if reg.get("boot", boot_id()) != boot_id():
            # Written before the last reboot, which put back every setting it names and ended
            # every holder: nothing in it is true now (a state folder outside /run outlives a boot).
            return {"boot": boot_id(), "settings": {}}
        for path, entry in list(reg["settings"].items()):
            if isinstance(entry, dict) and isinstance(entry.get("kind"), str) and entry["kind"] not in ACCESSORS:
                continue  # kept for a capbench that knows that kind (_prune says so)
            why = undeclared(path, entry)
            if why:
                _dropped(self.path, path, why)
                del reg["settings"][path]
        return reg | {"boot": boot_id()}

    def _save(self, reg: dict) -> None:
        """Replace the registry whole (rename), so that a reader without the lock sees the old or the
        new one; the new file is made afresh (O_EXCL) in the checked folder, 0644. Under _locked."""
        folder = self._folder
        assert folder is not None, "the registry is written only under its lock"
        tmp = f".{REGISTRY}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)  # a crash's leftover: only the folder's owner can have made it
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder)
        with os.fdopen(fd, "w") as f:
            os.fchmod(fd, 0o644)  # whatever the umask: others may read it (testbed status)
            f.write(json.dumps(reg, indent=1) + "\n")
        os.replace(tmp, REGISTRY, src_dir_fd=folder, dst_dir_fd=folder)

    def _prune(self, reg: dict) -> list[str]:
        """Drop dead holders; put back each setting left without one. The errors, as text."""
        errors = []
        for path, entry in list(reg["settings"].items()):
            entry["holders"] = {k: h for k, h in entry.get("holders", {}).items() if holder_alive(h)}
            if entry["holders"]:
                continue
            kind = entry.get("kind") or FILE
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
            if undeclared(setting.path, {"kind": setting.kind, "original": found, "set": setting.value}):
                # Its entry would be dropped unread by the next run, and the setting never put back.
                raise RunError(f"{setting.key or setting.path} from {found} to {setting.value} is no setting "
                               f"capbench declares (owners.declare): it is left as it is")
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
                    if setting.kind != FILE:
                        entry["kind"] = setting.kind
                change = not setting.met_by(found)
                # A holder may ask again for another value (a run's next configuration): if the
                # write fails, it holds what it held before, which is still in force.
                before = entry["holders"].get(holder.id), entry["set"]
                entry["holders"][holder.id] = asdict(holder) | {"found": found, "wants": setting.value}
                if change:
                    entry["set"] = setting.value
                    # The registry first: a crash between the two leaves an entry whose `set` the
                    # file does not read, and such a value is never "put back" (the file's stands).
                    self._save(reg)
                    try:
                        how.write(setting.path, setting.value)
                    except (RunError, SettingGone):
                        if before[0] is not None:
                            entry["holders"][holder.id], entry["set"] = before
                        else:
                            del entry["holders"][holder.id]
                        if not entry["holders"]:
                            del reg["settings"][setting.path]
                        self._save(reg)
                        raise
                record = setting.record(found, setting.value if change else found, entry["original"])
        if errors:
            raise RunError("; ".join(errors))
        return record

    def check(self) -> None:
        """Open the registry as every access does (its folder, lock and file trusted, or UsageError;
        entries no declaration claims dropped with a line) and change nothing else. A run calls this
        before it builds anything, so that a registry it cannot trust stops it at once, not at the
        end, when it would put back what its test bed held."""
        with self._locked():
            pass

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
        folder = open_folder(self.directory, self.owner, create=False)
        if folder is None:
            return {}
        try:
            settings = self._load(folder)["settings"]
        finally:
            os.close(folder)
        listed = {}
        for path, entry in settings.items():
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


def listed_registries() -> list[HostSettings]:
    """The registries `capbench testbed status` lists: this user's, and for a user other than root
    root's too (read only: the settings root's runs hold are the host's)."""
    own = HostSettings()
    return [own] if own.directory == RUN_DIR else [own, HostSettings(RUN_DIR, owner=0)]
