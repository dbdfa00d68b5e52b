"""`capbench tune`: the knobs of a backend searched for the configuration that meets the goal best
(capbench.tune), on the test bed and results folder of `capbench run` (campaign.runner), the
search walking the steps (RunOptions.drive); at the end the ranking, the best as a `capbench run`
line and a campaign file, the figure (tune.output)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import shlex
import sys
import time
from pathlib import Path

from capbench import declared
from capbench.binaries import find_binaries
from capbench.campaign import matrix as campaign
from capbench.campaign import results, runner
from capbench.campaign.runner import note
from capbench.cli import run as run_cli
from capbench.cli.parser import build_parser
from capbench.cli.testbed import rx_mode_of
from capbench.errors import UsageError
from capbench.profile import perf_record
from capbench.rates import parse_duration
from capbench.testbed import cpu, rxmode
from capbench.report import console
from capbench.tune import knobs as knobs_mod
from capbench.tune import search, tuning


def _knob_names(args: argparse.Namespace) -> list[str] | None:
    """The knobs --knobs and --candidates name, in order, each once; None: the backend's whole space."""
    names = run_cli._list(args.knobs, "--knobs") if args.knobs is not None else []
    for item in args.candidates or ():
        name = item.partition("=")[0].strip()
        if name not in names:
            names.append(name)
    return names or None


def _candidates(args: argparse.Namespace) -> dict[str, list[str]]:
    """--candidates KNOB=V1,V2,... : the values to try of a knob instead of its declared ones."""
    out: dict[str, list[str]] = {}
    for item in args.candidates or ():
        name, eq, values = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"cannot read --candidates {item!r}: give KNOB=VALUE,VALUE,..., e.g. rx-ring=256,4096")
        if name.strip() in out:
            raise UsageError(f"--candidates gives {name.strip()} twice: list all its values in one")
        out[name.strip()] = run_cli._list(values, f"--candidates {name.strip()}")
    return out


def space_of(backend: str, args: argparse.Namespace, programs: knobs_mod.Programs,
             port: knobs_mod.Port | None = None, backend_args: str = "") -> tuning.Space:
    """The knobs of `backend` the tune searches (knobs.space; a capture program's from its adapter
    in `programs`, the campaign's; on `port`, the capture port of a tune on ports, its NIC's; those
    the test bed's receive model passes; not those its `backend_args`, fixed for every
    configuration, set), each candidate checked (knobs.check)."""
    rx_mode = args.rx_mode or rxmode.DEFAULT_RX_MODE
    rxmode.check_mode(rx_mode)
    knobs = list(knobs_mod.space(backend, _knob_names(args), port, programs, rx_mode, shlex.split(backend_args)))
    given = _candidates(args)
    for i, k in enumerate(knobs):
        if k.name in given:
            knobs[i] = dataclasses.replace(k, candidates=tuple(given[k.name]))
        for value in knobs[i].candidates:
            try:
                knobs_mod.check(knobs[i], value, programs)
            except UsageError as e:
                raise UsageError(f"{backend} knob {k.name} {value}: {e}") from None
    return tuning.space_of(backend, knobs)


def goal_of(args: argparse.Namespace) -> tuning.Goal:
    name = args.goal or ("loss" if args.rate is not None else tuning.DEFAULT_GOAL)
    goal = tuning.GOALS.get(name)
    if goal is None:
        raise UsageError(f"unknown --goal {name!r}: use {', '.join(tuning.GOALS)}")
    if goal.mlr_goal and args.rate is not None:
        raise UsageError(f"--rate {args.rate} sets the load of --goal loss; --goal {name} searches its own loads "
                         f"(MLR): leave out --rate, or give --goal loss")
    if not goal.mlr_goal and args.rate is None:
        raise UsageError("--goal loss is the loss at a rate: give --rate, e.g. --rate 500kpps")
    return goal


def max_app_cpu_of(args: argparse.Namespace) -> float | None:
    """--max-app-cpu PCT, checked: above 0 (nothing runs on no CPU at all) and at most every CPU here
    (app CPU is % of one CPU, summed over a backend's processes)."""
    pct = args.max_app_cpu
    most = 100 * len(cpu.online_cpus())
    if pct is not None and not 0 < pct <= most:
        raise UsageError(f"--max-app-cpu {pct:g}: give the application's CPU limit in % of one CPU, above 0 and at "
                         f"most {most} ({most // 100} CPUs here), e.g. --max-app-cpu 50")
    return pct


def size_of(args: argparse.Namespace) -> str:
    if args.replay is not None and args.sizes is not None:
        raise UsageError("--replay FILE is the traffic: give it or --sizes, not both")
    size = f"trace:{args.replay}" if args.replay is not None else (args.sizes or str(tuning.DEFAULT_SIZE))
    if "," in size:
        raise UsageError(f"--sizes {size}: a tune searches at one frame length or traffic profile: give one "
                         f"(run it again for another)")
    return size


def tune_of(args: argparse.Namespace, outcomes=()) -> tuning.Tune:
    """The tune the flags describe, its campaign checked as `capbench run`'s and its budget
    against the smallest search; one UsageError otherwise."""
    goal = goal_of(args)
    backends = run_cli._list(args.backends or "", "--backends")
    budget_s = parse_duration(args.budget, what="--budget")
    top = {"name": "capbench tune", "methods": [goal.method], "backends": backends, "sizes": size_of(args),
           "pause": f"{tuning.PAUSE_S:g}"}
    for key in ("rate", "link", "engine", "pin", "profile", "profile_hz"):
        if getattr(args, key) is not None:
            top[key] = getattr(args, key)
    if args.apps_file:  # a user's adapters: their programs are backends, their knobs searched
        top["apps_files"] = list(args.apps_file)
    if args.backend_args:  # a backend's own options, the same in every configuration
        top["backend_args"] = run_cli.backend_args_of(args.backend_args)
    c = campaign.build(top, [], backends_known=declared.backend_names(), name_of=lambda key: {
        "methods": "--goal", "backends": "--backends", "sizes": "--sizes", "apps_files": "--apps-file"}.get(
        key, "--" + key.replace("_", "-")))
    on_ports = run_cli.ports_of(args)
    if on_ports is not None:
        on_ports.check_exist()  # before its NIC's knobs are read
    port = (on_ports.cap_ns, on_ports.cap_if) if on_ports is not None else None
    fixed = dict(c.matrices[0].backend_args)
    spaces = tuple(space_of(b, args, c.programs, port, fixed.get(b, "")) for b in backends)
    base = {b: dataclasses.replace(c.matrices[0], backends=(b,)) for b in backends}
    matrices = tuple(knobs_mod.apply(base[sp.backend], cfg, sp.knobs, c.programs)
                     for sp in spaces for cfg in sp.configs)
    tune = tuning.Tune(dataclasses.replace(c, matrices=matrices), spaces, goal, budget_s, base, outcomes,
                       run_args=run_cli.port_args(args) if on_ports is not None else (),
                       max_app_cpu_pct=max_app_cpu_of(args))
    least_s = tune.smallest_budget_s()
    if budget_s < least_s:
        n = sum(len(sp.configs) for sp in spaces)
        knobs = ", ".join(dict.fromkeys(k.name for sp in spaces for k in sp.knobs)) or "no knobs"
        raise UsageError(f"--budget {args.budget} is too small for the {n} configurations of {knobs} "
                         f"(each measured once with {goal.lengths_s[0]:g} s trials, then the best "
                         f"{search.FINALISTS} and the defaults {search.MIN_REPS} times, by the methods' estimates): "
                         f"give --budget {math.ceil(least_s / 60)}m or more, or fewer knobs or candidates")
    return tune


def _resumed_args(d: Path) -> tuple[argparse.Namespace, dict]:
    """The flags of the tune that made results folder `d`, and its run.json."""
    meta = run_cli.resumable_run(d)
    if meta.get("status") == "complete":
        raise UsageError(f"{d} is complete: nothing to resume (run.json says so)")
    try:
        old = build_parser().parse_args(list(meta.get("command", [])[1:]))
    except (UsageError, SystemExit):
        old = None
    if old is None or old.command != "tune" or old.resume:
        raise UsageError(f"{d}/run.json does not hold the `capbench tune` command that made it: resume it with "
                         f"the command that made it")
    return old, meta


def _started(meta: dict) -> tuple[float, ...]:
    """When the earlier invocations of a tune began (run.json's started_at and resumed_at), as far as
    run.json says (a time it does not hold is left out: that set-up is not charged)."""
    out = []
    for text in [meta.get("started_at"), *(meta.get("resumed_at") or [])]:
        try:
            out.append(datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp())
        except ValueError:
            continue
    return tuple(out)


TUNE_FLAGS = ("backends", "sizes", "replay", "goal", "rate", "knobs", "candidates", "backend_args", "link", "engine",
              "pin", "rx_mode", "napi_sched", "profile", "profile_hz", "apps_file", "max_app_cpu",
              *run_cli.PORT_FLAGS)


def cmd_tune(args: argparse.Namespace) -> int:
    began = time.time()  # the set-up the budget pays for starts here (Tune.setup_s)
    binaries = find_binaries()  # first: the campaign is read with the backends the programs declare
    resume, earlier = None, ()
    if args.resume is not None:
        given = [f for f in TUNE_FLAGS if getattr(args, f) is not None] + (["force_iface"] if args.force_iface else [])
        if given:
            raise UsageError(f"--resume continues a tune with the settings it started with: give no "
                             f"{', '.join('--' + f.replace('_', '-') for f in given)}")
        resume = Path(args.resume)
        old, meta = _resumed_args(resume)
        earlier = _started(meta)
        tune = tune_of(old, results.read_outcomes(resume))
        budget_text = old.budget
    else:
        if args.backends is None:
            raise UsageError("give --backends: the backend (or capture program) to tune, e.g. --backends afp-v3")
        tune = tune_of(args)
        budget_text = args.budget
    c = tune.campaign
    settle_s = parse_duration(args.settle, what="--settle", allow_zero=True)
    probe_s = parse_duration(args.probe, what="--probe", allow_zero=True)
    c, notes = run_cli.check_here(c, binaries, "capbench tune")
    tune.campaign = c
    flags = args if resume is None else old  # the tune's own flags (a resumed one's from its folder)
    run_cli.check_rx_mode_on_ports(flags)
    rx_mode, napi_sched = rx_mode_of(flags, resume)
    on_ports = run_cli.ports_of(flags)  # a resumed tune's: those of the command that started it
    run_cli.check_rx_ring(c, rx_mode, on_ports is not None)
    run_cli.check_ports(c, on_ports)
    args.json = False  # the tune's output is its ranking (tune.output), not run's JSON Lines
    live = run_cli.live_line(args)
    base = run_cli.callbacks(args, live)

    def say(line: str) -> None:
        live.clear()
        note(line)

    tune.say = say
    tune.starts, tune.report = (*earlier, began), not args.no_report

    finished = False

    def finish(path: Path) -> None:
        """The ranking, its files and tune/tune.json, once every backend has its result."""
        nonlocal finished
        if not finished and len(tune.results) == len(tune.spaces):
            from capbench.tune import output  # matplotlib loads only for the commands that draw

            finished = True
            output.finish(tune, path, console.human_console())

    def write_report(path: Path) -> None:
        finish(path)  # first: the report leads with tune/tune.json's answer
        base.write_report(path)

    def on_end(path: Path, status: int) -> None:
        base.on_end(path, status)
        finish(path)  # a tune without a report (--no-report) or whose run status is not 0

    callbacks = dataclasses.replace(base, show_results=lambda trials, outcomes: None, write_report=write_report,
                                    on_end=on_end)
    settings = {"tune": {"goal": tune.goal.name, "budget": budget_text, "budget_s": tune.budget_s,
                         "max_app_cpu_pct": tune.max_app_cpu_pct,
                         "trial_lengths_s": list(tune.goal.lengths_s),
                         "knobs": {sp.backend: {k.name: list(k.candidates) for k in sp.knobs} for sp in tune.spaces},
                         "configurations": {sp.backend: [dict(cfg) for cfg in sp.configs] for sp in tune.spaces}}}
    note(f"capbench tune: {', '.join(f'{len(sp.configs)} configurations of {sp.backend}' for sp in tune.spaces)}, "
         f"goal {tune.goal.title}"
         f"{'' if tune.max_app_cpu_pct is None else f' with the application under {tune.max_app_cpu_pct:g} % CPU'}, "
         f"budget {tune.budget_s / 60:.1f} min")
    perf = perf_record.check() if c.profile else None  # perf here, and the kernel lets it sample
    opts = runner.RunOptions(results=args.results, settle_s=settle_s, backlog=None, report=not args.no_report,
                             command=["capbench", *sys.argv[1:]],
                             rx_mode=rx_mode, napi_sched=napi_sched, callbacks=callbacks, probe_s=probe_s,
                             drive=tune.drive, settings=settings, ports=on_ports, perf=perf, notes=notes)
    return runner.execute(c, opts, binaries, resume=resume)
