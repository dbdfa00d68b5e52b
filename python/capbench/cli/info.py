"""`capbench backends`, `capbench report DIR` and `capbench compare A B`: what works here, and
what a finished run (or two) recorded, read back from its results folder."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from capbench import declared
from capbench.binaries import find_binaries
from capbench.campaign.runner import note
from capbench.errors import UsageError
from capbench.report import tables
from capbench.testbed import preflight
from capbench.trial import apps


def cmd_backends(args: argparse.Namespace) -> int:
    """Every backend capbench-cap declares, and whether it works here (a capbench-cap that is
    missing or cannot describe itself is one line: the backends are what it says they are).
    Any of the three programs missing is that line too (exit 2): a run needs them all. Under each,
    the rows of its loss account: the layer where it can lose a frame and the counter that counts
    it there. With --json, one JSON line each (docs/json.md)."""
    find_binaries()
    as_json = bool(getattr(args, "json", False))

    def show(kind: str, name: str, ok: bool, why: str, width: int, account: list[tuple[str, str, bool]]) -> None:
        if as_json:
            print(json.dumps({"type": kind, "name": name, "works": ok, "why": why,
                              "account": [{"layer": layer, "counter": counter, "cross_check": cross}
                                          for layer, counter, cross in account]}, separators=(",", ":")))
            return
        print(f"{name:<{width}} {'works here' if ok else 'does not work here'}: {why}")
        for layer, counter, cross in account:
            print(f"{'':<{width}}   loses in {layer}: {counter}" + (" (a cross-check, not added)" if cross else ""))

    for b in declared.backends():
        ok, why = preflight.backend_status(b.name)
        show("backend", b.name, ok, why, 8, [(r.layer, r.counter, r.cross_check) for r in b.account or ()])
    if not as_json:
        print("capture programs (the thing under test: `capbench run --backends NAME`, docs/apps.md):")
    programs = apps.registry(getattr(args, "apps_file", None) or (), reserved=declared.backend_names())
    for name, app in programs.items():
        try:
            app.check()
            ok, why = True, f"{shutil.which(app.program)}; {app.summary}"
        except UsageError as e:
            ok, why = False, str(e)
        show("program", name, ok, why, 11, [(r.layer, r.counter, r.cross_check) for r in app.account])
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from capbench.report import writer  # matplotlib loads only for the commands that draw

    report = writer.write_report(args.dir, args.out)
    meta = report.run.meta
    if meta:
        note(
            f"run of {meta.get('started_at', '?')} on {meta.get('cpu_model', '?')}, kernel "
            f"{meta.get('kernel', {}).get('release', '?')}, capbench {meta.get('capbench_version', '?')} "
            f"({str(meta.get('git_commit', '?'))[:12]}), status {meta.get('status', '?')}")
    for text in report.notes:
        note(f"capbench: {text}")
    tables.print_tables([t.result for t in report.run.trials], outcomes=report.run.outcomes,
                        loss_tolerance_frames=report.run.loss_tolerance_frames)
    note(writer.outcome_line(report))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from capbench.report import compare, compare_out, load  # matplotlib loads only for the commands that draw
    from capbench.report.console import human_console

    a, b = load.load_run(args.a), load.load_run(args.b)
    for name, run in (("A", a), ("B", b)):
        for text in run.notes:
            note(f"capbench: {name}: {text}")
    result = compare.compare(a, b, threshold_pct=args.threshold)
    out = Path(args.out) if args.out else b.path / "report" / f"compare-{a.name}"
    try:
        files = compare_out.write(result, out)
    except OSError as e:
        raise UsageError(f"cannot write the comparison to {out}: {e.strerror}: choose another with --out DIR") from None
    as_json = bool(getattr(args, "json", False))
    # With --json the document is stdout's, the human tables stderr's (docs/json.md).
    console = human_console(stderr=as_json, width=140)
    compare_out.terminal(result, console)
    if as_json:
        print(json.dumps(compare_out.to_json(result, args.fail_on_regression), allow_nan=False), flush=True)
    note(f"comparison: {files.html}")
    if args.fail_on_regression is not None:
        worse = result.regressions(args.fail_on_regression)
        if worse:
            first = worse[0]
            note(f"capbench: {len(worse)} figures worse by more than {args.fail_on_regression:g} %, e.g. "
                 f"{first.metric.label} of {first.key.text()}: {compare_out.fmt_change(first)}")
            return 1
        if not result.judged:
            note("capbench: --fail-on-regression: nothing was judged (see above why), so no regression can be found")
    return 0
