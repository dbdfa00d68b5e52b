"""Holding SIGINT and SIGTERM back while something must happen whole (a test bed made or
removed, children stopped, a registry entry written), and delivering them afterwards.

Held in Python, not with the signal mask (pthread_sigmask): the mask is per thread,
and the kernel gives a signal sent to the process (kill, Ctrl-C) to any thread that
does not block it, so a mask set in the main thread holds nothing once another thread
exists. A mask is also inherited across fork and exec: a program started in the block
would ignore SIGTERM for its whole life. Python runs every signal handler in the main
thread, between bytecodes, whichever thread the kernel chose; a handler that only
notes the signal therefore holds it back whatever the threads, and the children keep
their normal dispositions.

Holds nest: only the outermost release delivers, by raising each noted signal again
with the handlers that were in place before (KeyboardInterrupt for SIGINT, Terminated
under testbed.sigterm_raises, the default action otherwise).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_depth = 0
_pending: list[int] = []
_previous: dict[int, object] = {}


def _note(signum: int, frame) -> None:  # noqa: ARG001 - signal handler signature
    if signum not in _pending:
        _pending.append(signum)


def hold() -> Callable[[], None]:
    """Hold SIGINT and SIGTERM back from now on; the function returned ends this hold and,
    if it was the outermost, delivers what came meanwhile (it may raise)."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # only the main thread handles signals, so only it holds them
    if _depth == 0:
        _previous.update({s: signal.signal(s, _note) for s in SIGNALS})
    _depth += 1
    released = False

    def release() -> None:
        global _depth
        nonlocal released
        if released:
            return
        released = True
        _depth -= 1
        if _depth:
            return
        for s in SIGNALS:
            previous = _previous.pop(s)
            signal.signal(s, signal.SIG_DFL if previous is None else previous)
        pending = list(_pending)
        _pending.clear()
        for s in pending:
            # raise(3) runs the C handler at once, and raise_signal then runs the Python
            # handler before it returns: the exception comes from this call.
            signal.raise_signal(s)

    return release


@contextlib.contextmanager
def held() -> Iterator[None]:
    """SIGINT and SIGTERM are held back in the block and delivered when it ends."""
    release = hold()
    try:
        yield
    finally:
        release()
