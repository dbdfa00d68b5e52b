"""Reading a file a user named: a regular file of bounded size, or one line saying why not.

Every file capbench's Python code reads from a path a user gave (a campaign, a results
folder's trials.jsonl, searches.jsonl and run.json, a dist: or trace: file handed to the
generator) goes through here, so a device, a FIFO, a directory, a huge file, bytes that
are not UTF-8 or an over-long path end in one UsageError (exit status 2), never in a hang,
a runaway read or a traceback.

The kernel behaviour this relies on: stat() of a FIFO or a device does not open it, so the
kind of file is known before anything can block (open() of a FIFO without a writer blocks
until one comes; O_NONBLOCK makes it return at once) and before a device's open() can act
(some devices do something when opened). The file is then opened with O_NONBLOCK and
checked again with fstat(), so a path swapped between the two calls is caught too.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from capbench.errors import UsageError

MIB = 1 << 20
# The largest file each reader takes (a larger one is refused, the limit named):
CAMPAIGN_MAX_BYTES = 1 * MIB  # a campaign is a page of TOML; the largest in campaigns/ is a few KiB
RUN_JSON_MAX_BYTES = 64 * MIB  # run.json: metadata, settings and placements
# trials.jsonl and searches.jsonl: a record is a few KiB, so 1 GiB is some 200,000 trials,
# far beyond any campaign (a 1000-fold repeat of the seed's 13 lengths x 7 backends is 91,000).
JSONL_MAX_BYTES = 1024 * MIB
PATH_SHOWN_CHARS = 120  # a longer path is shown cut, with its length


def shown(path: Path | str) -> str:
    """The path for a message: quoted, and cut in the middle when longer than PATH_SHOWN_CHARS."""
    text = str(path)
    if len(text) <= PATH_SHOWN_CHARS:
        return repr(text)
    half = PATH_SHOWN_CHARS // 2
    return f"{text[:half]!r}...{text[-half:]!r} ({len(text):,} characters)"


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "of an unknown kind"


def _refused(path: Path | str, why: str, *, what: str = "", verb: str = "read") -> UsageError:
    """The one line of every refusal here: "cannot read WHAT 'PATH': why"."""
    return UsageError(f"cannot {verb} {what + ' ' if what else ''}{shown(path)}: {why}")


def _not_regular(path: Path | str, mode: int, *, what: str = "", verb: str = "read") -> UsageError:
    return _refused(path, f"it is {kind_of(mode)}, not a regular file", what=what, verb=verb)


def _os_error(path: Path | str, what: str, e: OSError) -> UsageError:
    if e.errno == errno.ENAMETOOLONG:
        why = "the path (or one of its names) is too long for the kernel"
    else:
        why = e.strerror or str(e)
    return _refused(path, why, what=what)


def open_own(path: Path | str, flags: int, *, verb: str = "write") -> int:
    """A descriptor of a file capbench writes (a results folder's files, its lock), opened never
    through a link (O_NOFOLLOW): capbench runs as root, so a link planted in a folder another user
    can write (trials.jsonl -> /etc/shadow) must not have it append to or truncate the file the
    link leads to. A FIFO or device under the name opens at once (O_NONBLOCK) and is refused.
    One UsageError ("cannot {verb} PATH: why") for either; the descriptor blocks as usual."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as e:
        why = "it is a symbolic link" if e.errno == errno.ELOOP else e.strerror
        raise _refused(path, why, verb=verb) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, mode, verb=verb)
    os.set_blocking(fd, True)
    return fd


def write_own(path: Path | str, data: str | bytes) -> None:
    """Write a whole file capbench makes (a report's tables, pages and figures) through
    open_own: never through a link, never into a FIFO or device."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with os.fdopen(open_own(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
        f.write(raw)


def check_file(path: Path | str, *, what: str) -> os.stat_result:
    """stat() `path` (following links) and refuse anything but a regular file, in one line."""
    try:
        st = os.stat(path)
    except ValueError:  # an embedded NUL byte: no such path can exist
        raise _refused(path, "a path cannot hold a NUL byte", what=what) from None
    except OSError as e:
        raise _os_error(path, what, e) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode, what=what)
    return st


def check_dir(path: Path | str, *, what: str) -> bool:
    """Whether `path` is a directory (False: nothing is there); one UsageError for anything else
    (a file, a device, a path too long for the kernel)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except ValueError:
        raise _refused(path, "a path cannot hold a NUL byte", what=what) from None
    except OSError as e:
        raise _os_error(path, what, e) from None
    if not stat.S_ISDIR(st.st_mode):
        raise _refused(path, f"it is {kind_of(st.st_mode)}, not a directory", what=what)
    return True


def read_bytes(path: Path | str, *, what: str, limit: int, missing_ok: bool = False) -> bytes | None:
    """The bytes of the regular file `path`, at most `limit` of them; None if it does not exist
    and `missing_ok`. Anything else that keeps it from being read is one UsageError that names
    `what` and the path."""
    if missing_ok:
        try:
            os.stat(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            pass  # check_file says what is wrong
    check_file(path, what=what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise _os_error(path, what, e) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between stat() and open()
            raise _not_regular(path, st.st_mode, what=what)
        if st.st_size > limit:
            raise _too_big(path, what, limit)
        chunks, total = [], 0
        while True:  # a file that grows while it is read stops at the limit too
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _too_big(path, what, limit)
    except OSError as e:
        raise _os_error(path, what, e) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _too_big(path: Path | str, what: str, limit: int) -> UsageError:
    return _refused(path, f"it is larger than {limit / MIB:g} MiB, the most capbench reads for {what}", what=what)


def decode(data: bytes, path: Path | str, *, what: str) -> str:
    """UTF-8 text (a leading byte order mark dropped), or one UsageError naming the file and line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise _refused(path, f"line {line} is not UTF-8 text (byte 0x{data[e.start]:02x})", what=what) from None


def read_text(path: Path | str, *, what: str, limit: int, missing_ok: bool = False) -> str | None:
    """read_bytes, decoded as UTF-8 (decode)."""
    data = read_bytes(path, what=what, limit=limit, missing_ok=missing_ok)
    return None if data is None else decode(data, path, what=what)


def json_lines(data: bytes) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, JSON value, None) of each non-blank line of a JSON Lines file, or (line number,
    None, why it holds none: "not UTF-8 text (byte 0x..)", "not JSON (...)")."""
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield n, json.loads(raw.decode("utf-8-sig" if n == 1 else "utf-8")), None
        except UnicodeDecodeError as e:
            yield n, None, f"not UTF-8 text (byte 0x{raw[e.start]:02x})"
        except json.JSONDecodeError as e:
            yield n, None, f"not JSON ({e.msg})"
        except RecursionError:
            yield n, None, "not JSON (nested too deep)"
