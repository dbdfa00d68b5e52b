"""What every fuzz harness (test_fuzz_*.py) asserts of one generated input: a valid result or
one clean line (UsageError, exit status 2), no other exception, no hang."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from capbench.cli.main import error_line
from capbench.errors import UsageError
from hypothesis import settings
from hypothesis import strategies as st

T = TypeVar("T")
HANG_S = 10.0  # far beyond any input's time (the slowest, a report's tables, takes 0.2 s)


class Hang(BaseException):
    """An input capbench did not finish with in HANG_S (a BaseException: no `except Exception` hides it)."""


@contextlib.contextmanager
def no_hang(seconds: float = HANG_S) -> Iterator[None]:
    """Fail with Hang when the block runs longer than `seconds` (SIGALRM: a blocked read is cut too;
    hypothesis's deadline only judges an example after it returns)."""
    def on_alarm(signum, frame):  # noqa: ARG001
        raise Hang(f"no answer within {seconds:g} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def clean(fn: Callable[[], T]) -> T | UsageError:
    """fn()'s result, or the UsageError it raised, checked to be one line; any other exception fails."""
    with no_hang():
        try:
            return fn()
        except UsageError as e:
            one_line(error_line(e))  # as capbench.cli.main shows it
            return e


def clean_file(path: Path, data: bytes, read: Callable[[Path], T]) -> T | UsageError:
    """read(path) of a file holding `data`, as clean() judges it."""
    path.write_bytes(data)
    return clean(lambda: read(path))


def one_line(text: str) -> None:
    """A line fit for a terminal: no line break, no traceback, no wall of echoed input."""
    assert text and "\n" not in text and "Traceback" not in text, text
    bad = [c for c in text if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f]  # CR, ESC, ...: they drive the terminal
    assert not bad, f"control characters {bad!r} in {text[:200]!r}"
    assert len(text) < 2000, f"a line of {len(text)} characters: {text[:200]}"


def examples(share: float) -> int:
    """max_examples for a harness whose one input costs more than a parse (a report drawn): `share` of
    the profile's 1,000 (default), 300 (ci) or 20,000 (fuzz)."""
    return max(10, int(settings().max_examples * share))


# JSON values of every kind, the edge cases first: what a hostile file can hold.
NUMBERS = st.one_of(st.sampled_from([0, -1, 1, 2 ** 63, 2 ** 64, -(2 ** 70), 10 ** 30, 0.5, -1e30, 1e308]),
                    st.floats(allow_nan=True, allow_infinity=True), st.integers())
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                    max_leaves=6)


def mutated(record: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """`record` with some of its fields replaced by any JSON value, or removed."""
    keys = sorted(record)
    change = st.dictionaries(st.sampled_from(keys), JSON, max_size=4)
    drop = st.lists(st.sampled_from(keys), max_size=2)
    return st.builds(lambda c, d: {k: v for k, v in (record | c).items() if k not in d}, change, drop)


def scratch_dir(prefix: str) -> Path:
    """A folder for the files a harness writes per input, removed at exit: in /dev/shm where there is
    one (a file written on this VM's ext4 /tmp costs 2 ms, on tmpfs 10 us: most of a harness's time)."""
    shm = Path("/dev/shm")
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    atexit.register(shutil.rmtree, path, True)
    return path
