"""`capbench ARGS` run in this process (capbench.cli.main), as a CompletedProcess: the checks of test_cli
without starting a Python per call (the fuzz harnesses make thousands)."""

from __future__ import annotations

import contextlib
import io
import subprocess

from capbench.cli.main import main


def capbench_inproc(*args: str) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return subprocess.CompletedProcess(["capbench", *args], status, out.getvalue(), err.getvalue())
