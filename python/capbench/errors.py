"""Errors that end a capbench command with one line on stderr.

Only `cli.main` turns them into exit codes: 2 for bad input (`UsageError`),
1 for a failure at run time (`RunError`), never a traceback.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class ExitStatus:
    """An exit status of `capbench run` and what it tells a script: one row of EXIT_STATUSES, from
    which `run --help`, README and docs/json.md take their lists (tests/py/test_exit_status.py)."""

    codes: tuple[int, ...]
    meaning: str

    @property
    def code(self) -> int:
        return self.codes[0]

    @property
    def text(self) -> str:
        return ", ".join(map(str, self.codes))


MEASURED = ExitStatus((0,), "the run measured something (a lossless or lossy trial), and no trial it decided on "
                            "was disturbed by the host")
RUN_FAILED = ExitStatus((1,), "an error during the run")
BAD_INPUT = ExitStatus((2,), "bad input: nothing started")
NOTHING_MEASURED = ExitStatus((3,), "the run ended, but every trial was a lower bound (the generator fell short and "
                                    "nothing was lost): the tables say what to try")
# Issue 28: a trial the host disturbed is run again (methods/measurer.py); one still disturbed after
# its last run is what a method decided on, and its answer (or row) says `disturbed`.
DISTURBED = ExitStatus((4,), "the run measured, but the host interfered: a trial it decided on stayed disturbed "
                             "after every run allowed (its answer or row says disturbed, with the interference "
                             "measured)")
STOPPED = ExitStatus((130, 143), "stopped by Ctrl-C, by SIGTERM")
EXIT_STATUSES: tuple[ExitStatus, ...] = (MEASURED, RUN_FAILED, BAD_INPUT, NOTHING_MEASURED, DISTURBED, STOPPED)


def exit_status_lines(width: int = 79) -> list[str]:
    """"N  meaning" for each status, wrapped at `width` (run --help)."""
    return [line for s in EXIT_STATUSES
            for line in textwrap.wrap(s.meaning, width, initial_indent=f"  {s.text:<9} ", subsequent_indent=" " * 12)]


def exit_status_table() -> list[str]:
    """The Markdown table of the statuses (README, docs/json.md)."""
    return ["| status | meaning |", "|---|---|", *(f"| {s.text} | {s.meaning} |" for s in EXIT_STATUSES)]


class CapbenchError(Exception):
    """An error with a message meant for the user; `exit_status` is what cli.main returns."""

    exit_status = RUN_FAILED.code


class UsageError(CapbenchError):
    """Bad input or a missing prerequisite: the message names the problem and the fix."""

    exit_status = BAD_INPUT.code


class RunError(CapbenchError):
    """Something failed while running (a child program, the test bed)."""

    exit_status = RUN_FAILED.code


class Terminated(BaseException):
    """Raised by the SIGTERM handler so that `finally` blocks tear things down.

    A BaseException, like KeyboardInterrupt, so `except Exception` does not swallow it.
    """
