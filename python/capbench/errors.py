"""Errors that end a capbench command with one line on stderr.

Only `cli.main` turns them into exit codes: 2 for bad input (`UsageError`),
1 for a failure at run time (`RunError`), never a traceback.
"""

from __future__ import annotations


class CapbenchError(Exception):
    """An error with a message meant for the user; `exit_status` is what cli.main returns."""

    exit_status = 1


class UsageError(CapbenchError):
    """Bad input or a missing prerequisite: the message names the problem and the fix."""

    exit_status = 2


class RunError(CapbenchError):
    """Something failed while running (a child program, the test bed)."""

    exit_status = 1


class Terminated(BaseException):
    """Raised by the SIGTERM handler so that `finally` blocks tear things down.

    A BaseException, like KeyboardInterrupt, so `except Exception` does not swallow it.
    """
