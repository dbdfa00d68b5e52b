#!/usr/bin/env python3
"""`capbench tune` against its own targets (issue 30), in one run on this machine:

1. `capbench tune --backends BACKEND --sizes SIZE --budget BUDGET`, --tunes times (default twice):
   how long each took against its budget, the best configuration each named, and whether the
   second names the first's best or ranks it "within noise of the best".
2. A confirmation apart from the tunes: `capbench run --method mlr` of the first tune's best
   (its own `run it:` line) and of the defaults (the same line without the knobs), alternated
   --repeat times, each a run of its own. The best wins when its PDRs are higher than the
   default's by more than the spread (max - min) of both.
3. The same for a capture program (`--program tcpdump`, its buffer knob; `--program none`
   leaves it out), with --program-budget.

Every figure is read from what capbench wrote: tune/tune.json (the ranking, its verdicts and the
run line), searches.jsonl (each MLR answer), the wall clock of each command.

    .venv/bin/python bench/bench_tune.py [--backend afp-v3] [--size 64] [--budget 15m] [--tunes 2]
                                         [--repeat 3] [--program tcpdump] [--program-budget 5m]
                                         [--results DIR] [--json FILE]

About 2 x budget + program budget + 15 minutes of confirmation with the defaults. Run it on a
quiet machine (the load before the run is said on stderr). Exit status 0 when every command ran,
1 when one failed, 2 for bad input or no root.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bench_common as bc  # sets sys.path for capbench
from rich import box
from rich.table import Table

from capbench.binaries import find_binaries
from capbench.campaign.results import SEARCHES_FILE, machine_info
from capbench.rates import parse_duration

CAPBENCH = [sys.executable, "-m", "capbench"]
GOAL = "PDR"  # tune's default goal, and what the confirmation compares


@dataclass
class TuneRun:
    backend: str
    budget_s: float
    wall_s: float = 0.0
    status: int | None = None
    best: str = ""  # the best configuration's label
    ranking: list[dict[str, Any]] = field(default_factory=list)
    run_line: list[str] = field(default_factory=list)
    defaults_line: list[str] = field(default_factory=list)  # the same `capbench run` without the knobs
    folder: str = ""
    error: str = ""


@dataclass
class Confirmation:
    backend: str
    best: str
    best_pdr: list[float] = field(default_factory=list)
    default_pdr: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def capbench(args: list[str], timeout_s: float) -> tuple[int, float, str]:
    """(exit status, wall seconds, stderr's tail) of one capbench command."""
    t0 = time.monotonic()
    p = subprocess.run([*CAPBENCH, *args], capture_output=True, text=True, timeout=timeout_s,
                       stdin=subprocess.DEVNULL, cwd=Path(__file__).resolve().parent.parent)
    return p.returncode, time.monotonic() - t0, p.stderr[-2000:]


def only_folder(results: Path) -> Path:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    return folder


def tune(backend: str, size: str, budget: str, results: Path) -> TuneRun:
    """One `capbench tune`, and what its tune.json says."""
    budget_s = parse_duration(budget)
    t = TuneRun(backend, budget_s)
    bc.note(f"capbench tune --backends {backend} --sizes {size} --budget {budget} ...")
    t.status, t.wall_s, err = capbench(["tune", "--backends", backend, "--sizes", size, "--budget", budget,
                                        "--results", str(results), "--quiet"], timeout_s=3 * budget_s + 600)
    try:
        folder = only_folder(results)
        (summary,) = json.loads((folder / "tune" / "tune.json").read_text())
    except (OSError, ValueError) as e:
        t.error = f"exit {t.status}, no tune.json ({e}): {err.strip().splitlines()[-1:] or ''}"
        return t
    t.folder, t.ranking = str(folder), summary["ranking"]
    t.run_line, t.defaults_line = summary["run"], summary["defaults_run"]
    t.best = t.ranking[0]["label"]
    bc.note(f"  {t.wall_s:.0f} s of {budget_s:.0f} s budget, exit {t.status}, best: {t.best}")
    return t


def pdr_of(results: Path) -> float:
    """The PDR of the one MLR answer a run wrote."""
    folder = only_folder(results)
    (answer,) = [json.loads(line) for line in (folder / SEARCHES_FILE).read_text().splitlines() if line.strip()]
    (goal,) = [g for g in answer["goals"] if g["name"] == GOAL]
    return float(goal["throughput_pps"])


def confirm(t: TuneRun, repeat: int, work: Path) -> Confirmation:
    """The best and the defaults, alternated, `repeat` runs each."""
    c = Confirmation(t.backend, t.best)
    best_line, plain = (line[line.index("run"):] for line in (t.run_line, t.defaults_line))  # without sudo
    for i in range(repeat):
        for name, line, into in (("best", best_line, c.best_pdr), ("defaults", plain, c.default_pdr)):
            out = work / f"confirm-{t.backend}-{name}-{i}"
            status, wall, err = capbench([*line, "--results", str(out), "--quiet", "--no-report"], timeout_s=1800)
            try:
                into.append(pdr_of(out))
                bc.note(f"  {t.backend} {name} #{i + 1}: {GOAL} {into[-1]:,.0f} pps ({wall:.0f} s, exit {status})")
            except (OSError, ValueError, KeyError) as e:
                c.errors.append(f"{name} #{i + 1}: exit {status}: {e}; {err.strip().splitlines()[-1:]}")
    return c


def spread(values: list[float]) -> float:
    return max(values) - min(values) if values else 0.0


def wins(c: Confirmation) -> bool:
    """The best's PDR above the default's by more than the spread of both (medians)."""
    if not c.best_pdr or not c.default_pdr:
        return False
    gap = statistics.median(c.best_pdr) - statistics.median(c.default_pdr)
    return gap > spread(c.best_pdr) + spread(c.default_pdr)


def same_best(tunes: list[TuneRun]) -> str:
    """Whether the tunes name the same best, or the later ones rank the first's best within noise."""
    first = tunes[0].best
    words = []
    for t in tunes[1:]:
        if t.best == first:
            words.append("same best")
            continue
        row = next((r for r in t.ranking if r["label"] == first), None)
        words.append(f"other best; the first's is {row['verdict']!r} there" if row else "other best; the first's not ranked")
    return "; ".join(words) or "-"


def kpps(values: list[float]) -> str:
    return " / ".join(f"{v / 1e3:,.0f}" for v in values) or "-"


def print_report(tunes: list[TuneRun], confirmations: list[Confirmation]) -> None:
    out = bc.console()
    t = Table(title="capbench tune: time against the budget, and the best it named", box=box.SIMPLE_HEAD,
              title_justify="left")
    for h in ("backend", "budget", "took", "within 10 %", "best configuration", f"its {GOAL} [kpps]",
              "defaults' [kpps]", "defaults' verdict"):
        t.add_column(h)
    for r in tunes:
        if r.error:
            t.add_row(r.backend, f"{r.budget_s:.0f} s", f"{r.wall_s:.0f} s", "-", f"FAILED: {r.error}", "", "", "")
            continue
        top = r.ranking[0]
        default = next((x for x in r.ranking if x.get("index") == 0), None)
        t.add_row(r.backend, f"{r.budget_s:.0f} s", f"{r.wall_s:.0f} s", bc.verdict(r.wall_s <= 1.1 * r.budget_s),
                  r.best, kpps(top["values"]), kpps(default["values"]) if default else "?",
                  default["verdict"] if default else "?")
    out.print(t)
    by_backend: dict[str, list[TuneRun]] = {}
    for r in tunes:
        if not r.error:
            by_backend.setdefault(r.backend, []).append(r)
    for backend, runs in by_backend.items():
        if len(runs) > 1:
            out.print(f"{backend}: {len(runs)} tunes: {same_best(runs)}")
    c_t = Table(title=f"Confirmation: capbench run --method mlr, alternated; {GOAL} per run [kpps]",
                box=box.SIMPLE_HEAD, title_justify="left")
    for h in ("backend", "best configuration", "best", "defaults", "gap of medians", "spreads", "best wins"):
        c_t.add_column(h)
    for c in confirmations:
        gap = (statistics.median(c.best_pdr) - statistics.median(c.default_pdr)) / 1e3 \
            if c.best_pdr and c.default_pdr else None
        c_t.add_row(c.backend, c.best, kpps(c.best_pdr), kpps(c.default_pdr),
                    "-" if gap is None else f"{gap:+,.0f}",
                    f"{spread(c.best_pdr) / 1e3:,.0f} + {spread(c.default_pdr) / 1e3:,.0f}", bc.verdict(wins(c)))
    out.print(c_t)
    for c in confirmations:
        for e in c.errors:
            out.print(f"{c.backend}: {e}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="afp-v3")
    p.add_argument("--size", default="64")
    p.add_argument("--budget", default="15m")
    p.add_argument("--tunes", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3, help="confirmation runs of the best and of the defaults")
    p.add_argument("--program", default="tcpdump", help="a capture program to tune too, or none")
    p.add_argument("--program-budget", default="5m")
    p.add_argument("--results", help="keep the tunes' and runs' folders here (default: a temporary folder)")
    p.add_argument("--json", help="also write the figures as JSON")
    a = p.parse_args(argv)
    if a.tunes < 1 or a.repeat < 1:
        p.error("--tunes and --repeat take 1 or more")
    return a


def run(a: argparse.Namespace, work: Path) -> tuple[list[TuneRun], list[Confirmation]]:
    tunes = [tune(a.backend, a.size, a.budget, work / f"tune-{a.backend}-{i}") for i in range(a.tunes)]
    if a.program != "none":
        tunes.append(tune(a.program, a.size, a.program_budget, work / f"tune-{a.program}"))
    firsts = {}
    for t in tunes:
        if not t.error:
            firsts.setdefault(t.backend, t)
    return tunes, [confirm(t, a.repeat, work) for t in firsts.values()]


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if bc.preflight("bench_tune.py", "network namespaces, XDP, BPF", find_binaries) is None:
        return 2
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="capbench-bench-tune-") as tmp:
        work = Path(a.results) if a.results else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        status, found = bc.until_stopped(lambda: run(a, work))
        if status:
            return status
    tunes, confirmations = found
    print_report(tunes, confirmations)
    bc.note(f"total time {time.monotonic() - t0:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": machine_info(), "tunes": [asdict(t) for t in tunes],
                                            "confirmations": [asdict(c) for c in confirmations]}, indent=1) + "\n")
    failed = any(t.error for t in tunes) or any(c.errors for c in confirmations)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
