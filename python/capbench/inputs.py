"""Reading a file a user named: a regular file of bounded size that the user may read, or one
line saying why not; and the bounds of the words a user's text puts on a command line.

Every file capbench's Python code reads from a path a user gave (a campaign, an adapters file,
a topology, a results folder's trials.jsonl, searches.jsonl and run.json, a dist: or trace:
file handed to the generator) goes through here, so a device, a FIFO, a directory, a huge
file, bytes that are not UTF-8, an over-long path or a file the invoking user may not read
end in one UsageError (exit status 2), never in a hang, a runaway read, a traceback or the
content of a file that was not the user's to read.

The kernel behaviour this relies on: stat() of a FIFO or a device does not open it, so the
kind of file is known before anything can block (open() of a FIFO without a writer blocks
until one comes; O_NONBLOCK makes it return at once) and before a device's open() can act
(some devices do something when opened). The file is then opened with O_NONBLOCK and
checked again with fstat(), so a path swapped between the two calls is caught too.

Whose permission counts: capbench may hold more privilege than the user who runs it (the
capabilities docs/capabilities.md grants a run as ambient ones include dac_override and the
tests' dac_read_search; a setuid or file-capability install). open() judges the *effective*
credentials and would open /etc/shadow for such a user. access(2) (faccessat without
AT_EACCESS) judges the *real* uid and gids, and for a real uid other than 0 without the
effective capabilities (fs/open.c, access_override_creds), as setuid-aware programs ask. A file
is read only when the real user may read it, asked twice (_user_may_read_path, _user_may_read_fd):
  1. of the path, before anything is opened: the user's own view of it (no such file, a folder
     on the way closed to them, no permission), so nothing is learnt about a path they cannot
     reach, not even whether it exists;
  2. of the opened descriptor, through /proc/self/fd/N: the lookup follows that magic link to
     the very inode that was opened (fs/proc/fd.c; the fd folder of one's own process is always
     open to it), so a name swapped between 1 and the open (a link to /etc/shadow planted after
     the check) is judged by what was opened, not by what the name held a moment before.
What 2 cannot see are the folders on the way at the moment of the open: a swap between 1 and
the open could reach a file whose own permissions let the user read it inside a folder closed
to them. Opening as the real user instead is not possible here: dropping the capabilities of
an ambient grant is for ever (capset would have to keep them in the permitted set and raise
them again, per thread), and capbench's Python already runs threads, whose credentials the
kernel keeps per thread (glibc's setresuid switches them all; a fork per file to open as the
user and pass the descriptor back would be the price). The C programs ask the same two
questions (cb_open_regular in src/common/util.c).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shlex
import stat
from collections.abc import Iterator, Sequence
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

# The words a user's text puts on a command line (an adapter's command and post, a campaign's
# apps and backend_args, a topology's capbench): the kernel takes at most MAX_ARG_STRLEN
# (32 pages, 131,072 B) in one argument and, for all of them and the environment together, a
# quarter of the stack limit but never less than 128 KiB (fs/exec.c); beyond either execve()
# fails with E2BIG. capbench's own limits sit well below, so its words, the fields it fills in
# and its environment always fit:
WORD_MAX_BYTES = 4096  # one word: PATH_MAX, the longest path a word could need to name
COMMAND_MAX_BYTES = 32 * 1024  # all the words of one command, each with its NUL


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


# access(2) of a path with the real uid and gids, through the C library: os.access says only yes
# or no, and the reason (no such file, a folder closed, no permission) is the user's answer.
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.faccessat.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
_AT_FDCWD = -100  # <fcntl.h>: a relative path is taken from the working directory
_OWN_FDS = "/proc/self/fd"


def _path_bytes(path: Path | str, what: str) -> bytes:
    """The path as the kernel takes it; a NUL byte refused (no path holds one, and a C string
    would end there: the check would judge another path than the one opened)."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise _refused(path, "a path cannot hold a NUL byte", what=what)
    return raw


def _not_the_users(path: Path | str, what: str) -> UsageError:
    return _refused(path, f"permission denied to uid {os.getuid()}, who runs capbench (it reads only what its "
                          f"user may read): give a file of yours", what=what)


def _user_may_read_path(raw: bytes, path: Path | str, *, what: str, missing_ok: bool) -> bool:
    """Question 1 (the module's doc): may the real user read `raw`? False only when it does not
    exist for them and `missing_ok`; otherwise the user's own answer as one UsageError."""
    if _LIBC.faccessat(_AT_FDCWD, raw, os.R_OK, 0) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT and missing_ok:
        return False
    if err == errno.EACCES:
        raise _not_the_users(path, what)
    raise _os_error(path, what, OSError(err, os.strerror(err)))


def _user_may_read_fd(fd: int, path: Path | str, *, what: str) -> None:
    """Question 2 (the module's doc): may the real user read the inode `fd` holds? One UsageError if
    not, or if /proc is not there to ask."""
    if os.access(f"{_OWN_FDS}/{fd}", os.R_OK):  # effective_ids=False: the real uid, as access(2)
        return
    if not os.path.isdir(_OWN_FDS):
        raise _refused(path, f"{_OWN_FDS} is missing (is /proc mounted?), so capbench cannot tell whether uid "
                             f"{os.getuid()}, who runs it, may read the file it opened", what=what)
    raise _not_the_users(path, what)


def open_readable(path: Path | str, *, what: str, missing_ok: bool = False) -> int | None:
    """A descriptor (read-only, O_NONBLOCK, close-on-exec) of the regular file `path`, which the user
    who runs capbench may read (the module's doc); None if it does not exist for that user and
    `missing_ok`. Anything else is one UsageError that names `what` and the path."""
    raw = _path_bytes(path, what)
    if not _user_may_read_path(raw, path, what=what, missing_ok=missing_ok):
        return None
    check_file(path, what=what)  # stat(): a FIFO or device is refused before open() can block or act
    try:
        fd = os.open(raw, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise _os_error(path, what, e) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between stat() and open()
            raise _not_regular(path, st.st_mode, what=what)
        _user_may_read_fd(fd, path, what=what)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_readable(path: Path | str, *, what: str) -> None:
    """UsageError unless `path` is a regular file the user who runs capbench may read (open_readable):
    for a file capbench hands to a program by name (dist:, trace:), which checks it again itself."""
    fd = open_readable(path, what=what)
    assert fd is not None
    os.close(fd)


def read_bytes(path: Path | str, *, what: str, limit: int, missing_ok: bool = False) -> bytes | None:
    """The bytes of the regular file `path` (open_readable), at most `limit` of them; None if it
    does not exist and `missing_ok`. Anything else that keeps it from being read is one
    UsageError that names `what` and the path."""
    fd = open_readable(path, what=what, missing_ok=missing_ok)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_size > limit:
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


def _passable(text: str, what: str, limit: int, room: str) -> int:
    """The length of `text` in bytes; UsageError if it holds a NUL byte (execve() takes C strings,
    which end at one; Python refuses it with a ValueError) or is longer than `limit`."""
    if "\0" in text:
        raise UsageError(f"{what} holds a NUL byte, which no command can take: remove it")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise UsageError(f"{what} is {size:,} bytes long, more than the {limit:,} capbench passes {room}: shorten it")
    return size


def command_words(text: str, what: str) -> list[str]:
    """The words of the command line `text`, split like a shell line (shlex), each one a command can
    take (check_words). A NUL byte or a text longer than COMMAND_MAX_BYTES is refused before it is
    split: shlex reads a character at a time, seconds over a 200,000-character text. ValueError
    (shlex's) when it does not split, for the caller to say so."""
    _passable(text, what, COMMAND_MAX_BYTES, "to one command")
    words = shlex.split(text)
    check_words(words, what)
    return words


def check_words(words: Sequence[str], what: str) -> None:
    """UsageError unless `words` can be the arguments of a command (WORD_MAX_BYTES, COMMAND_MAX_BYTES):
    no NUL byte, no word and no command longer than capbench's bounds. `what` names the file, key
    and line."""
    total = sum(_passable(word, f"{what}: word {n}", WORD_MAX_BYTES, "in one word") + 1
                for n, word in enumerate(words, start=1))
    if total > COMMAND_MAX_BYTES:
        raise UsageError(f"{what}: its words take {total:,} bytes, more than the {COMMAND_MAX_BYTES:,} capbench "
                         f"passes to one command: shorten it")
