"""Before a run measures a capture program, one dry start on the test bed: the program starts on
the capture interface, says it captures, stops on its signal within its grace time, and its
adapter finds every count it needs in what it printed. Whatever fails here is the user's to fix
(the template, the adapter, a program that is not what the adapter expects): one line, exit
status 2, before any trial runs."""

from __future__ import annotations

from capbench.errors import UsageError
from capbench.testbed.procs import ChildSet
from capbench.trial.apps import Adapter
from capbench.trial.measure import scratch_dir
from capbench.trial.program_run import ProgramRun

PROBE_S = 0.2  # how long the program captures (nothing: no frame is sent) before the stop


def probe(app: Adapter, netns_name: str | None, iface: str, cpu: int | None) -> None:
    """Start, stop and read `app` once on `iface`; UsageError naming what failed and the fix."""
    with ChildSet() as kids, scratch_dir() as workdir:
        prog = ProgramRun(app, netns_name, iface, cpu, PROBE_S, workdir)
        prog.start(kids)
        prog.wait_ready()
        if not prog.failure:
            prog.check_running()
        prog.wait_stopped(prog.signal_stop())
        if prog.failure:
            raise UsageError(f"capture program {app.name} ({' '.join(prog.argv)}) failed its dry start on "
                             f"{iface}: {prog.failure}: fix its command (--app) or its adapter (--apps-file, "
                             f"docs/apps.md)")
